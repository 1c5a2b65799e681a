"""Checks any plan against its snapshot, independently of how the plan was made.

It looks only at the final state: which pods end up on which node, with which labels, taints and
capacity. Every hard constraint is checked (preferences are not: they are allowed to be relaxed). The
tests run it on every plan either engine produces, so a solver bug shows up as a named violation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kapstan.scheduling import requirements as reqs
from kapstan.scheduling import resources as res
from kapstan.scheduling.model import (
    CAPACITY_TYPE,
    CORDON_TAINT,
    HOSTNAME,
    NODEPOOL,
    ZONE,
    DaemonSet,
    HostPort,
    InstanceType,
    NodePool,
    Plan,
    PlannedNodeClaim,
    Pod,
    Snapshot,
    Taint,
    TopologySpreadConstraint,
)
from kapstan.scheduling.topology import (
    Group,
    matches_node,
    min_count,
    spread_group,
    spread_universe,
    term_group,
    untolerated,
)
from kapstan.scheduling.validator_affinity import unreachable_domains


@dataclass
class _Host:
    """A node in the final state: an existing node or a planned claim."""

    name: str
    labels: dict[str, str]
    allocatable: Mapping[str, int]
    taints: tuple[Taint, ...]
    existing_pods: list[Pod]
    placed: list[Pod] = field(default_factory=list)
    overhead: Mapping[str, int] = field(default_factory=dict)
    """What the DaemonSets that run on a new node request there (their pods are in no snapshot yet)."""
    daemon_ports: tuple[HostPort, ...] = ()
    """Host ports the DaemonSets that run on the node hold, on new and existing nodes alike."""

    @property
    def pods(self) -> list[Pod]:
        return [*self.existing_pods, *self.placed]


def validate(snapshot: Snapshot, plan: Plan) -> list[str]:
    """Every way the plan breaks a hard constraint of the snapshot; empty when the plan is valid."""
    violations: list[str] = []
    pods = {pod.key: pod for pod in snapshot.pods}
    hosts = _hosts(snapshot, plan, pods, violations)
    _check_accounting(plan, pods, violations)
    _check_limits(snapshot, plan, violations)
    for host in hosts:
        _check_host(host, violations)
    _check_topology(snapshot, hosts, violations)
    _check_alternatives(snapshot, plan, hosts, violations)
    return violations


def _hosts(snapshot: Snapshot, plan: Plan, pods: Mapping[str, Pod], violations: list[str]) -> list[_Host]:
    hosts: list[_Host] = []
    nodes = {node.name: node for node in snapshot.nodes}
    for node in snapshot.nodes:
        host = _Host(node.name, dict(node.labels), node.allocatable, node.taints, list(node.pods))
        host.daemon_ports = _daemon_ports(snapshot, host)
        for key in plan.existing_nodes.get(node.name, ()):
            if key in pods:
                host.placed.append(pods[key])
        for pod in host.placed:
            if pod.key in node.refused:
                violations.append(
                    f"kube-scheduler refused {pod.key} on node {node.name} but the plan places it there"
                )
        if node.unschedulable:
            for pod in host.placed:
                if untolerated(pod.tolerations, [CORDON_TAINT], prefer=False) is not None:
                    violations.append(f"node {node.name} is cordoned but the plan places {pod.key} on it")
        hosts.append(host)
    for name in plan.existing_nodes:
        if name not in nodes:
            violations.append(f"plan places pods on unknown node {name}")
    pools = {pool.name: pool for pool in snapshot.node_pools}
    flavors = {it.name: it for it in snapshot.instance_types}
    flavor_keys = {key for it in snapshot.instance_types for key in it.labels}
    for index, claim in enumerate(plan.node_claims):
        label = f"nodeclaim #{index} ({claim.node_pool}/{claim.instance_type})"
        pool, flavor = pools.get(claim.node_pool), flavors.get(claim.instance_type)
        if pool is None or flavor is None:
            violations.append(f"{label}: unknown NodePool or flavor")
            continue
        violations += [f"{label}: {problem}" for problem in _offering_problems(pool, flavor, claim)]
        if (price := _price_in(flavor, claim)) is not None and abs(price - claim.price_per_hour) > 1e-9:
            violations.append(f"{label}: price {claim.price_per_hour} is not the offering's")
        labels = dict(claim.labels)
        expected = _claim_labels(pool, flavor, claim)
        for key, value in expected.items():
            if labels.get(key) != value:
                violations.append(f"{label}: label {key}={labels.get(key)} should be {value}")
        # Any other label can only be the value of a requirement-only key of its own NodePool: a flavor
        # label belongs to the flavors that carry it, a template label to its own pool.
        requirement_only = {r.key for r in pool.requirements} - flavor_keys - {HOSTNAME}
        for key, value in labels.items():
            if key not in expected and key not in requirement_only:
                violations.append(
                    f"{label}: label {key}={value} comes from neither its flavor, its NodePool's "
                    "template nor its NodePool's requirements"
                )
        conflict = reqs.first_conflict(reqs.build(pool.requirements), labels)
        if conflict is not None:
            violations.append(f"{label}: breaks NodePool requirement {conflict.describe()}")
        labels[HOSTNAME] = claim_hostname(claim, index)
        hosts.append(
            new_host(snapshot, labels, pool, flavor, [pods[key] for key in claim.pods if key in pods])
        )
    return hosts


def claim_hostname(claim: PlannedNodeClaim, index: int) -> str:
    """The name the validator gives the node of the plan's claim at `index`."""
    return f"{claim.node_pool}/plan-{index}"


