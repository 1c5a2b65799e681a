"""Manifests in, the solver's `Snapshot` out: the one place where Kubernetes objects become plain data.

Pending pods are the workloads' pods (named `<workload>-<i>`) and the bare Pods not bound to a node, in
manifest order; bound Pods sit on their Nodes; the pods of a node being deleted are pending again, but for
those kube-scheduler still counts where they are for a pending pod's hard constraints (`snapshot_leaving`); in-flight NodeClaims become nodes of their flavor;
DaemonSets become per-node overhead, and room set aside on the nodes that do not run their pod yet;
NodePools get their limits, their usage and the catalog's flavors. This is the entry point; how pods are
converted is `snapshot_pods`, how nodes and in-flight claims are `snapshot_nodes`, the DaemonSets' room
on those nodes `snapshot_daemons`, and the bounds that keep the engines exact `snapshot_bounds`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, replace

from kapstan.api import core
from kapstan.api.errors import ManifestError
from kapstan.api.karpenter import NODECLASS_GROUP, NODECLASS_KIND
from kapstan.api.karpenter import NodePool as NodePoolObject
from kapstan.api.manifests import Manifests
from kapstan.catalog import Catalog, build_catalog, node_class_settings
from kapstan.catalog.catalog import SkipSource
from kapstan.scheduling.model import InstanceType, NodePool, NodeSelectorRequirement, Pod, Snapshot
from kapstan.snapshot_bounds import check_pod_count, check_request_totals, saturated
from kapstan.snapshot_daemons import daemonsets_by_node, reserve_daemonset_room
from kapstan.snapshot_leaving import counted_until_evicted
from kapstan.snapshot_nodes import (
    claims_by_node,
    claims_on_the_way,
    convert_node,
    convert_taints,
    deleting_nodes,
    in_flight,
    pool_usage,
    take,
)
from kapstan.snapshot_pods import convert_daemonset, labels_of_namespaces, owned_by_daemonset, reschedulable

# Re-exported (``X as X``): the Karpenter suite converts single pods through the entry point.
from kapstan.snapshot_pods import convert_pod as convert_pod


@dataclass(frozen=True)
class SimulationInput:
    """The snapshot and the catalog it was built from (the provider needs the catalog's sources)."""

    snapshot: Snapshot
    catalog: Catalog


def build_snapshot(manifests: Manifests) -> Snapshot:
    """What `kapstan simulate` solves: workloads are expanded into pods, so their number is bounded."""
    check_pod_count(manifests.workloads)
    return build_simulation_input(manifests).snapshot


def build_simulation_input(
    manifests: Manifests,
    cluster: tuple[str, str] | None = None,
    *,
    skip: SkipSource | None = None,
    planned_on: Mapping[str, str] | None = None,
    refused: Mapping[str, Iterable[str]] | None = None,
    awaited: Collection[str] = (),
) -> SimulationInput:
    """Everything the solver needs from the manifests; `cluster` = (namespace, name) limits the catalog,
    `skip` makes flavor sources that cannot be described drop out instead of raising (`build_catalog`).

    `planned_on` maps pending pods (namespace/name) to the NodeClaim an earlier plan put them on: while
    that claim is on its way (launching, or its Node not Initialized yet), such a pod is on it in the
    snapshot, as if bound, rather than pending. So the next batch plans only the pods that have no claim
    yet, into the room the in-flight claims have left, and never re-packs the pods of in-flight claims
    onto new ones (issue 14: re-planning them every batch launched 30% more nodes than one plan).

    `refused` maps pending pods to the Nodes kube-scheduler would not bind them to though a plan put
    them there (``controllers/scheduler_refusals.py``): those nodes are planned as having no room for them.
    `awaited` names Initialized claims whose planned pods are kept on them the same way as `planned_on`,
    in the room the pods bound there left: kube-scheduler is still placing them (the provisioner's
    ``replans``)."""
    catalog = build_catalog(manifests, cluster, skip=skip)
    instance_types = _instance_types(manifests, catalog)
    namespace_labels = labels_of_namespaces(manifests)
    claims = claims_by_node(manifests)
    deleting = deleting_nodes(manifests, claims)
    on_the_way = claims_on_the_way(manifests, claims, instance_types, awaited)
    daemonsets = tuple(convert_daemonset(ds, namespace_labels) for ds in manifests.daemonsets)
    pods = manifests.pods()
    staying = _counted_until_evicted(pods, deleting, namespace_labels)
    # The nodes without their pods first: what their DaemonSets will take is not room for pending pods.
    shells = reserve_daemonset_room(
        [
            *(
                convert_node(node, (), claims.get(node.name))
                for node in manifests.nodes
                if node.name not in deleting
            ),
            *in_flight(manifests, instance_types, {}),
        ],
        daemonsets,
        daemonsets_by_node(pods),
    )
    # A deleting node that still holds pods kube-scheduler counts is kept, with no room (snapshot_leaving).
    shells += [
        replace(convert_node(node, (), claims.get(node.name)), allocatable={})
        for node in manifests.nodes
        if node.name in deleting and node.name in staying.values()
    ]
    allocatable_of = {node.name: node.allocatable for node in shells}
    room = {node: dict(allocatable_of.get(node, allocatable)) for node, allocatable in on_the_way.values()}
    for pod in pods:  # what is bound there already (an awaited node's pods, a registered one's agents)
        if pod.spec.node_name in room and not pod.finished:
            take(room[pod.spec.node_name], convert_pod(pod, namespace_labels).requests)
    pending: list[Pod] = []
    bound: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.finished or (not pod.spec.node_name and owned_by_daemonset(pod)):
            continue
        if pod.spec.node_name in deleting and id(pod) not in staying:
            # Karpenter reschedules these at once rather than after their eviction.
            if reschedulable(pod):
                pending.append(convert_pod(pod, namespace_labels))
            continue
        converted = convert_pod(pod, namespace_labels)
        claim_node, _ = on_the_way.get((planned_on or {}).get(converted.key, ""), ("", {}))
        if pod.spec.node_name:
            bound.setdefault(pod.spec.node_name, []).append(converted)
        elif claim_node and take(room[claim_node], converted.requests):
            bound.setdefault(claim_node, []).append(converted)
        else:
            pending.append(converted)
    turned_away = _refused_by_node(refused or {})
    nodes = [
        replace(node, pods=tuple(bound.get(node.name, ())), refused=turned_away.get(node.name, ()))
        for node in shells
    ]
    usage = pool_usage(manifests, instance_types)
    snapshot = Snapshot(
        pods=tuple(pending),
        instance_types=tuple(instance_types.values()),
        node_pools=tuple(
            _node_pool(pool, usage.get(pool.name, {}), catalog) for pool in manifests.node_pools
        ),
        nodes=tuple(nodes),
        daemonsets=daemonsets,
        namespace_labels=namespace_labels,
    )
    check_request_totals(snapshot)
    return SimulationInput(snapshot, catalog)


def _counted_until_evicted(
    pods: list[core.Pod], deleting: set[str], namespace_labels: Mapping[str, Mapping[str, str]]
) -> dict[int, str]:
    """The pods of deleting nodes that stay where they are in the snapshot (``snapshot_leaving``), by
    ``id``, to their node's name; converted only when some node is being deleted, the rare case."""
    if not deleting:
        return {}
    leaving = {
        id(pod): pod
        for pod in pods
        if pod.spec.node_name in deleting and not pod.finished and pod.metadata.deletion_timestamp is None
    }
    if not leaving:
        return {}
    unbound = [
        convert_pod(pod, namespace_labels)
        for pod in pods
        if not pod.spec.node_name and not pod.finished and not owned_by_daemonset(pod)
    ]
    converted = {key: convert_pod(pod, namespace_labels) for key, pod in leaving.items()}
    kept = counted_until_evicted(converted.values(), unbound)
    return {key: str(pod.spec.node_name) for key, pod in leaving.items() if converted[key].key in kept}


def _refused_by_node(refused: Mapping[str, Iterable[str]]) -> dict[str, tuple[str, ...]]:
    by_node: dict[str, set[str]] = {}
    for pod, nodes in refused.items():
        for node in nodes:
            by_node.setdefault(node, set()).add(pod)
    return {node: tuple(sorted(pods)) for node, pods in by_node.items()}


def _instance_types(manifests: Manifests, catalog: Catalog) -> dict[str, InstanceType]:
    """The catalog under the NodePools' NodeClasses. The snapshot holds one set of instance types, so
    NodeClasses that reserve or price a flavor differently cannot be mixed (yet)."""
    classes = {node_class.name: node_class for node_class in manifests.node_classes}
    chosen: dict[str, InstanceType] = {}
    chosen_by: dict[str, str] = {}
    for pool in manifests.node_pools:
        ref = pool.spec.template.spec.node_class_ref
        field = "spec.template.spec.nodeClassRef"
        if (ref.group, ref.kind) != (NODECLASS_GROUP, NODECLASS_KIND):
            raise ManifestError(
                pool.ref,
                field,
                f"unsupported node class {ref.kind}.{ref.group} "
                f"(expected {NODECLASS_KIND}.{NODECLASS_GROUP})",
            )
        node_class = classes.get(ref.name)
        if node_class is None:
            raise ManifestError(pool.ref, field, f'{NODECLASS_KIND} "{ref.name}" not found')
        for instance_type in catalog.instance_types(node_class_settings(node_class, manifests.config_maps)):
            known = chosen.setdefault(instance_type.name, instance_type)
            if known != instance_type:
                raise ManifestError(
                    pool.ref,
                    field,
                    f'{NODECLASS_KIND} "{ref.name}" gives flavor '
                    f'"{instance_type.name}" another allocatable or price than '
                    f'{NODECLASS_KIND} "{chosen_by[instance_type.name]}"',
                )
            chosen_by.setdefault(instance_type.name, ref.name)
    if not manifests.node_pools:
        chosen = {instance_type.name: instance_type for instance_type in catalog.instance_types()}
    return chosen


def _node_pool(pool: NodePoolObject, usage: Mapping[str, int], catalog: Catalog) -> NodePool:
    template = pool.spec.template
    return NodePool(
        name=pool.name,
        requirements=tuple(
            NodeSelectorRequirement(r.key, r.operator, tuple(r.values), r.min_values)
            for r in template.spec.requirements
        ),
        labels=dict(template.metadata.labels),
        taints=convert_taints(template.spec.taints),
        startup_taints=convert_taints(template.spec.startup_taints),
        weight=pool.spec.weight or 0,
        limits=dict(pool.spec.limits),
        usage=saturated(dict(usage)),
        instance_types=catalog.names,
    )
