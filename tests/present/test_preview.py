"""`preview`'s three outputs (present/preview.py) of model.Preview values built here: goldens of
what a reviewer reads (testdata/preview/present/, rewritten by --update-golden), and the
invariants behind them: Secret values never written, every markdown comment under its limit,
each app in exactly one part, cut sections closed, colour only added."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubectl_gitdrift import model
from kubectl_gitdrift.present import color, report
from kubectl_gitdrift.present import preview as present
from tests.conftest import TESTDATA, Golden

GOLDEN = TESTDATA / "preview" / "present"
K = model.ObjectKey
P = model.PreviewAction
DEPLOY = K("apps", "Deployment", "prod", "guestbook")
SCALE = model.Owner("kubectl", "Update", "scale", "2026-11-30T04:01:43Z")
IMAGE = ("spec", "template", "spec", "containers", model.ListKey((("name", "app"),)), "image")


def guestbook(*, live: bool) -> model.AppPreview:
    """A Helm app whose values file changed: objects of each action, a Secret, a multi-line
    value and, with `live`, what syncing head does to a cluster someone scaled by hand."""
    return model.AppPreview(
        name="argocd/guestbook",
        action=P.CHANGED,
        origin="apps/guestbook.yaml",
        source="charts/guestbook",
        touched_by=("charts/guestbook/values-prod.yaml",),
        objects=(
            model.ObjectChange(
                DEPLOY,
                P.CHANGED,
                (
                    model.Edit(model.Op.CHANGE, ("spec", "replicas"), 3, 5),
                    model.Edit(model.Op.CHANGE, IMAGE, "nginx:1.25.3", "nginx:1.26.0"),
                    model.Edit(model.Op.ADD, ("spec", "paused"), None, False),
                ),
                origin="charts/guestbook/templates/deployment.yaml",
            ),
            model.ObjectChange(
                K("", "Service", "prod", "guestbook-metrics"),
                P.ADDED,
                origin="charts/guestbook/templates/metrics.yaml",
            ),
            model.ObjectChange(K("", "ConfigMap", "prod", "guestbook-legacy"), P.REMOVED),
            model.ObjectChange(
                K("", "Secret", "prod", "guestbook-db"),
                P.CHANGED,
                (
                    model.Edit(
                        model.Op.CHANGE, ("data", "password"), "++++++++", "++++++++++++", True
                    ),
                ),
            ),
            model.ObjectChange(
                K("", "ConfigMap", "prod", "guestbook-config"),
                P.CHANGED,
                (
                    model.Edit(
                        model.Op.CHANGE,
                        ("data", "app.yaml"),
                        "log: info\nport: 8080\nworkers: 2\n",
                        "log: debug\nport: 8080\nworkers: 4\n",
                    ),
                ),
            ),
        ),
        sync=(
            model.SyncEffect(DEPLOY, "set", ("spec", "replicas"), live=7, head=5, overwrites=SCALE),
            model.SyncEffect(DEPLOY, "set", IMAGE, live="nginx:1.25.3", head="nginx:1.26.0"),
            model.SyncEffect(K("", "Service", "prod", "guestbook-metrics"), "create"),
            model.SyncEffect(K("", "ConfigMap", "prod", "guestbook-legacy"), "delete"),
        )
        if live
        else (),
        not_fixed=(
            model.Finding(
                "manual-drift",
                model.Severity.WARNING,
                "metadata.labels.team was changed in the cluster by kubectl-edit; an "
                "ignoreDifferences rule hides it, so syncing head leaves it as it is",
                DEPLOY,
                ("metadata", "labels", "team"),
            ),
        )
        if live
        else (),
    )


def sample(*, live: bool = True) -> model.Preview:
    """Four apps a change touches, one of each kind of outcome, and nine it does not."""
    added = model.AppPreview(
        "argocd/payments-staging",
        P.ADDED,
        "ApplicationSet argocd/payments",
        source="envs/staging/payments",
        touched_by=("envs/staging/payments/config.json",),
        objects=(model.ObjectChange(K("apps", "Deployment", "staging", "payments"), P.ADDED),),
    )
    same = model.AppPreview(
        "argocd/shared", P.UNCHANGED, "apps/shared.yaml", "lib", ("lib/base/kustomization.yaml",)
    )
    failed = model.AppPreview(
        "argocd/broken",
        P.FAILED,
        "apps/broken.yaml",
        "charts/broken",
        ("charts/broken/values.yaml",),
        error="helm template charts/broken: values.yaml line 3: mapping values are not "
        "allowed in this context",
    )
    return model.Preview(
        base="4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
        head="9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807",
        base_ref="origin/main",
        head_ref="work tree",
        apps=(failed, guestbook(live=live), added, same),
        untouched=9,
        live="snapshot prod.yaml" if live else "",
    )


def nothing() -> model.Preview:
    return model.Preview("a" * 40, "b" * 40, "HEAD~1", "HEAD", (), untouched=3)


# --------------------------------------------------------------------------- goldens


@pytest.mark.parametrize(
    ("name", "preview", "width"),
    [
        ("live.txt", sample(), None),
        ("live-72.txt", sample(), 72),
        ("git-only.txt", sample(live=False), None),
        ("nothing.txt", nothing(), None),
    ],
)
def test_text_golden(golden: Golden, name: str, preview: model.Preview, width: int | None) -> None:
    golden.check(GOLDEN / name, present.render_text(preview, width=width))


def test_json_golden(golden: Golden) -> None:
    golden.check(GOLDEN / "live.json", present.render_json(sample()))
    golden.check(GOLDEN / "nothing.json", present.render_json(nothing()))


def test_markdown_golden(golden: Golden) -> None:
    (one,) = present.render_markdown(sample())
    golden.check(GOLDEN / "live.md", one)
    (empty,) = present.render_markdown(nothing())
    golden.check(GOLDEN / "nothing.md", empty)


# --------------------------------------------------------------------------- text


def test_text_header_and_edits_read_as_designed() -> None:
    text = present.render_text(sample())
    first = text.splitlines()[0]
    assert first == (
        "Preview 4f2a9c1e8b7d..9e8d7c6b5a4f (origin/main..work tree): 4 of 13 apps touched "
        "(1 added, 1 changed, 1 unchanged, 1 failed), live: snapshot prod.yaml"
    )
    assert "  ~ apps/Deployment prod/guestbook" in text
    assert "      spec.replicas: 3 -> 5\n" in text
    assert "      spec.paused: (unset) -> false\n" in text
    assert "  + /Service prod/guestbook-metrics" in text
    assert "  - /ConfigMap prod/guestbook-legacy\n" in text
    assert '      data["app.yaml"]: 3 lines -> -2 +2 lines: log: debug\n' in text
    assert "    - set spec.replicas of apps/Deployment prod/guestbook back to 5 (live: 7), " in text
    assert "overwriting the change by kubectl (Update, /scale, 2026-11-30T04:01:43Z)" in (
        " ".join(text.split())
    )
    assert "  It would not fix:\n    ! [manual-drift] metadata.labels.team" in text
    assert "argocd/shared: unchanged (renders the same)\n" in text


def test_text_without_live_says_nothing_of_a_sync() -> None:
    text = present.render_text(sample(live=False))
    assert "Syncing head would" not in text
    assert "It would not fix" not in text
    assert "live:" not in text.splitlines()[0]


@pytest.mark.parametrize("width", [60, 72, 100, 160])
def test_text_fits_the_width_and_keeps_where_values_differ(width: int) -> None:
    text = present.render_text(sample(), width=width)
    for line in text.splitlines():
        words = line.split()
        if len(words) == 1 or len(line) <= width:
            continue
        # only a path or key that has no space to break at may pass the width
        assert line.startswith("      spec.template.spec.containers[name=app].image: "), line
    image = next(line for line in text.splitlines() if "containers[name=app].image" in line)
    assert "1.25.3" in image
    assert "1.26.0" in image  # a cut keeps where the values differ


def test_a_pipe_gets_the_stable_width() -> None:
    """Into a pipe: report.TEXT_WIDTH, and the header on one line (a terminal wraps it)."""
    piped = present.render_text(sample()).splitlines()
    wide = present.render_text(sample(), width=report.TEXT_WIDTH).splitlines()
    assert len(piped[0]) > report.TEXT_WIDTH
    assert " ".join(line.strip() for line in wide[: wide.index("")]) == piped[0]
    assert wide[wide.index("") :] == piped[1:]


def test_colour_is_only_added() -> None:
    plain = present.render_text(sample())
    painted = present.render_text(sample(), palette=color.ON)
    assert "\x1b[" in painted
    assert "\x1b[" not in plain
    assert color.strip(painted) == plain


# --------------------------------------------------------------------------- JSON


def test_json_is_the_documented_contract() -> None:
    doc = json.loads(present.render_json(sample()))
    assert (doc["apiVersion"], doc["kind"]) == ("gitdrift/v1", "Preview")
    assert set(doc) == {"apiVersion", "kind", "base", "head", "live", "changed", "summary", "apps"}
    assert doc["base"] == {"sha": sample().base, "ref": "origin/main"}
    assert doc["changed"] is True
    assert doc["summary"] == {
        "touched": 4,
        "untouched": 9,
        "added": 1,
        "removed": 0,
        "changed": 1,
        "unchanged": 1,
        "failed": 1,
        "syncEffects": 4,
        "overwrites": 1,
        "notFixed": 1,
    }
    app = next(a for a in doc["apps"] if a["name"] == "guestbook")
    assert set(app) == {
        "name", "namespace", "action", "origin", "source", "touchedBy", "counts", "objects",
        "spec", "sync", "notFixed", "error", "notes",
    }  # fmt: skip
    assert app["counts"] == {"added": 1, "removed": 1, "changed": 3}
    deploy = next(o for o in app["objects"] if o["kind"] == "Deployment")
    assert deploy["edits"][0] == {
        "op": "change",
        "path": "spec.replicas",
        "base": 3,
        "head": 5,
        "secret": False,
    }
    scaled = next(e for e in app["sync"] if e["path"] == "spec.replicas")
    assert scaled["overwrites"] == {
        "manager": "kubectl",
        "operation": "Update",
        "subresource": "scale",
        "time": "2026-11-30T04:01:43Z",
    }
    assert [f["code"] for f in app["notFixed"]] == ["manual-drift"]
    assert json.loads(present.render_json(nothing()))["changed"] is False


def test_json_is_stable() -> None:
    assert present.render_json(sample()) == present.render_json(sample())
    text = present.render_json(sample())
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


# --------------------------------------------------------------------------- Secrets


def leaky() -> model.Preview:
    """A preview whose Secret values were (wrongly) left in clear text upstream."""
    secret = K("", "Secret", "prod", "db")
    app = model.AppPreview(
        "argocd/db",
        P.CHANGED,
        "apps/db.yaml",
        objects=(
            model.ObjectChange(
                secret,
                P.CHANGED,
                (
                    model.Edit(model.Op.CHANGE, ("data", "password"), "hunter2", "s3cr3t!", True),
                    model.Edit(model.Op.ADD, ("stringData",), None, {"token": "tok-123"}, True),
                ),
            ),
        ),
        sync=(
            model.SyncEffect(secret, "set", ("data", "password"), "hunter2", "s3cr3t!", None, True),
        ),
    )
    return model.Preview("a" * 40, "b" * 40, "main", "HEAD", (app,), live="snapshot s.yaml")


@pytest.mark.parametrize("fmt", ["text", "json", "markdown"])
def test_secret_values_never_appear(fmt: str) -> None:
    preview = leaky()
    if fmt == "text":
        out = present.render_text(preview)
    elif fmt == "json":
        out = present.render_json(preview)
    else:
        out = "".join(present.render_markdown(preview))
    for clear in ("hunter2", "s3cr3t!", "tok-123"):
        assert clear not in out
    assert "++++++++" in out  # masked as Argo CD masks: a change is still visible
    assert "++++++++++++" in out


# --------------------------------------------------------------------------- markdown


def many(n: int, edits: int = 6, huge: int | None = None) -> model.Preview:
    """`n` changed apps of `edits` objects each (app `huge` has 60 times more)."""
    apps = []
    for i in range(n):
        count = edits * (60 if i == huge else 1)
        objects = tuple(
            model.ObjectChange(
                K("apps", "Deployment", f"team-{i}", f"web-{j}"),
                P.CHANGED,
                (model.Edit(model.Op.CHANGE, ("spec", "replicas"), j, j + 1),),
                origin=f"apps/team-{i}/web-{j}.yaml",
            )
            for j in range(count)
        )
        apps.append(
            model.AppPreview(f"argocd/team-{i:03d}", P.CHANGED, "ApplicationSet argocd/teams",
                             f"apps/team-{i}", (f"apps/team-{i}/values.yaml",), objects)
        )  # fmt: skip
    return model.Preview("c" * 40, "d" * 40, "main", "HEAD", tuple(apps), untouched=2)


def _sections(text: str) -> list[str]:
    return re.findall(r"<details><summary><code>([^<]+)</code>", text)


def test_markdown_summary_table_comes_first() -> None:
    (text,) = present.render_markdown(sample())
    assert text.startswith(present.MARKER + " -->\n### gitdrift preview `4f2a9c1e8b7d`")
    table = text.index("| App | Action | Objects +/-/~ | Live effects |")
    assert table < text.index("<details>")
    assert (
        "| `argocd/guestbook` | changed | +1 -1 ~3 | 4 to sync, 1 overwrites a manual change, "
        "1 not fixed |" in text
    )
    assert "| `argocd/broken` | **failed** | — | — |" in text
    assert _sections(text) == ["argocd/broken", "argocd/guestbook", "argocd/payments-staging"]
    assert "\n@@ apps/Deployment prod/guestbook (in charts/guestbook/templates/deploy" in text
    assert "-spec.replicas: 3\n+spec.replicas: 5\n" in text
    assert "+ /Service prod/guestbook-metrics (added, in charts/guestbook/templates/" in text


def test_markdown_under_the_limit_is_whole() -> None:
    (text,) = present.render_markdown(many(5))
    assert len(_sections(text)) == 5
    assert "Left out" not in text


def test_markdown_cuts_whole_sections_from_the_end_and_names_them() -> None:
    preview = many(40)
    (text,) = present.render_markdown(preview, max_chars=8000)
    assert len(text) <= 8000
    kept = _sections(text)
    names = [a.name for a in preview.apps]
    assert 0 < len(kept) < 40
    assert kept == names[: len(kept)]  # from the first, whole
    assert text.count("<details>") == text.count("</details>")
    left = 40 - len(kept)
    assert f"_Left out to stay under the 8,000-character limit of a comment: {left} apps, " in text
    assert f"`{names[len(kept)]}`" in text.split("_Left out")[1]
    assert text.count("| `argocd/team-") == 40  # the table still has every app


@pytest.mark.parametrize("max_chars", [1024, 3000, 20000, present.GITHUB_LIMIT])
def test_split_parts_each_under_the_limit_with_each_app_once(max_chars: int) -> None:
    preview = many(60, edits=40)
    parts = present.render_markdown(preview, max_chars=max_chars, split=True)
    total = len(parts)
    assert total > 1
    seen: list[str] = []
    for number, part in enumerate(parts, 1):
        assert len(part) <= max_chars
        assert part.startswith(f"{present.MARKER}: part {number} of {total} -->\n")
        assert f"(part {number} of {total})" in part.splitlines()[1]
        assert "| App | Action | Objects +/-/~ | Live effects |" in part
        rows = re.findall(r"^\| `([^`]+)` \|", part, flags=re.MULTILINE)
        assert rows == _sections(part)  # each part's table names its own apps
        seen += rows
    assert seen == [a.name for a in preview.apps]


def test_a_section_over_the_limit_is_cut_inside_and_closed() -> None:
    preview = many(3, huge=1)
    parts = present.render_markdown(preview, max_chars=5000, split=True)
    assert all(len(p) <= 5000 for p in parts)
    (cut,) = [p for p in parts if "argocd/team-001" in _sections(p)]
    assert "more lines of `argocd/team-001` left out: the section is over the 5,000-" in cut
    body = cut[cut.index("<details>") :]
    assert body.count("```") % 2 == 0  # the diff fence is closed
    assert body.rstrip().endswith("</details>")
    (single,) = present.render_markdown(preview, max_chars=5000)
    assert len(single) <= 5000


def test_a_value_holding_a_fence_gets_a_longer_one() -> None:
    app = model.AppPreview(
        "argocd/docs",
        P.CHANGED,
        "apps/docs.yaml",
        objects=(
            model.ObjectChange(
                K("", "ConfigMap", "d", "readme"),
                P.CHANGED,
                (model.Edit(model.Op.CHANGE, ("data", "x"), "a ``` b", "a ```` b"),),
            ),
        ),
    )
    (text,) = present.render_markdown(model.Preview("a" * 40, "b" * 40, "m", "h", (app,)))
    assert "`````diff\n" in text
    assert text.count("`````\n") == 1


def test_nothing_touched() -> None:
    (text,) = present.render_markdown(nothing())
    assert "No Application is touched by this change." in text
    assert "<details>" not in text
    assert present.render_markdown(nothing(), split=True)[0].startswith(
        present.MARKER + ": part 1 of 1 -->"
    )


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=30),
    edits=st.integers(min_value=1, max_value=40),
    huge=st.one_of(st.none(), st.integers(min_value=0, max_value=29)),
    max_chars=st.integers(min_value=present.MIN_CHARS, max_value=30000),
    split=st.booleans(),
)
def test_every_comment_fits_whatever_the_sizes(
    n: int, edits: int, huge: int | None, max_chars: int, split: bool
) -> None:
    parts = present.render_markdown(many(n, edits, huge), max_chars=max_chars, split=split)
    assert parts
    assert all(len(p) <= max_chars for p in parts)
    assert all(p.count("<details>") == p.count("</details>") for p in parts)
    if split:
        assert sum(len(_sections(p)) for p in parts) == n
