"""bench.live survives a slow API server: a read that keeps failing is a sample missing, not the end of the
run (the 3,000-pod run crashed at T+229 s on its poll of every pod timing out)."""

from __future__ import annotations

import asyncio

import pytest
from bench.live import observe, supervise, watch

from kapstan.kube.errors import ApiError


def _flaky(failures: int, value: object) -> tuple[list[int], object]:
    calls = [0]

    async def read() -> object:
        calls[0] += 1
        if calls[0] <= failures:
            raise ApiError("GET pods: ReadTimeout: timed out")
        return value

    return calls, read


def test_a_read_that_times_out_is_tried_again_then_given_up_as_a_missing_sample(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watch, "SAMPLE_PAUSE", 0.0)
    calls, read = _flaky(1, {"web": 1.0})
    assert asyncio.run(watch.sample("the Deployments", read)) == {"web": 1.0}  # type: ignore[arg-type]
    assert calls == [2]
    calls, read = _flaky(99, {"web": 1.0})
    assert asyncio.run(watch.sample("the Deployments", read)) is None  # type: ignore[arg-type]
    assert calls == [watch.SAMPLE_TRIES]


def test_the_accounting_read_outlasts_failed_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    exact = observe.Accounting(node_claims=3, machines=3, nodes=3, replicas=3)
    calls, read = _flaky(2, exact)
    monkeypatch.setattr(observe, "accounting", lambda *args: read())

    async def no_pause(seconds: float) -> None:
        return None

    monkeypatch.setattr(observe.asyncio, "sleep", no_pause)
    found, _ = asyncio.run(observe.accounting_at_rest(None, "ns", "pool", "run"))  # type: ignore[arg-type]
    assert found == exact
    assert calls == [3]


class _Exiting:
    """An operator process that exits once (a lost Lease) and is started again."""

    name = "kapstan-live"

    def __init__(self) -> None:
        self.pid = 1
        self.starts = 0
        self.running = False

    def start(self) -> None:
        self.starts += 1
        self.running = True

    def stop(self) -> None:
        self.running = False


def test_an_operator_that_exits_is_started_again_and_the_restart_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The 3,000-pod run's one replica lost its Lease to a slow API server at T+150 s and exited, and the
    run waited for nobody; its Deployment's kubelet would have started it again."""
    monkeypatch.setattr(supervise, "LOOK_EVERY", 0.0)
    monkeypatch.setattr(supervise.operator_costs, "cpu_seconds", lambda pid: 2.0)
    monkeypatch.setattr(supervise.operator_costs, "peak_rss_mib", lambda pid: 100.0)
    process = _Exiting()

    async def scenario() -> supervise.Supervised:
        supervised = supervise.Supervised(process).start()  # type: ignore[arg-type]
        for _ in range(5):
            await asyncio.sleep(0)
        await supervised.stop()
        return supervised

    supervised = asyncio.run(scenario())
    assert process.starts == 1 and len(supervised.restarts) == 1
    assert supervised.cpu_seconds() == 2.0
