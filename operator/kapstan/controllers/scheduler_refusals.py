"""Pods a plan put on an existing node that kube-scheduler still refuses there: the provisioner's safety net.

A pod planned onto a Node that exists opens no NodeClaim: kapstan expects kube-scheduler to bind it there
by itself. When the two disagree about that node (a counting rule kapstan does not model the way
kube-scheduler does), nothing else changes, no batch opens, and the pod waits for good in silence (issue 14:
4 `web` pods Pending 1,473 s). So a pod planned onto a Node that is still marked Unschedulable by
kube-scheduler ``REFUSED_AFTER`` seconds later is said once, in a log line and a Warning Event naming the
pod and the node, and from then on planned as if that node had no room for it (``Node.refused`` in the
snapshot), which gives it a NodeClaim if nothing else holds it. The mark goes when the pod binds or goes.

Only Unschedulable pods count: one kube-scheduler has not tried yet is not refused, only late.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace

from kapstan.controllers.state import provisionable
from kapstan.kube.client import Object
from kapstan.kube.clock import Clock
from kapstan.kube.store import Store

log = logging.getLogger(__name__)

REFUSED_AFTER = 20.0
"""Two batch windows at their maximum: kube-scheduler retries an unschedulable pod within seconds of a
change that could let it fit, so one still refused this long after a plan counted on a node is not about
to be bound there."""


@dataclass(frozen=True)
class Refusal:
    pod: str
    node: str
    seconds: float
    """How long ago the plan put the pod there."""
    message: str = ""
    """What the Event and the log line say."""


class Refusals:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._planned: dict[str, tuple[str, float]] = {}
        """Pod key to the existing node a plan put it on, and when (the first such plan)."""
        self.refused: dict[str, set[str]] = {}
        """Pod key to the nodes kube-scheduler refused it on: planned as if they were full for it."""

    def planned(self, placements: Mapping[str, Iterable[str]]) -> None:
        """Record the pods a plan put on existing Nodes (node name to pod keys)."""
        now = self._clock.now()
        for node, pods in placements.items():
            for pod in pods:
                if node in self.refused.get(pod, ()):
                    continue
                known = self._planned.get(pod)
                if known is None or known[0] != node:
                    self._planned[pod] = (node, now)

    def overdue(self, unschedulable: Callable[[str], bool]) -> list[Refusal]:
        """The pods planned on a node at least ``REFUSED_AFTER`` ago that kube-scheduler still marks
        Unschedulable: marked refused there from now on, and returned so the caller says it once."""
        now = self._clock.now()
        found = []
        for pod, (node, since) in list(self._planned.items()):
            if now - since >= REFUSED_AFTER and unschedulable(pod):
                del self._planned[pod]
                self.refused.setdefault(pod, set()).add(node)
                found.append(Refusal(pod, node, now - since))
        return found

    def judge(self, pods: Store) -> list[Refusal]:
        """``overdue`` on the pods as the informer has them, each refusal logged and worded."""
        found = []
        for refusal in self.overdue(lambda key: _unschedulable(pods.get_by_name(*_name_of(key)))):
            message = refusal_message(refusal, pods.get_by_name(*_name_of(refusal.pod)))
            log.warning(
                "kube-scheduler refuses a pod on the node it was planned on",
                extra={"pod": refusal.pod, "node": refusal.node, "detail": message},
            )
            found.append(replace(refusal, message=message))
        return found

    def waiting(self) -> bool:
        """Whether some planned pod has not been judged yet (the provisioner looks again later)."""
        return bool(self._planned)

    def forget(self, pod: str) -> None:
        """The pod was bound or deleted."""
        self._planned.pop(pod, None)
        self.refused.pop(pod, None)


def _name_of(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition("/")
    return name, namespace


def _unschedulable(pod: Object | None) -> bool:
    return pod is not None and provisionable(pod)


REFUSED_REASON = "PlannedNodeRefused"
"""The Warning Event's reason on the pod."""


def refusal_message(refusal: Refusal, pod: Object | None) -> str:
    """What the Event says: the node, how long ago the plan put the pod there, what kapstan does now and
    kube-scheduler's own words (its PodScheduled condition)."""
    text = (
        f"kube-scheduler has not bound the pod to node/{refusal.node} {refusal.seconds:.0f}s after a plan "
        "put it there: planning it as if that node had no room for it"
    )
    conditions = (pod or {}).get("status", {}).get("conditions") or []
    said = next((c.get("message") for c in conditions if c.get("type") == "PodScheduled"), None)
    return f"{text} (kube-scheduler: {said})" if said else text
