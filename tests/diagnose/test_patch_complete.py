"""`--write-patch` is never silently partial: each drifted field is in the patch or listed as left
out, with the reason, on stderr and in NOTES; multi-line text values are patched as block scalars
that read back as the live text exactly (testdata/scenarios/fix-multiline-configmap)."""

from __future__ import annotations

import base64
import copy
import io
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubectl_gitdrift.cli import main as cli
from kubectl_gitdrift.compare import changes
from kubectl_gitdrift.diagnose import policies
from tests.conftest import TESTDATA, load_make_repo

SCENARIO = TESTDATA / "scenarios" / "fix-multiline-configmap"
CONFIGMAP = "apps/settings/configmap.yaml"
_GIT = ("-c", "user.name=Sam Platform", "-c", "user.email=sam@example.com")
_GIT += ("-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null")


def _cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(args, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *_GIT, *args], cwd=repo, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def _base(snapshot: Path, repo: Path) -> list[str]:
    return ["settings", "--snapshot", str(snapshot), "--repo-root", str(repo), "--no-entry-points"]


def _live(snapshot: Path, kind: str, name: str) -> dict[str, Any]:
    items = yaml.safe_load(snapshot.read_text())["items"]
    return next(i for i in items if (i["kind"], i["metadata"]["name"]) == (kind, name))


def _adopt_and_commit(repo: Path, patch: Path) -> str:
    _git(repo, "apply", str(patch))
    _git(repo, "commit", "-qam", "adopt the live values of shop-settings")
    return _git(repo, "rev-parse", "HEAD")


def test_patch_adopts_all_four_fields_and_the_new_commit_is_synced(tmp_path: Path) -> None:
    """Real git: --write-patch, git apply, commit, then a run at the new commit is Synced."""
    repo = tmp_path / "repo"
    load_make_repo().build_repo(SCENARIO / "repo-src", repo)
    snapshot = SCENARIO / "snapshot.yaml"
    patch = tmp_path / "adopt.patch"
    code, _, err = _cli([*_base(snapshot, repo), "--write-patch", str(patch)])
    assert (code, err) == (1, "")  # drift found; nothing left out, so nothing on stderr
    head = _adopt_and_commit(repo, patch)
    written = yaml.safe_load((repo / CONFIGMAP).read_text())["data"]
    assert written == _live(snapshot, "ConfigMap", "shop-settings")["data"]  # newlines and all
    text = (repo / CONFIGMAP).read_text()
    assert "  app.properties: |\n" in text  # one final newline: clip
    assert "  nginx.conf: |-\n" in text  # none: strip
    assert "LOG_LEVEL: debug  # raised to debug during incidents only\n" in text  # comment kept
    code, out, err = _cli([*_base(snapshot, repo), "--revision", head])
    assert (code, err) == (0, ""), out
    assert "Application argocd/settings: Synced" in out


# --------------------------------------------------------------------------- left out


_SECRET = """\
apiVersion: v1
kind: Secret
metadata:
  name: shop-api
type: Opaque
data:
  token: {token}
"""
_GENERATOR = """\
configMapGenerator:
  - name: shop-flags
    literals:
      - CHECKOUT_V2=false
generatorOptions:
  disableNameSuffixHash: true
"""


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _with_unpatchable(tmp_path: Path) -> tuple[Path, Path]:
    """The scenario plus a Secret and a generated ConfigMap, both changed in the cluster: a
    repository built from it and a snapshot at its commit."""
    src = tmp_path / "repo-src"
    shutil.copytree(SCENARIO / "repo-src", src)
    app_dir = src / "01-initial" / "apps" / "settings"
    (app_dir / "secret.yaml").write_text(_SECRET.format(token=_b64("git-token")))
    kustomization = (app_dir / "kustomization.yaml").read_text()
    (app_dir / "kustomization.yaml").write_text(kustomization + "  - secret.yaml\n" + _GENERATOR)
    repo = tmp_path / "repo"
    load_make_repo().build_repo(src, repo)
    head = _git(repo, "rev-parse", "HEAD")
    doc = yaml.safe_load((SCENARIO / "snapshot.yaml").read_text())
    app = doc["items"][0]
    app["status"]["sync"]["revision"] = head
    app["status"]["history"][0]["revision"] = head
    settings = doc["items"][1]
    for kind, name, git_data, live_data in (
        ("Secret", "shop-api", {"token": _b64("git-token")}, {"token": _b64("live-token")}),
        ("ConfigMap", "shop-flags", {"CHECKOUT_V2": "false"}, {"CHECKOUT_V2": "true"}),
    ):
        obj = copy.deepcopy(settings)
        obj["kind"] = kind
        obj["metadata"]["name"] = name
        obj["metadata"]["uid"] = f"{obj['metadata']['uid'][:-2]}{len(doc['items']):02d}"
        tracking = f"settings:/{kind}:shop/{name}"
        applied = {
            "apiVersion": "v1",
            "kind": kind,
            "metadata": {
                "annotations": {"argocd.argoproj.io/tracking-id": tracking},
                "name": name,
                "namespace": "shop",
            },
            "data": git_data,
            **({"type": "Opaque"} if kind == "Secret" else {}),
        }
        obj["metadata"]["annotations"] = {
            "argocd.argoproj.io/tracking-id": tracking,
            "kubectl.kubernetes.io/last-applied-configuration": json.dumps(applied) + "\n",
        }
        fields = {f"f:{key}": {} for key in live_data}
        obj["metadata"]["managedFields"][1]["fieldsV1"] = {"f:data": fields}
        obj["data"] = live_data
        if kind == "Secret":
            obj["type"] = "Opaque"
        doc["items"].append(obj)
    snapshot = tmp_path / "live.yaml"
    snapshot.write_text(yaml.safe_dump(doc, sort_keys=False))
    return repo, snapshot


