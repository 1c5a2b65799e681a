"""The NodeClaim lifecycle (launch, registration, initialization, their timeouts) on the fake provider and
a fake clock: every step in milliseconds, without an API server."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from controllers.fake_cluster import POOL, World, world
from kapstan.api.wellknown import (
    INITIALIZED,
    INITIALIZED_LABEL,
    INSTANCE_TYPE,
    LAUNCHED,
    MACHINE_ANNOTATION,
    READY,
    REGISTERED,
    REGISTERED_LABEL,
    REGISTRATION_HEALTHY,
    UNREGISTERED_TAINT_KEY,
)
from kapstan.capi import InsufficientCapacity, LaunchRequest, Paused
from kapstan.controllers import conditions as cond
from kapstan.controllers.nodeclaim import Lifecycle, NodeClaimController, Terminator, Timeouts
from kapstan.controllers.nodeclaim.registration import DAEMONSET_GRACE, DAEMONSET_POD_GRACE, DAEMONSET_POLL
from kapstan.controllers.taints import REREAD
from kapstan.kube.client import Object
from kapstan.kube.controller import Result
from kapstan.kube.kinds import DAEMONSETS, NODECLAIMS, PODS

TIMEOUTS = Timeouts(launch=300.0, registration=900.0, retry=10.0, poll=5.0)
STARTUP = {"key": "example.com/agent", "effect": "NoSchedule"}


def _lifecycle(w: World) -> Lifecycle:
    return Lifecycle(w.state, w.provider, w.events, w.state.simulation_input, TIMEOUTS, clock=w.clock)


def _run(w: World, claim: Object) -> Result:
    return asyncio.run(_lifecycle(w).reconcile(w.claim_now(claim["metadata"]["name"])))


def _launched(w: World, *flavors: str) -> Object:
    claim = asyncio.run(w.claim(*flavors))
    _run(w, claim)
    return w.claim_now(claim["metadata"]["name"])


def test_a_launch_claims_a_machine_of_the_offerings_md_and_records_it() -> None:
    w = world()
    claim = asyncio.run(w.claim("c3-4"))
    name = claim["metadata"]["name"]
    result = _run(w, claim)
    (call,) = w.provider.calls
    assert call.method == "create" and isinstance(call.argument, LaunchRequest)
    assert (call.argument.nodeclaim, call.argument.source.name) == (name, "md-c3-4")
    launched = w.claim_now(name)
    assert cond.is_true(launched, LAUNCHED)
    assert launched["status"]["providerID"] == "fake://md-c3-4-0"
    assert launched["status"]["allocatable"]["cpu"]  # the flavor's shape, before any Node exists
    assert launched["metadata"]["annotations"][MACHINE_ANNOTATION] == "capi/md-c3-4-0"
    assert w.api.reasons(name) == [LAUNCHED]
    assert result.requeue_after == TIMEOUTS.poll


def test_a_full_md_makes_the_launch_fall_back_to_the_next_ranked_flavor() -> None:
    w = world({"md-c3-4": "c3-4", "md-c3-8": "c3-8"})
    w.provider.fail_next("create", InsufficientCapacity("md-c3-4 is at its max size"))
    launched = _launched(w, "c3-4", "c3-8")
    assert [c.argument.source.name for c in w.provider.calls] == ["md-c3-4", "md-c3-8"]  # type: ignore[union-attr]
    assert launched["metadata"]["labels"][INSTANCE_TYPE] == "c3-8"
    assert cond.is_true(launched, LAUNCHED)
    assert w.api.reasons(launched["metadata"]["name"]) == ["FlavorFallback", LAUNCHED]
    fallback = next(e for e in w.api.events if e["reason"] == "FlavorFallback")
    assert fallback["message"] == "launching c3-8 instead of c3-4: md-c3-4 is at its max size"


def test_a_paused_md_is_retried_until_the_launch_timeout_then_the_claim_is_deleted() -> None:
    w = world()
    claim = asyncio.run(w.claim("c3-4"))
    name = claim["metadata"]["name"]
    w.provider.fail_next("create", Paused("md-c3-4 is paused"))
    assert _run(w, claim).requeue_after == TIMEOUTS.retry
    assert not cond.is_true(w.claim_now(name), LAUNCHED)
    w.clock.advance(TIMEOUTS.launch + 1)
    assert _run(w, claim) == Result()
    assert len(w.provider.calls) == 1  # timed out before asking again
    assert w.api.writes_of("delete", "nodeclaims")[0].name == name
    assert w.api.reasons(name) == ["LaunchDelayed", "LaunchTimeout"]
    pool = w.state.node_pools.store.get(POOL)
    assert pool is not None
    health = cond.find(pool, REGISTRATION_HEALTHY)
    assert health is not None and (health["status"], health["reason"]) == (cond.FALSE, "LaunchTimeout")


def test_a_launched_claim_without_a_node_is_deleted_after_the_registration_timeout() -> None:
    w = world()
    launched = _launched(w, "c3-4")
    name = launched["metadata"]["name"]
    w.clock.advance(TIMEOUTS.registration - 1)
    assert _run(w, launched).requeue_after == TIMEOUTS.poll
    assert not w.api.writes_of("delete", "nodeclaims")
    w.clock.advance(2)
    _run(w, launched)
    assert [d.name for d in w.api.writes_of("delete", "nodeclaims")] == [name]
    assert w.api.reasons(name)[-1] == "RegistrationTimeout"


def test_registration_syncs_labels_and_taints_onto_the_node_and_removes_the_unregistered_taint() -> None:
    w = world()
    launched = _launched(w, "c3-4")
    name = launched["metadata"]["name"]
    w.state.node_claims.store.upsert({**launched, "spec": {**launched["spec"], "startupTaints": [STARTUP]}})
    dedicated = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
    w.node(
        "node-a",
        launched["status"]["providerID"],
        taints=[{"key": UNREGISTERED_TAINT_KEY, "effect": "NoExecute"}, dedicated],
    )
    _run(w, launched)
    node = w.state.nodes.store.get("node-a")
    assert node is not None
    assert node["spec"]["taints"] == [dedicated, STARTUP]
    labels = node["metadata"]["labels"]
    assert labels[REGISTERED_LABEL] == "true"
    assert labels[INSTANCE_TYPE] == "c3-4" and labels["karpenter.sh/nodepool"] == POOL
    registered = w.claim_now(name)
    assert cond.is_true(registered, REGISTERED) and registered["status"]["nodeName"] == "node-a"
    assert w.api.reasons(name)[-1] == REGISTERED


def _agent(w: World, tolerations: list[Object]) -> None:
    """A node agent DaemonSet (default/agent, the fake pods' owner) on every node of the pool."""
    template = {
        "metadata": {"labels": {"app": "agent"}},
        "spec": {
            "nodeSelector": {"karpenter.sh/nodepool": POOL},
            "tolerations": tolerations,
            "containers": [{"name": "agent", "resources": {"requests": {"cpu": "100m"}}}],
        },
    }
    body = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": template},
    }
    w.api.put(DAEMONSETS, body)


