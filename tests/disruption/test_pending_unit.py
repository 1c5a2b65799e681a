"""Karpenter's rule (issue 14): no voluntary disruption of a NodePool while it has pods pending for
provisioning, and budgets that count only Initialized nodes. On the fake API and a fake clock."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from test_brakes_unit import _disruption, _fleet, _pass

from controllers.fake_cluster import POOL, World, world
from kapstan.api.wellknown import INITIALIZED
from kapstan.controllers.disruption.observe import Observer
from kapstan.kube.kinds import NODECLAIMS, PODS


def _pending(w: World, name: str, cpu: str) -> None:
    """A pod kube-scheduler found no room for (``PodScheduled=False``, reason ``Unschedulable``)."""
    owner = {"kind": "ReplicaSet", "name": "web", "apiVersion": "apps/v1", "uid": "rs"}
    body: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "ownerReferences": [owner]},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}}}]},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }
    w.api.put(PODS, body)


def _deleted(w: World) -> list[str]:
    return sorted(write.name for write in w.api.writes_of("delete", "nodeclaims"))


def test_a_pod_pending_for_a_new_node_of_the_pool_keeps_its_empty_nodes_until_it_is_placed() -> None:
    w = world()
    _fleet(w, 2)
    _pending(w, "web-0", "500m")  # the Nodes show no room: the pod needs a new c3-4 of the pool
    disruption = _disruption(w)
    assert not _pass(w, disruption)
    assert _deleted(w) == [], "the pool is still provisioning: no emptiness while a pod waits for a node"

    asyncio.run(w.api.delete(PODS, "web-0", "default"))  # the provisioner's node took it (or it went)
    assert _pass(w, disruption)
    assert len(_deleted(w)) == 1  # the default budget: 10% of 2, rounded up


def test_a_pod_no_flavor_can_take_does_not_halt_the_pool() -> None:
    w = world()
    _fleet(w, 2)
    _pending(w, "huge-0", "64")  # no c3-4 holds 64 CPU: pending before and after, it blocks nothing
    assert _pass(w, _disruption(w))
    assert len(_deleted(w)) == 1


def test_only_initialized_nodes_count_towards_the_budget_total() -> None:
    w = world()
    _fleet(w, 3)
    coming = asyncio.run(w.claim("c3-4"))["metadata"]["name"]
    w.machine("m-new", "fake://m-new", claim=coming)
    w.node("node-new", "fake://m-new", taints=[], ready=True)
    body = copy.deepcopy(w.claim_now(coming))
    body["status"] = {"providerID": "fake://m-new", "nodeName": "node-new", "conditions": []}
    w.api.put(NODECLAIMS, body)
    observer = Observer(w.state, w.provider, w.events, w.clock.wall)
    seen = asyncio.run(observer.observe(observer.pools(), w.clock.wall(), announce=False))
    assert seen.totals == {POOL: 3}, "a node not Initialized yet does not raise what a percentage allows"
    assert seen.provisioning == {POOL: f"NodeClaim {coming} is not {INITIALIZED} yet"}
