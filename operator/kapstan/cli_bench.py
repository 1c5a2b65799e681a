"""``kapstan bench``: the scheduling workloads at sizes of your choosing, on every engine, as a table.

Each row is one (workload, engine): the median wall time of ``solve()``, pods per second over it, the
plan's nodes and hourly price, that price over the proven lower bound (``kapstan.bench.bounds``, HiGHS
through scipy; without the ``kapstan[bench]`` extra the column is left out), and whether the validator
accepts the plan. The committed report with peers and plots is the repo's ``python -m bench.run``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import click
from rich.console import Console
from rich.table import Table

from kapstan.bench.measure import Result, measure
from kapstan.bench.workloads import FAMILIES, sized
from kapstan.scheduling import ENGINES
from kapstan.scheduling.model import Snapshot

BOUND_NEEDS = "cost/bound needs scipy: pip install 'kapstan[bench]'"


@click.command("bench")
@click.option(
    "--family",
    "families",
    multiple=True,
    type=click.Choice(FAMILIES),
    default=("mix", "capi"),
    show_default=True,
    help="Workload family (repeatable); article is the article's two fixed-size experiments.",
)
@click.option(
    "--pods",
    "sizes",
    multiple=True,
    type=click.IntRange(1, 100_000),
    default=(1000,),
    show_default=True,
    help="Pods per workload (repeatable).",
)
@click.option(
    "--engine", "engines", multiple=True, type=click.Choice(sorted(ENGINES)), help="Default: every engine."
)
@click.option("--repeat", type=click.IntRange(1), default=3, show_default=True, help="Solves (median).")
@click.option(
    "--budget", type=float, default=30.0, show_default=True, help="Seconds per row after the first solve."
)
@click.option("--bound/--no-bound", default=True, help="Compute the lower bound (cost/bound column).")
def bench_command(
    families: Sequence[str],
    sizes: Sequence[int],
    engines: Sequence[str],
    repeat: int,
    budget: float,
    bound: bool,
) -> None:
    """Solve seeded workloads on both engines; print pods/s, cost and cost over the lower bound."""
    workloads = {w.name: w for family in families for n in sizes for w in sized(family, n)}
    lower_bound = _bound_function() if bound else None
    console = Console(width=max(Console().width, 120))  # one line per row, even in a pipe
    if bound and lower_bound is None:
        console.print(BOUND_NEEDS, markup=False)  # [bench] is not a style
    progress = Console(stderr=True)  # a large workload on the Python engine takes minutes: say what runs
    rows = []
    for workload in workloads.values():
        snapshot = workload.build()
        best = lower_bound(snapshot) if lower_bound else None
        for engine in engines or sorted(ENGINES):
            progress.print(f"solving {workload.name} ({workload.pods} pods) on {engine}", style="dim")
            rows.append(measure(workload, snapshot, engine, repeat, budget, best))
    console.print(_table(rows, with_bound=lower_bound is not None))


def _bound_function() -> Callable[[Snapshot], float | None] | None:
    try:
        from kapstan.bench.bounds import lower_bound
    except ImportError:  # scipy and numpy come with the bench extra only
        return None
    return lambda snapshot: lower_bound(snapshot).best


def _table(rows: Sequence[Result], *, with_bound: bool) -> Table:
    table = Table(title="kapstan bench")
    columns = ["workload", "engine", "pods", "median s", "pods/s", "nodes", "unsched", "$/h"]
    columns += ["cost/bound"] if with_bound else []
    for column in [*columns, "valid"]:
        table.add_column(column, justify="left" if column in ("workload", "engine") else "right")
    for r in rows:
        seconds = r.median_seconds or 0.0
        cells = [
            r.workload,
            r.engine,
            str(r.pods),
            f"{seconds:.4f}",
            f"{r.pods / seconds:,.0f}" if seconds else "-",
        ]
        cells += [str(r.nodes), str(r.unschedulable), f"{r.price_per_hour or 0:.2f}"]
        if with_bound:
            cells.append(f"{r.cost_ratio:.3f}" if r.cost_ratio else "-")
        table.add_row(*cells, "yes" if r.valid else f"NO ({r.violation_count})")
    return table
