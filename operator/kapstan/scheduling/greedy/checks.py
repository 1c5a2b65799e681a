"""What one pod's constraints allow where (twin of `rust/src/solver/greedy/checks.rs`): its checks resolved
against the topology groups, the topology problem a domain would raise, and the feasibility tests of
existing nodes and claims.

`Checking` is the first layer of the scheduler: it declares the state `Scheduler.__init__` fills, and
each later layer (domains, claims, placement) adds the steps that build on the ones below it, as the
Rust engine spreads one `impl Scheduler` over the same modules.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling import resources as res
from kapstan.scheduling.counts import SpreadRule, TopologyCounts
from kapstan.scheduling.model import HOSTNAME, Pod, Snapshot, TopologySpreadConstraint
from kapstan.scheduling.preferences import Preferences
from kapstan.scheduling.targets import Claim, ExistingTarget, Flavor, PoolView
from kapstan.scheduling.topology import spread_group, term_group, untolerated


class SpreadCheck(NamedTuple):
    """One of the pod's own topology spread constraints."""

    constraint: TopologySpreadConstraint
    group: int
    """The topology group that counts the pods the constraint selects."""
    universe: frozenset[str]
    """The domains the skew is measured over."""
    self_match: int
    """1 when the pod counts towards its own constraint, else 0."""


class AffinityCheck(NamedTuple):
    """A required pod affinity term: some pod of `group` must be in the pod's domain of `key`."""

    group: int
    key: str
    self_selected: bool
    """Whether the pod matches its own term (then the first such pod may land anywhere)."""


class AntiCheck(NamedTuple):
    """An anti-affinity term: no pod of `group` may be in the pod's domain of `key`."""

    group: int
    key: str


@dataclass
class Checks:
    """One pod's constraints at one relaxation level, resolved against the topology groups."""

    pod: Pod
    requirements: dict[str, reqs.Requirement]
    prefer: bool
    """Whether PreferNoSchedule taints still count."""
    spread: list[SpreadCheck]
    rules: list[int]
    """Ids of the hard spread rules whose group counts this pod."""
    affinity: list[AffinityCheck]
    anti: list[AntiCheck]
    symmetric_anti: list[AntiCheck]
    """Anti-affinity that pods already placed declare against this one."""
    keys: list[str]
    """The topology keys whose domain a placement must settle, sorted."""


