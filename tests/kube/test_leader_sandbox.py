"""Leader election on a real Lease: one leader at a time; a released Lease is taken over at once; a leader
that cannot renew steps down before its Lease expires, and only then does another take it."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from kube_helpers import eventually, fresh_namespace

from kapstan.kube.client import LEASES, Client
from kapstan.kube.errors import ApiError
from kapstan.kube.leader import LeaderConfig, LeaderElector
from kapstan.local import Sandbox

pytestmark = pytest.mark.sandbox

CONFIG = LeaderConfig(lease_duration=3.0, renew_deadline=1.5, retry_period=0.2)


class Candidate:
    """An elector whose ``lead`` records when it started and stopped leading."""

    def __init__(self, client: Client, namespace: str, identity: str, kubeconfig: str) -> None:
        # The renewal thread connects its own client, as kapstan run's does.
        self.elector = LeaderElector(
            client, namespace, "kapstan", identity, CONFIG, connect=lambda: Client.connect(kubeconfig)
        )
        self.started: float | None = None
        self.stopped: float | None = None
        self.task = asyncio.create_task(self.elector.run(self._lead))

    async def _lead(self) -> None:
        self.started = time.monotonic()
        try:
            await asyncio.Event().wait()
        finally:
            self.stopped = time.monotonic()

    @property
    def leading(self) -> bool:
        return self.started is not None and self.stopped is None


def test_one_leader_at_a_time_with_handover(sandbox: Sandbox) -> None:
    asyncio.run(_scenario(str(sandbox.workload_kubeconfig)))


async def _scenario(kubeconfig: str) -> None:
    clients = [await Client.connect(kubeconfig) for _ in range(3)]
    namespace = await fresh_namespace(clients[0], "leader")
    first, second = (
        Candidate(clients[0], namespace, "first", kubeconfig),
        Candidate(clients[1], namespace, "second", kubeconfig),
    )
    await eventually("a leader", lambda: first.leading or second.leading)
    await asyncio.sleep(1.0)
    assert first.leading != second.leading, "exactly one candidate may lead"
    leader, follower = (first, second) if first.leading else (second, first)

    # A leader that shuts down releases the Lease: the follower takes over within a retry period or so,
    # far sooner than the lease duration.
    leader.task.cancel()
    released = time.monotonic()
    await eventually("the follower to take over", lambda: follower.leading, timeout=CONFIG.lease_duration)
    assert follower.started is not None and follower.started - released < 1.5
    lease = await clients[2].get(LEASES, "kapstan", namespace)
    assert lease["spec"]["holderIdentity"] == follower.elector.identity
    assert lease["spec"]["leaseTransitions"] >= 1

    # Cut the new leader off from the API server: it must step down after renew_deadline, and a third
    # candidate may lead only once the Lease has expired, i.e. after the step-down.
    async def unreachable(*_: Any, **__: Any) -> Any:
        raise ApiError("PUT leases: connection refused")

    follower.elector.client.replace = unreachable  # type: ignore[method-assign]
    third = Candidate(clients[2], namespace, "third", kubeconfig)
    await eventually("the cut-off leader to step down", lambda: follower.stopped is not None, timeout=5.0)
    await eventually("the third candidate to lead", lambda: third.leading, timeout=5.0)
    assert follower.stopped is not None and third.started is not None
    assert follower.stopped < third.started
    await asyncio.wait_for(follower.task, 1.0)  # run() returns once leadership is lost
    third.task.cancel()
    await asyncio.gather(third.task, return_exceptions=True)
