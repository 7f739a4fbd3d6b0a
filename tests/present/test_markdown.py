"""`-o markdown`: the post-mortem write-up."""

from __future__ import annotations

from kubectl_gitdrift import model
from kubectl_gitdrift.diagnose import audit
from kubectl_gitdrift.live import auditlog
from kubectl_gitdrift.present import markdown
from tests.conftest import TESTDATA
from tests.support.diagnose_helper import diagnose

INCIDENT = TESTDATA / "incident"


def _report(build_repo, log: audit.AuditLog | None = None) -> model.Report:  # type: ignore[no-untyped-def]
    app = diagnose(INCIDENT / "snapshot.yaml", build_repo(INCIDENT / "repo-src"), audit_log=log)
    return model.Report((app,), "offline")


def test_post_mortem_sections_in_order(build_repo) -> None:  # type: ignore[no-untyped-def]
    text = markdown.render(_report(build_repo, auditlog.read(INCIDENT / "audit.jsonl")))
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert headings[:6] == [
        "# Drift post-mortem: `argocd/guestbook`",
        "## Symptoms",
        "## Evidence",
        "## Root cause",
        "## Remediation",
        "### Adopt the cluster's values into git (deployment.apps/guestbook)",
    ]
    assert "## Verification" in headings
    assert "## Prevention" in headings
    assert text.index("## Verification") < text.index("## Prevention")
    assert "audit log: **jane.sre@example.com** — `patch`" in text
    assert "```diff\ndiff --git a/overlays/prod/guestbook/kustomization.yaml" in text
    assert "kind: ValidatingAdmissionPolicy" in text
    assert "| `deployment.apps/guestbook` | `spec.replicas` | `3` | `6` |" in text


def test_deterministic_and_registered(build_repo, pm) -> None:  # type: ignore[no-untyped-def]
    from kubectl_gitdrift import hookcalls

    assert markdown.render(_report(build_repo)) == markdown.render(_report(build_repo))
    assert "markdown" in hookcalls.collect_renderers(pm)


def test_synced_app_has_no_remediation() -> None:
    app = model.AppReport("a", "argocd", model.SyncStatus.SYNCED, "Synced", "r", "s", (), (), ())
    text = markdown.render(model.Report((app,), "offline"))
    assert "## Remediation" not in text
    assert "gitdrift: **Synced**" in text


def test_a_value_line_never_becomes_a_heading() -> None:
    """A ConfigMap value's `# comment` line stays inside a ```diff fence (golden of the
    fix-multiline-configmap scenario, which tests/test_scenarios.py keeps current)."""
    text = (TESTDATA / "scenarios" / "fix-multiline-configmap" / "expected.md").read_text()
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert all(h.startswith(("# Drift post-mortem", "## ", "### ")) for h in headings), headings
    assert "  ```diff\n  --- git\n  +++ live\n" in text
    assert "  +  # load test 2026-12-01: log every request\n" in text
