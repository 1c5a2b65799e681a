"""`python -m bench.exact [--seeds N] [--repeat R] [--out PATH]`: the exact pass against proven optima.

For each small instance of `bench/exact_instances.py` it prints and writes to `bench/EXACT.md` the
MIP-proven optimum, what greedy placement plus the cost pass costs (the pure-Python engine with its exact
pass turned off: the twins plan alike, so that is what both engines planned before the pass), and each
engine's cost and median solve time now, with whether it is optimal. The validator checks every plan.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.exact_instances import SEEDS, instance, optimum
from kapstan.scheduling import ENGINES, exact, solve
from kapstan.scheduling.model import Snapshot
from kapstan.scheduling.validator import validate

HERE = Path(__file__).resolve().parent
TOLERANCE = 1e-6
RUST_AIM_MS = 50.0


@dataclass
class Row:
    seed: int
    snapshot: Snapshot
    optimum: float | None
    proven: bool
    before: float
    costs: dict[str, float]
    millis: dict[str, float]
    cpu_millis: dict[str, float]

    def optimal(self, engine: str) -> bool:
        return self.optimum is not None and abs(self.costs[engine] - self.optimum) <= TOLERANCE


def _timed(snapshot: Snapshot, engine: str, repeat: int) -> tuple[float, float, float]:
    """The plan's cost, the median wall time and the median CPU time of this process, in ms."""
    times, cpu, cost = [], [], 0.0
    for _ in range(repeat):
        started, started_cpu = time.perf_counter(), time.process_time()
        plan = solve(snapshot, engine)
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - started_cpu) * 1000)
        if validate(snapshot, plan) or plan.unschedulable:
            raise SystemExit(f"seed {snapshot.pods[0].name}: the {engine} plan is not valid")
        cost = plan.total_price_per_hour
    return cost, statistics.median(times), statistics.median(cpu)


def _before(snapshot: Snapshot) -> float:
    limit = exact.MAX_PODS
    exact.MAX_PODS = 0
    try:
        return solve(snapshot, "python").total_price_per_hour
    finally:
        exact.MAX_PODS = limit


def measure(seed: int, repeat: int) -> Row:
    snapshot = instance(seed)
    found = optimum(snapshot)
    costs, millis, cpu = {}, {}, {}
    for engine in sorted(ENGINES, reverse=True):  # rust first
        costs[engine], millis[engine], cpu[engine] = _timed(
            snapshot, engine, repeat if engine == "rust" else 1
        )
    return Row(seed, snapshot, found.cost, found.proven, _before(snapshot), costs, millis, cpu)


def _shape(snapshot: Snapshot) -> str:
    groups = {p.labels["app"] for p in snapshot.pods}
    anti = {p.labels["app"] for p in snapshot.pods if p.anti_affinity}
    ds = "yes" if snapshot.daemonsets else "no"
    return f"{len(snapshot.pods)} | {len(groups)} | {len(anti)} | {ds} | {len(snapshot.instance_types)}"


def render(rows: list[Row], engines: list[str], command: str, load_at_start: float) -> str:
    head = "| seed | pods | groups | anti-affine | DaemonSet | flavors | optimum | before |"
    rule = "|---:|---:|---:|---:|---|---:|---:|---:|"
    for engine in engines:
        head += f" {engine} $/h | {engine} ms | {engine} CPU ms |"
        rule += "---:|---:|---:|"
    lines = [head, rule]
    for r in rows:
        optimum_text = (
            "-" if r.optimum is None else f"{r.optimum:.4f}" + ("" if r.proven else " (not proven)")
        )
        before = f"{r.before:.4f}" + ("" if r.optimum is None else f" ({r.before / r.optimum:.3f}x)")
        cells = [
            f"{r.costs[e]:.4f}{'' if r.optimal(e) else ' MISS'} | {r.millis[e]:.1f} | {r.cpu_millis[e]:.1f}"
            for e in engines
        ]
        lines.append(f"| {r.seed} | {_shape(r.snapshot)} | {optimum_text} | {before} | {' | '.join(cells)} |")
    return "\n".join([*_summary(rows, engines, command, load_at_start), "", *lines, ""])


def _summary(rows: list[Row], engines: list[str], command: str, load_at_start: float) -> list[str]:
    proven = [r for r in rows if r.proven and r.optimum]
    ratios = [r.before / r.optimum for r in proven if r.optimum]
    out = [
        "# The exact pass on small priced instances (issue 17)",
        "",
        f"Written by `{command}`. Instances: `bench/exact_instances.py` (3-6 flavors priced per vCPU and per "
        "GiB differently, 2-5 groups of 2-12 pods, some with hostname anti-affinity, some with a DaemonSet "
        "on every node); optimum: the cover MIP over every maximal packing, proven by HiGHS. *before*: "
        "greedy placement and the cost pass (the Python engine with the exact pass off). Times: median "
        "wall time of `kapstan.scheduling.solve()`, Rust over the repeats, Python one run, and the CPU time "
        "the solving process spent in it (`time.process_time()`: on a shared machine the wall time grows "
        "with the load, the CPU time much less, since the other processes' work is not counted). "
        f"Measured at {_commit()} on a machine with {os.cpu_count()} cores at load average "
        f"{load_at_start:.1f} when the run began and {os.getloadavg()[0]:.1f} when it ended.",
        "",
        f"- {len(proven)} of {len(rows)} optima proven.",
        f"- before: optimal on {sum(1 for x in ratios if x <= 1 + TOLERANCE)} of {len(ratios)}, "
        f"{statistics.mean(ratios):.3f}x the optimum on average, {max(ratios):.3f}x at worst.",
    ]
    for e in engines:
        times = [r.millis[e] for r in rows]
        line = f"- {e}: optimal on {sum(1 for r in proven if r.optimal(e))} of {len(proven)}; "
        cpu = [r.cpu_millis[e] for r in rows]
        line += f"median {statistics.median(times):.1f} ms, max {max(times):.1f} ms"
        line += f" (CPU median {statistics.median(cpu):.1f} ms, max {max(cpu):.1f} ms)"
        if e == "rust":
            line += f", {sum(1 for t in times if t < RUST_AIM_MS)} of {len(times)} under {RUST_AIM_MS:.0f} ms"
        out.append(line + ".")
    return out


def _commit() -> str:
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True)
    return found.stdout.strip() or "an unknown commit"


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.exact")
    parser.add_argument("--seeds", type=int, default=len(SEEDS), help="how many instances (from seed 1)")
    parser.add_argument("--repeat", type=int, default=5, help="Rust solves per instance (median)")
    parser.add_argument("--out", type=Path, default=HERE / "EXACT.md")
    args = parser.parse_args()
    engines = sorted(ENGINES, reverse=True)
    load_at_start = os.getloadavg()[0]
    rows = []
    for seed in SEEDS[: args.seeds]:
        row = measure(seed, args.repeat)
        rows.append(row)
        print(
            seed,
            row.optimum,
            row.before,
            row.costs,
            {e: round(t, 1) for e, t in row.millis.items()},
            {e: round(t, 1) for e, t in row.cpu_millis.items()},
            flush=True,
        )
    command = f"python -m bench.exact --seeds {args.seeds} --repeat {args.repeat}"
    args.out.write_text(render(rows, engines, command, load_at_start))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