def new_host(
    snapshot: Snapshot, labels: dict[str, str], pool: NodePool, flavor: InstanceType, placed: list[Pod]
) -> _Host:
    """A planned node of this flavor in this pool, with the labels given (hostname among them)."""
    host = _Host(labels[HOSTNAME], labels, flavor.allocatable, (*pool.taints, *flavor.taints), [], placed)
    host.overhead = res.total(ds.pod.requests for ds in _daemonsets_on(snapshot, host))
    host.daemon_ports = _daemon_ports(snapshot, host)
    return host


def _claim_labels(pool: NodePool, flavor: InstanceType, claim: PlannedNodeClaim) -> dict[str, str]:
    """The labels a node of this flavor in the claim's pool, zone and capacity type must carry."""
    return {
        **flavor.labels,
        **pool.labels,
        NODEPOOL: pool.name,
        ZONE: claim.zone,
        CAPACITY_TYPE: claim.capacity_type,
    }


def _price_in(flavor: InstanceType, claim: PlannedNodeClaim) -> float | None:
    """The flavor's price in the claim's zone and capacity type; None when it is not on sale there."""
    prices = [
        o.price
        for o in flavor.offerings
        if o.zone == claim.zone and o.capacity_type == claim.capacity_type and o.available
    ]
    return min(prices) if prices else None


def _offering_problems(pool: NodePool, flavor: InstanceType, claim: PlannedNodeClaim) -> list[str]:
    """Why a node of this flavor cannot be bought for the claim: not the pool's, or not on sale there."""
    problems = []
    if pool.instance_types is not None and flavor.name not in pool.instance_types:
        problems.append(f"flavor {flavor.name} is not offered to NodePool {pool.name}")
    if _price_in(flavor, claim) is None:
        problems.append(f"no available offering of {flavor.name} in {claim.zone}/{claim.capacity_type}")
    return problems


