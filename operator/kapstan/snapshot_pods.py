"""Pods and DaemonSets as the solver sees them (``kapstan.snapshot``'s conversion of workloads).

Requests per kube-scheduler; node affinity and tolerations as they are; pod (anti-)affinity namespaces,
namespace selectors and matchLabelKeys resolved here, against the pod's own labels and the namespaces'
labels, so the solver only ever compares labels. A DaemonSet is its pod template plus the tolerations the
DaemonSet controller adds to its pods.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from kapstan.api import core, placement
from kapstan.api.manifests import Manifests
from kapstan.api.wellknown import NAMESPACE_NAME_LABEL, NETWORK_UNAVAILABLE_TAINT_KEY
from kapstan.scheduling.model import (
    HOSTNAME,
    PODS,
    DaemonSet,
    HostPort,
    LabelSelector,
    LabelSelectorRequirement,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Pod,
    PodAffinityTerm,
    PreferredNodeTerm,
    TaintEffect,
    Toleration,
    TopologySpreadConstraint,
    WeightedPodAffinityTerm,
)

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


def labels_of_namespaces(manifests: Manifests) -> dict[str, dict[str, str]]:
    labels = {ns.name: {**ns.metadata.labels, NAMESPACE_NAME_LABEL: ns.name} for ns in manifests.namespaces}
    for obj in (*manifests.workloads, *manifests.daemonsets):
        labels.setdefault(obj.namespace, {NAMESPACE_NAME_LABEL: obj.namespace})
    return labels


def owned_by_daemonset(pod: core.Pod) -> bool:
    # Pending DaemonSet pods are the DaemonSet's overhead on new nodes, not pods to provision for.
    return any(owner.kind == "DaemonSet" for owner in pod.metadata.owner_references)


def reschedulable(pod: core.Pod) -> bool:
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

    def terms(
        items: Iterable[placement.PodAffinityTerm], required: bool = False
    ) -> tuple[PodAffinityTerm, ...]:
        resolved = (_affinity_term(t, namespace, labels, namespace_labels, required) for t in items)
        return tuple(term for term in resolved if term is not None)

    def weighted(items: Iterable[placement.WeightedPodAffinityTerm]) -> tuple[WeightedPodAffinityTerm, ...]:
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
        terminating=bool(spec.node_name) and pod.metadata.deletion_timestamp is not None,
    )


def _node_term(term: placement.NodeSelectorTerm) -> NodeSelectorTerm:
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
    selector: placement.LabelSelector,
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
    term: placement.PodAffinityTerm,
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
    constraint: placement.TopologySpreadConstraint, labels: Mapping[str, str]
) -> TopologySpreadConstraint | None:
    # Without a labelSelector the constraint counts no pods, so it never limits anything.
    if constraint.label_selector is None:
        return None
    selector = _selector(constraint.label_selector, labels, constraint.match_label_keys)
    if not selector.match_labels and not selector.match_expressions:
        # An empty selector ({}, no matchLabelKeys the pod carries) counts no pod in kube-scheduler
        # (countPodsMatchSelector), though as a selector it would match every pod: the skew is then
        # never past maxSkew, and only the topology key on the node still matters.
        selector = _SELECTS_NOTHING
    return TopologySpreadConstraint(
        max_skew=constraint.max_skew,
        topology_key=constraint.topology_key,
        when_unsatisfiable=constraint.when_unsatisfiable,
        selector=selector,
        min_domains=constraint.min_domains or 1,
        node_affinity_policy=constraint.node_affinity_policy,
        node_taints_policy=constraint.node_taints_policy,
    )


def convert_daemonset(
    daemonset: core.DaemonSet, namespace_labels: Mapping[str, Mapping[str, str]]
) -> DaemonSet:
    pod = convert_pod(daemonset.pod(), namespace_labels)
    extra = (
        *_DAEMONSET_TOLERATIONS,
        *((_HOST_NETWORK_TOLERATION,) if daemonset.spec.template.spec.host_network else ()),
    )
    return DaemonSet(
        f"{daemonset.namespace}/{daemonset.name}", replace(pod, tolerations=(*pod.tolerations, *extra))
    )
