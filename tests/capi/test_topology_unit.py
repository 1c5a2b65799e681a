"""Adding a worker pool to a Cluster's topology (``capi/topology.add_entry``) tests the entry list it
replaces, not the Cluster's resourceVersion: CAPI's status write since the read does not refuse it (a
409, and the launch waited a poll interval for the next look), another writer's entry since does and is
kept."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable
from typing import Any

import json_patch
from kapstan.capi import contract as c
from kapstan.capi import topology
from kapstan.catalog import FlavorSource
from kapstan.kube.client import Object, Resource
from kapstan.kube.errors import ApiError

SOURCE = FlavorSource("WorkerClass", "ns", "pool-b", "c", "class-b")
EXISTING = {"class": "class-a", "name": "pool-a"}


class RacingApi:
    """One Cluster, changed by ``since`` just before each patch reaches it (another writer's write)."""

    def __init__(self, since: Callable[[Object], None]) -> None:
        self.cluster: Object = {
            "kind": "Cluster",
            "metadata": {"name": "c", "namespace": "ns", "resourceVersion": "1"},
            "spec": {"topology": {"workers": {"machineDeployments": [dict(EXISTING)]}}},
            "status": {},
        }
        self.since = since

    async def get(self, resource: Resource, name: str, namespace: str | None = None) -> Object:
        return copy.deepcopy(self.cluster)

    async def patch(self, resource: Resource, name: str, patch: Any, **kwargs: Any) -> Object:
        self.since(self.cluster)
        self.cluster["metadata"]["resourceVersion"] = str(
            int(self.cluster["metadata"]["resourceVersion"]) + 1
        )
        if kwargs.get("patch_type") == "json":
            self.cluster = json_patch.apply(self.cluster, patch)
            return copy.deepcopy(self.cluster)
        if patch["metadata"].get("resourceVersion") != self.cluster["metadata"]["resourceVersion"]:
            raise ApiError(f"PATCH clusters {name}: conflict", status=409)
        raise AssertionError("only a conditional merge patch or a JSON patch is expected")


def _add(api: RacingApi) -> None:
    asyncio.run(topology.add_entry(api, SOURCE, "launching"))  # type: ignore[arg-type]


def _names(api: RacingApi) -> list[str]:
    return [entry["name"] for entry in c.topology_entries(api.cluster)]


def test_a_status_write_since_the_read_does_not_refuse_the_entry() -> None:
    api = RacingApi(lambda cluster: cluster["status"].update(observedGeneration=2))
    _add(api)
    assert _names(api) == ["pool-a", "pool-b"]
    assert api.cluster["spec"]["topology"]["workers"]["machineDeployments"][1] == {
        "class": "class-b",
        "name": "pool-b",
    }


def test_an_entry_added_since_the_read_refuses_it_and_is_kept() -> None:
    def other_entry(cluster: Object) -> None:
        cluster["spec"]["topology"]["workers"]["machineDeployments"].append(
            {"class": "class-c", "name": "pool-c"}
        )

    api = RacingApi(other_entry)
    _add(api)  # left to the caller's next look
    assert _names(api) == ["pool-a", "pool-c"]
