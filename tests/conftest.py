"""Shared fixtures: the `engine` fixture runs a test body once per scheduling engine
(docs/architecture.md#one-test-body-two-engines), and `sandbox` (`two_cluster_sandbox`: separate management
and workload API servers) is one session-wide local control plane for every folder that needs a real API
server (imported here once, so a full run starts one of each, not one per folder)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

sys.path.insert(0, str(Path(__file__).parent))

from kapstan.scheduling import ENGINES
from sandbox_fixture import sandbox, two_cluster_sandbox

__all__ = ["engine", "sandbox", "two_cluster_sandbox"]

# `HYPOTHESIS_PROFILE=deep` explores far more random snapshots than the default run.
_RELAXED = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
settings.register_profile("default", max_examples=300, deadline=None, suppress_health_check=_RELAXED)
settings.register_profile("deep", max_examples=5000, deadline=None, suppress_health_check=_RELAXED)
# CI replays a fixed set of examples, so a landing never depends on the draw; local runs explore.
settings.register_profile(
    "ci", max_examples=300, deadline=None, suppress_health_check=_RELAXED, derandomize=True
)
default_profile = "ci" if os.environ.get("CI") else "default"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", default_profile))


@pytest.fixture(params=sorted(ENGINES))
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "sandbox: needs the local Kubernetes + Cluster API sandbox (built from Go modules on first use)",
    )
    config.addinivalue_line(
        "markers",
        "image: runs the OCI image `make image` builds (`make image-test` builds it and runs these)",
    )
    config.addinivalue_line(
        "markers", "chaos: a chaos scenario (tests/chaos/): left out of make test, run by make chaos"
    )
    # kr8s warns about any server newer than the versions it was released against; ours is pinned.
    config.addinivalue_line("filterwarnings", "ignore:Kubernetes version .* is not supported:UserWarning")
