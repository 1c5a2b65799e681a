"""``kapstan addon``: the management-side controller (``kapstan.addon``), installed with ``kapstan render addon``."""

from __future__ import annotations

import asyncio
import sys

import click

from kapstan.addon import Addon, AddonOptions
from kapstan.install import rbac
from kapstan.install.deployment import DEFAULT_IMAGE
from kapstan.kube.client import Client
from kapstan.kube.errors import ApiError
from kapstan.observability import logging as logs
from kapstan.observability import server


@click.command("addon")
@click.option(
    "--management-server",
    required=True,
    help="This management API server's URL as workload clusters reach it (goes into their credential).",
)
@click.option(
    "--management-ca-data",
    default="",
    help="Base64 PEM CA for --management-server, if it is not the cluster's own CA (e.g. behind a load "
    "balancer with its own certificate).",
)
@click.option(
    "--kubeconfig", default=None, help="The management cluster; default: in-cluster, or $KUBECONFIG."
)
@click.option("--image", default=DEFAULT_IMAGE, show_default=True, help="The autoscaler image to install.")
@click.option(
    "--namespace",
    default=rbac.DEFAULT_NAMESPACE,
    show_default=True,
    help="kapstan's namespace in the workload clusters.",
)
@click.option("--replicas", type=click.IntRange(min=1), default=2, show_default=True)
@click.option(
    "--health-address",
    default="0.0.0.0:8081",
    show_default=True,
    help="/healthz, and /readyz once the Clusters are listed.",
)
@click.option("--log-level", default="info", show_default=True)
@click.option("--log-format", type=click.Choice(["json", "text"]), default="json", show_default=True)
def addon_command(
    management_server: str,
    management_ca_data: str,
    kubeconfig: str | None,
    image: str,
    namespace: str,
    replicas: int,
    health_address: str,
    log_level: str,
    log_format: str,
) -> None:
    """Install kapstan into every Cluster whose topology sets kapstanAutoscaling.enabled, remove it when unset."""
    logs.configure(log_level, "json" if log_format == "json" else "text")
    options = AddonOptions(
        management_server, image=image, namespace=namespace, replicas=replicas, ca_data=management_ca_data
    )
    try:
        asyncio.run(_run(kubeconfig, options, health_address))
    except ApiError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        pass


async def _run(kubeconfig: str | None, options: AddonOptions, health_address: str) -> None:
    client = await Client.connect(kubeconfig)
    addon = Addon(client, options)
    host, _, port = health_address.rpartition(":")
    # The operator's endpoint: /healthz fails when the event loop is wedged, which is what the probe is for.
    http = await server.serve(host or "0.0.0.0", int(port), lambda: addon.clusters.has_synced)
    try:
        await addon.run()
    finally:
        http.close()
        await http.wait_closed()
