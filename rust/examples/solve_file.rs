//! Solve a JSON snapshot from a file and print phase timings: `cargo run --release --example solve_file -- FILE`.
use std::time::Instant;

use kapstan_core::solver::{greedy::Scheduler, improve, model::Snapshot};

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: solve_file SNAPSHOT.json");
    let text = std::fs::read_to_string(path).expect("readable snapshot");
    let started = Instant::now();
    let snapshot: Snapshot = serde_json::from_str(&text).expect("valid snapshot");
    let parsed = started.elapsed();
    let mut scheduler = Scheduler::new(&snapshot);
    let built = started.elapsed();
    let failures = scheduler.schedule();
    let scheduled = started.elapsed();
    let greedy_cost: f64 = scheduler.claims.iter().map(|c| c.price()).sum();
    println!(
        "greedy cost {greedy_cost:.2} claims {}",
        scheduler.claims.len()
    );
    improve::improve(&mut scheduler);
    let improved = started.elapsed();
    let cost: f64 = scheduler.claims.iter().map(|c| c.price()).sum();
    println!(
        "parse {parsed:?} setup {:?} schedule {:?} improve {:?} | claims {} cost {cost:.2} unschedulable {}",
        built - parsed,
        scheduled - built,
        improved - scheduled,
        scheduler.claims.len(),
        failures.len()
    );
}
