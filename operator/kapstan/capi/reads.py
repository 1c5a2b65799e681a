"""The provider's reads, answered from the management informers (``capi/cache.py``) with no API call.

``MachineDeploymentProvider`` inherits these; they are apart from its create and delete paths because they
never write and never wait: a controller asks which Machine a NodeClaim has, or whose a Node is, as often
as it reconciles, and the answer is as fresh as the watch.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

from kapstan.api.wellknown import NODECLAIM_ANNOTATION
from kapstan.capi import contract as c
from kapstan.capi import drift
from kapstan.capi.cache import BY_DEPLOYMENT, BY_NODECLAIM, BY_PROVIDER_ID, ManagementCache
from kapstan.capi.provider import LaunchedMachine, MachineDeploymentRef, MachineRef
from kapstan.catalog import FlavorSource
from kapstan.kube.client import Object
from kapstan.kube.store import Event


class CachedReads:
    def __init__(self, cache: ManagementCache) -> None:
        self._cache = cache

    def unclaimed(self) -> builtins.list[LaunchedMachine]:
        found = (launched(m) for m in self._cache.machines.store.objects() if not claim_of(m))
        return sorted(found, key=lambda m: m.ref.name)

    def claimed_by(self, nodeclaim: str) -> builtins.list[LaunchedMachine]:
        found = self._cache.machines.store.by_index(BY_NODECLAIM, nodeclaim)
        return sorted((launched(m) for m in found), key=lambda m: m.ref.name)

    def with_provider_id(self, provider_id: str) -> builtins.list[LaunchedMachine]:
        if not provider_id:
            return []
        found = self._cache.machines.store.by_index(BY_PROVIDER_ID, provider_id)
        return sorted((launched(m) for m in found), key=lambda m: m.ref.name)

    def machine(self, ref: MachineRef) -> LaunchedMachine | None:
        found = self._cache.machines.store.get_by_name(ref.name, ref.namespace)
        return None if found is None else launched(found)

    def machines_of(self, ref: MachineDeploymentRef) -> builtins.list[LaunchedMachine]:
        found = self._cache.machines.store.by_index(BY_DEPLOYMENT, ref.name)
        mine = (launched(m) for m in found if c.namespace(m) == ref.namespace)
        return sorted(mine, key=lambda m: m.ref.name)

    def on_change(self, handler: Callable[[LaunchedMachine], None]) -> None:
        self._cache.machines.add_handler(lambda event: handler(launched(event.object)))

    def on_flavor_source_change(self, handler: Callable[[], None]) -> None:
        def on_event(event: Event) -> None:
            # A deletion carries the deleted object as both old and new: it is a change all the same.
            if (
                event.type == "DELETED"
                or event.old is None
                or not _same_outside_status(event.old, event.object)
            ):
                handler()

        cache = self._cache
        for informer in (
            cache.machine_deployments,
            cache.bootstrap_templates,
            cache.clusters,
            cache.cluster_classes,
        ):
            informer.add_handler(on_event)

    def event_target(self, source: FlavorSource) -> Object | None:
        if source.kind == "MachineDeployment":
            return self._cache.machine_deployments.store.get_by_name(source.name, source.namespace)
        return self._cache.clusters.store.get_by_name(source.cluster, source.namespace)

    async def drift(self, machine: MachineRef) -> str:
        found = self._cache.machines.store.get_by_name(machine.name, machine.namespace)
        if found is None:
            return ""
        md_name = c.labels_of(found).get(c.DEPLOYMENT_NAME_LABEL, "")
        md = self._cache.machine_deployments.store.get_by_name(md_name, machine.namespace)
        if md is None:
            return ""
        templates = self._cache.templates
        bootstrap = await drift.cloned_from(templates, found, ("spec", "bootstrap", "configRef"))
        infrastructure = await drift.cloned_from(templates, found, ("spec", "infrastructureRef"))
        return drift.machine_drift(found, md, bootstrap, infrastructure)


def claim_of(machine: Object) -> str:
    return c.annotations_of(machine).get(NODECLAIM_ANNOTATION, "")


def deleting(machine: Object) -> bool:
    return c.being_deleted(machine) or c.DELETE_MACHINE_ANNOTATION in c.annotations_of(machine)


def launched(machine: Object) -> LaunchedMachine:
    return LaunchedMachine(
        ref=MachineRef(c.namespace(machine), c.name(machine)),
        nodeclaim=claim_of(machine),
        machine_deployment=c.labels_of(machine).get(c.DEPLOYMENT_NAME_LABEL, ""),
        provider_id=c.provider_id(machine),
        deleting=deleting(machine),
        being_deleted=c.being_deleted(machine),
        failure=c.machine_failure(machine),
        created=machine.get("metadata", {}).get("creationTimestamp"),
        event_target=machine,
    )


def _same_outside_status(old: Object, new: Object) -> bool:
    def relevant(obj: Object) -> tuple[Any, ...]:
        meta = obj.get("metadata", {})
        return meta.get("labels"), meta.get("annotations"), meta.get("deletionTimestamp"), obj.get("spec")

    return relevant(old) == relevant(new)
