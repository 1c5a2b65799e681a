//! Builders of solver snapshots for cargo tests, shared so that every test module writes the same JSON
//! the Python side sends (`kapstan.scheduling.rust_engine`) instead of its own copy of it.
//!
//! Each builder returns a `serde_json::Value` with every field the model requires; a test overrides one
//! field in place (`pod["node_selector"] = json!(...)`) before `snapshot` parses it. `json!` objects are
//! sorted by key, so a map whose order matters (requests, labels) is given as `[[key, value], ...]`
//! pairs when the sorted order is not the one wanted; `model::ordered` reads both.

use serde_json::{json, Value};

use super::model::Snapshot;

/// 64 GiB in the snapshot's milli-units: more memory than any test pod set asks of one node.
const AMPLE_MEMORY: i64 = 68_719_476_736_000;
/// 256 MiB in milli-units: a pod's memory request, small beside `AMPLE_MEMORY`.
const POD_MEMORY: i64 = 268_435_456_000;
/// 110 pods, the kubelet's default, in milli-units.
const MAX_PODS: i64 = 110_000;

/// A flavor of `milli_cpu` with ample memory and room for 110 pods, one available on-demand offering in
/// `zone-a` at `price` per hour, labelled with its instance type and untainted.
pub fn flavor(name: &str, milli_cpu: i64, price: f64) -> Value {
    let resources = json!({"cpu": milli_cpu, "memory": AMPLE_MEMORY, "pods": MAX_PODS});
    json!({
        "name": name,
        "capacity": resources,
        "allocatable": resources,
        "offerings": [{"zone": "zone-a", "capacity_type": "on-demand", "price": price, "available": true}],
        "labels": {"node.kubernetes.io/instance-type": name},
        "taints": [],
    })
}

/// A pod of `default` asking for `milli_cpu` and 256 MiB, with no constraint of any kind.
pub fn pod(name: &str, milli_cpu: i64) -> Value {
    json!({
        "namespace": "default",
        "name": name,
        "requests": {"cpu": milli_cpu, "memory": POD_MEMORY, "pods": 1000},
        "labels": {},
        "node_selector": {},
        "required_terms": [],
        "preferred_terms": [],
        "affinity": [],
        "preferred_affinity": [],
        "anti_affinity": [],
        "preferred_anti_affinity": [],
        "tolerations": [],
        "spread": [],
        "host_ports": [],
        "terminating": false,
    })
}

/// A NodePool allowing every flavor: no requirements, labels, taints, weight or limits.
pub fn node_pool(name: &str) -> Value {
    json!({
        "name": name,
        "requirements": [],
        "labels": {},
        "taints": [],
        "weight": 0,
        "limits": {},
        "usage": {},
        "instance_types": null,
    })
}

/// The snapshot of `pods` pending on the catalog `flavors` with the one NodePool `default`, no nodes
/// and no DaemonSets. Panics, naming serde's error, when a builder's output was overridden wrongly.
pub fn snapshot(pods: Vec<Value>, flavors: Vec<Value>) -> Snapshot {
    snapshot_of(json!({
        "pods": pods,
        "instance_types": flavors,
        "node_pools": [node_pool("default")],
        "nodes": [],
        "daemonsets": [],
    }))
}

/// The snapshot a whole JSON document describes, for a test that needs pools, nodes or DaemonSets.
pub fn snapshot_of(document: Value) -> Snapshot {
    serde_json::from_value(document).unwrap_or_else(|e| panic!("test snapshot: {e}"))
}
