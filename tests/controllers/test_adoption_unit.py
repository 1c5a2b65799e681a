"""Adoption on a fake clock: a Node with the unregistered taint that no NodeClaim owns is untainted once it
is clear none will register it; a Node a claim owns is left to that claim. The untainting patch is
conditional on the taints it replaces, not on the Node's resourceVersion (which the kubelet's status
writes move: 409s in bench.live, issue 14)."""

from __future__ import annotations

import asyncio

from controllers.fake_cluster import World, world
from kapstan.api.wellknown import UNREGISTERED_TAINT_KEY
from kapstan.controllers.nodeclaim import Adoption
from kapstan.controllers.nodeclaim.adoption import GRACE
from kapstan.controllers.taints import REREAD
from kapstan.kube.client import Object
from kapstan.kube.controller import Result
from kapstan.kube.kinds import NODES

DEDICATED = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}


def _adopt(w: World, node: str) -> Result:
    return asyncio.run(Adoption(w.state, w.provider, w.events, clock=w.clock).reconcile(node))


def _taint_keys(w: World, node: str) -> list[str]:
    found = w.state.nodes.store.get(node)
    assert found is not None
    return [t["key"] for t in found["spec"]["taints"]]


def test_an_unowned_tainted_node_without_a_machine_is_adopted_once_the_grace_is_over() -> None:
    w = world()
    w.node(
        "stray", "fake://stray", taints=[{"key": UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}, DEDICATED]
    )
    assert _adopt(w, "stray").requeue_after == GRACE  # CAPI may not have recorded its Machine yet
    assert UNREGISTERED_TAINT_KEY in _taint_keys(w, "stray")
    w.clock.advance(GRACE / 2)
    assert _adopt(w, "stray").requeue_after == GRACE / 2
    w.clock.advance(GRACE / 2)
    assert _adopt(w, "stray") == Result()
    assert _taint_keys(w, "stray") == ["dedicated"]
    assert w.api.reasons("stray") == ["Adopted"]


def test_a_node_of_an_unclaimed_machine_is_adopted_at_once() -> None:
    w = world()
    w.machine("md-c3-4-manual", "fake://manual")  # a manual scale-up: nobody's claim
    w.node("manual", "fake://manual")
    _adopt(w, "manual")
    assert _taint_keys(w, "manual") == []


def test_a_node_whose_machine_or_provider_id_a_claim_owns_is_left_to_that_claim() -> None:
    w = world()
    w.machine("md-c3-4-owned", "fake://owned", claim="default-abc")
    w.node("owned", "fake://owned")
    claim = asyncio.run(w.claim("c3-4"))
    w.state.node_claims.store.upsert({**claim, "status": {"providerID": "fake://launched"}})
    w.node("launched", "fake://launched")
    w.clock.advance(GRACE * 10)
    for node in ("owned", "launched"):
        assert _adopt(w, node) == Result()
        assert _taint_keys(w, node) == [UNREGISTERED_TAINT_KEY]
    assert not w.api.writes_of("patch", "nodes")


def test_a_status_write_between_the_read_and_the_patch_does_not_refuse_the_adoption() -> None:
    w = world()
    w.machine("md-c3-4-manual", "fake://manual")
    w.node("manual", "fake://manual")
    w.before_patches(NODES, lambda node: node["status"].update(nodeInfo={"kubeletVersion": "v1.36.3"}))
    assert _adopt(w, "manual") == Result()
    assert _taint_keys(w, "manual") == []
    assert w.api.reasons("manual") == ["Adopted"]


def test_a_taint_added_between_the_read_and_the_patch_refuses_it_and_is_kept() -> None:
    w = world()
    w.machine("md-c3-4-manual", "fake://manual")
    w.node("manual", "fake://manual")
    added: list[Object] = []

    def add_taint(node: Object) -> None:
        if not added:  # once: the second reconcile reads the Node with it
            node["spec"]["taints"].append(DEDICATED)
            added.append(DEDICATED)

    w.before_patches(NODES, add_taint)
    assert _adopt(w, "manual") == Result(requeue_after=REREAD)
    assert _taint_keys(w, "manual") == [UNREGISTERED_TAINT_KEY, "dedicated"], "refused, nothing dropped"
    assert w.api.reasons("manual") == []
    assert _adopt(w, "manual") == Result()
    assert _taint_keys(w, "manual") == ["dedicated"]
    assert w.api.reasons("manual") == ["Adopted"]
