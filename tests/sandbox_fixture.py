"""The pytest face of the local sandbox: session-wide ``sandbox`` and ``two_cluster_sandbox`` fixtures.

The sandbox logic itself (start, stop, clean up however the session ends) is the package's
``kapstan.local.sandbox.running``; this module only adds what is pytest's: session scope, a temporary
directory, and ``KAPSTAN_SKIP_SANDBOX=1`` turning the tests that need a sandbox into skips. pytest finalizes
fixtures on Ctrl-C, so an interrupted run unwinds ``running`` and stops every process.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from kapstan.local.sandbox import Sandbox, running

SKIP_ENV = "KAPSTAN_SKIP_SANDBOX"


def skip_unless_sandbox() -> None:
    """Skip the calling test when ``KAPSTAN_SKIP_SANDBOX=1`` turns the sandbox tier off."""
    if os.environ.get(SKIP_ENV) == "1":
        pytest.skip(f"sandbox disabled by {SKIP_ENV}=1")


def session(tmp: Path, two_clusters: bool, audit_policy: Path | None = None) -> Iterator[Sandbox]:
    """A sandbox under ``tmp`` for the session (``audit_policy``: its API servers audit with it)."""
    skip_unless_sandbox()
    try:
        with running(tmp / "sandbox", two_clusters=two_clusters, audit_policy=audit_policy) as sandbox:
            yield sandbox
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """One API server that is both management and workload cluster."""
    yield from session(tmp_path_factory.mktemp("kapstan-local"), two_clusters=False)


@pytest.fixture(scope="session")
def two_cluster_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """Separate management and workload API servers."""
    yield from session(tmp_path_factory.mktemp("kapstan-local-2"), two_clusters=True)
