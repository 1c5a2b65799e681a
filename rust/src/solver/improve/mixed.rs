//! The mixed-flavor move of the cost pass (twin of `mixed.py` and `_mix` / `_repack_mixed` in
//! `improve.py`): up to `MIX_GROUP` claims of one NodePool re-packed into the cheapest fluid pair of
//! flavors (a CPU-rich one and a memory-rich one), the pods split by memory per CPU, each part on claims
//! held to the flavors no bigger than its own. The arithmetic is Python's step by step: integer totals
//! (i128 here), each quotient taken as `a as f64 / b as f64`.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{present, price_of, put_back, take_off, Pass, SAVING};
use crate::solver::anchored::{is_constrained, AnchoredChecks};
use crate::solver::flavors::Flavor;
use crate::solver::greedy::{biggest_first, interleaved, slot_paced, Scheduler};
use crate::solver::model::{Pod, CPU, MEMORY};
use crate::solver::targets::Claim;

const MIX_GROUP: usize = 64;
const MIX_GAIN: f64 = 0.01;
const MIX_TRIES: usize = 2;

/// An order a part's pods are placed in (`interleaved`, `slot_paced`).
type Order = fn(&[&Pod], &[usize]) -> Vec<usize>;

/// A pod's place in the split order: memory per CPU, then `biggest_first`.
type RatioKey = (f64, (i64, i64, String));

/// The pods of a move in two parts (arena ids), each with the flavors its new claims may take.
struct MixedSplit {
    cpu_rich: Vec<usize>,
    cpu_rich_flavors: Vec<String>,
    rest: Vec<usize>,
    rest_flavors: Vec<String>,
}

impl MixedSplit {
    /// The two parts in the order they are placed, each with its flavors.
    fn parts(&self) -> [(&[usize], &[String]); 2] {
        [
            (&self.cpu_rich, &self.cpu_rich_flavors),
            (&self.rest, &self.rest_flavors),
        ]
    }
}

impl Pass<'_> {
    /// The mixed-flavor move once over the greedy plan's unconstrained claims, before the other moves
    /// (which then polish its claims).
    pub(super) fn mix(&mut self, s: &mut Scheduler) {
        let free: Vec<usize> = s
            .claims
            .iter()
            .filter(|c| !c.pods.iter().any(|&p| is_constrained(s, p, self.groups)))
            .map(|c| c.index)
            .collect();
        for group in mixed_groups(s, &free) {
            if self.budget <= 0 {
                break;
            }
            if present(s, &group) {
                self.repack_mixed(s, &group);
            }
        }
    }

    /// Each of its splits placed in turn, kept only when it costs strictly less than the claims it
    /// replaces and than the splits placed before it; the cheapest stays. The splits are placed
    /// interleaved, and only when none of them is kept so, slot-paced (the Python twin says why).
    fn repack_mixed(&mut self, s: &mut Scheduler, indexes: &[usize]) -> bool {
        let claims: Vec<&Claim> = indexes
            .iter()
            .map(|i| s.claim(*i).expect("present"))
            .collect();
        let pods: Vec<usize> = claims.iter().flat_map(|c| c.pods.iter().copied()).collect();
        if pods.is_empty() {
            return false;
        }
        let tries = splits(s, &claims, &pods);
        if tries.is_empty() {
            return false;
        }
        let before = claims.iter().fold(0.0, |acc, c| acc + c.price()) - SAVING;
        let taken = take_off(s, indexes);
        for order in [interleaved as Order, slot_paced as Order] {
            let mut best: Option<(f64, usize)> = None;
            for (at, parts) in tries.iter().enumerate() {
                if self.budget <= 0 {
                    break;
                }
                let ceiling = best.map_or(before, |b| before.min(b.0));
                let Some(created) = self.place_split(s, parts, order, ceiling) else {
                    continue;
                };
                best = Some((price_of(s, &created), at));
                if at + 1 < tries.len() {
                    drop(take_off(s, &created));
                } else {
                    // The last split is the cheapest placed: it stays where it is.
                    s.removed.extend(taken);
                    return true;
                }
            }
            if let Some((_, at)) = best {
                if self
                    .place_split(s, &tries[at], order, f64::INFINITY)
                    .is_some()
                {
                    s.removed.extend(taken);
                    return true;
                }
                break;
            }
        }
        put_back(s, taken);
        false
    }

    /// The split's parts placed one after the other in `order`, each on claims of its own; None
    /// (nothing left behind) when a part cannot be placed or all of them reach `ceiling`.
    fn place_split(
        &mut self,
        s: &mut Scheduler,
        parts: &MixedSplit,
        order: Order,
        ceiling: f64,
    ) -> Option<Vec<usize>> {
        let anchored = AnchoredChecks::default();
        let mut created: Vec<usize> = Vec::new();
        for (pods, flavors) in parts.parts() {
            let names: Vec<&str> = flavors.iter().map(String::as_str).collect();
            let sequence = order(&s.pods, pods);
            let spent = price_of(s, &created);
            let Some(placed) = self.replace(s, &sequence, Some(&names), &anchored, ceiling, spent)
            else {
                drop(take_off(s, &created));
                return None;
            };
            created.extend(placed);
        }
        Some(created)
    }
}

