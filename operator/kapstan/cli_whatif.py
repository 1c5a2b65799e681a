"""The live what-if: ``kapstan simulate --kubeconfig ... --cluster NS/NAME`` and ``kapstan report``.

Both read a running cluster as the operator does (``whatif.live``) and write nothing to it. ``simulate``
prints the plan for the pods pending now and the consolidation the disruption loop would start now;
``report`` prints the managed nodes' price beside kapstan's plan for their pods from scratch
(``whatif.report``), and with ``--html`` writes it as a page with a chart.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from kapstan.api.errors import ManifestError
from kapstan.cli_plan import print_plan
from kapstan.controllers.manager import StartupError
from kapstan.controllers.state import ClusterRef
from kapstan.kube.errors import ApiError
from kapstan.whatif.html import COLUMNS, cells, render_html
from kapstan.whatif.live import Consolidation, LiveView, consolidation, pending_plan, read_cluster
from kapstan.whatif.report import Report, build_report

CLUSTER_HELP = "The Cluster, NAMESPACE/NAME (management side)."
KUBECONFIG_HELP = "The workload cluster's kubeconfig (default: $KUBECONFIG)."
MANAGEMENT_HELP = "The management cluster's kubeconfig (default: the workload cluster's)."


def read_or_exit(
    cluster: str, kubeconfig: str | None, management_kubeconfig: str | None, engine: str | None
) -> LiveView:
    """The live view, or one line on stderr and exit code 2 when it cannot be had."""
    for flag, path in (("--kubeconfig", kubeconfig), ("--management-kubeconfig", management_kubeconfig)):
        if path is not None and not Path(path).is_file():
            click.echo(f"error: {flag}: no kubeconfig at {path}", err=True)
            sys.exit(2)
    try:
        view = asyncio.run(read_cluster(ClusterRef.parse(cluster), kubeconfig, management_kubeconfig, engine))
    except (StartupError, ApiError, ManifestError, ValueError) as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    for line in view.not_served:
        click.echo(f"warning: {line}", err=True)
    return view


def simulate_live(
    cluster: str, kubeconfig: str | None, management_kubeconfig: str | None, engine: str | None, output: str
) -> None:
    view = read_or_exit(cluster, kubeconfig, management_kubeconfig, engine)
    plan = pending_plan(view)
    found = consolidation(view)
    if output == "json":
        click.echo(json.dumps({**plan.to_json(), "consolidation": consolidation_json(found)}, indent=2))
        return
    console = Console()
    print_plan(plan, console)
    print_consolidation(found, console)


def consolidation_json(found: Consolidation) -> dict[str, object]:
    decision = found.decision
    return {
        "reason": found.reason,
        "candidates": found.candidates,
        "blocked": list(found.blocked),
        "decision": None
        if decision is None
        else {
            "kind": decision.kind,
            "remove": [
                {
                    "nodeClaim": c.claim,
                    "node": c.node,
                    "instanceType": c.instance_type,
                    "pricePerHour": c.price,
                }
                for c in decision.candidates
            ],
            "replacements": [
                {
                    "nodePool": r.node_pool,
                    "instanceType": r.instance_type,
                    "zone": r.zone,
                    "pricePerHour": r.price_per_hour,
                }
                for r in decision.replacements
            ],
            "savingPerHour": decision.saving,
        },
    }


def print_consolidation(found: Consolidation, console: Console) -> None:
    decision = found.decision
    if decision is None:
        console.print(
            f"consolidation now: nothing to do ({found.candidates} candidate nodes)", highlight=False
        )
    else:
        removed = ", ".join(c.describe() for c in decision.candidates)
        replaced = ", ".join(
            f"{r.instance_type} in {r.zone} ({r.price_per_hour:g}/h)" for r in decision.replacements
        )
        what = f"replace with {replaced}" if decision.replacements else "delete (the pods fit elsewhere)"
        console.print(
            f"consolidation now ({found.reason}): {removed}: {what}; saving {decision.saving:.4f}/h",
            highlight=False,
            soft_wrap=True,
        )
    for line in found.blocked:
        console.print(f"  blocked: {line}", highlight=False, soft_wrap=True)


@click.command("report")
@click.option("--cluster", required=True, help=CLUSTER_HELP)
@click.option("--kubeconfig", default=None, help=KUBECONFIG_HELP)
@click.option("--management-kubeconfig", default=None, help=MANAGEMENT_HELP)
@click.option("--engine", type=click.Choice(["rust", "python"]), default=None, help="Default: rust if built.")
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the report as a page with a chart.",
)
def report_command(
    cluster: str,
    kubeconfig: str | None,
    management_kubeconfig: str | None,
    engine: str | None,
    html_file: Path | None,
) -> None:
    """The managed nodes' price per hour now, beside kapstan's plan for the same pods from scratch."""
    view = read_or_exit(cluster, kubeconfig, management_kubeconfig, engine)
    report = build_report(view)
    print_report(report, Console(), f"kapstan report: Cluster {cluster}")
    if html_file is not None:
        html_file.write_text(render_html(report, f"kapstan report: Cluster {cluster}"), encoding="utf-8")
        click.echo(f"wrote {html_file}")


def print_report(report: Report, console: Console, title: str) -> None:
    table = Table(title=title)
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("NodePool", "flavor") else "right")
    for row in report.rows:
        table.add_row(*cells(row))
    table.add_row("total", "", "", f"{report.total_now:.4f}", "", f"{report.total_planned:.4f}", style="bold")
    console.print(table)
    console.print(f"saving from scratch: {report.saving:.4f}/h", highlight=False)
    for pod, reason in report.unplaced.items():
        console.print(f"[red]unplaced[/red] {pod}: {reason}", highlight=False, soft_wrap=True)
    for name in report.unpriced:
        console.print(f"node {name}: flavor unknown to the catalog, not counted", highlight=False)
