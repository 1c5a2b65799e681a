"""Which Go sources the sandbox is built from: the copy that travels with the package.

The sandbox's Go modules ship as ``kapstan/local/sandbox-go``: a symlink to the repository's ``sandbox/``
in a checkout, the files themselves in a wheel (pyproject's maturin ``include``), so an installed kapstan
can ``local build`` and ``local up``. ``build.py`` finds sources beside a checkout or where
``KAPSTAN_SANDBOX_SRC`` says, and its own bytes are part of the cache key, so teaching it the shipped path
would make every existing cache miss (a cold 14-minute build, and the checkout's binaries pruned). The
shipped path is handed to it instead, through that variable, for the length of one call, by the callers
that build: ``kapstan local build``, ``Sandbox.up`` and the demo.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# By name: the package exports this module's ``build``, which hides the module ``kapstan.local.build``.
from kapstan.local.build import Artifacts, source_dir
from kapstan.local.build import artifacts as artifacts_of
from kapstan.local.build import build as build_cached

SOURCES_ENV = "KAPSTAN_SANDBOX_SRC"
SHIPPED = Path(__file__).resolve().parent / "sandbox-go"

_lock = threading.Lock()


def sandbox_sources() -> Path:
    """``$KAPSTAN_SANDBOX_SRC`` when set, else the package's own copy (resolved: in a checkout the
    symlink's target, the same ``sandbox/`` build.py would find), else build.py's answer (which names
    what is missing)."""
    named = os.environ.get(SOURCES_ENV)
    if named:
        return Path(named)
    if (SHIPPED / "go.mod").exists():
        return SHIPPED.resolve()
    return source_dir()


@contextmanager
def _sources_named() -> Iterator[None]:
    """``SOURCES_ENV`` names ``sandbox_sources()`` inside the block, and is what it was after it."""
    with _lock:
        before = os.environ.get(SOURCES_ENV)
        os.environ[SOURCES_ENV] = str(sandbox_sources())
        try:
            yield
        finally:
            if before is None:
                del os.environ[SOURCES_ENV]
            else:
                os.environ[SOURCES_ENV] = before


def artifacts() -> Artifacts:
    """Where the build of ``sandbox_sources()`` lives, built or not."""
    return artifacts_of(sandbox_sources())


def build(force: bool = False) -> Artifacts:
    """``build.build`` on ``sandbox_sources()``: a cache hit when those binaries are built."""
    with _sources_named():
        return build_cached(force)
