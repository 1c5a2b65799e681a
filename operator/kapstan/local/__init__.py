"""The sandbox: a real Kubernetes control plane and Cluster API on one machine, for tests and the demo.

``build`` compiles the binaries from Go modules into a cache (from ``sandbox_sources()``, the copy that
ships with the package), ``sandbox`` runs them (``running`` for the length of a ``with`` block; the test
suite's pytest fixtures in ``tests/sandbox_fixture.py`` are built on it). Nothing here is used by ``kapstan run``, and nothing here imports pytest.
"""

from kapstan.local.build import Artifacts, BuildError
from kapstan.local.procs import SandboxError
from kapstan.local.sandbox import Sandbox, default_dir, running
from kapstan.local.sources import build, sandbox_sources

__all__ = [
    "Artifacts",
    "BuildError",
    "Sandbox",
    "SandboxError",
    "build",
    "default_dir",
    "running",
    "sandbox_sources",
]
