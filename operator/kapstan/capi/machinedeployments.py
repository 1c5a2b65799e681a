"""``CloudProvider`` on MachineDeployments: one node is one more replica, and a claimed Machine.

Scaling goes through the MD's ``scale`` subresource with JSON patches that ``test`` the replicas they
change, so another writer's change of replicas makes us re-read instead of overwriting, while CAPI's own
status writes (which move the resourceVersion all through a scale-up) do not. Creates and deletes of
one MD are serialized by an asyncio lock per MD, and both decide from the Machines that exist, not from
memory: a create counts Machines the MD still owes (replicas above its live Machines) before scaling, and
a delete lowers replicas only while they exceed the Machines that stay. So retrying either after a crash
does not move the MD twice. Scale-down always marks the Machine ``cluster.x-k8s.io/delete-machine``
first, which MachineSets delete before any other (docs/architecture.md#capi-facts).
"""

from __future__ import annotations

import asyncio
import builtins
import time
from collections import defaultdict
from typing import Any

from kapstan.api.wellknown import NODECLAIM_ANNOTATION
from kapstan.capi import contract as c
from kapstan.capi import topology
from kapstan.capi.cache import ManagementCache
from kapstan.capi.provider import (
    BelowMinSize,
    CloudProvider,
    CreateError,
    InsufficientCapacity,
    LaunchBlocked,
    LaunchedMachine,
    LaunchRequest,
    MachineRef,
    NotFound,
    Paused,
    RollingOut,
)
from kapstan.capi.reads import CachedReads
from kapstan.capi.reads import claim_of as _claim
from kapstan.capi.reads import deleting as _deleting
from kapstan.capi.reads import launched as _launched
from kapstan.capi.revisions import TemplateRevisions
from kapstan.catalog import FlavorSource
from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.errors import ApiError


