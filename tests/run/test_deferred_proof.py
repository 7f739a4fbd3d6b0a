"""--all with a big JSON snapshot: msgspec's reading is proven right beside the compare
processes (yamlio.load_documents' checks, cli._proven), not before them. The report is the one
the checking parse gives; a snapshot the checking parse refuses fails with its error, even when
the fast reading tripped over something else first; a reading that cannot be proven is read
again the checking way."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift import yamlio
from kubectl_gitdrift.errors import ExitCode, SnapshotError
from kubectl_gitdrift.yamlio import fastjson
from tests.conftest import Result
from tests.run.test_all import fleet_snapshot, repo  # noqa: F401
from tests.run.test_fanout import fleet40, run_all_cli  # noqa: F401

PAD = "x" * (yamlio.FAST_JSON_CHARS + 1024)  # the snapshot is big enough to be read fast


@pytest.fixture(scope="module")
def big_fleet(
    fleet40: tuple[Path, dict[str, Any]],  # noqa: F811
) -> tuple[Path, list[dict[str, Any]]]:
    """test_fanout's 40 Applications (enough for two processes) and their snapshot's
    documents, plus a ConfigMap big enough for the snapshot to be read by msgspec."""
    out, _meta = fleet40
    docs = yamlio.load_documents((out / "snapshot.json").read_bytes(), "snapshot.json")
    padding = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "padding", "namespace": "default"},
        "data": {"blob": PAD},
    }
    return out, [*docs, padding]


def _jsonl(docs: list[dict[str, Any]]) -> str:
    """The documents as a JSON stream, one a line."""
    return "\n".join(json.dumps(d) for d in docs)


def _write_json(
    path: Path, docs: list[dict[str, Any]], replace: tuple[str, str] = ("", "")
) -> Path:
    text = _jsonl(docs) + "\n"
    if replace[0]:
        assert replace[0] in text
        text = text.replace(replace[0], replace[1], 1)
    path.write_text(text, encoding="utf-8")
    return path


def _run(
    tmp_path: Path, fleet: Path, snapshot: Path, workers: str | None, cache: Path
) -> subprocess.CompletedProcess[str]:
    return run_all_cli(tmp_path / "report", snapshot, fleet / "repo", cache, workers, "-o", "json")


@pytest.mark.slow
def test_a_big_json_snapshot_is_proven_beside_the_workers(
    tmp_path: Path, big_fleet: tuple[Path, list[dict[str, Any]]]
) -> None:
    fleet, docs = big_fleet
    cache = tmp_path / "cache"
    as_yaml = tmp_path / "snapshot.yaml"  # YAML: read the checking way only
    as_yaml.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    checked = _run(tmp_path, fleet, as_yaml, "1", cache)
    assert checked.returncode == ExitCode.DRIFT, checked.stderr
    expected = (tmp_path / "report").read_text(encoding="utf-8")

    fast = _run(tmp_path, fleet, _write_json(tmp_path / "snapshot.json", docs), None, cache)
    assert fast.returncode == ExitCode.DRIFT, fast.stderr
    assert "forked workers: [2]" in fast.stderr, fast.stderr
    report = (tmp_path / "report").read_text(encoding="utf-8")
    assert report.replace("snapshot.json", "snapshot.yaml") == expected


@pytest.mark.slow
@pytest.mark.parametrize(
    ("twice", "key"),
    [
        # a key the run never reads: only the proof sees it
        ('"blob": "', "blob"),
        # the kind: read fast, the padding ConfigMap would have no kind ("kind missing")
        ('"kind": "ConfigMap", "metadata": {"name": "padding"', "kind"),
    ],
    ids=["data", "kind"],
)
def test_a_key_written_twice_fails_as_the_checking_parse_says(
    tmp_path: Path, big_fleet: tuple[Path, list[dict[str, Any]]], twice: str, key: str
) -> None:
    fleet, docs = big_fleet
    if key == "blob":
        replace = (twice, f'"blob": "1", {twice}')
    else:
        replace = (twice, '"kind": "ConfigMap", "kind": "", ' + twice.split(", ", 1)[1])
    snapshot = _write_json(tmp_path / "snapshot.json", docs, replace)
    with pytest.raises(SnapshotError) as checked:
        yamlio.load_documents(snapshot.read_bytes(), str(snapshot), error=SnapshotError)
    assert f"duplicate key {key!r}" in checked.value.message

    result = _run(tmp_path, fleet, snapshot, None, tmp_path / "cache")
    assert result.returncode == ExitCode.ERROR, result.stderr
    assert f"error: {checked.value.message}\n" in result.stderr
    assert not (tmp_path / "report").read_text(encoding="utf-8")  # no report half-written


def _as_json(snapshot: Path, clone: Path, tmp_path: Path) -> list[str]:
    """--all -o json over test_all's fleet, its snapshot written as a JSON stream."""
    docs = yamlio.load_documents(snapshot.read_bytes(), str(snapshot))
    written = _write_json(tmp_path / "fleet.json", docs)
    return ["--all", "-o", "json", "--snapshot", str(written), "--repo-root", str(clone)]


