"""The work queue de-duplicates keys, never hands one key to two workers, and backs off per key."""

from __future__ import annotations

import asyncio

import pytest

from kapstan.kube.backoff import Backoff
from kapstan.kube.clock import FakeClock
from kapstan.kube.workqueue import ShutDown, WorkQueue


def make_queue(clock: FakeClock | None = None) -> WorkQueue[str]:
    return WorkQueue(clock=clock or FakeClock(), backoff=Backoff(initial=1.0, maximum=8.0))


def drain(queue: WorkQueue[str]) -> list[str]:
    keys = []
    while (key := queue.try_get()) is not None:
        keys.append(key)
        queue.done(key)
    return keys


def test_adding_a_queued_key_again_does_nothing() -> None:
    queue = make_queue()
    for key in ["a", "b", "a", "c", "b"]:
        queue.add(key)
    assert drain(queue) == ["a", "b", "c"]


def test_a_key_added_while_processing_comes_back_once_after_done() -> None:
    queue = make_queue()
    queue.add("a")
    assert queue.try_get() == "a"
    queue.add("a")
    queue.add("a")
    assert queue.try_get() is None, "a key being processed must not reach a second worker"
    queue.done("a")
    assert drain(queue) == ["a"]


def test_rate_limited_retries_back_off_exponentially_until_forgotten() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    waits = []
    for _ in range(5):
        queue.add_rate_limited("a")
        waited = 0.0
        while queue.try_get() is None:
            clock.advance(0.5)
            waited += 0.5
        queue.done("a")
        waits.append(waited)
    assert waits == [1.0, 2.0, 4.0, 8.0, 8.0]
    assert queue.retries("a") == 5
    queue.forget("a")
    assert queue.retries("a") == 0
    queue.add_rate_limited("a")
    clock.advance(1.0)
    assert queue.try_get() == "a"


def test_backoff_is_per_key() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    for _ in range(3):
        queue.add_rate_limited("slow")
    queue.add_rate_limited("fresh")
    assert queue.retries("slow") == 3 and queue.retries("fresh") == 1
    clock.advance(1.0)
    # A key already waiting keeps its earliest due time, so slow's three retries are one reconcile.
    assert drain(queue) == ["slow", "fresh"]
    clock.advance(10.0)
    assert drain(queue) == []
    queue.add_rate_limited("slow")
    clock.advance(7.9)
    assert drain(queue) == []
    clock.advance(0.1)
    assert drain(queue) == ["slow"]  # its fourth failure waits 8 s


async def until_sleeping(clock: FakeClock) -> None:
    """Let other tasks run until one of them waits on ``clock``."""
    for _ in range(100):
        if clock.sleepers:
            return
        await asyncio.sleep(0)
    raise AssertionError("nothing is waiting on the clock")


def test_get_waits_for_a_delayed_key_on_the_clock() -> None:
    async def scenario() -> None:
        clock = FakeClock()
        queue = make_queue(clock)
        queue.add_after("later", 10.0)
        getter = asyncio.create_task(queue.get())
        await until_sleeping(clock)
        clock.advance(9.0)
        await asyncio.sleep(0)
        assert not getter.done()
        clock.advance(1.0)
        assert await asyncio.wait_for(getter, 1.0) == "later"

        getter = asyncio.create_task(queue.get())
        await asyncio.sleep(0)
        queue.add("now")
        assert await asyncio.wait_for(getter, 1.0) == "now"

        getter = asyncio.create_task(queue.get())
        await asyncio.sleep(0)
        queue.shut_down()
        with pytest.raises(ShutDown):
            await asyncio.wait_for(getter, 1.0)

    asyncio.run(scenario())


def test_backoff_delays_are_capped() -> None:
    backoff = Backoff(initial=0.005, maximum=1000.0)
    assert backoff.delay(0) == 0.005
    assert backoff.delay(3) == 0.04
    assert backoff.delay(30) == 1000.0
    assert backoff.delay(10_000) == 1000.0


class CountingQueue(WorkQueue[str]):
    """Counts the looks workers take at the queue: each is one wake-up of a waiting worker."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock=clock, backoff=Backoff(initial=1.0, maximum=8.0))
        self.looks = 0

    def try_get(self) -> str | None:
        self.looks += 1
        return super().try_get()


async def waiting_workers(queue: WorkQueue[str], count: int) -> list[asyncio.Task[str]]:
    workers = [asyncio.create_task(queue.get()) for _ in range(count)]
    await settle()
    return workers


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def test_a_ready_key_wakes_one_waiting_worker_not_all() -> None:
    async def scenario() -> None:
        clock = FakeClock()
        queue = CountingQueue(clock)
        workers = await waiting_workers(queue, 10)
        queue.looks = 0
        queue.add("a")
        queue.add("b")
        await settle()
        assert queue.looks <= 2, "each ready key wakes one of the ten waiting workers, not all of them"
        assert sorted(w.result() for w in workers if w.done()) == ["a", "b"]

        queue.add_after("later", 5.0)
        queue.add_after("later-too", 5.0)
        await settle()
        queue.looks = 0
        clock.advance(5.0)
        await settle()
        assert queue.looks <= 2, "two delayed keys coming due wake two workers, not all of them"
        assert sum(w.done() for w in workers) == 4

        queue.shut_down()
        await settle()
        assert all(w.done() for w in workers), "shutting down wakes every waiting worker"
        assert sorted(type(w.exception()).__name__ for w in workers) == ["NoneType"] * 4 + ["ShutDown"] * 6

    asyncio.run(scenario())


def test_a_worker_cancelled_after_its_wake_up_passes_the_key_to_another() -> None:
    async def scenario() -> None:
        queue = make_queue()
        first, second = await waiting_workers(queue, 2)
        queue.add("a")
        first.cancel()  # woken for "a" but cancelled before it ran
        await settle()
        assert first.cancelled()
        assert second.done() and second.result() == "a"

    asyncio.run(scenario())


def test_an_earlier_delayed_key_rearms_the_timer() -> None:
    async def scenario() -> None:
        clock = FakeClock()
        queue = make_queue(clock)
        (worker,) = await waiting_workers(queue, 1)
        queue.add_after("late", 10.0)
        queue.add_after("early", 2.0)
        await settle()
        clock.advance(2.0)
        await settle()
        assert worker.done() and worker.result() == "early"

    asyncio.run(scenario())
