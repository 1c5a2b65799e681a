//! The scheduling core: snapshot in, plan out. No I/O, no Python: the bindings are elsewhere.

pub mod anchored;
pub mod counts;
pub mod exact;
pub mod exact_bounds;
pub mod exact_patterns;
pub mod exact_search;
pub mod exact_shapes;
pub mod flavor_test;
pub mod flavors;
pub mod greedy;
pub mod improve;
pub mod model;
pub mod pools;
pub mod preferences;
pub mod requirements;
pub mod resources;
pub mod room;
pub mod targets;
#[cfg(test)]
pub mod test_support;
pub mod topology;

use greedy::{AlternativeFlavors, Scheduler};
use model::{Plan, Snapshot};

/// Plan new NodeClaims for the snapshot's pending pods, exactly as the Python engine does.
pub fn solve(snapshot: &Snapshot) -> Plan {
    let mut scheduler = Scheduler::new(snapshot);
    let failures = scheduler.schedule();
    improve::improve(&mut scheduler);
    exact::exact(&mut scheduler);
    let existing_nodes = scheduler
        .existing
        .iter()
        .map(|t| {
            (
                t.node.name.clone(),
                t.placed.iter().map(|&p| scheduler.pods[p].key()).collect(),
            )
        })
        .collect();
    let mut claims: Vec<_> = scheduler.claims.iter().collect();
    claims.sort_by_key(|c| c.index);
    let mut ranking = AlternativeFlavors::new(&scheduler);
    let node_claims = claims
        .iter()
        .map(|c| scheduler.planned(c, ranking.ranked(&scheduler, c)))
        .collect();
    let unschedulable = scheduler
        .pending
        .iter()
        .filter_map(|p| {
            failures
                .get(p)
                .map(|reason| (scheduler.pods[*p].key(), reason.clone()))
        })
        .collect();
    Plan {
        node_claims,
        existing_nodes,
        unschedulable,
    }
}

/// The same, from and to JSON: what the Python bindings call.
pub fn solve_json(snapshot: &[u8]) -> Result<String, String> {
    let snapshot: Snapshot =
        serde_json::from_slice(snapshot).map_err(|e| format!("invalid snapshot: {e}"))?;
    serde_json::to_string(&solve(&snapshot)).map_err(|e| e.to_string())
}
