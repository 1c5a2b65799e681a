"""`python -m bench.run [--quick] [--repeat N]`: every workload against every engine in ENGINES.

Writes `bench/results.json`, `bench/REPORT.md`, `bench/solve_time.png` and `bench/cost_vs_bound.png`,
and prints each target's verdict.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import machine, plots, report
from bench.isolate import run_isolated
from bench.peers import __main__ as peers
from bench.peers import report as peers_report
from bench.peers.optimum import small_workloads
from bench.progress import print_progress
from bench.reference import reference_result
from bench.targets import FIRST_SOLVE_CAP_SECONDS, INTEGER_BOUND_SECONDS, TIME_BUDGET_SECONDS, check
from kapstan.bench.bounds import lower_bound
from kapstan.bench.workloads import WORKLOADS, Workload, all_workloads
from kapstan.scheduling import ENGINES

HERE = Path(__file__).resolve().parent
QUICK_MAX_PODS = 1000
ENGINE_WIDTH = 9
"""The progress lines' engine column: the longest engine or reference name."""


def _measure_all(
    workloads: list[Workload], engines: list[str], repeat: int
) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    bounds: dict[str, dict[str, Any]] = {}
    results: list[dict[str, Any]] = []
    for w in workloads:
        snapshot = w.build()
        bound = lower_bound(snapshot, INTEGER_BOUND_SECONDS)
        bounds[w.name] = {**asdict(bound), "best": bound.best}
        for engine in engines:
            r = run_isolated(w.name, engine, repeat, TIME_BUDGET_SECONDS, bound.best, FIRST_SOLVE_CAP_SECONDS)
            results.append(r.to_json())
            print_progress(r, ENGINE_WIDTH)
        reference = reference_result(w, snapshot, bound.best)
        if reference is not None:
            results.append(reference.to_json())
            print_progress(reference, ENGINE_WIDTH)
    return bounds, results


def _write(out: Path, payload: dict[str, Any]) -> None:
    """results.json, REPORT.md and the plots from one payload; prints the verdicts."""
    engines, results = payload["engines"], payload["results"]
    workloads = [WORKLOADS[name] for name in payload["bounds"]]
    verdicts = check(results, engines)
    payload["targets"] = [
        {**asdict(v.target), "status": v.status, "value": v.value, "detail": v.detail} for v in verdicts
    ]
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(payload, indent=1) + "\n")
    text = report.render(payload["machine"], engines, workloads, payload["bounds"], results, verdicts)
    (out / "REPORT.md").write_text(text)
    plots.solve_time(results, engines, out / "solve_time.png")
    plots.cost_vs_bound(results, [*engines, "reference"], out / "cost_vs_bound.png")
    for v in verdicts:
        print(f"{v.status:>7}  {v.target.engine:>6} {v.target.workload:<14} {v.detail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__)
    parser.add_argument(
        "--quick", action="store_true", help=f"workloads up to {QUICK_MAX_PODS} pods, one run each"
    )
    parser.add_argument("--repeat", type=int, default=5, help="solves per workload and engine (median)")
    parser.add_argument("--engine", action="append", help="only this engine (repeatable)")
    parser.add_argument(
        "--only", action="append", help="only workloads whose name contains this (repeatable)"
    )
    parser.add_argument("--out", type=Path, default=HERE, help="where to write the report and plots")
    parser.add_argument(
        "--merge", action="store_true", help="keep OUT/results.json rows this run does not measure again"
    )
    parser.add_argument(
        "--render-only", action="store_true", help="rewrite the report and plots from OUT/results.json"
    )
    parser.add_argument(
        "--peers",
        action="store_true",
        help="also run Karpenter, the upstream CAPI rule and cluster-autoscaler on the same workloads "
        "(bench.peers: PEERS.md, peers.json) and add their aims and costs to REPORT.md; with --render-only, "
        "from OUT/peers.json",
    )
    args = parser.parse_args(argv)
    if args.render_only:
        _write(args.out, json.loads((args.out / "results.json").read_text()))
        if args.peers:
            _peers(args.out, None, 0)
        return 0
    engines = [e for e in sorted(ENGINES) if not args.engine or e in args.engine]
    repeat = 1 if args.quick else max(args.repeat, 1)
    workloads = [
        w
        for w in all_workloads()
        if (not args.quick or w.pods <= QUICK_MAX_PODS)
        and (not args.only or any(o in w.name for o in args.only))
    ]
    core_before = machine.core_fingerprint()
    bounds, results = _measure_all(workloads, engines, repeat)
    described = machine.describe(sys.argv[1:] if argv is None else argv)
    described["core_changed"] = described["core"] != core_before
    payload = {"machine": described, "engines": engines, "bounds": bounds, "results": results}
    previous = args.out / "results.json"
    if args.merge and previous.is_file():
        payload = _merged(json.loads(previous.read_text()), payload)
    _write(args.out, payload)
    if args.peers:
        small = [w for w in small_workloads() if not args.only or any(o in w.name for o in args.only)]
        _peers(args.out, [*workloads, *small], repeat)
    return 0


def _peers(out: Path, workloads: list[Workload] | None, repeat: int) -> None:
    """bench.peers on these workloads (None: OUT/peers.json as it stands), its section added to REPORT.md."""
    payload = json.loads((out / "peers.json").read_text()) if workloads is None else None
    if payload is None:
        assert workloads is not None
        payload = peers.measure_all(workloads, repeat)
        payload["machine"]["args"] = " (through python -m bench.run --peers)"
    peers.write(out, payload)
    report = out / "REPORT.md"
    report.write_text(report.read_text() + peers_report.section(payload))


def _merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The new rows over the old ones, keyed by (workload, engine); the machine notes what was kept."""
    fresh = {(r["workload"], r["engine"]) for r in new["results"]}
    kept = [r for r in old["results"] if (r["workload"], r["engine"]) not in fresh]
    order = [*old["bounds"], *(w for w in new["bounds"] if w not in old["bounds"])]
    bounds = {w: new["bounds"].get(w, old["bounds"].get(w)) for w in order}
    rank = {w: i for i, w in enumerate(order)}
    results = sorted([*kept, *new["results"]], key=lambda r: rank[r["workload"]])
    machine_info = {**new["machine"], "merged_from": old["machine"].get("date"), "kept_rows": len(kept)}
    engines = sorted({*old["engines"], *new["engines"]})
    return {"machine": machine_info, "engines": engines, "bounds": bounds, "results": results}


if __name__ == "__main__":
    raise SystemExit(main())
