//! A pod's floor (`cheapest_fit`), with cargo alone: the twin of `test_improve_floors.py`'s first test.

use super::cheapest_fit;
use crate::solver::greedy::Scheduler;
use crate::solver::test_support::{flavor, pod, snapshot};

#[test]
fn a_pods_floor_is_the_cheapest_flavor_that_holds_it() {
    let snapshot = snapshot(
        vec![pod("small", 1000), pod("large", 4000), pod("huge", 32000)],
        vec![
            flavor("c2", 2000, 0.1),
            flavor("c8", 8000, 0.38),
            flavor("c16", 16000, 5.0),
        ],
    );
    let s = Scheduler::new(&snapshot);
    let floors: Vec<f64> = (0..3).map(|p| cheapest_fit(&s, &s.requests[p])).collect();
    assert_eq!(floors, [0.1, 0.38, f64::INFINITY]);
}
