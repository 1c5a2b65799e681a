"""Brakes (issue 15): with more than a fifth of a NodePool's Nodes not Ready, no consolidation, drift or
expiration touches the pool, and its ``NodesHealthy`` condition says why; at the bar or below, disruption
goes on. On the fake API and a fake clock."""

from __future__ import annotations

import asyncio
import copy

from controllers.fake_cluster import POOL, World, stamp, world
from kapstan.api.wellknown import CONSOLIDATABLE, INITIALIZED, LAUNCHED, NODES_HEALTHY, REGISTERED
from kapstan.controllers import conditions as cond
from kapstan.controllers.disruption import Disruption, DisruptionOptions
from kapstan.controllers.disruption.health import pool_health
from kapstan.kube.kinds import NODECLAIMS, NODES

HOUR = 3600.0


def _fleet(w: World, count: int, *, expire_after: str = "") -> list[str]:
    """``count`` empty claims, launched an hour ago, each on its own Ready Node and Machine."""
    names = []
    for i in range(count):
        name: str = asyncio.run(w.claim("c3-4"))["metadata"]["name"]
        w.machine(f"m-{i}", f"fake://m-{i}", claim=name)
        w.node(f"node-{i}", f"fake://m-{i}", taints=[], ready=True)
        body = copy.deepcopy(w.claim_now(name))
        long_ago = stamp(w.clock, HOUR)
        body["metadata"]["creationTimestamp"] = long_ago
        if expire_after:
            body["spec"]["expireAfter"] = expire_after
        body["status"] = {
            "providerID": f"fake://m-{i}",
            "nodeName": f"node-{i}",
            "conditions": [
                {"type": kind, "status": "True", "reason": kind, "lastTransitionTime": long_ago}
                for kind in (LAUNCHED, REGISTERED, INITIALIZED, CONSOLIDATABLE)
            ],
        }
        w.api.put(NODECLAIMS, body)
        names.append(name)
    return names


def _not_ready(w: World, *nodes: str) -> None:
    for name in nodes:
        node = copy.deepcopy(w.state.nodes.store.get(name))
        assert node is not None
        node["status"]["conditions"] = [{"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}]
        w.api.put(NODES, node)


def _pass(w: World, disruption: Disruption) -> bool:
    async def run() -> bool:
        task = asyncio.ensure_future(disruption.reconcile())
        while not task.done():
            await asyncio.sleep(0.001)
            if w.clock.sleepers:
                w.clock.advance(disruption.options.validation_delay)
        return task.result()

    return asyncio.run(run())


def _disruption(w: World) -> Disruption:
    return Disruption(w.state, w.provider, w.events, DisruptionOptions(), clock=w.clock)


def _nodes_healthy(w: World) -> dict[str, str]:
    pool = w.state.node_pools.store.get(POOL)
    assert pool is not None
    found = cond.find(pool, NODES_HEALTHY)
    assert found is not None, "the pool has no NodesHealthy condition"
    return {k: found[k] for k in ("status", "reason", "message")}


def test_more_than_a_fifth_of_the_nodes_not_ready_halts_consolidation_and_says_why() -> None:
    w = world()
    _fleet(w, 5)
    _not_ready(w, "node-1", "node-3")  # 2 of 5: 40%
    disruption = _disruption(w)
    assert not _pass(w, disruption)
    assert w.api.writes_of("delete", "nodeclaims") == []
    assert _nodes_healthy(w) == {
        "status": "False",
        "reason": "UnhealthyNodes",
        "message": "2 of 5 Nodes not Ready (node-1, node-3), more than 20%: "
        "consolidation, drift and expiration halted",
    }
    assert w.api.reasons(POOL).count("DisruptionHalted") == 1
    assert not _pass(w, disruption)
    assert w.api.reasons(POOL).count("DisruptionHalted") == 1, "one Event when the brakes come on"

    # The Nodes recover: the brakes come off and the empty nodes go, within the budget.
    for name in ("node-1", "node-3"):
        w.node(name, f"fake://m-{name[-1]}", taints=[], ready=True)
    assert _pass(w, disruption)
    assert len(w.api.writes_of("delete", "nodeclaims")) == 1  # the default budget: 10% of 5, rounded up
    assert _nodes_healthy(w) == {"status": "True", "reason": NODES_HEALTHY, "message": ""}


def test_a_fifth_of_the_nodes_not_ready_is_not_over_the_bar() -> None:
    w = world()
    _fleet(w, 5)
    _not_ready(w, "node-4")  # 1 of 5: 20%, not more
    assert _pass(w, _disruption(w))
    assert len(w.api.writes_of("delete", "nodeclaims")) == 1
    assert _nodes_healthy(w)["status"] == "True"


def test_expiration_waits_while_the_pool_is_unhealthy() -> None:
    w = world()
    claims = _fleet(w, 2, expire_after="30m")
    _not_ready(w, "node-0")  # 1 of 2
    disruption = _disruption(w)
    _pass(w, disruption)
    assert w.api.writes_of("delete", "nodeclaims") == [], "an expired node waits for its pool to recover"
    w.node("node-0", "fake://m-0", taints=[], ready=True)
    _pass(w, disruption)
    assert sorted(write.name for write in w.api.writes_of("delete", "nodeclaims")) == sorted(claims)


def test_claims_being_deleted_do_not_count_towards_the_bar() -> None:
    w = world()
    claims = _fleet(w, 2)
    _not_ready(w, "node-0")
    asyncio.run(w.api.delete(NODECLAIMS, claims[0]))  # the finalizer holds it: kapstan is removing it
    health = pool_health(w.state.view.nodes().claimed)
    assert (health[POOL].nodes, health[POOL].not_ready, health[POOL].halted) == (1, (), False)
