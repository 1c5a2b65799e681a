//! The exact pass on issue 17's one-dimensional case, with cargo alone.

use crate::solver::solve;
use crate::solver::test_support::{flavor, pod, snapshot};

#[test]
fn twenty_five_pods_of_two_and_a_half_cpu_take_seven_a_and_one_b() {
    // Issue 17: greedy and the cost pass buy 3 A + 4 B (60.6/h); the cheapest is 7 A + 1 B.
    let pods = (0..25).map(|i| pod(&format!("web-{i}"), 2500)).collect();
    let snapshot = snapshot(pods, vec![flavor("a", 8000, 7.0), flavor("b", 12000, 9.9)]);
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
