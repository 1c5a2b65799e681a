"""cluster-autoscaler's scale-up on Cluster API, reimplemented: the `cluster-autoscaler` peer.

The cluster-autoscaler Go module is not published with semantic versions (its tags are
`cluster-autoscaler-1.x.y`), so it cannot be required like sigs.k8s.io/karpenter. This follows the
upstream code instead, file by file (paths under kubernetes/autoscaler/cluster-autoscaler/):

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

Only the cost is compared: this is Python, so its time says nothing about the Go original.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from kapstan.scheduling import resources as res
from kapstan.scheduling.model import (
    CAPACITY_TYPE,
    CPU,
    HOSTNAME,
    INSTANCE_TYPE,
    MEMORY,
    NODEPOOL,
    ZONE,
    HostPort,
    LabelSelector,
    Plan,
    PlannedNodeClaim,
    Pod,
    PodAffinityTerm,
    Snapshot,
    Taint,
)
from kapstan.scheduling.topology import matches_node, untolerated

ENGINE = "cluster-autoscaler"
MAX_NODES_PER_SCALEUP = 1000


@dataclass(frozen=True)
class NodeGroup:
    name: str
    pool: str
    flavor: str
    zone: str
    capacity_type: str
    price: float
    labels: Mapping[str, str]
    taints: tuple[Taint, ...]
    capacity: Mapping[str, int]
    allocatable: Mapping[str, int]
    """The flavor's allocatable less the DaemonSet pods that run on this template."""


@dataclass
class _Node:
    group: NodeGroup
    labels: dict[str, str]
    row: int
    """Its row in the cluster's matrix of free resources."""
    pods: list[Pod] = field(default_factory=list)
    ports: list[HostPort] = field(default_factory=list)


def node_groups(snapshot: Snapshot) -> list[NodeGroup]:
    flavors = {it.name: it for it in snapshot.instance_types}
    out = []
    for pool in snapshot.node_pools:
        names = pool.instance_types if pool.instance_types is not None else tuple(flavors)
        for name in names:
            it = flavors[name]
            for o in it.offerings:
                if not o.available:
                    continue
                labels = {
                    **it.labels,
                    **pool.labels,
                    NODEPOOL: pool.name,
                    ZONE: o.zone,
                    CAPACITY_TYPE: o.capacity_type,
                }
                taints = (*pool.taints, *it.taints)
                overhead = res.total(
                    ds.pod.requests
                    for ds in snapshot.daemonsets
                    if matches_node(ds.pod, labels)
                    and untolerated(ds.pod.tolerations, taints, prefer=False) is None
                )
                allocatable = res.subtract(it.allocatable, overhead)
                group = f"{pool.name}-{name}-{o.zone}-{o.capacity_type}"
                out.append(
                    NodeGroup(
                        group,
                        pool.name,
                        name,
                        o.zone,
                        o.capacity_type,
                        o.price,
                        labels,
                        taints,
                        it.capacity,
                        allocatable,
                    )
                )
    return sorted(out, key=lambda g: g.name)


