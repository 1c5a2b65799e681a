"""Topology definitions shared by the solver and the validator: selector groups and spread domains.

A *group* is "the pods this selector picks, counted per value of this topology key". Spread constraints,
pod affinity and pod anti-affinity all reduce to counts per group and domain. A spread group also names
the nodes it counts on (kube-scheduler's node inclusion policies, `NodeFilter`). What a constraint's domain
universe is (which zones a spread constraint balances across) is a definition, not an algorithm, so both
the solver and the validator take it from here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling.model import (
    HOSTNAME,
    NODEPOOL,
    LabelSelector,
    Pod,
    PodAffinityTerm,
    Snapshot,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)


@dataclass(frozen=True)
class NodeFilter:
    """The nodes whose pods a spread constraint counts for its pod, as kube-scheduler's PreFilter picks
    them: nodes that carry every topology key of the pod's constraints of the same kind, that match the
    pod's nodeSelector and required node affinity (nodeAffinityPolicy Honor) and whose NoSchedule and
    NoExecute taints it tolerates (nodeTaintsPolicy Honor)."""

    alternatives: tuple[tuple[reqs.Requirement, ...], ...]
    """ORed; the requirements of each are ANDed, sorted by key."""
    tolerations: tuple[Toleration, ...] | None
    """None: taints are ignored."""

    def keys(self) -> set[str]:
        return {req.key for alt in self.alternatives for req in alt}

    def admits(self, label: Callable[[str], str | None], taints: Iterable[Taint]) -> bool:
        if self.tolerations is not None and untolerated(self.tolerations, taints, prefer=False):
            return False
        return any(all(req.allows(label(req.key)) for req in alt) for alt in self.alternatives)


@dataclass(frozen=True)
class Group:
    """Pods picked by `selector` in `namespaces` (None: every namespace), counted per `key` value on the
    nodes `nodes` admits (None: every node). A `spread` group (a topology spread constraint's) leaves
    terminating pods out, as kube-scheduler's PodTopologySpread does; an affinity term's counts them."""

    key: str
    namespaces: frozenset[str] | None
    selector: LabelSelector
    nodes: NodeFilter | None = None
    spread: bool = False

    def selects(self, pod: Pod) -> bool:
        if self.spread and pod.terminating:
            return False
        if self.namespaces is not None and pod.namespace not in self.namespaces:
            return False
        return self.selector.matches(pod.labels)


def term_group(term: PodAffinityTerm) -> Group:
    namespaces = None if term.all_namespaces else frozenset(term.namespaces)
    return Group(term.topology_key, namespaces, term.selector)


def spread_filter(pod: Pod, constraint: TopologySpreadConstraint) -> NodeFilter | None:
    """The nodes the constraint counts on for this pod; None when that is every node with its key."""
    other_keys = sorted(
        {
            c.topology_key
            for c in pod.spread
            if c.when_unsatisfiable == constraint.when_unsatisfiable
            and c.topology_key != constraint.topology_key
        }
    )
    present = {key: reqs.Requirement(key, True, frozenset(), False) for key in other_keys}
    honored = node_requirements(pod) if constraint.node_affinity_policy == "Honor" else [{}]
    alternatives = tuple(
        tuple(req for _, req in sorted(reqs.intersect(alt, present).items())) for alt in honored
    )
    tolerations = pod.tolerations if constraint.node_taints_policy == "Honor" else None
    if tolerations is None and alternatives == ((),):
        return None
    return NodeFilter(alternatives, tolerations)


def spread_group(pod: Pod, constraint: TopologySpreadConstraint) -> Group:
    return Group(
        constraint.topology_key,
        frozenset({pod.namespace}),
        constraint.selector,
        spread_filter(pod, constraint),
        spread=True,
    )


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
                    labels = pool.new_node_labels(flavor, offering.zone, offering.capacity_type)
                    if not _possible(combined, labels):
                        continue
                    if key in labels:
                        values.add(labels[key])
                    elif key in combined and not combined[key].complement:
                        # A key only the requirements define: Karpenter gives the node one of the
                        # allowed values, so each is a domain.
                        values |= {v for v in combined[key].values if combined[key].has(v)}
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
    """The domains a spread constraint balances across: values of its key on the existing nodes it counts
    on (`spread_filter`) and on any new node the pod could get, honouring the node affinity and taint
    policies. Hostname has no finite universe (a new node is always an empty domain), so callers treat
    its minimum as zero."""
    key = constraint.topology_key
    honor_affinity = constraint.node_affinity_policy == "Honor"
    honor_taints = constraint.node_taints_policy == "Honor"
    nodes = spread_filter(pod, constraint)
    values: set[str] = set()
    for node in snapshot.nodes:
        if key not in node.labels:
            continue
        if nodes is not None and not nodes.admits(node.labels.get, node.taints):
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
