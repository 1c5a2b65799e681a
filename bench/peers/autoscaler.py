"""cluster-autoscaler's scale-up on Cluster API, reimplemented: the `cluster-autoscaler` peer.

The cluster-autoscaler Go module is not published with semantic versions (its tags are
`cluster-autoscaler-1.x.y`), so it cannot be required like sigs.k8s.io/karpenter. This follows the
upstream code instead, file by file (paths under kubernetes/autoscaler/cluster-autoscaler/); CA's loop is
here, its parts in `bench/peers/ca/` (groups.py, cluster.py, predicates.py, estimator.py):

- Node groups (`cloudprovider/clusterapi/`): one per MachineDeployment, and a CAPI user spreading over
  zones has one MD per flavor and failure domain; so one node group per (flavor, zone offering). Its
  template node has the flavor's labels plus the zone, and the allocatable left after the DaemonSet pods
  that would run on it (`simulator/node_info_utils.go`: the template NodeInfo carries DaemonSet pods).
- Estimate (`estimator/binpacking_estimator.go`): pods ordered by `estimator/decreasing_pod_orderer.go`
  (cpu / node cpu + memory / node memory, largest first). For each pod: first fit on any node added so
  far by this estimate (`tryToScheduleOnExistingNodes`); otherwise the last added node; otherwise a new
  node from the template, unless the last added node is still empty (then the pod is given up for this
  group); at most 1,000 nodes per estimate (`--max-nodes-per-scaleup`).
- Expander (`expander/waste/waste.go`, least-waste): among options that add nodes, the smallest
  (capacity - requested) / capacity for CPU plus the same for memory, over the option's pods and nodes;
  ties go to the random fallback, here the first node group by name, so runs repeat.
- Loop (`core/static_autoscaler.go`, `core/scaleup/orchestrator/orchestrator.go`): one node group scaled
  per loop; the next loop first puts pending pods on the nodes already coming (filter-out-schedulable,
  first fit), then estimates again for the rest, until every pod is placed or no group can take any.

Scheduling predicates (the kube-scheduler filters CA runs in its simulation): resources, node selector
and required node affinity, taints, required pod affinity and anti-affinity (both directions, any
topology key), topology spread with DoNotSchedule, host ports. Preferences are scores, not filters: CA
ignores them. As in kube-scheduler, topology domains are those of the nodes in the simulated cluster, so
a zone spread can only spread over zones where a node already exists; CA's own documentation warns of
this, and the validator reports the plans it produces.

Only the cost is compared: this is Python, so its time says nothing about the Go original. It is made
fast enough for 20,000 pods x 1,200 node groups by bookkeeping that changes no decision: the predicates
read per-domain counts kept as pods are placed (the spread minimum from a histogram of them); an
estimate's nodes share one template, so only hostname-keyed checks differ between them, and a first fit
resumes where the last alike pod's stopped (free room only shrinks and counts only grow during an
estimate); consecutive alike pods that no topology rule reads or counts are placed as one run (first fit
fills the rows in order); the pod order is sorted once per template size; and node groups that differ
only in a zone where no node exists yet are estimated once (the same estimate, and the tie-break picks
the first). CA itself groups alike pods (`core/scaleup/equivalence/`), but only pods of one controller,
and the bench's pods have none: each is its own group, so the order stays pod by pod.
"""

from __future__ import annotations

import time

from bench.peers.ca.cluster import Profile
from bench.peers.ca.estimator import Orders, estimate, waste
from bench.peers.ca.groups import NodeGroup, node_groups
from bench.peers.ca.predicates import Cluster
from kapstan.scheduling.model import INSTANCE_TYPE, Plan, PlannedNodeClaim, Snapshot

ENGINE = "cluster-autoscaler"


def _candidates(groups: list[NodeGroup], pending: list[Profile], cluster: Cluster) -> list[NodeGroup]:
    """The node groups to estimate. Zone names matter only through the nodes that carry them, so groups
    that differ only in a zone where the cluster has no node yet give the same estimate and the same waste
    (unless a pending pod selects nodes by label); the first of them by name, which the tie-break would
    pick, stands for the others."""
    if any(p.pod.node_selector or p.pod.required_terms for p in pending):
        return groups
    used = {n.group.zone for n in cluster.nodes}
    seen: set[tuple[object, ...]] = set()
    out = []
    for g in groups:
        if g.zone not in used:
            alike = (g.pool, g.flavor, g.capacity_type, tuple(sorted(g.allocatable.items())))
            if alike in seen:
                continue
            seen.add(alike)
        out.append(g)
    return out


def _filter_out_schedulable(cluster: Cluster, pending: list[Profile]) -> list[Profile]:
    """Pending pods that fit on nodes already coming go there (first fit); the rest stay pending."""
    left = []
    for profile in pending:
        conditions = cluster.conditions(profile)
        node = None if conditions is None else cluster.first_fit(profile, [*conditions[0], *conditions[1]])
        if node is None:
            left.append(profile)
        else:
            cluster.add_pod(node, profile)
    return left


def _least_waste(cluster: Cluster, orders: Orders, candidates: list[NodeGroup]) -> NodeGroup | None:
    best: tuple[float, str] | None = None
    chosen = None
    for group in candidates:
        cluster.fork()
        option = estimate(cluster, orders, group)
        cluster.revert()
        if option.nodes:
            score = (waste(option), group.name)
            if best is None or score < best:
                best, chosen = score, group
    return chosen


def solve(snapshot: Snapshot, deadline: float | None = None) -> Plan:
    """cluster-autoscaler's loops until nothing more can be placed (or `deadline`, a perf_counter time,
    passes: the remaining pods are then reported unschedulable with that reason)."""
    if snapshot.nodes:
        raise ValueError("the cluster-autoscaler peer starts from an empty cluster")
    started = time.perf_counter()
    groups = node_groups(snapshot)
    cluster = Cluster(list(snapshot.pods), groups)
    pending = cluster.profiles
    unschedulable: dict[str, str] = {}
    while pending:
        if deadline is not None and time.perf_counter() > deadline:
            why = "cluster-autoscaler simulation stopped at its time cap"
            unschedulable.update({p.pod.key: why for p in pending})
            break
        orders = Orders(pending, cluster)
        chosen = _least_waste(cluster, orders, _candidates(groups, pending, cluster))
        if chosen is None:
            why = "no node group's template node can take it"
            unschedulable.update({p.pod.key: why for p in pending})
            break
        estimate(cluster, orders, chosen)
        cluster.commit()
        placed = {p.key for n in cluster.nodes for p in n.pods}
        pending = _filter_out_schedulable(cluster, [p for p in pending if p.pod.key not in placed])
    claims = tuple(
        PlannedNodeClaim(
            n.group.pool,
            n.group.flavor,
            n.group.zone,
            n.group.capacity_type,
            n.group.price,
            tuple(p.key for p in n.pods),
            {**n.group.labels, INSTANCE_TYPE: n.group.flavor},
        )
        for n in cluster.nodes
        if n.pods
    )
    return Plan(ENGINE, claims, {}, unschedulable, time.perf_counter() - started)
