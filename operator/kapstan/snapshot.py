"""Manifests in, the solver's `Snapshot` out: the one place where Kubernetes objects become plain data.

Pending pods are the workloads' pods (named `<workload>-<i>`) and the bare Pods not bound to a node, in
manifest order; bound Pods sit on their Nodes; in-flight NodeClaims become nodes of their flavor;
DaemonSets become per-node overhead; NodePools get their limits, their usage and the catalog's flavors.
Pod (anti-)affinity namespaces, namespace selectors and matchLabelKeys are resolved here, against the
pod's own labels and the namespaces' labels, so the solver only ever compares labels.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from kapstan.api import core
from kapstan.api.errors import ManifestError
from kapstan.api.karpenter import NODECLASS_GROUP, NODECLASS_KIND, NodeClaim
from kapstan.api.karpenter import NodePool as NodePoolObject
from kapstan.api.manifests import Manifests
from kapstan.api.wellknown import (
    NAMESPACE_NAME_LABEL,
    NETWORK_UNAVAILABLE_TAINT_KEY,
    NOT_READY_TAINT_KEY,
    UNINITIALIZED_TAINT_KEY,
    UNREACHABLE_TAINT_KEY,
    UNREGISTERED_TAINT_KEY,
)
from kapstan.catalog import Catalog, build_catalog, node_class_settings
from kapstan.catalog.catalog import SkipSource
from kapstan.scheduling.model import (
    HOSTNAME,
    INSTANCE_TYPE,
    NODEPOOL,
    PODS,
    DaemonSet,
    HostPort,
    InstanceType,
    LabelSelector,
    LabelSelectorRequirement,
    Node,
    NodePool,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PodAffinityTerm,
    PreferredNodeTerm,
    Snapshot,
    Taint,
    TaintEffect,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)
from kapstan.snapshot_bounds import check_pod_count, check_request_totals, saturated

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
_SELECTS_NOTHING = LabelSelector(match_expressions=(LabelSelectorRequirement("", "Exists"),))
"""No label has an empty key, so this matches no pod: what a missing labelSelector means."""
# The DaemonSet controller adds these so its pods run on nodes that are cordoned, not ready or under pressure.
_DAEMONSET_TAINTS: tuple[tuple[str, TaintEffect], ...] = (
    ("not-ready", "NoExecute"),
    ("unreachable", "NoExecute"),
    ("disk-pressure", "NoSchedule"),
    ("memory-pressure", "NoSchedule"),
    ("pid-pressure", "NoSchedule"),
    ("unschedulable", "NoSchedule"),
)
_DAEMONSET_TOLERATIONS = tuple(
    Toleration(key=f"node.kubernetes.io/{key}", operator="Exists", effect=effect)
    for key, effect in _DAEMONSET_TAINTS
)
_HOST_NETWORK_TOLERATION = Toleration(
    key=NETWORK_UNAVAILABLE_TAINT_KEY, operator="Exists", effect="NoSchedule"
)


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
) -> SimulationInput:
    """Everything the solver needs from the manifests; `cluster` = (namespace, name) limits the catalog,
    `skip` makes flavor sources that cannot be described drop out instead of raising (`build_catalog`).

    `planned_on` maps pending pods (namespace/name) to the NodeClaim an earlier plan put them on: while
    that claim is on its way (launching, or its Node not Initialized yet), such a pod is on it in the
    snapshot, as if bound, rather than pending. So the next batch plans only the pods that have no claim
    yet, into the room the in-flight claims have left, and never re-packs the pods of in-flight claims
    onto new ones (issue 14: re-planning them every batch launched 30% more nodes than one plan)."""
    catalog = build_catalog(manifests, cluster, skip=skip)
    instance_types = _instance_types(manifests, catalog)
    namespace_labels = _namespace_labels(manifests)
    claims = _claims_by_node(manifests)
    deleting = _deleting_nodes(manifests, claims)
    on_the_way = _on_the_way(manifests, claims, instance_types)
    room = {node: dict(allocatable) for node, allocatable in on_the_way.values()}
    pending: list[Pod] = []
    bound: dict[str, list[Pod]] = {}
    for pod in manifests.pods():
        if pod.finished or (not pod.spec.node_name and _owned_by_daemonset(pod)):
            continue
        if pod.spec.node_name in deleting:
            # Karpenter reschedules these at once rather than after their eviction.
            if _reschedulable(pod):
                pending.append(convert_pod(pod, namespace_labels))
            continue
        converted = convert_pod(pod, namespace_labels)
        claim_node, _ = on_the_way.get((planned_on or {}).get(converted.key, ""), ("", {}))
        if pod.spec.node_name:
            bound.setdefault(pod.spec.node_name, []).append(converted)
        elif claim_node and _take(room[claim_node], converted.requests):
            bound.setdefault(claim_node, []).append(converted)
        else:
            pending.append(converted)
    nodes = [
        _node(node, tuple(bound.get(node.name, ())), claims.get(node.name))
        for node in manifests.nodes
        if node.name not in deleting
    ]
    nodes += _in_flight(manifests, instance_types, bound)
    usage = _usage(manifests, instance_types)
    snapshot = Snapshot(
        pods=tuple(pending),
        instance_types=tuple(instance_types.values()),
        node_pools=tuple(
            _node_pool(pool, usage.get(pool.name, {}), catalog) for pool in manifests.node_pools
        ),
        nodes=tuple(nodes),
        daemonsets=tuple(_daemonset(ds, namespace_labels) for ds in manifests.daemonsets),
        namespace_labels=namespace_labels,
    )
    check_request_totals(snapshot)
    return SimulationInput(snapshot, catalog)


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


def _namespace_labels(manifests: Manifests) -> dict[str, dict[str, str]]:
    labels = {ns.name: {**ns.metadata.labels, NAMESPACE_NAME_LABEL: ns.name} for ns in manifests.namespaces}
    for obj in (*manifests.workloads, *manifests.daemonsets):
        labels.setdefault(obj.namespace, {NAMESPACE_NAME_LABEL: obj.namespace})
    return labels


def _owned_by_daemonset(pod: core.Pod) -> bool:
    # Pending DaemonSet pods are the DaemonSet's overhead on new nodes, not pods to provision for.
    return any(owner.kind == "DaemonSet" for owner in pod.metadata.owner_references)


def _deleting_nodes(manifests: Manifests, claims: Mapping[str, NodeClaim]) -> set[str]:
    """Nodes marked for deletion, themselves or through their NodeClaim: no capacity to count on
    (Karpenter's cluster state leaves them out of the active nodes)."""
    return {
        node.name
        for node in manifests.nodes
        if node.metadata.deletion_timestamp is not None
        or (node.name in claims and claims[node.name].metadata.deletion_timestamp is not None)
    }


def _reschedulable(pod: core.Pod) -> bool:
    """A pod that needs a new place when its node goes (Karpenter's `IsReschedulable`): not already
    terminating, not a DaemonSet's and not a static pod (those go with the node)."""
    owners = {owner.kind for owner in pod.metadata.owner_references}
    return pod.metadata.deletion_timestamp is None and not owners & {"DaemonSet", "Node"}


def convert_pod(pod: core.Pod, namespace_labels: Mapping[str, Mapping[str, str]]) -> Pod:
    """The solver's view of a pod: requests per kube-scheduler, constraints with namespaces and
    matchLabelKeys already resolved."""
    spec, labels, namespace = pod.spec, pod.metadata.labels, pod.namespace
    node_affinity = spec.affinity.node_affinity
    required_nodes = node_affinity.required_during_scheduling_ignored_during_execution
    pod_affinity, anti_affinity = spec.affinity.pod_affinity, spec.affinity.pod_anti_affinity

    def terms(items: Iterable[core.PodAffinityTerm], required: bool = False) -> tuple[PodAffinityTerm, ...]:
        resolved = (_affinity_term(t, namespace, labels, namespace_labels, required) for t in items)
        return tuple(term for term in resolved if term is not None)

    def weighted(items: Iterable[core.WeightedPodAffinityTerm]) -> tuple[WeightedPodAffinityTerm, ...]:
        return tuple(
            WeightedPodAffinityTerm(item.weight, term)
            for item in items
            for term in terms([item.pod_affinity_term])
        )

    return Pod(
        namespace=namespace,
        name=pod.name,
        requests={**spec.effective_requests(), PODS: 1000},
        labels=dict(labels),
        node_selector=dict(spec.node_selector),
        # An empty term would match every node here but matches none in Kubernetes: leave it out.
        required_terms=tuple(term for term in map(_node_term, required_nodes.node_selector_terms) if term)
        if required_nodes
        else (),
        preferred_terms=tuple(
            PreferredNodeTerm(p.weight, _node_term(p.preference))
            for p in node_affinity.preferred_during_scheduling_ignored_during_execution
        ),
        affinity=terms(pod_affinity.required_during_scheduling_ignored_during_execution, required=True),
        preferred_affinity=weighted(pod_affinity.preferred_during_scheduling_ignored_during_execution),
        anti_affinity=terms(anti_affinity.required_during_scheduling_ignored_during_execution),
        preferred_anti_affinity=weighted(anti_affinity.preferred_during_scheduling_ignored_during_execution),
        tolerations=tuple(Toleration(t.key, t.operator, t.value, t.effect) for t in spec.tolerations),
        spread=tuple(
            constraint
            for constraint in (_spread(c, labels) for c in spec.topology_spread_constraints)
            if constraint is not None
        ),
        host_ports=tuple(HostPort(p.host_port, p.protocol, p.host_ip) for p in spec.host_ports()),
    )


def _node_term(term: core.NodeSelectorTerm) -> NodeSelectorTerm:
    # matchFields only supports metadata.name; the node's hostname label stands for it.
    fields = (
        NodeSelectorRequirement(HOSTNAME, r.operator, tuple(r.values))
        for r in term.match_fields
        if r.key == "metadata.name"
    )
    return (
        *(NodeSelectorRequirement(r.key, r.operator, tuple(r.values)) for r in term.match_expressions),
        *fields,
    )


def _selector(
    selector: core.LabelSelector,
    labels: Mapping[str, str],
    match: Iterable[str] = (),
    mismatch: Iterable[str] = (),
) -> LabelSelector:
    """A selector with matchLabelKeys (In the pod's value) and mismatchLabelKeys (NotIn) folded in;
    keys the pod does not carry are ignored, as Kubernetes does."""
    expressions = [
        LabelSelectorRequirement(e.key, e.operator, tuple(e.values)) for e in selector.match_expressions
    ]
    expressions += [LabelSelectorRequirement(k, "In", (labels[k],)) for k in match if k in labels]
    expressions += [LabelSelectorRequirement(k, "NotIn", (labels[k],)) for k in mismatch if k in labels]
    return LabelSelector(tuple(sorted(selector.match_labels.items())), tuple(expressions))


def _affinity_term(
    term: core.PodAffinityTerm,
    namespace: str,
    labels: Mapping[str, str],
    namespace_labels: Mapping[str, Mapping[str, str]],
    required_affinity: bool,
) -> PodAffinityTerm | None:
    """A resolved term. A term without labelSelector selects no pod: harmless for anti-affinity and
    preferences (dropped), unsatisfiable for required affinity (kept, selecting nothing)."""
    if term.label_selector is None:
        if not required_affinity:
            return None
        selector = _SELECTS_NOTHING
    else:
        selector = _selector(term.label_selector, labels, term.match_label_keys, term.mismatch_label_keys)
    namespaces = set(term.namespaces)
    ns_selector = term.namespace_selector
    all_namespaces = ns_selector is not None and not (
        ns_selector.match_labels or ns_selector.match_expressions
    )
    if ns_selector is not None and not all_namespaces:
        resolved = _selector(ns_selector, {})
        namespaces.update(name for name, ns_labels in namespace_labels.items() if resolved.matches(ns_labels))
    if not term.namespaces and ns_selector is None:
        namespaces = {namespace}
    return PodAffinityTerm(selector, term.topology_key, tuple(sorted(namespaces)), all_namespaces)


def _spread(
    constraint: core.TopologySpreadConstraint, labels: Mapping[str, str]
) -> TopologySpreadConstraint | None:
    # Without a labelSelector the constraint counts no pods, so it never limits anything.
    if constraint.label_selector is None:
        return None
    return TopologySpreadConstraint(
        max_skew=constraint.max_skew,
        topology_key=constraint.topology_key,
        when_unsatisfiable=constraint.when_unsatisfiable,
        selector=_selector(constraint.label_selector, labels, constraint.match_label_keys),
        min_domains=constraint.min_domains or 1,
        node_affinity_policy=constraint.node_affinity_policy,
        node_taints_policy=constraint.node_taints_policy,
    )


def _taints(taints: Iterable[core.Taint]) -> tuple[Taint, ...]:
    return tuple(Taint(t.key, t.effect, t.value) for t in taints)


def _node(node: core.Node, pods: tuple[Pod, ...], claim: NodeClaim | None) -> Node:
    """A Node as the solver sees it. Until its NodeClaim is Initialized, a node is what its claim says
    (Karpenter's rule): the claim's labels and allocatable fill what the kubelet has not reported yet,
    and the taints that registration and start-up remove do not count. Otherwise pods pending for a
    node that has just joined would look unable to use it, and a second node would be launched."""
    labels = {HOSTNAME: node.name, **node.metadata.labels}
    allocatable = node.allocatable
    taints = _taints(node.spec.taints)
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


def _claims_by_node(manifests: Manifests) -> dict[str, NodeClaim]:
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


def _on_the_way(
    manifests: Manifests, claims: Mapping[str, NodeClaim], instance_types: Mapping[str, InstanceType]
) -> dict[str, tuple[str, Mapping[str, int]]]:
    """NodeClaim name to its node's name in the snapshot and that node's allocatable, for the claims
    that are not Initialized and not being deleted: launching ones are nodes named after the claim
    (their flavor's allocatable, as `_in_flight` makes them), registered ones their Node."""
    found: dict[str, tuple[str, Mapping[str, int]]] = {}
    for claim in _launching(manifests):
        flavor = instance_types.get(claim.metadata.labels.get(INSTANCE_TYPE, ""))
        gone = claim.metadata.deletion_timestamp is not None or claim.status.node_name
        if not gone and flavor is not None:
            found[claim.name] = (claim.name, claim.status.allocatable or flavor.allocatable)
    nodes = {node.name: node for node in manifests.nodes}
    for node_name, claim in claims.items():
        if not claim.initialized and claim.metadata.deletion_timestamp is None:
            found[claim.name] = (node_name, nodes[node_name].allocatable or claim.status.allocatable)
    return found


def _take(room: dict[str, int], requests: Mapping[str, int]) -> bool:
    """Take ``requests`` out of ``room`` if they fit: a claim that launched a smaller fallback flavor
    takes back only the pods it has room for, the others are planned again."""
    if any(amount > room.get(name, 0) for name, amount in requests.items() if amount):
        return False
    for name, amount in requests.items():
        room[name] = room.get(name, 0) - amount
    return True


def _in_flight(
    manifests: Manifests, instance_types: Mapping[str, InstanceType], bound: Mapping[str, list[Pod]]
) -> list[Node]:
    """Launching NodeClaims as nodes of their flavor, so pending pods can count on them (with the pods
    planned on them in ``bound``). Startup taints are left out: Karpenter expects them to go away. A
    claim being deleted is no capacity, though it counts against its NodePool's limits until it is gone
    (`_usage`); nor is a claim whose Node registered and then vanished (it names a `nodeName` no Node
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
                taints=_taints(claim.spec.taints),
                pods=tuple(bound.get(claim.name, ())),
                node_pool=labels.get(NODEPOOL),
            )
        )
    return nodes


def _usage(manifests: Manifests, instance_types: Mapping[str, InstanceType]) -> dict[str, dict[str, int]]:
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


def _node_pool(pool: NodePoolObject, usage: Mapping[str, int], catalog: Catalog) -> NodePool:
    template = pool.spec.template
    return NodePool(
        name=pool.name,
        requirements=tuple(
            NodeSelectorRequirement(r.key, r.operator, tuple(r.values), r.min_values)
            for r in template.spec.requirements
        ),
        labels=dict(template.metadata.labels),
        taints=_taints(template.spec.taints),
        startup_taints=_taints(template.spec.startup_taints),
        weight=pool.spec.weight or 0,
        limits=dict(pool.spec.limits),
        usage=saturated(dict(usage)),
        instance_types=catalog.names,
    )


def _daemonset(daemonset: core.DaemonSet, namespace_labels: Mapping[str, Mapping[str, str]]) -> DaemonSet:
    pod = convert_pod(daemonset.pod(), namespace_labels)
    extra = (
        *_DAEMONSET_TOLERATIONS,
        *((_HOST_NETWORK_TOLERATION,) if daemonset.spec.template.spec.host_network else ()),
    )
    return DaemonSet(
        f"{daemonset.namespace}/{daemonset.name}", replace(pod, tolerations=(*pod.tolerations, *extra))
    )
