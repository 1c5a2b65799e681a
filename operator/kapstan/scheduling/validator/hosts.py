"""The final state a plan leads to, node by node, and what each node must satisfy on its own.

Every other check of the validator reads this state: an existing node with the pods the plan adds, or a
planned claim as the node it becomes (its flavor's capacity, its pool's taints, the labels the claim must
carry, the DaemonSets that will run there). Building it also reports what is wrong with a claim itself
(unknown pool or flavor, an offering not on sale, a wrong price or label, a broken pool requirement).
"""

from __future__ import annotations

from collections.abc import Mapping
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
)
from kapstan.scheduling.topology import Group, matches_node, untolerated


@dataclass
class Host:
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


def build_hosts(snapshot: Snapshot, plan: Plan, pods: Mapping[str, Pod], violations: list[str]) -> list[Host]:
    """The existing nodes, then one node a claim, in the plan's order; what is wrong on the way."""
    hosts: list[Host] = []
    nodes = {node.name: node for node in snapshot.nodes}
    for node in snapshot.nodes:
        host = Host(node.name, dict(node.labels), node.allocatable, node.taints, list(node.pods))
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
        violations += [f"{label}: {problem}" for problem in offering_problems(pool, flavor, claim)]
        if (price := price_in(flavor, claim)) is not None and abs(price - claim.price_per_hour) > 1e-9:
            violations.append(f"{label}: price {claim.price_per_hour} is not the offering's")
        labels = dict(claim.labels)
        expected = claim_labels(pool, flavor, claim)
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
) -> Host:
    """A planned node of this flavor in this pool, with the labels given (hostname among them)."""
    host = Host(labels[HOSTNAME], labels, flavor.allocatable, (*pool.taints, *flavor.taints), [], placed)
    host.overhead = res.total(ds.pod.requests for ds in _daemonsets_on(snapshot, host))
    host.daemon_ports = _daemon_ports(snapshot, host)
    return host


def claim_labels(pool: NodePool, flavor: InstanceType, claim: PlannedNodeClaim) -> dict[str, str]:
    """The labels a node of this flavor in the claim's pool, zone and capacity type must carry."""
    return {
        **flavor.labels,
        **pool.labels,
        NODEPOOL: pool.name,
        ZONE: claim.zone,
        CAPACITY_TYPE: claim.capacity_type,
    }


def price_in(flavor: InstanceType, claim: PlannedNodeClaim) -> float | None:
    """The flavor's price in the claim's zone and capacity type; None when it is not on sale there."""
    prices = [
        o.price
        for o in flavor.offerings
        if o.zone == claim.zone and o.capacity_type == claim.capacity_type and o.available
    ]
    return min(prices) if prices else None


def offering_problems(pool: NodePool, flavor: InstanceType, claim: PlannedNodeClaim) -> list[str]:
    """Why a node of this flavor cannot be bought for the claim: not the pool's, or not on sale there."""
    problems = []
    if pool.instance_types is not None and flavor.name not in pool.instance_types:
        problems.append(f"flavor {flavor.name} is not offered to NodePool {pool.name}")
    if price_in(flavor, claim) is None:
        problems.append(f"no available offering of {flavor.name} in {claim.zone}/{claim.capacity_type}")
    return problems


def _daemonsets_on(snapshot: Snapshot, host: Host) -> list[DaemonSet]:
    return [
        ds
        for ds in snapshot.daemonsets
        if matches_node(ds.pod, host.labels)
        and untolerated(ds.pod.tolerations, host.taints, prefer=False) is None
    ]


def _daemon_ports(snapshot: Snapshot, host: Host) -> tuple[HostPort, ...]:
    return tuple(port for ds in _daemonsets_on(snapshot, host) for port in ds.pod.host_ports)


def check_host(host: Host) -> list[str]:
    """What breaks a hard constraint on the one node: resources, node selection, taints, host ports."""
    violations: list[str] = []
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
    return violations


def counts_on(group: Group, host: Host) -> bool:
    """Whether the group's counts take in this node (a spread constraint's node filter admits it)."""
    return group.nodes is None or group.nodes.admits(host.labels.get, host.taints)
