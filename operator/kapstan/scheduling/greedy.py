"""The greedy placement both engines start from.

Pods are placed, biggest first with CPU-heavy and memory-heavy ones interleaved (`placement_sequence`),
on existing nodes, then on claims already opened, then on a new claim from the heaviest NodePool that can
take them; a pod that fits nowhere has its preferences relaxed one at a time (preferences.py). Pods that
still fail are retried while the previous round placed something (an affinity target may have arrived
since). Then improve.py re-packs claims for cost. Everything is deterministic: no clocks in decisions, no
hash-order iteration, ties broken by name.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling import resources as res
from kapstan.scheduling.counts import SpreadRule, TopologyCounts
from kapstan.scheduling.model import (
    CAPACITY_TYPE,
    CPU,
    HOSTNAME,
    MEMORY,
    NODEPOOL,
    ZONE,
    PlannedNodeClaim,
    Pod,
    Snapshot,
    TopologySpreadConstraint,
)
from kapstan.scheduling.preferences import Preferences
from kapstan.scheduling.targets import OFFERING_KEYS, Claim, ExistingTarget, Flavor, PoolView
from kapstan.scheduling.topology import spread_group, term_group, untolerated

NO_MANAGED_FLAVOR = (
    "kapstan manages no flavor yet: mark a MachineDeployment, or a ClusterClass worker class in its "
    'metadata, with the label node.cluster.x-k8s.io/karpenter-member or the annotation kapstan.io/managed: "true"'
)
"""Why nothing can be provisioned while the catalog is empty: what a user has to do, not what each
NodePool lacks (every one of them would say that no flavor matches)."""


def placement_sequence(pods: Sequence[Pod]) -> list[Pod]:
    """The order the greedy pass takes pods in, the same in both engines: biggest first, alternating
    between CPU-heavy and memory-heavy pods so that the running totals keep the batch's own CPU to memory
    ratio. Nodes filled in that order end full in both resources. Biggest-first alone (Karpenter's order)
    fills nodes with same-shaped pods and leaves one resource idle on each; a plain shuffle mixes them by
    chance only. Sizes are shares of the batch's totals, compared in exact integers; a batch that requests
    no CPU (or no memory) is sized by the other of the two alone, and one that requests neither by its
    other resources, largest first in name order (else every size would be 0 and hashes would decide)."""
    cpu = sum(p.requests.get(CPU, 0) for p in pods)
    memory = sum(p.requests.get(MEMORY, 0) for p in pods)
    others = [] if cpu or memory else sorted({name for p in pods for name in p.requests} - {CPU, MEMORY})

    def size(pod: Pod) -> tuple[int, tuple[int, ...], int, str]:
        pod_cpu, pod_memory = pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0)
        # Without one of the two in the batch, every pod's share of it is 0: the other alone sizes it.
        share = pod_cpu * memory + pod_memory * cpu if cpu and memory else pod_cpu + pod_memory
        rest = tuple(-pod.requests.get(name, 0) for name in others)
        return (-share, rest, zlib.crc32(pod.key.encode()), pod.key)

    cpu_heavy: list[Pod] = []
    memory_heavy: list[Pod] = []
    for pod in pods:
        heavy = pod.requests.get(CPU, 0) * memory >= pod.requests.get(MEMORY, 0) * cpu
        (cpu_heavy if heavy else memory_heavy).append(pod)
    cpu_heavy.sort(key=size)
    memory_heavy.sort(key=size)
    out: list[Pod] = []
    taken_cpu = taken_memory = 0
    i = j = 0
    while i < len(cpu_heavy) or j < len(memory_heavy):
        ahead_in_cpu = taken_cpu * memory > taken_memory * cpu
        if j < len(memory_heavy) and (i == len(cpu_heavy) or ahead_in_cpu):
            pod = memory_heavy[j]
            j += 1
        else:
            pod = cpu_heavy[i]
            i += 1
        out.append(pod)
        taken_cpu += pod.requests.get(CPU, 0)
        taken_memory += pod.requests.get(MEMORY, 0)
    return out


def biggest_first(pod: Pod) -> tuple[int, int, str]:
    """Cpu, then memory, descending: first-fit decreasing, for re-packing into fixed-size flavors."""
    return (-pod.requests.get(CPU, 0), -pod.requests.get(MEMORY, 0), pod.key)


@dataclass
class Checks:
    """One pod's constraints at one relaxation level, resolved against the topology groups."""

    pod: Pod
    requirements: dict[str, reqs.Requirement]
    prefer: bool
    """Whether PreferNoSchedule taints still count."""
    spread: list[tuple[TopologySpreadConstraint, int, frozenset[str], int]]
    rules: list[int]
    """Ids of the hard spread rules whose group counts this pod."""
    affinity: list[tuple[int, str, bool]]
    anti: list[tuple[int, str]]
    symmetric_anti: list[tuple[int, str]]
    keys: list[str]


class Scheduler:
    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        catalog = {it.name: it for it in snapshot.instance_types}
        ordered_pools = sorted(snapshot.node_pools, key=lambda p: (-p.weight, p.name))
        self.pools = [PoolView.build(p, catalog, snapshot.daemonsets) for p in ordered_pools]
        # Keys a flavor can give a node. Template labels and requirement-only keys are not among them:
        # they are in the requirements a pool's claims start from, and a pool that lacks them lacks them.
        self.flavor_keys = {key for it in snapshot.instance_types for key in it.labels}
        self.flavor_keys.update(OFFERING_KEYS)
        self.existing = [
            ExistingTarget.build(n, snapshot.daemonsets) for n in sorted(snapshot.nodes, key=lambda n: n.name)
        ]
        self.claims: list[Claim] = []
        self.next_index = 0
        self.topology = TopologyCounts()
        self.topology.register(snapshot, (p for n in snapshot.nodes for p in n.pods), snapshot.pods)
        for target in self.existing:
            for pod in target.node.pods:
                self.topology.record(pod, target.domain, target.node.taints)
        self.placed_prefs: dict[str, Preferences] = {}
        self._rules: dict[str, list[int]] = {}

    # -- checks -----------------------------------------------------------------------------------------

    def checks(self, pod: Pod, prefs: Preferences) -> Checks:
        topo = self.topology
        spread = []
        for constraint in prefs.spread():
            gid = topo.index[spread_group(pod, constraint)]
            universe = topo.universe(self.snapshot, pod, constraint)
            spread.append((constraint, gid, universe, int(topo.groups[gid].selects(pod))))
        rules = self._rules.get(pod.key)
        if rules is None:
            selecting = set(topo.selecting(pod))
            rules = [i for i, rule in enumerate(topo.rules) if rule.group in selecting]
            self._rules[pod.key] = rules
        affinity = []
        for term in prefs.affinity():
            group = term_group(term)
            affinity.append((topo.index[group], term.topology_key, group.selects(pod)))
        anti = [(topo.index[term_group(t)], t.topology_key) for t in prefs.anti_affinity()]
        symmetric = [(gid, topo.groups[gid].key) for gid in topo.selecting(pod) if gid in topo.anti_owners]
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
        for constraint, gid, universe, self_match in checks.spread:
            if constraint.topology_key != key:
                continue
            rule = SpreadRule(gid, constraint, universe)
            if not topo.rule_allows(rule, value, self_match):
                return f"topology spread on {key} (maxSkew {constraint.max_skew}) would be exceeded"
        for rule_id in checks.rules:
            rule = topo.rules[rule_id]
            if (
                rule.constraint.topology_key == key
                and value is not None
                and topo.carriers_there(rule_id, value)
                and not topo.rule_allows(rule, value, 1)
            ):
                return f"topology spread on {key} of the pods already there would be exceeded"
        for gid, term_key, self_selected in checks.affinity:
            if term_key != key:
                continue
            if value is None:
                return f"pod affinity needs a node labelled {key}"
            if topo.counts[gid].get(value, 0) == 0 and not (topo.totals[gid] == 0 and self_selected):
                return f"pod affinity on {key}: no matching pod in that domain"
        for gid, term_key in checks.anti:
            if term_key == key and value is not None and topo.counts[gid].get(value, 0) > 0:
                return f"pod anti-affinity on {key}: a matching pod is already there"
        for gid, term_key in checks.symmetric_anti:
            if term_key == key and value is not None and topo.anti_owners[gid].get(value, 0) > 0:
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

    # -- targets ----------------------------------------------------------------------------------------

    def fits_existing(self, target: ExistingTarget, checks: Checks) -> bool:
        node, pod = target.node, checks.pod
        if node.cordoned_for(pod) or not res.fits(target.used, pod.requests, node.allocatable):
            return False
        if reqs.first_conflict(checks.requirements, node.labels) is not None:
            return False
        if untolerated(pod.tolerations, node.taints, prefer=checks.prefer) is not None:
            return False
        if any(a.conflicts(b) for a in pod.host_ports for b in target.ports):
            return False
        return all(self.domain_problem(checks, key, target.domain(key)) is None for key in checks.keys)

    def place_existing(self, target: ExistingTarget, pod: Pod) -> None:
        target.used = res.add(target.used, pod.requests)
        target.ports.extend(pod.host_ports)
        target.placed.append(pod.key)
        self.topology.record(pod, target.domain, target.node.taints)

    def try_claim(self, claim: Claim, checks: Checks, keep_flavor: bool = False) -> str | None:
        """Add the pod to the claim if it fits (with `keep_flavor`, only if the claim keeps its flavor);
        otherwise say why. Mutates only on success.

        `claim.flavors` is kept in price order and only its head is guaranteed valid: flavors before the
        first one that still fits can never fit again (pods only add up, requirements only narrow), so
        they are dropped; the tail is filtered only when the pod's topology or minValues needs it.
        """
        pod, view = checks.pod, claim.view
        taint = untolerated(pod.tolerations, view.pool.taints, prefer=checks.prefer)
        if taint is not None:
            return f"does not tolerate the NodePool's taint {taint}"
        merged = self.merge(claim.requirements, checks.requirements)
        if isinstance(merged, str):
            return merged
        if any(a.conflicts(b) for a in pod.host_ports for b in claim.ports):
            return "host port already taken"

        def holds(flavor: Flavor) -> bool:
            """Whether the flavor can carry everything on the claim plus this pod. Pods already there
            are held to the flavor's hard taints (NoSchedule, NoExecute) only."""
            taints = flavor.it.taints
            return (
                res.fits(claim.used, pod.requests, flavor.net)
                and flavor.ports_free(pod)
                and flavor.compatible(merged)
                and (not taints or untolerated(pod.tolerations, taints, prefer=checks.prefer) is None)
                and (
                    not taints
                    or all(untolerated(p.tolerations, taints, prefer=False) is None for p in claim.pods)
                )
            )

        open_keys = [k for k in checks.keys if k != HOSTNAME and not _pinned(merged, k)]
        needs_all = bool(open_keys) or any(r.min_values for r in merged.values())
        flavors = [f for f in claim.flavors if holds(f)] if needs_all else claim.flavors
        if needs_all and not flavors:
            return "no flavor has room for it"
        settled = self.settle_domains(claim, checks, merged, flavors)
        if isinstance(settled, str):
            return settled
        flavors = settled
        if any(merged.get(k) != claim.requirements.get(k) for k in OFFERING_KEYS):
            flavors = sorted(flavors, key=lambda f: (f.price(merged), f.name))
        replacing = claim.chosen if claim.pods else None
        head = next(
            (
                i
                for i, f in enumerate(flavors)
                if (needs_all or holds(f)) and view.within_limits(f, replacing)
            ),
            None,
        )
        if head is None:
            if needs_all or any(holds(f) for f in flavors):
                return f"limits reached ({_limits_text(view)})"
            return "no flavor has room for it"
        flavors = flavors[head:]
        if keep_flavor and flavors[0].name != claim.chosen.name:
            return "it would need a bigger flavor"
        for req in merged.values():
            if (
                req.min_values
                and len({v for f in flavors for v in f.label(req.key, merged)}) < req.min_values
            ):
                return f"fewer than minValues {req.min_values} flavors left for {req.key}"
        view.charge(flavors[0], replacing)
        claim.requirements, claim.flavors = merged, flavors
        claim.used = res.add(claim.used, pod.requests)
        claim.pods.append(pod)
        claim.ports.extend(pod.host_ports)
        self.topology.record(pod, claim.domain, claim.view.pool.taints)
        return None

    def settle_domains(
        self, claim: Claim, checks: Checks, merged: dict[str, reqs.Requirement], flavors: list[Flavor]
    ) -> list[Flavor] | str:
        """Pick the claim's domain for every topology key the pod is part of, pinning it in `merged` so
        that the pod is counted where it lands; returns the flavors left, or why none is (the reason met
        along the best choices). A choice that leaves a later key no passing domain (spot offered in
        one zone only, with a zone and a capacity-type spread) gives way to the next best one, up to
        SETTLE_TRIES choices in all, so that the search stays bounded on keys with many values."""
        tries = [SETTLE_TRIES]
        settled = self._settle_from(claim, checks, 0, merged, flavors, tries)
        if isinstance(settled, str):
            return settled
        pinned, flavors = settled
        merged.update(pinned)
        return flavors

    def _settle_from(
        self,
        claim: Claim,
        checks: Checks,
        start: int,
        merged: dict[str, reqs.Requirement],
        flavors: list[Flavor],
        tries: list[int],
    ) -> tuple[dict[str, reqs.Requirement], list[Flavor]] | str:
        for at in range(start, len(checks.keys)):
            key = checks.keys[at]
            options = claim.domain_options(key, flavors, merged)
            passing = [v for v in options if self.domain_problem(checks, key, v) is None]
            if not passing:
                first = options[0] if options else None
                return self.domain_problem(checks, key, first) or f"no domain for {key}"
            if key == HOSTNAME or passing == [None] or _pinned(merged, key):
                continue
            values = [v for v in passing if v is not None]
            best = self.best_domain(checks, key, values, flavors, merged)
            first_failure: str | None = None
            for value in chain((best,), self.ranked_domains(checks, key, values, flavors, merged, best)):
                tries[0] -= 1
                narrowed = dict(merged)
                reqs.add(narrowed, reqs.Requirement.exactly(key, value))
                left = [f for f in flavors if f.compatible(narrowed)]
                if left:
                    outcome = self._settle_from(claim, checks, at + 1, narrowed, left, tries)
                else:
                    outcome = f"no flavor is offered with {key}={value}"
                if not isinstance(outcome, str):
                    return outcome
                first_failure = first_failure or outcome
                if tries[0] <= 0:
                    break
            assert first_failure is not None
            return first_failure
        return merged, flavors

    def domain_score(
        self, checks: Checks, key: str, value: str, flavors: list[Flavor], merged: reqs.Requirements
    ) -> tuple[int, float, str]:
        """Least crowded for the pod's own spread constraints, then cheapest, then by name."""
        crowd = sum(
            self.topology.counts[gid].get(value, 0) for c, gid, _, _ in checks.spread if c.topology_key == key
        )
        pinned = reqs.intersect(merged, {key: reqs.Requirement.exactly(key, value)})
        price = min((f.price(pinned) for f in flavors if f.compatible(pinned)), default=float("inf"))
        return (crowd, price, value)

    def best_domain(
        self, checks: Checks, key: str, values: list[str], flavors: list[Flavor], merged: reqs.Requirements
    ) -> str:
        return min(values, key=lambda v: self.domain_score(checks, key, v, flavors, merged))

    def ranked_domains(
        self,
        checks: Checks,
        key: str,
        values: list[str],
        flavors: list[Flavor],
        merged: reqs.Requirements,
        best: str,
    ) -> Iterator[str]:
        """The values after `best`, best first; worked out only when `best` has failed."""
        rest = (v for v in values if v != best)
        yield from sorted(rest, key=lambda v: self.domain_score(checks, key, v, flavors, merged))

    def open_claim(self, view: PoolView, checks: Checks, restrict: str | None = None) -> Claim | str:
        pod = checks.pod
        merged = self.merge(view.base, checks.requirements)
        if isinstance(merged, str):
            return merged
        flavors = [
            f for f in view.flavors if (restrict is None or f.name == restrict) and f.compatible(merged)
        ]
        if not flavors:
            if not view.flavors and view.crowded:
                return f"its DaemonSets do not fit on {', '.join(view.crowded)}"
            return _unmatched(view, checks.requirements, merged, restrict)
        flavors = [
            f for f in flavors if untolerated(pod.tolerations, f.it.taints, prefer=checks.prefer) is None
        ]
        if not flavors:
            return "it does not tolerate the taints of any flavor"
        flavors = [f for f in flavors if f.ports_free(pod)]
        if not flavors:
            return "a DaemonSet holds its host port on every flavor"
        roomy = [f for f in flavors if res.fits({}, pod.requests, f.net)]
        if not roomy:
            return _too_big(pod, flavors)
        claim = Claim(self.next_index, view, dict(view.base), roomy)
        reason = self.try_claim(claim, checks)
        if reason is not None:
            return reason
        self.next_index += 1
        self.claims.append(claim)
        return claim

    # -- the greedy pass --------------------------------------------------------------------------------

    def every_claim_excludes(self, checks: Checks) -> bool:
        """Whether the pod's hostname anti-affinity already rules out every claim: then no scan."""
        return any(
            key == HOSTNAME and all(self.topology.counts[gid].get(c.hostname, 0) > 0 for c in self.claims)
            for gid, key in checks.anti
        )

    def might_take(self, claim: Claim, checks: Checks) -> bool:
        """A cheap necessary condition for `try_claim`: room under the claim's largest flavor, and no
        hostname constraint already broken there."""
        return res.fits(claim.used, checks.pod.requests, claim.max_net) and (
            HOSTNAME not in checks.keys or self.domain_problem(checks, HOSTNAME, claim.hostname) is None
        )

    def place(self, checks: Checks) -> str | None:
        """Place the pod on the first target that takes it; the reason it failed otherwise.

        Claims are scanned twice: first for one whose current flavor still has room (the pod costs
        nothing there), then for one that can grow into a bigger flavor. Filling the spare room of small
        nodes first is what keeps anti-affine pods' nodes from standing half empty."""
        for target in self.existing:
            if self.fits_existing(target, checks):
                self.place_existing(target, checks.pod)
                return None
        requests = checks.pod.requests
        if not self.every_claim_excludes(checks):
            for claim in self.claims:
                if (
                    res.fits(claim.used, requests, claim.chosen.net)
                    and self.try_claim(claim, checks, True) is None
                ):
                    return None
            for claim in self.claims:
                if self.might_take(claim, checks) and self.try_claim(claim, checks) is None:
                    return None
        if not self.pools:
            return "no NodePool exists"
        if not self.snapshot.instance_types:
            return NO_MANAGED_FLAVOR
        reasons = []
        for view in self.pools:
            opened = self.open_claim(view, checks)
            if isinstance(opened, Claim):
                return None
            reasons.append(f"NodePool {view.pool.name}: {opened}")
        return "; ".join(reasons)

    def place_with_relaxation(self, pod: Pod) -> str | None:
        prefs = Preferences.strict(pod)
        while True:
            reason = self.place(self.checks(pod, prefs))
            if reason is None:
                self.placed_prefs[pod.key] = prefs
                return None
            if not prefs.relax():
                return reason

    def schedule(self) -> dict[str, str]:
        """Place every pending pod it can; returns the reasons of those it cannot."""
        pending = placement_sequence(self.snapshot.pods)
        failures: dict[str, str] = {}
        while pending:
            failures = {}
            retry = []
            for pod in pending:
                reason = self.place_with_relaxation(pod)
                if reason is not None:
                    failures[pod.key] = reason
                    retry.append(pod)
            if len(retry) == len(pending):
                break
            pending = retry
        return failures

    # -- output -----------------------------------------------------------------------------------------

    def planned(self, claim: Claim) -> PlannedNodeClaim:
        flavor, pool = claim.chosen, claim.view.pool
        offering = flavor.cheapest_offering(claim.requirements)
        labels = {
            **flavor.it.labels,
            **pool.labels,
            NODEPOOL: pool.name,
            ZONE: offering.zone,
            CAPACITY_TYPE: offering.capacity_type,
        }
        for key, req in claim.requirements.items():
            value = reqs.carried_value(req)
            if key not in labels and value is not None:
                labels[key] = value
        return PlannedNodeClaim(
            node_pool=pool.name,
            instance_type=flavor.name,
            zone=offering.zone,
            capacity_type=offering.capacity_type,
            price_per_hour=offering.price,
            pods=tuple(p.key for p in claim.pods),
            labels=dict(sorted(labels.items())),
        )


SETTLE_TRIES = 32
"""How many domain choices one placement may try across its topology keys."""


def _pinned(requirements: reqs.Requirements, key: str) -> bool:
    req = requirements.get(key)
    return req is not None and req.single_value() is not None


def _absent(key: str) -> reqs.Requirement:
    return reqs.Requirement(key, False, frozenset(), True)


def _limits_text(view: PoolView) -> str:
    return ", ".join(
        f"{key} limit {res.describe(key, view.pool.limits[key])}, {res.describe(key, max(left, 0))} left"
        for key, left in sorted(view.remaining.items())
    )


def _unmatched(
    view: PoolView, pod_reqs: reqs.Requirements, merged: reqs.Requirements, restrict: str | None
) -> str:
    """Name the pod requirement that no flavor of the pool can meet."""
    candidates = [f for f in view.flavors if restrict is None or f.name == restrict]
    for key in pod_reqs:
        if not any(f.compatible({key: merged[key]}) for f in candidates):
            return f"no flavor matches {pod_reqs[key].describe()}"
    return "no flavor matches all of its requirements together"


def _too_big(pod: Pod, flavors: list[Flavor]) -> str:
    largest = max(flavors, key=lambda f: (f.net.get(CPU, 0), f.net.get(MEMORY, 0), f.name))
    short = res.first_shortfall({}, pod.requests, largest.net) or CPU
    return (
        f"no flavor is big enough: it requests {short}={res.describe(short, pod.requests.get(short, 0))}, "
        f"the largest flavor {largest.name} has {res.describe(short, max(largest.net.get(short, 0), 0))} "
        "allocatable after DaemonSets"
    )
