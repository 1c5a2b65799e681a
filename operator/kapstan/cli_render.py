"""`kapstan render ...`: print the generated install manifests, to apply or to commit."""

from __future__ import annotations

import base64
from typing import Any, BinaryIO, TextIO

import click
import yaml

from kapstan.controllers.state import ClusterRef
from kapstan.install import bundle as install_bundle
from kapstan.install import clusterclass, examples, rbac
from kapstan.install.addon import addon
from kapstan.install.clusterclass import WorkerFlavor
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


class _BlockDumper(yaml.SafeDumper):
    """Multi-line strings (the YAML inside a bundle's ConfigMaps) as ``|`` blocks, so they read as YAML."""


def _block(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None)


_BlockDumper.add_representer(str, _block)


def _echo_blocks(manifests: list[dict[str, Any]]) -> None:
    click.echo(yaml.dump_all(manifests, Dumper=_BlockDumper, sort_keys=False), nl=False)


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


def _worker_class(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[WorkerFlavor]:
    """``NAME=CPU,MEMORY[,PRICE]``: an autoscaled worker class and its flavor."""
    out = []
    for value in values:
        name, _, spec = value.partition("=")
        parts = spec.split(",") if spec else []
        if not name or len(parts) not in (2, 3) or not all(parts):
            raise click.BadParameter(f"expected NAME=CPU,MEMORY[,PRICE], got {value!r}")
        out.append(
            WorkerFlavor(
                name, cpu=parts[0], memory=parts[1], price_per_hour=parts[2] if len(parts) > 2 else ""
            )
        )
    return out


@render_group.command("clusterclass")
@click.option(
    "--example",
    type=click.Choice(["openstack", "sandbox"]),
    default=None,
    help="A complete example ClusterClass with its templates.",
)
@click.option(
    "-f",
    "--filename",
    type=click.File("r"),
    default=None,
    help="Merge kapstan into the ClusterClass in this file (other documents pass through unchanged).",
)
@click.option(
    "--worker-class",
    "flavors",
    multiple=True,
    callback=_worker_class,
    help="With -f: an autoscaled worker class, NAME=CPU,MEMORY[,PRICE] (repeat).",
)
@click.option("--namespace", default="default", show_default=True, help="With --example: their namespace.")
def render_clusterclass(
    example: str | None, filename: TextIO | None, flavors: list[WorkerFlavor], namespace: str
) -> None:
    """kapstan's ClusterClass variable and patches: an example, or merged into your ClusterClass."""
    if (example is None) == (filename is None):
        raise click.UsageError("give either --example or -f FILE")
    if example == "openstack":
        _echo(examples.openstack(namespace))
        return
    if example == "sandbox":
        _echo(examples.sandbox(namespace))
        return
    assert filename is not None
    if not flavors:
        raise click.UsageError("-f needs at least one --worker-class")
    docs = [d for d in yaml.safe_load_all(filename) if d]
    classes = [d for d in docs if d.get("kind") == "ClusterClass"]
    if len(classes) != 1:
        raise click.UsageError(f"expected one ClusterClass in {filename.name}, found {len(classes)}")
    try:
        merged = [clusterclass.merge(d, flavors) if d is classes[0] else d for d in docs]
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    names = {f.worker_class for f in flavors}
    referenced = {
        w["bootstrap"]["templateRef"]["name"]
        for w in classes[0]["spec"]["workers"]["machineDeployments"]
        if w["class"] in names
        and w.get("bootstrap", {}).get("templateRef", {}).get("kind") == "KubeadmConfigTemplate"
    }
    for template in clusterclass.missing_taints_field(
        [d for d in docs if d["metadata"]["name"] in referenced]
    ):
        click.echo(
            f"warning: KubeadmConfigTemplate {template} has no joinConfiguration.nodeRegistration.taints; "
            "add `taints: []` or the taint patch fails the topology reconcile",
            err=True,
        )
    _echo(merged)


_instance_type_option = click.option(
    "--instance-type",
    "instance_types",
    multiple=True,
    help="Limit the default NodePool to these flavors (repeat); default: every flavor kapstan finds.",
)


@render_group.command("install")
@_namespace_option
@_cluster_option
@click.option("--image", default=DEFAULT_IMAGE, show_default=True)
@click.option("--replicas", type=click.IntRange(min=1), default=2, show_default=True)
@_instance_type_option
@click.option(
    "--variable",
    default="{}",
    show_default=True,
    help="The kapstanAutoscaling value (YAML or JSON) the default NodePool follows, e.g. "
    "'{nodePool: {cpuLimit: 32}, workerClasses: [c3-8]}'; workerClasses stand for instance types "
    "unless --instance-type is given.",
)
@click.option(
    "--bundle",
    is_flag=True,
    help="As ClusterResourceSet bundle (ConfigMaps, Secret, CRS) for the management cluster, in the Cluster's "
    "namespace, selecting the Cluster labelled kapstan.io/autoscaler=NAME.",
)
@click.option(
    "--management-kubeconfig",
    type=click.File("r"),
    default=None,
    help="With --bundle: the credential to deliver (as a resource-set Secret); without it, none is.",
)
def render_install(
    namespace: str,
    cluster: ClusterRef,
    image: str,
    replicas: int,
    instance_types: tuple[str, ...],
    variable: str,
    bundle: bool,
    management_kubeconfig: TextIO | None,
) -> None:
    """The workload-side install: CRDs, RBAC, the Deployment, a default NodePool and NodeClass."""
    try:
        value = yaml.safe_load(variable)
    except yaml.YAMLError as error:
        raise click.BadParameter(f"not YAML or JSON: {error}", param_hint="--variable") from error
    if not isinstance(value, dict):
        raise click.BadParameter("must be a mapping", param_hint="--variable")
    # Read the value as the addon reads it from a Cluster's topology, so both render the same NodePool.
    topology = {"variables": [{"name": clusterclass.VARIABLE, "value": {"enabled": True, **value}}]}
    wanted = clusterclass.settings({"spec": {"topology": topology}})
    groups = install_bundle.workload_install(
        cluster.namespace,
        cluster.name,
        wanted,
        instance_types or wanted.worker_classes,
        namespace=namespace,
        image=image,
        replicas=replicas,
    )
    if not bundle:
        if management_kubeconfig is not None:
            raise click.UsageError("--management-kubeconfig needs --bundle")
        _echo([m for group in groups for m in group])
        return
    kubeconfig = management_kubeconfig.read() if management_kubeconfig is not None else None
    _echo_blocks(
        install_bundle.bundle(cluster.namespace, cluster.name, groups, kubeconfig, namespace=namespace)
    )


@render_group.command("addon")
@click.option(
    "--management-server",
    required=True,
    help="This management API server's URL as workload clusters reach it.",
)
@_namespace_option
@click.option("--image", default=DEFAULT_IMAGE, show_default=True)
@click.option(
    "--infrastructure-group",
    "infrastructure_groups",
    multiple=True,
    help=f"The providers' API groups (repeat); default: {rbac.DEFAULT_INFRASTRUCTURE_GROUP}.",
)
@click.option(
    "--management-ca-file",
    type=click.File("rb"),
    default=None,
    help="PEM CA for --management-server when it is not the cluster's own CA.",
)
def render_addon(
    management_server: str,
    namespace: str,
    image: str,
    infrastructure_groups: tuple[str, ...],
    management_ca_file: BinaryIO | None,
) -> None:
    """The management-side addon: namespace, RBAC and the `kapstan addon` Deployment."""
    ca_data = base64.b64encode(management_ca_file.read()).decode() if management_ca_file else ""
    _echo(
        addon(
            management_server,
            namespace=namespace,
            image=image,
            infrastructure_groups=infrastructure_groups or (rbac.DEFAULT_INFRASTRUCTURE_GROUP,),
            ca_data=ca_data,
        )
    )
