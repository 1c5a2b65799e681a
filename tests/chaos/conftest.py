"""Chaos fixtures: each scenario gets a ``KapstanRun`` on the session sandbox, as the e2e tests do."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from e2e.e2e_helpers import E2E, harness
from kapstan.local import Sandbox


@pytest.fixture
def chaos(sandbox: Sandbox, request: pytest.FixtureRequest) -> Iterator[E2E]:
    yield from harness(sandbox, request)