def _node_taints(w: World, name: str) -> list[str]:
    node = w.state.nodes.store.get(name)
    assert node is not None
    return [t["key"] for t in node["spec"]["taints"]]


def test_a_node_keeps_the_unregistered_taint_until_its_daemonset_pods_are_bound() -> None:
    """Issue 14: removing the taint with the label sync let pending pods fill the Node before the
    DaemonSet controller made its pod, which then stayed Pending on a full Node."""
    w = world()
    _agent(w, [{"operator": "Exists"}])
    launched = _launched(w, "c3-4")
    name = launched["metadata"]["name"]
    w.node("node-a", launched["status"]["providerID"])
    assert _run(w, launched).requeue_after == DAEMONSET_POLL
    node = w.state.nodes.store.get("node-a")
    assert node is not None and node["metadata"]["labels"]["karpenter.sh/nodepool"] == POOL
    assert _node_taints(w, "node-a") == [UNREGISTERED_TAINT_KEY]
    assert not cond.is_true(w.claim_now(name), REGISTERED)
    w.clock.advance(DAEMONSET_POLL)
    assert _run(w, launched).requeue_after == DAEMONSET_POLL  # still no agent pod there
    w.pod("agent-x", "node-a", daemonset=True)
    _run(w, launched)
    assert _node_taints(w, "node-a") == []
    assert cond.is_true(w.claim_now(name), REGISTERED)