/// The claims (by index) of one NodePool on untainted flavors, `MIX_GROUP` at a time in index order.
fn mixed_groups(s: &Scheduler, claims: &[usize]) -> Vec<Vec<usize>> {
    let mut by_pool: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for claim in claims.iter().filter_map(|&i| s.claim(i)) {
        if claim.chosen().it.taints.is_empty() {
            by_pool
                .entry(claim.pool_name.as_str())
                .or_default()
                .push(claim.index);
        }
    }
    let mut out = Vec::new();
    for members in by_pool.values_mut() {
        members.sort_unstable();
        out.extend(members.chunks(MIX_GROUP).map(<[usize]>::to_vec));
    }
    out
}

/// The move's ways of splitting the pods in two, cheapest first by the whole-node estimate: for each
/// count of the CPU-rich flavor's nodes its part fills, the split point that costs least, those that
/// cost less than the claims, `MIX_TRIES` at most; none when no pair of flavors saves `MIX_GAIN` over
/// the best single one on the pods' CPU and memory.
fn splits(s: &Scheduler, claims: &[&Claim], pods: &[usize]) -> Vec<MixedSplit> {
    let (Some(cpu_at), Some(memory_at)) = (s.names.position(CPU), s.names.position(MEMORY)) else {
        return Vec::new();
    };
    let flavors: Vec<&Rc<Flavor>> = s.pools[claims[0].view]
        .flavors
        .iter()
        .filter(|f| f.it.taints.is_empty() && f.net_dense[cpu_at] > 0 && f.net_dense[memory_at] > 0)
        .collect();
    if flavors.is_empty() {
        return Vec::new();
    }
    let total = |at: usize| -> i128 { pods.iter().map(|&p| i128::from(s.requests[p][at])).sum() };
    let (keys, shape) = ([cpu_at, memory_at], [total(cpu_at), total(memory_at)]);
    // Covering the shape with fractions of one flavor's nodes (finite: each holds CPU and memory).
    let single = flavors
        .iter()
        .map(|f| f.base_price * nodes(f, &keys, &shape))
        .fold(f64::INFINITY, f64::min);
    // No mix costs less than each resource bought alone at its cheapest price per unit: when even
    // that saves too little, the pairs (a square of a large catalog's flavors) are not worth looking at.
    let cheapest_per = |at: usize| {
        flavors
            .iter()
            .map(|f| f.base_price / f.net_dense[at] as f64)
            .fold(f64::INFINITY, f64::min)
    };
    let alone =
        (shape[0] as f64 * cheapest_per(cpu_at)).max(shape[1] as f64 * cheapest_per(memory_at));
    if alone >= single * (1.0 - MIX_GAIN) {
        return Vec::new();
    }
    let Some((pair_cost, rich, lean)) =
        cheapest_pair(&flavors, cpu_at, memory_at, shape[0], shape[1])
    else {
        return Vec::new();
    };
    if pair_cost >= single * (1.0 - MIX_GAIN) {
        return Vec::new();
    }
    let rich_family = within(&flavors, rich);
    let lean_family = within(&flavors, lean);
    let keys: Vec<usize> = (0..s.requests[pods[0]].len())
        .filter(|&at| pods.iter().any(|&p| s.requests[p][at] > 0))
        .collect();
    let totals: Vec<i128> = keys.iter().map(|&at| total(at)).collect();
    // Most CPU per byte first: the CPU-rich flavor's part is a prefix of this order.
    let mut order_keys: Vec<(RatioKey, usize)> = pods
        .iter()
        .map(|&p| {
            let ratio = memory_per_cpu(&s.requests[p], cpu_at, memory_at);
            ((ratio, biggest_first(s.pods[p])), p)
        })
        .collect();
    order_keys.sort_by(|a, b| a.0 .0.total_cmp(&b.0 .0).then_with(|| a.0 .1.cmp(&b.0 .1)));
    let order: Vec<usize> = order_keys.into_iter().map(|(_, p)| p).collect();
    // Per count of the CPU-rich flavor's nodes the prefix fills, the cheapest split point (the first
    // on a tie).
    let mut best: BTreeMap<i64, (f64, usize)> = BTreeMap::new();
    let mut taken = vec![0i128; keys.len()];
    for at in 0..=order.len() {
        if at > 0 {
            for (i, &key) in keys.iter().enumerate() {
                taken[i] += i128::from(s.requests[order[at - 1]][key]);
            }
        }
        let left: Vec<i128> = totals.iter().zip(&taken).map(|(t, u)| t - u).collect();
        let cost = nodes_cost(rich, &rich_family, &keys, &taken)
            + nodes_cost(lean, &lean_family, &keys, &left);
        if cost.is_infinite() {
            continue; // a part some flavor of its pair lacks a resource for: never cheaper
        }
        // Finite, since the cost is: a whole count of nodes.
        let size = nodes(rich, &keys, &taken).ceil() as i64;
        let slot = best.entry(size).or_insert((f64::INFINITY, at));
        if cost < slot.0 {
            *slot = (cost, at);
        }
    }
    let before = claims.iter().fold(0.0, |acc, c| acc + c.price()) - SAVING;
    let mut chosen: Vec<(f64, usize)> = best.into_values().filter(|b| b.0 < before).collect();
    chosen.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let names = |family: &[&Rc<Flavor>]| -> Vec<String> {
        family.iter().map(|f| f.name().to_string()).collect()
    };
    let (rich_names, lean_names) = (names(&rich_family), names(&lean_family));
    chosen
        .into_iter()
        .take(MIX_TRIES)
        .map(|(_, at)| MixedSplit {
            cpu_rich: order[..at].to_vec(),
            cpu_rich_flavors: rich_names.clone(),
            rest: order[at..].to_vec(),
            rest_flavors: lean_names.clone(),
        })
        .collect()
}

