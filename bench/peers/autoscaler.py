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
from collections import Counter
from collections.abc import Mapping, Sequence
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
HOSTNAME_KEY = 0
"""The index of kubernetes.io/hostname among the cluster's topology keys."""
UNBOUNDED = 1 << 62
SCAN_ROWS = 8
"""Rows a first fit checks one by one before it masks the rest at once."""


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
    row: int
    """Its row in the cluster's matrices of free resources and topology domains."""
    domains: tuple[int, ...]
    """Its domain id under each topology key (-1: no such label); under the hostname, its row."""
    pods: list[Pod] = field(default_factory=list)
    ports: list[HostPort] = field(default_factory=list)

    @property
    def labels(self) -> dict[str, str]:
        return {**self.group.labels, HOSTNAME: f"ca-{self.row}"}


Condition = tuple[int, int, int, int, bool]
"""(counter, key, least, most, needs the key): a node passes when the counter's value in the node's domain of
the key lies in [least, most], or when the node has no such label and the condition does not need it."""
Conditions = tuple[list[Condition], list[Condition]]
"""A pod's conditions under keys that a template's nodes share (all but the hostname), and the rest."""


@dataclass(frozen=True)
class _Profile:
    """What the predicates read of one pod, worked out once: ids of counters instead of selectors."""

    pod: Pod
    request: np.ndarray
    needs: tuple[tuple[int, int], ...]
    """(resource index, amount) of every non-zero request."""
    static: tuple[object, ...]
    """What the template check reads besides resources: node selector, required terms, tolerations."""
    counted_in: tuple[int, ...]
    """Counters that count this pod once placed: selectors that match it, its own anti-affinity terms."""
    spread: tuple[tuple[int, int, int, int, bool], ...]
    """DoNotSchedule constraints: (counter, key, max skew, min domains, domains filtered by node affinity)."""
    affinity: tuple[tuple[int, int, bool], ...]
    """Required affinity terms: (counter, key, the term selects the pod itself)."""
    apart: tuple[tuple[Condition, ...], tuple[Condition, ...]]
    """Required anti-affinity both ways as conditions, which do not change (none may count in the domain):
    its own terms, and the terms of any pod that select it (the symmetric check)."""
    plain: bool
    """No topology rule reads or counts it and it has no host port: only resources decide where it goes."""


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


@dataclass
class _Saved:
    """What a revert restores: an estimate changes nothing else of the nodes that were there before it."""

    nodes: int
    counts: np.ndarray
    totals: list[int]
    histograms: list[Counter[int] | None]
    nodes_in: list[list[int]]
    domain_count: list[int]


