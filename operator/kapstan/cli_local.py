"""``kapstan local``: build, start and stop the local sandbox from a shell (mounted by ``kapstan.cli``)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kapstan.local import BuildError, Sandbox, SandboxError, build, default_dir
from kapstan.local.demo import run_demo

_dir_option = click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the sandbox keeps its state, logs and kubeconfigs (default: a per-user temp dir).",
)


@click.group("local")
def local_group() -> None:
    """A real Kubernetes + Cluster API sandbox on loopback, without Docker."""


@local_group.command("build")
@click.option("--force", is_flag=True, help="Rebuild even if the cache has this version.")
def build_cmd(force: bool) -> None:
    """Build the sandbox binaries from Go modules into ~/.cache/kapstan (skipped when cached)."""
    try:
        art = build(force=force)
    except BuildError as err:
        raise click.ClickException(str(err)) from err
    click.echo(art.root)


@local_group.command("up")
@_dir_option
@click.option("--two-clusters", is_flag=True, help="Separate management and workload API servers.")
def up_cmd(directory: Path | None, two_clusters: bool) -> None:
    """Start the sandbox and return when it is ready; prints the kubeconfig paths."""
    sandbox = Sandbox((directory or default_dir()).absolute(), two_clusters=two_clusters)
    try:
        sandbox.up()
    except (BuildError, SandboxError) as err:
        raise click.ClickException(str(err)) from err
    click.echo(f"export KUBECONFIG={sandbox.kubeconfig}")
    if two_clusters:
        click.echo(f"# management: {sandbox.management_kubeconfig}", file=sys.stdout)
        click.echo(f"# workload:   {sandbox.workload_kubeconfig}", file=sys.stdout)


@local_group.command("down")
@_dir_option
def down_cmd(directory: Path | None) -> None:
    """Stop everything ``up`` started in DIR and remove what it created."""
    Sandbox.load((directory or default_dir()).absolute()).down()


@click.command("demo")
@click.option("--keep", is_flag=True, help="Leave the sandbox running at the end.")
def demo_cmd(keep: bool) -> None:
    """The article's story, live: build, start a sandbox, run kapstan, print the timeline, tear down."""
    try:
        run_demo(keep=keep)
    except (BuildError, SandboxError) as err:
        raise click.ClickException(str(err)) from err


if __name__ == "__main__":
    # ``python -m kapstan.cli_local up`` works before the group is mounted under ``kapstan``.
    local_group()
