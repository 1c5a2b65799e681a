"""Scheduling: one interface (`solve(snapshot) -> Plan`), two engines (Rust core and pure Python).

The Rust engine is used when the compiled extension provides it; `KAPSTAN_ENGINE=python` or an explicit
`engine="python"` selects the pure-Python twin.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from kapstan.scheduling import python_engine
from kapstan.scheduling.model import Plan, Snapshot

ENGINES: dict[str, Callable[[Snapshot], Plan]] = {"python": python_engine.solve}
try:
    from kapstan.scheduling import rust_engine
except ImportError:  # the compiled extension is missing: the pure-Python twin serves alone
    pass
else:
    ENGINES["rust"] = rust_engine.solve


def default_engine() -> str:
    requested = os.environ.get("KAPSTAN_ENGINE", "").strip()
    if requested:
        return requested
    return "rust" if "rust" in ENGINES else "python"


def solve(snapshot: Snapshot, engine: str | None = None) -> Plan:
    """Plan new NodeClaims for the snapshot's pending pods with the named engine (default: the fastest)."""
    name = engine or default_engine()
    try:
        run = ENGINES[name]
    except KeyError:
        raise ValueError(
            f"unknown scheduling engine {name!r}; available: {', '.join(sorted(ENGINES))}"
        ) from None
    return run(snapshot)
