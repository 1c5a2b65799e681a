"""``karpenter.sh/disrupted`` goes on (termination, a disruption's replace) and comes off (a rolled-back
command) with a JSON patch testing the taint list it replaces, not the Node's resourceVersion: a status
write of the kubelet's since the read must not refuse it (it did, as a 409: termination went round again,
a replace command failed its pass and was rolled back, an untaint gave up after three tries and left the
taint on), while a taint another writer added since must, and is kept."""

from __future__ import annotations

import asyncio

from controllers.fake_cluster import POOL, World, world
from controllers.test_termination_unit import TIMING, _deleting_claim_on_a_node
from disruption.test_gather_once_unit import NODE as CLAIMED_NODE
from disruption.test_gather_once_unit import _initialized_claim_on_a_node
from kapstan.api.wellknown import DISRUPTED_TAINT_KEY, DISRUPTION_COMMAND_ANNOTATION
from kapstan.catalog.catalog import DEFAULT_ZONE
from kapstan.controllers.disruption.candidates import Candidate
from kapstan.controllers.disruption.consolidation import REPLACE, Decision
from kapstan.controllers.disruption.methods import UNDERUTILIZED
from kapstan.controllers.disruption.observe import Pools
from kapstan.controllers.disruption.orchestrate import Orchestrator
from kapstan.controllers.disruption.writes import ClaimWrites
from kapstan.controllers.nodeclaim import Terminator
from kapstan.controllers.taints import REREAD, mark_disrupted
from kapstan.kube.client import Object
from kapstan.kube.controller import Result
from kapstan.kube.kinds import NODES
from kapstan.kube.meta import Meta
from kapstan.scheduling.model import PlannedNodeClaim, Snapshot

NODE = "node-a"
DEDICATED = {"key": "dedicated", "value": "batch", "effect": "NoSchedule"}
DISRUPTED = {"key": DISRUPTED_TAINT_KEY, "effect": "NoSchedule"}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def _node(w: World, taints: list[Object]) -> Object:
    return w.node(NODE, "fake://a", taints=taints, ready=True)


def _taints(w: World, name: str = NODE) -> list[Object]:
    node = w.state.nodes.store.get(name)
    assert node is not None
    return list(node["spec"]["taints"])


def _kubelet_status_write(node: Object) -> None:
    node["status"]["nodeInfo"] = {"kubeletVersion": "v1.36.3"}


def _not_ready_taint_once(node: Object) -> None:
    """The node lifecycle controller's taint, added once between a read and the patch after it."""
    if NOT_READY not in node["spec"]["taints"]:
        node["spec"]["taints"].append(NOT_READY)


def test_a_status_write_since_the_read_does_not_refuse_the_disrupted_taint() -> None:
    w = world()
    read = _node(w, [DEDICATED])
    w.before_patches(NODES, _kubelet_status_write)
    assert asyncio.run(mark_disrupted(w.api, read))  # type: ignore[arg-type]
    assert _taints(w) == [DEDICATED, DISRUPTED]


def test_a_taint_added_since_the_read_refuses_the_disrupted_taint_and_is_kept() -> None:
    w = world()
    read = _node(w, [DEDICATED])
    w.before_patches(NODES, _not_ready_taint_once)
    assert not asyncio.run(mark_disrupted(w.api, read))  # type: ignore[arg-type]
    assert _taints(w) == [DEDICATED, NOT_READY]


def test_untainting_is_not_refused_by_a_status_write_since_its_read() -> None:
    w = world()
    read = _node(w, [DEDICATED, DISRUPTED])
    w.before_patches(NODES, _kubelet_status_write)
    asyncio.run(ClaimWrites(w.state).untaint(read))
    assert _taints(w) == [DEDICATED]


def test_untainting_keeps_a_taint_added_since_its_read() -> None:
    w = world()
    read = _node(w, [DEDICATED, DISRUPTED])
    w.before_patches(NODES, _not_ready_taint_once)
    asyncio.run(ClaimWrites(w.state).untaint(read))
    assert _taints(w) == [DEDICATED, NOT_READY]
    assert len(w.api.writes_of("patch", "nodes")) == 1, "the refused patch wrote nothing"


def test_termination_reads_the_node_again_when_its_taints_changed_since_the_read() -> None:
    w = world()
    name = _deleting_claim_on_a_node(w)["metadata"]["name"]
    w.before_patches(NODES, _not_ready_taint_once)
    terminator = Terminator(w.state, w.provider, w.events, TIMING, clock=w.clock)
    assert asyncio.run(terminator.reconcile(w.claim_now(name))) == Result(requeue_after=REREAD)
    assert _taints(w) == [NOT_READY]
    assert w.api.writes_of("evict", "pods") == [], "no pod is moved before the Node is tainted"
    assert asyncio.run(terminator.reconcile(w.claim_now(name))).requeue_after == TIMING.poll
    assert _taints(w) == [NOT_READY, DISRUPTED]


def _replace(w: World, claim: str) -> Decision:
    pool = w.state.node_pools.store.get(POOL)
    assert pool is not None
    candidate = Candidate(claim, CLAIMED_NODE, POOL, "c3-4", DEFAULT_ZONE, 3.0, (), w.clock.wall(), True)
    replacement = PlannedNodeClaim(POOL, "c3-4", DEFAULT_ZONE, "on-demand", 1.0, ())
    return Decision(
        REPLACE, (candidate,), (replacement,), Snapshot(pods=(), instance_types=(), node_pools=())
    )


def _execute(w: World, decision: Decision) -> list[str]:
    """Execute ``decision``; the names of the NodeClaims it created."""
    before = len(w.api.writes_of("create", "nodeclaims"))
    writes = ClaimWrites(w.state)
    orchestrator = Orchestrator(w.state, w.provider, w.events, writes, w.clock.wall, replacement_timeout=600)
    pools = Pools(raw={POOL: w.state.node_pools.store.get(POOL) or {}}, models={})
    asyncio.run(orchestrator.execute(UNDERUTILIZED, decision, pools))
    return [write.name for write in w.api.writes_of("create", "nodeclaims")[before:]]


def test_a_replace_taints_its_candidate_despite_a_status_write_since_the_decision() -> None:
    w = world()
    claim = _initialized_claim_on_a_node(w)
    w.before_patches(NODES, _kubelet_status_write)
    launched = _execute(w, _replace(w, claim))
    assert [t["key"] for t in _taints(w, CLAIMED_NODE)] == [DISRUPTED_TAINT_KEY]
    assert len(launched) == 1, "the replacement is launched"


def test_a_replace_whose_candidate_was_tainted_since_the_decision_is_rolled_back() -> None:
    w = world()
    claim = _initialized_claim_on_a_node(w)
    w.before_patches(NODES, _not_ready_taint_once)
    launched = _execute(w, _replace(w, claim))
    assert _taints(w, CLAIMED_NODE) == [NOT_READY], "the other taint is kept, no disrupted one left behind"
    assert launched == [], "no replacement on the old read"
    assert DISRUPTION_COMMAND_ANNOTATION not in Meta.of(w.claim_now(claim)).annotations
    assert w.api.reasons(claim)[-1] == "DisruptionRolledBack"
