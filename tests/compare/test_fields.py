"""fields: FieldsV1 tries mapped onto FieldPaths (who owns which field)."""

from __future__ import annotations

from typing import Any

import pytest

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import fields

TRIE: dict[str, Any] = {
    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
    "f:spec": {
        "f:replicas": {},
        "f:template": {
            "f:spec": {
                "f:containers": {
                    'k:{"name":"app"}': {".": {}, "f:image": {}, "f:args": {}},
                }
            }
        },
    },
}
APP = model.ListKey((("name", "app"),))
SIDE = model.ListKey((("name", "side"),))


def _live(*entries: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "metadata": {
            "managedFields": [
                {"manager": m, "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": t}
                for m, t in entries
            ]
        }
    }


@pytest.mark.parametrize(
    ("path", "owned"),
    [
        (("spec", "replicas"), True),
        (("spec", "template", "spec", "containers", APP, "image"), True),
        (("spec", "template", "spec", "containers", APP, "args", 1), True),  # inside an atomic leaf
        (("spec", "template", "spec", "containers", SIDE, "image"), False),
        (("spec", "template", "spec", "containers", APP), True),  # the item itself
        (("spec", "paused"), False),
        (("metadata", "labels", "app"), True),
        (("metadata", "annotations"), False),
    ],
)
def test_owns(path: model.FieldPath, *, owned: bool) -> None:
    assert fields.owns(TRIE, path) is owned


def test_leaf_paths() -> None:
    assert sorted(map(model.display_path, fields.leaf_paths(TRIE))) == [
        "metadata.labels.app",
        "spec.replicas",
        "spec.template.spec.containers[name=app].args",
        "spec.template.spec.containers[name=app].image",
    ]


def test_owners_and_paths_by_manager() -> None:
    live = _live(("argocd-controller", TRIE), ("kubectl", {"f:spec": {"f:replicas": {}}}))
    assert [o.manager for o in fields.owners(live, ("spec", "replicas"))] == [
        "argocd-controller",
        "kubectl",
    ]
    assert fields.paths_owned_by(live, ["kubectl"]) == [("spec", "replicas")]
    assert fields.has_managed_fields(live)
    assert not fields.has_managed_fields({"metadata": {}})


def test_entries_skip_other_field_types() -> None:
    live = {"metadata": {"managedFields": [{"manager": "x", "fieldsType": "FieldsV2"}, "junk"]}}
    assert fields.entries(live) == []
