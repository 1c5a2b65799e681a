"""The termination finalizer on the fake provider and a fake clock: taint the Node, evict its pods, then
delete exactly that Machine, and only then let the NodeClaim go."""

from __future__ import annotations

import asyncio

from controllers.fake_cluster import World, world
from kapstan.api.wellknown import DISRUPTED_TAINT_KEY, TERMINATION_FINALIZER
from kapstan.capi import MachineRef, Paused
from kapstan.controllers.nodeclaim import TerminationTiming, Terminator
from kapstan.controllers.taints import REREAD
from kapstan.kube.client import Object
from kapstan.kube.controller import Result
from kapstan.kube.kinds import NODECLAIMS

TIMING = TerminationTiming(poll=2.0, blocked=10.0)


def _deleting_claim_on_a_node(w: World) -> Object:
    """A registered claim on Node ``node-a`` of Machine ``md-c3-4-m``, with a pod and a DaemonSet pod,
    whose deletion has begun (the finalizer holds it)."""
    claim = asyncio.run(w.claim("c3-4"))
    name = claim["metadata"]["name"]
    w.state.node_claims.store.upsert({**claim, "status": {"providerID": "fake://m", "nodeName": "node-a"}})
    w.node("node-a", "fake://m", taints=[])
    w.machine("md-c3-4-m", "fake://m", claim=name)
    w.pod("web", "node-a")
    w.pod("agent", "node-a", daemonset=True)
    asyncio.run(w.api.delete(NODECLAIMS, name))
    return w.claim_now(name)


def _terminate(w: World, name: str) -> Result:
    terminator = Terminator(w.state, w.provider, w.events, TIMING, clock=w.clock)
    return asyncio.run(terminator.reconcile(w.claim_now(name)))


def test_termination_taints_then_evicts_then_deletes_exactly_that_machine_then_releases_the_claim() -> None:
    w = world()
    name = _deleting_claim_on_a_node(w)["metadata"]["name"]
    assert TERMINATION_FINALIZER in w.claim_now(name)["metadata"]["finalizers"]

    assert _terminate(w, name).requeue_after == TIMING.poll  # the pod is on its way out
    node = w.state.nodes.store.get("node-a")
    assert node is not None and [t["key"] for t in node["spec"]["taints"]] == [DISRUPTED_TAINT_KEY]
    assert [(x.verb, x.name) for x in w.api.writes[-2:]] == [("patch", "node-a"), ("evict", "web")]
    assert w.provider.calls == []  # no Machine is touched while pods are still there

    assert _terminate(w, name).requeue_after == TIMING.poll  # until CAPI has removed the Machine
    assert [(c.method, c.argument) for c in w.provider.calls] == [("delete", MachineRef("capi", "md-c3-4-m"))]
    assert w.claim_now(name)["metadata"]["finalizers"] == [TERMINATION_FINALIZER]

    w.provider.remove(MachineRef("capi", "md-c3-4-m"))  # what CAPI does after the delete
    assert _terminate(w, name) == Result()
    assert w.state.node_claims.store.get(name) is None  # the finalizer is off, the claim is gone
    assert w.state.pods.store.get_by_name("agent", "default") is not None  # DaemonSet pods are not drained


def test_a_pod_its_budget_protects_keeps_the_machine_until_it_can_be_evicted() -> None:
    w = world()
    name = _deleting_claim_on_a_node(w)["metadata"]["name"]
    w.api.blocked_evictions.add("web")
    for _ in range(3):
        assert _terminate(w, name).requeue_after == TIMING.poll
    assert w.provider.calls == []
    pod = w.state.pods.store.get_by_name("web", "default")
    assert pod is not None
    assert "EvictionBlocked" in w.api.reasons("web")


def test_a_paused_md_blocks_the_machines_deletion_and_says_so() -> None:
    w = world()
    name = _deleting_claim_on_a_node(w)["metadata"]["name"]
    _terminate(w, name)  # drained
    w.provider.fail_next("delete", Paused("md-c3-4 is paused"))
    assert _terminate(w, name).requeue_after == TIMING.blocked
    assert w.api.reasons(name)[-1] == "TerminationBlocked"
    assert w.claim_now(name)["metadata"]["finalizers"] == [TERMINATION_FINALIZER]


def test_the_termination_grace_period_is_read_on_the_injected_clock() -> None:
    w = world()
    claim = _deleting_claim_on_a_node(w)
    name = claim["metadata"]["name"]
    w.api.blocked_evictions.add("web")
    w.state.node_claims.store.upsert({**claim, "spec": {**claim["spec"], "terminationGracePeriod": "10m"}})
    _terminate(w, name)
    assert w.state.pods.store.get_by_name("web", "default") is not None  # evicting, refused: still there
    w.clock.advance(600)
    _terminate(w, name)
    assert w.state.pods.store.get_by_name("web", "default") is None  # deleted, budget or not
    assert "TerminationGracePeriodExpired" in w.api.reasons("web")


def test_the_node_is_never_deleted_by_kapstan_only_its_machine() -> None:
    # Deleting a Node before its Machine makes a MachineHealthCheck remediate the Machine a second time;
    # CAPI removes the Node with its Machine.
    w = world()
    name = _deleting_claim_on_a_node(w)["metadata"]["name"]
    _terminate(w, name)
    _terminate(w, name)
    w.provider.remove(MachineRef("capi", "md-c3-4-m"))
    assert _terminate(w, name) == Result()
    assert w.state.node_claims.store.get(name) is None
    assert w.api.writes_of("delete", "nodes") == []
    assert w.state.nodes.store.get("node-a") is not None  # left for CAPI, which deletes it with the Machine


OTHER_FINALIZER = "example.com/backup"


def _ready_to_release(w: World) -> str:
    """A deleting claim whose Node is drained and whose Machine CAPI has removed: its finalizer comes off next."""
    name = _deleting_claim_on_a_node(w)["metadata"]["name"]
    _terminate(w, name)
    _terminate(w, name)
    w.provider.remove(MachineRef("capi", "md-c3-4-m"))
    return str(name)


def _pod_event_time_written(obj: Object) -> None:
    obj["status"] = {**obj.get("status", {}), "lastPodEventTime": "2026-01-01T00:00:00Z"}


def _finalizer_added(obj: Object) -> None:
    if OTHER_FINALIZER not in obj["metadata"]["finalizers"]:
        obj["metadata"]["finalizers"] = [*obj["metadata"]["finalizers"], OTHER_FINALIZER]


def test_a_status_write_since_the_read_does_not_refuse_the_finalizers_removal() -> None:
    w = world()
    name = _ready_to_release(w)
    w.before_patches(NODECLAIMS, _pod_event_time_written)
    assert _terminate(w, name) == Result()
    assert w.state.node_claims.store.get(name) is None, "released at the first try"


def test_a_finalizer_added_since_the_read_refuses_the_removal_and_is_kept() -> None:
    w = world()
    name = _ready_to_release(w)
    w.before_patches(NODECLAIMS, _finalizer_added)
    assert _terminate(w, name).requeue_after == REREAD
    assert w.claim_now(name)["metadata"]["finalizers"] == [TERMINATION_FINALIZER, OTHER_FINALIZER]
    assert _terminate(w, name) == Result()  # decided again from the newer copy
    assert w.claim_now(name)["metadata"]["finalizers"] == [OTHER_FINALIZER]
