"""The fuzzer: seeded mutations of the scenario manifests through `simulate` on both engines.

Every input must end as a clean one-line rejection naming the object or field, or as a plan both engines
agree on and the validator accepts; anything else fails with the seed and the input printed. CI runs a
fixed set of seeds within a bounded time; `KAPSTAN_FUZZ=deep` runs 20,000 (or `KAPSTAN_FUZZ_INPUTS`)
from a seed of its own (`KAPSTAN_FUZZ_SEED`), with 10 s per input counted as a hang.
"""

from __future__ import annotations

import os
import time
from collections import Counter

import pytest
from harness import FAILURES, Runner
from mutations import mutate

from kapstan.scheduling import ENGINES

pytestmark = pytest.mark.skipif("rust" not in ENGINES, reason="the Rust extension is not built")

DEEP = os.environ.get("KAPSTAN_FUZZ") == "deep"
INPUTS = int(os.environ.get("KAPSTAN_FUZZ_INPUTS", 20_000 if DEEP else 2_000))
FIRST_SEED = int(os.environ.get("KAPSTAN_FUZZ_SEED", time.time_ns() % 10**9 if DEEP else 0))
TIMEOUT = 10.0 if DEEP else 30.0
"""Seconds per input; CI allows more because the machine is shared, a hang is still a hang."""
CI_BUDGET = 90.0
"""CI's run stops taking new inputs after this many seconds (then checks what it ran)."""


def test_mutated_manifests_are_rejected_cleanly_or_planned_alike() -> None:
    runner = Runner(TIMEOUT)
    counts: Counter[str] = Counter()
    failures: list[str] = []
    started = time.monotonic()
    try:
        for seed in range(FIRST_SEED, FIRST_SEED + INPUTS):
            if not DEEP and time.monotonic() - started > CI_BUDGET:
                break
            data = mutate(seed)
            outcome = runner.run(data)
            counts[outcome.kind] += 1
            if outcome.kind in FAILURES and len(failures) < 5:
                shown = data[:3000].decode("utf-8", "backslashreplace")
                failures.append(f"seed {seed}: {outcome.kind}\n{outcome.detail}\n--- input ---\n{shown}")
    finally:
        runner.close()
    elapsed = time.monotonic() - started
    print(f"fuzz: {sum(counts.values())} inputs from seed {FIRST_SEED} in {elapsed:.1f} s: {dict(counts)}")
    assert not failures, "\n\n".join(failures)
    assert sum(counts.values()) >= min(INPUTS, 500), counts  # the budget allowed a meaningful run
    assert counts["planned"] and counts["rejected"], counts  # both outcome classes were exercised
