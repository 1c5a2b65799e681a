"""Nodes and in-flight NodeClaims as the solver sees them (``kapstan.snapshot``'s view of capacity).

A Node is what its NodeClaim says until the claim is Initialized; a NodeClaim still launching is a node
of its flavor, named after the claim, so pending pods count on it; a Node or claim being deleted is no
capacity. Each NodePool's usage counts its nodes and launching claims as Karpenter counts them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from kapstan.api import core, placement
from kapstan.api.karpenter import NodeClaim
from kapstan.api.manifests import Manifests
from kapstan.api.wellknown import (
    NOT_READY_TAINT_KEY,
    UNINITIALIZED_TAINT_KEY,
    UNREACHABLE_TAINT_KEY,
    UNREGISTERED_TAINT_KEY,
)
from kapstan.scheduling.model import HOSTNAME, INSTANCE_TYPE, NODEPOOL, InstanceType, Node, Pod, Taint

NODES = "nodes"
EPHEMERAL_TAINT_KEYS = frozenset(
    {
        UNREGISTERED_TAINT_KEY,
        NOT_READY_TAINT_KEY,
        UNREACHABLE_TAINT_KEY,
        UNINITIALIZED_TAINT_KEY,
    }
)
"""Taints a joining node carries until it is ready (Karpenter's ephemeral taints)."""


def deleting_nodes(manifests: Manifests, claims: Mapping[str, NodeClaim]) -> set[str]:
    """Nodes marked for deletion, themselves or through their NodeClaim: no capacity to count on
    (Karpenter's cluster state leaves them out of the active nodes)."""
    return {
        node.name
        for node in manifests.nodes
        if node.metadata.deletion_timestamp is not None
        or (node.name in claims and claims[node.name].metadata.deletion_timestamp is not None)
    }


def convert_taints(taints: Iterable[placement.Taint]) -> tuple[Taint, ...]:
    return tuple(Taint(t.key, t.effect, t.value) for t in taints)


def convert_node(node: core.Node, pods: tuple[Pod, ...], claim: NodeClaim | None) -> Node:
    """A Node as the solver sees it. Until its NodeClaim is Initialized, a node is what its claim says
    (Karpenter's rule): the claim's labels and allocatable fill what the kubelet has not reported yet,
    and the taints that registration and start-up remove do not count. Otherwise pods pending for a
    node that has just joined would look unable to use it, and a second node would be launched."""
    labels = {HOSTNAME: node.name, **node.metadata.labels}
    allocatable = node.allocatable
    taints = convert_taints(node.spec.taints)
    if claim is not None and not claim.initialized:
        labels = {**claim.metadata.labels, **labels}
        allocatable = allocatable or dict(claim.status.allocatable)
        passing = {(t.key, t.effect) for t in claim.spec.startup_taints}
        taints = tuple(
            t for t in taints if t.key not in EPHEMERAL_TAINT_KEYS and (t.key, t.effect) not in passing
        )
    return Node(
        name=node.name,
        labels=labels,
        allocatable=allocatable,
        taints=taints,
        pods=pods,
        node_pool=labels.get(NODEPOOL),
        unschedulable=node.spec.unschedulable,
    )


def claims_by_node(manifests: Manifests) -> dict[str, NodeClaim]:
    """Node name to the NodeClaim that launched it, matched by node name or provider ID."""
    by_provider = {c.status.provider_id: c for c in manifests.node_claims if c.status.provider_id}
    by_name = {c.status.node_name: c for c in manifests.node_claims if c.status.node_name}
    found = {}
    for node in manifests.nodes:
        claim = by_name.get(node.name) or by_provider.get(node.spec.provider_id or "")
        if claim is not None:
            found[node.name] = claim
    return found


def _launching(manifests: Manifests) -> list[NodeClaim]:
    """NodeClaims whose Node is not there yet."""
    names = {node.name for node in manifests.nodes}
    provider_ids = {node.spec.provider_id for node in manifests.nodes if node.spec.provider_id}
    return [
        claim
        for claim in manifests.node_claims
        if claim.status.node_name not in names and claim.status.provider_id not in provider_ids
    ]


def claims_on_the_way(
    manifests: Manifests,
    claims: Mapping[str, NodeClaim],
    instance_types: Mapping[str, InstanceType],
    awaited: Collection[str] = (),
) -> dict[str, tuple[str, Mapping[str, int]]]:
    """NodeClaim name to its node's name in the snapshot and that node's allocatable, for the claims
    that are not Initialized (or are ``awaited``) and not being deleted: launching ones are nodes named
    after the claim (their flavor's allocatable, as `in_flight` makes them), registered ones their Node."""
    found: dict[str, tuple[str, Mapping[str, int]]] = {}
    for claim in _launching(manifests):
        flavor = instance_types.get(claim.metadata.labels.get(INSTANCE_TYPE, ""))
        gone = claim.metadata.deletion_timestamp is not None or claim.status.node_name
        if not gone and flavor is not None:
            found[claim.name] = (claim.name, claim.status.allocatable or flavor.allocatable)
    nodes = {node.name: node for node in manifests.nodes}
    for node_name, claim in claims.items():
        if (not claim.initialized or claim.name in awaited) and claim.metadata.deletion_timestamp is None:
            found[claim.name] = (node_name, nodes[node_name].allocatable or claim.status.allocatable)
    return found


def take(room: dict[str, int], requests: Mapping[str, int]) -> bool:
    """Take ``requests`` out of ``room`` if they fit: a claim that launched a smaller fallback flavor
    takes back only the pods it has room for, the others are planned again."""
    if any(amount > room.get(name, 0) for name, amount in requests.items() if amount):
        return False
    for name, amount in requests.items():
        room[name] = room.get(name, 0) - amount
    return True


def in_flight(
    manifests: Manifests, instance_types: Mapping[str, InstanceType], bound: Mapping[str, list[Pod]]
) -> list[Node]:
    """Launching NodeClaims as nodes of their flavor, so pending pods can count on them (with the pods
    planned on them in ``bound``). Startup taints are left out: Karpenter expects them to go away. A
    claim being deleted is no capacity, though it counts against its NodePool's limits until it is gone
    (`pool_usage`); nor is a claim whose Node registered and then vanished (it names a `nodeName` no Node
    has): that node is not on its way, it is gone."""
    nodes = []
    for claim in _launching(manifests):
        if claim.metadata.deletion_timestamp is not None or claim.status.node_name:
            continue
        flavor = instance_types.get(claim.metadata.labels.get(INSTANCE_TYPE, ""))
        if flavor is None:
            continue
        labels = {**flavor.labels, HOSTNAME: claim.name, **claim.metadata.labels}
        nodes.append(
            Node(
                name=claim.name,
                labels=labels,
                allocatable=dict(claim.status.allocatable or flavor.allocatable),
                taints=convert_taints(claim.spec.taints),
                pods=tuple(bound.get(claim.name, ())),
                node_pool=labels.get(NODEPOOL),
            )
        )
    return nodes


def pool_usage(manifests: Manifests, instance_types: Mapping[str, InstanceType]) -> dict[str, dict[str, int]]:
    """What each NodePool's nodes and launching claims count against its limits: capacity, as Karpenter
    counts it, and one `nodes` (1000 milli-units) each."""
    usage: dict[str, dict[str, int]] = {}

    def add(pool: str | None, capacity: Mapping[str, int]) -> None:
        if pool is not None:
            total = usage.setdefault(pool, {})
            for name, amount in {**capacity, NODES: 1000}.items():
                total[name] = total.get(name, 0) + amount

    for node in manifests.nodes:
        add(node.metadata.labels.get(NODEPOOL), node.status.capacity or node.allocatable)
    for claim in _launching(manifests):
        flavor = instance_types.get(claim.metadata.labels.get(INSTANCE_TYPE, ""))
        add(claim.metadata.labels.get(NODEPOOL), claim.status.capacity or (flavor.capacity if flavor else {}))
    return usage