class _Cluster:
    """The simulated cluster: upcoming nodes and their pods, with the counts the predicates need.

    Changes are journaled so an estimate can fork and revert, as CA's ClusterSnapshot does.
    """

    def __init__(self, pods: list[Pod], groups: list[NodeGroup]) -> None:
        self.nodes: list[_Node] = []
        # Free resources of every node, one row each: the resource check, which every predicate call
        # starts with, becomes one vectorised comparison over the candidate nodes.
        names = sorted({r for p in pods for r in p.requests} | {r for g in groups for r in g.allocatable})
        self.resources = {name: i for i, name in enumerate(names)}
        self.free = np.zeros((64, len(names)), dtype=np.int64)
        self.requests: dict[str, np.ndarray] = {}
        self.admits: dict[object, bool] = {}
        self._sids: dict[tuple[LabelSelector, tuple[str, ...], bool], int] = {}
        self._allocatable: dict[str, np.ndarray] = {}
        # Every selector any pod's required (anti-)affinity or spread constraint uses, with the topology
        # keys it is counted under; counts[(selector id, key, domain)] = matching pods placed there.
        self.selectors: dict[tuple[LabelSelector, tuple[str, ...], bool], int] = {}
        self.keys: dict[int, set[str]] = {}
        self.counts: Counter[tuple[int, str, str]] = Counter()
        self.anti: dict[tuple[str, str], list[tuple[PodAffinityTerm, Pod]]] = {}
        """Required anti-affinity terms of placed pods, by (topology key, domain): the symmetric check."""
        self.anti_keys = {t.topology_key for p in pods for t in p.anti_affinity}
        self.matching: dict[tuple[str, frozenset[tuple[str, str]]], list[int]] = {}
        self.journal: list[tuple[_Node, Pod] | _Node] | None = None
        for pod in pods:
            for term in (*pod.affinity, *pod.anti_affinity):
                self._register(term.selector, term.namespaces, term.all_namespaces, term.topology_key)
            for c in pod.spread:
                self._register(c.selector, (pod.namespace,), False, c.topology_key)

    def _register(
        self, selector: LabelSelector, namespaces: tuple[str, ...], everywhere: bool, key: str
    ) -> None:
        sid = self.selectors.setdefault(
            (selector, tuple(sorted(namespaces)), everywhere), len(self.selectors)
        )
        self.keys.setdefault(sid, set()).add(key)

    def sid(self, selector: LabelSelector, namespaces: tuple[str, ...], everywhere: bool) -> int:
        key = (selector, namespaces, everywhere)
        found = self._sids.get(key)
        if found is None:
            found = self._sids[key] = self.selectors[(selector, tuple(sorted(namespaces)), everywhere)]
        return found

    def _selected_by(self, pod: Pod) -> list[int]:
        key = (pod.namespace, frozenset(pod.labels.items()))
        found = self.matching.get(key)
        if found is None:
            found = [
                sid
                for (selector, namespaces, everywhere), sid in self.selectors.items()
                if (everywhere or pod.namespace in namespaces) and selector.matches(pod.labels)
            ]
            self.matching[key] = found
        return found

    # -- changes --------------------------------------------------------------------------------------

    def vector(self, amounts: Mapping[str, int]) -> np.ndarray:
        out = np.zeros(len(self.resources), dtype=np.int64)
        for name, amount in amounts.items():
            out[self.resources[name]] = amount
        return out

    def request(self, pod: Pod) -> np.ndarray:
        found = self.requests.get(pod.key)
        if found is None:
            found = self.requests[pod.key] = self.vector(pod.requests)
        return found

    def allocatable(self, group: NodeGroup) -> np.ndarray:
        found = self._allocatable.get(group.name)
        if found is None:
            found = self._allocatable[group.name] = self.vector(group.allocatable)
        return found

    def candidates(self, request: np.ndarray, start: int = 0) -> Iterator[_Node]:
        """Nodes from `start` on with room for `request`, in order (first fit)."""
        rows = np.flatnonzero((self.free[start : len(self.nodes)] >= request).all(axis=1))
        return (self.nodes[start + i] for i in rows.tolist())

    def add_node(self, group: NodeGroup) -> _Node:
        row = len(self.nodes)
        if row == len(self.free):
            self.free = np.concatenate([self.free, np.zeros_like(self.free)])
        self.free[row] = self.vector(group.allocatable)
        node = _Node(group, {**group.labels, HOSTNAME: f"ca-{row}"}, row)
        self.nodes.append(node)
        if self.journal is not None:
            self.journal.append(node)
        return node

    def add_pod(self, node: _Node, pod: Pod, sign: int = 1) -> None:
        for name, amount in pod.requests.items():
            self.free[node.row, self.resources[name]] -= sign * amount
        for sid in self._selected_by(pod):
            for key in self.keys[sid]:
                domain = node.labels.get(key)
                if domain is not None:
                    self.counts[(sid, key, domain)] += sign
        for term in pod.anti_affinity:
            domain = node.labels.get(term.topology_key)
            if domain is not None:
                entries = self.anti.setdefault((term.topology_key, domain), [])
                if sign > 0:
                    entries.append((term, pod))
                else:
                    entries.pop()  # undone last-in first-out
        if sign > 0:
            node.pods.append(pod)
            node.ports.extend(pod.host_ports)
            if self.journal is not None:
                self.journal.append((node, pod))
        else:
            # Reverts undo the journal backwards, so the pod is the node's last one.
            assert node.pods[-1] is pod
            node.pods.pop()
            del node.ports[len(node.ports) - len(pod.host_ports) :]

    def fork(self) -> None:
        self.journal = []

    def revert(self) -> None:
        assert self.journal is not None
        for entry in reversed(self.journal):
            if isinstance(entry, _Node):
                # Nodes are added at the end and undone last-in first-out.
                assert self.nodes[-1] is entry
                self.nodes.pop()
            else:
                self.add_pod(entry[0], entry[1], sign=-1)
        self.journal = None

    def commit(self) -> None:
        self.journal = None

    # -- predicates -----------------------------------------------------------------------------------

    def prefilter(self, pod: Pod) -> list[tuple[int, str, int, int]]:
        """Per DoNotSchedule spread constraint: (selector id, key, max skew, minimum over domains), as
        kube-scheduler's PreFilter computes once per pod. Domains are the keys' values on the nodes that
        match the pod's node affinity (nodeAffinityPolicy Honor)."""
        out: list[tuple[int, str, int, int]] = []
        for c in pod.spread:
            if c.when_unsatisfiable != "DoNotSchedule":
                continue
            sid = self.sid(c.selector, (pod.namespace,), False)
            unfiltered = c.node_affinity_policy == "Ignore" or not (pod.node_selector or pod.required_terms)
            eligible = self.nodes if unfiltered else [n for n in self.nodes if matches_node(pod, n.labels)]
            domains = {n.labels[c.topology_key] for n in eligible if c.topology_key in n.labels}
            counts = [self.counts.get((sid, c.topology_key, d), 0) for d in domains]
            minimum = min(counts) if counts and len(domains) >= c.min_domains else 0
            out.append((sid, c.topology_key, c.max_skew, minimum))
        return out

    def fits(self, pod: Pod, node: _Node, spread: list[tuple[int, str, int, int]]) -> bool:
        """Every predicate but resources, which `candidates` checks."""
        for port in pod.host_ports:
            if any(port.conflicts(other) for other in node.ports):
                return False
        labels = node.labels
        for sid, key, skew, minimum in spread:
            domain = labels.get(key)
            if domain is None or self.counts.get((sid, key, domain), 0) + 1 - minimum > skew:
                return False
        for term in pod.affinity:
            sid = self.sid(term.selector, term.namespaces, term.all_namespaces)
            domain = labels.get(term.topology_key)
            if domain is None:
                return False
            if self.counts.get((sid, term.topology_key, domain), 0) == 0:
                # kube-scheduler lets the first pod of a self-affine group in anywhere: no pod matches yet.
                anywhere = any(
                    self.counts.get((sid, term.topology_key, d), 0) for d in self._domains(term.topology_key)
                )
                if anywhere or not term.selects(pod.namespace, pod.labels):
                    return False
        for term in pod.anti_affinity:
            domain = labels.get(term.topology_key)
            sid = self.sid(term.selector, term.namespaces, term.all_namespaces)
            if domain is not None and self.counts.get((sid, term.topology_key, domain), 0):
                return False
        for key in self.anti_keys:
            entries = self.anti.get((key, labels.get(key, "")), ())
            if any(t.selects(pod.namespace, pod.labels) for t, _ in entries):
                return False
        return True

    def _domains(self, key: str) -> set[str]:
        return {n.labels[key] for n in self.nodes if key in n.labels}


