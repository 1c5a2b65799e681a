//! How the exact pass groups pods into shapes (twin of `_shapes` in `exact.py`): pods equal but for
//! their name and the labels no selector reads, at the same relaxation level, are one shape.
//!
//! Python compares the whole `Pod` dataclass (name blanked, unread labels dropped), its maps as dicts
//! whatever their order: `Signature` holds the same fields, the maps sorted, built once per pod.
//! `Signature::of` takes the pod apart field by field, so a field added to `Pod` fails to compile
//! until it is compared here too.

use std::collections::BTreeSet;

use super::greedy::Scheduler;
use super::model::{
    HostPort, NodeSelectorRequirement, Pod, PodAffinityTerm, PreferredNodeTerm, Toleration,
    TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use super::preferences::Preferences;

/// A pod as the exact pass tells shapes apart.
#[derive(PartialEq)]
struct Signature<'p> {
    namespace: &'p str,
    requests: Vec<&'p (String, i64)>,
    read_labels: Vec<&'p (String, String)>,
    node_selector: Vec<&'p (String, String)>,
    required_terms: &'p [Vec<NodeSelectorRequirement>],
    preferred_terms: &'p [PreferredNodeTerm],
    affinity: &'p [PodAffinityTerm],
    preferred_affinity: &'p [WeightedPodAffinityTerm],
    anti_affinity: &'p [PodAffinityTerm],
    preferred_anti_affinity: &'p [WeightedPodAffinityTerm],
    tolerations: &'p [Toleration],
    spread: &'p [TopologySpreadConstraint],
    host_ports: &'p [HostPort],
    terminating: bool,
    level: [usize; 6],
}

/// A map's pairs by key: two dicts are equal whatever the order of their pairs.
fn by_key<V>(pairs: &[(String, V)]) -> Vec<&(String, V)> {
    let mut out: Vec<&(String, V)> = pairs.iter().collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

impl<'p> Signature<'p> {
    fn of(pod: &'p Pod, read: &BTreeSet<String>, prefs: &Preferences) -> Signature<'p> {
        let Pod {
            namespace,
            name: _,
            requests,
            labels,
            node_selector,
            required_terms,
            preferred_terms,
            affinity,
            preferred_affinity,
            anti_affinity,
            preferred_anti_affinity,
            tolerations,
            spread,
            host_ports,
            terminating,
        } = pod;
        let mut read_labels = by_key(labels);
        read_labels.retain(|(k, _)| read.contains(k));
        Signature {
            namespace,
            requests: by_key(requests),
            read_labels,
            node_selector: by_key(node_selector),
            required_terms,
            preferred_terms,
            affinity,
            preferred_affinity,
            anti_affinity,
            preferred_anti_affinity,
            tolerations,
            spread,
            host_ports,
            terminating: *terminating,
            level: level(prefs),
        }
    }
}

/// How far a pod's preferences were relaxed: equal pods at equal levels enforce the same ones.
fn level(prefs: &Preferences) -> [usize; 6] {
    [
        prefs.required_index,
        prefs.preferred_node.len(),
        prefs.preferred_affinity.len(),
        prefs.preferred_anti_affinity.len(),
        prefs.spread_anyway.len(),
        usize::from(prefs.tolerate_prefer_no_schedule),
    ]
}

/// The label keys some selector of the problem reads: every group the topology counts, which holds
/// the spread and (anti-)affinity selectors, preferred or required, of the pending pods and of those
/// on existing nodes. Any other label tells pods apart for no constraint.
fn read_keys(s: &Scheduler) -> BTreeSet<String> {
    s.topology
        .groups
        .iter()
        .flat_map(|g| {
            let selector = &g.selector;
            let matched = selector.match_labels.iter().map(|(k, _)| k);
            matched.chain(selector.match_expressions.iter().map(|e| &e.key))
        })
        .cloned()
        .collect()
}

/// The pods grouped by shape, shapes in the order their first pod comes.
pub fn shapes(s: &Scheduler, pods: &[usize]) -> Vec<Vec<usize>> {
    let read = read_keys(s);
    let mut signatures: Vec<Signature> = Vec::new();
    let mut shapes: Vec<Vec<usize>> = Vec::new();
    for &pod in pods {
        let mine = Signature::of(s.pods[pod], &read, &s.placed_prefs[&pod]);
        match signatures.iter().position(|known| *known == mine) {
            Some(at) => shapes[at].push(pod),
            None => {
                signatures.push(mine);
                shapes.push(vec![pod]);
            }
        }
    }
    shapes
}
