"""When the pods planned on a claim that came up, and still unbound, are planned again (issue 14).

While a claim is on its way, the snapshot keeps the pods planned on it there, as if bound. Once it is
Initialized, the ones kube-scheduler has not bound are pending again, and nothing about them changes to
open a batch: kube-scheduler may have filled the node with other pods, and they would wait for good. But
re-planned at once, or after a fixed wait, they are re-planned while kube-scheduler is still binding: at
3,000 pods a 20 s wait re-planned 250-450 pods it was about to bind and bought 19 claims too many
(bench.live), and at once 661 pods and 5 claims at 1,000.

So the re-plan follows the scheduler, and until then those pods stay on their claim in every batch's
snapshot (``awaited``), as they did while it was on its way. A pod it tried after the node came up and marked Unschedulable
(its PodScheduled condition written again) is the signal that the room is not there; it is acted on once
no claim is on its way any more and no pod planned onto a claim has been bound for ``BINDINGS_QUIET``
seconds, so the snapshot is not taken while the scheduler is still moving pods around: it fills the
first nodes up with whatever pods its queue gives it, and refuses pods there that the claims still
coming will hold (at 1,000 pods, refusals acted on while claims were launching bought 5 claims). Without such a verdict (the scheduler writes the
condition only when its message changes), the pods are planned again once the scheduler has bound none
of the planned pods for ``REPLAN_AFTER`` seconds.

A pod that claim after claim comes up without (a taint every new Node gets, chaos scenario 4) waits
longer each time: its refusal is acted on only ``REPLAN_AFTER`` after its second claim came up, twice
that after its third, and so on, and the no-verdict wait doubles from ``REPLAN_AFTER``, both up to
``REPLAN_AFTER_MAX``; the count is reset once the pod binds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kapstan.api.wellknown import INITIALIZED
from kapstan.controllers import conditions as cond
from kapstan.kube.client import Object
from kapstan.kube.clock import Clock
from kapstan.kube.meta import Meta

log = logging.getLogger(__name__)

REPLAN_AFTER = 20.0
"""Seconds the scheduler may go without binding any planned pod before the pods a claim came up without
are planned again when it gave no verdict on them: two batch windows, as long as Karpenter keeps a node
nominated for the pods it expects there."""
REPLAN_AFTER_MAX = 320.0
"""The most any wait grows to: a pod every node refuses (a taint nobody declared) bought one node each
30 s with a fixed wait (12 in 5 minutes, chaos scenario 4; the bar is 10)."""
BINDINGS_QUIET = 3.0
"""Seconds without a binding of a planned pod before a refusal re-plans: while Nodes come up the scheduler
binds tens of pods a second, a new node's worth in a second or two, and a snapshot taken meanwhile counts
room it is about to fill and pods it is about to place."""
TICK = 0.5
"""How often the waits are looked at, well inside the batch's idle second."""


@dataclass
class _Claim:
    """A claim that came up with planned pods unbound."""

    up: float
    pods: set[str]
    refusals_from: float
    """The earliest instant a refusal re-plans (later for pods left out before)."""
    stall: float
    """Seconds without a binding after which the pods are planned again without a verdict."""
    refused: bool = False


