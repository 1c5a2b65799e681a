"""The cluster-autoscaler peer's simulated cluster: the upcoming nodes, their pods and the per-domain counts
that the predicates (`predicates.py`) read, kept as pods are placed, with CA's fork and revert."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from bench.peers.ca.groups import NodeGroup
from kapstan.scheduling.model import HOSTNAME, HostPort, LabelSelector, Pod, PodAffinityTerm

HOSTNAME_KEY = 0
"""The index of kubernetes.io/hostname among the cluster's topology keys."""


@dataclass
class Node:
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
class Profile:
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


@dataclass
class _Saved:
    """What a revert restores: an estimate changes nothing else of the nodes that were there before it."""

    nodes: int
    counts: np.ndarray
    totals: list[int]
    histograms: list[Counter[int] | None]
    nodes_in: list[list[int]]
    domain_count: list[int]


class ClusterState:
    """The simulated cluster's state: upcoming nodes and their pods, with the counts the predicates need.

    Free resources are a matrix (one row a node) and topology counts a matrix (one row a counter, one column
    a domain), so a first fit over many nodes is one vectorised mask. An estimate can fork and revert, as
    CA's ClusterSnapshot does: it only adds nodes and puts pods on them, so a revert drops those nodes and
    restores the counts saved at the fork.
    """

    def __init__(self, pods: list[Pod], groups: list[NodeGroup]) -> None:
        self.nodes: list[Node] = []
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

    def _profile(self, pod: Pod) -> Profile:
        request = self.vector(pod.requests)
        counted, repelled = self._matches(pod)
        own_anti = tuple(self.anti_terms[t] for t in pod.anti_affinity)
        spread = [c for c in pod.spread if c.when_unsatisfiable == "DoNotSchedule"]
        plain = not (counted or repelled or spread or pod.affinity or pod.anti_affinity or pod.host_ports)
        return Profile(
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

    def add_node(self, group: NodeGroup, allocatable: np.ndarray) -> Node:
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
        node = Node(group, row, domains)
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

    def add_pod(self, node: Node, profile: Profile) -> None:
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

    def add_alike(self, node: Node, profile: Profile, pods: list[Pod]) -> None:
        """Plain pods of one shape (`profile`'s), at once: they change only free resources."""
        self.free[node.row] -= len(pods) * profile.request
        node.pods.extend(pods)

    def room_for(self, profile: Profile, start: int, end: int) -> np.ndarray:
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
