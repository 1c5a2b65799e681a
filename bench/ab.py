"""`python -m bench.ab --other CHECKOUT [--repeat N] [--workload NAME ...]`: this checkout against another, side by side.

Each workload is solved in turn by this checkout's engines and by the other checkout's (its own `.venv`,
its own code), A B A B ..., so that a machine whose speed drifts slows both alike. For each side it prints
the median solve time, the plan's price, node count, validity and a fingerprint of the plan (which pods on
which flavor), so that "same plans" and "no slower" are read off one table. Writes `bench/AB.md`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

# Run inside either checkout's interpreter: solve one workload once, print what the table needs.
_CHILD = r"""
import hashlib, json, sys, time
try:
    from kapstan.bench.workloads import WORKLOADS
except ImportError:  # a checkout from before the workloads moved into the package
    from bench.workloads import WORKLOADS
from kapstan.scheduling import solve
from kapstan.scheduling.validator import validate
w = WORKLOADS[sys.argv[1]]
snapshot = w.build()
started = time.perf_counter()
plan = solve(snapshot, sys.argv[2])
seconds = time.perf_counter() - started
claims = sorted((c.instance_type, tuple(sorted(c.pods))) for c in plan.node_claims)
existing = sorted((n, tuple(sorted(p))) for n, p in plan.existing_nodes.items())
digest = hashlib.sha256(repr((claims, existing, sorted(plan.unschedulable))).encode()).hexdigest()[:12]
print(json.dumps({"seconds": seconds, "price": plan.total_price_per_hour, "nodes": len(plan.node_claims),
                  "valid": not validate(snapshot, plan), "plan": digest}))
"""


def _run(checkout: Path, workload: str, engine: str) -> dict[str, object]:
    python = checkout / ".venv" / "bin" / "python"
    out = subprocess.run(
        [str(python), "-c", _CHILD, workload, engine],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__)
    parser.add_argument(
        "--other", type=Path, required=True, help="the checkout to compare against (with .venv)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="solves per side (median)")
    parser.add_argument("--engine", default="rust")
    parser.add_argument("--workload", action="append", help="only this workload (repeatable)")
    args = parser.parse_args(argv)
    from kapstan.bench.workloads import WORKLOADS

    names = args.workload or list(WORKLOADS)
    here = HERE.parent
    rows = [
        f"Side by side, engine `{args.engine}`, median of {args.repeat}; A = this checkout, B = `{args.other}`.",
        "",
        "| workload | A s | B s | A/B time | A price | B price | A nodes | B nodes | valid A/B | same plan |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        a: list[dict[str, object]] = []
        b: list[dict[str, object]] = []
        for _ in range(args.repeat):
            a.append(_run(here, name, args.engine))
            b.append(_run(args.other, name, args.engine))
        ta = statistics.median(float(str(r["seconds"])) for r in a)
        tb = statistics.median(float(str(r["seconds"])) for r in b)
        ra, rb = a[0], b[0]
        row = (
            f"| {name} | {ta:.3f} | {tb:.3f} | {ta / tb:.2f} | {float(str(ra['price'])):.2f} | "
            f"{float(str(rb['price'])):.2f} | {ra['nodes']} | {rb['nodes']} | {ra['valid']}/{rb['valid']} | "
            f"{'yes' if ra['plan'] == rb['plan'] else 'no'} |"
        )
        print(row, flush=True)
        rows.append(row)
    (HERE / "AB.md").write_text("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
