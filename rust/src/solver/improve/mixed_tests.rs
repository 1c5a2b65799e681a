//! The mixed-flavor move's splits with cargo alone: the twins of `test_improve_mixed.py`'s first
//! three tests and of its slot-paced order's.

use serde_json::{json, Value};

use super::splits;
use crate::solver::greedy::{interleaved, slot_paced, Scheduler};
use crate::solver::model::Snapshot;
use crate::solver::targets::Claim;
use crate::solver::test_support::{flavor, pod, snapshot};

/// 1 GiB in the snapshot's milli-units.
const GI: i64 = 1_073_741_824_000;

fn sized_flavor(name: &str, cpus: i64, gib: i64, price: f64) -> Value {
    let mut out = flavor(name, cpus * 1000, price);
    for field in ["capacity", "allocatable"] {
        out[field]["memory"] = json!(gib * GI);
    }
    out
}

fn sized_pod(name: &str, cpus: i64, gib: i64) -> Value {
    let mut out = pod(name, cpus * 1000);
    out["requests"]["memory"] = json!(gib * GI);
    out
}

/// 16 CPU-heavy pods (2 CPU, 1 GiB) and 16 memory-heavy ones (1 CPU, 6 GiB): 48 CPU and 112 GiB.
fn batch_and_cache(flavors: Vec<Value>) -> Snapshot {
    let mut pods: Vec<Value> = (0..16)
        .map(|i| sized_pod(&format!("batch-{i}"), 2, 1))
        .collect();
    pods.extend((0..16).map(|i| sized_pod(&format!("cache-{i}"), 1, 6)));
    snapshot(pods, flavors)
}

/// What a test reads of a split: the CPU-rich part's pod names and flavors, the rest's count and
/// flavors.
type Parts = (Vec<String>, Vec<String>, usize, Vec<String>);

/// The splits of the greedy plan's claims, best first.
fn greedy_splits(snapshot: &Snapshot) -> Vec<Parts> {
    let mut s = Scheduler::new(snapshot);
    assert!(s.schedule().is_empty());
    let claims: Vec<&Claim> = s.claims.iter().map(|c| &**c).collect();
    let pods: Vec<usize> = claims.iter().flat_map(|c| c.pods.iter().copied()).collect();
    splits(&s, &claims, &pods)
        .into_iter()
        .map(|parts| {
            let names = parts
                .cpu_rich
                .iter()
                .map(|&p| s.pods[p].name.clone())
                .collect();
            (
                names,
                parts.cpu_rich_flavors,
                parts.rest.len(),
                parts.rest_flavors,
            )
        })
        .collect()
}

/// The split the whole-node estimate rates best.
fn greedy_split(snapshot: &Snapshot) -> Option<Parts> {
    greedy_splits(snapshot).into_iter().next()
}

#[test]
fn cpu_heavy_pods_go_to_the_cpu_rich_flavor_and_the_rest_to_the_general_one() {
    let snapshot = batch_and_cache(vec![
        sized_flavor("g-32", 8, 32, 0.2032),
        sized_flavor("g-64", 16, 64, 0.4064),
        sized_flavor("c-16", 8, 16, 0.1836),
    ]);
    let (rich, rich_flavors, rest, rest_flavors) = greedy_split(&snapshot).expect("a split");
    assert_eq!(rich.len(), 8);
    assert!(rich.iter().all(|name| name.starts_with("batch-")));
    assert_eq!(rich_flavors, ["c-16"]);
    assert_eq!(rest, 24);
    assert_eq!(rest_flavors, ["c-16", "g-32"]);
}

#[test]
fn the_move_also_offers_the_best_split_of_the_next_size_of_the_cpu_rich_part() {
    let snapshot = batch_and_cache(vec![
        sized_flavor("g-32", 8, 32, 0.2032),
        sized_flavor("g-64", 16, 64, 0.4064),
        sized_flavor("c-16", 8, 16, 0.1836),
    ]);
    let offered = greedy_splits(&snapshot);
    let sizes: Vec<usize> = offered.iter().map(|parts| parts.0.len()).collect();
    assert_eq!(sizes, [8, 4]);
    assert!(offered[1].0.iter().all(|name| name.starts_with("batch-")));
    assert_eq!(offered[1].2, 28);
}

#[test]
fn the_move_does_not_apply_when_every_flavor_has_one_shape() {
    let snapshot = batch_and_cache(vec![
        sized_flavor("g-16", 4, 16, 0.1016),
        sized_flavor("g-32", 8, 32, 0.2032),
    ]);
    assert!(greedy_split(&snapshot).is_none());
}

/// Three pods of 4 CPU and six of 500m, one shape: interleaved leaves the six to the end, slot-paced
/// puts two after each big one (the twin of `test_slot_paced_draws_the_small_pods_in_as_the_cpu_is_taken`).
#[test]
fn slot_paced_draws_the_small_pods_in_as_the_cpu_is_taken() {
    const MI: i64 = 1_048_576_000;
    let mut pods: Vec<Value> = (0..3)
        .map(|i| {
            let mut out = pod(&format!("big-{i}"), 4000);
            out["requests"]["memory"] = json!(4000 * MI);
            out
        })
        .collect();
    pods.extend((0..6).map(|i| {
        let mut out = pod(&format!("small-{i}"), 500);
        out["requests"]["memory"] = json!(500 * MI);
        out
    }));
    let snapshot = snapshot(pods, vec![sized_flavor("g-32", 8, 32, 0.2032)]);
    let s = Scheduler::new(&snapshot);
    let ids: Vec<usize> = (0..s.pods.len()).collect();
    let kinds = |order: Vec<usize>| -> Vec<String> {
        order
            .iter()
            .map(|&p| {
                s.pods[p]
                    .name
                    .split('-')
                    .next()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    };
    assert_eq!(
        kinds(interleaved(&s.pods, &ids)),
        [["big"; 3].as_slice(), &["small"; 6]].concat()
    );
    assert_eq!(
        kinds(slot_paced(&s.pods, &ids)),
        ["big", "small", "small"].repeat(3)
    );
}
