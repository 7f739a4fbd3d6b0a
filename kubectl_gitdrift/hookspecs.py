"""The plugin contract: every hook a built-in or team plugin can implement.

Five hooks, all prefixed `gitdrift_`, each typed and documented with how it is called:

| hook                          | calls      | when                                      |
|-------------------------------|------------|-------------------------------------------|
| `gitdrift_register_rules`     | 1:N        | once per run, before anything is read     |
| `gitdrift_register_renderers` | 1:N        | once per run, before anything is read     |
| `gitdrift_ignore_rules`       | 1:N        | once per application, before comparing    |
| `gitdrift_normalize`          | 1:N        | twice per compared object (desired, live) |
| `gitdrift_attribute`          | firstresult| once per drifted field                    |

Plugins registered later are called first (pluggy's LIFO order): team plugins run before the
built-ins and can override them. Hooks that contribute named things take a `register` callback, so
each rule and output format records the plugin that provided it; ignore rules are stamped with
their plugin here, and every `Finding` and `Suppressed` carries it into the report.

The core calls hooks only through `hookcalls` (`call_each`, `first_result`, `collect_rules`,
`collect_renderers`), which checks what a plugin returns and turns any exception raised inside
a plugin into a one-line `PluginError` naming it; that fails the run with exit code 4. This
module is the contract alone: the specs, the types they speak and how each is called.

Source renderers (a team's config-management plugin, like Argo CD's CMP) are not a hook yet.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pluggy

from kubectl_gitdrift import model

PROJECT = "kubectl_gitdrift"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

SIDES = ("desired", "live")


class RuleContext(Protocol):
    """What a diagnosis rule sees (built by diagnosis.py): the app, its settings and every drift.

    Read-only: a rule must not change anything it is given.
    """

    @property
    def app(self) -> model.Application: ...
    @property
    def settings(self) -> model.Settings: ...
    @property
    def drifts(self) -> Sequence[model.Drift]: ...
    @property
    def live(self) -> Sequence[model.Manifest]: ...
    @property
    def managed_fields_known(self) -> bool: ...


RuleFn = Callable[[RuleContext], Iterable[model.Finding]]
RendererFn = Callable[[model.Report], str]


@dataclass(frozen=True, slots=True)
class Rule:
    id: str  # "builtin/manual-drift", "team-payments/owner-label"
    fn: RuleFn
    severity: model.Severity
    doc: str
    plugin: str
    codes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Renderer:
    name: str  # the -o value
    fn: RendererFn
    doc: str
    plugin: str


class RegisterRule(Protocol):
    def __call__(
        self,
        rule_id: str,
        fn: RuleFn,
        *,
        severity: model.Severity = ...,
        doc: str = ...,
        codes: Sequence[str] = ...,
    ) -> None: ...


class RegisterRenderer(Protocol):
    def __call__(self, name: str, fn: RendererFn, *, doc: str = ...) -> None: ...


# --------------------------------------------------------------------------- the hooks


@hookspec
def gitdrift_register_rules(register: RegisterRule) -> None:
    """Register diagnosis rules: `register(rule_id, fn, severity=, doc=, codes=)`.

    Calls: 1:N, every plugin; once per run, before any input is read (also by `gitdrift rules`).

    `rule_id` is `<plugin>/<name>` and unique across plugins; `--disable-rule ID` skips it.
    `fn(ctx: RuleContext)` yields `Finding`s, once per application after drifts are attributed.
    It must be pure: no I/O, no changes to `ctx`. `rule` and `plugin` of each finding are filled
    in by gitdrift. `severity` is the rule's worst; `codes` lists the finding codes it emits.
    """


@hookspec
def gitdrift_ignore_rules(
    app: model.Application, live: Sequence[model.Manifest]
) -> Iterable[model.IgnoreRule] | None:
    """Ignore rules this plugin adds for an application, like `ignoreDifferences` entries.

    Calls: 1:N, every plugin's rules are used; once per application, before any comparison.

    `live` is every live object read (the app's and others, e.g. HPAs and their targets); treat
    it as read-only. Each `IgnoreRule` selects objects (group/kind globs, name, namespace) and
    names fields to hide (`json_pointers`, `jq_paths`, `managers`). Set `rule_id` (e.g.
    `"hpa_replicas/web"`): `--show-suppressed` lists every hidden difference with that id and the
    plugin. `origin` is set to the plugin's name. Returning None or nothing adds no rules.
    """


@hookspec
def gitdrift_normalize(key: model.ObjectKey, body: dict[str, Any], side: str) -> None:
    """Edit an object in place before it is compared.

    Calls: 1:N, each plugin in turn (newest first); for every object present on both sides,
    once with `side="desired"` and once with `side="live"`, after the built-in normalization
    and ignore rules, on private copies. Must be deterministic and idempotent, and must not look
    at anything but its arguments. Prefer an ignore rule (recorded in the report as suppressed);
    use this for what an ignore rule cannot express, e.g. undoing a rewrite an admission
    webhook made to a field git also sets.
    """


@hookspec(firstresult=True)
def gitdrift_attribute(change: model.Change, live: Mapping[str, Any]) -> model.Owner | None:
    """Name the writer behind a drifted live field.

    Calls: firstresult; once per drifted field. Plugins registered later are asked first and the
    first non-None answer wins, so a team plugin overrides the built-in managedFields attribution
    (return None to let it answer). Must be pure; `live` is the raw live object.
    """


@hookspec
def gitdrift_register_renderers(register: RegisterRenderer) -> None:
    """Register output formats for `-o NAME`: `register(name, fn, doc=)`.

    Calls: 1:N, every plugin; once per run. `fn(report: Report) -> str` returns the whole output
    (the CLI writes it only once the run succeeded). A plugin registered later may replace a
    built-in format of the same name.
    """


HOOKS = (
    "gitdrift_attribute",
    "gitdrift_ignore_rules",
    "gitdrift_normalize",
    "gitdrift_register_renderers",
    "gitdrift_register_rules",
)
