"""`python -m bench.ab --other CHECKOUT [--repeat N] [--rounds R] [--validate-up-to P] [--workload NAME ...]`:
this checkout against another, side by side.

Each workload is solved in turn by this checkout's engines and by the other checkout's (its own `.venv`,
its own code), A B A B ..., so that a machine whose speed drifts slows both alike. For each side it prints
the median solve time, the plan's price, node count, validity and a fingerprint of the plan (which pods on
which flavor), so that "same plans" and "no slower" are read off one table. Writes `bench/AB.md`.

The N solves of a side are made in R processes taking turns with the other side's (A B A B ...), each
building the workload once and solving it N / R times. Each side's first plan goes through the validator
only on workloads of at most P pods (default 5,000): on this machine the Python validator takes 20
minutes and more on mix-20000's plan, once per solve when every solve had its own process, and the full
run over every workload never finished; the table says "-" where it did not validate (`python -m
bench.run` validates every plan it measures).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from bench import sides

HERE = Path(__file__).resolve().parent

# Run inside either checkout's interpreter: solve one workload once, print what the table needs.
_CHILD = r"""
import hashlib, json, sys, time
from kapstan.bench.workloads import WORKLOADS
from kapstan.scheduling import solve
from kapstan.scheduling.validator import validate
w = WORKLOADS[sys.argv[1]]
snapshot = w.build()
seconds = []
for _ in range(int(sys.argv[3])):
    started = time.perf_counter()
    plan = solve(snapshot, sys.argv[2])
    seconds.append(time.perf_counter() - started)
claims = sorted((c.instance_type, tuple(sorted(c.pods))) for c in plan.node_claims)
existing = sorted((n, tuple(sorted(p))) for n, p in plan.existing_nodes.items())
digest = hashlib.sha256(repr((claims, existing, sorted(plan.unschedulable))).encode()).hexdigest()[:12]
valid = not validate(snapshot, plan) if sys.argv[4] == "1" else None
print(json.dumps({"seconds": seconds, "price": plan.total_price_per_hour, "nodes": len(plan.node_claims),
                  "valid": valid, "plan": digest}))
"""


def _run(checkout: Path, workload: str, engine: str, solves: int, check: bool) -> dict[str, object]:
    """One process of `checkout`: the workload built once and solved `solves` times; its last plan
    validated when `check`."""
    out = sides.run(checkout, _CHILD, [workload, engine, str(solves), "1" if check else "0"])
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _turns(repeat: int, rounds: int) -> list[int]:
    """The solves of each of a side's processes: `repeat` in all, over `rounds` processes at most."""
    count = max(1, min(rounds, repeat))
    return [repeat // count + (1 if i < repeat % count else 0) for i in range(count)]


def _seconds(result: dict[str, object]) -> list[float]:
    times = result["seconds"]
    assert isinstance(times, list)
    return [float(t) for t in times]


def _valid(result: dict[str, object]) -> str:
    return "-" if result["valid"] is None else str(result["valid"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__)
    parser.add_argument(
        "--other", type=Path, required=True, help="the checkout to compare against (with .venv)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="solves per side (median)")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="processes per side the solves are spread over, A B A B (default 3)",
    )
    parser.add_argument(
        "--validate-up-to",
        type=int,
        default=5000,
        help="validate each side's plan only on workloads of at most this many pods (default 5000)",
    )
    parser.add_argument("--engine", default="rust")
    parser.add_argument("--workload", action="append", help="only this workload (repeatable)")
    args = parser.parse_args(argv)
    from kapstan.bench.workloads import WORKLOADS

    names = args.workload or list(WORKLOADS)
    here = HERE.parent
    rows = [
        f"Side by side, engine `{args.engine}`, median of {args.repeat} in {len(_turns(args.repeat, args.rounds))} "
        f"processes per side; plans validated on workloads up to {args.validate_up_to:,} pods; "
        f"A = this checkout, B = `{args.other}`.",
        "",
        "| workload | A s | B s | A/B time | A price | B price | A nodes | B nodes | valid A/B | same plan |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        check = WORKLOADS[name].pods <= args.validate_up_to
        a: list[dict[str, object]] = []
        b: list[dict[str, object]] = []
        for turn, solves in enumerate(_turns(args.repeat, args.rounds)):
            a.append(_run(here, name, args.engine, solves, check and turn == 0))
            b.append(_run(args.other, name, args.engine, solves, check and turn == 0))
        ta = statistics.median(float(t) for r in a for t in _seconds(r))
        tb = statistics.median(float(t) for r in b for t in _seconds(r))
        ra, rb = a[0], b[0]
        row = (
            f"| {name} | {ta:.3f} | {tb:.3f} | {ta / tb:.2f} | {float(str(ra['price'])):.2f} | "
            f"{float(str(rb['price'])):.2f} | {ra['nodes']} | {rb['nodes']} | {_valid(ra)}/{_valid(rb)} | "
            f"{'yes' if ra['plan'] == rb['plan'] else 'no'} |"
        )
        print(row, flush=True)
        rows.append(row)
    (HERE / "AB.md").write_text("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
