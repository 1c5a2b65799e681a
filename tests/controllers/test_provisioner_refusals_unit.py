"""The provisioner's safety net (controllers/scheduler_refusals.py): a pod planned onto an existing Node that
kube-scheduler still refuses there a while later is said once, naming the pod and the node, and then
planned as if that node had no room for it (issue 14: 4 `web` pods Pending 1,473 s, no NodeClaim, silence).
"""

from __future__ import annotations

import asyncio

from fake_cluster import World, world
from provisioner_kit import unschedulable

from kapstan.controllers.provisioner import Provisioner
from kapstan.controllers.scheduler_refusals import REFUSED_AFTER, REFUSED_REASON
from kapstan.kube.client import Object
from kapstan.kube.kinds import NODES, PODS
from kapstan.kube.store import Event

REFUSAL = "0/1 nodes are available: 1 node(s) didn't match pod topology spread constraints."


def _roomy_node(w: World) -> None:
    """A Node with room that kapstan counts on (no NodeClaim: someone else's)."""
    resources = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    w.api.put(
        NODES,
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "roomy", "labels": {}},
            "spec": {},
            "status": {
                "capacity": resources,
                "allocatable": resources,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
    )


def _messages(w: World, pod: str, reason: str) -> list[str]:
    return [
        e["message"] for e in w.api.events if e["involvedObject"]["name"] == pod and e["reason"] == reason
    ]


def test_a_pod_still_refused_on_its_planned_node_is_said_and_gets_a_claim() -> None:
    w = world()
    _roomy_node(w)
    w.api.put(PODS, unschedulable("web-new", message=REFUSAL))
    provisioner = Provisioner(w.state, w.events, clock=w.clock)

    async def batches() -> tuple[list[Object], list[Object], list[Object]]:
        first = await provisioner.provision()  # onto "roomy": nothing to launch
        w.clock.advance(REFUSED_AFTER / 2)
        early = await provisioner.provision()  # kube-scheduler is given its time
        w.clock.advance(REFUSED_AFTER / 2)
        late = await provisioner.provision()
        await w.events.flush()
        return first, early, late

    first, early, late = asyncio.run(batches())
    assert first == [] and early == []
    (claim,) = late  # before the safety net, every batch planned it onto "roomy" again, for good
    assert claim["spec"]["resources"]["requests"]["cpu"] == "1"
    (said,) = _messages(w, "web-new", REFUSED_REASON)
    assert "node/roomy" in said and REFUSAL in said
    assert provisioner.refusals.refused == {"default/web-new": {"roomy"}}


def test_a_plan_onto_a_node_looks_again_once_kube_scheduler_had_its_time() -> None:
    """Nothing about a pod kube-scheduler refuses changes by itself: the look has to be scheduled."""
    w = world()
    _roomy_node(w)
    w.api.put(PODS, unschedulable("web-new", message=REFUSAL))
    provisioner = Provisioner(w.state, w.events, clock=w.clock)

    async def scenario() -> tuple[bool, bool]:
        await provisioner.provision()
        provisioner.batcher._trigger.clear()
        for _ in range(5):  # the look starts its sleep
            await asyncio.sleep(0)
        w.clock.advance(REFUSED_AFTER - 1)
        for _ in range(5):
            await asyncio.sleep(0)
        before = provisioner.batcher._trigger.is_set()
        w.clock.advance(1)
        for _ in range(5):
            await asyncio.sleep(0)
        return before, provisioner.batcher._trigger.is_set()

    assert asyncio.run(scenario()) == (False, True)


def test_a_pod_that_binds_is_forgotten() -> None:
    w = world()
    _roomy_node(w)
    w.api.put(PODS, unschedulable("web-new", message=REFUSAL))
    provisioner = Provisioner(w.state, w.events, clock=w.clock)
    asyncio.run(provisioner.provision())
    assert provisioner.refusals.waiting()
    pending = unschedulable("web-new", message=REFUSAL)
    bound = {**pending, "spec": {**pending["spec"], "nodeName": "roomy"}, "status": {"phase": "Running"}}
    provisioner._on_pod(Event("MODIFIED", w.api.put(PODS, bound), pending))
    assert not provisioner.refusals.waiting()
