"""Each planned claim's fallback flavors (twin of `rust/src/solver/greedy/alternatives.rs`).

Karpenter hands the cloud provider a NodeClaim that allows several instance types and lets it launch the
cheapest one it can get. kapstan picks one flavor per claim; the plan also lists, per claim, the other
flavors that could carry exactly the same pods in the same zone and capacity type, cheapest first, so that
a launch that finds the chosen MachineDeployment at its max size can fall back without a new batch.

They are worked out once the solve is over, with the engine's own checks: a flavor of the claim's pool
that holds the claim's pods' requests after its DaemonSets, meets the claim's requirements, whose taints
the pods tolerate, on which no DaemonSet holds their host ports, and which the pool's limits allow in place
of the chosen one with the rest of the plan charged. Pods elsewhere must see no difference, and that is
kept conservative: the alternative carries the chosen flavor's value for every label key a topology group
counts by or picks its nodes on (preferred terms included), and the same taints when a spread group counts
nodes by their taints. A claim whose neighbours could tell the flavors apart gets fewer alternatives, or
none, never a wrong one.
"""

from __future__ import annotations

from kapstan.scheduling import resources as res
from kapstan.scheduling.counts import TopologyCounts
from kapstan.scheduling.model import HOSTNAME, Offering
from kapstan.scheduling.targets import OFFERING_KEYS, Claim, Flavor, PoolView
from kapstan.scheduling.topology import untolerated

MAX_ALTERNATIVES = 4


class AlternativeFlavors:
    """Ranks the fallback flavors of the claims of one finished solve."""

    def __init__(self, topology: TopologyCounts) -> None:
        keys: set[str] = set()
        self.same_taints = False
        for group in topology.groups:
            keys.add(group.key)
            if group.nodes is not None:
                keys |= group.nodes.keys()
                self.same_taints |= group.nodes.tolerations is not None
        # A claim's zone, capacity type and hostname are the same whatever its flavor.
        self.same_keys = tuple(sorted(keys - {HOSTNAME, *OFFERING_KEYS}))
        self._offered: dict[tuple[str, str, str], list[tuple[float, Flavor]]] = {}

    def ranked(self, claim: Claim) -> tuple[str, ...]:
        """Up to `MAX_ALTERNATIVES` other flavors that carry the claim's pods, cheapest first."""
        chosen = claim.chosen
        offering = chosen.cheapest_offering(claim.requirements)
        found: list[str] = []
        for _, flavor in self._offered_in(claim.view, offering):
            if flavor.name != chosen.name and self._carries(claim, flavor):
                found.append(flavor.name)
                if len(found) == MAX_ALTERNATIVES:
                    break
        return tuple(found)

    def _offered_in(self, view: PoolView, offering: Offering) -> list[tuple[float, Flavor]]:
        """The pool's flavors on sale in the offering's zone and capacity type, cheapest there first."""
        key = (view.pool.name, offering.zone, offering.capacity_type)
        found = self._offered.get(key)
        if found is None:
            priced = [(_price_in(flavor, offering), flavor) for flavor in view.flavors]
            found = sorted(
                [(price, flavor) for price, flavor in priced if price is not None],
                key=lambda entry: (entry[0], entry[1].name),
            )
            self._offered[key] = found
        return found

    def _carries(self, claim: Claim, flavor: Flavor) -> bool:
        chosen = claim.chosen
        if any(flavor.it.labels.get(key) != chosen.it.labels.get(key) for key in self.same_keys):
            return False
        if self.same_taints and flavor.it.taints != chosen.it.taints:
            return False
        if not res.fits({}, claim.used, flavor.net) or not flavor.compatible(claim.requirements):
            return False
        if not claim.view.within_limits(flavor, chosen):
            return False
        return all(
            flavor.ports_free(pod) and untolerated(pod.tolerations, flavor.it.taints, prefer=False) is None
            for pod in claim.pods
        )


def _price_in(flavor: Flavor, offering: Offering) -> float | None:
    """The flavor's price in the offering's zone and capacity type; None when it is not on sale there."""
    prices = [
        o.price
        for o in flavor.it.offerings
        if o.available and (o.zone, o.capacity_type) == (offering.zone, offering.capacity_type)
    ]
    return min(prices) if prices else None