_LEFT_SECRET = "secret/shop-api data.token: a Secret value; re-seal or re-encrypt it in git"
_LEFT_GENERATED = (
    "configmap/shop-flags data.CHECKOUT_V2: the generator at apps/settings/kustomization.yaml:8 "
    "makes it; change its literal or the file it reads by hand"
)


def test_fields_the_patch_cannot_adopt_are_listed_with_the_reason(tmp_path: Path) -> None:
    repo, snapshot = _with_unpatchable(tmp_path)
    patch = tmp_path / "adopt.patch"
    code, _, err = _cli([*_base(snapshot, repo), "--write-patch", str(patch)])
    assert code == 1  # as without --write-patch: drift found
    assert err == (
        f"warning: --write-patch {patch} leaves out 2 drifted field(s) of argocd/settings; "
        "after git apply it stays OutOfSync until they are fixed another way:\n"
        f"  - {_LEFT_GENERATED}\n"
        f"  - {_LEFT_SECRET}\n"
    )
    assert "git-token" not in err + patch.read_text()  # nor any Secret value
    # the report's NOTES say it too, in every format
    _, text, _ = _cli(_base(snapshot, repo))
    notes = text.split("\nNOTES\n", 1)[1]
    assert "leaves out secret/shop-api data.token: a Secret value" in " ".join(notes.split())
    _, out, _ = _cli([*_base(snapshot, repo), "-o", "json"])
    app_notes = json.loads(out)["applications"][0]["notes"]
    assert f"the adopt patch (--write-patch) leaves out {_LEFT_SECRET}" in app_notes
    assert f"the adopt patch (--write-patch) leaves out {_LEFT_GENERATED}" in app_notes
    _, md, _ = _cli([*_base(snapshot, repo), "-o", "markdown"])
    assert (
        f"- the adopt patch (--write-patch) leaves out {_LEFT_SECRET}\n"
        in md.split("## Notes", 1)[1]
    )
    # what the patch holds applies; the two left out are all that is still OutOfSync
    head = _adopt_and_commit(repo, patch)
    code, out, _ = _cli([*_base(snapshot, repo), "--revision", head, "-o", "json"])
    assert code == 1
    left = {
        (r["name"], c["path"])
        for r in json.loads(out)["applications"][0]["resources"]
        for c in r["changes"]
    }
    assert left == {("shop-api", "data.token"), ("shop-flags", "data.CHECKOUT_V2")}