fn memory_per_cpu(requests: &[i64], cpu_at: usize, memory_at: usize) -> f64 {
    let cpu = requests[cpu_at];
    if cpu > 0 {
        requests[memory_at] as f64 / cpu as f64
    } else {
        f64::INFINITY
    }
}

/// The fluid cost and the (CPU-rich, memory-rich) pair whose mix covers the CPU and memory exactly
/// and cheapest, first in the pool's order on a tie; None when their ratio lies outside every pair's.
fn cheapest_pair<'f>(
    flavors: &[&'f Rc<Flavor>],
    cpu_at: usize,
    memory_at: usize,
    cpu: i128,
    memory: i128,
) -> Option<(f64, &'f Rc<Flavor>, &'f Rc<Flavor>)> {
    let mut best: Option<(f64, &Rc<Flavor>, &Rc<Flavor>)> = None;
    for &rich in flavors {
        for &lean in flavors {
            let (rc, rm) = (
                i128::from(rich.net_dense[cpu_at]),
                i128::from(rich.net_dense[memory_at]),
            );
            let (lc, lm) = (
                i128::from(lean.net_dense[cpu_at]),
                i128::from(lean.net_dense[memory_at]),
            );
            let det = rc * lm - lc * rm;
            if det <= 0 {
                continue; // `rich` must hold strictly more CPU per byte than `lean`
            }
            // Nodes of each for which the two cover the CPU and the memory exactly: both positive
            // only when the pods' memory per CPU lies strictly between the two flavors'.
            let of_rich = cpu * lm - lc * memory;
            let of_lean = rc * memory - rm * cpu;
            if of_rich <= 0 || of_lean <= 0 {
                continue;
            }
            let cost = rich.base_price * (of_rich as f64 / det as f64)
                + lean.base_price * (of_lean as f64 / det as f64);
            if best.is_none_or(|b| cost < b.0) {
                best = Some((cost, rich, lean));
            }
        }
    }
    best
}

/// The flavors no bigger than `top` in any resource, in the pool's order (cheapest first): what a
/// part's claims may shrink to.
fn within<'f>(flavors: &[&'f Rc<Flavor>], top: &Flavor) -> Vec<&'f Rc<Flavor>> {
    flavors
        .iter()
        .copied()
        .filter(|f| f.net_dense.iter().zip(&top.net_dense).all(|(v, t)| v <= t))
        .collect()
}

/// How many of `top`'s nodes the amounts (at `keys`) fill, fractions counted, in the resource they
/// fill most (infinite when it lacks one of them).
fn nodes(top: &Flavor, keys: &[usize], amounts: &[i128]) -> f64 {
    let mut filled = 0.0f64;
    for (&at, &amount) in keys.iter().zip(amounts) {
        if amount <= 0 {
            continue;
        }
        let net = top.net_dense[at];
        if net <= 0 {
            return f64::INFINITY;
        }
        filled = filled.max(amount as f64 / net as f64);
    }
    filled
}

/// What the amounts (at `keys`) cost as whole nodes: as many full nodes of `top` as they fill, and
/// the cheapest flavor of the family that holds what is left over (its last claim shrinks to it).
fn nodes_cost(top: &Flavor, family: &[&Rc<Flavor>], keys: &[usize], amounts: &[i128]) -> f64 {
    let filled = nodes(top, keys, amounts);
    if filled.is_infinite() {
        return f64::INFINITY;
    }
    let full = filled.floor();
    let whole = full as i128;
    let left: Vec<i128> = keys
        .iter()
        .zip(amounts)
        .map(|(&at, &amount)| amount - whole * i128::from(top.net_dense[at]))
        .collect();
    if left.iter().all(|&v| v <= 0) {
        return full * top.base_price;
    }
    let tail = family
        .iter()
        .find(|f| {
            keys.iter()
                .zip(&left)
                .all(|(&at, &v)| v <= i128::from(f.net_dense[at]))
        })
        .map_or(top.base_price, |f| f.base_price);
    full * top.base_price + tail
}

#[cfg(test)]
#[path = "mixed_tests.rs"]
mod tests;
