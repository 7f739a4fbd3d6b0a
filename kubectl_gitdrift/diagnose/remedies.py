"""The fixes for a drifted application: adopt into git (with a `git apply`-able patch), revert the
cluster, prevent recurrence (selfHeal, ignoreDifferences, admission policies, an alert, controller
RBAC), and verify each. The artifacts themselves come from policies.py."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

from kubectl_gitdrift import model
from kubectl_gitdrift.compare import changes as lines
from kubectl_gitdrift.compare import strategies as compare
from kubectl_gitdrift.diagnose import diffmerge, helmfix, policies, rbac, tracking
from kubectl_gitdrift.diagnose.causes import Cause, CauseKey, cause_of
from kubectl_gitdrift.model import Remedy, RemedyKind


@dataclass(frozen=True, slots=True)
class Location:
    """Where in git a desired value is set (or the overlay to patch when nothing sets it)."""

    file: str
    line: int
    how: str  # "literal" | "kustomization-replicas" | "kustomization-images" | "overlay"
    # | Helm (helmfix.HOWS): "values", "values-add", "template", "helm-inline", "helm-parameter",
    # "none"
    text: str = ""  # the line as written, for the adopt instructions
    key: str = ""  # Helm: the values key (dotted) that renders the field
    key_path: tuple[str, ...] = ()  # Helm: that key, one element per level
    old: Any = None  # Helm: the key's value in git (the part of the field it renders)
    new: Any = None  # Helm: the value the key must have to render the cluster's
    root: str = ""  # the tree holding `file`, for read_source ("": the app's first source)
    repo: str = ""  # the repository holding `file`, when not the app's (a `$values` source)
    note: str = ""  # why no file can be named, or what else the fix needs


SSA_MANAGER = "argocd-controller"  # the field manager Argo CD's server-side apply uses

Locator = Callable[[model.Drift, model.Change], "Location | None"]


class SourceReader(Protocol):
    """Repo-relative file (in the tree `root` names, "" for the app's first source) -> its text
    at the rendered revision (None when absent); an I/O callback."""

    def __call__(self, rel: str, /, root: str = "") -> str | None: ...


def recommend(
    app: model.Application,
    drifts: Sequence[model.Drift],
    findings: Sequence[model.Finding],
    locate: Locator | None = None,
    *,
    read_source: SourceReader | None = None,
    controller: str = rbac.CONTROLLER,
    plurals: Mapping[tuple[str, str], str] | None = None,
    strategy: model.DiffStrategy = model.DiffStrategy.LEGACY,
    causes: Mapping[CauseKey, Cause] | None = None,
    context_flags: Sequence[str] = (),
    settings: model.Settings | None = None,
) -> list[Remedy]:
    """Both ways out (adopt, revert), the fixes of each specific cause, how to keep it from
    recurring, and how to check each fix.

    A difference a specific cause owns (server-filled, admission-mutation, ...) is adopted only
    when its cause says adopting fits, and reverted only when a sync would keep git's value.
    For an app Argo CD syncs with server-side apply (any strategy but legacy), the revert is a
    server-side apply as `argocd-controller`, so the fields go back to Argo CD's ownership.
    The gitdrift commands it suggests repeat `context_flags` (--snapshot, --repo-root, ...), so
    they see the same app the run saw. `settings`: argocd-cm's tracking method and instance
    label, whose tracking fields git is not asked to adopt (Argo CD's defaults when None)."""
    causes = causes or {}
    settings = settings or model.Settings()
    rerun = _Rerun(app, tuple(context_flags))
    adoptable = _fitting(drifts, causes, "adoptable")
    revertable = _fitting(drifts, causes, "revertable")
    to_adopt = [d for d in adoptable if d.status is model.ResourceStatus.OUT_OF_SYNC and d.changes]
    modified = [d for d in revertable if d.status is model.ResourceStatus.OUT_OF_SYNC and d.changes]
    # an object git renders without a name (a kustomization.yaml read as a manifest) is one
    # Argo CD's sync fails on: no sync is offered for it
    missing = [d for d in revertable if d.status is model.ResourceStatus.MISSING and d.key.name]
    extraneous = [d for d in revertable if d.status is model.ResourceStatus.EXTRANEOUS]
    codes = {f.code for f in findings}
    cause_fixes = _cause_fixes(causes)
    unnamed = list(_unnamed(drifts))
    if (
        not (to_adopt or modified or missing or extraneous or cause_fixes or unnamed)
        and "controller-forbidden" not in codes
    ):
        return []
    out: list[Remedy] = []
    synced_away: list[model.Drift] = []
    read = _memo(read_source) if read_source is not None else None
    for drift in to_adopt:
        if "git-ahead" in codes and all(c.owner and c.owner.is_argocd for c in drift.changes):
            synced_away.append(drift)
            continue  # git moved and Argo CD wrote the live value: syncing is the fix
        out.append(
            _adopt(app, drift, locate, read, rerun, settings)
        )  # each diff against the commit: patch()
        # merges the diffs of one file, so two resources edited in one file apply together
    if out and locate is not None and read_source is not None:
        out = _with_left_out(out, drifts, to_adopt, synced_away, causes)
    out.extend(cause_fixes)
    out.extend(unnamed)
    if modified or missing or extraneous:
        server_side = strategy is not model.DiffStrategy.LEGACY or (
            bool(modified) and all(_applied_server_side(d) for d in modified)
        )
        out.append(_revert(app, modified, missing, extraneous, server_side=server_side))
    prevent = list(_prevent(app, drifts, findings, controller, plurals))
    out.extend(prevent)
    out.append(_verify(app, modified, rerun))
    out.extend(_verify_prevention(app, drifts, prevent, findings, controller, rerun))
    return out


@dataclass(frozen=True, slots=True)
class _Rerun:
    """`kubectl gitdrift APP` with the run's context flags, then `extra`: the command a report
    suggests to look again (or to write the patch) sees the state the run saw."""

    app: model.Application
    flags: tuple[str, ...]

    def __call__(self, *extra: str) -> str:
        words = [policies.app_arg(self.app), *self.flags, *extra]
        return "kubectl gitdrift " + " ".join(shlex.quote(w) for w in words)


def _unnamed(drifts: Sequence[model.Drift]) -> Iterable[Remedy]:
    """For an object git renders without a name (a directory source reads every YAML file, a
    kustomization.yaml too): no sync can create it, so the way out is to leave its file out of
    the source, or to name it."""
    for drift in drifts:
        if drift.status is not model.ResourceStatus.MISSING or drift.key.name:
            continue
        where = drift.origin or "its file"
        kustomize = drift.key.group == "kustomize.config.k8s.io"
        glob = "*kustomization.yaml" if kustomize else (drift.origin or "").rsplit("/", 1)[-1]
        steps = [f"add exclude: '{glob}' to spec.source.directory of the Application"]
        if kustomize:
            steps.append(
                "or drop the directory: block, so that Argo CD builds the folder with kustomize"
            )
        else:
            steps.append(f"or give the {drift.key.kind} in {where} a metadata.name")
        steps.append("no sync can create an object without a name: every sync fails on it")
        yield Remedy(
            RemedyKind.RESOLVE,
            f"Leave {where} out of the app's source",
            steps=tuple(steps),
            file=drift.origin,
        )


def _fitting(
    drifts: Sequence[model.Drift], causes: Mapping[CauseKey, Cause], how: str
) -> list[model.Drift]:
    """The drifts with only the differences that no specific cause owns, or whose cause says
    `how` ("adoptable", "revertable") fits; drifts left with nothing are dropped."""
    if not causes:
        return list(drifts)
    out = []
    for drift in drifts:
        if drift.status is model.ResourceStatus.OUT_OF_SYNC and drift.changes:
            kept = tuple(
                c for c in drift.changes if _fits(cause_of(causes, drift.key, c.path), how)
            )
            if kept:
                out.append(drift if kept == drift.changes else replace(drift, changes=kept))
        elif _fits(cause_of(causes, drift.key, None), how):
            out.append(drift)
    return out


def _fits(cause: Cause | None, how: str) -> bool:
    return cause is None or bool(getattr(cause, how))


def _cause_fixes(causes: Mapping[CauseKey, Cause]) -> list[Remedy]:
    """Each specific cause's fixes, once each, in the order the causes were found. A fix that
    removes the cause (an ignore rule, a compare option, a webhook's policy) is a way out of the
    drift there is now, so it is listed with adopt and revert (RESOLVE), not as prevention."""
    out: list[Remedy] = []
    for cause in causes.values():
        for fix in cause.fixes:
            if fix.kind is RemedyKind.PREVENT:
                fix = replace(fix, kind=RemedyKind.RESOLVE)
            if fix not in out:
                out.append(fix)
    return out


def _with_left_out(
    adopts: list[Remedy],
    drifts: Sequence[model.Drift],
    to_adopt: Sequence[model.Drift],
    synced_away: Sequence[model.Drift],
    causes: Mapping[CauseKey, Cause],
) -> list[Remedy]:
    """The adopt remedies, each also listing the fields of its resource that a specific cause
    keeps out of git; the first one also those of resources nothing is adopted from. With each
    remedy's own `left_out` (what its patch could not write), every drifted field of the app is
    in `--write-patch`'s patch or in one of these lists, with the reason."""
    adopted = {d.key: d for d in to_adopt}
    away = {d.key for d in synced_away}
    mine: dict[model.ObjectKey, list[str]] = {}
    rest: list[str] = []
    for drift in drifts:
        if drift.status is not model.ResourceStatus.OUT_OF_SYNC:
            continue
        kept = adopted.get(drift.key)
        for change in drift.changes:
            field = f"{drift.key.short()} {model.display_path(change.path)}"
            if drift.key in away:
                rest.append(f"{field}: git changed it since the last sync; a sync applies it")
            elif kept is None or change not in kept.changes:
                cause = cause_of(causes, drift.key, change.path)
                why = f"{cause.code}, not a value to keep in git" if cause else "not adoptable"
                (mine.setdefault(drift.key, []) if kept else rest).append(
                    f"{field}: {why} (see WHY)"
                )
    keys = [d.key for d in to_adopt if d.key not in away]
    out = []
    for n, (remedy, key) in enumerate(zip(adopts, keys, strict=True)):
        extra = [*mine.get(key, ()), *(rest if n == 0 else ())]
        out.append(replace(remedy, left_out=(*remedy.left_out, *extra)) if extra else remedy)
    return out


def left_out(remedies: Sequence[Remedy]) -> list[str]:
    """Every drifted field the `--write-patch` content (`patch`) leaves out, with the reason:
    the remedies' own lists, and the edits two remedies make to the same lines of a file."""
    own = [entry for r in remedies if r.kind is RemedyKind.ADOPT for entry in r.left_out]
    return [*own, *diffmerge.left_out(_diffs(remedies))]


def _memo(read_source: SourceReader) -> SourceReader:
    """`read_source`, each file read once."""
    texts: dict[tuple[str, str], str | None] = {}

    def read(rel: str, /, root: str = "") -> str | None:
        if (rel, root) not in texts:
            texts[(rel, root)] = read_source(rel, root) if root else read_source(rel)
        return texts[(rel, root)]

    return read


def patch(remedies: Sequence[Remedy]) -> str:
    """The `--write-patch` content: every adopt remedy's diff, one per file, in order (the
    edits several remedies make to one file merged into one diff of it)."""
    return diffmerge.merge(_diffs(remedies))


def _diffs(remedies: Sequence[Remedy]) -> list[str]:
    return [r.snippet for r in remedies if r.kind is RemedyKind.ADOPT and r.snippet and _is_diff(r)]


def _is_diff(remedy: Remedy) -> bool:
    return bool(remedy.snippet and remedy.snippet.startswith("diff --git "))


def write_patch(
    drifts: Sequence[model.Drift],
    locate: Locator,
    read_source: SourceReader,
    settings: model.Settings | None = None,
) -> tuple[str, list[str]]:
    """A unified diff (paths a/ b/ relative to the repo root) that adopts every live value git
    can take literally, and a note for each change it could not adopt (a Secret's, and the
    tracking fields a sync writes under `settings`, Argo CD's defaults when None)."""
    settings = settings or model.Settings()
    edits: dict[str, list[policies.LineEdit]] = {}
    fields: dict[int, str] = {}  # id of an edit -> the field it adopts
    values_edits: helmfix.Edits = {}
    skipped: list[str] = []
    for drift in drifts:
        if drift.status is not model.ResourceStatus.OUT_OF_SYNC:
            continue
        for change in drift.changes:
            field = f"{drift.key.short()} {model.display_path(change.path)}"
            if policies.is_secret(drift.key, change):
                skipped.append(f"{field}: a Secret value; re-seal or re-encrypt it in git")
                continue
            if tracking.is_tracking_field(change.path, settings):
                skipped.append(f"{field}: {_tracking_written(change.path)}")
                continue
            if change.op is model.Op.REMOVE:
                skipped.append(f"{field}: git does not set it; add it by hand")
                continue
            if change.live is None:
                skipped.append(f"{field}: unset in the cluster; delete it from git by hand")
                continue
            where = locate(drift, change)
            if where is not None and where.how in helmfix.HOWS:
                problem = helmfix.collect(values_edits, where, change)
                if problem:
                    skipped.append(f"{field}: {problem}")
                continue
            edit = (
                policies.adopt_edit(where.how, where.file, where.line, change.desired, change.live)
                if where is not None
                else None
            )
            if edit is None:
                skipped.append(f"{field}: {_not_literal(where, change)}")
                continue
            edits.setdefault(edit.file, []).append(edit)
            fields[id(edit)] = field
    diffs = []
    for file in sorted(edits):
        text = read_source(file)
        if text is None:
            skipped += [f"{fields[id(e)]}: {file} is not readable" for e in edits[file]]
            continue
        new, failed = policies.apply_edits(text, edits[file])
        for edit in failed:
            skipped.append(
                f"{fields[id(edit)]}: {file}:{edit.line} does not write git's value "
                "as one scalar or block; edit it by hand"
            )
        diffs.append(policies.unified_diff(file, text, new))
    diffs.extend(helmfix.diffs(values_edits, read_source, skipped))
    return "".join(diffs), skipped


def _tracking_written(path: model.FieldPath) -> str:
    what = "label" if path[1] == "labels" else "annotation"
    return f"Argo CD's tracking {what}; a sync writes it, not git"


def _not_literal(where: Location | None, change: model.Change) -> str:
    """Why no edit of git can adopt `change` at `where`."""
    if isinstance(change.live, Mapping | list) or isinstance(change.desired, Mapping | list):
        return "a whole object or list differs; write it in git by hand"
    if where is not None and where.how == "generator":
        at = f"{where.file}:{where.line}"
        return f"the generator at {at} makes it; change its literal or the file it reads by hand"
    if where is None:
        return "no file of the source in git sets it; change it where it is rendered by hand"
    return f"no line in git writes this value literally; change what renders it ({where.file})"


def _adopt(
    app: model.Application,
    drift: model.Drift,
    locate: Locator | None,
    read_source: SourceReader | None,
    rerun: _Rerun,
    settings: model.Settings,
) -> Remedy:
    steps: list[str] = []
    file = None
    line = None
    secret = policies.is_secret(drift.key)
    for change in drift.changes:
        field = model.display_path(change.path)
        if secret or change.secret:
            steps.append(f"{field}: the Secret value differs; re-seal or re-encrypt it in git")
            continue
        if tracking.is_tracking_field(change.path, settings):
            steps.append(f"{field}: {_tracking_written(change.path)}")
            continue
        where = locate(drift, change) if locate is not None else None
        live = _yaml_value(change.live)
        if lines.multiline(change.desired, change.live):
            steps.append(_multiline_step(field, change, where, drift.origin))
            if where is not None:
                file, line = file or where.file, line or (where.line or None)
            continue
        if where is None:
            target = drift.origin or "the app's source"
            steps.append(
                f"set {field} to {live} in {target} (git has {_yaml_value(change.desired)})"
            )
            continue
        if where.how in helmfix.HOWS:
            steps.append(helmfix.step(app, field, where, change))
            if where.how in helmfix.EDITS:
                file, line = file or where.file, line or (where.line or None)
            continue
        file, line = file or where.file, line or (where.line or None)
        at = f"{where.file}:{where.line}" if where.line else where.file
        if change.op is model.Op.REMOVE:
            steps.append(f"{at}: add {field}: {live} (git does not set it)")
        elif change.live is None:
            steps.append(f"{at}: delete {field} (the cluster does not set it)")
        elif where.how == "overlay":
            steps.append(
                f"{at}: patch {field} to {live} (git renders {_yaml_value(change.desired)})"
            )
        else:
            steps.append(f"{at}: change {field} from {_yaml_value(change.desired)} to {live}")
    snippet = None
    commands: tuple[str, ...] = ()
    skipped: list[str] = []
    if locate is not None and read_source is not None:
        diff, skipped = write_patch(
            [drift], locate, read_source, settings
        )  # never a Secret's value
        if diff:
            snippet = diff
            steps.extend(helmfix.patch_steps(drift, locate))
            commands = (
                rerun("--write-patch", "adopt.patch"),
                "git apply adopt.patch",
                f"git commit -am 'adopt live values of {drift.key.short()}'",
            )
    steps.append("commit, push, and let Argo CD sync the new revision")
    return Remedy(
        RemedyKind.ADOPT,
        f"Adopt the cluster's values into git ({drift.key.short()})",
        steps=tuple(steps),
        commands=commands,
        file=file,
        line=line,
        snippet=snippet,
        left_out=tuple(skipped),
    )


def _multiline_step(
    field: str, change: model.Change, where: Location | None, origin: str | None
) -> str:
    """The adopt step for a multi-line text value: where, and which lines (the patch has them
    all; a step is one line of prose)."""
    summary = lines.line_summary(change.desired, change.live)
    if where is None:
        target = origin or "the app's source"
        return f"set {field} in {target} as the cluster has it ({summary})"
    at = f"{where.file}:{where.line}" if where.line else where.file
    if change.op is model.Op.REMOVE:
        return f"{at}: add {field} as the cluster has it (git does not set it)"
    if where.how == "overlay":
        return f"{at}: patch {field} to the cluster's text ({summary})"
    return f"{at}: change {field} to the cluster's text ({summary})"


def _revert(
    app: model.Application,
    modified: Sequence[model.Drift],
    missing: Sequence[model.Drift],
    extraneous: Sequence[model.Drift],
    *,
    server_side: bool = False,
) -> Remedy:
    commands = []
    resources = [*modified, *missing]
    sync = f"argocd app sync {policies.app_arg(app)}" + (" --server-side" if server_side else "")
    if resources:
        flags = " ".join(f"--resource {_resource_flag(d.key)}" for d in resources)
        commands.append(f"{sync} {flags}")
    if extraneous:
        commands.append(f"{sync} --prune")
    if server_side and modified:
        # kubectl's own scale/patch would leave the fields owned by kubectl: apply git's
        # objects (tracking-id included) as Argo CD does, so argocd-controller owns them again
        commands.append(
            f"argocd app manifests {policies.app_arg(app)} --source git "
            "| kubectl apply --server-side "
            f"--field-manager={SSA_MANAGER} --force-conflicts -f -"
        )
    elif not server_side:
        for drift in modified:
            commands.extend(_kubectl_revert(drift))
    return Remedy(
        RemedyKind.REVERT,
        "Revert the cluster to git",
        steps=(
            "sync the drifted resources from git (Argo CD rewrites the fields it applied)",
            "or apply git's objects server-side as argocd-controller, as Argo CD's sync does "
            "(kubectl scale/patch would leave the fields owned by kubectl)"
            if server_side
            else "or, without Argo CD access, put the git value back with kubectl",
        ),
        commands=tuple(commands),
    )


def _applied_server_side(drift: model.Drift) -> bool:
    """Git asks for this resource to be synced with server-side apply (its own sync-options)."""
    return compare.resource_option(drift.desired, "ServerSideApply=true")


def _kubectl_revert(drift: model.Drift) -> list[str]:
    key = drift.key
    if policies.is_secret(key):
        return []
    ns = f" -n {key.namespace}" if key.namespace else ""
    out = []
    rest = []
    for change in drift.changes:
        if change.secret:
            continue
        if change.path == ("spec", "replicas") and isinstance(change.desired, int):
            out.append(f"kubectl scale {key.short()}{ns} --replicas={change.desired}")
            continue
        rest.append(change)
    body = policies.revert_patch(rest)
    if body:
        out.append(policies.kubectl_patch(key, body))
    return out


def _prevent(
    app: model.Application,
    drifts: Sequence[model.Drift],
    findings: Sequence[model.Finding],
    controller: str,
    plurals: Mapping[tuple[str, str], str] | None,
) -> Iterable[Remedy]:
    codes = {f.code for f in findings}
    name = policies.app_arg(app)
    if "selfheal-disabled" in codes or "automated-sync-disabled" in codes:
        yield Remedy(
            RemedyKind.PREVENT,
            "Let Argo CD undo manual changes (selfHeal)",
            steps=(
                (
                    "with selfHeal on, Argo CD re-syncs OutOfSync resources of an already-synced "
                    "revision on its own (after a backoff of 2s×3ⁿ, at most 5 minutes)"
                ),
            ),
            commands=(policies.selfheal_patch(app),),
        )
        yield Remedy(
            RemedyKind.PREVENT,
            "Or, keeping selfHeal off, alert while the app is OutOfSync",
            steps=(
                (
                    f'alert on argocd_app_info{{name="{app.name}",sync_status="OutOfSync"}} '
                    "with this PrometheusRule (prometheus-operator)"
                ),
            ),
            commands=("kubectl apply -f gitdrift-outofsync-rule.yaml",),
            snippet=policies.prometheus_rule(app),
        )
    fights = [f for f in findings if f.code == "field-fight" and f.key is not None]
    seen: set[tuple[model.ObjectKey, str]] = set()
    for finding in fights:
        assert finding.key is not None
        pointer = str(finding.evidence.get("pointer") or "")
        if not pointer or (finding.key, pointer) in seen:
            continue
        seen.add((finding.key, pointer))
        snippet, command = policies.ignore_differences(app, finding.key, [pointer])
        field = model.display_path(finding.path or ())
        yield Remedy(
            RemedyKind.PREVENT,
            f"Stop the fight over {finding.key.short()} {field}",
            steps=(
                (
                    f"either drop {field} from git and let the other writer own it "
                    "(Argo CD's advice for HPA-managed replicas)"
                ),
                (
                    f"or ignore it in {name} and keep the live value on sync "
                    "(RespectIgnoreDifferences=true)"
                ),
            ),
            commands=(command,),
            snippet=snippet,
        )
    if "manual-drift" in codes:
        keys = sorted({d.key for d in drifts if d.desired is not None and d.key.namespace})
        yield Remedy(
            RemedyKind.PREVENT,
            "Make git the only write path (admission policy)",
            steps=(
                (
                    "reject update/patch/scale of the app's kinds in "
                    f"{app.dest_namespace} by anyone but the Argo CD controller; members of group "
                    f"{policies.BREAK_GLASS_GROUP} can still write in an emergency"
                ),
                (
                    "a ValidatingAdmissionPolicy (Kubernetes 1.30+) and the same rule as a "
                    "Kyverno ClusterPolicy: the YAML is in -o markdown and -o json"
                ),
                "or take update/patch away from humans in RBAC (keep a break-glass group)",
            ),
            commands=("kubectl apply -f gitdrift-admission.yaml",),
            snippet=policies.validating_admission_policy(
                app, keys, controller=controller, plurals=plurals
            )
            + "---\n"
            + policies.kyverno_policy(app, keys, controller=controller, plurals=plurals),
        )
    denied = _denied(findings)
    if denied:
        yield Remedy(
            RemedyKind.PREVENT,
            "Give the Argo CD controller the permissions it lacks",
            steps=(
                (
                    "grant them in the destination namespace (or fix the ClusterRole the "
                    "controller's binding points at, e.g. its aggregation labels)"
                ),
            ),
            commands=("kubectl apply -f gitdrift-controller-rbac.yaml",),
            snippet=policies.controller_role(app, denied, controller),
        )


def _denied(findings: Sequence[model.Finding]) -> list[rbac.Question]:
    out = []
    for finding in findings:
        if finding.code != "controller-forbidden":
            continue
        for raw in finding.evidence.get("denied") or ():
            out.append(
                rbac.Question(
                    str(raw["verb"]), str(raw["group"]), str(raw["resource"]), str(raw["namespace"])
                )
            )
    return sorted(set(out))


def _verify(app: model.Application, modified: Sequence[model.Drift], rerun: _Rerun) -> Remedy:
    name = policies.app_arg(app)
    commands = [rerun(), f"argocd app get {name} --refresh"]
    for drift in modified:
        key = drift.key
        if policies.is_secret(key):
            continue
        ns = f" -n {key.namespace}" if key.namespace else ""
        for change in drift.changes:
            if change.secret:
                continue
            jsonpath = _jsonpath(change.path)
            if jsonpath is None:
                continue
            commands.append(f"kubectl get {key.short()}{ns} -o jsonpath={shlex.quote(jsonpath)}")
    return Remedy(
        RemedyKind.VERIFY,
        "Verify the drift is gone",
        steps=("gitdrift exits 0 and Argo CD reports Synced",),
        commands=tuple(commands),
    )


def _verify_prevention(
    app: model.Application,
    drifts: Sequence[model.Drift],
    prevent: Sequence[Remedy],
    findings: Sequence[model.Finding],
    controller: str,
    rerun: _Rerun,
) -> Iterable[Remedy]:
    titles = {r.title for r in prevent}
    if "Let Argo CD undo manual changes (selfHeal)" in titles:
        yield Remedy(
            RemedyKind.VERIFY,
            "Verify selfHeal is on",
            steps=("prints true",),
            commands=(
                (
                    f"kubectl get application {app.name} -n {app.namespace} "
                    "-o jsonpath='{.spec.syncPolicy.automated.selfHeal}'"
                ),
            ),
        )
    if any(t.startswith("Or, keeping selfHeal off") for t in titles):
        yield Remedy(
            RemedyKind.VERIFY,
            "Verify the OutOfSync alert is loaded",
            commands=(
                f"kubectl get prometheusrule gitdrift-{app.name}-outofsync -n {app.namespace}",
            ),
        )
    if any(t.startswith("Make git the only write path") for t in titles):
        commands = []
        for drift in drifts:
            if drift.status is not model.ResourceStatus.OUT_OF_SYNC or policies.is_secret(
                drift.key
            ):
                continue
            key = drift.key
            ns = f" -n {key.namespace}" if key.namespace else ""
            for change in drift.changes:
                if change.path == ("spec", "replicas") and isinstance(change.live, int):
                    commands.append(
                        f"kubectl scale {key.short()}{ns} --replicas={change.live} --dry-run=server"
                    )
                    break
            else:
                commands.append(
                    f"kubectl annotate {key.short()}{ns} gitdrift.example.com/probe=1 "
                    "--dry-run=server"
                )
        yield Remedy(
            RemedyKind.VERIFY,
            "Verify manual writes are rejected",
            steps=("each command is denied by the admission policy (as a non-break-glass user)",),
            commands=tuple(commands),
        )
    for finding in findings:
        if finding.code == "field-fight" and finding.key is not None:
            yield Remedy(
                RemedyKind.VERIFY,
                f"Verify the fight over {finding.key.short()} is settled",
                steps=("the field no longer shows as drift; it is listed as suppressed",),
                commands=(rerun("--show-suppressed"),),
            )
            break
    denied = _denied(findings)
    if denied:
        yield Remedy(
            RemedyKind.VERIFY,
            "Verify the controller's permissions",
            steps=("each prints yes",),
            commands=tuple(policies.can_i(q, controller) for q in denied),
        )


def _jsonpath(path: model.FieldPath) -> str | None:
    out = ""
    for elem in path:
        if isinstance(elem, model.ListKey):
            conds = " && ".join(f"@.{k}=={json.dumps(v)}" for k, v in elem.fields)
            out += f"[?({conds})]"
        elif isinstance(elem, int):
            out += f"[{elem}]"
        elif elem and all(c.isalnum() or c in "_-" for c in elem):
            out += f".{elem}"
        else:
            escaped = elem.replace(".", "\\.")
            out += f".{escaped}"
    return "{" + out + "}" if out else None


def _resource_flag(key: model.ObjectKey) -> str:
    name = f"{key.namespace}/{key.name}" if key.namespace else key.name
    return f"{key.group}:{key.kind}:{name}"


def _yaml_value(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)
