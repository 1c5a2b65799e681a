"""What kapstan would do on a running cluster now, read the way the operator reads it and writing nothing.

The clusters are read through the operator's own ``ClusterState``: its informers are listed once (no
watch) and the snapshot is the disruption loop's (``Observer``), so pending pods, nodes, in-flight
NodeClaims, DaemonSet overhead and the catalog are exactly what ``kapstan run`` would plan on. The pending
pods are solved as the provisioner solves them; consolidation is the disruption core's pure choice
(``methods.choose``) over the candidates the operator would see. Both clients refuse every verb but GET
(``Client.read_only``), so a write reached by mistake fails instead of changing the cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from kapstan import scheduling
from kapstan.controllers.disruption.consolidation import Decision, MinSaving
from kapstan.controllers.disruption.methods import Observed, choose
from kapstan.controllers.disruption.observe import Observer
from kapstan.controllers.manager import Options, connect
from kapstan.controllers.state import ClusterRef, ClusterState
from kapstan.convert.unserved import unserved_objects
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EventRecorder
from kapstan.scheduling.model import Plan, Snapshot

SEARCH_SECONDS = 10.0
"""The consolidation search's time budget, the operator's default."""


@dataclass(frozen=True)
class Consolidation:
    """What the disruption loop would decide now: ``reason`` and ``decision``, or None and why not."""

    reason: str
    decision: Decision | None
    candidates: int
    blocked: tuple[str, ...]
    """Candidates something protects, with what protects them."""


@dataclass(frozen=True)
class LiveView:
    state: ClusterState
    seen: Observed
    snapshot: Snapshot
    not_served: tuple[str, ...]
    solve: Callable[[Snapshot], Plan]


async def read_cluster(
    cluster: ClusterRef,
    workload_kubeconfig: str | None,
    management_kubeconfig: str | None,
    engine: str | None,
) -> LiveView:
    """Connect read-only, list every informer once, and observe as the disruption loop does."""
    options = Options(
        cluster=cluster,
        workload_kubeconfig=workload_kubeconfig,
        management_kubeconfig=management_kubeconfig or workload_kubeconfig,
    )
    workload, management = await connect(options)
    workload, management = workload.read_only(), management.read_only()
    state = ClusterState(workload, management, cluster)
    try:
        await asyncio.gather(*(informer.relist() for informer in state.informers))
    except ApiError as error:
        if error.not_found:
            # A cluster that never ran kapstan lacks its CRDs: planning needs them and a NodePool, not the operator.
            raise ValueError(
                f"{error}: install kapstan's CRDs (`kapstan render crds | kubectl apply -f -`), a NodePool "
                "and its ClusterAPINodeClass; the operator need not run"
            ) from error
        raise
    return await view_of(state, engine, await unserved_objects(workload, "the workload cluster"))


async def view_of(state: ClusterState, engine: str | None, not_served: Sequence[str] = ()) -> LiveView:
    """What the disruption loop's observer sees in ``state``'s stores now (it writes nothing when it
    does not ``announce``)."""
    observer = Observer(state, state.provider, EventRecorder(state.workload), lambda: datetime.now(UTC))
    seen = await observer.observe(observer.pools(), datetime.now(UTC), announce=False)
    if seen.snapshot is None:
        raise ValueError(
            f"cannot describe Cluster {state.cluster}: see the NodePools' and NodeClasses' status"
        )
    return LiveView(state, seen, seen.snapshot, tuple(not_served), lambda s: scheduling.solve(s, engine))


def pending_plan(view: LiveView) -> Plan:
    """The provisioner's plan for the pods pending now."""
    return view.solve(view.snapshot)


def consolidation(view: LiveView, min_saving: MinSaving | None = None) -> Consolidation:
    """The one command the disruption loop would start now, before its validation delay."""
    found = choose(view.seen, view.solve, min_saving or MinSaving(), SEARCH_SECONDS)
    blocked = tuple(f"{c.describe()}: {c.blocked}" for c in view.seen.candidates if c.blocked)
    reason, decision = found if found is not None else ("", None)
    return Consolidation(reason, decision, len(view.seen.candidates), blocked)
