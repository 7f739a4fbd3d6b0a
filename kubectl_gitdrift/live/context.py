"""The context objects a live run reads after the compare, for what differs alone.

The Events, HorizontalPodAutoscalers and MutatingWebhookConfigurations that the diagnosis of
an app's differences reads (engine.Needs) are not listed beside the app's own objects: once
the compare has shown what differs, one round of concurrent LISTs asks for them, on a
connection of its own that knows the run's discovery (so it sends nothing else). Nothing
differs, nothing is asked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubectl_gitdrift import model
from kubectl_gitdrift.live.discovery import Discovery
from kubectl_gitdrift.live.listing import (
    CONTEXT_KINDS,
    ListResult,
    Query,
    for_diagnosis,
    webhooks,
    webhooks_not_read,
)
from kubectl_gitdrift.live.transport import Config

if TYPE_CHECKING:
    from kubectl_gitdrift.engine import Needs

__all__ = ["FollowUp", "queries"]

EVENT, HPA = CONTEXT_KINDS


def queries(discovery: Discovery, needs: Needs) -> list[Query]:
    """The LISTs for `needs`: the Events of each dated object (a fieldSelector on the involved
    object, in its namespace), the HPAs of each namespace holding a differing object of a kind
    with a /scale subresource (the only kinds an HPA's scaleTargetRef can scale), and the
    mutating webhook configurations when asked; sorted, each once."""
    out: set[Query] = set()
    event = discovery.find(*EVENT)
    if event is not None:
        for key in needs.dated:
            selector = f"involvedObject.kind={key.kind},involvedObject.name={key.name}"
            out.add(Query(event, key.namespace, field_selector=selector))
    hpa = discovery.find(*HPA)
    if hpa is not None:
        out.update(
            Query(hpa, key.namespace)
            for key in needs.scaled
            if key.namespace and discovery.scalable(key.group, key.kind)
        )
    if needs.webhooks:
        out.update(webhooks(discovery))
    return sorted(out)


@dataclass
class FollowUp:
    """Reads what engine.Needs names, for one app at a time (ClusterState.follow_up): the
    objects (their Manifests, in the state's key order, as listing.for_diagnosis has them)
    and notes about what could not be read. The webhook configurations are read only if
    `webhooks` (some app Argo CD reports other than Synced: a webhook's change to a field Argo
    CD applied shows there)."""

    config: Config
    version: Mapping[str, Any]
    discovery: Discovery
    webhooks: bool = True  # False: never (no app has differences Argo CD reports)

    def __call__(self, needs: Needs) -> tuple[list[model.Manifest], list[str]]:
        if not self.webhooks and needs.webhooks:
            needs = dataclasses.replace(needs, webhooks=False)
        wanted = queries(self.discovery, needs)
        if not wanted:
            return [], []
        from kubectl_gitdrift.live.cluster import Cluster

        with Cluster(self.config, known=(dict(self.version), self.discovery)) as kc:
            results = kc.fetch(wanted)
        return _taken(results)


def _taken(results: Sequence[ListResult]) -> tuple[list[model.Manifest], list[str]]:
    found: dict[model.ObjectKey, model.Manifest] = {}
    notes: list[str] = []
    for res in results:
        if res.error:  # e.g. 403: a note; the verdict and the drift are whole without them
            notes.append(_not_read(res))
            continue
        for item in res.items:
            body = for_diagnosis(item)
            key = model.ObjectKey.of(body)
            found.setdefault(key, model.Manifest(key, body))
    order = sorted(found, key=model.KEY_ORDER)
    return [found[k] for k in order], notes


def _not_read(res: ListResult) -> str:
    kind = (res.query.kind.group, res.query.kind.kind)
    if kind in (HPA, EVENT):  # as when they are listed up front (run/workflow.py's notes)
        whole = Query(res.query.kind, res.query.namespace).describe()  # the selector unsaid
        return f"not checked: {res.error.replace(res.query.describe(), whole, 1)}"
    return webhooks_not_read(res.error)
