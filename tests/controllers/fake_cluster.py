"""A ``ClusterState`` without an API server, for unit tests of the NodeClaim controllers.

``FakeApi`` stands in for both clients: it keeps every object in the state's own informer stores (so what
a controller writes, the next reconcile reads, as with a live cache), applies merge patches, honours
``resourceVersion`` preconditions and finalizers, and records each write. Time is a ``FakeClock``: the
timestamps the fake API writes come from its ``wall``, so timeouts are tested by advancing it.
"""

from __future__ import annotations

import builtins
import copy
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import json_patch
from kapstan.api.wellknown import (
    CLUSTER_NAME_LABEL,
    DELETE_MACHINE_ANNOTATION,
    DEPLOYMENT_NAME_LABEL,
    NODECLAIM_ANNOTATION,
    READY,
    unregistered_taint,
)
from kapstan.capi import LaunchedMachine, MachineDeploymentInfo, MachineDeploymentRef, MachineRef
from kapstan.capi import contract as c
from kapstan.capi.fake import FakeProvider
from kapstan.capi.machinedeployments import MachineDeploymentProvider
from kapstan.catalog import FlavorSource
from kapstan.catalog.catalog import DEFAULT_ZONE
from kapstan.controllers.nodeclaim_template import nodeclaim_manifest
from kapstan.controllers.state import ClusterRef, ClusterState
from kapstan.kube.client import Object, Resource
from kapstan.kube.clock import FakeClock
from kapstan.kube.errors import ApiError
from kapstan.kube.events import EVENTS, EventRecorder
from kapstan.kube.informer import Informer
from kapstan.kube.kinds import NODECLAIMS, NODES, PODS
from kapstan.local import article
from kapstan.scheduling.model import PlannedNodeClaim, Snapshot

NS = "capi"
CLUSTER = ClusterRef(NS, "kapstan")
POOL = "default"
NODE_CLASS = "default"