class MachineDeploymentProvider(CachedReads, TemplateRevisions, CloudProvider):
    """Launches and removes nodes by scaling MDs in the management cluster that ``client`` talks to."""

    def __init__(
        self,
        client: Client,
        cache: ManagementCache,
        *,
        machine_timeout: float = 60.0,
        poll_interval: float = 0.25,
    ) -> None:
        """``machine_timeout``: how long ``create`` waits for the MachineSet to stamp a new Machine."""
        super().__init__(cache)
        self._client = client
        self._machine_timeout = machine_timeout
        self._poll_interval = poll_interval
        self._locks: defaultdict[tuple[str, str], asyncio.Lock] = defaultdict(asyncio.Lock)

    # -- create ----------------------------------------------------------------------------------------

    async def create(self, request: LaunchRequest) -> LaunchedMachine:
        what = f"launching nodeclaim {request.nodeclaim}"
        md = await self._machine_deployment(request.source, what)
        ns, md_name = c.namespace(md), c.name(md)
        wait = self._machine_timeout if request.wait is None else min(request.wait, self._machine_timeout)
        async with self._locks[ns, md_name]:
            deadline = time.monotonic() + wait
            scaled = False
            while True:
                md = await self._get_md(ns, md_name, what)
                await self._refuse_if_paused(md, what)
                machines = await self._machines(ns, md_name)
                for machine in machines:
                    if _claim(machine) == request.nodeclaim and not _deleting(machine):
                        return _launched(machine)
                free = [m for m in machines if not _claim(m) and not _deleting(m)]
                if free:
                    claimed = await self._claim(free[0], request.nodeclaim)
                    if claimed is not None:
                        return claimed
                    continue  # someone changed that Machine; look again
                live = sum(1 for m in machines if not _deleting(m))
                blocked = c.scale_up_blocked(md)
                if blocked:
                    # No Machine will come: take back the replica this call added, not anyone else's.
                    if scaled and c.replicas(md) > live:
                        await self._scale(md, c.replicas(md) - 1)
                    raise LaunchBlocked(f"{what}: {c.display(md)}: {blocked}")
                # Replicas above the live Machines are Machines on their way (an earlier attempt scaled):
                # wait for them rather than scaling again.
                if not scaled and c.replicas(md) <= live:
                    scaled = await self._scale_up(md, what)
                    if not scaled:
                        continue  # the MD changed under us; re-read before deciding again
                if time.monotonic() > deadline:
                    raise CreateError(f"{what}: no new Machine of {ns}/{md_name} within {wait:.0f}s")
                await asyncio.sleep(self._poll_interval)

    async def _scale_up(self, md: Object, what: str) -> bool:
        """Raise replicas by one; False if the MD changed since it was read."""
        target = c.replicas(md) + 1
        maximum = c.size_bound(md, c.MAX_SIZE_ANNOTATION)
        if maximum is not None and target > maximum:
            raise InsufficientCapacity(f"{what}: {c.display(md)} is at its max size {maximum}")
        return await self._scale(md, target)

    async def _claim(self, machine: Object, nodeclaim: str) -> LaunchedMachine | None:
        patch = {
            "metadata": {
                "resourceVersion": c.resource_version(machine),
                "annotations": {NODECLAIM_ANNOTATION: nodeclaim},
            }
        }
        try:
            claimed = await self._client.patch(
                c.MACHINES, c.name(machine), patch, namespace=c.namespace(machine)
            )
        except ApiError as error:
            if error.conflict or error.not_found:
                return None
            raise
        return _launched(claimed)

    # -- delete ----------------------------------------------------------------------------------------

    async def delete(self, machine: MachineRef, *, claimed_by: str | None = None) -> None:
        what = f"deleting Machine {machine.namespace}/{machine.name}"
        found = await self._get_machine(machine)
        if found is None:
            return
        md_name = c.labels_of(found).get(c.DEPLOYMENT_NAME_LABEL)
        if not md_name:
            raise NotFound(f"{what}: it belongs to no MachineDeployment (no {c.DEPLOYMENT_NAME_LABEL} label)")
        async with self._locks[machine.namespace, md_name]:
            while True:
                found = await self._get_machine(machine)
                if found is None or c.being_deleted(found):
                    return
                if claimed_by is not None and _claim(found) != claimed_by:
                    return  # claimed since the caller looked: no longer a stray
                md = await self._get_md(machine.namespace, md_name, what)
                await self._refuse_if_paused(md, what)
                # With OnDelete, CAPI replaces outdated Machines only as they are deleted: the MD stays
                # RollingOut until someone removes them, so refusing would deadlock a drift replacement.
                if c.condition_true(md, c.ROLLING_OUT_CONDITION) and not c.on_delete(md):
                    raise RollingOut(f"{what}: {c.display(md)} is rolling out")
                others = [
                    m for m in await self._machines(machine.namespace, md_name) if c.name(m) != machine.name
                ]
                staying = sum(1 for m in others if not _deleting(m))
                # Replicas not above the Machines that stay means an earlier attempt already lowered them.
                lower = c.replicas(md) > staying
                minimum = c.size_bound(md, c.MIN_SIZE_ANNOTATION)
                if lower and minimum is not None and c.replicas(md) - 1 < minimum:
                    raise BelowMinSize(f"{what}: {c.display(md)} is at its min size {minimum}")
                if c.DELETE_MACHINE_ANNOTATION not in c.annotations_of(found):
                    mark: dict[str, Any] = {"annotations": {c.DELETE_MACHINE_ANNOTATION: "true"}}
                    if claimed_by is not None:
                        # Conditional: a launch claiming the Machine meanwhile makes this a conflict.
                        mark["resourceVersion"] = c.resource_version(found)
                    try:
                        await self._client.patch(
                            c.MACHINES, machine.name, {"metadata": mark}, namespace=machine.namespace
                        )
                    except ApiError as error:
                        if claimed_by is not None and error.conflict:
                            continue
                        raise
                if not lower or await self._scale(md, c.replicas(md) - 1):
                    return

    async def trim(self, namespace: str, machine_deployment: str) -> int:
        what = f"trimming MachineDeployment {namespace}/{machine_deployment}"
        async with self._locks[namespace, machine_deployment]:
            while True:
                md = await self._get_md(namespace, machine_deployment, what)
                await self._refuse_if_paused(md, what)
                if c.condition_true(md, c.ROLLING_OUT_CONDITION):
                    raise RollingOut(f"{what}: {c.display(md)} is rolling out")
                machines = await self._machines(namespace, machine_deployment)
                live = sum(1 for m in machines if not _deleting(m))
                extra = c.replicas(md) - live
                if extra <= 0:
                    return 0
                if await self._scale(md, live):
                    return extra

    # -- get and list ----------------------------------------------------------------------------------

    async def get(self, machine: MachineRef) -> LaunchedMachine:
        found = await self._get_machine(machine)
        if found is None or not _claim(found):
            raise NotFound(f"Machine {machine.namespace}/{machine.name} does not exist or is not claimed")
        return _launched(found)

    async def list(self, namespace: str, cluster: str) -> list[LaunchedMachine]:
        machines = await self._list(c.MACHINES, namespace, f"{c.CLUSTER_NAME_LABEL}={cluster}")
        return sorted((_launched(m) for m in machines if _claim(m)), key=lambda m: m.ref.name)

    # -- reads and writes ------------------------------------------------------------------------------

    async def _machine_deployment(self, source: FlavorSource, what: str) -> Object:
        """The MD behind a flavor source: the MD itself, or the one the topology made for the entry
        (adding the entry first if the Cluster has none of that name)."""
        if source.kind == "MachineDeployment":
            return await self._get_md(source.namespace, source.name, what)
        selector = f"{c.CLUSTER_NAME_LABEL}={source.cluster},{c.TOPOLOGY_DEPLOYMENT_LABEL}={source.name}"
        deadline = time.monotonic() + self._machine_timeout
        while not (found := await self._list(c.MACHINEDEPLOYMENTS, source.namespace, selector)):
            await topology.add_entry(self._client, source, what)
            if time.monotonic() > deadline:
                raise CreateError(
                    f"{what}: Cluster {source.namespace}/{source.cluster} has no MachineDeployment for "
                    f"topology entry {source.name} (class {source.worker_class}) "
                    f"after {self._machine_timeout:.0f}s"
                )
            await asyncio.sleep(self._poll_interval)
        return found[0]

    async def _get_md(self, namespace: str, name: str, what: str) -> Object:
        try:
            return await self._client.get(c.MACHINEDEPLOYMENTS, name, namespace)
        except ApiError as error:
            if error.not_found:
                raise NotFound(f"{what}: MachineDeployment {namespace}/{name} not found") from error
            raise

    async def _get_machine(self, machine: MachineRef) -> Object | None:
        try:
            return await self._client.get(c.MACHINES, machine.name, machine.namespace)
        except ApiError as error:
            if error.not_found:
                return None
            raise

    async def _refuse_if_paused(self, md: Object, what: str) -> None:
        if c.PAUSED_ANNOTATION in c.annotations_of(md):
            raise Paused(f"{what}: {c.display(md)} is paused")
        cluster_name = c.cluster_name(md)
        try:
            cluster = await self._client.get(c.CLUSTERS, cluster_name, c.namespace(md))
        except ApiError as error:
            if error.not_found:
                raise NotFound(f"{what}: Cluster {c.namespace(md)}/{cluster_name} not found") from error
            raise
        if c.cluster_paused(cluster):
            raise Paused(f"{what}: Cluster {c.namespace(md)}/{cluster_name} is paused")

    async def _machines(self, namespace: str, md_name: str) -> builtins.list[Object]:
        return await self._list(c.MACHINES, namespace, f"{c.DEPLOYMENT_NAME_LABEL}={md_name}")

    async def _list(self, resource: Resource, namespace: str, selector: str) -> builtins.list[Object]:
        found = await self._client.request(
            "GET", resource, namespace=namespace, params={"labelSelector": selector}
        )
        return sorted(found.get("items", []), key=c.name)

    async def _scale(self, md: Object, replicas: int) -> bool:
        """Set replicas through the scale subresource if they are still what ``md`` says; False if not.

        The condition is on ``spec.replicas`` itself (a JSON patch ``test``), not on the MD's
        resourceVersion, so CAPI's own status writes, which race every scale-up, do not make it fail,
        while another writer's change of replicas does (the caller re-reads and decides again).
        """
        current = c.replicas(md)
        # autoscaling/v1 Scale omits replicas at 0 (omitempty): then the spec is tested as empty.
        test = (
            {"op": "test", "path": "/spec/replicas", "value": current}
            if current
            else {"op": "test", "path": "/spec", "value": {}}
        )
        patch = [test, {"op": "add", "path": "/spec/replicas", "value": replicas}]
        try:
            await self._client.patch(
                c.MACHINEDEPLOYMENTS,
                c.name(md),
                patch,
                namespace=c.namespace(md),
                subresource="scale",
                patch_type="json",
            )
        except ApiError as error:
            if error.conflict or error.status == UNPROCESSABLE:
                return False
            raise
        return True


UNPROCESSABLE = 422
"""What the API server answers when a JSON patch's ``test`` fails."""
