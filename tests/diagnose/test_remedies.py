"""Remediation: the adopt patch (git apply, then Synced), the revert command, policies, and that
no Secret value ever reaches a patch or a command."""

from __future__ import annotations

import io
import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from kubectl_gitdrift import model
from kubectl_gitdrift.cli import main as cli
from kubectl_gitdrift.diagnose import policies, remedies
from kubectl_gitdrift.present import markdown
from tests.conftest import TESTDATA
from tests.support.diagnose_helper import diagnose

INCIDENT = TESTDATA / "incident"
REFERENCE = Path(__file__).resolve().parents[2] / "testdata" / "apiserver"


@pytest.fixture
def fresh_repo(tmp_path: Path) -> Path:
    """A private copy of the incident repo (this test changes it)."""
    from tests.conftest import load_make_repo

    dest = tmp_path / "repo"
    load_make_repo().build_repo(INCIDENT / "repo-src", dest)
    return dest


def _cli(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli.main(args, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_adopt_patch_applies_and_the_next_run_is_synced(fresh_repo: Path) -> None:
    report = diagnose(INCIDENT / "snapshot.yaml", fresh_repo)
    patch = remedies.patch(report.remedies)
    assert patch == (
        "diff --git a/overlays/prod/guestbook/kustomization.yaml "
        "b/overlays/prod/guestbook/kustomization.yaml\n"
        "--- a/overlays/prod/guestbook/kustomization.yaml\n"
        "+++ b/overlays/prod/guestbook/kustomization.yaml\n"
        "@@ -5,4 +5,4 @@\n"
        "   - ../../../base/guestbook\n"
        " replicas:\n"
        "   - name: guestbook\n"
        "-    count: 3\n"
        "+    count: 6\n"
    )
    (fresh_repo.parent / "adopt.patch").write_text(patch)
    subprocess.run(["git", "apply", "../adopt.patch"], cwd=fresh_repo, check=True)
    after = diagnose(INCIDENT / "snapshot.yaml", fresh_repo, local=True)
    assert after.sync_status is model.SyncStatus.SYNCED
    code, _, err = _cli(
        [
            "guestbook",
            "--snapshot",
            str(INCIDENT / "snapshot.yaml"),
            "--repo-root",
            str(fresh_repo),
            "--local",
            "--no-entry-points",
        ]
    )
    assert (code, err) == (0, "")


def test_write_patch_flag_end_to_end(fresh_repo: Path, tmp_path: Path) -> None:
    """Through the real CLI: the patch applies with git apply and the next run is Synced."""
    patch_file = tmp_path / "adopt.patch"
    base = ["guestbook", "--snapshot", str(INCIDENT / "snapshot.yaml"), "--no-entry-points"]
    code, _, err = _cli([*base, "--repo-root", str(fresh_repo), "--write-patch", str(patch_file)])
    assert (code, err) == (1, "")
    subprocess.run(["git", "apply", str(patch_file)], cwd=fresh_repo, check=True)
    code, out, err = _cli([*base, "--repo-root", str(fresh_repo), "--local"])
    assert (code, err) == (0, ""), out


def test_image_edit_keeps_comments_and_quotes() -> None:
    line = '          image: "registry.example.com/guestbook:1.4.2"  # pinned by CI\n'
    assert policies.edit_line(line, "registry.example.com/guestbook:1.4.2", "r.io/g:1.4.3") == (
        '          image: "r.io/g:1.4.3"  # pinned by CI\n'
    )
    assert policies.edit_line("    count: 3 # prod\n", 3, 6) == "    count: 6 # prod\n"
    assert policies.edit_line("  - 3\n", 3, 4) == "  - 4\n"
    assert policies.edit_line("    count: 33\n", 3, 6) is None  # not the whole scalar
    assert policies.edit_line("  enabled: true\n", True, False) == "  enabled: false\n"
    assert policies.edit_line("  v: '1.0'\n", "1.0", "1.1") == "  v: '1.1'\n"
    # an unquoted string that would read back as a number gets quoted
    assert policies.edit_line("  tag: latest\n", "latest", "1.5") == '  tag: "1.5"\n'


def test_kustomize_image_tag_edit() -> None:
    edit = policies.adopt_edit(
        "images",
        "k.yaml",
        4,
        "registry.example.com/guestbook:1.4.2",
        "registry.example.com/guestbook:1.4.3",
    )
    assert edit is not None
    assert (edit.old, edit.new) == ("1.4.2", "1.4.3")
    text, failed = policies.apply_edits("a: 1\nimages:\n- name: x\n  newTag: 1.4.2\n", [edit])
    assert failed == []
    assert text.endswith("  newTag: 1.4.3\n")


def test_unified_diff_without_final_newline_applies(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "f.yaml").write_text("a: 1\nb: 2")
    diff = policies.unified_diff("f.yaml", "a: 1\nb: 2", "a: 1\nb: 3")
    (tmp_path / "p.diff").write_text(diff)
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True)
    assert (tmp_path / "f.yaml").read_text() == "a: 1\nb: 3"


def test_revert_patch_addresses_merge_keyed_items() -> None:
    change = model.Change(
        model.Op.CHANGE,
        (
            "spec",
            "template",
            "spec",
            "containers",
            model.ListKey((("name", "guestbook"),)),
            "image",
        ),
        "registry.example.com/guestbook:1.4.2",
        "registry.example.com/guestbook:1.4.3",
    )
    key = model.ObjectKey("apps", "Deployment", "prod", "guestbook")
    body = policies.revert_patch([change])
    assert body == {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {"name": "guestbook", "image": "registry.example.com/guestbook:1.4.2"}
                    ]
                }
            }
        }
    }
    assert policies.kubectl_patch(key, body or {}).startswith(
        "kubectl patch deployment.apps/guestbook -n prod --type strategic -p "
    )


