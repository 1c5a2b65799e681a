"""The controller loop on a fake clock: failures back off per key, success resets the backoff,
``requeue_after`` brings a key back, and a key is never reconciled twice at once."""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any

import pytest

from kapstan.kube.backoff import Backoff
from kapstan.kube.clock import FakeClock
from kapstan.kube.controller import TRANSIENT_CAP, Controller, Result
from kapstan.kube.errors import ApiError
from kapstan.kube.store import Event

DONE = Result()
"""A reconcile that asks for nothing more."""


def event(name: str) -> Event:
    return Event("ADDED", {"metadata": {"name": name, "namespace": "ns"}})


async def settle() -> None:
    for _ in range(50):
        await asyncio.sleep(0)


def _attempts_while_failing(
    failures: int,
    error: Exception,
    *,
    ceiling: float = 1000.0,
    seconds: int = 120,
    then: Result = DONE,
) -> list[float]:
    """When a controller with a backoff of 1 s doubling to ``ceiling`` tries key ns/a whose first
    ``failures`` reconciles raise ``error`` and the next return ``then``, over ``seconds`` of a fake clock;
    the key's retries must be forgotten at the end."""

    async def scenario() -> list[float]:
        clock = FakeClock(start=0.0)
        calls: list[float] = []

        async def reconcile(key: str) -> Result:
            calls.append(clock.now())
            if len(calls) <= failures:
                raise error
            return then

        controller = Controller("test", reconcile, backoff=Backoff(initial=1.0, maximum=ceiling), clock=clock)
        task = asyncio.create_task(controller.run())
        controller.enqueue(event("a"))
        for _ in range(seconds):
            await settle()
            clock.advance(1.0)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert controller.queue.retries("ns/a") == 0
        return calls

    return asyncio.run(scenario())


def test_failures_back_off_then_success_resets_and_requeues(caplog: pytest.LogCaptureFixture) -> None:
    calls = _attempts_while_failing(
        2,
        RuntimeError("machine template not found"),
        ceiling=60.0,
        seconds=40,
        then=Result(requeue_after=30.0),
    )
    # fail at 0, retry after 1 s, fail, retry after 2 s, succeed at 3, come back 30 s later
    assert calls == [0.0, 1.0, 3.0, 33.0]
    assert "reconciling ns/a failed (retry 1)" in caplog.text


def test_one_key_is_never_reconciled_twice_at_once() -> None:
    async def scenario() -> dict[str, int]:
        running: set[str] = set()
        counts: dict[str, int] = {}
        release = asyncio.Event()

        async def reconcile(key: str) -> Result:
            assert key not in running, f"{key} reconciled concurrently"
            running.add(key)
            counts[key] = counts.get(key, 0) + 1
            await release.wait()
            running.discard(key)
            return Result()

        controller = Controller("test", reconcile, workers=4, clock=FakeClock())
        task = asyncio.create_task(controller.run())
        controller.enqueue(event("a"))
        controller.enqueue(event("b"))
        await settle()
        assert running == {"ns/a", "ns/b"}, "different keys run in parallel"
        for _ in range(5):  # changes while a is being reconciled: one more reconcile, not five
            controller.enqueue(event("a"))
        await settle()
        release.set()
        await settle()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return counts

    assert asyncio.run(scenario()) == {"ns/a": 2, "ns/b": 1}


def test_run_shuts_the_queue_down_when_cancelled() -> None:
    async def scenario() -> Any:
        async def reconcile(key: str) -> Result:
            return Result()

        controller = Controller("test", reconcile, clock=FakeClock())
        task = asyncio.create_task(controller.run())
        await settle()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        controller.enqueue(event("late"))
        return len(controller.queue)

    assert asyncio.run(scenario()) == 0


def test_a_server_that_does_not_answer_is_retried_every_few_seconds_not_backed_off_for_minutes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # the server is away for about a minute
    away = ApiError("GET machinedeployments ns/pool: ConnectError: All connection attempts failed")
    calls = _attempts_while_failing(12, away)
    gaps = [later - earlier for earlier, later in itertools.pairwise(calls)]
    assert len(calls) == 13 and max(gaps) <= TRANSIENT_CAP  # a non-answer never backs off beyond the cap
    assert calls[-1] <= 60.0  # the uncapped backoff would have waited 1+2+...+2048 s
    assert "failed (retry" not in caplog.text  # one warning line each, no traceback
    assert "ConnectError: All connection attempts failed; trying again" in caplog.text


def test_a_conflict_is_read_again_soon_in_one_line_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # another writer keeps winning the race for a while
    conflict = ApiError("PATCH nodes n1: the object has been modified", status=409, reason="Conflict")
    with caplog.at_level(logging.INFO):
        calls = _attempts_while_failing(8, conflict)
    gaps = [later - earlier for earlier, later in itertools.pairwise(calls)]
    assert len(calls) == 9 and max(gaps) <= TRANSIENT_CAP
    assert "Traceback" not in caplog.text and "failed (retry" not in caplog.text
    assert caplog.text.count("the object has been modified; reading it again") == 8
