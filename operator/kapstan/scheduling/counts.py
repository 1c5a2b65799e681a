"""Live topology counts during a solve: pods per group and domain, owners of anti-affinity terms, and the
spread rules a placement must keep. Placements are recorded and un-recorded, so the cost pass can try a
move and take it back."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kapstan.scheduling.model import Pod, Snapshot, TopologySpreadConstraint
from kapstan.scheduling.topology import Group, min_count, spread_group, spread_universe, term_group


@dataclass(frozen=True)
class SpreadRule:
    """A hard spread constraint as a whole group keeps it: every pod the group counts stays within skew."""

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
        )
        found = self.universes.get(signature)
        if found is None:
            found = spread_universe(snapshot, pod, constraint)
            self.universes[signature] = found
        return found

    def register(self, snapshot: Snapshot, pods: Iterable[Pod]) -> None:
        """Create every group any pod's constraints mention, and the hard spread rules."""
        seen_rules: set[tuple[int, TopologySpreadConstraint, frozenset[str]]] = set()
        for pod in pods:
            for term in (*pod.affinity, *pod.anti_affinity):
                self.group_id(term_group(term))
            for weighted in (*pod.preferred_affinity, *pod.preferred_anti_affinity):
                self.group_id(term_group(weighted.term))
            for term in pod.anti_affinity:
                self.anti_owners.setdefault(self.group_id(term_group(term)), {})
            for constraint in pod.spread:
                gid = self.group_id(spread_group(pod, constraint))
                if constraint.when_unsatisfiable == "DoNotSchedule":
                    rule_key = (gid, constraint, self.universe(snapshot, pod, constraint))
                    if rule_key not in seen_rules:
                        seen_rules.add(rule_key)
                        self.rules.append(SpreadRule(*rule_key))

    def selecting(self, pod: Pod) -> tuple[int, ...]:
        """Ids of the groups that count this pod."""
        found = self._selecting.get(pod.key)
        if found is None:
            found = tuple(i for i, group in enumerate(self.groups) if group.selects(pod))
            self._selecting[pod.key] = found
        return found

    def relevant_keys(self, pod: Pod) -> set[str]:
        """Topology keys whose domain must be known once this pod is placed."""
        keys = {self.groups[i].key for i in self.selecting(pod)}
        keys.update(t.topology_key for t in (*pod.affinity, *pod.anti_affinity))
        keys.update(w.term.topology_key for w in (*pod.preferred_affinity, *pod.preferred_anti_affinity))
        keys.update(c.topology_key for c in pod.spread)
        return keys

    def record(self, pod: Pod, domain: Callable[[str], str | None], sign: int = 1) -> None:
        for gid in self.selecting(pod):
            value = domain(self.groups[gid].key)
            if value is not None:
                self.counts[gid][value] = self.counts[gid].get(value, 0) + sign
                self.totals[gid] += sign
        for term in pod.anti_affinity:
            gid = self.index[term_group(term)]
            value = domain(term.topology_key)
            if value is not None:
                owners = self.anti_owners[gid]
                owners[value] = owners.get(value, 0) + sign

    def rule_allows(self, rule: SpreadRule, domain: str | None, self_match: int) -> bool:
        if domain is None:
            return False
        counts = self.counts[rule.group]
        floor = min_count(rule.constraint, rule.universe, counts)
        return counts.get(domain, 0) + self_match - floor <= rule.constraint.max_skew
