"""`kapstan render ...`: print the generated install manifests, to apply or to commit."""

from __future__ import annotations

from typing import Any

import click
import yaml

from kapstan.controllers.state import ClusterRef
from kapstan.install import rbac
from kapstan.install.crds import crds
from kapstan.install.deployment import DEFAULT_IMAGE, deployment

_DEFAULT_CLUSTER = "/".join(rbac.DEFAULT_CLUSTER)


def _cluster(ctx: click.Context, param: click.Parameter, value: str) -> ClusterRef:
    try:
        return ClusterRef.parse(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from error


def _echo(manifests: list[dict[str, Any]]) -> None:
    click.echo(yaml.safe_dump_all(manifests, sort_keys=False), nl=False)


_cluster_option = click.option(
    "--cluster",
    default=_DEFAULT_CLUSTER,
    show_default=True,
    callback=_cluster,
    help="The Cluster kapstan scales, NAMESPACE/NAME (management side).",
)
_namespace_option = click.option(
    "--namespace",
    default=rbac.DEFAULT_NAMESPACE,
    show_default=True,
    help="kapstan's namespace in the workload cluster.",
)


@click.group("render")
def render_group() -> None:
    """Print install manifests as multi-document YAML."""


@render_group.command("crds")
def render_crds() -> None:
    """The NodePool, NodeClaim and ClusterAPINodeClass CRDs."""
    _echo(crds())


@render_group.command("rbac")
@click.option(
    "--side",
    type=click.Choice(["workload", "management"]),
    required=True,
    help="workload: kapstan's own ServiceAccount and roles. management: the credential it holds.",
)
@_namespace_option
@_cluster_option
@click.option(
    "--infrastructure-group",
    default=rbac.DEFAULT_INFRASTRUCTURE_GROUP,
    show_default=True,
    help="Management side: the API group of the provider's machine templates.",
)
@click.option(
    "--infrastructure-resource",
    "infrastructure_resources",
    multiple=True,
    help="Management side: a machine template plural to allow (repeat); default: all of the group, get only.",
)
def render_rbac(
    side: str,
    namespace: str,
    cluster: ClusterRef,
    infrastructure_group: str,
    infrastructure_resources: tuple[str, ...],
) -> None:
    """The ServiceAccount and roles of one side: workload (where kapstan runs) or management."""
    if side == "workload":
        _echo(rbac.workload_rbac(namespace))
    else:
        _echo(
            rbac.management_rbac(
                cluster.namespace,
                cluster.name,
                infrastructure_group=infrastructure_group,
                infrastructure_resources=infrastructure_resources or ("*",),
            )
        )


@render_group.command("deployment")
@_namespace_option
@_cluster_option
@click.option("--image", default=DEFAULT_IMAGE, show_default=True)
@click.option("--replicas", type=click.IntRange(min=1), default=2, show_default=True)
def render_deployment(namespace: str, cluster: ClusterRef, image: str, replicas: int) -> None:
    """The `kapstan run` Deployment, its PodDisruptionBudget and metrics Service (workload side)."""
    _echo(deployment(cluster.namespace, cluster.name, namespace=namespace, image=image, replicas=replicas))
