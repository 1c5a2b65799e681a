//! The exact pass on issue 17's one-dimensional case, with cargo alone.

use crate::solver::{model::Snapshot, solve};

fn flavor(name: &str, milli_cpu: i64, price: f64) -> String {
    let resources = format!(r#"{{"cpu":{milli_cpu},"memory":68719476736000,"pods":110000}}"#);
    format!(
        r#"{{"name":"{name}","capacity":{resources},"allocatable":{resources},
        "offerings":[{{"zone":"zone-a","capacity_type":"on-demand","price":{price:?},"available":true}}],
        "labels":{{"node.kubernetes.io/instance-type":"{name}"}},"taints":[]}}"#
    )
}

fn pod(name: &str) -> String {
    format!(
        r#"{{"namespace":"default","name":"{name}","requests":{{"cpu":2500,"memory":268435456000,"pods":1000}},
        "labels":{{}},"node_selector":{{}},"required_terms":[],"preferred_terms":[],"affinity":[],
        "preferred_affinity":[],"anti_affinity":[],"preferred_anti_affinity":[],"tolerations":[],
        "spread":[],"host_ports":[]}}"#
    )
}

#[test]
fn twenty_five_pods_of_two_and_a_half_cpu_take_seven_a_and_one_b() {
    // Issue 17: greedy and the cost pass buy 3 A + 4 B (60.6/h); the cheapest is 7 A + 1 B.
    let pods: Vec<String> = (0..25).map(|i| pod(&format!("web-{i}"))).collect();
    let json = format!(
        r#"{{"pods":[{}],"instance_types":[{},{}],"node_pools":[{{"name":"default","requirements":[],
        "labels":{{}},"taints":[],"weight":0,"limits":{{}},"usage":{{}},"instance_types":null}}],
        "nodes":[],"daemonsets":[]}}"#,
        pods.join(","),
        flavor("a", 8000, 7.0),
        flavor("b", 12000, 9.9)
    );
    let snapshot: Snapshot = serde_json::from_str(&json).expect("snapshot");
    let plan = solve(&snapshot);
    let mut flavors: Vec<&str> = plan
        .node_claims
        .iter()
        .map(|c| c.instance_type.as_str())
        .collect();
    flavors.sort_unstable();
    assert_eq!(flavors, ["a", "a", "a", "a", "a", "a", "a", "b"]);
    let total: f64 = plan.node_claims.iter().map(|c| c.price_per_hour).sum();
    assert!((total - 58.9).abs() < 1e-9, "{total}");
    assert!(plan.unschedulable.is_empty());
}
