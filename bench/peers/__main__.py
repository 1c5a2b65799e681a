"""`python -m bench.peers`: kapstan (Rust and Python) beside Karpenter, the upstream CAPI provider's rule
and cluster-autoscaler, on the same workloads in one run.

Writes `bench/peers.json`, `bench/PEERS.md`, `bench/peers_time.png` and `bench/peers_cost.png`. The
Karpenter peer is built from the Go module proxy on first use and cached (bench/peers/gobuild.py).
A run with --only (or --autoscaler-only) merges what it measures into OUT/peers.json when there is
one: the rows it re-measures are replaced, every other workload's rows are kept, and PEERS.md is
rendered from the merged file, naming each merged run. So a workload that did not finish in the full
run can be measured on its own afterwards.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import machine
from bench.isolate import run_isolated
from bench.peers import gobuild, plots, report
from bench.peers.measure import autoscaler_row, karpenter_rows
from bench.peers.optimum import optimum, small_workloads
from bench.progress import print_progress
from bench.targets import FIRST_SOLVE_CAP_SECONDS, INTEGER_BOUND_SECONDS, TIME_BUDGET_SECONDS
from kapstan.bench.bounds import lower_bound
from kapstan.bench.measure import measure
from kapstan.bench.workloads import Workload, all_workloads
from kapstan.scheduling.model import Snapshot

OUT = Path(__file__).resolve().parent.parent
QUICK_MAX_PODS = 1000
ENGINE_WIDTH = 18
"""The progress lines' engine column: the longest system name, Karpenter peers included."""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help=f"workloads up to {QUICK_MAX_PODS} pods, one run each"
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed solves per workload and system (median)")
    parser.add_argument(
        "--only",
        action="append",
        help="only workloads whose name contains this (repeatable); merged into OUT/peers.json when it "
        "exists: these workloads' rows replaced, the other workloads' rows kept, PEERS.md and the plots "
        "rendered from the merged file",
    )
    parser.add_argument("--no-autoscaler", action="store_true", help="skip the cluster-autoscaler simulation")
    parser.add_argument(
        "--autoscaler-only",
        action="store_true",
        help="only the cluster-autoscaler simulation (untimed), merged into OUT/peers.json",
    )
    parser.add_argument(
        "--out", type=Path, default=OUT, help="where to write PEERS.md, peers.json and the plots"
    )
    parser.add_argument(
        "--render-only", action="store_true", help="rewrite PEERS.md and plots from OUT/peers.json"
    )
    args = parser.parse_args(argv)
    if args.render_only:
        write(args.out, json.loads((args.out / "peers.json").read_text()))
        return 0
    repeat = 1 if args.quick else max(args.repeat, 1)
    workloads = [
        w
        for w in [*all_workloads(), *small_workloads()]
        if (not args.quick or w.pods <= QUICK_MAX_PODS)
        and (not args.only or any(o in w.name for o in args.only))
    ]
    command = "".join(f" {a}" for a in (sys.argv[1:] if argv is None else argv))
    previous = args.out / "peers.json"
    if args.autoscaler_only:
        rows = {"machine": {**machine.describe([]), "args": command}, "results": autoscaler_rows(workloads)}
        write(args.out, merge(json.loads(previous.read_text()), rows))
        return 0
    payload = measure_all(workloads, repeat, autoscaler=not args.no_autoscaler)
    payload["machine"]["args"] = command
    if args.only and previous.is_file():
        payload = merge(json.loads(previous.read_text()), payload)
    write(args.out, payload)
    return 0


def autoscaler_rows(workloads: list[Workload]) -> list[dict[str, Any]]:
    rows = []
    for w in workloads:
        snapshot = w.build()
        r = autoscaler_row(w, snapshot, _bound(w, snapshot, {}))
        rows.append(r.to_json())
        print_progress(r, ENGINE_WIDTH)
    return rows


