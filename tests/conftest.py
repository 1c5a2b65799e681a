"""Shared fixtures: the `engine` fixture runs a test body once per scheduling engine (STYLE.md habit 6)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

from kapstan.scheduling import ENGINES

# `HYPOTHESIS_PROFILE=deep` explores far more random snapshots than the default run.
_RELAXED = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
settings.register_profile("default", max_examples=300, deadline=None, suppress_health_check=_RELAXED)
settings.register_profile("deep", max_examples=5000, deadline=None, suppress_health_check=_RELAXED)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


@pytest.fixture(params=sorted(ENGINES))
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)