def test_policies_are_valid_yaml_and_name_the_controller(incident_repo: Path) -> None:
    report = diagnose(INCIDENT / "snapshot.yaml", incident_repo)
    prevent = {r.title: r for r in report.remedies if r.kind is model.RemedyKind.PREVENT}
    admission = prevent["Make git the only write path (admission policy)"].snippet or ""
    vap, binding, kyverno = yaml.safe_load_all(admission)
    assert vap["kind"] == "ValidatingAdmissionPolicy"
    assert {
        "apiGroups": ["apps"],
        "apiVersions": ["*"],
        "operations": ["UPDATE"],
        "resources": ["deployments", "deployments/scale"],
    } in (vap["spec"]["matchConstraints"]["resourceRules"])
    expression = vap["spec"]["validations"][0]["expression"]
    assert "system:serviceaccount:argocd:argocd-application-controller" in expression
    assert "'break-glass' in request.userInfo.groups" in expression
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "prod"
    }
    assert kyverno["kind"] == "ClusterPolicy"
    assert (
        "Deployment/scale" in kyverno["spec"]["rules"][0]["match"]["any"][0]["resources"]["kinds"]
    )
    alert = yaml.safe_load(
        prevent["Or, keeping selfHeal off, alert while the app is OutOfSync"].snippet or ""
    )
    assert alert["spec"]["groups"][0]["rules"][0]["expr"] == (
        'argocd_app_info{name="guestbook",namespace="argocd",sync_status="OutOfSync"} == 1'
    )
    selfheal = prevent["Let Argo CD undo manual changes (selfHeal)"].commands[0]
    assert selfheal.endswith("""-p '{"spec":{"syncPolicy":{"automated":{"selfHeal":true}}}}'""")


def test_ignore_differences_snippet_appends_or_creates(incident_repo: Path) -> None:
    report = diagnose(INCIDENT / "snapshot.yaml", incident_repo)
    app = report.application
    assert app is not None
    key = model.ObjectKey("apps", "Deployment", "prod", "guestbook")
    snippet, command = policies.ignore_differences(app, key, ["/spec/replicas"])
    assert yaml.safe_load(snippet.split("#")[0])["spec"]["ignoreDifferences"] == [
        {
            "group": "apps",
            "kind": "Deployment",
            "name": "guestbook",
            "namespace": "prod",
            "jsonPointers": ["/spec/replicas"],
        }
    ]
    ops = json.loads(command.split(" -p ", 1)[1].strip("'"))
    assert ops[0]["path"] == "/spec/ignoreDifferences"  # the app has none yet
    assert ops[1]["value"] == ["RespectIgnoreDifferences=true"]


@pytest.fixture
def incident_repo(build_repo: Callable[[Path], Path]) -> Path:
    """The incident repo, built once per session under pytest's tmp dir (read-only use)."""
    return build_repo(INCIDENT / "repo-src")


# --------------------------------------------------------------------------- Secrets


