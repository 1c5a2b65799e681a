"""The provisioner's batch window: pending pods are collected into one decision, not one each.

A batch opens with the first trigger (a pod to plan, a change of capacity) and closes after ``idle``
seconds without another or ``maximum`` after it opened, whichever comes first (Karpenter's batch idle and
max durations); a burst still arriving at the maximum keeps it open up to ``burst_maximum``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass

from kapstan.kube.clock import SYSTEM_CLOCK, Clock


@dataclass(frozen=True)
class BatchWindow:
    idle: float = 1.0
    maximum: float = 10.0
    burst: int = 20
    """Pods in the last ``idle`` seconds that keep a batch open past ``maximum``, up to ``burst_maximum``:
    a scale-up still arriving that fast is one plan. A ReplicaSet of 1,000 pods on a busy controller-manager
    takes 12 s to make them, and a batch cut at 10 s left the last hundred to a second plan that bought
    three more nodes for them (bench.live); a steady trickle is still cut at ``maximum``."""
    burst_maximum: float = 30.0


class Batcher:
    """Collects triggers into batches: ``wait()`` returns once a batch has closed."""

    def __init__(self, window: BatchWindow, clock: Clock = SYSTEM_CLOCK) -> None:
        self._window = window
        self._clock = clock
        self._trigger = asyncio.Event()
        self._last = 0.0
        self._recent: deque[float] = deque()
        """When the triggers of the last idle window came (at most ``burst`` of them are kept)."""

    def trigger(self) -> None:
        self._last = self._clock.now()
        self._recent.append(self._last)
        if len(self._recent) > self._window.burst:
            self._recent.popleft()
        self._trigger.set()

    async def wait(self) -> None:
        await self._trigger.wait()
        window = self._window
        opened = self._clock.now()
        while True:
            now = self._clock.now()
            idle_end = self._last + window.idle
            max_end = opened + (window.burst_maximum if self._bursting(now) else window.maximum)
            if now >= idle_end or now >= max_end:
                break
            # Past the maximum the burst is looked at again within an idle window.
            await self._clock.sleep(min(idle_end, max_end, now + window.idle) - now)
        self._trigger.clear()

    def _bursting(self, now: float) -> bool:
        """Whether ``burst`` triggers came within the last idle window."""
        recent = self._recent
        return len(recent) >= self._window.burst and recent[0] > now - self._window.idle