def test_an_empty_patch_says_so(tmp_path: Path) -> None:
    """Nothing git can take (only a Secret drifted): the empty patch is written and named."""
    repo, snapshot = _with_unpatchable(tmp_path)
    doc = yaml.safe_load(snapshot.read_text())
    doc["items"] = [i for i in doc["items"] if i["metadata"]["name"] != "shop-flags"]
    settings = next(i for i in doc["items"] if i["metadata"]["name"] == "shop-settings")
    applied = json.loads(
        settings["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
    )
    settings["data"] = applied["data"]
    snapshot.write_text(yaml.safe_dump(doc, sort_keys=False))
    patch = tmp_path / "adopt.patch"
    code, _, err = _cli([*_base(snapshot, repo), "--write-patch", str(patch)])
    assert code == 1
    assert patch.read_text() == ""
    assert f"  - {_LEFT_SECRET}\n" in err
    assert err.endswith(
        f"warning: --write-patch {patch}: the patch is empty: nothing to adopt into git\n"
    )


# --------------------------------------------------------------------------- block scalars


_FILE = """\
data:
  a: |
    # gateway
    timeout=5s

  b: |-
    one
  c: >
    folded
    text
  - item: |+
      kept

  d: plain
"""


@pytest.mark.parametrize(
    ("line", "key", "new", "header"),
    [
        (2, "a", "# gateway\ntimeout=30s\n", "  a: |\n"),
        (2, "a", "# gateway\ntimeout=30s", "  a: |-\n"),
        (2, "a", "x\n\n\n", "  a: |+\n"),
        (6, "b", "one\ntwo\n", "  b: |\n"),
        (8, "c", "folded text\nand more\n", "  c: |\n"),  # a folded block becomes literal
        (2, "a", "  leading spaces\nx\n", '  a: "  leading spaces\\nx\\n"\n'),  # needs quotes
        (2, "a", "with\r\ncarriage returns", '  a: "with\\r\\ncarriage returns"\n'),
    ],
)
def test_block_scalar_edit_reads_back_exactly(line: int, key: str, new: str, header: str) -> None:
    text = _FILE.replace("  - item: |+\n      kept\n\n", "")
    old = yaml.safe_load(text)["data"][key]
    edited, failed = policies.apply_edits(text, [policies.LineEdit("f", line, old, new, "")])
    assert failed == []
    assert yaml.safe_load(edited)["data"][key] == new
    assert header in edited
    others = {k: v for k, v in yaml.safe_load(text)["data"].items() if k != key}
    assert {k: v for k, v in yaml.safe_load(edited)["data"].items() if k != key} == others


def test_block_scalar_in_a_list_item_and_a_stale_value() -> None:
    text = "items:\n  - item: |+\n      kept\n\n  - item: x\n"
    edit = policies.LineEdit("f", 2, "kept\n\n", "kept\nmore\n", "")
    edited, failed = policies.apply_edits(text, [edit])
    assert failed == []
    assert yaml.safe_load(edited)["items"] == [{"item": "kept\nmore\n"}, {"item": "x"}]
    # the block no longer says what git rendered: left alone, reported as failed
    stale = policies.LineEdit("f", 2, "something else\n", "new\n", "")
    assert policies.apply_edits(text, [stale]) == (text, [stale])


def test_edits_below_a_growing_block_keep_their_lines() -> None:
    text = "a: |\n  one\nb: 1\n"
    edits = [
        policies.LineEdit("f", 1, "one\n", "one\ntwo\nthree\n", ""),
        policies.LineEdit("f", 3, 1, 2, ""),
    ]
    edited, failed = policies.apply_edits(text, edits)
    assert failed == []
    assert yaml.safe_load(edited) == {"a": "one\ntwo\nthree\n", "b": 2}


@pytest.mark.parametrize(
    ("old", "new", "summary"),
    [
        ("a\nb\n", "a\nb\nc\n", "+1 line: c"),
        ("a\nb\nc\n", "a\nc\n", "-1 line: b"),
        ("a\nb\nc\nd\n", "a\nB\nC\nd\n", "-2 +2 lines: B"),
        ("a\nb", "a\nb\n", "only the final newline differs: added"),
        ("a\n" + "x" * 80, "a\n" + "y" * 80, "-1 +1 lines: " + "y" * 44 + "..."),
    ],
)
def test_line_summary(old: str, new: str, summary: str) -> None:
    assert changes.multiline(old, new)
    assert changes.line_summary(old, new) == summary
    assert len(changes.line_summary(old, new)) <= 60


def test_one_line_values_are_not_multiline() -> None:
    assert not changes.multiline("a", "b")
    assert not changes.multiline("a\n", "b\n")  # one line each, final newline or not
    assert not changes.multiline(3, "a\nb")


def test_two_resources_in_one_file_apply_together(tmp_path: Path, build_repo) -> None:  # type: ignore[no-untyped-def]
    """Each adopt remedy's diff is made against the commit, and `--write-patch` merges the
    diffs of one file: it applies even when the hunks' context overlaps (a block scalar that
    grows right before the next resource's key)."""
    from kubectl_gitdrift import model
    from kubectl_gitdrift.diagnose import remedies
    from tests.support.diagnose_helper import diagnose

    incident = TESTDATA / "incident"
    app = diagnose(incident / "snapshot.yaml", build_repo(incident / "repo-src")).application
    assert app is not None
    text = "a: |\n  one\nb: 1\nc: 2\n"
    lines = {"a": 1, "b": 3, "c": 4}

    def drift(name: str, old: Any, new: Any) -> model.Drift:
        key = model.ObjectKey("", "ConfigMap", "prod", name)
        change = model.Change(model.Op.CHANGE, ("data", name), old, new)
        body = {"apiVersion": "v1", "kind": "ConfigMap", "data": {name: old}}  # unhashable
        return model.Drift(
            key, model.ResourceStatus.OUT_OF_SYNC, (change,), origin="f.yaml", desired=body
        )

    def locate(d: model.Drift, c: model.Change) -> remedies.Location:
        return remedies.Location("f.yaml", lines[d.key.name], "resource")

    drifts = [drift("a", "one\n", "one\ntwo\n"), drift("b", 1, 5), drift("c", 2, 6)]
    fixes = remedies.recommend(app, drifts, [], locate, read_source=lambda rel: text)
    assert remedies.left_out(fixes) == []
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f.yaml").write_text(text)
    (tmp_path / "p.diff").write_text(remedies.patch(fixes))
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True)
    assert yaml.safe_load((tmp_path / "f.yaml").read_text()) == {"a": "one\ntwo\n", "b": 5, "c": 6}
