"""Topology definitions shared by the solver and the validator: selector groups and spread domains.

A *group* is "the pods this selector picks, counted per value of this topology key". Spread constraints,
pod affinity and pod anti-affinity all reduce to counts per group and domain. What a constraint's domain
universe is (which zones a spread constraint balances across) is a definition, not an algorithm, so both
the solver and the validator take it from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling.model import (
    CAPACITY_TYPE,
    HOSTNAME,
    NODEPOOL,
    ZONE,
    LabelSelector,
    Pod,
    PodAffinityTerm,
    Snapshot,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)


@dataclass(frozen=True)
class Group:
    """Pods picked by `selector` in `namespaces` (None: every namespace), counted per `key` value."""

    key: str
    namespaces: frozenset[str] | None
    selector: LabelSelector

    def selects(self, pod: Pod) -> bool:
        if self.namespaces is not None and pod.namespace not in self.namespaces:
            return False
        return self.selector.matches(pod.labels)


def term_group(term: PodAffinityTerm) -> Group:
    namespaces = None if term.all_namespaces else frozenset(term.namespaces)
    return Group(term.topology_key, namespaces, term.selector)


def spread_group(pod: Pod, constraint: TopologySpreadConstraint) -> Group:
    return Group(constraint.topology_key, frozenset({pod.namespace}), constraint.selector)


def tolerates(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    return any(t.tolerates(taint) for t in tolerations)


def untolerated(
    tolerations: tuple[Toleration, ...], taints: Iterable[Taint], *, prefer: bool
) -> Taint | None:
    """The first taint the pod does not tolerate; PreferNoSchedule counts only when `prefer` is set."""
    for taint in taints:
        if taint.effect == "PreferNoSchedule" and not prefer:
            continue
        if not tolerates(tolerations, taint):
            return taint
    return None


def node_requirements(pod: Pod) -> list[dict[str, reqs.Requirement]]:
    """The pod's hard node requirements as alternatives: nodeSelector AND one required term (ORed)."""
    base = reqs.build((), pod.node_selector)
    if not pod.required_terms:
        return [base]
    return [reqs.intersect(base, reqs.build(term)) for term in pod.required_terms]


def matches_node(pod: Pod, labels: Mapping[str, str]) -> bool:
    return any(reqs.first_conflict(alt, labels) is None for alt in node_requirements(pod))


def flavor_domain_values(snapshot: Snapshot, pod: Pod, key: str, *, honor_taints: bool) -> set[str]:
    """Values of `key` that a new node able to take this pod could have, across every pool and flavor."""
    alternatives = node_requirements(pod)
    flavors = {it.name: it for it in snapshot.instance_types}
    values: set[str] = set()
    for pool in snapshot.node_pools:
        pool_reqs = reqs.build(pool.requirements, {**pool.labels, NODEPOOL: pool.name})
        if honor_taints and untolerated(pod.tolerations, pool.taints, prefer=False):
            continue
        names = pool.instance_types if pool.instance_types is not None else tuple(flavors)
        for name in names:
            flavor = flavors.get(name)
            if flavor is None or (honor_taints and untolerated(pod.tolerations, flavor.taints, prefer=False)):
                continue
            for alt in alternatives:
                combined = reqs.intersect(pool_reqs, alt)
                for offering in flavor.offerings:
                    if not offering.available:
                        continue
                    labels = {
                        **flavor.labels,
                        **pool.labels,
                        NODEPOOL: pool.name,
                        ZONE: offering.zone,
                        CAPACITY_TYPE: offering.capacity_type,
                    }
                    if _possible(combined, labels) and key in labels:
                        values.add(labels[key])
    return values


def _possible(combined: Mapping[str, reqs.Requirement], labels: Mapping[str, str]) -> bool:
    """Whether a node with these flavor labels can satisfy the combined requirements; keys the flavor does
    not define are left to the requirement itself (a NodePool requirement sets them)."""
    for req in combined.values():
        if req.key in labels:
            if not req.has(labels[req.key]):
                return False
        elif req.is_empty():
            return False
    return True


def spread_universe(snapshot: Snapshot, pod: Pod, constraint: TopologySpreadConstraint) -> frozenset[str]:
    """The domains a spread constraint balances across: values of its key on existing nodes and on any new
    node the pod could get, honouring the node affinity and taint policies. Hostname has no finite
    universe (a new node is always an empty domain), so callers treat its minimum as zero."""
    key = constraint.topology_key
    honor_affinity = constraint.node_affinity_policy == "Honor"
    honor_taints = constraint.node_taints_policy == "Honor"
    values: set[str] = set()
    for node in snapshot.nodes:
        if key not in node.labels:
            continue
        if honor_affinity and not matches_node(pod, node.labels):
            continue
        if honor_taints and untolerated(pod.tolerations, node.taints, prefer=False):
            continue
        values.add(node.labels[key])
    probe = pod if honor_affinity else Pod(pod.namespace, pod.name, pod.requests, tolerations=pod.tolerations)
    values |= flavor_domain_values(snapshot, probe, key, honor_taints=honor_taints)
    return frozenset(values)


def min_count(
    constraint: TopologySpreadConstraint, universe: frozenset[str], counts: Mapping[str, int]
) -> int:
    """kube-scheduler's global minimum: zero for hostname (a new node is an empty domain) or when fewer
    domains exist than minDomains."""
    if constraint.topology_key == HOSTNAME or not universe or len(universe) < constraint.min_domains:
        return 0
    return min(counts.get(domain, 0) for domain in universe)
