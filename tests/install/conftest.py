"""Tests of the generated install manifests; ``*_sandbox`` modules apply them to a real API server
(``KAPSTAN_SKIP_SANDBOX=1`` skips those)."""

from __future__ import annotations

import pytest

from kapstan.local.fixture import sandbox

__all__ = ["sandbox"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "sandbox: needs the local Kubernetes + Cluster API sandbox")
    # kr8s warns about any server newer than the versions it was released against; ours is pinned.
    config.addinivalue_line("filterwarnings", "ignore:Kubernetes version .* is not supported:UserWarning")
