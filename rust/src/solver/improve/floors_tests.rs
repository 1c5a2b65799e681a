//! A pod's floor (`cheapest_fit`), with cargo alone: the twin of `test_improve_floors.py`'s first test.

use super::cheapest_fit;
use crate::solver::greedy::Scheduler;
use crate::solver::model::Snapshot;

fn flavor(name: &str, milli_cpu: i64, price: f64) -> String {
    let resources = format!(r#"{{"cpu":{milli_cpu},"memory":68719476736000,"pods":110000}}"#);
    format!(
        r#"{{"name":"{name}","capacity":{resources},"allocatable":{resources},
        "offerings":[{{"zone":"zone-a","capacity_type":"on-demand","price":{price:?},"available":true}}],
        "labels":{{"node.kubernetes.io/instance-type":"{name}"}},"taints":[]}}"#
    )
}

fn pod(name: &str, milli_cpu: i64) -> String {
    format!(
        r#"{{"namespace":"default","name":"{name}","requests":{{"cpu":{milli_cpu},"memory":268435456000,"pods":1000}},
        "labels":{{}},"node_selector":{{}},"required_terms":[],"preferred_terms":[],"affinity":[],
        "preferred_affinity":[],"anti_affinity":[],"preferred_anti_affinity":[],"tolerations":[],
        "spread":[],"host_ports":[]}}"#
    )
}

#[test]
fn a_pods_floor_is_the_cheapest_flavor_that_holds_it() {
    let json = format!(
        r#"{{"pods":[{},{},{}],"instance_types":[{},{},{}],"node_pools":[{{"name":"default",
        "requirements":[],"labels":{{}},"taints":[],"weight":0,"limits":{{}},"usage":{{}},
        "instance_types":null}}],"nodes":[],"daemonsets":[]}}"#,
        pod("small", 1000),
        pod("large", 4000),
        pod("huge", 32000),
        flavor("c2", 2000, 0.1),
        flavor("c8", 8000, 0.38),
        flavor("c16", 16000, 5.0)
    );
    let snapshot: Snapshot = serde_json::from_str(&json).expect("snapshot");
    let s = Scheduler::new(&snapshot);
    let floors: Vec<f64> = (0..3).map(|p| cheapest_fit(&s, &s.requests[p])).collect();
    assert_eq!(floors, [0.1, 0.38, f64::INFINITY]);
}