class _Cluster:
    """The simulated cluster: upcoming nodes and their pods, with the counts the predicates need.

    Free resources are a matrix (one row a node) and topology counts a matrix (one row a counter, one column
    a domain), so a first fit over many nodes is one vectorised mask. An estimate can fork and revert, as
    CA's ClusterSnapshot does: it only adds nodes and puts pods on them, so a revert drops those nodes and
    restores the counts saved at the fork.
    """

    def __init__(self, pods: list[Pod], groups: list[NodeGroup]) -> None:
        self.nodes: list[_Node] = []
        names = sorted({r for p in pods for r in p.requests} | {r for g in groups for r in g.allocatable})
        self.resources = {name: i for i, name in enumerate(names)}
        self.free = np.zeros((64, len(names)), dtype=np.int64)
        self._index_topology(pods)
        self._register_counters(pods)
        self.admitted: dict[tuple[object, ...], bool] = {}
        # Registered before any fork: a revert restores these lists, so they must not grow inside one.
        self.template_domains = {g.name: self._group_domains(g) for g in groups}
        self._matching: dict[
            tuple[str, frozenset[tuple[str, str]]], tuple[tuple[int, ...], tuple[tuple[int, int], ...]]
        ] = {}
        self.profiles = [self._profile(p) for p in pods]
        self.saved: _Saved | None = None

    def _index_topology(self, pods: list[Pod]) -> None:
        """Topology keys (the hostname first) and, per key, domain ids for its values."""
        terms = [t for p in pods for t in (*p.affinity, *p.anti_affinity)]
        keys = {t.topology_key for t in terms} | {c.topology_key for p in pods for c in p.spread}
        self.keys = [HOSTNAME, *sorted(keys - {HOSTNAME})]
        self.key_index = {key: i for i, key in enumerate(self.keys)}
        self.values: list[dict[str, int]] = [{} for _ in self.keys]
        self.nodes_in: list[list[int]] = [[] for _ in self.keys]
        """Per key, the number of nodes in each domain id."""
        self.domain_count = [0 for _ in self.keys]
        self.dom = np.full((64, len(self.keys)), -1, dtype=np.int64)

    def _register_counters(self, pods: list[Pod]) -> None:
        # Counters: a selector under one topology key (pods it matches, per domain), or an anti-affinity
        # term (pods carrying it, per domain). Selector counters also keep how many domains hold each
        # non-zero count (domains with none are the rest), so the spread minimum is read, not recomputed.
        self.counter_ids: dict[tuple[tuple[object, ...], str], int] = {}
        self.selectors: dict[tuple[LabelSelector, tuple[str, ...], bool], list[int]] = {}
        self.anti_terms: dict[PodAffinityTerm, int] = {}
        for pod in pods:
            for term in (*pod.affinity, *pod.anti_affinity):
                self._selector(term.selector, term.namespaces, term.all_namespaces, term.topology_key)
            for c in pod.spread:
                self._selector(c.selector, (pod.namespace,), False, c.topology_key)
        for term in (t for p in pods for t in p.anti_affinity):
            self.anti_terms.setdefault(term, self._counter(("anti", term), term.topology_key))
        self.counter_key = [self.key_index[key] for _, key in self.counter_ids]
        self.histograms: list[Counter[int] | None] = [
            Counter() if kind[0] == "selector" else None for kind, _ in self.counter_ids
        ]
        self.totals = [0 for _ in self.counter_ids]
        self.counts = np.zeros((len(self.counter_ids), 64), dtype=np.int64)

    def _counter(self, kind: tuple[object, ...], key: str) -> int:
        return self.counter_ids.setdefault((kind, key), len(self.counter_ids))

    def _selector(
        self, selector: LabelSelector, namespaces: tuple[str, ...], everywhere: bool, key: str
    ) -> int:
        identity = (selector, tuple(sorted(namespaces)), everywhere)
        counter = self._counter(("selector", *identity), key)
        ids = self.selectors.setdefault(identity, [])
        if counter not in ids:
            ids.append(counter)
        return counter

    # -- profiles -------------------------------------------------------------------------------------

    def _profile(self, pod: Pod) -> _Profile:
        request = self.vector(pod.requests)
        counted, repelled = self._matches(pod)
        own_anti = tuple(self.anti_terms[t] for t in pod.anti_affinity)
        spread = [c for c in pod.spread if c.when_unsatisfiable == "DoNotSchedule"]
        plain = not (counted or repelled or spread or pod.affinity or pod.anti_affinity or pod.host_ports)
        return _Profile(
            pod,
            request,
            tuple((i, int(a)) for i, a in enumerate(request.tolist()) if a),
            (tuple(sorted(pod.node_selector.items())), pod.required_terms, pod.tolerations),
            counted + own_anti,
            tuple(
                (
                    self._selector(c.selector, (pod.namespace,), False, c.topology_key),
                    self.key_index[c.topology_key],
                    c.max_skew,
                    c.min_domains,
                    c.node_affinity_policy == "Honor" and bool(pod.node_selector or pod.required_terms),
                )
                for c in spread
            ),
            tuple(
                (self._term_counter(t), self.key_index[t.topology_key], t.selects(pod.namespace, pod.labels))
                for t in pod.affinity
            ),
            self._apart(pod, repelled),
            plain and bool(request.any()),
        )

    def _apart(
        self, pod: Pod, repelled: tuple[tuple[int, int], ...]
    ) -> tuple[tuple[Condition, ...], tuple[Condition, ...]]:
        own = [(self._term_counter(t), self.key_index[t.topology_key]) for t in pod.anti_affinity]
        apart = [(counter, key, 0, 0, False) for counter, key in (*own, *repelled)]
        return (
            tuple(c for c in apart if c[1] != HOSTNAME_KEY),
            tuple(c for c in apart if c[1] == HOSTNAME_KEY),
        )

    def _term_counter(self, term: PodAffinityTerm) -> int:
        return self._selector(term.selector, term.namespaces, term.all_namespaces, term.topology_key)

    def _matches(self, pod: Pod) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
        """Selector counters that count the pod, and anti-affinity terms that repel it (by labels)."""
        key = (pod.namespace, frozenset(pod.labels.items()))
        found = self._matching.get(key)
        if found is None:
            counted = tuple(
                c
                for (selector, namespaces, everywhere), ids in self.selectors.items()
                if (everywhere or pod.namespace in namespaces) and selector.matches(pod.labels)
                for c in ids
            )
            repelled = tuple(
                (c, self.key_index[t.topology_key])
                for t, c in self.anti_terms.items()
                if t.selects(pod.namespace, pod.labels)
            )
            found = self._matching[key] = (counted, repelled)
        return found

    def vector(self, amounts: Mapping[str, int]) -> np.ndarray:
        out = np.zeros(len(self.resources), dtype=np.int64)
        for name, amount in amounts.items():
            out[self.resources[name]] = amount
        return out

    # -- changes --------------------------------------------------------------------------------------

    def add_node(self, group: NodeGroup, allocatable: np.ndarray) -> _Node:
        row = len(self.nodes)
        if row == len(self.free):
            self.free = np.concatenate([self.free, np.zeros_like(self.free)])
            self.dom = np.concatenate([self.dom, np.full_like(self.dom, -1)])
        self._room_for_domain(row)
        domains = (row, *self.template_domains[group.name])
        for key, domain in enumerate(domains[1:], 1):
            if domain >= 0:
                self.nodes_in[key][domain] += 1
                self.domain_count[key] += self.nodes_in[key][domain] == 1
        self.free[row] = allocatable
        self.dom[row] = domains
        node = _Node(group, row, domains)
        self.nodes.append(node)
        return node

    def _group_domains(self, group: NodeGroup) -> tuple[int, ...]:
        """Domain ids of a group's nodes under every key but the hostname (the same for all of them)."""
        return tuple(self._domain(key, group.labels.get(self.keys[key])) for key in range(1, len(self.keys)))

    def _domain(self, key: int, value: str | None) -> int:
        if value is None:
            return -1
        domain = self.values[key].setdefault(value, len(self.values[key]))
        self.nodes_in[key].extend([0] * (domain + 1 - len(self.nodes_in[key])))
        self._room_for_domain(domain)
        return domain

    def _room_for_domain(self, domain: int) -> None:
        if domain >= self.counts.shape[1]:
            self.counts = np.concatenate([self.counts, np.zeros_like(self.counts)], axis=1)

    def add_pod(self, node: _Node, profile: _Profile) -> None:
        self.free[node.row] -= profile.request
        for c in profile.counted_in:
            domain = node.domains[self.counter_key[c]]
            if domain < 0:
                continue
            old = int(self.counts[c, domain])
            self.counts[c, domain] = old + 1
            self.totals[c] += 1
            histogram = self.histograms[c]
            if histogram is not None:
                if old:
                    histogram[old] -= 1
                    if not histogram[old]:
                        del histogram[old]
                histogram[old + 1] += 1
        node.pods.append(profile.pod)
        node.ports.extend(profile.pod.host_ports)

    def add_alike(self, node: _Node, profile: _Profile, pods: list[Pod]) -> None:
        """Plain pods of one shape (`profile`'s), at once: they change only free resources."""
        self.free[node.row] -= len(pods) * profile.request
        node.pods.extend(pods)

    def room_for(self, profile: _Profile, start: int, end: int) -> np.ndarray:
        """How many pods of this shape fit on each row from `start` to `end`, by resources."""
        rows = [i for i, _ in profile.needs]
        amounts = np.array([a for _, a in profile.needs], dtype=np.int64)
        capacity: np.ndarray = (self.free[start:end, rows] // amounts).min(axis=1)
        return capacity

    def fork(self) -> None:
        self.saved = _Saved(
            len(self.nodes),
            self.counts.copy(),
            list(self.totals),
            [None if h is None else h.copy() for h in self.histograms],
            [list(n) for n in self.nodes_in],
            list(self.domain_count),
        )

    def revert(self) -> None:
        saved = self.saved
        assert saved is not None
        del self.nodes[saved.nodes :]
        self.counts, self.totals, self.histograms = saved.counts, saved.totals, saved.histograms
        self.nodes_in, self.domain_count = saved.nodes_in, saved.domain_count
        self.saved = None

    def commit(self) -> None:
        self.saved = None

    # -- predicates -----------------------------------------------------------------------------------

    def admits(self, profile: _Profile, group: NodeGroup, allocatable: np.ndarray) -> bool:
        """What an empty template node can tell: labels, taints, room for the pod alone. Cached per pod
        spec and group: the workloads have thousands of alike pods."""
        key = (profile.static, profile.needs, group.name)
        admitted = self.admitted.get(key)
        if admitted is None:
            pod = profile.pod
            admitted = self.admitted[key] = (
                matches_node(pod, group.labels)
                and untolerated(pod.tolerations, group.taints, prefer=False) is None
                and bool((profile.request <= allocatable).all())
            )
        return admitted

    def conditions(self, profile: _Profile) -> Conditions | None:
        """The pod's topology predicates against the current counts, as conditions on a node's domains;
        None when no node can pass (a required affinity that nothing matches and the pod cannot start).
        The spread minimum is kube-scheduler's PreFilter: the least count over the domains of nodes that
        match the pod's node affinity (nodeAffinityPolicy Honor)."""
        shared, own = list(profile.apart[0]), list(profile.apart[1])
        for counter, key, skew, min_domains, filtered in profile.spread:
            minimum = self._minimum(profile, counter, key, min_domains, filtered)
            (own if key == HOSTNAME_KEY else shared).append((counter, key, 0, minimum + skew - 1, True))
        for counter, key, itself in profile.affinity:
            if self.totals[counter]:
                least = 1
            elif itself:
                least = 0  # kube-scheduler lets the first pod of a self-affine group in anywhere
            else:
                return None
            (own if key == HOSTNAME_KEY else shared).append((counter, key, least, UNBOUNDED, True))
        return shared, own

    def _minimum(self, profile: _Profile, counter: int, key: int, min_domains: int, filtered: bool) -> int:
        if filtered:
            eligible = [n for n in self.nodes if matches_node(profile.pod, n.labels)]
            domains = {n.domains[key] for n in eligible if n.domains[key] >= 0}
            counts = [int(self.counts[counter, d]) for d in domains]
            return min(counts) if counts and len(domains) >= min_domains else 0
        histogram = self.histograms[counter]
        assert histogram is not None
        present = len(self.nodes) if key == HOSTNAME_KEY else self.domain_count[key]
        if not present or present < min_domains or present > sum(histogram.values()):
            return 0  # too few domains, or one without a matching pod
        return min(histogram)

    def fits(self, profile: _Profile, node: _Node, conditions: Conditions) -> bool:
        """Every predicate of the pod on one node."""
        return (
            self._room(profile, node.row)
            and self._holds(conditions[0], node)
            and self._holds(conditions[1], node)
            and self._ports_free(profile, node)
        )

    def _room(self, profile: _Profile, row: int) -> bool:
        free = self.free[row]
        for i, amount in profile.needs:  # noqa: SIM110 - all() over a generator is slower on this hot path
            if free[i] < amount:
                return False
        return True

    def _holds(self, conditions: Sequence[Condition], node: _Node) -> bool:
        for counter, key, least, most, needed in conditions:
            domain = node.domains[key]
            if domain < 0:
                if needed:
                    return False
            elif not least <= self.counts[counter, domain] <= most:
                return False
        return True

    @staticmethod
    def _ports_free(profile: _Profile, node: _Node) -> bool:
        return not any(port.conflicts(other) for port in profile.pod.host_ports for other in node.ports)

    def first_fit(self, profile: _Profile, conditions: list[Condition], start: int = 0) -> _Node | None:
        """The first node from row `start` on where the pod fits, the whole range checked as one mask."""
        end = len(self.nodes)
        ok = (self.free[start:end] >= profile.request).all(axis=1)
        for counter, key, least, most, needed in conditions:
            domains = self.dom[start:end, key]
            counts = self.counts[counter, np.maximum(domains, 0)]
            ok &= np.where(domains < 0, not needed, (counts >= least) & (counts <= most))
        for row in np.flatnonzero(ok).tolist():
            node = self.nodes[start + row]
            if self._ports_free(profile, node):
                return node
        return None

    def first_fit_new(
        self, profile: _Profile, conditions: Conditions, start: int, pointers: dict[object, int]
    ) -> _Node | None:
        """First fit among the nodes of one estimate (rows from `start` on), which share one template: they
        differ only in hostname, so conditions under any other key are checked once, on the first of them.
        For the rest, `pointers` keeps per pod shape the first row that may still fit: within an estimate
        free resources only shrink and counts only grow, so a row that failed an upper bound stays failed.
        """
        end = len(self.nodes)
        if start == end:
            return None
        shared, per_node = conditions
        if shared and not self._holds(shared, self.nodes[start]):
            return None
        if any(least > 0 for _, _, least, _, _ in per_node):
            return self.first_fit(profile, per_node, start)  # a lower bound: failed rows may pass later
        shape = (profile.needs, profile.pod.host_ports, *per_node)
        first = pointers.get(shape, start)
        stop = min(first + SCAN_ROWS, end)
        for row in range(first, stop):
            node = self.nodes[row]
            if self.fits(profile, node, ([], per_node)):
                pointers[shape] = row
                return node
        found = self.first_fit(profile, per_node, stop) if stop < end else None
        pointers[shape] = found.row if found is not None else end
        return found


@dataclass
class _Estimate:
    group: NodeGroup
    nodes: list[_Node]
    cpu: int
    """CPU requested by the pods it places."""
    memory: int


Step = tuple[_Profile, list[Pod]]
"""A pod, or a run of alike plain pods, and the profile they share."""


def _objects(items: Sequence[object]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


class _Orders:
    """The estimator's pod order per template: decreasing cpu / node cpu + memory / node memory, ties in
    pending order. It depends on the template's cpu and memory only, so the groups of a flavor in several
    zones, next to each other by name, share one sort (only the last is kept: one holds 20,000 pods)."""

    def __init__(self, pending: list[_Profile], cluster: _Cluster) -> None:
        self.pending = pending
        self.cpu = np.array([p.pod.requests.get(CPU, 0) for p in pending], dtype=np.float64)
        self.memory = np.array([p.pod.requests.get(MEMORY, 0) for p in pending], dtype=np.float64)
        # Plain pods of one shape share an id, any other pod has its own: runs are where ids repeat.
        shapes: dict[object, int] = {}
        self.shapes = np.array(
            [
                shapes.setdefault((p.needs, p.static), len(shapes)) if p.plain else -1 - i
                for i, p in enumerate(pending)
            ]
        )
        # Object arrays: reordering 20,000 pods per template is then one indexing, not a Python loop.
        self.profiles, self.pods = _objects(pending), _objects([p.pod for p in pending])
        self.cluster = cluster
        self.allocatable: dict[str, np.ndarray] = {}
        self.last: tuple[tuple[int, int], list[Step]] | None = None

    def of(self, group: NodeGroup) -> list[Step]:
        """The pods in order, consecutive plain pods of one shape as one run, any other pod alone."""
        size = (group.allocatable.get(CPU, 0), group.allocatable.get(MEMORY, 0))
        if self.last is None or self.last[0] != size:
            self.last = (size, self._steps(*size))
        return self.last[1]

    def _steps(self, cpu: int, memory: int) -> list[Step]:
        # Float division of exact integers, as `pod cpu / node cpu` in Python: the same scores.
        score = (self.cpu / cpu if cpu else 0.0) + (self.memory / memory if memory else 0.0)
        order = np.argsort(-score, kind="stable")
        shapes = self.shapes[order]
        starts = np.concatenate([[0], np.flatnonzero(shapes[1:] != shapes[:-1]) + 1])
        ends = [*starts[1:].tolist(), len(order)]
        pods = self.pods[order].tolist()
        firsts = self.profiles[order[starts]].tolist()
        return list(zip(firsts, [pods[a:b] for a, b in zip(starts.tolist(), ends, strict=True)], strict=True))

    def allocatable_of(self, group: NodeGroup) -> np.ndarray:
        found = self.allocatable.get(group.name)
        if found is None:
            found = self.allocatable[group.name] = self.cluster.vector(group.allocatable)
        return found


class _Estimator:
    """The binpacking estimator for one node group; the nodes it adds stay in the cluster until revert."""

    def __init__(self, cluster: _Cluster, group: NodeGroup, allocatable: np.ndarray) -> None:
        self.cluster, self.group, self.allocatable = cluster, group, allocatable
        self.start = len(cluster.nodes)
        self.added: list[_Node] = []
        self.cpu = self.memory = 0
        self.pointers: dict[object, int] = {}

    def place(self, profile: _Profile) -> None:
        cluster = self.cluster
        conditions = cluster.conditions(profile)
        target = None
        if conditions is not None:
            target = cluster.first_fit_new(profile, conditions, self.start, self.pointers)
        if target is None:
            target = self._new_node_for(profile)
        if target is not None:
            cluster.add_pod(target, profile)
            self._count(profile, 1)

    def _new_node_for(self, profile: _Profile) -> _Node | None:
        if self.added and not self.added[-1].pods:
            return None  # an empty new node did not take it; another one would not either
        if len(self.added) >= MAX_NODES_PER_SCALEUP:
            return None
        node = self.cluster.add_node(self.group, self.allocatable)
        self.added.append(node)
        conditions = self.cluster.conditions(profile)  # the new node may add a domain
        if conditions is None or not self.cluster.fits(profile, node, conditions):
            return None
        return node

    def _count(self, profile: _Profile, pods: int) -> None:
        self.cpu += pods * profile.pod.requests.get(CPU, 0)
        self.memory += pods * profile.pod.requests.get(MEMORY, 0)

    def place_run(self, first: _Profile, run: list[Pod]) -> None:
        """Plain pods of one shape, as `place` would put them one by one: each goes to the first row with
        room, so the run fills the rows in order, each with as many as it has room for, then new nodes."""
        cluster = self.cluster
        shape = (first.needs, ())  # the pointer `first_fit_new` keeps for this shape
        start, end = self.pointers.get(shape, self.start), len(cluster.nodes)
        placed, row = 0, end
        room = cluster.room_for(first, start, end)
        for offset in np.flatnonzero(room).tolist():
            if placed == len(run):
                break
            row = start + offset
            placed = self._fill(first, cluster.nodes[row], run, placed, int(room[offset]))
        while placed < len(run):
            node = self._new_node_for(first)
            if node is None:
                break
            row = node.row
            placed = self._fill(first, node, run, placed, int(cluster.room_for(first, row, row + 1)[0]))
        self.pointers[shape] = row  # the rows before the last one filled have no room left for this shape

    def _fill(self, first: _Profile, node: _Node, run: list[Pod], placed: int, room: int) -> int:
        take = run[placed : placed + room]
        self.cluster.add_alike(node, first, take)
        self._count(first, len(take))
        return placed + len(take)

    def result(self) -> _Estimate:
        return _Estimate(self.group, [n for n in self.added if n.pods], self.cpu, self.memory)


def estimate(cluster: _Cluster, orders: _Orders, group: NodeGroup) -> _Estimate:
    """The binpacking estimator for one node group; the nodes it adds stay in the cluster until revert."""
    allocatable = orders.allocatable_of(group)
    estimator = _Estimator(cluster, group, allocatable)
    for profile, pods in orders.of(group):
        if not cluster.admits(profile, group, allocatable):
            continue
        if profile.plain:
            estimator.place_run(profile, pods)
        else:
            estimator.place(profile)
    return estimator.result()


def waste(option: _Estimate) -> float:
    """least-waste: unused share of the new nodes' CPU plus the same for memory."""
    count = len(option.nodes)
    cpu = option.group.capacity.get(CPU, 0) * count
    memory = option.group.capacity.get(MEMORY, 0) * count
    return (cpu - option.cpu) / cpu + (memory - option.memory) / memory


def _candidates(groups: list[NodeGroup], pending: list[_Profile], cluster: _Cluster) -> list[NodeGroup]:
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


def _filter_out_schedulable(cluster: _Cluster, pending: list[_Profile]) -> list[_Profile]:
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


def _least_waste(cluster: _Cluster, orders: _Orders, candidates: list[NodeGroup]) -> NodeGroup | None:
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
    cluster = _Cluster(list(snapshot.pods), groups)
    pending = cluster.profiles
    unschedulable: dict[str, str] = {}
    while pending:
        if deadline is not None and time.perf_counter() > deadline:
            why = "cluster-autoscaler simulation stopped at its time cap"
            unschedulable.update({p.pod.key: why for p in pending})
            break
        orders = _Orders(pending, cluster)
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
