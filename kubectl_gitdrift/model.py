"""Values that flow through a run: object identity, manifests, changes, drifts, findings, reports.

Frozen, slotted dataclasses and str/int enums only; this module imports nothing from the package.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import json
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

Body: TypeAlias = Mapping[str, Any]
"""A raw Kubernetes object as a plain mapping (never a kr8s object)."""


@dataclass(frozen=True, slots=True, order=True)
class ListKey:
    """Selects an item of a merge-keyed list by its key fields, e.g. containers[name=app]."""

    fields: tuple[tuple[str, Any], ...]

    def display(self) -> str:
        return "[" + ",".join(f"{k}={_scalar(v)}" for k, v in self.fields) + "]"

    def matches(self, item: Any) -> bool:
        return isinstance(item, Mapping) and all(item.get(k) == v for k, v in self.fields)

    def __hash__(self) -> int:
        fields = self.fields
        if all(type(v) is str or type(v) is int for _, v in fields):  # merge keys: str/int
            return hash(fields)
        return hash(tuple((k, json.dumps(v, sort_keys=True)) for k, v in fields))


PathElem: TypeAlias = str | int | ListKey
FieldPath: TypeAlias = tuple[PathElem, ...]
"""A field inside an object: map keys (str), list indexes (int), merge-keyed items (ListKey)."""


_ATOMS = frozenset({str, int, float, bool, type(None)})


def copy_json(value: Any) -> Any:
    """A deep copy of JSON-like data: plain dicts and lists are rebuilt by a light recursive
    copier (several times faster than `copy.deepcopy`); anything else goes to `copy.deepcopy`."""
    cls = type(value)
    if cls is dict:
        return {k: (v if type(v) in _ATOMS else copy_json(v)) for k, v in value.items()}
    if cls is list:
        return [v if type(v) in _ATOMS else copy_json(v) for v in value]
    if cls in _ATOMS:
        return value
    return copy.deepcopy(value)


def _scalar(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


_PLAIN = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def display_path(path: FieldPath) -> str:
    """`spec.template.spec.containers[name=app].image`, `metadata.annotations["a.b/c"]`."""
    out = ""
    for elem in path:
        if isinstance(elem, ListKey):
            out += elem.display()
        elif isinstance(elem, int):
            out += f"[{elem}]"
        elif elem and set(elem) <= _PLAIN:
            out += ("." if out else "") + elem
        else:
            out += "[" + json.dumps(elem) + "]"
    return out


def pointer(path: FieldPath, body: Any) -> str:
    """RFC 6901 pointer for `path`, resolving merge keys against `body` (live or desired)."""
    parts: list[str] = []
    node = body
    for elem in path:
        if isinstance(elem, ListKey):
            index = None
            if isinstance(node, list):
                index = next((i for i, item in enumerate(node) if elem.matches(item)), None)
            if index is None:  # item absent on this side: "-" appends, as in JSON Patch
                parts.append("-")
                node = None
                continue
            parts.append(str(index))
            node = node[index]
        else:
            parts.append(str(elem).replace("~", "~0").replace("/", "~1"))
            if isinstance(elem, int):
                node = node[elem] if isinstance(node, list) and elem < len(node) else None
            else:
                node = node.get(elem) if isinstance(node, Mapping) else None
    return "".join("/" + p for p in parts)


def lookup(body: Any, path: FieldPath) -> tuple[bool, Any]:
    """(found, value) at `path` in `body`."""
    node = body
    for elem in path:
        if isinstance(elem, ListKey):
            if not isinstance(node, list):
                return False, None
            match = [item for item in node if elem.matches(item)]
            if not match:
                return False, None
            node = match[0]
        elif isinstance(elem, int):
            if not isinstance(node, list) or elem >= len(node):
                return False, None
            node = node[elem]
        else:
            if not isinstance(node, Mapping) or elem not in node:
                return False, None
            node = node[elem]
    return True, node


# --------------------------------------------------------------------------- identity


@dataclass(frozen=True, slots=True, order=True)
class ObjectKey:
    """Identity of an object across git and cluster. The API *version* is left out on purpose:
    apps/v1 in git and the version served live are the same object."""

    group: str  # "" for the core group
    kind: str
    namespace: str  # "" for cluster-scoped objects
    name: str

    @classmethod
    def of(cls, body: Body) -> ObjectKey:
        api_version = str(body.get("apiVersion") or "")
        metadata = body.get("metadata") or {}
        # What `cls(group=..., ...)` makes, in half its time: the slots' own setters instead of
        # the frozen __init__'s keyword arguments and object.__setattr__ calls. It runs for every
        # object of a snapshot before --all forks, and for every rendered one (issue 18);
        # tests/test_model_key.py holds it to the generated __init__.
        key = _new(cls)
        _set_group(key, api_version.rpartition("/")[0])
        _set_kind(key, str(body.get("kind") or ""))
        _set_namespace(key, str(metadata.get("namespace") or ""))
        _set_name(key, str(metadata.get("name") or ""))
        return key

    @property
    def group_kind(self) -> str:
        return f"{self.group}/{self.kind}"

    def display(self) -> str:
        """Argo CD's form: `apps/Deployment prod/guestbook`, `/Service prod/web`."""
        return f"{self.group}/{self.kind} {self.namespace}/{self.name}"

    def short(self) -> str:
        """kubectl's form: `deployment.apps/guestbook`."""
        kind = self.kind.lower() + (f".{self.group}" if self.group else "")
        return f"{kind}/{self.name}"


