"""Joining and opening claims (twin of `rust/src/solver/greedy/claims.rs`): what adding a pod to a claim
changes, worked out before anything is mutated; why a pool cannot open a claim for it is `refusals.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling import resources as res
from kapstan.scheduling.greedy.checks import Checks, pinned
from kapstan.scheduling.greedy.domains import Settling
from kapstan.scheduling.greedy.refusals import no_start
from kapstan.scheduling.model import HOSTNAME, Pod
from kapstan.scheduling.targets import OFFERING_KEYS, Claim, Flavor, PoolView
from kapstan.scheduling.topology import untolerated


@dataclass
class Addition:
    """What adding a pod to a claim changes."""

    requirements: dict[str, reqs.Requirement]
    flavors: list[Flavor]
    replacing: Flavor | None
    """The flavor the claim had before, charged back to the pool's limits; None for a new claim."""


class Claiming(Settling):
    """The scheduler's steps that join a pod to a claim or open one for it."""

    _starts: dict[tuple[object, ...], list[Flavor]]
    """`_starting_flavors` by pool, requirements and what of the pod decides them."""

    def _starting_flavors(
        self, view: PoolView, checks: Checks, merged: reqs.Requirements, restrict: frozenset[str] | None
    ) -> list[Flavor]:
        """The pool's flavors a new claim for the pod can start from: held to `restrict`'s flavors, compatible with
        `merged`, tolerated, no host port a DaemonSet holds, room for the pod on an empty node. Worked out
        once per pool, requirements and pod shape (as the Rust engine caches them): every claim opened
        asks, and asking each of a large catalog's flavors was a fifth of a solve."""
        pod = checks.pod
        key = (
            view.pool.name,
            tuple(merged.items()),
            restrict,
            checks.prefer,
            pod.tolerations,
            pod.host_ports,
            tuple(pod.requests.items()),
        )
        found = self._starts.get(key)
        if found is None:
            found = [
                f
                for f in view.flavors
                if (restrict is None or f.name in restrict)
                and f.compatible(merged)
                and untolerated(pod.tolerations, f.it.taints, prefer=checks.prefer) is None
                and f.ports_free(pod)
                and res.fits({}, pod.requests, f.net)
            ]
            self._starts[key] = found
        return found

    def try_claim(self, claim: Claim, checks: Checks, keep_flavor: bool = False) -> str | None:
        """Add the pod to the claim if it fits (with `keep_flavor`, only if the claim keeps its flavor);
        otherwise say why. Mutates only on success."""
        addition = self.evaluate(claim, checks, keep_flavor)
        if isinstance(addition, str):
            return addition
        self.commit(claim, checks.pod, addition)
        return None

    def evaluate(self, claim: Claim, checks: Checks, keep_flavor: bool) -> Addition | str:
        """Whether the pod can join the claim, and what that changes; otherwise why not.

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
        open_keys = [k for k in checks.keys if k != HOSTNAME and not pinned(merged, k)]
        needs_all = bool(open_keys) or any(r.min_values for r in merged.values())
        flavors = (
            [f for f in claim.flavors if self.holds(claim, checks, merged, f)] if needs_all else claim.flavors
        )
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
                if (needs_all or self.holds(claim, checks, merged, f)) and view.within_limits(f, replacing)
            ),
            None,
        )
        if head is None:
            if needs_all or any(self.holds(claim, checks, merged, f) for f in flavors):
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
        return Addition(merged, flavors, replacing)

    def commit(self, claim: Claim, pod: Pod, addition: Addition) -> None:
        claim.view.charge(addition.flavors[0], addition.replacing)
        claim.requirements, claim.flavors = addition.requirements, addition.flavors
        claim.used = res.add(claim.used, pod.requests)
        claim.pods.append(pod)
        claim.ports.extend(pod.host_ports)
        self.topology.record(pod, claim.domain, claim.taints)

    def open_claim(
        self, view: PoolView, checks: Checks, restrict: frozenset[str] | None = None
    ) -> Claim | str:
        """Open a claim in the pool for the pod (held to the flavors `restrict` names, if any), or why not."""
        merged = self.merge(view.base, checks.requirements)
        if isinstance(merged, str):
            return merged
        roomy = self._starting_flavors(view, checks, merged, restrict)
        if not roomy:
            return no_start(view, checks, merged, restrict)
        claim = Claim(self.next_index, view, dict(view.base), list(roomy))
        reason = self.try_claim(claim, checks)
        if reason is not None:
            return reason
        self.next_index += 1
        self.claims.append(claim)
        return claim


def _limits_text(view: PoolView) -> str:
    """The pool's limits and what is left of each, for a reason that names them."""
    return ", ".join(
        f"{key} limit {res.describe(key, view.pool.limits[key])}, {res.describe(key, max(left, 0))} left"
        for key, left in sorted(view.remaining.items())
    )