def _static_fit(cluster: _Cluster, pod: Pod, group: NodeGroup) -> bool:
    """What an empty template node can tell: labels, taints, room for the pod alone. Labels and taints
    are checked once per distinct pod signature and group (the bench has thousands of alike pods)."""
    key = (tuple(sorted(pod.node_selector.items())), pod.required_terms, pod.tolerations, group.name)
    admitted = cluster.admits.get(key)
    if admitted is None:
        admitted = cluster.admits[key] = (
            matches_node(pod, group.labels)
            and untolerated(pod.tolerations, group.taints, prefer=False) is None
        )
    return admitted and bool((cluster.request(pod) <= cluster.allocatable(group)).all())


def _score(pod: Pod, group: NodeGroup) -> float:
    cpu, memory = group.allocatable.get(CPU, 0), group.allocatable.get(MEMORY, 0)
    return (pod.requests.get(CPU, 0) / cpu if cpu else 0.0) + (
        pod.requests.get(MEMORY, 0) / memory if memory else 0.0
    )


@dataclass
class _Estimate:
    group: NodeGroup
    nodes: list[_Node]
    pods: list[Pod]


def estimate(cluster: _Cluster, pods: list[Pod], group: NodeGroup) -> _Estimate:
    """The binpacking estimator for one node group; the nodes it adds stay in the cluster until revert."""
    order = sorted(range(len(pods)), key=lambda i: -_score(pods[i], group))
    start = len(cluster.nodes)
    added: list[_Node] = []
    last: _Node | None = None
    scheduled: list[Pod] = []
    for i in order:
        pod = pods[i]
        if not _static_fit(cluster, pod, group):
            continue
        spread = cluster.prefilter(pod)
        request = cluster.request(pod)
        target = next((n for n in cluster.candidates(request, start) if cluster.fits(pod, n, spread)), None)
        if target is None:
            if last is not None and not last.pods:
                continue  # an empty new node did not take it; another one would not either
            if len(added) >= MAX_NODES_PER_SCALEUP:
                continue
            last = cluster.add_node(group)
            added.append(last)
            spread = cluster.prefilter(pod)
            if next(cluster.candidates(request, last.row), None) is None or not cluster.fits(
                pod, last, spread
            ):
                continue
            target = last
        cluster.add_pod(target, pod)
        scheduled.append(pod)
    return _Estimate(group, [n for n in added if n.pods], scheduled)


