"""Shared fixtures: the `engine` fixture runs a test body once per scheduling engine (STYLE.md habit 6)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from kapstan.scheduling import ENGINES


@pytest.fixture(params=sorted(ENGINES))
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)
