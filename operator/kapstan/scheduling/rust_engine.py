"""The Rust engine: the snapshot goes to `kapstan._core` as JSON once, the plan comes back as JSON.

Maps whose order matters (a pod's requests, labels) travel as lists of pairs, so the Rust side sees
them in the same order the Python engine does and words its reasons identically.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from kapstan import _core
from kapstan.scheduling.model import (
    DaemonSet,
    HostPort,
    InstanceType,
    LabelSelector,
    Node,
    NodePool,
    NodeSelectorRequirement,
    Plan,
    PlannedNodeClaim,
    Pod,
    PodAffinityTerm,
    Snapshot,
    Taint,
    Toleration,
    TopologySpreadConstraint,
)

ENGINE = "rust"


def _pairs(mapping: Mapping[str, Any]) -> list[list[Any]]:
    return [[key, value] for key, value in mapping.items()]


def _requirement(req: NodeSelectorRequirement) -> dict[str, Any]:
    return {
        "key": req.key,
        "operator": req.operator,
        "values": list(req.values),
        "min_values": req.min_values,
    }


def _selector(selector: LabelSelector) -> dict[str, Any]:
    return {
        "match_labels": [list(pair) for pair in selector.match_labels],
        "match_expressions": [
            {"key": e.key, "operator": e.operator, "values": list(e.values)}
            for e in selector.match_expressions
        ],
    }


def _term(term: PodAffinityTerm) -> dict[str, Any]:
    return {
        "selector": _selector(term.selector),
        "topology_key": term.topology_key,
        "namespaces": list(term.namespaces),
        "all_namespaces": term.all_namespaces,
    }


def _taint(taint: Taint) -> dict[str, Any]:
    return {"key": taint.key, "effect": taint.effect, "value": taint.value}


def _toleration(toleration: Toleration) -> dict[str, Any]:
    return {
        "key": toleration.key,
        "operator": toleration.operator,
        "value": toleration.value,
        "effect": toleration.effect,
    }


def _spread(constraint: TopologySpreadConstraint) -> dict[str, Any]:
    return {
        "max_skew": constraint.max_skew,
        "topology_key": constraint.topology_key,
        "when_unsatisfiable": constraint.when_unsatisfiable,
        "selector": _selector(constraint.selector),
        "min_domains": constraint.min_domains,
        "node_affinity_policy": constraint.node_affinity_policy,
        "node_taints_policy": constraint.node_taints_policy,
    }


def _port(port: HostPort) -> dict[str, Any]:
    return {"port": port.port, "protocol": port.protocol, "host_ip": port.host_ip}


def _pod(pod: Pod) -> dict[str, Any]:
    return {
        "namespace": pod.namespace,
        "name": pod.name,
        "requests": _pairs(pod.requests),
        "labels": _pairs(pod.labels),
        "node_selector": _pairs(pod.node_selector),
        "required_terms": [[_requirement(r) for r in term] for term in pod.required_terms],
        "preferred_terms": [
            {"weight": p.weight, "term": [_requirement(r) for r in p.term]} for p in pod.preferred_terms
        ],
        "affinity": [_term(t) for t in pod.affinity],
        "preferred_affinity": [{"weight": w.weight, "term": _term(w.term)} for w in pod.preferred_affinity],
        "anti_affinity": [_term(t) for t in pod.anti_affinity],
        "preferred_anti_affinity": [
            {"weight": w.weight, "term": _term(w.term)} for w in pod.preferred_anti_affinity
        ],
        "tolerations": [_toleration(t) for t in pod.tolerations],
        "spread": [_spread(c) for c in pod.spread],
        "host_ports": [_port(p) for p in pod.host_ports],
    }


def _instance_type(it: InstanceType) -> dict[str, Any]:
    return {
        "name": it.name,
        "capacity": _pairs(it.capacity),
        "allocatable": _pairs(it.allocatable),
        "offerings": [
            {"zone": o.zone, "capacity_type": o.capacity_type, "price": o.price, "available": o.available}
            for o in it.offerings
        ],
        "labels": _pairs(it.labels),
        "taints": [_taint(t) for t in it.taints],
    }


def _node_pool(pool: NodePool) -> dict[str, Any]:
    return {
        "name": pool.name,
        "requirements": [_requirement(r) for r in pool.requirements],
        "labels": _pairs(pool.labels),
        "taints": [_taint(t) for t in pool.taints],
        "weight": pool.weight,
        "limits": _pairs(pool.limits),
        "usage": _pairs(pool.usage),
        "instance_types": None if pool.instance_types is None else list(pool.instance_types),
    }


def _node(node: Node) -> dict[str, Any]:
    return {
        "name": node.name,
        "labels": _pairs(node.labels),
        "allocatable": _pairs(node.allocatable),
        "taints": [_taint(t) for t in node.taints],
        "pods": [_pod(p) for p in node.pods],
        "unschedulable": node.unschedulable,
    }


def _daemonset(ds: DaemonSet) -> dict[str, Any]:
    return {"name": ds.name, "pod": _pod(ds.pod)}


def encode(snapshot: Snapshot) -> str:
    return json.dumps(
        {
            "pods": [_pod(p) for p in snapshot.pods],
            "instance_types": [_instance_type(it) for it in snapshot.instance_types],
            "node_pools": [_node_pool(p) for p in snapshot.node_pools],
            "nodes": [_node(n) for n in snapshot.nodes],
            "daemonsets": [_daemonset(d) for d in snapshot.daemonsets],
        },
        separators=(",", ":"),
    )


def decode(text: str, seconds: float) -> Plan:
    raw = json.loads(text)
    claims = tuple(
        PlannedNodeClaim(
            node_pool=c["node_pool"],
            instance_type=c["instance_type"],
            zone=c["zone"],
            capacity_type=c["capacity_type"],
            price_per_hour=c["price_per_hour"],
            pods=tuple(c["pods"]),
            labels=dict(c["labels"]),
        )
        for c in raw["node_claims"]
    )
    existing = {name: tuple(pods) for name, pods in raw["existing_nodes"]}
    unschedulable = dict(raw["unschedulable"])
    return Plan(ENGINE, claims, existing, unschedulable, seconds)


def solve(snapshot: Snapshot) -> Plan:
    started = time.perf_counter()
    plan_json = _core.solve_json(encode(snapshot))
    return decode(plan_json, time.perf_counter() - started)
