"""`python -m bench.ir --other CHECKOUT [--workload NAME ...]`: the Rust solve's instruction count, this
checkout against another.

Wall-clock times on a shared machine move with its load; the instructions a solve executes do not. For each
workload, each checkout's own interpreter writes the snapshot as its engine's JSON, then valgrind's
callgrind counts the instructions inside `kapstan_core::solver::solve` (JSON parsing and the Python side
left out) while that checkout's `kapstan._core` solves it. Prints one row per workload: both counts and
their ratio, and whether the two plans are the same. Needs valgrind; mix-20000 takes about a minute.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

from bench import sides

HERE = Path(__file__).resolve().parent

# Run inside either checkout's interpreter: the workload's snapshot as the Rust engine's JSON.
_DUMP = r"""
import sys
from kapstan.bench.workloads import WORKLOADS
from kapstan.scheduling.rust_engine import encode
open(sys.argv[2], "wb").write(encode(WORKLOADS[sys.argv[1]].build()))
"""

# Run under callgrind: only the solve, on the JSON written above.
_SOLVE = r"""
import sys
from kapstan import _core
open(sys.argv[2], "w").write(_core.solve_json(open(sys.argv[1], "rb").read()))
"""

_COLLECTED = re.compile(r"Collected : (\d+)")


def instructions(checkout: Path, workload: str, scratch: Path) -> tuple[int, str]:
    """The instructions `solver::solve` executes on the workload in that checkout, and its plan JSON."""
    snapshot, plan = scratch / "snapshot.json", scratch / "plan.json"
    sides.run(checkout, _DUMP, [workload, str(snapshot)])
    callgrind = [
        "valgrind",
        "--tool=callgrind",
        f"--callgrind-out-file={scratch / 'callgrind.out'}",
        "--toggle-collect=kapstan_core::solver::solve",
    ]
    out = sides.run(checkout, _SOLVE, [str(snapshot), str(plan)], prefix=callgrind)
    found = _COLLECTED.search(out.stderr)
    if found is None:
        raise RuntimeError(f"callgrind counted nothing in {checkout}: {out.stderr[-500:]}")
    return int(found.group(1)), plan.read_text()


def same_plans(a: str, b: str) -> str:
    """Whether two plan JSONs are the same plan; claims' alternatives are left out of the comparison
    when one side has none (a checkout from before the plan listed them)."""
    plan_a, plan_b = json.loads(a), json.loads(b)
    if plan_a == plan_b:
        return "yes"
    claims = [plan["node_claims"] for plan in (plan_a, plan_b)]
    if not all("alternatives" in c for c in claims[0] + claims[1]):
        for claim in claims[0] + claims[1]:
            claim.pop("alternatives", None)
        if plan_a == plan_b:
            return "yes (alternatives not compared)"
    return "no"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ir", description=__doc__)
    parser.add_argument(
        "--other", type=Path, required=True, help="the checkout to compare against (with .venv)"
    )
    parser.add_argument("--workload", action="append", help="only this workload (repeatable)")
    args = parser.parse_args(argv)
    names = args.workload or ["mix-20000", "mix-5000", "mix-1000"]
    print("| workload | A Ir | B Ir | A/B | same plan |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        a_dir, b_dir = Path(tmp) / "a", Path(tmp) / "b"
        a_dir.mkdir()
        b_dir.mkdir()
        for name in names:
            a, plan_a = instructions(HERE.parent, name, a_dir)
            b, plan_b = instructions(args.other, name, b_dir)
            print(f"| {name} | {a:,} | {b:,} | {a / b:.3f} | {same_plans(plan_a, plan_b)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
