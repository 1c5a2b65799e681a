"""The sandbox: a real Kubernetes control plane and Cluster API on one machine, for tests and the demo.

``build`` compiles the binaries from Go modules into a cache, ``sandbox`` runs them (``running`` for the
length of a ``with`` block; the test suite's pytest fixtures in ``tests/sandbox_fixture.py`` are built on
it). Nothing here is used by ``kapstan run``, and nothing here imports pytest.
"""

import os
from pathlib import Path

from kapstan.local.build import Artifacts, BuildError, build
from kapstan.local.procs import SandboxError
from kapstan.local.sandbox import Sandbox, default_dir, running

# The sandbox's Go modules travel with the package as ``sandbox-go``: a symlink to the repo's ``sandbox/``
# in a checkout, the files themselves in a wheel (pyproject's maturin ``include``), so an installed kapstan
# can `local build` and `local up`. build.py looks beside a checkout unless KAPSTAN_SANDBOX_SRC names the
# sources; naming the shipped copy here instead of editing build.py keeps build.py's bytes, which are part
# of the cache key, so a wheel and the checkout it came from find the same built binaries.
_SHIPPED_SOURCES = Path(__file__).resolve().parent / "sandbox-go"
if (_SHIPPED_SOURCES / "go.mod").exists():
    os.environ.setdefault("KAPSTAN_SANDBOX_SRC", str(_SHIPPED_SOURCES.resolve()))

__all__ = ["Artifacts", "BuildError", "Sandbox", "SandboxError", "build", "default_dir", "running"]
