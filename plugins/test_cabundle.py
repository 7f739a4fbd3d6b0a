"""Unit tests for plugins/cabundle.py (scenario: team-plugin-cabundle)."""

from __future__ import annotations

import cabundle
import pytest

from kubectl_gitdrift import Manifest, ObjectKey, apply_ignore_rules


def _obj(api: str, kind: str, annotations: dict[str, str], **rest: object) -> Manifest:
    body = {"apiVersion": api, "kind": kind, "metadata": {"name": "x", "annotations": annotations}}
    body.update(rest)
    return Manifest(ObjectKey.of(body), body)


INJECT = {"cert-manager.io/inject-ca-from": "ns/cert"}


@pytest.mark.parametrize(
    ("api", "kind", "annotations", "expected"),
    [
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", INJECT, True),
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration",
         {"cert-manager.io/inject-ca-from-secret": "ns/secret"}, True),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition", INJECT, True),
        ("apiregistration.k8s.io/v1", "APIService",
         {"cert-manager.io/inject-apiserver-ca": "true"}, True),
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", {}, False),
        ("v1", "ConfigMap", INJECT, False),
    ],
)  # fmt: skip
def test_rule_only_for_injected_objects(
    api: str, kind: str, annotations: dict[str, str], expected: bool
) -> None:
    rules = cabundle.gitdrift_ignore_rules(app=None, live=[_obj(api, kind, annotations)])  # type: ignore[arg-type]
    assert bool(rules) is expected
    if rules:
        assert rules[0].rule_id == f"cabundle/{kind}/x"
        assert (rules[0].name, rules[0].kind) == ("x", kind)


def test_jq_paths_remove_only_ca_bundles() -> None:
    webhooks = [
        {"name": "a", "clientConfig": {"caBundle": "QQ==", "service": {"name": "s"}}},
        {"name": "b", "clientConfig": {"url": "https://example.com"}},
    ]
    live = _obj("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", INJECT,
                webhooks=webhooks)  # fmt: skip
    (rule,) = cabundle.gitdrift_ignore_rules(app=None, live=[live])  # type: ignore[arg-type]
    out = apply_ignore_rules(live.body, [rule])
    assert out["webhooks"] == [
        {"name": "a", "clientConfig": {"service": {"name": "s"}}},
        {"name": "b", "clientConfig": {"url": "https://example.com"}},
    ]


def test_crd_without_conversion_is_untouched() -> None:
    crd = _obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", INJECT, spec={"group": "g"})
    (rule,) = cabundle.gitdrift_ignore_rules(app=None, live=[crd])  # type: ignore[arg-type]
    out = apply_ignore_rules(crd.body, [rule])
    assert out == crd.body
