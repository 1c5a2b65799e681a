"""e2e fixtures: each test gets a ``KapstanRun`` (own namespace, Cluster, NodePool, operator process) on the
session sandbox, cleaned up afterwards. The run's timeline is printed as it happens, so ``pytest -s`` shows
what kapstan did, and a failed wait puts the timeline and the operator's log in the report."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from e2e_helpers import E2E

from kapstan.local import Sandbox
from kapstan.local.run import KapstanRun
from kapstan.local.timeline import format_entry


@pytest.fixture
def e2e(sandbox: Sandbox, request: pytest.FixtureRequest) -> Iterator[E2E]:
    yield from _harness(sandbox, request)


def _harness(sandbox: Sandbox, request: pytest.FixtureRequest) -> Iterator[E2E]:
    prefix = request.node.name.removeprefix("test_")[:24].rstrip("_").replace("_", "-")
    run = KapstanRun(sandbox, prefix, on_entry=lambda seconds, text: print(format_entry(seconds, text)))
    harness = E2E(run, asyncio.new_event_loop())
    harness(run.connect())
    try:
        yield harness
    finally:
        harness(run.cleanup())
        harness.loop.close()


@pytest.fixture
def e2e_two_clusters(two_cluster_sandbox: Sandbox, request: pytest.FixtureRequest) -> Iterator[E2E]:
    """As ``e2e``, on separate management and workload API servers."""
    yield from _harness(two_cluster_sandbox, request)
