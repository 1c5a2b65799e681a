"""A plan as the terminal table ``simulate`` prints, from files or from a live cluster."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from kapstan.scheduling.model import Plan


def print_plan(plan: Plan, console: Console) -> None:
    table = Table(title=f"kapstan plan (engine: {plan.engine})")
    for column in ("NodePool", "flavor", "zone", "price/h", "pods"):
        table.add_column(column)
    for claim in plan.node_claims:
        table.add_row(
            claim.node_pool,
            claim.instance_type,
            claim.zone,
            f"{claim.price_per_hour:.4f}",
            str(len(claim.pods)),
        )
    console.print(table)
    for node, pods in sorted(plan.existing_nodes.items()):
        if pods:
            console.print(f"existing node {node}: {len(pods)} pods")
    for pod, reason in plan.unschedulable.items():
        console.print(f"[red]unschedulable[/red] {pod}: {reason}", highlight=False, soft_wrap=True)
    console.print(
        f"{len(plan.node_claims)} new nodes, total {plan.total_price_per_hour:.4f}/h, "
        f"solved in {plan.solve_seconds * 1000:.1f} ms"
    )
