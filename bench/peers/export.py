"""A kapstan `Snapshot` as the Kubernetes and Karpenter objects Karpenter's scheduler takes.

The Go peer reads ordinary Pod and NodePool JSON, so this is the one place that knows how the scheduling
model maps back onto the API: milli-units back to quantities, terms back to affinity stanzas.

Karpenter's instance types carry no taints (taints live on NodePools), so a kapstan NodePool whose flavors
differ in taints (the CAPI catalog's tainted GPU flavor) becomes one Karpenter NodePool per taint set, with
those taints in its template and only those flavors: how a Karpenter user would write it. `pool_of` maps
each back.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kapstan.scheduling.model import (
    CPU,
    PODS,
    InstanceType,
    LabelSelector,
    NodePool,
    NodeSelectorRequirement,
    Pod,
    PodAffinityTerm,
    Snapshot,
    Taint,
    Toleration,
)

Json = dict[str, Any]


@dataclass(frozen=True)
class Export:
    workload: Json
    pool_of: dict[str, str]
    """Karpenter NodePool name to the kapstan NodePool it came from."""


def quantity(resource: str, milli: int) -> str:
    """A milli-unit amount as a Kubernetes quantity: CPU stays in millicores, the rest whole units."""
    if resource == CPU:
        return f"{milli}m"
    whole, rest = divmod(milli, 1000)
    return str(whole) if rest == 0 else f"{milli}m"


def resources(amounts: Mapping[str, int], skip: Iterable[str] = ()) -> dict[str, str]:
    return {k: quantity(k, v) for k, v in sorted(amounts.items()) if k not in skip}


def _requirement(r: NodeSelectorRequirement) -> Json:
    out: Json = {"key": r.key, "operator": r.operator}
    if r.values:
        out["values"] = list(r.values)
    if r.min_values is not None:
        out["minValues"] = r.min_values
    return out


def _selector(s: LabelSelector) -> Json:
    out: Json = {}
    if s.match_labels:
        out["matchLabels"] = dict(s.match_labels)
    if s.match_expressions:
        out["matchExpressions"] = [
            {"key": e.key, "operator": e.operator, **({"values": list(e.values)} if e.values else {})}
            for e in s.match_expressions
        ]
    return out


def _term(t: PodAffinityTerm) -> Json:
    out: Json = {"labelSelector": _selector(t.selector), "topologyKey": t.topology_key}
    if t.all_namespaces:
        out["namespaceSelector"] = {}
    else:
        out["namespaces"] = list(t.namespaces)
    return out


def _toleration(t: Toleration) -> Json:
    out: Json = {"operator": t.operator}
    for field in ("key", "value", "effect"):
        if getattr(t, field):
            out[field] = getattr(t, field)
    return out


def _taint(t: Taint) -> Json:
    return {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})}


def _affinity(pod: Pod) -> Json:
    affinity: Json = {}
    node: Json = {}
    if pod.required_terms:
        node["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": [
                {"matchExpressions": [_requirement(r) for r in t]} for t in pod.required_terms
            ]
        }
    if pod.preferred_terms:
        node["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": p.weight, "preference": {"matchExpressions": [_requirement(r) for r in p.term]}}
            for p in pod.preferred_terms
        ]
    if node:
        affinity["nodeAffinity"] = node
    for name, required, preferred in (
        ("podAffinity", pod.affinity, pod.preferred_affinity),
        ("podAntiAffinity", pod.anti_affinity, pod.preferred_anti_affinity),
    ):
        stanza: Json = {}
        if required:
            stanza["requiredDuringSchedulingIgnoredDuringExecution"] = [_term(t) for t in required]
        if preferred:
            stanza["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": w.weight, "podAffinityTerm": _term(w.term)} for w in preferred
            ]
        if stanza:
            affinity[name] = stanza
    return affinity


def pod_json(pod: Pod) -> Json:
    """The pod as one container holding all its requests (the model already folded init containers,
    sidecars and overhead into them). The `pods` slot is left out: Karpenter counts one per pod itself."""
    container: Json = {"name": "main", "resources": {"requests": resources(pod.requests, skip=(PODS,))}}
    if pod.host_ports:
        container["ports"] = [
            {"containerPort": hp.port, "hostPort": hp.port, "protocol": hp.protocol, "hostIP": hp.host_ip}
            for hp in pod.host_ports
        ]
    spec: Json = {"containers": [container]}
    if pod.node_selector:
        spec["nodeSelector"] = dict(pod.node_selector)
    affinity = _affinity(pod)
    if affinity:
        spec["affinity"] = affinity
    if pod.tolerations:
        spec["tolerations"] = [_toleration(t) for t in pod.tolerations]
    if pod.spread:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": c.max_skew,
                "topologyKey": c.topology_key,
                "whenUnsatisfiable": c.when_unsatisfiable,
                "labelSelector": _selector(c.selector),
                **({"minDomains": c.min_domains} if c.min_domains > 1 else {}),
                "nodeAffinityPolicy": c.node_affinity_policy,
                "nodeTaintsPolicy": c.node_taints_policy,
            }
            for c in pod.spread
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": pod.namespace, "name": pod.name, "labels": dict(pod.labels)},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def flavor_json(it: InstanceType) -> Json:
    return {
        "name": it.name,
        "capacity": resources(it.capacity),
        "allocatable": resources(it.allocatable),
        "labels": dict(it.labels),
        "offerings": [
            {"zone": o.zone, "capacityType": o.capacity_type, "price": o.price, "available": o.available}
            for o in it.offerings
        ],
    }


def _slug(taints: tuple[Taint, ...]) -> str:
    return "-".join(re.sub(r"[^a-z0-9]+", "-", t.key.lower()).strip("-") for t in taints)


def node_pool_json(pool: NodePool, name: str, flavor_taints: tuple[Taint, ...]) -> Json:
    template: Json = {
        "requirements": [_requirement(r) for r in pool.requirements],
        # Karpenter's scheduler never resolves the class; the reference only has to be well formed.
        "nodeClassRef": {
            "group": "karpenter.cluster.x-k8s.io",
            "kind": "ClusterAPINodeClass",
            "name": "bench",
        },
    }
    taints = (*pool.taints, *flavor_taints)
    if taints:
        template["taints"] = [_taint(t) for t in taints]
    if pool.startup_taints:
        template["startupTaints"] = [_taint(t) for t in pool.startup_taints]
    spec: Json = {"template": {"metadata": {"labels": dict(pool.labels)}, "spec": template}}
    if pool.weight:
        spec["weight"] = pool.weight
    limits = {k: v for k, v in pool.limits.items() if k != "nodes"}
    if limits:
        spec["limits"] = resources(limits)
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": name}, "spec": spec}


def export(snapshot: Snapshot, name: str) -> Export:
    if snapshot.nodes:
        raise ValueError("the peers start from an empty cluster; this snapshot has existing nodes")
    pools: list[Json] = []
    pool_flavors: dict[str, list[str]] = {}
    pool_of: dict[str, str] = {}
    for pool in snapshot.node_pools:
        allowed = [
            it
            for it in snapshot.instance_types
            if pool.instance_types is None or it.name in pool.instance_types
        ]
        by_taints: dict[tuple[Taint, ...], list[str]] = {}
        for it in allowed:
            by_taints.setdefault(it.taints, []).append(it.name)
        for taints, names in by_taints.items():
            karpenter_name = pool.name if not taints else f"{pool.name}-{_slug(taints)}"
            pools.append(node_pool_json(pool, karpenter_name, taints))
            pool_flavors[karpenter_name] = names
            pool_of[karpenter_name] = pool.name
    workload = {
        "name": name,
        "pods": [pod_json(p) for p in snapshot.pods],
        "daemonSetPods": [pod_json(ds.pod) for ds in snapshot.daemonsets],
        "nodePools": pools,
        "poolFlavors": pool_flavors,
        "flavors": [flavor_json(it) for it in snapshot.instance_types],
    }
    return Export(workload, pool_of)