def test_a_reading_that_cannot_be_proven_is_read_again(
    run_cli: Callable[..., Result],
    repo: Path,  # noqa: F811
    fleet_snapshot: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    args = _as_json(fleet_snapshot, repo, tmp_path)
    plain = run_cli(args)  # small: the checking parse only
    monkeypatch.setattr(fastjson, "FAST_JSON_CHARS", 0)
    proofs: list[bool] = []
    real = fastjson._proof

    def unproven_once(text: str, read: list[Any]) -> Any:
        proofs.append(bool(proofs))
        return real(text, read) if len(proofs) > 1 else None

    monkeypatch.setattr(fastjson, "_proof", unproven_once)
    again = run_cli(args)
    assert proofs == [False, True]  # deferred, failed; then read again and proven at once
    assert (again.exit_code, again.stdout, again.stderr) == (
        plain.exit_code,
        plain.stdout,
        plain.stderr,
    )


def test_a_run_leaves_the_snapshot_as_it_was_read(
    run_cli: Callable[..., Result],
    repo: Path,  # noqa: F811
    fleet_snapshot: Path,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The check may run after apps were compared (the first one, before the fork; others,
    when an error makes it run last): comparing must leave the objects read as they were, or
    the proof would fail and the snapshot be read twice."""
    args = _as_json(fleet_snapshot, repo, tmp_path)
    monkeypatch.setattr(fastjson, "FAST_JSON_CHARS", 0)
    proofs: list[object] = []
    real = fastjson._proof

    def counted(text: str, read: list[Any]) -> Any:
        proofs.append(real(text, read))
        return proofs[-1]

    monkeypatch.setattr(fastjson, "_proof", counted)
    assert run_cli(args).exit_code == ExitCode.DRIFT
    assert len(proofs) == 1
    assert proofs[0] is not None  # proven: read once


def _big(*docs: dict[str, Any]) -> list[dict[str, Any]]:
    return [*docs, {"apiVersion": "v1", "kind": "ConfigMap", "data": {"blob": PAD}}]


def _deferred(data: bytes) -> tuple[list[dict[str, Any]], list[Callable[[], None]]]:
    checks: list[Callable[[], None]] = []
    docs = yamlio.load_documents(data, "snap.json", error=SnapshotError, checks=checks)
    assert len(checks) == 1  # read fast, proven later
    return docs, checks


@pytest.mark.parametrize(
    "escaped",
    [
        '"a \\u003c b \\u003e c \\u0026 d"',  # as Go's JSON writes <, > and &: no colon
        '"\\u00e9t\\u00e9"',
    ],
)
def test_escapes_that_write_no_colon_are_proven(escaped: str) -> None:
    docs = _big({"kind": "ConfigMap", "data": {"k": "PLACEHOLDER"}})
    data = _jsonl(docs).replace('"PLACEHOLDER"', escaped).encode()
    read, checks = _deferred(data)
    checks[0]()  # proven
    assert read == yamlio.load_documents(data, "snap.json", error=SnapshotError)


def test_a_colon_written_as_an_escape_is_read_again() -> None:
    docs = _big({"kind": "ConfigMap", "data": {"k": "PLACEHOLDER"}})
    data = _jsonl(docs).replace('"PLACEHOLDER"', '"a\\u003ab"').encode()
    read, checks = _deferred(data)
    with pytest.raises(yamlio.Unproven):
        checks[0]()
    checked = yamlio.load_documents(data, "snap.json", error=SnapshotError)
    assert checked[0]["data"]["k"] == "a:b"
    assert read == checked


def test_a_byte_order_mark_is_read_past() -> None:
    data = b"\xef\xbb\xbf" + _jsonl(_big({"kind": "A"})).encode()
    read, checks = _deferred(data)
    checks[0]()
    assert read == yamlio.load_documents(data, "snap.json", error=SnapshotError)


def test_bytes_that_are_not_utf8_fail_as_the_checking_parse_says() -> None:
    text = _jsonl(_big({"kind": "ConfigMap", "data": {"k": "PH"}}))
    data = text.replace('"PH"', '"caf\xe9"').encode("latin-1")
    with pytest.raises(SnapshotError, match="not UTF-8") as eager:
        yamlio.load_documents(data, "snap.json", error=SnapshotError)
    checks: list[Callable[[], None]] = []
    # msgspec refuses the bytes at once (the checking parse then says why), or the check
    # finds them out
    failed: list[str] = []
    try:
        yamlio.load_documents(data, "snap.json", error=SnapshotError, checks=checks)
    except SnapshotError as exc:
        failed.append(exc.message)
    if failed:
        assert failed == [eager.value.message]
    else:
        with pytest.raises(yamlio.Unproven):
            checks[0]()
