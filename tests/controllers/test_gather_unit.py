"""What the operator's snapshot sees of the cluster state (`ClusterState.gather`), on the fake API."""

from __future__ import annotations

import asyncio

from controllers.fake_cluster import CLUSTER, NS, World, world
from kapstan.kube.kinds import NODECLAIMS
from kapstan.scheduling.model import Snapshot
from kapstan.snapshot import build_simulation_input


def _snapshot(w: World) -> Snapshot:
    gathered = asyncio.run(w.state.gather())
    return build_simulation_input(gathered.manifests, (NS, CLUSTER.name)).snapshot


def test_a_node_whose_nodeclaim_is_deleting_is_no_capacity_and_its_pods_are_pending_again() -> None:
    """Karpenter's provisioner counts only active nodes and reschedules the pods of deleting ones; the
    operator must hand the deleting NodeClaim to the snapshot for it to know."""
    w = world()
    claim = asyncio.run(w.claim("c3-4"))
    name = claim["metadata"]["name"]
    w.state.node_claims.store.upsert({**claim, "status": {"providerID": "fake://m", "nodeName": "node-a"}})
    w.node("node-a", "fake://m", taints=[])
    w.pod("web", "node-a")
    w.pod("agent", "node-a", daemonset=True)
    running = _snapshot(w)
    assert [node.name for node in running.nodes] == ["node-a"] and running.pods == ()
    asyncio.run(w.api.delete(NODECLAIMS, name))
    deleting = _snapshot(w)
    assert deleting.nodes == ()
    assert [pod.key for pod in deleting.pods] == ["default/web"]
