"""The provisioner's batch window and the NodeClaims it writes, without an API server."""

from __future__ import annotations

import asyncio

from kapstan.api.wellknown import NODEPOOL_HASH_ANNOTATION, TERMINATION_FINALIZER
from kapstan.controllers.batcher import Batcher, BatchWindow
from kapstan.controllers.nodeclaim_template import nodeclaim_manifest, nodepool_hash
from kapstan.controllers.provisioner import counted_on_nodes
from kapstan.kube.clock import FakeClock
from kapstan.scheduling.model import InstanceType, Offering, Plan, PlannedNodeClaim, Pod, Snapshot


async def _closes_after(batcher: Batcher, clock: FakeClock, triggers: list[float]) -> float:
    """Trigger at the given times (seconds from the start, on a 1/16 s grid: exact in binary, so the
    clock never drifts off it); return when the batch closed."""
    due = {round(at * 16) for at in triggers}
    waiting = asyncio.ensure_future(batcher.wait())
    for tick in range(1000):
        if tick in due:
            batcher.trigger()
        for _ in range(3):  # let the batcher react before time moves on
            await asyncio.sleep(0)
        if waiting.done():
            return tick / 16
        clock.advance(1 / 16)
    raise AssertionError("the batch never closed")


def test_a_batch_closes_one_second_after_the_last_pod() -> None:
    clock = FakeClock()
    batcher = Batcher(BatchWindow(idle=1.0, maximum=10.0), clock)
    assert asyncio.run(_closes_after(batcher, clock, [0.0, 0.5, 1.25])) == 2.25


def test_a_steady_stream_of_pods_is_cut_at_ten_seconds() -> None:
    clock = FakeClock()
    batcher = Batcher(BatchWindow(idle=1.0, maximum=10.0), clock)
    every_half_second = [i * 0.5 for i in range(40)]  # would keep the idle window open for 20 s
    assert asyncio.run(_closes_after(batcher, clock, every_half_second)) == 10.0


BURSTY = BatchWindow(idle=1.0, maximum=10.0, burst=8, burst_maximum=30.0)
SIXTEEN_A_SECOND = 1 / 16  # the helper's grid: one pod a tick


def test_a_burst_still_arriving_at_ten_seconds_keeps_the_batch_open_until_it_ends() -> None:
    """Issue 14: 1,000 pods made in 12 s were cut at 10 s, and the last hundred bought three more nodes."""
    clock = FakeClock()
    burst = [i * SIXTEEN_A_SECOND for i in range(15 * 16)]  # 16 pods a second for 15 s
    closed = asyncio.run(_closes_after(Batcher(BURSTY, clock), clock, burst))
    assert closed == burst[-1] + 1.0, "one idle window after the burst's last pod"


def test_a_burst_that_never_ends_is_cut_at_the_burst_maximum() -> None:
    clock = FakeClock()
    endless = [i * SIXTEEN_A_SECOND for i in range(45 * 16)]
    assert asyncio.run(_closes_after(Batcher(BURSTY, clock), clock, endless)) == 30.0


POOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "default", "uid": "uid-1"},
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "a"}},
            "spec": {
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["c3-4", "c3-8"]},
                ],
                "nodeClassRef": {
                    "group": "karpenter.cluster.x-k8s.io",
                    "kind": "ClusterAPINodeClass",
                    "name": "x",
                },
                "startupTaints": [{"key": "example.com/agent", "effect": "NoSchedule"}],
                "expireAfter": "Never",
            },
        }
    },
}


def test_a_nodeclaim_is_the_pools_template_narrowed_to_the_chosen_offering() -> None:
    pods = tuple(
        Pod("default", f"p{i}", {"cpu": 1000, "memory": 2**30 * 1000, "pods": 1000}) for i in range(3)
    )
    flavor = InstanceType("c3-8", {"cpu": 4000}, {"cpu": 4000}, (Offering("nova"),))
    snapshot = Snapshot(pods=pods, instance_types=(flavor,), node_pools=())
    planned = PlannedNodeClaim("default", "c3-8", "nova", "on-demand", 1.5, ("default/p0", "default/p2"))
    claim = nodeclaim_manifest(planned, POOL, snapshot)
    meta, spec = claim["metadata"], claim["spec"]
    assert meta["generateName"] == "default-"
    assert meta["labels"]["team"] == "a"
    assert meta["labels"]["node.kubernetes.io/instance-type"] == "c3-8"
    assert meta["labels"]["topology.kubernetes.io/zone"] == "nova"
    assert meta["annotations"][NODEPOOL_HASH_ANNOTATION] == nodepool_hash(POOL)
    assert meta["finalizers"] == [TERMINATION_FINALIZER]
    assert meta["ownerReferences"][0]["uid"] == "uid-1"
    by_key = {r["key"]: r for r in spec["requirements"]}
    assert by_key["node.kubernetes.io/instance-type"]["values"] == ["c3-8"]
    assert by_key["kubernetes.io/arch"]["values"] == ["amd64"]
    assert spec["resources"]["requests"] == {"cpu": "2", "memory": "2Gi", "pods": "2"}
    assert spec["startupTaints"] == [{"key": "example.com/agent", "effect": "NoSchedule"}]


def test_the_pool_hash_changes_with_the_template_only() -> None:
    changed = {**POOL, "spec": {**POOL["spec"], "limits": {"cpu": "10"}}}
    assert nodepool_hash(changed) == nodepool_hash(POOL)
    retemplated = {"spec": {"template": {**POOL["spec"]["template"], "metadata": {"labels": {"team": "b"}}}}}
    assert nodepool_hash(retemplated) != nodepool_hash(POOL)


def test_only_nodes_that_got_pending_pods_are_counted_on() -> None:
    # The plan lists every existing node; only those it put pods on are nominated.
    plan = Plan("python", (), {"busy": ("ns/a", "ns/b"), "idle": (), "claim-x": ("ns/c",)}, {})
    assert counted_on_nodes(plan) == {"busy": ("ns/a", "ns/b"), "claim-x": ("ns/c",)}