def stamp(clock: FakeClock, seconds_ago: float = 0.0) -> str:
    """An API timestamp ``seconds_ago`` before the clock's wall time."""
    return (clock.wall() - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    """RFC 7386 merge patch: ``None`` removes a key, dicts merge, anything else replaces."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


@dataclass
class Write:
    verb: str
    plural: str
    name: str
    body: Any = None
    subresource: str = ""


@dataclass
class FakeApi:
    clock: FakeClock
    informers: dict[str, Informer] = field(default_factory=dict)
    writes: list[Write] = field(default_factory=list)
    events: list[Object] = field(default_factory=list)
    blocked_evictions: set[str] = field(default_factory=set)
    """Pod names whose eviction a PodDisruptionBudget refuses (429)."""
    _versions: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def _informer(self, resource: Resource) -> Informer:
        return self.informers[resource.plural]

    def _find(self, resource: Resource, name: str, namespace: str | None) -> Object:
        found = self._informer(resource).store.get_by_name(name, namespace)
        if found is None:
            raise ApiError(f"{resource.plural} {name} not found", status=404)
        return found

    def put(self, resource: Resource, obj: Object) -> Object:
        """Store ``obj`` as the API server would have it (uid, resourceVersion, creationTimestamp)."""
        meta = obj["metadata"]
        meta.setdefault("uid", f"uid-{meta['name']}")
        meta.setdefault("creationTimestamp", stamp(self.clock))
        meta["resourceVersion"] = str(next(self._versions))
        self._informer(resource).store.upsert(obj)
        return obj

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        return copy.deepcopy(self._find(resource, name, namespace))

    async def create(self, resource: Resource, body: Object) -> Object:
        body = copy.deepcopy(body)
        if resource == EVENTS:
            self.events.append(body)
            return body
        meta = body["metadata"]
        meta.setdefault("name", f"{meta.pop('generateName', 'x-')}{next(self._versions)}")
        self.writes.append(Write("create", resource.plural, meta["name"], body))
        return copy.deepcopy(self.put(resource, body))

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Object,
        *,
        namespace: str | None = None,
        subresource: str = "",
        patch_type: str = "merge",
        **_: Any,
    ) -> Object:
        if resource == EVENTS:
            return {}
        current = self._find(resource, name, namespace)
        if patch_type == "json":
            updated = json_patch.apply(current, patch)
        else:
            wanted = patch.get("metadata", {}).get("resourceVersion")
            if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
                raise ApiError(f"{resource.plural} {name}: conflict", status=409)
            updated = copy.deepcopy(current)
            meta = {k: v for k, v in patch.get("metadata", {}).items() if k != "resourceVersion"}
            merge(updated, {**patch, "metadata": meta})
        self.writes.append(Write("patch", resource.plural, name, patch, subresource))
        if updated["metadata"].get("deletionTimestamp") and not updated["metadata"].get("finalizers"):
            self._informer(resource).store.delete(current)  # the last finalizer is off: it is gone
            return updated
        return copy.deepcopy(self.put(resource, updated))

    async def delete(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        current = self._find(resource, name, namespace)
        self.writes.append(Write("delete", resource.plural, name))
        if current["metadata"].get("finalizers"):
            updated = copy.deepcopy(current)
            updated["metadata"].setdefault("deletionTimestamp", stamp(self.clock))
            self.put(resource, updated)
        else:
            self._informer(resource).store.delete(current)
        return {}

    async def request(
        self, method: str, resource: Resource, *, namespace: str | None = None, name: str = "", **kwargs: Any
    ) -> Object:
        if (method, kwargs.get("subresource")) != ("POST", "eviction"):
            raise AssertionError(f"unexpected {method} {resource.plural} {kwargs}")
        self.writes.append(Write("evict", resource.plural, name))
        if name in self.blocked_evictions:
            raise ApiError(f"evicting {name}: disruption budget", status=429)
        self._informer(resource).store.delete(self._find(resource, name, namespace))
        return {}

    # Discovery: no infrastructure templates here, capacity comes from the MDs' annotations; the core
    # group serves the kinds a test keeps a store for (a price ConfigMap, say).
    async def preferred_version(self, group: str) -> str:
        raise ApiError(f"group {group} not found", status=404)

    async def resources(self, api_version: str) -> dict[str, Resource]:
        served = {
            i.resource.kind: i.resource
            for i in self.informers.values()
            if i.resource.api_version == api_version
        }
        if not served:
            raise ApiError(f"{api_version} not found", status=404)
        return served

    def writes_of(self, verb: str, plural: str) -> list[Write]:
        return [w for w in self.writes if (w.verb, w.plural) == (verb, plural)]

    def reasons(self, name: str) -> list[str]:
        """The Event reasons recorded on the object ``name``, in order."""
        return [e["reason"] for e in self.events if e["involvedObject"]["name"] == name]


@dataclass
class World:
    clock: FakeClock
    api: FakeApi
    state: ClusterState
    events: EventRecorder
    provider: FakeProvider

    def add(self, objects: Iterable[Object]) -> None:
        by_kind = {informer.resource.kind: informer.resource for informer in self.state.informers}
        for obj in objects:
            if obj["kind"] in by_kind:
                self.api.put(by_kind[obj["kind"]], copy.deepcopy(obj))

    async def claim(self, *flavors: str) -> Object:
        """A NodeClaim as the provisioner writes it: the first flavor chosen, the others its ranked
        alternatives, in the default zone."""
        pool = self.state.node_pools.store.get(POOL)
        assert pool is not None
        planned = PlannedNodeClaim(POOL, flavors[0], DEFAULT_ZONE, "on-demand", 3.0, ())
        body = nodeclaim_manifest(
            planned, pool, Snapshot(pods=(), instance_types=(), node_pools=()), flavors[1:]
        )
        return await self.api.create(NODECLAIMS, body)

    def claim_now(self, name: str) -> Object:
        found = self.state.node_claims.store.get(name)
        assert found is not None, f"NodeClaim {name} is gone"
        return found

    def before_patches(self, kind: Resource, change: Callable[[Object], object]) -> None:
        """Run ``change(obj)`` on the stored object just before each patch of a ``kind`` reaches the fake
        API server, as another writer between kapstan's read and its write."""
        patch = self.api.patch

        async def racing(resource: Resource, name: str, body: Any, **kwargs: Any) -> Object:
            if resource == kind:
                obj = copy.deepcopy(self.api._find(resource, name, kwargs.get("namespace")))
                change(obj)
                self.api.put(kind, obj)  # a new resourceVersion
            return await patch(resource, name, body, **kwargs)

        self.api.patch = racing  # type: ignore[method-assign]

    def node(
        self, name: str, provider_id: str, *, taints: list[Object] | None = None, ready: bool = False
    ) -> Object:
        """A Node as the kubelet registers it (with the unregistered taint unless ``taints`` says)."""
        conditions = [{"type": READY, "status": "True" if ready else "False"}]
        taints = [unregistered_taint()] if taints is None else taints
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {}},
            "spec": {"providerID": provider_id, "taints": taints},
            "status": {"conditions": conditions},
        }
        return self.api.put(NODES, body)

    def machine(self, name: str, provider_id: str, claim: str | None = None, md: str = "md-c3-4") -> Object:
        """A Machine of ``md`` as CAPI shows it, claimed by ``claim`` when given."""
        return self.api.put(
            c.MACHINES, machine_object(LaunchedMachine(MachineRef(NS, name), claim or "", md, provider_id))
        )

    def pod(self, name: str, node: str, *, daemonset: bool = False) -> Object:
        owners = (
            [{"kind": "DaemonSet", "name": "agent", "apiVersion": "apps/v1", "uid": "ds"}]
            if daemonset
            else []
        )
        meta = {"name": name, "namespace": "default", "ownerReferences": owners}
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"nodeName": node}}
        body["status"] = {"phase": "Running"}
        return self.api.put(PODS, body)


