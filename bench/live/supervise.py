"""The operator as its Deployment would run it: started again when it exits, the restarts counted.

``kapstan run`` steps down and exits when it cannot renew its Lease within the renew deadline (10 s), as
controller-runtime's managers do, and relies on its Pod being restarted. On this shared 2-core machine the
3,000-pod run's API server went that long without answering, the one replica exited at T+150 s, and the
run waited for nobody. The bench now restarts it, as the kubelet would, and reports each restart, with
the CPU seconds and peak RSS of every process it ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from bench.live import operator_costs
from kapstan.local.operator import OperatorProcess

LOOK_EVERY = 1.0
"""Seconds between looks at the process (and its CPU time, kept for after it exits)."""


class Supervised:
    def __init__(self, operator: OperatorProcess) -> None:
        self.operator = operator
        self.restarts: list[float] = []
        """When each restart happened (epoch seconds)."""
        self._spent = 0.0
        """CPU seconds of the processes that exited."""
        self._current = 0.0
        self._peak = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> Supervised:
        self._task = asyncio.get_running_loop().create_task(self._watch())
        return self

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self.operator.stop()

    def cpu_seconds(self) -> float:
        self._look()
        return round(self._spent + self._current, 2)

    def peak_rss_mib(self) -> float:
        self._look()
        return self._peak

    def _look(self) -> None:
        with contextlib.suppress(OSError):  # it exited between the check and the read
            self._current = operator_costs.cpu_seconds(self.operator.pid)
            self._peak = max(self._peak, operator_costs.peak_rss_mib(self.operator.pid))

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(LOOK_EVERY)
            if self.operator.running:
                self._look()
                continue
            self._spent += self._current
            self._current = 0.0
            self.restarts.append(time.time())
            self.operator.start()