_new = object.__new__
_set_group, _set_kind, _set_namespace, _set_name = (
    getattr(ObjectKey, f.name).__set__ for f in dataclasses.fields(ObjectKey)
)


KEY_ORDER = operator.attrgetter("group", "kind", "namespace", "name")
"""ObjectKey's own order (its fields in turn) as a tuple per key, for `sorted(key=...)`: sorting
10,000 keys with the dataclass `__lt__` took a tenth of a second."""


@dataclass(frozen=True, slots=True)
class Manifest:
    """One object from either side, with where it came from (a source file, or None for live)."""

    key: ObjectKey
    body: Body
    origin: str | None = None


@dataclass(frozen=True, slots=True)
class RenderCall:
    """A call in a chart's templates whose result differs from render to render (Helm's
    randAlphaNum, now, genCA, ...), as sources/nondeterminism.py found it in the text."""

    file: str  # where it is written: repo-relative, or chart-relative in a pulled chart
    line: int
    function: str  # "randAlphaNum"
    fields: tuple[str, ...] = ()  # the YAML keys it sets: on its line, through its variable, or
    # on the line that includes it ("password")
    value: str = ""  # the chart value that replaces it when set ("auth.password"), "" if none
    via: str = ""  # the named template it is written in, when the object's template includes it


@dataclass(frozen=True, slots=True)
class VaryingRender:
    """One template of a rendered source whose objects are not the same at every render."""

    template: str  # the template the objects come from (repo-relative, or chart-relative)
    chart: str  # the chart: its path in git, or its name for a pulled chart
    objects: tuple[ObjectKey, ...]  # what the template renders
    calls: tuple[RenderCall, ...] = ()  # () when it only derives from another template's calls
    varied: tuple[tuple[ObjectKey, FieldPath], ...] = ()  # fields that differed between renders
    compared: bool = False  # a second render was compared (varied is then the evidence)
    existing_secret: str = ""  # the chart's existingSecret value that replaces the Secret
    lookup: bool = False  # the template calls lookup, which Argo CD answers with nothing


# --------------------------------------------------------------------------- Argo CD Application


class TrackingMethod(str, enum.Enum):
    ANNOTATION = "annotation"
    LABEL = "label"
    ANNOTATION_AND_LABEL = "annotation+label"


TRACKING_ID = "argocd.argoproj.io/tracking-id"
INSTALLATION_ID = "argocd.argoproj.io/installation-id"