class Checking:
    """The scheduler's state and the checks every later step asks."""

    snapshot: Snapshot
    pools: list[PoolView]
    flavor_keys: set[str]
    """Keys a flavor can give a node (`Scheduler.__init__` says which)."""
    existing: list[ExistingTarget]
    claims: list[Claim]
    next_index: int
    topology: TopologyCounts
    placed_prefs: dict[str, Preferences]
    _rules: dict[str, list[int]]

    def checks(self, pod: Pod, prefs: Preferences) -> Checks:
        topo = self.topology
        spread = []
        for constraint in prefs.spread():
            gid = topo.index[spread_group(pod, constraint)]
            universe = topo.universe(self.snapshot, pod, constraint)
            spread.append(SpreadCheck(constraint, gid, universe, int(topo.groups[gid].selects(pod))))
        rules = self._rules.get(pod.key)
        if rules is None:
            selecting = set(topo.selecting(pod))
            rules = [i for i, rule in enumerate(topo.rules) if rule.group in selecting]
            self._rules[pod.key] = rules
        affinity = []
        for term in prefs.affinity():
            group = term_group(term)
            affinity.append(AffinityCheck(topo.index[group], term.topology_key, group.selects(pod)))
        anti = [AntiCheck(topo.index[term_group(t)], t.topology_key) for t in prefs.anti_affinity()]
        symmetric = [
            AntiCheck(gid, topo.groups[gid].key) for gid in topo.selecting(pod) if gid in topo.anti_owners
        ]
        return Checks(
            pod,
            prefs.node_requirements(),
            not prefs.tolerate_prefer_no_schedule,
            spread,
            rules,
            affinity,
            anti,
            symmetric,
            sorted(topo.relevant_keys(pod)),
        )

    def domain_problem(self, checks: Checks, key: str, value: str | None) -> str | None:
        """Why placing the pod where `key` has `value` breaks a topology constraint, or None."""
        topo = self.topology
        for spread in checks.spread:
            if spread.constraint.topology_key != key:
                continue
            rule = SpreadRule(spread.group, spread.constraint, spread.universe)
            if not topo.rule_allows(rule, value, spread.self_match):
                return f"topology spread on {key} (maxSkew {spread.constraint.max_skew}) would be exceeded"
        for rule_id in checks.rules:
            rule = topo.rules[rule_id]
            if (
                rule.constraint.topology_key == key
                and value is not None
                and topo.carriers_there(rule_id, value)
                and not topo.rule_allows(rule, value, 1)
            ):
                return f"topology spread on {key} of the pods already there would be exceeded"
        for term in checks.affinity:
            if term.key != key:
                continue
            if value is None:
                return f"pod affinity needs a node labelled {key}"
            if topo.counts[term.group].get(value, 0) == 0 and not (
                topo.totals[term.group] == 0 and term.self_selected
            ):
                return f"pod affinity on {key}: no matching pod in that domain"
        for anti in checks.anti:
            if anti.key == key and value is not None and topo.counts[anti.group].get(value, 0) > 0:
                return f"pod anti-affinity on {key}: a matching pod is already there"
        for anti in checks.symmetric_anti:
            if anti.key == key and value is not None and topo.anti_owners[anti.group].get(value, 0) > 0:
                return f"anti-affinity of a pod already on {key}={value} excludes it"
        return None

    def merge(
        self, base: reqs.Requirements, pod_reqs: reqs.Requirements
    ) -> dict[str, reqs.Requirement] | str:
        """Base requirements narrowed by the pod's, or a description of the first conflict. A key that
        neither the base (the pool's labels and requirements) nor any flavor defines can only be absent
        on a new node of this pool."""
        out = dict(base)
        for key, req in pod_reqs.items():
            current = out.get(key)
            if current is None:
                current = reqs.Requirement.any_value(key) if key in self.flavor_keys else _absent(key)
            merged = current.intersect(req)
            if merged.is_empty():
                return (
                    f"requirement {req.describe()} cannot be met (the NodePool allows {current.describe()})"
                )
            out[key] = merged
        return out

    def fits_existing(self, target: ExistingTarget, checks: Checks) -> bool:
        node, pod = target.node, checks.pod
        if node.closed_to(pod) or not res.fits(target.used, pod.requests, node.allocatable):
            return False
        if reqs.first_conflict(checks.requirements, node.labels) is not None:
            return False
        if untolerated(pod.tolerations, node.taints, prefer=checks.prefer) is not None:
            return False
        if any(a.conflicts(b) for a in pod.host_ports for b in target.ports):
            return False
        return all(self.domain_problem(checks, key, target.domain(key)) is None for key in checks.keys)

    def holds(self, claim: Claim, checks: Checks, merged: reqs.Requirements, flavor: Flavor) -> bool:
        """Whether the flavor can carry everything on the claim plus this pod. Pods already there are
        held to the flavor's hard taints (NoSchedule, NoExecute) only, and were counted with the node's
        taints: a flavor whose taints would change how a nodeTaintsPolicy Honor spread counts them is no
        candidate (their counts would move under rules already checked)."""
        pod = checks.pod
        taints = flavor.it.taints
        # Asked of every candidate flavor for every pod that may join: the calls that cannot fail for a
        # pod without host ports, or a flavor tainted as the chosen one, are not made.
        return (
            res.fits(claim.used, pod.requests, flavor.net)
            and (not pod.host_ports or flavor.ports_free(pod))
            and flavor.compatible(merged)
            and (not taints or untolerated(pod.tolerations, taints, prefer=checks.prefer) is None)
            and (
                not taints
                or all(untolerated(p.tolerations, taints, prefer=False) is None for p in claim.pods)
            )
            and (
                taints == claim.chosen.it.taints
                or self.topology.counted_alike(claim.pods, claim.taints, (*claim.view.pool.taints, *taints))
            )
        )

    def every_claim_excludes(self, checks: Checks) -> bool:
        """Whether the pod's hostname anti-affinity already rules out every claim: then no scan."""
        return any(
            anti.key == HOSTNAME
            and all(self.topology.counts[anti.group].get(c.hostname, 0) > 0 for c in self.claims)
            for anti in checks.anti
        )

    def might_take(self, claim: Claim, checks: Checks) -> bool:
        """A cheap necessary condition for `try_claim`: room under the claim's largest flavor, and no
        hostname constraint already broken there."""
        return res.fits(claim.used, checks.pod.requests, claim.max_net) and (
            HOSTNAME not in checks.keys or self.domain_problem(checks, HOSTNAME, claim.hostname) is None
        )


def pinned(requirements: reqs.Requirements, key: str) -> bool:
    """Whether the requirements hold `key` to one value."""
    req = requirements.get(key)
    return req is not None and req.single_value() is not None


def _absent(key: str) -> reqs.Requirement:
    return reqs.Requirement(key, False, frozenset(), True)
