"""AppProject sync windows (Argo CD `SyncWindows.CanSync`): is automated sync allowed at a moment?

A window is active when its cron `schedule` fired within the last `duration` before the moment
(in the window's `timeZone`, UTC by default). Windows apply to an app when one of `applications`,
`namespaces` (the destination namespace) or `clusters` (destination server or name) matches it
(globs). Automated sync is blocked by any active `deny` window, and, when the app has `allow`
windows, by none of them being active. Manual sync is allowed through a blocking window that has
`manualSync: true`. The cron dialect is the standard five fields (robfig/cron, as Argo CD uses):
lists, ranges, steps, month and weekday names, `@hourly`-style descriptors; day-of-month and
day-of-week are OR-ed when both are restricted.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kubectl_gitdrift import model

MAX_DURATION = timedelta(days=31)
_DESCRIPTORS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1
    )
}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
_NONE: dict[str, int] = {}
_BOUNDS: tuple[tuple[int, int, dict[str, int]], ...] = (
    (0, 59, _NONE),
    (0, 23, _NONE),
    (1, 31, _NONE),
    (1, 12, _MONTHS),
    (0, 6, _DAYS),
)


class CronError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Cron:
    fields: tuple[frozenset[int], ...]
    dom_star: bool
    dow_star: bool

    def matches(self, moment: datetime) -> bool:
        minute, hour, dom, month, dow = self.fields
        if moment.minute not in minute or moment.hour not in hour or moment.month not in month:
            return False
        weekday = (moment.weekday() + 1) % 7  # Sunday = 0
        dom_ok, dow_ok = moment.day in dom, weekday in dow
        if self.dom_star or self.dow_star:
            return dom_ok and dow_ok
        return dom_ok or dow_ok


def parse_cron(text: str) -> Cron:
    spec = _DESCRIPTORS.get(text.strip().lower(), text.strip())
    parts = spec.split()
    if len(parts) != 5:
        raise CronError(f"cron schedule {text!r}: expected 5 fields")
    sets = []
    for part, (low, high, names) in zip(parts, _BOUNDS, strict=True):
        sets.append(_field(part, low, high, names, text))
    return Cron(tuple(sets), parts[2] in ("*", "?"), parts[4] in ("*", "?"))


def _field(part: str, low: int, high: int, names: Mapping[str, int], text: str) -> frozenset[int]:
    out: set[int] = set()
    for item in part.split(","):
        rng, _, step_text = item.partition("/")
        step = int(step_text) if step_text.isdigit() else 1
        if step_text and not step_text.isdigit():
            raise CronError(f"cron schedule {text!r}: bad step {item!r}")
        if rng in ("*", "?"):
            start, end = low, high
        else:
            first, _, last = rng.partition("-")
            start = _value(first, names, text)
            end = _value(last, names, text) if last else (high if step_text else start)
        if high == 6 and end == 7:  # 7 is Sunday too
            end = 6
            out.add(0)
        if not low <= start <= end <= high or step < 1:
            raise CronError(f"cron schedule {text!r}: {item!r} out of range")
        out.update(range(start, end + 1, step))
    return frozenset(out)


def _value(text: str, names: Mapping[str, int], spec: str) -> int:
    lowered = text.lower()
    if lowered in names:
        return names[lowered]
    if text.isdigit():
        return int(text)
    raise CronError(f"cron schedule {spec!r}: bad value {text!r}")


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|m|s)")


def parse_duration(text: str) -> timedelta:
    """Go durations as Argo CD accepts them: `1h`, `30m`, `1h30m`."""
    text = text.strip()
    if not text or _DURATION.sub("", text):
        raise CronError(f"duration {text!r}: expected e.g. 1h, 30m or 1h30m")
    total = 0.0
    for amount, unit in _DURATION.findall(text):
        total += float(amount) * {"h": 3600, "m": 60, "s": 1}[unit]
    return timedelta(seconds=total)


@dataclass(frozen=True, slots=True)
class Window:
    kind: str  # allow | deny
    schedule: str
    duration: str
    applications: tuple[str, ...]
    namespaces: tuple[str, ...]
    clusters: tuple[str, ...]
    manual_sync: bool
    time_zone: str
    index: int

    def evidence(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "kind": self.kind,
            "schedule": self.schedule,
            "duration": self.duration,
            "applications": list(self.applications),
            "namespaces": list(self.namespaces),
            "clusters": list(self.clusters),
            "manualSync": self.manual_sync,
            "timeZone": self.time_zone or "UTC",
        }

    def applies_to(self, app: model.Application) -> bool:
        def any_glob(patterns: Sequence[str], *values: str) -> bool:
            return any(fnmatch.fnmatchcase(v, p) for p in patterns for v in values if v)

        return (
            any_glob(self.applications, app.name)
            or any_glob(self.namespaces, app.dest_namespace)
            or any_glob(self.clusters, app.dest_server, app.dest_name)
        )

    def active(self, moment: datetime) -> bool:
        """Did the schedule fire within `duration` before `moment`?"""
        cron = parse_cron(self.schedule)
        length = min(parse_duration(self.duration), MAX_DURATION)
        zone = _zone(self.time_zone)
        local = moment.astimezone(zone).replace(second=0, microsecond=0)
        steps = int(length.total_seconds() // 60)
        return any(cron.matches(local - timedelta(minutes=back)) for back in range(steps))


def _zone(name: str) -> Any:
    if not name:
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise CronError(f"unknown timeZone {name!r}") from None


def windows(project: model.Body | None) -> list[Window]:
    """The AppProject's spec.syncWindows."""
    if not project:
        return []
    out = []
    for index, raw in enumerate((project.get("spec") or {}).get("syncWindows") or []):
        if not isinstance(raw, Mapping):
            continue
        out.append(
            Window(
                kind=str(raw.get("kind") or ""),
                schedule=str(raw.get("schedule") or ""),
                duration=str(raw.get("duration") or ""),
                applications=tuple(str(a) for a in raw.get("applications") or ()),
                namespaces=tuple(str(a) for a in raw.get("namespaces") or ()),
                clusters=tuple(str(a) for a in raw.get("clusters") or ()),
                manual_sync=bool(raw.get("manualSync")),
                time_zone=str(raw.get("timeZone") or ""),
                index=index,
            )
        )
    return out


@dataclass(frozen=True, slots=True)
class Verdict:
    automated: bool  # may automated sync (and self-heal) run now?
    manual: bool  # may a manual sync run now?
    active: tuple[Window, ...]  # the app's windows active at the moment
    blocking: tuple[Window, ...]  # the windows that block automated sync
    reason: str


def can_sync(app: model.Application, project: model.Body | None, moment: datetime) -> Verdict:
    mine = [w for w in windows(project) if w.applies_to(app)]
    active = tuple(w for w in mine if w.active(moment))
    denies = tuple(w for w in active if w.kind == "deny")
    allows = [w for w in mine if w.kind == "allow"]
    if denies:
        return Verdict(
            False,
            all(w.manual_sync for w in denies),
            active,
            denies,
            "a deny window is active",
        )
    if allows and not any(w.kind == "allow" for w in active):
        return Verdict(
            False,
            any(w.manual_sync for w in allows),
            active,
            tuple(allows),
            "the app has allow windows and none is active",
        )
    return Verdict(True, True, active, (), "")
