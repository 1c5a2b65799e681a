"""``kapstan run``: connect to both clusters, start the informers, elect a leader, run the controllers.

Every replica keeps its informers warm, so a new leader acts on a full cache within seconds; only the
Lease holder runs controllers. ``/readyz`` turns ready once every informer has synced, ``/healthz`` while
the event loop answers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from kapstan.capi.cache import read_cluster
from kapstan.capi.provider import CloudProvider
from kapstan.controllers import offering_records
from kapstan.controllers.batcher import BatchWindow
from kapstan.controllers.disruption import Disruption, DisruptionOptions
from kapstan.controllers.nodeclaim import (
    Adoption,
    LeakedReplicas,
    Lifecycle,
    NodeClaimController,
    StrayMachines,
    Terminator,
    Timeouts,
)
from kapstan.controllers.provisioner import Provisioner
from kapstan.controllers.state import ClusterRef, ClusterState
from kapstan.controllers.status import NodeClassStatus, NodePoolStatus
from kapstan.controllers.templatetaints import TemplateTaints
from kapstan.controllers.unserved import UnservedObjects
from kapstan.kube.backoff import Backoff
from kapstan.kube.client import Client
from kapstan.kube.clock import SYSTEM_CLOCK, Clock
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder
from kapstan.kube.leader import LeaderConfig, LeaderElector
from kapstan.observability import metrics, server

log = logging.getLogger(__name__)
T = TypeVar("T")


class StartupError(Exception):
    """kapstan cannot start: a kubeconfig or the Cluster is missing. The message says which."""


@dataclass(frozen=True)
class Options:
    cluster: ClusterRef
    workload_kubeconfig: str | None = None
    management_kubeconfig: str | None = None
    engine: str | None = None
    metrics_address: str = "0.0.0.0:8080"
    leader_elect: bool = True
    leader_election_namespace: str = "kube-system"
    leader_election_id: str = "kapstan"
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}_{os.getpid()}")
    leader: LeaderConfig = field(default_factory=LeaderConfig)
    batch: BatchWindow = field(default_factory=BatchWindow)
    timeouts: Timeouts = field(default_factory=Timeouts)
    disruption: DisruptionOptions = field(default_factory=DisruptionOptions)


class Manager:
    def __init__(
        self, options: Options, workload: Client, management: Client, *, clock: Clock = SYSTEM_CLOCK
    ) -> None:
        """``clock`` drives every controller's waits, retries and timeouts (one clock, so a test that
        advances a ``FakeClock`` moves all of them together)."""
        self.options = options
        self.state = ClusterState(workload, management, options.cluster, clock=clock)
        self.events = EventRecorder(workload, "kapstan", clock=clock)
        # The state's provider reads Machines from its management informers: one cache, no extra calls.
        self.provider: CloudProvider = self.state.provider
        self.provisioner = Provisioner(
            self.state, self.events, engine=options.engine, window=options.batch, clock=clock
        )
        lifecycle = Lifecycle(
            self.state, self.provider, self.events, self.state.simulation_input, options.timeouts, clock=clock
        )
        terminator = Terminator(self.state, self.provider, self.events, clock=clock)
        self.nodeclaims = NodeClaimController(self.state, self.provider, lifecycle, terminator, clock=clock)
        self.adoption = Adoption(self.state, self.provider, self.events, clock=clock)
        # Machine Events belong with the Machines, in the management cluster.
        self.strays = StrayMachines(
            self.state, self.provider, EventRecorder(management, "kapstan", clock=clock), clock=clock
        )
        self.leaked_replicas = LeakedReplicas(self.state, self.provider, clock=clock)
        self.disruption = Disruption(
            self.state, self.provider, self.events, options.disruption, engine=options.engine, clock=clock
        )
        # Template Events are about MDs, so they belong in the management cluster.
        self.template_taints = TemplateTaints(
            self.provider, EventRecorder(management, "kapstan", clock=clock), clock=clock
        )
        self.nodepool_status = NodePoolStatus(self.state, self.provider, self.events, clock=clock)
        self.nodeclass_status = NodeClassStatus(self.state, self.provider, self.events, clock=clock)
        self.unserved = UnservedObjects(workload, self.events, clock=clock)
        self.state.nodes.add_handler(lambda _: metrics.NODES.set(len(self.state.nodes.store)))

    async def run(self) -> None:
        host, _, port = self.options.metrics_address.rpartition(":")
        http = await server.serve(host or "0.0.0.0", int(port), lambda: self.state.synced)
        informers = asyncio.ensure_future(self.state.run())
        try:
            if self.options.leader_elect:
                elector = LeaderElector(
                    self.state.workload,
                    self.options.leader_election_namespace,
                    self.options.leader_election_id,
                    self.options.identity,
                    self.options.leader,
                    # The renewal thread's own connection, on its own loop (kube/leader.py).
                    connect=lambda: Client.connect(self.options.workload_kubeconfig),
                )
                await elector.run(self.lead)
            else:
                await self.lead()
        finally:
            informers.cancel()
            await asyncio.gather(informers, return_exceptions=True)
            http.close()

    async def lead(self) -> None:
        log.info("leading", extra={"identity": self.options.identity})
        await self.state.wait_synced()
        restored = offering_records.restore(self.state)
        log.info("caches synced; starting controllers", extra={"offerings_backed_off": restored})
        await asyncio.gather(
            self.provisioner.run(),
            self.nodeclaims.run(),
            self.adoption.run(),
            self.strays.run(),
            self.leaked_replicas.run(),
            self.disruption.run(),
            self.template_taints.run(),
            self.nodepool_status.run(),
            self.nodeclass_status.run(),
            self.unserved.run(),
        )


STARTUP_BACKOFF = Backoff(initial=1.0, maximum=30.0)


async def connect(options: Options) -> tuple[Client, Client]:
    """Both clients, checked: the kubeconfigs exist, the servers answer, the Cluster is there.

    A missing kubeconfig or Cluster is a configuration error and ends the process with a clear message.
    An API server that does not answer (yet) is waited for, with backoff and a log line per attempt:
    exiting would only turn an outage of the API server into a crash loop of the operator.
    """
    for flag, path in (
        ("--workload-kubeconfig", options.workload_kubeconfig),
        ("--management-kubeconfig", options.management_kubeconfig),
    ):
        if path is not None and not Path(path).is_file():
            raise StartupError(f"{flag}: no kubeconfig at {path}")
    workload = await _reachable(lambda: Client.connect(options.workload_kubeconfig))
    management = (
        workload
        if options.management_kubeconfig == options.workload_kubeconfig
        else await _reachable(lambda: Client.connect(options.management_kubeconfig))
    )
    cluster = options.cluster
    if await _reachable(lambda: read_cluster(management, cluster.namespace, cluster.name)) is None:
        raise StartupError(f"--cluster: Cluster {cluster} not found in the management cluster")
    return workload, management


async def _reachable(call: Callable[[], Awaitable[T]]) -> T:
    """``call()``, retried while no HTTP answer comes back; any answer that is an error is fatal."""
    failures = 0
    while True:
        try:
            return await call()
        except ApiError as error:
            if error.status != 0:
                raise StartupError(str(error)) from error
            delay = STARTUP_BACKOFF.delay(failures)
            log.warning("API server unreachable, retrying in %.0fs: %s", delay, error)
            failures += 1
            await asyncio.sleep(delay)
