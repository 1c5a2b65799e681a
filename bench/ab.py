"""`python -m bench.ab --other CHECKOUT [--repeat N] [--rounds R] [--validate-up-to P] [--workload NAME ...]`:
this checkout against another, side by side.

Each workload is solved in turn by this checkout's engines and by the other checkout's (its own `.venv`,
its own code), A B A B ..., so that a machine whose speed drifts slows both alike. For each side it prints
the median solve time, the plan's price, node count, validity and a fingerprint of the plan (which pods on
which flavor), so that "same plans" and "no slower" are read off one table. Writes `bench/AB.md`.

The N samples of a side are taken in R processes taking turns with the other side's (A B A B ...), each
building the workload once and taking N / R samples. A sample is a batch of solves lasting at least 0.1 s
(one solve when a solve takes longer), its time divided by its solves: a solve of a few milliseconds timed
alone moves with the timer and the scheduler more than with the code. Each sample's CPU time (the process's)
is reported beside its wall time, and the load average beside each row: on a shared machine the wall time
grows with the others' work, the CPU time much less. Each side's first plan goes through the validator
only on workloads of at most P pods (default 5,000): on this machine the Python validator takes 20
minutes and more on mix-20000's plan, once per solve when every solve had its own process, and the full
run over every workload never finished; the table says "-" where it did not validate (`python -m
bench.run` validates every plan it measures).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

from bench import sides

HERE = Path(__file__).resolve().parent

# Run inside either checkout's interpreter: the samples (batches of solves of at least argv[5] seconds, see
# above), then what the table needs.
_CHILD = r"""
import hashlib, json, sys, time
from kapstan.bench.workloads import WORKLOADS
from kapstan.scheduling import solve
from kapstan.scheduling.validator import validate
w = WORKLOADS[sys.argv[1]]
snapshot = w.build()
seconds, cpu, batches = [], [], []
for _ in range(int(sys.argv[3])):
    count, started, started_cpu = 0, time.perf_counter(), time.process_time()
    while count == 0 or time.perf_counter() - started < float(sys.argv[5]):
        plan = solve(snapshot, sys.argv[2])
        count += 1
    seconds.append((time.perf_counter() - started) / count)
    cpu.append((time.process_time() - started_cpu) / count)
    batches.append(count)
claims = sorted((c.instance_type, tuple(sorted(c.pods))) for c in plan.node_claims)
existing = sorted((n, tuple(sorted(p))) for n, p in plan.existing_nodes.items())
digest = hashlib.sha256(repr((claims, existing, sorted(plan.unschedulable))).encode()).hexdigest()[:12]
valid = not validate(snapshot, plan) if sys.argv[4] == "1" else None
print(json.dumps({"seconds": seconds, "cpu": cpu, "batches": batches, "price": plan.total_price_per_hour,
                  "nodes": len(plan.node_claims), "valid": valid, "plan": digest}))
"""
BATCH = 0.1


def _run(
    checkout: Path, workload: str, engine: str, samples: int, check: bool, batch: float = BATCH
) -> dict[str, object]:
    """One process of `checkout`: the workload built once and timed `samples` times, each a batch of
    solves of at least `batch` seconds; its last plan validated when `check`."""
    args = [workload, engine, str(samples), "1" if check else "0", str(batch)]
    out = sides.run(checkout, _CHILD, args)
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _turns(repeat: int, rounds: int) -> list[int]:
    """The samples of each of a side's processes: `repeat` in all, over `rounds` processes at most."""
    count = max(1, min(rounds, repeat))
    return [repeat // count + (1 if i < repeat % count else 0) for i in range(count)]


def _median(results: list[dict[str, object]], key: str) -> float:
    """The median over every sample of a side's processes of `key`: "seconds" (wall per solve), "cpu"
    (process time per solve) or "batches" (solves per sample)."""
    values = []
    for result in results:
        samples = result[key]
        assert isinstance(samples, list)
        values += [float(t) for t in samples]
    return statistics.median(values)


def _valid(result: dict[str, object]) -> str:
    return "-" if result["valid"] is None else str(result["valid"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.ab", description=__doc__)
    parser.add_argument(
        "--other", type=Path, required=True, help="the checkout to compare against (with .venv)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="samples per side (median)")
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
    load_at_start = os.getloadavg()[0]
    rows = [
        "| workload | A ms | B ms | A/B wall | A CPU ms | B CPU ms | A/B CPU | solves/sample A/B | load "
        "| A price | B price | A nodes | B nodes | valid A/B | same plan |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for name in names:
        check = WORKLOADS[name].pods <= args.validate_up_to
        a: list[dict[str, object]] = []
        b: list[dict[str, object]] = []
        for turn, samples in enumerate(_turns(args.repeat, args.rounds)):
            a.append(_run(here, name, args.engine, samples, check and turn == 0))
            b.append(_run(args.other, name, args.engine, samples, check and turn == 0))
        wa, wb, ca, cb = (_median(side, key) for key in ("seconds", "cpu") for side in (a, b))
        ra, rb = a[0], b[0]
        row = (
            f"| {name} | {wa * 1000:.2f} | {wb * 1000:.2f} | {wa / wb:.2f} | {ca * 1000:.2f} | {cb * 1000:.2f} "
            f"| {ca / cb:.2f} | {_median(a, 'batches'):.0f}/{_median(b, 'batches'):.0f} "
            f"| {os.getloadavg()[0]:.1f} | {float(str(ra['price'])):.2f} | {float(str(rb['price'])):.2f} "
            f"| {ra['nodes']} | {rb['nodes']} | {_valid(ra)}/{_valid(rb)} "
            f"| {'yes' if ra['plan'] == rb['plan'] else 'no'} |"
        )
        print(row, flush=True)
        rows.append(row)
    head = (
        f"Side by side, engine `{args.engine}`, median of {args.repeat} samples in "
        f"{len(_turns(args.repeat, args.rounds))} processes per side, each sample a batch of solves lasting "
        f"at least {BATCH} s divided by its solves (one solve when it takes longer); wall time and CPU time "
        f"(the process's, which the machine's other work does not inflate as much); plans validated on "
        f"workloads up to {args.validate_up_to:,} pods; A = this checkout, B = `{args.other}`; "
        f"{os.cpu_count()} cores, load average {load_at_start:.1f} at the start and "
        f"{os.getloadavg()[0]:.1f} at the end (*load*: when the row was done)."
    )
    rows[:0] = [head, ""]
    (HERE / "AB.md").write_text("\n".join(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
