"""The cross-pod rules on the final state: required pod affinity, anti-affinity (both ways) and hard
topology spread.

Each is decided from the counts of a group's pods per domain over every node of the final state, which
no single node can tell (hosts.check_host covers what one node can); required affinity also asks whether
kube-scheduler's binding order could have reached the domain at all (affinity.py).
"""

from __future__ import annotations

from collections.abc import Callable

from kapstan.scheduling.model import HOSTNAME, Pod, Snapshot, TopologySpreadConstraint
from kapstan.scheduling.topology import Group, min_count, spread_group, spread_universe, term_group
from kapstan.scheduling.validator.affinity import unreachable_domains
from kapstan.scheduling.validator.hosts import Host, counts_on


def check_topology(snapshot: Snapshot, hosts: list[Host], violations: list[str]) -> None:
    located = [(pod, host) for host in hosts for pod in host.pods]
    cache: dict[tuple[Group, str], dict[str, int]] = {}

    def counts(group: Group, key: str) -> dict[str, int]:
        """Pods the group selects, per value of `key`, on the nodes it counts on, in the final state."""
        found = cache.get((group, key))
        if found is None:
            found = {}
            for pod, host in located:
                value = host.labels.get(key)
                if value is not None and group.selects(pod) and counts_on(group, host):
                    found[value] = found.get(value, 0) + 1
            cache[(group, key)] = found
        return found

    owners = [(pod, host, term) for pod, host in located for term in pod.anti_affinity]
    unreached: dict[Group, set[str]] = {}

    def unreachable(group: Group) -> set[str]:
        found = unreached.get(group)
        if found is None:
            in_order = [(p, h.labels.get, True) for h in hosts for p in h.existing_pods]
            in_order += [(p, h.labels.get, False) for h in hosts for p in h.placed]
            found = unreached[group] = unreachable_domains(group, in_order)
        return found

    for host in hosts:
        for pod in host.placed:
            for term in pod.affinity:
                group, key = term_group(term), term.topology_key
                domain = host.labels.get(key)
                itself = 1 if group.selects(pod) else 0
                # Company in the domain, or alone as the group's first pod (itself selected), and the
                # domain one kube-scheduler's binding order can reach (affinity.py).
                met = domain is not None and (counts(group, key).get(domain, 0) - itself > 0 or itself)
                if not met or domain in unreachable(group):
                    violations.append(f"{pod.key} on {host.name}: required pod affinity on {key} not met")
            for term in pod.anti_affinity:
                group, key = term_group(term), term.topology_key
                domain = host.labels.get(key)
                itself = 1 if group.selects(pod) else 0
                if domain is not None and counts(group, key).get(domain, 0) - itself > 0:
                    violations.append(f"{pod.key} on {host.name}: anti-affinity on {key} with a matching pod")
            for owner, owner_host, term in owners:
                domain = owner_host.labels.get(term.topology_key)
                if (
                    owner.key != pod.key
                    and domain is not None
                    and host.labels.get(term.topology_key) == domain
                    and term_group(term).selects(pod)
                ):
                    violations.append(f"{pod.key} on {host.name}: excluded by anti-affinity of {owner.key}")
            for constraint in pod.spread:
                if constraint.when_unsatisfiable == "DoNotSchedule":
                    _check_spread(snapshot, hosts, pod, host, constraint, counts, violations)


def _check_spread(
    snapshot: Snapshot,
    hosts: list[Host],
    pod: Pod,
    host: Host,
    constraint: TopologySpreadConstraint,
    counts: Callable[[Group, str], dict[str, int]],
    violations: list[str],
) -> None:
    key = constraint.topology_key
    domain = host.labels.get(key)
    if domain is None:
        violations.append(f"{pod.key} on {host.name}: node has no {key} label for topology spread")
        return
    group = spread_group(pod, constraint)
    per_domain = counts(group, key)
    # kube-scheduler's domains are those of the nodes the constraint counts on; Karpenter adds the
    # domains a new node could have (spread_universe), so an empty zone holds the minimum at zero.
    universe: frozenset[str] = frozenset()
    if key != HOSTNAME:
        universe = spread_universe(snapshot, pod, constraint) | {
            h.labels[key] for h in hosts if key in h.labels and counts_on(group, h)
        }
    skew = per_domain.get(domain, 0) - min_count(constraint, universe, per_domain)
    if skew > constraint.max_skew:
        violations.append(
            f"{pod.key} on {host.name}: topology spread on {key} skew {skew} > maxSkew {constraint.max_skew}"
        )