def merge(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The old payload with the new run's rows in place of the ones it re-measures (same workload and
    system), its workloads' bounds and descriptions added, workloads in the registry's order; the old
    run's machine stays the report's head and lists each merged run (when, where, what)."""
    rows = new["results"]
    fresh = {(r["workload"], r["engine"]) for r in rows}
    kept = [r for r in old["results"] if (r["workload"], r["engine"]) not in fresh]
    registry = [w.name for w in [*all_workloads(), *small_workloads()]]
    bounds = {**old["bounds"], **new.get("bounds", {})}
    # A workload the registry no longer has keeps its rows, after the others.
    names = [*(w for w in registry if w in bounds), *(w for w in bounds if w not in registry)]
    rank = {w: i for i, w in enumerate(names)}
    results = sorted([*kept, *rows], key=lambda r: rank.get(r["workload"], len(rank)))
    record = {
        **{k: new["machine"][k] for k in ("date", "commit", "args")},
        "workloads": sorted({r["workload"] for r in rows}, key=lambda w: rank.get(w, len(rank))),
        "systems": sorted({r["engine"] for r in rows}, key=_system_order),
    }
    return {
        **old,
        "machine": {**old["machine"], "merges": [*old["machine"].get("merges", []), record]},
        "workloads": {**old.get("workloads", {}), **new.get("workloads", {})},
        "bounds": {w: bounds[w] for w in names},
        "results": results,
    }


def _system_order(system: str) -> int:
    return report.SYSTEMS.index(system) if system in report.SYSTEMS else len(report.SYSTEMS)


def measure_all(workloads: list[Workload], repeat: int, autoscaler: bool = True) -> dict[str, Any]:
    """Every system on every workload; the payload `write` renders (also used by `bench.run --peers`)."""
    binary = gobuild.build("karpenter")
    bounds: dict[str, dict[str, Any]] = {}
    meta: dict[str, dict[str, Any]] = {}
    results: list[dict[str, Any]] = []
    snapshots = {}
    # Timed systems first, workload by workload, side by side; the slow CA simulation afterwards so it
    # never shares the two cores with a timed run.
    for w in workloads:
        snapshot = snapshots[w.name] = w.build()
        meta[w.name] = {"family": w.family, "pods": w.pods, "description": w.description}
        best = _bound(w, snapshot, bounds)
        for engine in ("rust", "python"):
            if w.family == "small":
                # Not in kapstan.bench.workloads' registry, which the isolated child rebuilds from; tiny anyway.
                r = measure(w, snapshot, engine, repeat, TIME_BUDGET_SECONDS, best)
            else:
                r = run_isolated(w.name, engine, repeat, TIME_BUDGET_SECONDS, best, FIRST_SOLVE_CAP_SECONDS)
            results.append(r.to_json())
            print_progress(r, ENGINE_WIDTH)
        for r in karpenter_rows(binary.path, w, snapshot, repeat, best):
            results.append(r.to_json())
            print_progress(r, ENGINE_WIDTH)
    if autoscaler:
        for w in workloads:
            r = autoscaler_row(w, snapshots[w.name], bounds[w.name]["best"])
            results.append(r.to_json())
            print_progress(r, ENGINE_WIDTH)
    described = machine.describe([])
    described["karpenter_peer"] = {"binary": binary.path.name, "build_seconds": binary.build_seconds}
    return {"machine": described, "workloads": meta, "bounds": bounds, "results": results}


def _bound(w: Workload, snapshot: Snapshot, bounds: dict[str, dict[str, Any]]) -> float | None:
    """The small instances' exact optimum, the others' lower bound (kapstan/bench/bounds.py)."""
    if w.family == "small":
        found = optimum(snapshot)
        bounds[w.name] = {"best": found.cost, "optimum": found.proven}
        return found.cost
    bound = lower_bound(snapshot, INTEGER_BOUND_SECONDS)
    bounds[w.name] = {**asdict(bound), "best": bound.best}
    return bound.best


def write(out: Path, payload: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    verdicts = report.verdicts(payload)
    payload["aims"] = verdicts
    (out / "peers.json").write_text(json.dumps(payload, indent=1) + "\n")
    (out / "PEERS.md").write_text(report.render(payload))
    plots.time_vs_pods(payload["results"], out / "peers_time.png")
    plots.cost_vs_bound(payload["results"], out / "peers_cost.png")
    for v in verdicts:
        print(f"{v['status']:>8}  {v['aim']}: {v['detail']}")


if __name__ == "__main__":
    raise SystemExit(main())
