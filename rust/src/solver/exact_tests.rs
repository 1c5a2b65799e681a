//! The exact pass on issue 17's one-dimensional case, and how it groups pods into shapes, with cargo
//! alone.

use serde_json::{json, Value};

use crate::solver::exact_shapes::shapes;
use crate::solver::greedy::Scheduler;
use crate::solver::solve;
use crate::solver::test_support::{flavor, pod, snapshot};

fn labelled(name: &str, milli_cpu: i64, labels: Value) -> Value {
    let mut pod = pod(name, milli_cpu);
    pod["labels"] = labels;
    pod
}

fn flavors_and_total(pods: Vec<Value>) -> (Vec<String>, f64) {
    let snapshot = snapshot(pods, vec![flavor("a", 8000, 7.0), flavor("b", 12000, 9.9)]);
    let plan = solve(&snapshot);
    assert!(plan.unschedulable.is_empty());
    let mut flavors: Vec<String> = plan
        .node_claims
        .iter()
        .map(|c| c.instance_type.clone())
        .collect();
    flavors.sort_unstable();
    let total: f64 = plan.node_claims.iter().map(|c| c.price_per_hour).sum();
    (flavors, total)
}

#[test]
fn twenty_five_pods_of_two_and_a_half_cpu_take_seven_a_and_one_b() {
    // Issue 17: greedy and the cost pass buy 3 A + 4 B (60.6/h); the cheapest is 7 A + 1 B.
    let pods = (0..25).map(|i| pod(&format!("web-{i}"), 2500)).collect();
    let (flavors, total) = flavors_and_total(pods);
    assert_eq!(flavors, ["a", "a", "a", "a", "a", "a", "a", "b"]);
    assert!((total - 58.9).abs() < 1e-9, "{total}");
}

#[test]
fn labels_no_selector_reads_do_not_split_a_shape() {
    // Nine values of an `app` label nothing selects on made nine shapes, over the search's eight, and
    // left the cost pass's 60.6/h; alike, the 25 pods are one shape (the twin: test_exact.py).
    let pods = (0..25)
        .map(|i| {
            labelled(
                &format!("web-{i}"),
                2500,
                json!({"app": format!("web-{}", i % 9)}),
            )
        })
        .collect();
    let (flavors, total) = flavors_and_total(pods);
    assert_eq!(flavors, ["a", "a", "a", "a", "a", "a", "a", "b"]);
    assert!((total - 58.9).abs() < 1e-9, "{total}");
}

fn shape_names(pods: Vec<Value>) -> Vec<Vec<String>> {
    let snapshot = snapshot(pods, vec![flavor("a", 8000, 7.0)]);
    let mut s = Scheduler::new(&snapshot);
    s.schedule();
    let placed: Vec<usize> = s.claims.iter().flat_map(|c| c.pods.clone()).collect();
    let mut names: Vec<Vec<String>> = shapes(&s, &placed)
        .iter()
        .map(|shape| {
            let mut names: Vec<String> = shape.iter().map(|&p| s.pods[p].name.clone()).collect();
            names.sort_unstable();
            names
        })
        .collect();
    names.sort_unstable();
    names
}

/// Two pods of `app` a and two of b, then a guard whose hostname anti-affinity has `selector`.
fn guarded(selector: Value, guard_labels: Value) -> Vec<Value> {
    let mut pods: Vec<Value> = ["a", "b"]
        .iter()
        .flat_map(|app| {
            (0..2).map(move |i| {
                labelled(
                    &format!("{app}-{i}"),
                    1000,
                    json!({"app": app, "hash": i.to_string()}),
                )
            })
        })
        .collect();
    let mut guard = labelled("guard", 1000, guard_labels);
    guard["anti_affinity"] = json!([{
        "selector": selector,
        "topology_key": "kubernetes.io/hostname",
        "namespaces": ["default"],
        "all_namespaces": false,
    }]);
    pods.push(guard);
    pods
}

#[test]
fn a_label_some_selector_reads_keeps_pods_apart() {
    // `app` is read by the guard's anti-affinity, `hash` by nothing.
    let selector = json!({"match_labels": {"app": "a"}, "match_expressions": []});
    let names = shape_names(guarded(selector, json!({})));
    assert_eq!(
        names,
        [vec!["a-0", "a-1"], vec!["b-0", "b-1"], vec!["guard"]]
    );
}

#[test]
fn a_key_a_match_expression_reads_counts_too() {
    let expression = json!({"key": "app", "operator": "NotIn", "values": ["x"]});
    let selector = json!({"match_labels": {}, "match_expressions": [expression]});
    let names = shape_names(guarded(selector, json!({"app": "x"})));
    assert_eq!(
        names,
        [vec!["a-0", "a-1"], vec!["b-0", "b-1"], vec!["guard"]]
    );
}

#[test]
fn a_terminating_pod_is_a_shape_of_its_own() {
    // Python compares every field of the pod, `terminating` too (the twin: test_exact.py).
    let mut leaving = pod("leaving", 1000);
    leaving["terminating"] = json!(true);
    let names = shape_names(vec![pod("staying", 1000), leaving]);
    assert_eq!(names, [vec!["leaving"], vec!["staying"]]);
}

#[test]
fn requests_in_another_order_are_the_same_shape() {
    // Python compares requests as dicts, whatever their order.
    let first = pod("first", 1000);
    let mut second = pod("second", 1000);
    let mut pairs: Vec<(String, Value)> = second["requests"]
        .as_object()
        .expect("requests")
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    pairs.reverse();
    second["requests"] = Value::Array(pairs.into_iter().map(|(k, v)| json!([k, v])).collect());
    let names = shape_names(vec![first, second]);
    assert_eq!(names, [vec!["first", "second"]]);
}
