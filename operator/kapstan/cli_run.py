"""``kapstan run``: the autoscaler itself (docs/architecture.md#the-two-clusters for the flags)."""

from __future__ import annotations

import asyncio
import logging
import signal
import sys

import click

from kapstan.controllers.disruption import DisruptionOptions, MinSaving
from kapstan.controllers.manager import Manager, Options, StartupError, connect
from kapstan.controllers.nodeclaim import Timeouts
from kapstan.controllers.state import ClusterRef
from kapstan.observability import logging as logs

log = logging.getLogger(__name__)


@click.command("run")
@click.option("--cluster", required=True, help="The Cluster to autoscale, NAMESPACE/NAME (management side).")
@click.option("--workload-kubeconfig", default=None, help="Default: in-cluster, or $KUBECONFIG.")
@click.option("--management-kubeconfig", default=None, help="Default: the workload cluster's credentials.")
@click.option("--engine", type=click.Choice(["rust", "python"]), default=None, help="Default: rust if built.")
@click.option(
    "--metrics-address", default="0.0.0.0:8080", show_default=True, help="/metrics, /healthz, /readyz."
)
@click.option("--leader-elect/--no-leader-elect", default=True, show_default=True)
@click.option("--leader-election-namespace", default="kube-system", show_default=True)
@click.option("--leader-election-id", default="kapstan", show_default=True, help="The Lease's name.")
@click.option("--launch-timeout", default=300.0, show_default=True, help="Seconds for a NodeClaim to launch.")
@click.option(
    "--registration-timeout",
    default=900.0,
    show_default=True,
    help="Seconds from launch to a registered Node.",
)
@click.option(
    "--disruption-validation-delay",
    default=15.0,
    show_default=True,
    help="Seconds a disruption decision must keep holding before kapstan acts on it.",
)
@click.option(
    "--consolidation-min-saving",
    default=0.05,
    show_default=True,
    help="Least saving of a consolidation replace, as a fraction of the replaced nodes' price.",
)
@click.option(
    "--consolidation-min-saving-per-hour",
    default=0.0,
    show_default=True,
    help="Least saving of a consolidation replace, per hour, in the catalog's price unit.",
)
@click.option(
    "--consolidation-settled-within",
    default=0.03,
    show_default=True,
    help="A NodePool that costs at most this fraction more than its pods planned from empty gets no "
    "underutilized consolidation (its fixed point).",
)
@click.option(
    "--consolidation-min-pool-saving",
    default=0.02,
    show_default=True,
    help="Least saving of a consolidation command, as a fraction of the price of the NodePools it "
    "takes nodes from.",
)
@click.option("--log-level", default="info", show_default=True)
@click.option("--log-format", type=click.Choice(["json", "text"]), default="json", show_default=True)
def run_command(
    cluster: str,
    workload_kubeconfig: str | None,
    management_kubeconfig: str | None,
    engine: str | None,
    metrics_address: str,
    leader_elect: bool,
    leader_election_namespace: str,
    leader_election_id: str,
    launch_timeout: float,
    registration_timeout: float,
    disruption_validation_delay: float,
    consolidation_min_saving: float,
    consolidation_min_saving_per_hour: float,
    consolidation_settled_within: float,
    consolidation_min_pool_saving: float,
    log_level: str,
    log_format: str,
) -> None:
    """Watch pending pods and provision the cheapest right-sized nodes by scaling MachineDeployments."""
    try:
        logs.configure(log_level, "json" if log_format == "json" else "text")
        options = Options(
            cluster=ClusterRef.parse(cluster),
            workload_kubeconfig=workload_kubeconfig,
            management_kubeconfig=management_kubeconfig or workload_kubeconfig,
            engine=engine,
            metrics_address=metrics_address,
            leader_elect=leader_elect,
            leader_election_namespace=leader_election_namespace,
            leader_election_id=leader_election_id,
            timeouts=Timeouts(launch=launch_timeout, registration=registration_timeout),
            disruption=DisruptionOptions(
                validation_delay=disruption_validation_delay,
                min_saving=MinSaving(
                    consolidation_min_saving,
                    consolidation_min_saving_per_hour,
                    consolidation_settled_within,
                    consolidation_min_pool_saving,
                ),
                replacement_timeout=launch_timeout + registration_timeout,
            ),
        )
        asyncio.run(_run(options))
    except (StartupError, ValueError) as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        pass


async def _run(options: Options) -> None:
    # SIGTERM (a pod's shutdown) ends the run as Ctrl-C does: the controllers are cancelled and the
    # Lease is released, so a successor need not wait for it to expire.
    main = asyncio.current_task()
    assert main is not None
    terminated = False

    def terminate() -> None:
        nonlocal terminated
        terminated = True
        main.cancel()

    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, terminate)
    try:
        workload, management = await connect(options)
        await Manager(options, workload, management).run()
    except asyncio.CancelledError:
        if not terminated:
            raise
        log.info("terminated")
