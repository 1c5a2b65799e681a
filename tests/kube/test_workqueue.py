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