def test_a_daemonset_pod_that_never_comes_holds_the_node_no_longer_than_the_grace() -> None:
    w = world()
    _agent(w, [{"operator": "Exists"}])
    launched = _launched(w, "c3-4")
    w.node("node-a", launched["status"]["providerID"])
    _run(w, launched)
    w.clock.advance(DAEMONSET_GRACE - 1)
    _run(w, launched)
    assert _node_taints(w, "node-a") == [UNREGISTERED_TAINT_KEY]
    w.clock.advance(2)
    _run(w, launched)
    assert _node_taints(w, "node-a") == [] and cond.is_true(
        w.claim_now(launched["metadata"]["name"]), REGISTERED
    )


def _queued_agent(w: World, node: str) -> None:
    """The agent's pod as the DaemonSet controller makes it for ``node``: pinned there, not bound yet."""
    pin = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
    owner = {"kind": "DaemonSet", "name": "agent", "apiVersion": "apps/v1", "uid": "ds"}
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"agent-{node}", "namespace": "default", "ownerReferences": [owner]},
        "spec": {
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [pin]}
                }
            }
        },
        "status": {"phase": "Pending"},
    }
    w.api.put(PODS, body)


def test_a_daemonset_pod_queued_for_the_node_holds_it_past_the_grace_until_the_longer_one() -> None:
    """Issue 14: a busy kube-scheduler reached the agents' pods a minute after their Nodes joined; taking the
    taint off at 30 s let the pending pods fill those Nodes first, and 67 agents starved."""
    w = world()
    _agent(w, [{"operator": "Exists"}])
    launched = _launched(w, "c3-4")
    w.node("node-a", launched["status"]["providerID"])
    _run(w, launched)
    _queued_agent(w, "node-a")
    _queued_agent(w, "node-b")
    w.clock.advance(DAEMONSET_GRACE + 1)
    _run(w, launched)
    assert _node_taints(w, "node-a") == [UNREGISTERED_TAINT_KEY], "its agent's pod is on its way"
    w.clock.advance(DAEMONSET_POD_GRACE - DAEMONSET_GRACE)
    _run(w, launched)
    assert _node_taints(w, "node-a") == [] and cond.is_true(
        w.claim_now(launched["metadata"]["name"]), REGISTERED
    )


def test_a_daemonset_that_cannot_land_before_registration_is_not_waited_for() -> None:
    w = world()
    _agent(w, [])  # no toleration of the unregistered taint: it schedules only once the taint is gone
    launched = _launched(w, "c3-4")
    w.node("node-a", launched["status"]["providerID"])
    _run(w, launched)
    assert _node_taints(w, "node-a") == [] and cond.is_true(
        w.claim_now(launched["metadata"]["name"]), REGISTERED
    )


def test_initialization_waits_for_ready_and_the_startup_taints_then_marks_the_claim_and_node() -> None:
    w = world()
    launched = _launched(w, "c3-4")
    name = launched["metadata"]["name"]
    w.state.node_claims.store.upsert({**launched, "spec": {**launched["spec"], "startupTaints": [STARTUP]}})
    w.node("node-a", launched["status"]["providerID"])
    _run(w, launched)  # registered; the Node keeps the startup taint and is not Ready
    _run(w, launched)
    assert not cond.is_true(w.claim_now(name), INITIALIZED)
    w.node("node-a", launched["status"]["providerID"], taints=[], ready=True)
    _run(w, launched)
    initialized = w.claim_now(name)
    assert cond.is_true(initialized, INITIALIZED) and cond.is_true(initialized, READY)
    node = w.state.nodes.store.get("node-a")
    assert node is not None and node["metadata"]["labels"][INITIALIZED_LABEL] == "true"
    assert w.api.reasons(name)[-1] == INITIALIZED


