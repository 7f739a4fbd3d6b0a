"""Turns a run's reports into OpenMetrics text: which app drifted, which field, written by whom.

Argo CD's own `argocd_app_info` says *that* an app is OutOfSync; these series say which field
differs and which field manager wrote it, so an alert can name them. Written with
prometheus_client's OpenMetrics exposition, never by hand. Secret fields appear by path only
(a path never holds a value). Label cardinality is bounded: at most `max_fields` field series per
resource, the rest counted in `gitdrift_drifted_fields_truncated`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.registry import Collector, CollectorRegistry

from kubectl_gitdrift import model

#: Field series per resource before the rest are only counted (label cardinality bound).
MAX_FIELDS = 20

_APP_LABELS = ("app_namespace", "application")
_RESOURCE_LABELS = (*_APP_LABELS, "group", "kind", "namespace", "name")


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What a run knows besides its reports: how long it took, when it last succeeded, which
    apps failed to render (namespace/name), and how many runs failed (the `serve` loop)."""

    duration_seconds: float | None  # None: no run has ended yet
    last_success: float | None  # Unix time of the last run that compared
    failed: Sequence[str] = ()  # "namespace/name" of apps that could not be compared
    run_failures: int = 0
    max_fields: int = MAX_FIELDS


def render(reports: Sequence[model.AppReport], info: RunInfo) -> str:
    """The OpenMetrics text for one run (ends with `# EOF`)."""
    text: bytes = generate_latest(registry(reports, info))  # type: ignore[no-untyped-call]
    return text.decode("utf-8")


def registry(reports: Sequence[model.AppReport], info: RunInfo) -> CollectorRegistry:
    """The run's metrics as a prometheus_client registry (for a Pushgateway push)."""
    out = CollectorRegistry(auto_describe=False)
    out.register(_Collector(reports, info))
    return out


class _Collector(Collector):
    def __init__(self, reports: Sequence[model.AppReport], info: RunInfo) -> None:
        self.reports = sorted(reports, key=lambda a: (a.namespace, a.name))
        self.info = info

    def collect(self) -> Iterator[Metric]:
        out_of_sync = GaugeMetricFamily(
            "gitdrift_application_out_of_sync",
            "1 when gitdrift finds the Application not in sync with git (OutOfSync or Unknown).",
            labels=(*_APP_LABELS, "status"),
        )
        counted = GaugeMetricFamily(
            "gitdrift_application_drifted_fields",
            "Fields that differ between git and the cluster, over the Application's resources.",
            labels=_APP_LABELS,
        )
        resources = GaugeMetricFamily(
            "gitdrift_application_drifted_resources",
            "Resources not in sync (OutOfSync, Missing, Extraneous, Unknown).",
            labels=_APP_LABELS,
        )
        field = GaugeMetricFamily(
            "gitdrift_drifted_field",
            "1 per drifted field, labeled with the field manager that wrote the live value.",
            labels=(*_RESOURCE_LABELS, "path", "manager"),
        )
        truncated = GaugeMetricFamily(
            "gitdrift_drifted_fields_truncated",
            "Drifted fields of a resource left out of gitdrift_drifted_field (cardinality cap).",
            labels=_RESOURCE_LABELS,
        )
        findings = GaugeMetricFamily(
            "gitdrift_finding",
            "Diagnosis findings by code and severity (the count of such findings).",
            labels=(*_APP_LABELS, "code", "severity"),
        )
        failed = GaugeMetricFamily(
            "gitdrift_application_failed",
            "1 when the Application could not be compared (render or input error).",
            labels=_APP_LABELS,
        )
        for app in self.reports:
            labels = [app.namespace, app.name]
            drifted = [d for d in app.resources if d.not_in_sync]
            out_of_sync.add_metric(
                [*labels, app.sync_status.value],
                0 if app.sync_status is model.SyncStatus.SYNCED else 1,
            )
            counted.add_metric(labels, sum(len(d.changes) for d in drifted))
            resources.add_metric(labels, len(drifted))
            for drift in drifted:
                key = drift.key
                where = [*labels, key.group, key.kind, key.namespace, key.name]
                changes = sorted(drift.changes, key=lambda c: model.display_path(c.path))
                for change in changes[: self.info.max_fields]:
                    manager = change.owner.manager if change.owner is not None else ""
                    field.add_metric([*where, model.display_path(change.path), manager], 1)
                if len(changes) > self.info.max_fields:
                    truncated.add_metric(where, len(changes) - self.info.max_fields)
            for (code, severity), count in _finding_counts(app.findings):
                findings.add_metric([*labels, code, severity], count)
        for name in sorted(self.info.failed):
            namespace, _, app_name = name.rpartition("/")
            failed.add_metric([namespace, app_name], 1)
        yield from (out_of_sync, counted, resources, field, truncated, findings, failed)
        duration = GaugeMetricFamily(
            "gitdrift_run_duration_seconds", "Wall time of the last run, in seconds."
        )
        if self.info.duration_seconds is not None:
            duration.add_metric([], round(self.info.duration_seconds, 3))
        yield duration
        if self.info.last_success is not None:
            success = GaugeMetricFamily(
                "gitdrift_last_success_timestamp_seconds",
                "Unix time at which the last successful run finished.",
            )
            success.add_metric([], self.info.last_success)
            yield success
        failures = CounterMetricFamily(
            "gitdrift_run_failures", "Runs that failed as a whole (the last good result is kept)."
        )
        failures.add_metric([], self.info.run_failures)
        yield failures


def _finding_counts(findings: Iterable[model.Finding]) -> list[tuple[tuple[str, str], int]]:
    counts: dict[tuple[str, str], int] = {}
    for finding in findings:
        key = (finding.code, finding.severity.name.lower())
        counts[key] = counts.get(key, 0) + 1
    return sorted(counts.items())
