"""The provider's fresh reads and its writes of MDs and Machines, on the management API server.

A launch or a delete decides from what the API server says now, not from the informers (the cache may
lag the MachineSet by a watch event, and a decision on a stale count would scale twice). These are the
calls both paths share: the MD and its Cluster (refusing a paused one), the MD's Machines, the
``scale`` write conditional on ``spec.replicas``, and the claim annotation conditional on the Machine
being unclaimed. Each error is worded ``"{what}: ..."`` after the caller's subject.
"""

from __future__ import annotations

import asyncio
import builtins
import time

from kapstan.api.wellknown import NODECLAIM_ANNOTATION
from kapstan.capi import contract as c
from kapstan.capi import topology
from kapstan.capi.cache import read_cluster
from kapstan.capi.provider import CreateError, LaunchedMachine, MachineRef, NotFound, Paused
from kapstan.capi.reads import launched
from kapstan.catalog import FlavorSource
from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.errors import ApiError
from kapstan.kube.jsonpatch import AlsoLost, Op, patch_if_unchanged, set_members

ANNOTATIONS = ("metadata", "annotations")


class MachineDeploymentApi:
    def __init__(self, client: Client, *, entry_timeout: float, poll_interval: float) -> None:
        """``entry_timeout``: how long a worker-class launch waits for the topology to make its MD."""
        self._client = client
        self._entry_timeout = entry_timeout
        self._poll_interval = poll_interval

    async def machine_deployment(self, source: FlavorSource, what: str) -> tuple[str, str]:
        """The namespace and name of the MD behind a flavor source: the MD itself, or the one the
        topology made for the entry (adding the entry first if the Cluster has none of that name)."""
        if source.kind == "MachineDeployment":
            return source.namespace, source.name
        selector = f"{c.CLUSTER_NAME_LABEL}={source.cluster},{c.TOPOLOGY_DEPLOYMENT_LABEL}={source.name}"
        deadline = time.monotonic() + self._entry_timeout
        while not (found := await self.list(c.MACHINEDEPLOYMENTS, source.namespace, selector)):
            await topology.add_entry(self._client, source, what)
            if time.monotonic() > deadline:
                raise CreateError(
                    f"{what}: Cluster {source.namespace}/{source.cluster} has no MachineDeployment for "
                    f"topology entry {source.name} (class {source.worker_class}) "
                    f"after {self._entry_timeout:.0f}s"
                )
            await asyncio.sleep(self._poll_interval)
        return c.namespace(found[0]), c.name(found[0])

    async def get_md(self, namespace: str, name: str, what: str) -> Object:
        try:
            return await self._client.get(c.MACHINEDEPLOYMENTS, name, namespace)
        except ApiError as error:
            if error.not_found:
                raise NotFound(f"{what}: MachineDeployment {namespace}/{name} not found") from error
            raise

    async def get_machine(self, machine: MachineRef) -> Object | None:
        try:
            return await self._client.get(c.MACHINES, machine.name, machine.namespace)
        except ApiError as error:
            if error.not_found:
                return None
            raise

    async def refuse_if_paused(self, md: Object, what: str) -> None:
        if c.PAUSED_ANNOTATION in c.annotations_of(md):
            raise Paused(f"{what}: {c.display(md)} is paused")
        cluster_name = c.cluster_name(md)
        cluster = await read_cluster(self._client, c.namespace(md), cluster_name)
        if cluster is None:
            raise NotFound(f"{what}: Cluster {c.namespace(md)}/{cluster_name} not found")
        if c.cluster_paused(cluster):
            raise Paused(f"{what}: Cluster {c.namespace(md)}/{cluster_name} is paused")

    async def machines(self, namespace: str, md_name: str) -> list[Object]:
        return await self.list(c.MACHINES, namespace, f"{c.DEPLOYMENT_NAME_LABEL}={md_name}")

    async def list(self, resource: Resource, namespace: str, selector: str) -> list[Object]:
        found = await self._client.request(
            "GET", resource, namespace=namespace, params={"labelSelector": selector}
        )
        return sorted(found.get("items", []), key=c.name)

    async def claim(self, machine: Object, nodeclaim: str) -> LaunchedMachine | None:
        """Annotate the Machine as ``nodeclaim``'s if it is still free: nobody claimed it, marked it for
        deletion or started deleting it since read; None if someone did, or it went.

        The condition is on those fields alone (JSON patch ``test``s that they are absent, which the API
        server's json-patch passes for a missing member tested against null), not on the Machine's
        resourceVersion: CAPI's status writes, which race every new Machine as it boots, made a third of
        the claims fail and wait for another round (bench.live, issue 14). Two claimers of one Machine
        still cannot both win: the API server applies patches to one object one at a time, and the
        second one's ``test`` sees the first one's annotation."""
        unclaimed = {NODECLAIM_ANNOTATION: None, c.DELETE_MACHINE_ANNOTATION: None}
        patch: list[Op] = [
            {"op": "test", "path": "/metadata/deletionTimestamp", "value": None},
            *set_members(machine, ANNOTATIONS, {NODECLAIM_ANNOTATION: nodeclaim}, tested=unclaimed),
        ]
        claimed = await self._write(c.MACHINES, machine, patch, also_lost=("conflict", "not_found"))
        return launched(claimed) if claimed is not None else None

    async def mark_for_deletion(self, machine: Object, *, conditional: bool) -> bool:
        """Annotate ``cluster.x-k8s.io/delete-machine``; when ``conditional``, only if the Machine's claim
        annotation is still as read (False if not: a launch claimed it meanwhile; read it again).

        A JSON patch testing that one annotation, not the Machine's resourceVersion, which CAPI's status
        writes move all through a Machine's life (each one a lost race and another round). False too when
        the Machine had no annotations when read and has some now (the map is added whole, tested absent)."""
        tested = (
            {NODECLAIM_ANNOTATION: c.annotations_of(machine).get(NODECLAIM_ANNOTATION)} if conditional else {}
        )
        patch = set_members(machine, ANNOTATIONS, {c.DELETE_MACHINE_ANNOTATION: "true"}, tested=tested)
        return await self._write(c.MACHINES, machine, patch) is not None

    async def scale(self, md: Object, replicas: int) -> bool:
        """Set replicas through the scale subresource if they are still what ``md`` says; False if not.

        The condition is on ``spec.replicas`` itself (a JSON patch ``test``), not on the MD's
        resourceVersion, so CAPI's own status writes, which race every scale-up, do not make it fail,
        while another writer's change of replicas does (the caller re-reads and decides again).
        """
        current = c.replicas(md)
        # autoscaling/v1 Scale omits replicas at 0 (omitempty): then the spec is tested as empty.
        test: Op = (
            {"op": "test", "path": "/spec/replicas", "value": current}
            if current
            else {"op": "test", "path": "/spec", "value": {}}
        )
        patch = [test, {"op": "add", "path": "/spec/replicas", "value": replicas}]
        scaled = await self._write(
            c.MACHINEDEPLOYMENTS, md, patch, subresource="scale", also_lost=("conflict",)
        )
        return scaled is not None

    async def _write(
        self,
        resource: Resource,
        read: Object,
        patch: builtins.list[Op],
        *,
        subresource: str = "",
        also_lost: tuple[AlsoLost, ...] = (),
    ) -> Object | None:
        """``patch_if_unchanged`` on the object ``read`` (its name and namespace): each write here is a JSON
        patch conditional on what it read of that object."""
        return await patch_if_unchanged(
            self._client,
            resource,
            c.name(read),
            patch,
            namespace=c.namespace(read),
            subresource=subresource,
            also_lost=also_lost,
        )
