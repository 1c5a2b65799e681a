"""Pytest fixtures that run the sandbox for a test session.

Import them into a conftest (``from kapstan.local.fixture import sandbox, two_cluster_sandbox``). The
sandbox is built if needed, started once per session, and torn down at session end, when start-up
fails, on Ctrl-C (pytest finalizes fixtures on KeyboardInterrupt) and, as a last resort, at
interpreter exit. ``KAPSTAN_SKIP_SANDBOX=1`` skips the tests that use it.
"""

from __future__ import annotations

import atexit
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kapstan.local.sandbox import Sandbox

SKIP_ENV = "KAPSTAN_SKIP_SANDBOX"


def _session(tmp: Path, two_clusters: bool) -> Iterator[Sandbox]:
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"sandbox disabled by {SKIP_ENV}=1")
    sb = Sandbox(tmp / "sandbox", two_clusters=two_clusters)
    atexit.register(sb.down)  # idempotent; covers an interpreter that exits without finalizing fixtures
    sb.up()  # tears itself down if start-up fails
    try:
        yield sb
    finally:
        sb.down()
        atexit.unregister(sb.down)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """One API server that is both management and workload cluster."""
    yield from _session(tmp_path_factory.mktemp("kapstan-local"), two_clusters=False)


@pytest.fixture(scope="session")
def two_cluster_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """Separate management and workload API servers."""
    yield from _session(tmp_path_factory.mktemp("kapstan-local-2"), two_clusters=True)
