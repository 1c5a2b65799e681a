"""e2e fixtures: each test gets a ``KapstanRun`` (own namespace, Cluster, NodePool, operator process) on the
session sandbox, cleaned up afterwards. The run's timeline is printed as it happens, so ``pytest -s`` shows
what kapstan did, and a failed wait puts the timeline and the operator's log in the report."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from e2e_helpers import E2E, harness

from kapstan.local import Sandbox


@pytest.fixture
def e2e(sandbox: Sandbox, request: pytest.FixtureRequest) -> Iterator[E2E]:
    yield from harness(sandbox, request)


@pytest.fixture
def e2e_two_clusters(two_cluster_sandbox: Sandbox, request: pytest.FixtureRequest) -> Iterator[E2E]:
    """As ``e2e``, on separate management and workload API servers."""
    yield from harness(two_cluster_sandbox, request)
