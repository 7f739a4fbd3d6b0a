"""ObjectKey.of fills the frozen key through its slots' setters (issue 18: it runs for every
object of a snapshot before --all forks); it must make exactly what the generated __init__
makes from the same values, for any body a snapshot or a render can hold."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_gitdrift import model


def _reference(body: model.Body) -> model.ObjectKey:
    """ObjectKey.of as it was: through the dataclass's own __init__."""
    api_version = str(body.get("apiVersion") or "")
    metadata = body.get("metadata") or {}
    return model.ObjectKey(
        group=api_version.rpartition("/")[0],
        kind=str(body.get("kind") or ""),
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
    )


class _Text(str):
    """A str subclass: the key must hold plain strs, as str() made them."""


_values = st.one_of(
    st.none(),
    st.sampled_from(["", "v1", "apps/v1", "a/b/c", "/", "x/", 0, 1, 2.5, True, False]),
    st.text(max_size=8),
    st.builds(_Text, st.text(max_size=4)),
    st.lists(st.integers(), max_size=2),
)


@st.composite
def _bodies(draw: st.DrawFn) -> dict[str, Any]:
    body: dict[str, Any] = {}
    for field in ("apiVersion", "kind"):
        if draw(st.booleans()):
            body[field] = draw(_values)
    if draw(st.booleans()):
        metadata: dict[str, Any] = {}
        for field in ("namespace", "name"):
            if draw(st.booleans()):
                metadata[field] = draw(_values)
        body["metadata"] = metadata if metadata or draw(st.booleans()) else None
    return body


@settings(max_examples=1000, deadline=None)
@given(body=_bodies())
def test_of_makes_what_the_generated_init_makes(body: dict[str, Any]) -> None:
    key, expected = model.ObjectKey.of(body), _reference(body)
    assert key == expected
    assert hash(key) == hash(expected)
    assert repr(key) == repr(expected)
    assert not key < expected
    assert not expected < key
    for field in dataclasses.fields(model.ObjectKey):
        assert type(getattr(key, field.name)) is str
        assert getattr(key, field.name) == getattr(expected, field.name)
    assert pickle.loads(pickle.dumps(key)) == key
    assert dataclasses.replace(key) == key


def test_the_key_is_the_four_fields_and_stays_frozen() -> None:
    """What of() assumes: four str fields, set by __init__ alone (no __post_init__)."""
    assert [f.name for f in dataclasses.fields(model.ObjectKey)] == [
        "group",
        "kind",
        "namespace",
        "name",
    ]
    assert not hasattr(model.ObjectKey, "__post_init__")
    key = model.ObjectKey.of({"apiVersion": "apps/v1", "kind": "Deployment"})
    assert not hasattr(key, "__dict__")  # slots
    with pytest.raises(dataclasses.FrozenInstanceError):
        key.name = "web"  # type: ignore[misc]
    assert key == model.ObjectKey("apps", "Deployment", "", "")