def _secret_drift() -> model.Drift:
    """The recorded Secret (applied with stringData) drifted from git; values already masked by
    the diff step, but the raw live object still carries the plain last-applied annotation."""
    live = json.loads((REFERENCE / "incident-06-secret-applied-with-stringdata.json").read_text())
    key = model.ObjectKey("", "Secret", "prod", "guestbook-db")
    change = model.Change(
        model.Op.CHANGE, ("data", "password"), "++++++++", "++++++++++++", secret=True
    )
    return model.Drift(
        key,
        model.ResourceStatus.OUT_OF_SYNC,
        (change,),
        origin="base/secret.yaml",
        desired={},
        live=live,
    )


def test_no_secret_value_reaches_any_remedy_patch_or_markdown(incident_repo: Path) -> None:
    drift = _secret_drift()
    annotation = drift.live["metadata"]["annotations"][  # type: ignore[index]
        "kubectl.kubernetes.io/last-applied-configuration"
    ]
    plain = json.loads(annotation)["stringData"]
    assert plain  # the recording does keep plain values there
    app = diagnose(INCIDENT / "snapshot.yaml", incident_repo).application
    assert app is not None

    def locate(d: model.Drift, c: model.Change) -> remedies.Location:
        return remedies.Location("base/secret.yaml", 3, "resource")

    found = [
        model.Finding("manual-drift", model.Severity.ERROR, "x", drift.key, ("data", "password"))
    ]
    fixes = remedies.recommend(app, [drift], found, locate, read_source=lambda rel: "password: x\n")
    patch, skipped = remedies.write_patch([drift], locate, lambda rel: "password: x\n")
    report = model.Report(
        (
            model.AppReport(
                "guestbook",
                "argocd",
                model.SyncStatus.OUT_OF_SYNC,
                "OutOfSync",
                "r",
                "s",
                (drift,),
                tuple(found),
                tuple(fixes),
                (),
                app,
            ),
        ),
        "offline",
    )
    blob = json.dumps([list(r.steps) + list(r.commands) + [r.snippet or ""] for r in fixes])
    blob += patch + " ".join(skipped) + markdown.render(report)
    assert plain["password"] not in blob  # ("username: guestbook" is also the app's name)
    data = drift.live["data"]  # type: ignore[index]
    for value in data.values():
        assert value not in blob
    assert patch == ""
    assert any("Secret" in s for s in skipped)


def test_the_fields_tracking_writes_are_never_adopted_into_git() -> None:
    """The tracking-id and installation-id annotations and the instance label (when tracking
    uses one) are written by a sync: the adopt patch names them as left out, never edits git."""
    key = model.ObjectKey("apps", "Deployment", "prod", "web")
    label = ("metadata", "labels", "app.kubernetes.io/instance")
    changes = tuple(
        model.Change(model.Op.CHANGE, path, "web", "other")
        for path in (("metadata", "annotations", "argocd.argoproj.io/tracking-id"), label)
    )
    drift = model.Drift(key, model.ResourceStatus.OUT_OF_SYNC, changes)

    def locate(d: model.Drift, c: model.Change) -> remedies.Location:
        return remedies.Location("web/deployment.yaml", 3, "resource")

    def read(rel: str) -> str:
        return "metadata:\n  labels:\n    app.kubernetes.io/instance: web\n"

    both = model.Settings(tracking_method=model.TrackingMethod.ANNOTATION_AND_LABEL)
    patch, skipped = remedies.write_patch([drift], locate, read, both)
    assert patch == ""
    assert [s.split(": ", 1)[1] for s in skipped] == [
        "Argo CD's tracking annotation; a sync writes it, not git",
        "Argo CD's tracking label; a sync writes it, not git",
    ]
    # Argo CD's default, annotation tracking, writes no label: the label is git's own
    for settings in (None, model.Settings()):
        patch, skipped = remedies.write_patch([drift], locate, read, settings)
        assert [s.split(": ", 1)[1] for s in skipped] == [
            "Argo CD's tracking annotation; a sync writes it, not git"
        ]
        assert "+    app.kubernetes.io/instance: other" in patch
    # tracking by label writes no tracking-id: the annotation is git's to adopt, the label not
    label = model.Settings(tracking_method=model.TrackingMethod.LABEL)
    patch, skipped = remedies.write_patch([drift], locate, read, label)
    assert [s.split(": ", 1)[1] for s in skipped] == [
        "Argo CD's tracking label; a sync writes it, not git"
    ]