def _check_alternatives(snapshot: Snapshot, plan: Plan, hosts: list[_Host], violations: list[str]) -> None:
    """Each claim's alternatives are other flavors of its pool on sale in its zone and capacity type,
    cheapest first, that hold its pods within the pool's limits (with the rest of the plan), and that
    no hard cross-pod rule can tell from the chosen flavor: the same value for every topology key a hard
    term counts by, and the same admission by every spread constraint's node filter."""
    pools = {pool.name: pool for pool in snapshot.node_pools}
    flavors = {it.name: it for it in snapshot.instance_types}
    by_name = {host.name: host for host in hosts}
    usage = pool_usage(snapshot, plan)
    groups = _hard_groups(snapshot)
    keys = {group.key for group in groups}
    for index, claim in enumerate(plan.node_claims):
        pool, chosen = pools.get(claim.node_pool), flavors.get(claim.instance_type)
        host = by_name.get(claim_hostname(claim, index))
        if pool is None or chosen is None or host is None:
            continue  # reported with the claim itself
        label = f"nodeclaim #{index} ({claim.node_pool}/{claim.instance_type})"
        if len(set(claim.alternatives)) != len(claim.alternatives) or chosen.name in claim.alternatives:
            violations.append(f"{label}: alternatives {list(claim.alternatives)} repeat a flavor")
        ranks = []
        for name in claim.alternatives:
            flavor = flavors.get(name)
            if flavor is None:
                violations.append(f"{label}: alternative {name} is no flavor")
                continue
            found = _offering_problems(pool, flavor, claim)
            ranks.append((_price_in(flavor, claim) or 0.0, name))
            kept = {key: value for key, value in host.labels.items() if key not in chosen.labels}
            labels = {**kept, **_claim_labels(pool, flavor, claim)}
            conflict = reqs.first_conflict(reqs.build(pool.requirements), labels)
            if conflict is not None:
                found.append(f"breaks NodePool requirement {conflict.describe()}")
            swapped = new_host(snapshot, labels, pool, flavor, host.placed)
            found += check_host(swapped)
            used = res.add(res.subtract(usage[pool.name], chosen.capacity), flavor.capacity)
            found += [
                f"limit {key} exceeded" for key, limit in pool.limits.items() if used.get(key, 0) > limit
            ]
            found += [f"{key} differs" for key in sorted(keys) if labels.get(key) != host.labels.get(key)]
            if any(_counts_on(group, swapped) != _counts_on(group, host) for group in groups):
                found.append("a spread constraint counts its node differently")
            violations += [f"{label}: alternative {name}: {problem}" for problem in found]
        if ranks != sorted(ranks):
            violations.append(f"{label}: alternatives {list(claim.alternatives)} are not cheapest first")


def _hard_groups(snapshot: Snapshot) -> set[Group]:
    """The groups of every hard pod affinity, anti-affinity and spread term, bound pods' included."""
    groups: set[Group] = set()
    for pod in (*snapshot.pods, *(p for node in snapshot.nodes for p in node.pods)):
        groups |= {term_group(term) for term in (*pod.affinity, *pod.anti_affinity)}
        groups |= {spread_group(pod, c) for c in pod.spread if c.when_unsatisfiable == "DoNotSchedule"}
    return groups


def _daemonsets_on(snapshot: Snapshot, host: _Host) -> list[DaemonSet]:
    return [
        ds
        for ds in snapshot.daemonsets
        if matches_node(ds.pod, host.labels)
        and untolerated(ds.pod.tolerations, host.taints, prefer=False) is None
    ]


def _daemon_ports(snapshot: Snapshot, host: _Host) -> tuple[HostPort, ...]:
    return tuple(port for ds in _daemonsets_on(snapshot, host) for port in ds.pod.host_ports)


def _check_accounting(plan: Plan, pods: Mapping[str, Pod], violations: list[str]) -> None:
    seen: dict[str, int] = {}
    for placed in [*plan.existing_nodes.values(), *(c.pods for c in plan.node_claims)]:
        for key in placed:
            seen[key] = seen.get(key, 0) + 1
    for key, count in seen.items():
        if key not in pods:
            violations.append(f"plan places unknown pod {key}")
        elif count > 1:
            violations.append(f"pod {key} is placed {count} times")
        if key in plan.unschedulable:
            violations.append(f"pod {key} is both placed and unschedulable")
    for key in pods:
        if key not in seen and key not in plan.unschedulable:
            violations.append(f"pod {key} is neither placed nor reported unschedulable")
        if key in plan.unschedulable and not plan.unschedulable[key].strip():
            violations.append(f"pod {key} is unschedulable without a reason")


