"""The choice of domains (twin of `rust/src/solver/greedy/domains.rs`): for a claim taking a pod, the domain
of every topology key the pod is part of, least crowded first, then cheapest, then by name; a choice that
leaves a later key no domain gives way to the next one, a bounded number of times.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import chain

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling.greedy.checks import Checking, Checks, pinned
from kapstan.scheduling.model import HOSTNAME
from kapstan.scheduling.targets import Claim, Flavor

SETTLE_TRIES = 32
"""How many domain choices one placement may try across its topology keys."""


class Settling(Checking):
    """The scheduler's choice of a claim's domains."""

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
            if passing == [None] and key != HOSTNAME and key in merged:
                # The node goes without the label (the pool allows that: NotIn, DoesNotExist). Pinned
                # absent, so that a later pod cannot give it a value under this pod counted without one.
                merged = dict(merged)
                reqs.add(merged, reqs.Requirement(key, False, frozenset(), True))
            if key == HOSTNAME or passing == [None] or pinned(merged, key):
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
            self.topology.counts[s.group].get(value, 0)
            for s in checks.spread
            if s.constraint.topology_key == key
        )
        narrowed = reqs.intersect(merged, {key: reqs.Requirement.exactly(key, value)})
        price = min((f.price(narrowed) for f in flavors if f.compatible(narrowed)), default=float("inf"))
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
