"""The e2e harness: a ``KapstanRun`` and the event loop its API clients belong to (the e2e and chaos
tests' fixtures are both made by ``harness``)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest

from kapstan.local import Sandbox, article
from kapstan.local.run import KapstanRun
from kapstan.local.timeline import format_entry

T = TypeVar("T")


@dataclass
class E2E:
    run: KapstanRun
    loop: asyncio.AbstractEventLoop

    def __call__(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the loop the run's API clients belong to."""
        return self.loop.run_until_complete(coroutine)


def harness(sandbox: Sandbox, request: pytest.FixtureRequest) -> Iterator[E2E]:
    """A ``KapstanRun`` named after the test, connected, its timeline printed as it happens, cleaned up
    afterwards whatever happened."""
    prefix = request.node.name.removeprefix("test_")[:24].rstrip("_").replace("_", "-")
    run = KapstanRun(sandbox, prefix, on_entry=lambda seconds, text: print(format_entry(seconds, text)))
    made = E2E(run, asyncio.new_event_loop())
    made(run.connect())
    try:
        yield made
    finally:
        made(run.cleanup())
        made.loop.close()


def inflate_running(e2e: E2E, md: str = "capi-ovh-karpenter") -> None:
    """The article's flow up to its first result: MD ``md`` of c3-4 whose template lacks the unregistered
    taint, the node agent and ``inflate`` (2 pods of 500m, hostname anti-affinity), kapstan started, both
    pods Running."""
    run = e2e.run
    ns = run.namespace
    e2e(
        run.setup(
            article.standalone(ns, run.cluster, {md: "c3-4"}, tainted=False),
            [
                article.node_agent(ns, run.id),
                article.deployment("inflate", ns, run.id, 2, "500m", anti_affinity=True),
            ],
        )
    )
    run.start_operator()

    async def both_running() -> bool:
        return await run.running_pods("inflate") == 2

    e2e(run.wait_for("both inflate pods Running", both_running, 180))
