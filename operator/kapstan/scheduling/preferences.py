"""Soft constraints treated as hard, then relaxed one at a time in Karpenter's order.

Karpenter first tries a pod with every preference as if it were required, and on failure drops one:
a required node-affinity term (when several are ORed), then the heaviest preferred pod affinity term,
preferred pod anti-affinity term, preferred node affinity term, a ScheduleAnyway spread constraint, and
finally tolerates PreferNoSchedule taints. Both engines follow this order exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling.model import (
    Pod,
    PodAffinityTerm,
    PreferredNodeTerm,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)


def _by_weight(terms: tuple[WeightedPodAffinityTerm, ...]) -> list[PodAffinityTerm]:
    return [t.term for t in sorted(terms, key=lambda t: -t.weight)]


@dataclass
class Preferences:
    """What is currently enforced for one pod."""

    pod: Pod
    required_index: int = 0
    preferred_node: list[PreferredNodeTerm] = field(default_factory=list)
    preferred_affinity: list[PodAffinityTerm] = field(default_factory=list)
    preferred_anti_affinity: list[PodAffinityTerm] = field(default_factory=list)
    spread_anyway: list[TopologySpreadConstraint] = field(default_factory=list)
    tolerate_prefer_no_schedule: bool = False

    @staticmethod
    def strict(pod: Pod) -> Preferences:
        return Preferences(
            pod,
            preferred_node=sorted(pod.preferred_terms, key=lambda t: -t.weight),
            preferred_affinity=_by_weight(pod.preferred_affinity),
            preferred_anti_affinity=_by_weight(pod.preferred_anti_affinity),
            spread_anyway=[c for c in pod.spread if c.when_unsatisfiable == "ScheduleAnyway"],
        )

    def node_requirements(self) -> dict[str, reqs.Requirement]:
        """nodeSelector, the active required term and the heaviest remaining preferred term."""
        out = reqs.build((), self.pod.node_selector)
        if self.pod.required_terms:
            out = reqs.intersect(out, reqs.build(self.pod.required_terms[self.required_index]))
        if self.preferred_node:
            out = reqs.intersect(out, reqs.build(self.preferred_node[0].term))
        return out

    def affinity(self) -> list[PodAffinityTerm]:
        return [*self.pod.affinity, *self.preferred_affinity]

    def anti_affinity(self) -> list[PodAffinityTerm]:
        return [*self.pod.anti_affinity, *self.preferred_anti_affinity]

    def spread(self) -> list[TopologySpreadConstraint]:
        hard = [c for c in self.pod.spread if c.when_unsatisfiable == "DoNotSchedule"]
        return hard + self.spread_anyway

    def relax(self) -> bool:
        """Drop the next preference; False when nothing is left to relax."""
        if self.required_index + 1 < len(self.pod.required_terms):
            self.required_index += 1
        elif self.preferred_affinity:
            self.preferred_affinity.pop(0)
        elif self.preferred_anti_affinity:
            self.preferred_anti_affinity.pop(0)
        elif self.preferred_node:
            self.preferred_node.pop(0)
        elif self.spread_anyway:
            self.spread_anyway.pop(0)
        elif not self.tolerate_prefer_no_schedule:
            self.tolerate_prefer_no_schedule = True
        else:
            return False
        return True
