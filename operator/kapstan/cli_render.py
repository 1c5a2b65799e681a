"""`kapstan render ...`: print the generated install manifests, to apply or to commit."""

from __future__ import annotations

import click
import yaml

from kapstan.install.crds import crds


@click.group("render")
def render_group() -> None:
    """Print install manifests as multi-document YAML."""


@render_group.command("crds")
def render_crds() -> None:
    """The NodePool, NodeClaim and ClusterAPINodeClass CRDs."""
    click.echo(yaml.safe_dump_all(crds(), sort_keys=False), nl=False)