def pool_usage(snapshot: Snapshot, plan: Plan) -> dict[str, dict[str, int]]:
    """Per NodePool, what its nodes and the plan's claims in it count against its limits."""
    flavors = {it.name: it for it in snapshot.instance_types}
    usage = {}
    for pool in snapshot.node_pools:
        claims = [c for c in plan.node_claims if c.node_pool == pool.name and c.instance_type in flavors]
        used = res.add(pool.usage, res.total(flavors[c.instance_type].capacity for c in claims))
        used["nodes"] = pool.usage.get("nodes", 0) + 1000 * len(claims)
        usage[pool.name] = used
    return usage


def _check_limits(snapshot: Snapshot, plan: Plan, violations: list[str]) -> None:
    usage = pool_usage(snapshot, plan)
    for pool in snapshot.node_pools:
        used = usage[pool.name]
        planned = used["nodes"] > pool.usage.get("nodes", 0)
        for key, limit in pool.limits.items():
            if used.get(key, 0) > limit and planned:
                violations.append(f"NodePool {pool.name}: limit {key} exceeded ({used[key]} > {limit} milli)")


def check_host(host: _Host) -> list[str]:
    """What breaks a hard constraint on the one node: resources, node selection, taints, host ports."""
    violations: list[str] = []
    _check_host(host, violations)
    return violations


def _check_host(host: _Host, violations: list[str]) -> None:
    demand = res.add(host.overhead, res.total(p.requests for p in host.pods))
    short = res.first_shortfall({}, demand, host.allocatable)
    if short is not None and host.placed:
        violations.append(
            f"{host.name}: {short} over-committed ({demand[short]} > {host.allocatable.get(short, 0)})"
        )
    ports: list[HostPort] = [*host.daemon_ports, *(port for p in host.existing_pods for port in p.host_ports)]
    for pod in host.placed:
        if not matches_node(pod, host.labels):
            violations.append(f"{pod.key} on {host.name}: node selector or required node affinity not met")
        taint = untolerated(pod.tolerations, host.taints, prefer=False)
        if taint is not None:
            violations.append(f"{pod.key} on {host.name}: does not tolerate taint {taint}")
        for port in pod.host_ports:
            if any(port.conflicts(other) for other in ports):
                violations.append(f"{pod.key} on {host.name}: host port {port.port}/{port.protocol} conflict")
            ports.append(port)


def _check_topology(snapshot: Snapshot, hosts: list[_Host], violations: list[str]) -> None:
    located = [(pod, host) for host in hosts for pod in host.pods]
    cache: dict[tuple[Group, str], dict[str, int]] = {}

    def counts(group: Group, key: str) -> dict[str, int]:
        """Pods the group selects, per value of `key`, on the nodes it counts on, in the final state."""
        found = cache.get((group, key))
        if found is None:
            found = {}
            for pod, host in located:
                value = host.labels.get(key)
                if value is not None and group.selects(pod) and _counts_on(group, host):
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
                # domain one kube-scheduler's binding order can reach (validator_affinity.py).
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


def _counts_on(group: Group, host: _Host) -> bool:
    return group.nodes is None or group.nodes.admits(host.labels.get, host.taints)


def _check_spread(
    snapshot: Snapshot,
    hosts: list[_Host],
    pod: Pod,
    host: _Host,
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
            h.labels[key] for h in hosts if key in h.labels and _counts_on(group, h)
        }
    skew = per_domain.get(domain, 0) - min_count(constraint, universe, per_domain)
    if skew > constraint.max_skew:
        violations.append(
            f"{pod.key} on {host.name}: topology spread on {key} skew {skew} > maxSkew {constraint.max_skew}"
        )
