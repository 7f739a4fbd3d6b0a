"""Pushes a run's metrics to a Prometheus Pushgateway (`--pushgateway URL`, for CronJobs).

A CronJob's pod is gone before Prometheus would scrape it, so each run pushes its metrics, grouped
by job and shard: a shard's push replaces only that shard's previous one.
"""

from __future__ import annotations

import urllib.error

from prometheus_client.exposition import push_to_gateway
from prometheus_client.registry import CollectorRegistry

from kubectl_gitdrift.errors import GitDriftError

JOB = "kubectl-gitdrift"
TIMEOUT = 30.0


class PushError(GitDriftError):
    """The Pushgateway could not be reached or refused the metrics."""


def push(url: str, registry: CollectorRegistry, *, shard: str = "") -> None:
    """PUT the metrics under job=kubectl-gitdrift (and shard=K when sharded)."""
    grouping = {"shard": shard.partition("/")[0]} if shard else {}
    try:
        push_to_gateway(url, job=JOB, registry=registry, grouping_key=grouping, timeout=TIMEOUT)
    except urllib.error.HTTPError as exc:
        raise PushError(
            f"--pushgateway {url}: the Pushgateway answered {exc.code} {exc.reason}"
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise PushError(
            f"--pushgateway {url}: cannot push the metrics: {reason}",
            hint="check the URL (http://HOST:9091) and that the Pushgateway runs",
        ) from None
