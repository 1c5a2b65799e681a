"""The `kapstan` command: one entry point, a subcommand per job.

Errors a user can fix (bad manifests, unknown engine) are printed as one line on stderr with exit code 2,
never as a traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import click
from rich.console import Console

from kapstan import scheduling
from kapstan.api.errors import ManifestError
from kapstan.api.manifests import Manifests, load_manifests
from kapstan.cli_addon import addon_command
from kapstan.cli_bench import bench_command
from kapstan.cli_convert import convert_command
from kapstan.cli_local import demo_cmd, local_group
from kapstan.cli_plan import print_plan
from kapstan.cli_render import render_group
from kapstan.cli_run import run_command
from kapstan.cli_whatif import CLUSTER_HELP, KUBECONFIG_HELP, MANAGEMENT_HELP, report_command, simulate_live
from kapstan.scheduling.model import Plan, Snapshot
from kapstan.snapshot import build_snapshot


@click.group()
@click.version_option(package_name="kapstan")
def main() -> None:
    """kapstan: a node autoscaler for Cluster API that speaks Karpenter's API."""


@main.command()
@click.option(
    "-f",
    "--filename",
    "files",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="Manifest file or directory (repeatable).",
)
@click.argument("more", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--kubeconfig", default=None, help=f"Plan on a running cluster: {KUBECONFIG_HELP}")
@click.option("--management-kubeconfig", default=None, help=MANAGEMENT_HELP)
@click.option("--cluster", default=None, help=f"With --kubeconfig: {CLUSTER_HELP}")
@click.option("--engine", type=click.Choice(["rust", "python"]), default=None, help="Default: rust if built.")
@click.option("--output", "-o", type=click.Choice(["table", "json"]), default="table")
def simulate(
    files: Sequence[Path],
    more: Sequence[Path],
    kubeconfig: str | None,
    management_kubeconfig: str | None,
    cluster: str | None,
    engine: str | None,
    output: str,
) -> None:
    """Plan the NodeClaims kapstan would create for the pods in MANIFESTS, or, with --cluster, for the pods
    pending in a running cluster now, and what consolidation would do there now (nothing is written)."""
    if cluster is not None:
        if files or more:
            raise click.UsageError("give manifests (-f) or a running cluster (--cluster), not both")
        simulate_live(cluster, kubeconfig, management_kubeconfig, engine, output)
        return
    if not files and not more:
        raise click.UsageError("give manifests with -f, or a running cluster with --cluster NAMESPACE/NAME")
    try:
        manifests = load_manifests([*files, *more])
        for line in manifests.not_served:
            click.echo(f"warning: {line}", err=True)
        plan = solve_manifests(manifests, engine)[1]
    except (ManifestError, ValueError) as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    if output == "json":
        click.echo(json.dumps(plan.to_json(), indent=2))
    else:
        print_plan(plan, Console())


def simulate_files(paths: Sequence[Path], engine: str | None) -> tuple[Snapshot, Plan]:
    """What `simulate` does before printing: manifests to snapshot to plan (the fuzzer calls it too)."""
    return solve_manifests(load_manifests(paths), engine)


def solve_manifests(manifests: Manifests, engine: str | None) -> tuple[Snapshot, Plan]:
    snapshot = build_snapshot(manifests)
    return snapshot, scheduling.solve(snapshot, engine)


main.add_command(local_group, "local")
main.add_command(render_group, "render")
main.add_command(run_command, "run")
main.add_command(demo_cmd, "demo")
main.add_command(addon_command, "addon")
main.add_command(convert_command, "convert")
main.add_command(report_command, "report")
main.add_command(bench_command, "bench")
