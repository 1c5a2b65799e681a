//! The order the greedy pass takes pods in (twin of `greedy/order.py`).

use std::collections::BTreeSet;

use crate::solver::model::{NodeOperator, Pod, CPU, MEMORY};
use crate::solver::resources as res;

/// The order the greedy pass takes pods in, as in Python: the pods confined to some domains of a
/// contested key first, biggest first (Karpenter's queue order), then the others interleaved by shape.
/// A pod confined on a key its batch's required pod-topology rules count has nowhere else to go; taken
/// in shape order, a smaller unconfined pod could take the one zone it needed and strand it (the Python
/// twin says why only those pods leave the interleave).
pub fn placement_sequence(pods: &[&Pod], ids: &[usize]) -> Vec<usize> {
    let keys = contested_keys(pods, ids);
    let (mut confined, free): (Vec<usize>, Vec<usize>) = ids
        .iter()
        .partition(|&&id| !keys.is_empty() && confined_on(pods[id], &keys));
    if confined.is_empty() {
        return interleaved(pods, ids);
    }
    confined.sort_by_cached_key(|&id| biggest_first(pods[id]));
    confined.extend(interleaved(pods, &free));
    confined
}

/// Topology keys over which the batch's required pod-topology rules count pods.
fn contested_keys<'a>(pods: &[&'a Pod], ids: &[usize]) -> BTreeSet<&'a str> {
    let mut keys = BTreeSet::new();
    for &id in ids {
        let pod = &pods[id];
        let terms = pod.affinity.iter().chain(&pod.anti_affinity);
        keys.extend(terms.map(|term| term.topology_key.as_str()));
        let hard = pod
            .spread
            .iter()
            .filter(|c| c.when_unsatisfiable == "DoNotSchedule");
        keys.extend(hard.map(|c| c.topology_key.as_str()));
    }
    keys
}

/// Whether the pod's hard node requirements name the values one of `keys` may take.
fn confined_on(pod: &Pod, keys: &BTreeSet<&str>) -> bool {
    if pod
        .node_selector
        .iter()
        .any(|(key, _)| keys.contains(key.as_str()))
    {
        return true;
    }
    !pod.required_terms.is_empty()
        && keys.iter().any(|key| {
            pod.required_terms.iter().all(|term| {
                term.iter()
                    .any(|r| r.key == *key && r.operator == NodeOperator::In)
            })
        })
}

/// Biggest first, alternating between CPU-heavy and memory-heavy pods so that the running totals keep
/// the batch's own CPU to memory ratio; nodes filled in that order end full in both resources. Sizes are
/// shares of the batch's totals, compared in exact integers; a batch that requests no CPU (or no memory)
/// is sized by the other of the two alone, and one that requests neither by its other resources, largest
/// first in name order.
pub fn interleaved(pods: &[&Pod], ids: &[usize]) -> Vec<usize> {
    let cpu_of = |id: usize| i128::from(res::get(&pods[id].requests, CPU));
    let memory_of = |id: usize| i128::from(res::get(&pods[id].requests, MEMORY));
    let cpu: i128 = ids.iter().map(|&id| cpu_of(id)).sum();
    let memory: i128 = ids.iter().map(|&id| memory_of(id)).sum();
    let others: BTreeSet<&str> = if cpu != 0 || memory != 0 {
        BTreeSet::new()
    } else {
        ids.iter()
            .flat_map(|&id| pods[id].requests.iter().map(|(name, _)| name.as_str()))
            .filter(|name| *name != CPU && *name != MEMORY)
            .collect()
    };
    let size = |id: usize| {
        let share = if cpu != 0 && memory != 0 {
            cpu_of(id) * memory + memory_of(id) * cpu
        } else {
            cpu_of(id) + memory_of(id)
        };
        let rest: Vec<i64> = others
            .iter()
            .map(|name| -res::get(&pods[id].requests, name))
            .collect();
        let key = pods[id].key();
        (-share, rest, crc32fast::hash(key.as_bytes()), key)
    };
    let (mut cpu_heavy, mut memory_heavy): (Vec<usize>, Vec<usize>) = ids
        .iter()
        .partition(|&&id| cpu_of(id) * memory >= memory_of(id) * cpu);
    cpu_heavy.sort_by_cached_key(|&id| size(id));
    memory_heavy.sort_by_cached_key(|&id| size(id));
    let mut out = Vec::with_capacity(ids.len());
    let (mut taken_cpu, mut taken_memory) = (0i128, 0i128);
    let (mut i, mut j) = (0, 0);
    while i < cpu_heavy.len() || j < memory_heavy.len() {
        let ahead_in_cpu = taken_cpu * memory > taken_memory * cpu;
        let id = if j < memory_heavy.len() && (i == cpu_heavy.len() || ahead_in_cpu) {
            j += 1;
            memory_heavy[j - 1]
        } else {
            i += 1;
            cpu_heavy[i - 1]
        };
        out.push(id);
        taken_cpu += cpu_of(id);
        taken_memory += memory_of(id);
    }
    out
}

/// `interleaved`, with its smallest pods (its tail) drawn in whenever the count of pods taken falls
/// behind its share of the CPU taken, so that first fit hands each claim its share of the pod slots
/// (the Python twin says why). Compared in exact integers.
pub fn slot_paced(pods: &[&Pod], ids: &[usize]) -> Vec<usize> {
    let base = interleaved(pods, ids);
    let cpu_of = |id: usize| i128::from(res::get(&pods[id].requests, CPU));
    let cpu: i128 = base.iter().map(|&id| cpu_of(id)).sum();
    let count = base.len() as i128;
    let mut out = Vec::with_capacity(base.len());
    let mut taken_cpu = 0i128;
    let (mut first, mut end) = (0usize, base.len());
    while first < end {
        let id = if out.len() as i128 * cpu < taken_cpu * count {
            end -= 1;
            base[end]
        } else {
            first += 1;
            base[first - 1]
        };
        out.push(id);
        taken_cpu += cpu_of(id);
    }
    out
}

/// Cpu, then memory, descending: first-fit decreasing, for re-packing into fixed-size flavors.
pub fn biggest_first(pod: &Pod) -> (i64, i64, String) {
    (
        -res::get(&pod.requests, CPU),
        -res::get(&pod.requests, MEMORY),
        pod.key(),
    )
}
