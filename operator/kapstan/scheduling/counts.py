"""Live topology counts during a solve: pods per group and domain, owners of anti-affinity terms, and the
spread rules a placement must keep. Placements are recorded and un-recorded, so the cost pass can try a
move and take it back.

A spread constraint binds only the pods that carry it (kube-scheduler checks it when such a pod is
placed). The plan must still hold it once every pod has landed, so a pod the constraint counts may not
join a domain holding one of its carriers when that would push the domain past maxSkew there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kapstan.scheduling.model import Pod, Snapshot, Taint, TopologySpreadConstraint
from kapstan.scheduling.topology import (
    Group,
    min_count,
    spread_filter,
    spread_group,
    spread_universe,
    term_group,
    untolerated,
)


@dataclass(frozen=True)
class SpreadRule:
    """A hard spread constraint of pending pods: its counting group, the constraint and its domains."""

    group: int
    constraint: TopologySpreadConstraint
    universe: frozenset[str]


@dataclass
class TopologyCounts:
    groups: list[Group] = field(default_factory=list)
    index: dict[Group, int] = field(default_factory=dict)
    counts: list[dict[str, int]] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)
    anti_owners: dict[int, dict[str, int]] = field(default_factory=dict)
    """Group of a required anti-affinity term -> domain -> number of pods owning that term there."""
    rules: list[SpreadRule] = field(default_factory=list)
    rule_index: dict[SpreadRule, int] = field(default_factory=dict)
    carriers: list[dict[str, int]] = field(default_factory=list)
    """Per rule, domain -> number of placed pods carrying it there."""
    carried: dict[str, tuple[int, ...]] = field(default_factory=dict)
    """Pending pod key -> the rules it carries."""
    universes: dict[tuple[object, ...], frozenset[str]] = field(default_factory=dict)
    _selecting: dict[str, tuple[int, ...]] = field(default_factory=dict)

    def group_id(self, group: Group) -> int:
        found = self.index.get(group)
        if found is None:
            found = len(self.groups)
            self.index[group] = found
            self.groups.append(group)
            self.counts.append({})
            self.totals.append(0)
        return found

    def universe(self, snapshot: Snapshot, pod: Pod, constraint: TopologySpreadConstraint) -> frozenset[str]:
        signature = (
            constraint.topology_key,
            constraint.node_affinity_policy,
            constraint.node_taints_policy,
            tuple(sorted(pod.node_selector.items())),
            pod.required_terms,
            pod.tolerations if constraint.node_taints_policy == "Honor" else (),
            spread_filter(pod, constraint),
        )
        found = self.universes.get(signature)
        if found is None:
            found = spread_universe(snapshot, pod, constraint)
            self.universes[signature] = found
        return found

    def register(self, snapshot: Snapshot, bound: Iterable[Pod], pending: Iterable[Pod]) -> None:
        """Create every group any pod's constraints mention, and the hard spread rules of the pending
        pods (a bound pod's constraints were checked when it was scheduled)."""
        pending = list(pending)
        for pod in [*bound, *pending]:
            for term in (*pod.affinity, *pod.anti_affinity):
                self.group_id(term_group(term))
            for weighted in (*pod.preferred_affinity, *pod.preferred_anti_affinity):
                self.group_id(term_group(weighted.term))
            for term in pod.anti_affinity:
                self.anti_owners.setdefault(self.group_id(term_group(term)), {})
            for constraint in pod.spread:
                self.group_id(spread_group(pod, constraint))
        for pod in pending:
            carried = []
            for constraint in pod.spread:
                if constraint.when_unsatisfiable == "DoNotSchedule":
                    gid = self.index[spread_group(pod, constraint)]
                    rule = SpreadRule(gid, constraint, self.universe(snapshot, pod, constraint))
                    if rule not in self.rule_index:
                        self.rule_index[rule] = len(self.rules)
                        self.rules.append(rule)
                        self.carriers.append({})
                    carried.append(self.rule_index[rule])
            self.carried[pod.key] = tuple(carried)

    def selecting(self, pod: Pod) -> tuple[int, ...]:
        """Ids of the groups that count this pod."""
        found = self._selecting.get(pod.key)
        if found is None:
            found = tuple(i for i, group in enumerate(self.groups) if group.selects(pod))
            self._selecting[pod.key] = found
        return found

    def relevant_keys(self, pod: Pod) -> set[str]:
        """Topology keys whose domain must be known once this pod is placed, and the keys that decide
        whether a spread group counts it there."""
        keys = set()
        for i in self.selecting(pod):
            group = self.groups[i]
            keys.add(group.key)
            if group.nodes is not None:
                keys |= group.nodes.keys()
        keys.update(t.topology_key for t in (*pod.affinity, *pod.anti_affinity))
        keys.update(w.term.topology_key for w in (*pod.preferred_affinity, *pod.preferred_anti_affinity))
        keys.update(c.topology_key for c in pod.spread)
        return keys

    def record(
        self, pod: Pod, domain: Callable[[str], str | None], taints: Iterable[Taint], sign: int = 1
    ) -> None:
        """Count the pod where it lands (`sign` -1 takes it back); `domain` gives the node's labels."""
        taints = tuple(taints)
        for gid in self.selecting(pod):
            group = self.groups[gid]
            value = domain(group.key)
            if value is not None and (group.nodes is None or group.nodes.admits(domain, taints)):
                self.counts[gid][value] = self.counts[gid].get(value, 0) + sign
                self.totals[gid] += sign
        for rule_id in self.carried.get(pod.key, ()):
            value = domain(self.rules[rule_id].constraint.topology_key)
            if value is not None:
                here = self.carriers[rule_id]
                here[value] = here.get(value, 0) + sign
        for term in pod.anti_affinity:
            gid = self.index[term_group(term)]
            value = domain(term.topology_key)
            if value is not None:
                owners = self.anti_owners[gid]
                owners[value] = owners.get(value, 0) + sign

    def counted_alike(self, pods: Iterable[Pod], taints: tuple[Taint, ...], other: tuple[Taint, ...]) -> bool:
        """Whether every group that counts these pods counts them the same on a node with `taints` as on
        one with `other` (a group of a nodeTaintsPolicy Honor constraint skips nodes its owner does not
        tolerate)."""
        if taints == other:
            return True
        for pod in pods:
            for gid in self.selecting(pod):
                nodes = self.groups[gid].nodes
                if nodes is not None and nodes.tolerations is not None:
                    kept = untolerated(nodes.tolerations, taints, prefer=False) is None
                    if kept != (untolerated(nodes.tolerations, other, prefer=False) is None):
                        return False
        return True

    def rule_allows(self, rule: SpreadRule, domain: str | None, self_match: int) -> bool:
        """Whether a pod landing in `domain` keeps the rule there (`self_match`: whether it counts)."""
        if domain is None:
            return False
        counts = self.counts[rule.group]
        floor = min_count(rule.constraint, rule.universe, counts)
        return counts.get(domain, 0) + self_match - floor <= rule.constraint.max_skew

    def carriers_there(self, rule_id: int, domain: str) -> bool:
        return self.carriers[rule_id].get(domain, 0) > 0
