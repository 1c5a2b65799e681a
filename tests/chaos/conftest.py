"""Chaos fixtures: each scenario gets a ``KapstanRun`` on the session sandbox, as the e2e tests do; that
sandbox's API server audits the requests of one ServiceAccount (``bench.live.audit``), which a scenario
runs kapstan as when it counts kapstan's watches and lists (scenario 5). Nobody else's requests are logged."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from bench.live import audit

from e2e.e2e_helpers import E2E, harness
from kapstan.local import Sandbox
from sandbox_fixture import session


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    tmp = tmp_path_factory.mktemp("kapstan-chaos")
    policy = audit.write_policy(tmp / "audit-policy.yaml", watch_starts=True)
    yield from session(tmp, two_clusters=False, audit_policy=policy)


@pytest.fixture
def chaos(sandbox: Sandbox, request: pytest.FixtureRequest) -> Iterator[E2E]:
    yield from harness(sandbox, request)