class Replans:
    """Follows kube-scheduler on the pods of claims that came up, and calls ``trigger`` (opens a batch)
    when they should be planned again."""

    def __init__(
        self, clock: Clock, trigger: Callable[[], None], claims_on_the_way: Callable[[], bool] = lambda: False
    ) -> None:
        self._clock = clock
        self._trigger = trigger
        self._claims_on_the_way = claims_on_the_way
        """Whether claims are still launching or coming up: the scheduler will place pods on them, and it
        fills the first nodes with whatever pods its queue gives it, so a refusal then is no verdict."""
        self._claims: dict[str, _Claim] = {}
        self._left_out: dict[str, int] = {}
        """Pod key to how many claims planned for it came up without it (until it binds)."""
        self._last_binding = float("-inf")
        """When a pod planned onto a claim was last bound: the scheduler's progress."""
        self._follower: asyncio.Task[None] | None = None

    def claim_up(self, claim: str, pods: Iterable[str]) -> None:
        """``claim`` came up Initialized with ``pods`` (planned on it) still unbound."""
        left = set(pods)
        if not left:
            return
        for pod in left:
            self._left_out[pod] = self._left_out.get(pod, 0) + 1
        times = max(self._left_out[pod] for pod in left)
        now = self._clock.now()
        self._claims[claim] = _Claim(
            up=now,
            pods=left,
            refusals_from=now + (_doubled(times - 1) if times > 1 else 0.0),
            stall=_doubled(times),
        )
        if self._follower is None or self._follower.done():
            self._follower = asyncio.get_running_loop().create_task(self._follow())

    def replanned(self, pods: Iterable[str]) -> None:
        """``pods`` are on a new claim now: the one they were left by no longer waits for them."""
        moved = set(pods)
        for claim in self._claims.values():
            claim.pods -= moved

    def bound(self, pod: str, *, planned: bool) -> None:
        """The scheduler bound ``pod``; one kapstan planned onto a claim is progress on the plan."""
        if planned:
            self._last_binding = self._clock.now()
        self.gone(pod)

    def gone(self, pod: str) -> None:
        """``pod`` is bound or deleted: nothing waits for it, and its count starts over."""
        if self._left_out.pop(pod, None) is None:
            return  # no claim came up without it, so none waits for it
        for claim in self._claims.values():
            claim.pods.discard(pod)

    def refused(self, pod: str) -> None:
        """The scheduler tried ``pod`` and marked it Unschedulable: a verdict if its claim is up."""
        for claim in self._claims.values():
            if pod in claim.pods:
                claim.refused = True

    def awaited(self) -> frozenset[str]:
        """The claims whose pods are still waited for: a batch keeps those pods on them, as if bound, so
        one opened meanwhile (by other pods, a capacity change) does not plan them again either."""
        return frozenset(name for name, claim in self._claims.items() if claim.pods)

    def due(self) -> list[str]:
        """The claims whose pods should be planned now; they are no longer waited for."""
        now = self._clock.now()
        due: list[str] = []
        if not self._claims:
            return due
        coming = self._claims_on_the_way()
        for name, claim in list(self._claims.items()):
            if not claim.pods:
                del self._claims[name]
                continue
            # The node's own pods are bound in the seconds after it comes up: quiet counts from then too.
            quiet = now - max(claim.up, self._last_binding)
            verdict = claim.refused and not coming and now >= claim.refusals_from and quiet >= BINDINGS_QUIET
            stalled = quiet >= claim.stall
            if verdict or stalled or now - claim.up >= REPLAN_AFTER_MAX:
                del self._claims[name]
                due.append(name)
                log.info(
                    "planning again the pods a claim came up without",
                    extra={
                        "nodeclaim": name,
                        "pods": len(claim.pods),
                        "why": "refused" if verdict else "stalled" if stalled else "waited the most",
                        "secondsSinceUp": round(now - claim.up, 1),
                        "secondsSinceBinding": round(min(quiet, now - claim.up), 1),
                    },
                )
        return due

    async def _follow(self) -> None:
        while self._claims:
            await self._clock.sleep(TICK)
            if self.due():
                self._trigger()


def on_the_way(claims: Iterable[Object]) -> bool:
    """Whether one of ``claims`` is launching or not Initialized yet (and not being deleted)."""
    return any(not cond.is_true(claim, INITIALIZED) and not Meta.of(claim).deleting for claim in claims)


def _doubled(times: int) -> float:
    """``REPLAN_AFTER`` doubled for each time after the first, up to ``REPLAN_AFTER_MAX``."""
    return min(REPLAN_AFTER * 2.0 ** (times - 1), REPLAN_AFTER_MAX)
