"""Which NodeClaims disruption may touch, and what moving each would involve.

A candidate is one of our NodeClaims with a Node: Initialized, not already going, its Machine in our
Cluster. What can block graceful disruption (consolidation, drift) is found here, once, as data: the
``karpenter.sh/do-not-disrupt`` annotation on the Node or NodeClaim, or on a pod (``"true"``, or a
duration the pod is protected for after it started), and a pod whose PodDisruptionBudget allows no
eviction now. Expiration is forceful and ignores all of it (Karpenter does the same).

``consolidatable`` follows Karpenter's ``Consolidatable`` condition: ``consolidateAfter`` has passed
since the last pod event on the node (a pod bound to it, or gone from it), counted from initialization
for a node that never had one; ``Never`` turns consolidation, emptiness included, off.

Pure: objects and ``now`` in, ``Candidate`` out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kapstan.api.wellknown import DO_NOT_DISRUPT_ANNOTATION, INITIALIZED, INSTANCE_TYPE, NODEPOOL, ZONE
from kapstan.controllers import conditions as cond
from kapstan.controllers.pods import do_not_disrupt, pod_key, reschedulable
from kapstan.kube.client import Object
from kapstan.kube.meta import Meta
from kapstan.scheduling.model import LabelSelector, LabelSelectorRequirement


@dataclass(frozen=True)
class Candidate:
    claim: str
    node: str
    pool: str
    instance_type: str
    zone: str
    price: float
    pods: tuple[str, ...]
    """Keys of the pods a drain would move (not DaemonSet, static or finished pods)."""
    created: datetime
    consolidatable: bool
    blocked: str = ""
    """Why graceful disruption must leave this node alone; empty when it may go."""
    consolidatable_at: datetime | None = None

    @property
    def empty(self) -> bool:
        return not self.pods

    def describe(self) -> str:
        return f"{self.claim} ({self.instance_type}, node {self.node}, {self.price:g}/h)"


def selector_of(raw: Mapping[str, Any] | None) -> LabelSelector:
    """A ``metav1.LabelSelector`` as the solver's selector (an empty one matches every pod)."""
    raw = raw or {}
    return LabelSelector(
        tuple(sorted((raw.get("matchLabels") or {}).items())),
        tuple(
            LabelSelectorRequirement(e["key"], e["operator"], tuple(e.get("values") or ()))
            for e in raw.get("matchExpressions") or []
        ),
    )


def pdb_blocks(pod: Object, pdbs: Iterable[Object]) -> str:
    """The PodDisruptionBudget that allows no eviction of ``pod`` now, as text; empty if none."""
    meta = Meta.of(pod)
    for pdb in pdbs:
        pdb_meta = Meta.of(pdb)
        if pdb_meta.namespace != meta.namespace:
            continue
        selector = pdb.get("spec", {}).get("selector")
        if selector is None or not selector_of(selector).matches(meta.labels):
            continue
        if int(pdb.get("status", {}).get("disruptionsAllowed") or 0) <= 0:
            return (
                f"PodDisruptionBudget {meta.namespace}/{pdb_meta.name} allows no eviction of pod {meta.name}"
            )
    return ""


def blocker(
    claim: Object, node: Object, pods: Sequence[Object], pdbs: Sequence[Object], now: datetime
) -> str:
    """Why graceful disruption must not take this node now; empty when nothing blocks it."""
    for obj, what in ((node, "Node"), (claim, "NodeClaim")):
        if do_not_disrupt(obj, now):
            return f"{what} {Meta.of(obj).name} is annotated {DO_NOT_DISRUPT_ANNOTATION}"
    for pod in pods:
        if not reschedulable(pod):
            continue
        if do_not_disrupt(pod, now):
            return f"pod {pod_key(pod)} is annotated {DO_NOT_DISRUPT_ANNOTATION}"
        found = pdb_blocks(pod, pdbs)
        if found:
            return found
    return ""


def consolidatable_at(
    claim: Object, last_pod_event: datetime | None, consolidate_after: timedelta | None
) -> datetime | None:
    """When the claim turns ``Consolidatable``: ``consolidateAfter`` after its last pod event (or its
    initialization); None while it is not Initialized or when ``consolidateAfter`` is ``Never``."""
    if consolidate_after is None:
        return None
    initialized = cond.find(claim, INITIALIZED)
    if initialized is None or initialized.get("status") != cond.TRUE:
        return None
    since = cond.parse_time(initialized.get("lastTransitionTime"))
    recorded = cond.parse_time(claim.get("status", {}).get("lastPodEventTime"))
    moments = [m for m in (since, last_pod_event, recorded) if m is not None]
    if not moments:
        return None
    return max(moments) + consolidate_after


def consolidatable(
    claim: Object, last_pod_event: datetime | None, consolidate_after: timedelta | None, now: datetime
) -> bool:
    """Karpenter's ``Consolidatable``: Initialized, and ``consolidateAfter`` since the last pod event."""
    at = consolidatable_at(claim, last_pod_event, consolidate_after)
    return at is not None and now >= at


def price_of(claim: Object, prices: Mapping[tuple[str, str], float], annotation: str) -> float:
    """What the claim's node costs per hour: the price it was bought at, else the catalog's."""
    meta = Meta.of(claim)
    text = meta.annotations.get(annotation)
    if text:
        try:
            return float(text)
        except ValueError:
            pass
    labels = meta.labels
    return prices.get((labels.get(INSTANCE_TYPE, ""), labels.get(ZONE, "")), 0.0)


def candidate(
    claim: Object,
    node: Object,
    pods: Sequence[Object],
    pdbs: Sequence[Object],
    *,
    price: float,
    consolidate_after: timedelta | None,
    last_pod_event: datetime | None,
    now: datetime,
) -> Candidate:
    meta = Meta.of(claim)
    labels = meta.labels
    return Candidate(
        claim=meta.name,
        node=Meta.of(node).name,
        pool=labels.get(NODEPOOL, ""),
        instance_type=labels.get(INSTANCE_TYPE, ""),
        zone=labels.get(ZONE, ""),
        price=price,
        pods=tuple(sorted(pod_key(p) for p in pods if reschedulable(p))),
        created=cond.parse_time(meta.created) or now,
        consolidatable=consolidatable(claim, last_pod_event, consolidate_after, now),
        consolidatable_at=consolidatable_at(claim, last_pod_event, consolidate_after),
        blocked=blocker(claim, node, pods, pdbs, now),
    )