def test_a_provider_id_set_after_the_launch_is_copied_from_the_machine_and_queues_the_claim() -> None:
    w = world()
    w.provider.assign_provider_ids = False  # the infrastructure provider has not set it yet
    lifecycle = _lifecycle(w)
    controller = NodeClaimController(
        w.state, w.provider, lifecycle, Terminator(w.state, w.provider, w.events)
    )
    claim = asyncio.run(w.claim("c3-4"))
    name = claim["metadata"]["name"]
    asyncio.run(lifecycle.reconcile(w.claim_now(name)))
    assert cond.is_true(w.claim_now(name), LAUNCHED)
    assert not w.claim_now(name)["status"].get("providerID")
    assert asyncio.run(lifecycle.reconcile(w.claim_now(name))) == Result(requeue_after=TIMEOUTS.poll)

    queue = controller.controller.queue
    while (queued := queue.try_get()) is not None:
        queue.done(queued)  # what the claim's own writes queued
    (machine,) = w.provider.claimed_by(name)
    w.provider.add(replace(machine, provider_id="fake://late"))  # the Machine changes: the claim is queued
    assert queue.try_get() == name
    asyncio.run(lifecycle.reconcile(w.claim_now(name)))
    assert w.claim_now(name)["status"]["providerID"] == "fake://late"


def test_a_daemonset_pod_bound_to_a_waiting_node_queues_its_claim_at_once() -> None:
    """Registration waits for the agent's pod (DaemonSets first); its binding must bring the next look,
    not the next poll, and other pods or an already registered Node must not."""
    w = world()
    _agent(w, [{"operator": "Exists"}])
    lifecycle = _lifecycle(w)
    controller = NodeClaimController(
        w.state, w.provider, lifecycle, Terminator(w.state, w.provider, w.events)
    )
    launched = _launched(w, "c3-4")
    name = launched["metadata"]["name"]
    w.node("node-a", launched["status"]["providerID"])
    assert _run(w, launched).requeue_after == DAEMONSET_POLL
    queue = controller.controller.queue

    def drain() -> None:
        while (queued := queue.try_get()) is not None:
            queue.done(queued)

    def watched(pod: Object) -> None:  # the pods informer's watch shows it, handlers included
        w.state.pods.handle({"type": "MODIFIED", "object": pod})

    drain()
    watched(w.pod("web-1", "node-a"))
    assert queue.try_get() is None, "a workload pod is no DaemonSet's"
    watched(w.pod("agent-x", "node-a", daemonset=True))
    assert queue.try_get() == name
    queue.done(name)
    _run(w, launched)
    assert cond.is_true(w.claim_now(name), REGISTERED)
    drain()
    watched(w.pod("agent-x", "node-a", daemonset=True))
    assert queue.try_get() is None, "the Node is registered: nothing waits for its agent"


def _fallback_world() -> World:
    w = world({"md-c3-4": "c3-4", "md-c3-8": "c3-8"})
    w.provider.fail_next("create", InsufficientCapacity("md-c3-4 is at its max size"))
    return w


def _annotated_once(claim: Object) -> None:
    claim["metadata"].setdefault("annotations", {}).setdefault("example.com/note", "x")


def test_a_write_since_the_read_that_leaves_the_labels_alone_does_not_refuse_the_fallback_relabel() -> None:
    w = _fallback_world()
    w.before_patches(NODECLAIMS, _annotated_once)  # a new resourceVersion before every claim patch
    launched = _launched(w, "c3-4", "c3-8")
    assert launched["metadata"]["labels"][INSTANCE_TYPE] == "c3-8"
    assert cond.is_true(launched, LAUNCHED)
    assert launched["metadata"]["annotations"]["example.com/note"] == "x"


def test_a_label_written_since_the_read_refuses_the_fallback_relabel_and_is_kept() -> None:
    w = _fallback_world()
    relabelled: list[str] = []

    def team_label_once(claim: Object) -> None:
        if not relabelled:
            relabelled.append(claim["metadata"]["name"])
            claim["metadata"]["labels"]["team"] = "batch"

    w.before_patches(NODECLAIMS, team_label_once)
    claim = asyncio.run(w.claim("c3-4", "c3-8"))
    name = claim["metadata"]["name"]
    assert _run(w, claim).requeue_after == REREAD
    refused = w.claim_now(name)
    assert refused["metadata"]["labels"]["team"] == "batch"
    assert refused["metadata"]["labels"][INSTANCE_TYPE] == "c3-4", "refused whole"
    assert "FlavorFallback" not in w.api.reasons(name), "no Event for a relabel that did not happen"
    _run(w, refused)  # decided again from the newer copy: c3-4 is backed off after its failure
    launched = w.claim_now(name)
    assert cond.is_true(launched, LAUNCHED)
    assert (
        launched["metadata"]["labels"][INSTANCE_TYPE] == "c3-8"
        and launched["metadata"]["labels"]["team"] == "batch"
    )
