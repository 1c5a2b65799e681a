"""An in-memory stand-in for the management cluster's API, as the MachineDeployment provider and its
Machine claims use it: a MachineDeployment ns/pool, its Cluster and Machines, and patches applied the way
the API server applies them (merge patches conditional on resourceVersion, JSON patches through their
tests)."""

from __future__ import annotations

import copy
from typing import Any

import json_patch
from kapstan.capi import contract as c
from kapstan.capi.cache import ManagementCache
from kapstan.capi.machinedeployments import MachineDeploymentProvider
from kapstan.catalog import FlavorSource
from kapstan.kube.client import Client, Object, Resource
from kapstan.kube.errors import ApiError

SOURCE = FlavorSource("MachineDeployment", "ns", "pool", "c")


class FakeApi:
    """Objects by (plural, name), all in namespace ns and of MD pool (lists ignore selectors); a scale
    patch stamps Machines as a MachineSet would."""

    def __init__(self, replicas: int, machines: list[str]) -> None:
        self.objects: dict[tuple[str, str], Object] = {
            ("clusters", "c"): {"kind": "Cluster", "metadata": {"name": "c", "namespace": "ns"}, "spec": {}},
            ("machinedeployments", "pool"): {
                "kind": "MachineDeployment",
                "metadata": {"name": "pool", "namespace": "ns", "resourceVersion": "1"},
                "spec": {"clusterName": "c", "replicas": replicas},
                "status": {},
            },
        }
        for name in machines:
            self.add_machine(name)
        self.patches: list[tuple[str, str, str, Any]] = []
        self.refuse_writes = 0
        """How many coming writes fail: a merge patch with 409, a scale patch's test because another
        writer raised replicas by one first."""
        self.stamp = True
        """Whether a scale-up stamps its Machines at once (False: the MachineSet is slow)."""

    def add_machine(self, name: str) -> None:
        labels = {c.DEPLOYMENT_NAME_LABEL: "pool", c.CLUSTER_NAME_LABEL: "c"}
        meta = {"name": name, "namespace": "ns", "labels": labels, "resourceVersion": "1"}
        self.objects["machines", name] = {"kind": "Machine", "metadata": meta, "spec": {}}

    @property
    def md(self) -> Object:
        return self.objects["machinedeployments", "pool"]

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        if (resource.plural, name) not in self.objects:
            raise ApiError(f"GET {resource.plural} {name}: not found", status=404)
        return copy.deepcopy(self.objects[resource.plural, name])

    async def request(self, method: str, resource: Resource, **kwargs: Any) -> Object:
        assert method == "GET"
        items = [copy.deepcopy(o) for (plural, _), o in self.objects.items() if plural == resource.plural]
        return {"items": items}

    async def patch(
        self,
        resource: Resource,
        name: str,
        patch: Any,
        *,
        namespace: str,
        subresource: str = "",
        patch_type: str = "merge",
    ) -> Object:
        self.patches.append((resource.plural, name, subresource, patch))
        obj = self.objects[resource.plural, name]
        if patch_type == "json":
            return self._json_patch_scale(obj, patch) if subresource == "scale" else _json_patch(obj, patch)
        meta = patch.get("metadata", {})
        version = obj["metadata"]["resourceVersion"]
        if self.refuse_writes or meta.get("resourceVersion", version) != version:
            self.refuse_writes = max(0, self.refuse_writes - 1)
            bump(obj)  # another writer got there first
            raise ApiError(f"PATCH {resource.plural} {name}: conflict", status=409)
        obj["metadata"].setdefault("annotations", {}).update(meta.get("annotations", {}))
        bump(obj)
        return copy.deepcopy(obj)

    def _json_patch_scale(self, md: Object, ops: list[Object]) -> Object:
        """[test, add] on the Scale of ``md``, as the API server applies it (Scale omits replicas at 0)."""
        scale_spec = {"replicas": md["spec"]["replicas"]} if md["spec"]["replicas"] else {}
        test, add = ops
        tested = scale_spec if test["path"] == "/spec" else scale_spec.get("replicas")
        if self.refuse_writes or tested != test["value"]:
            self.refuse_writes = max(0, self.refuse_writes - 1)
            # Another writer scaled first, and its MachineSet stamped the Machine.
            self.add_machine(f"pool-{md['spec']['replicas']}")
            md["spec"]["replicas"] += 1
            raise ApiError("PATCH machinedeployments scale: test failed", status=422)
        bump(md)  # the resourceVersion moves; the test on replicas does not care
        new = add["value"]
        for i in range(md["spec"]["replicas"], new if self.stamp else 0):
            self.add_machine(f"pool-{i}")
        md["spec"]["replicas"] = new
        return copy.deepcopy(md)


def _json_patch(obj: Object, ops: list[Object]) -> Object:
    obj.update(json_patch.apply(obj, ops))
    bump(obj)
    return copy.deepcopy(obj)


def bump(obj: Object) -> None:
    obj["metadata"]["resourceVersion"] = str(int(obj["metadata"]["resourceVersion"]) + 1)


def provider_of(api: FakeApi, gather: float = 0.0) -> MachineDeploymentProvider:
    client: Client = api  # type: ignore[assignment]  # duck-typed stand-in for the four calls used
    # The reads' cache stays empty: create and delete decide from what they list, not from it.
    cache = ManagementCache(client, "ns", "c")
    return MachineDeploymentProvider(client, cache, machine_timeout=1.0, poll_interval=0.01, gather=gather)
