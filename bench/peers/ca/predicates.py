"""The cluster-autoscaler peer's scheduling predicates: the kube-scheduler filters CA runs in its simulation
(resources, node selector and affinity, taints, required pod (anti-)affinity, DoNotSchedule spread, host
ports), read from the counts `ClusterState` keeps, and the first fits built on them."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from bench.peers.ca.cluster import HOSTNAME_KEY, ClusterState, Condition, Conditions, Node, Profile
from bench.peers.ca.groups import NodeGroup
from kapstan.scheduling.topology import matches_node, untolerated

UNBOUNDED = 1 << 62
SCAN_ROWS = 8
"""Rows a first fit checks one by one before it masks the rest at once."""


class Cluster(ClusterState):
    """The simulated cluster with the predicates over its state; what the estimator and the loop use."""

    def admits(self, profile: Profile, group: NodeGroup, allocatable: np.ndarray) -> bool:
        """What an empty template node can tell: labels, taints, room for the pod alone. Cached per pod
        spec and group: the workloads have thousands of alike pods."""
        key = (profile.static, profile.needs, group.name)
        admitted = self.admitted.get(key)
        if admitted is None:
            pod = profile.pod
            admitted = self.admitted[key] = (
                matches_node(pod, group.labels)
                and untolerated(pod.tolerations, group.taints, prefer=False) is None
                and bool((profile.request <= allocatable).all())
            )
        return admitted

    def conditions(self, profile: Profile) -> Conditions | None:
        """The pod's topology predicates against the current counts, as conditions on a node's domains;
        None when no node can pass (a required affinity that nothing matches and the pod cannot start).
        The spread minimum is kube-scheduler's PreFilter: the least count over the domains of nodes that
        match the pod's node affinity (nodeAffinityPolicy Honor)."""
        shared, own = list(profile.apart[0]), list(profile.apart[1])
        for counter, key, skew, min_domains, filtered in profile.spread:
            minimum = self._minimum(profile, counter, key, min_domains, filtered)
            (own if key == HOSTNAME_KEY else shared).append((counter, key, 0, minimum + skew - 1, True))
        for counter, key, itself in profile.affinity:
            if self.totals[counter]:
                least = 1
            elif itself:
                least = 0  # kube-scheduler lets the first pod of a self-affine group in anywhere
            else:
                return None
            (own if key == HOSTNAME_KEY else shared).append((counter, key, least, UNBOUNDED, True))
        return shared, own

    def _minimum(self, profile: Profile, counter: int, key: int, min_domains: int, filtered: bool) -> int:
        if filtered:
            eligible = [n for n in self.nodes if matches_node(profile.pod, n.labels)]
            domains = {n.domains[key] for n in eligible if n.domains[key] >= 0}
            counts = [int(self.counts[counter, d]) for d in domains]
            return min(counts) if counts and len(domains) >= min_domains else 0
        histogram = self.histograms[counter]
        assert histogram is not None
        present = len(self.nodes) if key == HOSTNAME_KEY else self.domain_count[key]
        if not present or present < min_domains or present > sum(histogram.values()):
            return 0  # too few domains, or one without a matching pod
        return min(histogram)

    def fits(self, profile: Profile, node: Node, conditions: Conditions) -> bool:
        """Every predicate of the pod on one node."""
        return (
            self._room(profile, node.row)
            and self._holds(conditions[0], node)
            and self._holds(conditions[1], node)
            and self._ports_free(profile, node)
        )

    def _room(self, profile: Profile, row: int) -> bool:
        free = self.free[row]
        for i, amount in profile.needs:  # noqa: SIM110 - all() over a generator is slower on this hot path
            if free[i] < amount:
                return False
        return True

    def _holds(self, conditions: Sequence[Condition], node: Node) -> bool:
        for counter, key, least, most, needed in conditions:
            domain = node.domains[key]
            if domain < 0:
                if needed:
                    return False
            elif not least <= self.counts[counter, domain] <= most:
                return False
        return True

    @staticmethod
    def _ports_free(profile: Profile, node: Node) -> bool:
        return not any(port.conflicts(other) for port in profile.pod.host_ports for other in node.ports)

    def first_fit(self, profile: Profile, conditions: list[Condition], start: int = 0) -> Node | None:
        """The first node from row `start` on where the pod fits, the whole range checked as one mask."""
        end = len(self.nodes)
        ok = (self.free[start:end] >= profile.request).all(axis=1)
        for counter, key, least, most, needed in conditions:
            domains = self.dom[start:end, key]
            counts = self.counts[counter, np.maximum(domains, 0)]
            ok &= np.where(domains < 0, not needed, (counts >= least) & (counts <= most))
        for row in np.flatnonzero(ok).tolist():
            node = self.nodes[start + row]
            if self._ports_free(profile, node):
                return node
        return None

    def first_fit_new(
        self, profile: Profile, conditions: Conditions, start: int, pointers: dict[object, int]
    ) -> Node | None:
        """First fit among the nodes of one estimate (rows from `start` on), which share one template: they
        differ only in hostname, so conditions under any other key are checked once, on the first of them.
        For the rest, `pointers` keeps per pod shape the first row that may still fit: within an estimate
        free resources only shrink and counts only grow, so a row that failed an upper bound stays failed.
        """
        end = len(self.nodes)
        if start == end:
            return None
        shared, per_node = conditions
        if shared and not self._holds(shared, self.nodes[start]):
            return None
        if any(least > 0 for _, _, least, _, _ in per_node):
            return self.first_fit(profile, per_node, start)  # a lower bound: failed rows may pass later
        shape = (profile.needs, profile.pod.host_ports, *per_node)
        first = pointers.get(shape, start)
        stop = min(first + SCAN_ROWS, end)
        for row in range(first, stop):
            node = self.nodes[row]
            if self.fits(profile, node, ([], per_node)):
                pointers[shape] = row
                return node
        found = self.first_fit(profile, per_node, stop) if stop < end else None
        pointers[shape] = found.row if found is not None else end
        return found