@dataclass(frozen=True, slots=True)
class IgnoreRule:
    """One ignoreDifferences entry, from the Application, argocd-cm or a plugin."""

    group: str  # glob
    kind: str  # glob
    name: str = ""
    namespace: str = ""
    json_pointers: tuple[str, ...] = ()
    jq_paths: tuple[str, ...] = ()
    managers: tuple[str, ...] = ()
    origin: str = "application"  # "application", "argocd-cm", "builtin", or a plugin name
    rule_id: str = ""


@dataclass(frozen=True, slots=True)
class Settings:
    """What argocd-cm says about comparison and tracking (Argo CD's defaults when absent)."""

    tracking_method: TrackingMethod = TrackingMethod.ANNOTATION
    instance_label_key: str = "app.kubernetes.io/instance"
    installation_id: str = ""
    ignore_rules: tuple[IgnoreRule, ...] = ()
    ignore_aggregated_roles: bool = False
    ignore_status: str = "all"  # all | crd | none
    reconciliation_timeout: str = "120s"
    from_configmap: bool = False
    controller_namespace: str = "argocd"
    server_side_diff: bool = False  # argocd-cmd-params-cm controller.diff.server.side: every app

    def tracking_keys(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The annotations and the labels Argo CD's resource tracking writes on every object it
        applies (CRDs aside) under this tracking method, whatever git says there: the
        tracking-id and installation-id annotations unless tracking is by label, the instance
        label when tracking uses one."""
        method = self.tracking_method
        annotations = () if method is TrackingMethod.LABEL else (TRACKING_ID, INSTALLATION_ID)
        labels = () if method is TrackingMethod.ANNOTATION else (self.instance_label_key,)
        return annotations, labels


class DiffStrategy(str, enum.Enum):
    """How Argo CD computes the predicted live object of an app's resources."""

    LEGACY = "legacy"  # client-side three-way with last-applied-configuration
    STRUCTURED_MERGE = "structured-merge"  # ServerSideApply=true: SSA from managedFields
    SERVER_SIDE_DIFF = "server-side-diff"  # ServerSideDiff=true: the API server's apply dry-run


@dataclass(frozen=True, slots=True)
class AppSource:
    repo_url: str
    path: str = ""
    target_revision: str = ""
    chart: str = ""
    ref: str = ""
    name: str = ""
    kind: str = ""  # explicit type: helm | kustomize | directory | plugin; "" = detect
    options: Body = field(default_factory=dict)  # the raw helm/kustomize/directory/plugin block
    dry_source: str = ""  # spec.sourceHydrator: the dry source ("repoURL path @ revision") the
    # hydrator renders this sync source from; "" for an ordinary source


@dataclass(frozen=True, slots=True)
class SyncPolicy:
    automated: bool = False
    prune: bool = False
    self_heal: bool = False
    allow_empty: bool = False
    sync_options: tuple[str, ...] = ()

    def has_option(self, option: str) -> bool:
        return option in self.sync_options


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    id: int
    revision: str
    deployed_at: str
    initiated_by: str = ""
    automated: bool = False


@dataclass(frozen=True, slots=True)
class ResourceResult:
    """One resource's line of a sync's result (`status.operationState.syncResult.resources[]`)."""

    group: str
    kind: str
    namespace: str
    name: str
    status: str = ""  # Synced | SyncFailed | Pruned | PruneSkipped
    message: str = ""  # what the apply said, e.g. the API server's 422 text
    hook_phase: str = ""  # Running | Succeeded | Failed | Error | Terminating
    sync_phase: str = ""  # PreSync | Sync | PostSync | SyncFail
    hook_type: str = ""  # set for hooks only

    @property
    def failed(self) -> bool:
        return self.status == "SyncFailed"


@dataclass(frozen=True, slots=True)
class OperationState:
    phase: str  # Running | Failed | Error | Succeeded | Terminating
    message: str = ""
    revision: str = ""
    started_at: str = ""
    finished_at: str = ""
    automated: bool = False
    auto_heal_attempts: int = 0
    resources: tuple[ResourceResult, ...] = ()  # syncResult.resources, in Argo CD's order
    retry_count: int = 0  # how often the operation was retried (operation.retry.limit bounds it)
    retry_limit: int | None = None  # operation.retry.limit, when recorded

    def result_for(self, key: ObjectKey) -> ResourceResult | None:
        """The sync's result for one object (hooks aside), when the sync reached it."""
        for result in self.resources:
            if result.hook_type:
                continue
            if (result.group, result.kind, result.name) != (key.group, key.kind, key.name):
                continue
            if not result.namespace or not key.namespace or result.namespace == key.namespace:
                return result
        return None


@dataclass(frozen=True, slots=True)
class Application:
    name: str
    namespace: str
    project: str
    sources: tuple[AppSource, ...]
    dest_server: str
    dest_name: str
    dest_namespace: str
    sync_policy: SyncPolicy
    ignore_rules: tuple[IgnoreRule, ...]
    sync_status: str  # as recorded by Argo CD: Synced | OutOfSync | Unknown | ""
    revisions: tuple[str, ...]  # status.sync.revision(s): what Argo CD last compared against
    history: tuple[HistoryEntry, ...]
    operation: OperationState | None
    annotations: Mapping[str, str] = field(default_factory=dict)
    reconciled_at: str = ""  # status.reconciledAt: when Argo CD last compared (a reference "now")

    @property
    def qualified_name(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def last_sync(self) -> HistoryEntry | None:
        return self.history[-1] if self.history else None


# --------------------------------------------------------------------------- diff results


class Op(str, enum.Enum):
    ADD = "add"  # git sets it, live lacks it
    CHANGE = "change"  # both have it, values differ
    REMOVE = "remove"  # live has it, applying git would delete it


@dataclass(frozen=True, slots=True)
class Owner:
    """The managedFields entry that owns a live field."""

    manager: str
    operation: str
    subresource: str = ""
    time: str | None = None
    api_version: str = ""

    @property
    def is_argocd(self) -> bool:
        return self.manager in ARGOCD_MANAGERS


ARGOCD_MANAGERS = frozenset({"argocd-controller", "argocd-application-controller", "argocd"})


@dataclass(frozen=True, slots=True)
class Change:
    """One field that differs: what git (after apply) would make it, and what it is live."""

    op: Op
    path: FieldPath
    desired: Any
    live: Any
    owner: Owner | None = None
    secret: bool = False  # values are masked tokens, never the real values


@dataclass(frozen=True, slots=True)
class Suppressed:
    """A difference that a rule hid from the verdict, and the rule that hid it."""

    change: Change
    rule: str  # e.g. "application ignoreDifferences[0] jsonPointers /spec/replicas"
    plugin: str


class ResourceStatus(str, enum.Enum):
    SYNCED = "Synced"
    OUT_OF_SYNC = "OutOfSync"
    MISSING = "Missing"  # in git, not live
    EXTRANEOUS = "Extraneous"  # tracked live, not in git
    UNKNOWN = "Unknown"  # could not be read or compared
    NONE = ""  # hooks, skipped objects: no sync status, as in Argo CD


class SyncStatus(str, enum.Enum):
    SYNCED = "Synced"
    OUT_OF_SYNC = "OutOfSync"
    UNKNOWN = "Unknown"


SHOWN_IN_DIFF = frozenset(
    (ResourceStatus.OUT_OF_SYNC, ResourceStatus.MISSING, ResourceStatus.EXTRANEOUS)
)
"""The statuses `-o diff` prints a diff for (from the objects), as Argo CD's app diff does."""

_NOT_IN_SYNC = frozenset(
    (
        ResourceStatus.OUT_OF_SYNC,
        ResourceStatus.MISSING,
        ResourceStatus.EXTRANEOUS,
        ResourceStatus.UNKNOWN,
    )
)


@dataclass(frozen=True, slots=True)
class Drift:
    """The comparison of one object."""

    key: ObjectKey
    status: ResourceStatus
    changes: tuple[Change, ...] = ()
    suppressed: tuple[Suppressed, ...] = ()
    origin: str | None = None  # the source file that defines the object
    desired: Body | None = None  # normalized desired (None when missing from git)
    live: Body | None = None  # raw live object (None when missing live)
    predicted: Body | None = None  # live after applying git, normalized (and, when it differs
    # from live, API-defaulted, as normalized_live then is)
    normalized_live: Body | None = None
    reason: str = ""  # why Unknown / why no status
    counts: bool = True  # counts toward the app's sync status (IgnoreExtraneous, hooks: False)
    # server-side apply: fields git no longer sets that the next apply keeps because other
    # managers also own them (path, those managers); only argocd-controller lets go of them
    released: tuple[tuple[FieldPath, tuple[str, ...]], ...] = ()

    @property
    def not_in_sync(self) -> bool:
        """Counts toward the app and is not Synced: OutOfSync, Missing, Extraneous or Unknown
        (the DRIFTED column of --all, the metrics' drifted resources)."""
        return self.counts and self.status in _NOT_IN_SYNC

    def without_bodies(self) -> Drift:
        """This drift without its objects when no built-in output reads them: no change, no
        suppressed change (their JSON pointers are resolved against the objects), and no diff
        to show (OutOfSync, Missing, Extraneous). Synced resources, most of any app, shrink to
        their key and status; this is what a worker process sends back (fanout)."""
        if self.changes or self.suppressed or self.status in SHOWN_IN_DIFF:
            return self
        if all(b is None for b in (self.desired, self.live, self.predicted, self.normalized_live)):
            return self
        return dataclasses.replace(
            self, desired=None, live=None, predicted=None, normalized_live=None
        )


class Severity(enum.IntEnum):
    INFO = 10
    WARNING = 20
    ERROR = 30


@dataclass(frozen=True, slots=True)
class Finding:
    """A conclusion a diagnosis rule drew, with the evidence behind it."""

    code: str  # stable, e.g. "manual-drift"
    severity: Severity
    message: str  # one sentence: what is wrong
    key: ObjectKey | None = None
    path: FieldPath | None = None
    evidence: Mapping[str, Any] = field(default_factory=dict)
    hint: str | None = None  # what to do about it
    rule: str = ""  # rule id, e.g. "builtin/manual-drift"
    plugin: str = ""

    def sort_key(self) -> tuple[Any, ...]:
        """Most severe first; then by object, code and field, so output never depends on order
        of discovery."""
        return (
            -int(self.severity),
            self.key or ObjectKey("", "", "", ""),
            self.code,
            display_path(self.path or ()),
        )


class RemedyKind(str, enum.Enum):
    ADOPT = "adopt"  # make git say what the cluster says
    REVERT = "revert"  # make the cluster say what git says
    RESOLVE = "resolve"  # remove a specific cause: an ignore rule, a compare option, a policy
    PREVENT = "prevent"  # keep it from happening again
    VERIFY = "verify"  # prove the fix worked


FIX_KINDS = (RemedyKind.ADOPT, RemedyKind.REVERT, RemedyKind.RESOLVE)
"""The remedies a report lists under FIX: the ways out of the drift there is now."""


@dataclass(frozen=True, slots=True)
class Remedy:
    kind: RemedyKind
    title: str
    steps: tuple[str, ...] = ()  # prose steps
    commands: tuple[str, ...] = ()  # exact shell commands
    file: str | None = None  # for adopt: the source file to edit
    line: int | None = None
    snippet: str | None = None  # YAML/patch to apply
    rule: str = ""
    plugin: str = ""
    # for adopt: each drifted field its patch does not change, "<resource> <field>: <why>"
    left_out: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AppReport:
    name: str
    namespace: str
    sync_status: SyncStatus
    argocd_sync_status: str
    revision: str
    source: str  # "repo path@revision" for display
    resources: tuple[Drift, ...]
    findings: tuple[Finding, ...]
    remedies: tuple[Remedy, ...]
    notes: tuple[str, ...] = ()  # caveats about the inputs ("snapshot has no managedFields")
    application: Application | None = None
    strategy: DiffStrategy = DiffStrategy.LEGACY  # how Argo CD diffs this app
    strategy_reason: str = ""  # the option that chose it, e.g. "syncOptions ServerSideApply=true"

    def without_bodies(self) -> AppReport:
        """The report with `Drift.without_bodies` applied to each resource: every built-in
        output (text, json, yaml, diff, --query, openmetrics) renders it exactly as the whole."""
        return dataclasses.replace(
            self, resources=tuple(d.without_bodies() for d in self.resources)
        )


@dataclass(frozen=True, slots=True)
class Report:
    applications: tuple[AppReport, ...]
    mode: str  # "offline" | "live"

    @property
    def drifted(self) -> bool:
        return any(a.sync_status is not SyncStatus.SYNCED for a in self.applications)


class PreviewAction(str, enum.Enum):
    """What a change does to an Application or to one of its objects (gitdrift preview)."""

    ADDED = "added"  # only head defines (renders) it
    REMOVED = "removed"  # only base does
    CHANGED = "changed"
    UNCHANGED = "unchanged"  # touched by the change, renders the same
    FAILED = "failed"  # one side could not be found, expanded or rendered (AppPreview.error)


@dataclass(frozen=True, slots=True)
class Edit:
    """One field that differs between base's render and head's (values masked for Secrets)."""

    op: Op
    path: FieldPath
    base: Any
    head: Any
    secret: bool = False


@dataclass(frozen=True, slots=True)
class ObjectChange:
    """One object of an app whose render differs between base and head."""

    key: ObjectKey
    action: PreviewAction  # ADDED, REMOVED or CHANGED
    edits: tuple[Edit, ...] = ()  # CHANGED: the fields; ADDED/REMOVED: none (the object is whole)
    origin: str | None = None  # the source file that defines it (head's, else base's)


@dataclass(frozen=True, slots=True)
class SyncEffect:
    """What syncing head would do to the cluster, one field or one object at a time."""

    key: ObjectKey
    action: str  # "create" | "delete" (pruned) | "set" | "remove" (a field)
    path: FieldPath | None = None  # None: the whole object
    live: Any = None
    head: Any = None
    overwrites: Owner | None = None  # the change by hand it would undo (a manager not Argo CD's)
    secret: bool = False


@dataclass(frozen=True, slots=True)
class AppPreview:
    """One Application a change touches: what its render does between base and head and,
    with a live cluster or snapshot, what syncing head would do there."""

    name: str  # namespace/name
    action: PreviewAction
    origin: (
        str  # where the repository defines it: a file, "ApplicationSet argocd/x", "app argocd/root"
    )
    source: str = ""  # repo path of its (first) source, for display
    touched_by: tuple[str, ...] = ()  # the changed files that reach it
    objects: tuple[ObjectChange, ...] = ()
    spec: tuple[Edit, ...] = ()  # changes to the Application's own spec
    sync: tuple[SyncEffect, ...] = ()  # live: what syncing head changes in the cluster
    not_fixed: tuple[Finding, ...] = ()  # live: drift that syncing head leaves as it is
    error: str = ""  # FAILED: why (one line)
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Preview:
    """A change between two revisions of a repository, across every Application it defines."""

    base: str  # commit sha
    head: str  # commit sha (a commit made of the work tree when head is the work tree)
    base_ref: str  # as asked: "origin/main" (merge base), "HEAD~1", ...
    head_ref: str  # as asked, or "work tree"
    apps: tuple[AppPreview, ...]  # touched apps, sorted by name
    untouched: int = 0  # apps found at either revision that the change does not reach
    live: str = ""  # "" (desired against desired only), "snapshot FILE", "context NAME"

    @property
    def changed(self) -> bool:
        """Something would change (exit 1): an app added, removed, changed or failed, or a
        sync effect (a failed app makes the command exit 3 after the output all the same)."""
        return any(a.action is not PreviewAction.UNCHANGED or a.sync for a in self.apps)
