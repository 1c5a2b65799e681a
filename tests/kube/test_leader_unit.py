"""Leader election decisions on a fake clock and an in-memory Lease: expiry is judged by the candidate's
own observation time, the holder renews, and a racing update loses on the resourceVersion. The holder
renews from a thread of its own, so a loop blocked past the renew deadline keeps the Lease, and one
blocked past the lease duration loses it."""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from typing import Any

from kapstan.kube.client import Resource
from kapstan.kube.clock import FakeClock
from kapstan.kube.errors import ApiError
from kapstan.kube.leader import LeaderConfig, LeaderElector

CONFIG = LeaderConfig(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)


class LeaseApi:
    """One Lease with optimistic locking, as the API server keeps it."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        if self.lease is None:
            raise ApiError("GET leases: not found", status=404)
        return copy.deepcopy(self.lease)

    async def create(self, resource: Resource, body: dict[str, Any]) -> dict[str, Any]:
        if self.lease is not None:
            raise ApiError("POST leases: already exists", status=409)
        return self._store(body)

    async def replace(self, resource: Resource, body: dict[str, Any]) -> dict[str, Any]:
        if body["metadata"].get("resourceVersion") != str(self.version):
            raise ApiError("PUT leases: conflict", status=409)
        return self._store(body)

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.lease)

    @property
    def holder(self) -> str:
        return "" if self.lease is None else str(self.lease["spec"]["holderIdentity"])


def electors(api: LeaseApi, clock: FakeClock, *names: str) -> list[LeaderElector]:
    return [LeaderElector(api, "ns", "kapstan", n, CONFIG, clock=clock) for n in names]  # type: ignore[arg-type]


def test_a_lease_is_taken_only_after_it_went_unrenewed_for_its_duration() -> None:
    async def scenario() -> None:
        api, clock = LeaseApi(), FakeClock()
        a, b = electors(api, clock, "a", "b")
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()  # b first sees a's lease now

        clock.advance(10.0)
        assert await a.try_acquire_or_renew()  # a renews: b's observation starts over
        clock.advance(8.0)
        assert not await b.try_acquire_or_renew()
        assert a.is_leader

        clock.advance(8.0)
        assert not a.is_leader, "a must consider itself deposed after renew_deadline"
        assert not await b.try_acquire_or_renew(), "b first saw the renewal 8 s ago, not 16"
        clock.advance(8.0)
        assert await b.try_acquire_or_renew()
        assert api.holder == "b"
        assert api.lease is not None and api.lease["spec"]["leaseTransitions"] == 1
        assert not await a.try_acquire_or_renew()  # a now sees b's fresh lease

    asyncio.run(scenario())


def test_a_released_lease_is_free_at_once() -> None:
    async def scenario() -> None:
        api, clock = LeaseApi(), FakeClock()
        a, b = electors(api, clock, "a", "b")
        assert await a.try_acquire_or_renew()
        assert not await b.try_acquire_or_renew()
        await a.release()
        assert not a.is_leader
        assert await b.try_acquire_or_renew()

    asyncio.run(scenario())


def test_of_two_racing_updates_one_wins() -> None:
    async def scenario() -> None:
        api, clock = LeaseApi(), FakeClock()
        a, b = electors(api, clock, "a", "b")
        await api.create(
            Resource("coordination.k8s.io", "v1", "leases", "Lease"),
            {"metadata": {"name": "kapstan", "namespace": "ns"}, "spec": {"holderIdentity": ""}},
        )
        results = await asyncio.gather(a.try_acquire_or_renew(), b.try_acquire_or_renew())
        assert sorted(results) == [False, True]
        assert api.holder == ("a" if results[0] else "b")

    asyncio.run(scenario())


def test_run_leads_until_renewal_fails_then_returns() -> None:
    async def scenario() -> None:
        api, clock = LeaseApi(), FakeClock()
        (a,) = electors(api, clock, "a")
        task, stopped = await _leading(a)
        for _ in range(3):  # renewals keep it leading
            await _settle()
            clock.advance(CONFIG.retry_period)
        assert not stopped.is_set()

        async def unreachable(*_: Any, **__: Any) -> Any:
            raise ApiError("PUT leases: connection refused")

        api.replace = unreachable  # type: ignore[method-assign]
        for _ in range(6):  # 12 s of failed renewals > renew_deadline
            await _settle()
            clock.advance(CONFIG.retry_period)
        await asyncio.wait_for(task, 1.0)
        assert stopped.is_set()

    asyncio.run(scenario())


async def _leading(elector: Any) -> tuple[asyncio.Task[None], asyncio.Event]:
    """The elector running until it leads, with a leader function that waits forever; the Event is set
    once that function is stopped."""
    leading = asyncio.Event()
    stopped = asyncio.Event()

    async def lead() -> None:
        leading.set()
        try:
            await asyncio.Event().wait()
        finally:
            stopped.set()

    task = asyncio.create_task(elector.run(lead))
    await asyncio.wait_for(leading.wait(), 1.0)
    return task, stopped


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_a_renewal_the_api_server_does_not_answer_ends_leading_at_the_renew_deadline() -> None:
    """The request timeout (30 s) outlasts the Lease (15 s): a renewal left waiting on it would keep the
    controllers running after another replica may have taken over."""

    async def scenario() -> None:
        api, clock = LeaseApi(), FakeClock()
        (a,) = electors(api, clock, "a")
        task, stopped = await _leading(a)

        async def no_answer(*_: Any, **__: Any) -> Any:
            await asyncio.Event().wait()

        api.get = no_answer  # type: ignore[method-assign]
        await _settle()
        clock.advance(CONFIG.retry_period)  # the renewal starts and hangs
        await _settle()
        clock.advance(CONFIG.renew_deadline - CONFIG.retry_period - 0.5)
        await _settle()
        assert not stopped.is_set(), "still within the renew deadline"
        clock.advance(1.0)
        await asyncio.wait_for(task, 1.0)
        assert stopped.is_set()
        assert not a.is_leader

    asyncio.run(scenario())


RENEWAL_THREAD = "lease ns/kapstan renewal"


def _advance_blocked(clock: FakeClock, api: LeaseApi, elector: LeaderElector, seconds: float) -> None:
    """Advance ``clock`` by ``seconds`` without letting the calling loop run (as a long computation on
    it would), one retry period at a time, each time waiting (in real time) for the renewal thread to
    renew or to stop renewing."""
    while seconds > 0:
        step = min(CONFIG.retry_period, seconds)
        seconds -= step
        version = api.version
        clock.advance(step)
        if step < CONFIG.retry_period:
            time.sleep(0.1)  # not a renewal tick: give the thread a moment to do anything it would
            continue
        deadline = time.monotonic() + 5.0
        while api.version == version and elector.is_leader:
            assert time.monotonic() < deadline, "the renewal thread neither renewed nor stopped"
            time.sleep(0.005)


def test_a_loop_blocked_past_the_renew_deadline_keeps_the_lease() -> None:
    async def scenario() -> None:
        api, clock = LeaseApi(), FakeClock()
        (a,) = electors(api, clock, "a")
        task, stopped = await _leading(a)
        await _settle()
        acquired = api.version
        _advance_blocked(clock, api, a, CONFIG.renew_deadline + 1.0)
        assert api.version == acquired + 5, "renewed at every retry period while the loop was blocked"
        assert a.is_leader
        await _settle()
        assert not stopped.is_set() and not task.done()

        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert stopped.is_set()
        assert api.holder == "", "shutting down releases the Lease"
        assert RENEWAL_THREAD not in {t.name for t in threading.enumerate()}, "the thread is joined"

    asyncio.run(scenario())


def test_a_loop_blocked_past_the_lease_duration_loses_the_lease() -> None:
    """A wedged loop must not keep the Lease: the thread stops renewing once the loop's heartbeat is
    older than the lease duration, and the loop steps down when it runs again."""

    async def scenario() -> None:
        api, clock = LeaseApi(), FakeClock()
        a, b = electors(api, clock, "a", "b")
        task, stopped = await _leading(a)
        await _settle()
        acquired = api.version
        _advance_blocked(clock, api, a, CONFIG.lease_duration + CONFIG.retry_period)
        assert api.version == acquired + 7, "renewals up to the lease duration, then none"
        assert not a.is_leader
        await asyncio.wait_for(task, 1.0)
        assert stopped.is_set()
        assert RENEWAL_THREAD not in {t.name for t in threading.enumerate()}

        assert not await b.try_acquire_or_renew()  # a's Lease is left to expire, not released
        clock.advance(CONFIG.lease_duration)
        assert await b.try_acquire_or_renew()

    asyncio.run(scenario())
