"""Moves of claims holding constrained pods (twin of `rust/src/solver/anchored.rs`).

A pod is *constrained* when a group that another pod's affinity (required or preferred) or a zone-level
hard spread rule counts over selects it: moving it freely could break a constraint of a pod that is not
being moved. The cost pass still re-packs its claim, with the pod anchored: held to its claim's value of
every topology key it is part of except the hostname (a new claim is a new host). Then each such group
counts what it counted before in every domain, so the affinity of pods left in place and the global
minimum of every spread rule are unchanged; the moved pods' own constraints are checked as they are
placed again. A node of another flavor can still count a pod differently (a nodeTaintsPolicy Honor
spread skips nodes whose taints its owner does not tolerate), so a move stands only when the counts of
the constrained groups come out exactly as they were.
"""

from __future__ import annotations

from dataclasses import replace

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling.greedy import Checks, Scheduler
from kapstan.scheduling.model import HOSTNAME, Pod
from kapstan.scheduling.targets import Claim
from kapstan.scheduling.topology import term_group

GroupCounts = dict[int, dict[str, int]]


def constrained_groups(scheduler: Scheduler) -> set[int]:
    """Groups that some pod's affinity or a zone-level (not hostname) hard spread rule counts over."""
    topo = scheduler.topology
    pods = [*scheduler.snapshot.pods, *(p for n in scheduler.snapshot.nodes for p in n.pods)]
    groups = {topo.index[term_group(t)] for pod in pods for t in pod.affinity}
    groups |= {topo.index[term_group(w.term)] for pod in pods for w in pod.preferred_affinity}
    groups |= {rule.group for rule in topo.rules if rule.constraint.topology_key != HOSTNAME}
    return groups


def is_constrained(scheduler: Scheduler, pod: Pod, groups: set[int]) -> bool:
    return any(gid in groups for gid in scheduler.topology.selecting(pod))


class Anchors:
    """The anchored checks of the constrained pods, kept across the cost pass's moves with the domains each
    was anchored to. A pod's checks never change during the pass (its relaxation level and the groups are
    fixed), and a kept move leaves an anchored pod in the domains it had, so the next move over its claim
    anchors it to the same ones (building them again for every move was a tenth of spread-1000's Rust
    solve). A pod whose claim's domains differ from the ones kept is anchored anew."""

    def __init__(self) -> None:
        self.known: dict[str, tuple[tuple[str | None, ...], Checks]] = {}

    def checks(self, scheduler: Scheduler, claims: tuple[Claim, ...], groups: set[int]) -> dict[str, Checks]:
        """The checks of each constrained pod on the claims, narrowed to its claim's domains."""
        out = {}
        for claim in claims:
            for pod in claim.pods:
                if not is_constrained(scheduler, pod, groups):
                    continue
                kept = self.known.get(pod.key)
                if kept is not None and _anchor_domains(claim, kept[1].keys) == kept[0]:
                    out[pod.key] = kept[1]
                    continue
                checks = scheduler.checks(pod, scheduler.placed_prefs[pod.key])
                domains = _anchor_domains(claim, checks.keys)
                anchor = {}
                for key, value in zip((k for k in checks.keys if k != HOSTNAME), domains, strict=True):
                    anchor[key] = (
                        reqs.Requirement.exactly(key, value)
                        if value is not None
                        else reqs.Requirement(key, False, frozenset(), True)
                    )
                anchored = replace(checks, requirements=reqs.intersect(checks.requirements, anchor))
                self.known[pod.key] = (domains, anchored)
                out[pod.key] = anchored
        return out


def _anchor_domains(claim: Claim, keys: list[str]) -> tuple[str | None, ...]:
    """The claim's domain of each of the keys but the hostname, in order: what a pod there is anchored to."""
    return tuple(claim.domain(key) for key in keys if key != HOSTNAME)


def constrained_counts(scheduler: Scheduler, pods: list[Pod], groups: set[int]) -> GroupCounts:
    """What the constrained groups counting these pods count per domain (hostname groups aside: the
    moved pods' new hosts are new domains, and no pod left in place shares them)."""
    topo = scheduler.topology
    counting = {
        gid
        for pod in pods
        for gid in topo.selecting(pod)
        if gid in groups and topo.groups[gid].key != HOSTNAME
    }
    return {gid: {d: n for d, n in topo.counts[gid].items() if n} for gid in sorted(counting)}
