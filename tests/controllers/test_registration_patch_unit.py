"""Registration's Node patch is conditional on the taints it replaces, not on the Node's resourceVersion:
a status write of the kubelet's between kapstan's read and its patch must not fail it (about 30 retries
in a 1,000-pod scale-up, issue 14), while a taint someone added meanwhile must not be dropped."""

from __future__ import annotations

import asyncio

from controllers.fake_cluster import World, world
from kapstan.api.wellknown import REGISTERED, REGISTERED_LABEL, UNREGISTERED_TAINT_KEY
from kapstan.controllers import conditions as cond
from kapstan.controllers.nodeclaim import Lifecycle, Timeouts
from kapstan.controllers.taints import REREAD
from kapstan.kube.client import Object
from kapstan.kube.controller import Result
from kapstan.kube.kinds import NODES

TIMEOUTS = Timeouts(launch=300.0, registration=900.0, retry=10.0, poll=5.0)
DISRUPTED = {"key": "karpenter.sh/disrupted", "effect": "NoSchedule"}


def _reconcile(w: World, name: str) -> Result:
    lifecycle = Lifecycle(w.state, w.provider, w.events, w.state.simulation_input, TIMEOUTS, clock=w.clock)
    return asyncio.run(lifecycle.reconcile(w.claim_now(name)))


def _launched_with_node(w: World) -> str:
    name = asyncio.run(w.claim("c3-4"))["metadata"]["name"]
    _reconcile(w, name)
    w.node("node-a", w.claim_now(name)["status"]["providerID"])
    return name


def test_a_status_write_between_the_read_and_the_patch_does_not_fail_registration() -> None:
    w = world()
    name = _launched_with_node(w)
    w.before_patches(NODES, lambda node: node["status"].update(nodeInfo={"kubeletVersion": "v1.36.3"}))
    _reconcile(w, name)
    assert cond.is_true(w.claim_now(name), REGISTERED)
    node = w.state.nodes.store.get("node-a")
    assert node is not None and node["metadata"]["labels"][REGISTERED_LABEL] == "true"
    assert node["spec"]["taints"] == []


def test_a_taint_added_between_the_read_and_the_patch_is_kept() -> None:
    w = world()
    name = _launched_with_node(w)
    added = [0]

    def add_taint(node: Object) -> None:
        if not added[0]:  # once: the second reconcile reads the Node with it
            node["spec"]["taints"].append(DISRUPTED)
            added[0] += 1

    w.before_patches(NODES, add_taint)
    assert _reconcile(w, name) == Result(requeue_after=REREAD)
    assert not cond.is_true(w.claim_now(name), REGISTERED)
    _reconcile(w, name)
    assert cond.is_true(w.claim_now(name), REGISTERED)
    node = w.state.nodes.store.get("node-a")
    assert node is not None
    assert [t["key"] for t in node["spec"]["taints"]] == [DISRUPTED["key"]]
    assert UNREGISTERED_TAINT_KEY not in [t["key"] for t in node["spec"]["taints"]]
