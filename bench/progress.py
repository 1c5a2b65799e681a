"""The line `bench.run` and `bench.peers` print as each measurement finishes, so a long run shows where it is."""

from __future__ import annotations

from kapstan.bench.measure import Result


def print_progress(r: Result, engine_width: int) -> None:
    """One line for ``r``; ``engine_width`` fits the longest engine or system name the run measures."""
    if r.skipped:
        print(f"{r.workload:>15} {r.engine:>{engine_width}}  skipped: {r.skipped}", flush=True)
        return
    ratio = f"{r.cost_ratio:.3f}" if r.cost_ratio else "-"
    print(
        f"{r.workload:>15} {r.engine:>{engine_width}}  {r.median_seconds or 0:8.3f} s x{len(r.seconds)}  "
        f"nodes {r.nodes:>5}  ${r.price_per_hour or 0:10.2f}/h  cost/bound {ratio}  valid {r.valid}",
        flush=True,
    )
