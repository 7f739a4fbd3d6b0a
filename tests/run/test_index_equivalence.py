"""engine.LiveIndex.of, built in as few passes as it can for the serial start of --all (issue 18),
indexes exactly what the straightforward per-field scans below index: every field, its order and
its RBAC evaluator, on generated snapshots (tracking methods, installation ids, malformed and
copied tracking-ids, owned objects, CRDs and Events of several groups, RBAC objects).

The reference is the index as it was before, written out with tracking.parse, the reading of a
tracking-id the rest of the tool uses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubectl_gitdrift import engine, model
from kubectl_gitdrift.compare import fields
from kubectl_gitdrift.diagnose import rbac, tracking

# ------------------------------------------------------------------------------- reference


def _reference_app_of(body: model.Body, cfg: model.Settings) -> str | None:
    metadata = body.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    if cfg.installation_id and annotations.get(tracking.INSTALLATION_ID) != cfg.installation_id:
        return None
    if cfg.tracking_method is model.TrackingMethod.LABEL:
        value = (metadata.get("labels") or {}).get(cfg.instance_label_key)
        return str(value) if value else None
    raw = annotations.get(tracking.TRACKING_ID)
    if not isinstance(raw, str):
        return None
    parsed = tracking.parse(raw)
    return parsed.app if parsed else None


def _reference_claims(
    live: Sequence[model.Manifest],
) -> dict[str, list[tuple[model.Manifest, str]]]:
    out: dict[str, list[tuple[model.Manifest, str]]] = {}
    for manifest in live:
        metadata = manifest.body.get("metadata") or {}
        if metadata.get("ownerReferences"):
            continue
        raw = (metadata.get("annotations") or {}).get(tracking.TRACKING_ID)
        parsed = tracking.parse(raw) if isinstance(raw, str) else None
        if parsed is not None:
            out.setdefault(parsed.app, []).append((manifest, str(raw)))
    return out


def _reference(live: Sequence[model.Manifest], cfg: model.Settings) -> dict[str, Any]:
    roots: dict[str | None, list[model.Manifest]] = {}
    kinds: dict[tuple[str, str], list[model.Manifest]] = {}
    for manifest in live:
        kinds.setdefault((manifest.key.group, manifest.key.kind), []).append(manifest)
        if (manifest.body.get("metadata") or {}).get("ownerReferences"):
            continue
        roots.setdefault(_reference_app_of(manifest.body, cfg), []).append(manifest)
    return {
        "by_key": {m.key: m for m in live},
        "roots": roots,
        "plurals": rbac.plurals_from(m.body for m in live),  # every body, not CRDs by kind
        "events": tuple(
            m.body for m in live if m.key.kind == "Event" and m.key.group in ("", "events.k8s.io")
        ),
        "managed_known": any(fields.has_managed_fields(m.body) for m in live),
        "claims": _reference_claims(live),
        "kinds": kinds,
        "projects": {
            (m.key.namespace, m.key.name): m.body
            for m in kinds.get(("argoproj.io", "AppProject"), ())
        },
        "rbac": [
            m.body for (group, _), found in kinds.items() if group == rbac.RBAC_GROUP for m in found
        ],
    }


def _ordered(mapping: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    """Items in iteration order, sequences as lists and manifests by identity: equal means the
    same objects in the same order."""
    out = []
    for key, value in mapping.items():
        if isinstance(value, Sequence) and not isinstance(value, str):
            value = [_same(v) for v in value]
        else:
            value = _same(value)
        out.append((key, value))
    return out


def _same(value: Any) -> Any:
    if isinstance(value, model.Manifest):
        return ("manifest", id(value))
    if isinstance(value, tuple):
        return tuple(_same(v) for v in value)
    if isinstance(value, dict):
        return ("body", id(value))
    return value


def _evaluator_state(evaluator: rbac.Evaluator) -> list[Any]:
    return [
        [(k, id(v)) for k, v in evaluator.cluster_roles.items()],
        [(k, id(v)) for k, v in evaluator.roles.items()],
        [id(b) for b in evaluator.cluster_bindings],
        [id(b) for b in evaluator.bindings],
        evaluator.counts(),
        evaluator.usable,
    ]


# ------------------------------------------------------------------------------- generation

_APPS = ["shop", "web", "ns_shop", "x", ""]
_KINDS = [
    ("v1", "ConfigMap"),
    ("v1", "Event"),
    ("events.k8s.io/v1", "Event"),
    ("apps/v1", "Deployment"),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
    ("other.io/v1", "CustomResourceDefinition"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("other.io/v1", "Role"),
    ("argoproj.io/v1alpha1", "AppProject"),
]

_tracking_ids = st.one_of(
    st.builds(
        lambda app, group, kind, ns, name: f"{app}:{group}/{kind}:{ns}/{name}",
        st.sampled_from(_APPS),
        st.sampled_from(["", "apps", "a:b", "a/b"]),
        st.sampled_from(["ConfigMap", "", "Role"]),
        st.sampled_from(["", "ns", "a:b", "a/b"]),
        st.sampled_from(["web", "", "a:b", "a/b"]),
    ),
    st.text(alphabet="ab:/_\n", max_size=12),
    st.sampled_from([None, 3, ""]),
)


@st.composite
def _object(draw: st.DrawFn) -> model.Manifest:
    api_version, kind = draw(st.sampled_from(_KINDS))
    metadata: dict[str, Any] = {"name": draw(st.sampled_from(["a", "b", "c"]))}
    namespace = draw(st.sampled_from(["", "argocd", "shop"]))
    if namespace:
        metadata["namespace"] = namespace
    annotations: dict[str, Any] = {}
    tracking_id = draw(_tracking_ids)
    if tracking_id is not None:
        annotations[tracking.TRACKING_ID] = tracking_id
    if draw(st.booleans()):
        annotations[tracking.INSTALLATION_ID] = draw(st.sampled_from(["one", "two"]))
    if annotations or draw(st.booleans()):
        metadata["annotations"] = annotations
    if draw(st.booleans()):
        metadata["labels"] = {"app.kubernetes.io/instance": draw(st.sampled_from(_APPS))}
    if draw(st.integers(0, 3)) == 0:
        metadata["ownerReferences"] = [{"kind": "Deployment", "name": "d"}]
    if draw(st.integers(0, 4)) == 0:
        metadata["managedFields"] = [{"manager": "kubectl"}]
    body: dict[str, Any] = {"apiVersion": api_version, "kind": kind, "metadata": metadata}
    if kind == "CustomResourceDefinition":
        body["spec"] = {
            "group": draw(st.sampled_from(["example.com", ""])),
            "names": {"kind": draw(st.sampled_from(["Octopus", "Squid"])), "plural": name_of(kind)},
        }
    if kind.endswith("Binding"):
        body["roleRef"] = {"kind": "ClusterRole", "name": "a"}
        body["subjects"] = [{"kind": "Group", "name": "system:authenticated"}]
    if kind.endswith("Role"):
        body["rules"] = [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
    return model.Manifest(model.ObjectKey.of(body), body)


def name_of(kind: str) -> str:
    return kind.lower() + "s"


_settings = st.builds(
    lambda method, installation_id: model.Settings(
        tracking_method=method, installation_id=installation_id
    ),
    st.sampled_from(list(model.TrackingMethod)),
    st.sampled_from(["", "one"]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(live=st.lists(_object(), max_size=30), cfg=_settings)
def test_live_index_matches_the_per_field_scans(
    live: list[model.Manifest], cfg: model.Settings
) -> None:
    index = engine.LiveIndex.of(live, cfg)
    expected = _reference(live, cfg)
    assert _ordered(index.by_key) == _ordered(expected["by_key"])
    assert _ordered(index.roots) == _ordered(expected["roots"])
    assert list(index.plurals.items()) == list(expected["plurals"].items())
    assert [id(b) for b in index.events] == [id(b) for b in expected["events"]]
    assert index.managed_known == expected["managed_known"]
    assert _ordered(index.claims) == _ordered(expected["claims"])
    assert _ordered(index.kinds) == _ordered(expected["kinds"])
    assert _ordered(index.projects) == _ordered(expected["projects"])
    assert _evaluator_state(index.evaluator) == _evaluator_state(rbac.Evaluator(expected["rbac"]))
    for instance in [*_APPS, "missing"]:
        assert _same(tuple(index.roots.get(instance, ()))) == _same(
            tuple(expected["roots"].get(instance, ()))
        )
        assert _same(tuple(index.claims.get(instance, ()))) == _same(
            tuple(expected["claims"].get(instance, ()))
        )


@settings(max_examples=2000, deadline=None)
@given(value=st.one_of(_tracking_ids.filter(lambda v: isinstance(v, str)), st.text(max_size=20)))
def test_app_named_is_parse_app(value: str) -> None:
    parsed = tracking.parse(value)
    assert tracking.app_named(value) == (parsed.app if parsed else None)


def test_app_named_examples() -> None:
    assert tracking.app_named("shop:apps/Deployment:prod/web") == "shop"
    assert tracking.app_named("shop:/ConfigMap:/web") == "shop"
    assert tracking.app_named("ns_shop:/ConfigMap:prod/a:b") == "ns_shop"
    for bad in ["", "shop", "shop:/ConfigMap", ":/ConfigMap:prod/web", "shop:/:prod/web",
                "shop:a/b/c:prod/web", "shop:/ConfigMap:prod/", "shop:/ConfigMap:prod/a/b",
                "shop:ConfigMap:prod/web", "shop:/ConfigMap:web"]:  # fmt: skip
        assert tracking.app_named(bad) is None, bad
        assert tracking.parse(bad) is None, bad
