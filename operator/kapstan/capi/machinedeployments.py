"""``CloudProvider`` on MachineDeployments: one node is one more replica, and a claimed Machine.

Scaling goes through the MD's ``scale`` subresource with JSON patches that ``test`` the replicas they
change, so another writer's change of replicas makes us re-read instead of overwriting, while CAPI's own
status writes (which move the resourceVersion all through a scale-up) do not (``capi/mdapi.py``).
Launches on one MD wait together and are one replicas write (``capi/launches.py``). Launch rounds,
deletes and trims of one MD are serialized by an asyncio lock per MD, and all decide from the Machines
that exist, not from memory: a launch counts Machines the MD still owes (replicas above its live
Machines) before scaling, and a delete lowers replicas only while they exceed the Machines that stay. So
retrying either after a crash does not move the MD twice. Scale-down always marks the Machine
``cluster.x-k8s.io/delete-machine`` first, which MachineSets delete before any other
(docs/architecture.md#capi-facts).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

from kapstan.capi import contract as c
from kapstan.capi.cache import ManagementCache
from kapstan.capi.launches import GATHER, CoalescedLaunches, MdKey
from kapstan.capi.mdapi import MachineDeploymentApi
from kapstan.capi.provider import (
    BelowMinSize,
    CloudProvider,
    LaunchedMachine,
    LaunchRequest,
    MachineRef,
    NotFound,
    RollingOut,
)
from kapstan.capi.reads import CachedReads
from kapstan.capi.reads import claim_of as _claim
from kapstan.capi.reads import deleting as _deleting
from kapstan.capi.reads import launched as _launched
from kapstan.capi.revisions import TemplateRevisions
from kapstan.kube.client import Client


class MachineDeploymentProvider(CachedReads, TemplateRevisions, CloudProvider):
    """Launches and removes nodes by scaling MDs in the management cluster that ``client`` talks to."""

    def __init__(
        self,
        client: Client,
        cache: ManagementCache,
        *,
        machine_timeout: float = 60.0,
        poll_interval: float = 1.0,
        gather: float = GATHER,
    ) -> None:
        """``machine_timeout``: how long ``create`` waits for the MachineSet to stamp a new Machine;
        ``poll_interval``: the longest between two looks at an MD while launches wait on it (a change the
        informers show makes the next look sooner); ``gather``: how long an idle MD's first round waits
        for more launches (``launches.GATHER``)."""
        super().__init__(cache)
        self._client = client
        self._api = MachineDeploymentApi(client, entry_timeout=machine_timeout, poll_interval=poll_interval)
        self._locks: defaultdict[MdKey, asyncio.Lock] = defaultdict(asyncio.Lock)
        self._launches = CoalescedLaunches(
            self._api,
            self._locks,
            cache,
            machine_timeout=machine_timeout,
            poll_interval=poll_interval,
            gather=gather,
        )

    async def create(self, request: LaunchRequest) -> LaunchedMachine:
        return await self._launches.create(request)

    # -- delete ----------------------------------------------------------------------------------------

    async def delete(self, machine: MachineRef, *, claimed_by: str | None = None) -> None:
        what = f"deleting Machine {machine.namespace}/{machine.name}"
        found = await self._api.get_machine(machine)
        if found is None:
            return
        md_name = c.labels_of(found).get(c.DEPLOYMENT_NAME_LABEL)
        if not md_name:
            raise NotFound(f"{what}: it belongs to no MachineDeployment (no {c.DEPLOYMENT_NAME_LABEL} label)")
        async with self._locks[machine.namespace, md_name]:
            while True:
                found = await self._api.get_machine(machine)
                if found is None or c.being_deleted(found):
                    return
                if claimed_by is not None and _claim(found) != claimed_by:
                    return  # claimed since the caller looked: no longer a stray
                md = await self._api.get_md(machine.namespace, md_name, what)
                await self._api.refuse_if_paused(md, what)
                # With OnDelete, CAPI replaces outdated Machines only as they are deleted: the MD stays
                # RollingOut until someone removes them, so refusing would deadlock a drift replacement.
                if c.condition_true(md, c.ROLLING_OUT_CONDITION) and not c.on_delete(md):
                    raise RollingOut(f"{what}: {c.display(md)} is rolling out")
                machines = await self._api.machines(machine.namespace, md_name)
                staying = sum(1 for m in machines if c.name(m) != machine.name and not _deleting(m))
                # Replicas not above the Machines that stay means an earlier attempt already lowered them.
                lower = c.replicas(md) > staying
                minimum = c.size_bound(md, c.MIN_SIZE_ANNOTATION)
                if lower and minimum is not None and c.replicas(md) - 1 < minimum:
                    raise BelowMinSize(f"{what}: {c.display(md)} is at its min size {minimum}")
                # Conditional for a stray: a launch claiming the Machine meanwhile makes it a conflict.
                marked = c.DELETE_MACHINE_ANNOTATION in c.annotations_of(found)
                if not marked and not await self._api.mark_for_deletion(
                    found, conditional=claimed_by is not None
                ):
                    continue
                if not lower or await self._api.scale(md, c.replicas(md) - 1):
                    return

    async def trim(self, namespace: str, machine_deployment: str) -> int:
        what = f"trimming MachineDeployment {namespace}/{machine_deployment}"
        async with self._locks[namespace, machine_deployment]:
            while True:
                md = await self._api.get_md(namespace, machine_deployment, what)
                await self._api.refuse_if_paused(md, what)
                if c.condition_true(md, c.ROLLING_OUT_CONDITION):
                    raise RollingOut(f"{what}: {c.display(md)} is rolling out")
                machines = await self._api.machines(namespace, machine_deployment)
                live = sum(1 for m in machines if not _deleting(m))
                extra = c.replicas(md) - live
                if extra <= 0:
                    return 0
                if await self._api.scale(md, live):
                    return extra

    # -- get and list ----------------------------------------------------------------------------------

    async def get(self, machine: MachineRef) -> LaunchedMachine:
        found = await self._api.get_machine(machine)
        if found is None or not _claim(found):
            raise NotFound(f"Machine {machine.namespace}/{machine.name} does not exist or is not claimed")
        return _launched(found)

    async def list(self, namespace: str, cluster: str) -> list[LaunchedMachine]:
        machines = await self._api.list(c.MACHINES, namespace, f"{c.CLUSTER_NAME_LABEL}={cluster}")
        return sorted((_launched(m) for m in machines if _claim(m)), key=lambda m: m.ref.name)