def machine_object(machine: LaunchedMachine) -> Object:
    """The Machine object CAPI would show for ``machine``."""
    annotations = {NODECLAIM_ANNOTATION: machine.nodeclaim} if machine.nodeclaim else {}
    if machine.deleting and not machine.being_deleted:
        annotations[DELETE_MACHINE_ANNOTATION] = "true"
    meta: dict[str, Any] = {
        "name": machine.ref.name,
        "namespace": machine.ref.namespace,
        "labels": {CLUSTER_NAME_LABEL: CLUSTER.name, DEPLOYMENT_NAME_LABEL: machine.machine_deployment},
        "annotations": annotations,
    }
    body = {"apiVersion": c.MACHINES.api_version, "kind": "Machine", "metadata": meta}
    body["spec"] = {"clusterName": CLUSTER.name, "providerID": machine.provider_id}
    return body


@dataclass
class ClusterFake(FakeProvider):
    """The fake provider's writes over the World's management informers: a Machine it adds or removes is
    a Machine object in the store, and its cache reads are the real provider's (``capi/reads.py``,
    ``capi/revisions.py``) on it, so a Machine or MD a test puts in the store is what the controllers see."""

    api: Any = None
    reads: MachineDeploymentProvider | None = None

    def add(self, machine: LaunchedMachine) -> LaunchedMachine:
        self.api.put(c.MACHINES, machine_object(machine))
        return super().add(machine)

    def remove(self, machine: MachineRef) -> None:
        found = self.api.informers[c.MACHINES.plural].store.get_by_name(machine.name, machine.namespace)
        if found is not None:
            self.api.informers[c.MACHINES.plural].store.delete(found)
        super().remove(machine)

    def _cache_reads(self) -> MachineDeploymentProvider:
        assert self.reads is not None
        return self.reads

    def machine(self, ref: MachineRef) -> LaunchedMachine | None:
        return self._cache_reads().machine(ref)

    def machines_of(self, ref: MachineDeploymentRef) -> builtins.list[LaunchedMachine]:
        return self._cache_reads().machines_of(ref)

    def machine_deployment(self, ref: MachineDeploymentRef) -> MachineDeploymentInfo | None:
        return self._cache_reads().machine_deployment(ref)

    def event_target(self, source: FlavorSource) -> Object | None:
        return self._cache_reads().event_target(source)

    def unclaimed(self) -> builtins.list[LaunchedMachine]:
        return self._cache_reads().unclaimed()

    def claimed_by(self, nodeclaim: str) -> builtins.list[LaunchedMachine]:
        return self._cache_reads().claimed_by(nodeclaim)

    def with_provider_id(self, provider_id: str) -> builtins.list[LaunchedMachine]:
        return self._cache_reads().with_provider_id(provider_id)


def world(flavors: dict[str, str] | None = None) -> World:
    """A Cluster with one managed MD per ``flavors`` entry (MD name to flavor, default one c3-4), the
    article's NodePool and NodeClass, a fake provider and a fake clock."""
    clock = FakeClock()
    api = FakeApi(clock)
    provider = ClusterFake(api=api)
    state = ClusterState(api, api, CLUSTER, clock=clock, provider=provider)  # type: ignore[arg-type]
    api.informers = {informer.resource.plural: informer for informer in state.informers}
    provider.reads = MachineDeploymentProvider(api, state.capi)  # type: ignore[arg-type]
    made = World(clock, api, state, EventRecorder(api, clock=clock), provider)  # type: ignore[arg-type]
    made.add(article.standalone(NS, CLUSTER.name, flavors or {"md-c3-4": "c3-4"}))
    made.add([article.node_class(NODE_CLASS), article.node_pool(POOL, NODE_CLASS, "unit")])
    return made