def waste(option: _Estimate) -> float:
    """least-waste: unused share of the new nodes' CPU plus the same for memory."""
    count = len(option.nodes)
    cpu = option.group.capacity.get(CPU, 0) * count
    memory = option.group.capacity.get(MEMORY, 0) * count
    used_cpu = sum(p.requests.get(CPU, 0) for p in option.pods)
    used_memory = sum(p.requests.get(MEMORY, 0) for p in option.pods)
    return (cpu - used_cpu) / cpu + (memory - used_memory) / memory


def _zone_blind(pods: list[Pod], cluster: _Cluster) -> bool:
    """True when no pending pod's constraints can tell zones apart and no node exists yet: then node
    groups that differ only in zone give the same estimate, and one per flavor is enough."""
    if cluster.nodes:
        return False
    for p in pods:
        if p.node_selector or p.required_terms:
            return False
        keys = [t.topology_key for t in (*p.affinity, *p.anti_affinity)] + [c.topology_key for c in p.spread]
        if any(k != HOSTNAME for k in keys):
            return False
    return True


def _filter_out_schedulable(cluster: _Cluster, pods: list[Pod]) -> list[Pod]:
    """Pending pods that fit on nodes already coming go there (first fit); the rest stay pending."""
    left = []
    for pod in pods:
        spread = cluster.prefilter(pod)
        request = cluster.request(pod)
        node = next((n for n in cluster.candidates(request) if cluster.fits(pod, n, spread)), None)
        if node is None:
            left.append(pod)
        else:
            cluster.add_pod(node, pod)
    return left


def solve(snapshot: Snapshot, deadline: float | None = None) -> Plan:
    """cluster-autoscaler's loops until nothing more can be placed (or `deadline`, a perf_counter time,
    passes: the remaining pods are then reported unschedulable with that reason)."""
    if snapshot.nodes:
        raise ValueError("the cluster-autoscaler peer starts from an empty cluster")
    started = time.perf_counter()
    groups = node_groups(snapshot)
    cluster = _Cluster(list(snapshot.pods), groups)
    pending = list(snapshot.pods)
    unschedulable: dict[str, str] = {}
    while pending:
        if deadline is not None and time.perf_counter() > deadline:
            unschedulable.update(
                {p.key: "cluster-autoscaler simulation stopped at its time cap" for p in pending}
            )
            break
        candidates = groups
        if _zone_blind(pending, cluster):
            seen: set[tuple[str, str, str]] = set()
            candidates = []
            for g in groups:
                if (g.pool, g.flavor, g.capacity_type) not in seen:
                    seen.add((g.pool, g.flavor, g.capacity_type))
                    candidates.append(g)
        best: tuple[float, str] | None = None
        for group in candidates:
            cluster.fork()
            option = estimate(cluster, pending, group)
            cluster.revert()
            if option.nodes:
                score = (waste(option), group.name)
                if best is None or score < best:
                    best = score
        if best is None:
            unschedulable.update({p.key: "no node group's template node can take it" for p in pending})
            break
        chosen = next(g for g in groups if g.name == best[1])
        estimate(cluster, pending, chosen)
        cluster.commit()
        placed = {p.key for n in cluster.nodes for p in n.pods}
        pending = _filter_out_schedulable(cluster, [p for p in pending if p.key not in placed])
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
