//! The cost pass (twin of `improve.py`): re-pack one or two claims into new claims held to one flavor,
//! keeping a move only when it is strictly cheaper; bounded by a count of pod placements.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::rc::Rc;

use super::greedy::{biggest_first, Checks, Scheduler};
use super::model::HOSTNAME;
use super::targets::{Claim, ClaimList, Flavor};
use super::topology::term_group;

const PLACEMENTS_PER_POD: i64 = 10;
const BASE_PLACEMENTS: i64 = 2000;
const MAX_PLACEMENTS: i64 = 20_000;
const ALL_PAIRS_UP_TO: usize = 40;
const PAIR_WINDOW: usize = 8;
const FLAVORS_PER_MOVE: usize = 4;
const SAVING: f64 = 1e-9;

pub fn improve(s: &mut Scheduler) {
    let mut budget =
        (PLACEMENTS_PER_POD * s.pending.len() as i64 + BASE_PLACEMENTS).min(MAX_PLACEMENTS);
    let pinned = pinned_groups(s);
    let mut cache = ChecksCache::default();
    let mut improved = true;
    while improved && budget > 0 {
        improved = false;
        let movable: Vec<usize> = s
            .claims
            .iter()
            .filter(|c| !c.pods.iter().any(|&p| is_pinned(s, p, &pinned)))
            .map(|c| c.index)
            .collect();
        for claim in &movable {
            if budget <= 0 {
                break;
            }
            if present(s, &[*claim]) && repack(s, &[*claim], &mut budget, &mut cache) {
                improved = true;
            }
        }
        let mut ordered: Vec<(String, f64, usize)> = movable
            .iter()
            .filter_map(|&i| s.claim(i))
            .map(|c| (c.pool_name.clone(), -c.price(), c.index))
            .collect();
        // Claims repacked away above are no longer there; Python sorts the stale objects, whose prices
        // did not change, so the order is the same.
        let stale: Vec<usize> = movable
            .iter()
            .copied()
            .filter(|i| !ordered.iter().any(|o| o.2 == *i))
            .collect();
        ordered.extend(stale_prices(s, &stale));
        ordered.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(&b.2)));
        let window = if ordered.len() <= ALL_PAIRS_UP_TO {
            ordered.len()
        } else {
            PAIR_WINDOW
        };
        'pairs: for i in 0..ordered.len() {
            for j in i + 1..(i + 1 + window).min(ordered.len()) {
                if budget <= 0 {
                    break 'pairs;
                }
                let pair = [ordered[i].2, ordered[j].2];
                if present(s, &pair) && repack(s, &pair, &mut budget, &mut cache) {
                    improved = true;
                }
            }
        }
    }
}

fn stale_prices(s: &Scheduler, stale: &[usize]) -> Vec<(String, f64, usize)> {
    s.removed
        .iter()
        .filter(|c| stale.contains(&c.index))
        .map(|c| (c.pool_name.clone(), -c.price(), c.index))
        .collect()
}

fn present(s: &Scheduler, indexes: &[usize]) -> bool {
    indexes.iter().all(|i| s.position(*i).is_some())
}

pub(super) fn pinned_groups(s: &Scheduler) -> HashSet<usize> {
    let topo = &s.topology;
    let mut pinned = HashSet::default();
    for pod in &s.pods {
        for t in &pod.affinity {
            pinned.insert(topo.id_of(&term_group(t)));
        }
        for w in &pod.preferred_affinity {
            pinned.insert(topo.id_of(&term_group(&w.term)));
        }
    }
    for rule in &topo.rules {
        if rule.constraint.topology_key != HOSTNAME {
            pinned.insert(rule.group);
        }
    }
    pinned
}

pub(super) fn is_pinned(s: &Scheduler, pod: usize, pinned: &HashSet<usize>) -> bool {
    s.topology
        .selecting_cached(pod)
        .iter()
        .any(|g| pinned.contains(g))
}

fn candidate_flavors(s: &Scheduler, claims: &[&Claim], pods: &[usize]) -> Vec<Option<String>> {
    let chosen = claims.iter().map(|c| c.chosen().name().to_string());
    let mix = PodMix::of(s, pods);
    let efficient = mix.most_efficient(&s.pools[claims[0].view].flavors);
    let mut out: Vec<Option<String>> = vec![None];
    for name in efficient.into_iter().chain(chosen) {
        if !out.contains(&Some(name.clone())) {
            out.push(Some(name));
        }
    }
    if claims.len() == 1 {
        let current = claims[0].chosen().name();
        out.retain(|f| f.as_deref().is_some_and(|n| n != current));
    }
    out
}

/// The pods of a move as one mix: how many, and per resource the first pod requests (as positions
/// in the dense vectors) what they request in all, where that is more than nothing.
struct PodMix {
    count: i128,
    totals: Vec<(usize, i128)>,
}

/// A flavor's score for a mix: price per pod held, then price.
type Score = (f64, f64);

impl PodMix {
    fn of(s: &Scheduler, pods: &[usize]) -> PodMix {
        let totals = s.pods[pods[0]]
            .requests
            .iter()
            .filter_map(|(key, _)| s.names.position(key))
            .map(|at| {
                let total: i64 = pods.iter().map(|&p| s.requests[p][at]).sum();
                (at, total as i128)
            })
            .filter(|(_, total)| *total > 0)
            .collect();
        PodMix {
            count: pods.len() as i128,
            totals,
        }
    }

    /// How many average pods of this mix the flavor holds, in exact integers (as Python does).
    fn held_by(&self, flavor: &Flavor) -> i64 {
        let count = self.count;
        self.totals
            .iter()
            .map(|&(at, total)| {
                let net = flavor.net_dense[at];
                // i64 when the product fits (it nearly always does), i128 otherwise: the same floor.
                match (net.checked_mul(count as i64), i64::try_from(total)) {
                    (Some(product), Ok(total)) => product.div_euclid(total) as i128,
                    _ => (net as i128 * count).div_euclid(total),
                }
            })
            .min()
            .unwrap_or(count)
            .min(count) as i64
    }

    fn score(&self, flavor: &Flavor) -> Score {
        let fit = self.held_by(flavor);
        let price = flavor.base_price;
        let per_pod = if fit > 0 {
            price / fit as f64
        } else {
            f64::INFINITY
        };
        (per_pod, price)
    }

    /// The names of the `FLAVORS_PER_MOVE` flavors (of a pool's, cheapest first) with the best
    /// scores that hold a pod at all, best first.
    fn most_efficient(&self, flavors: &[Rc<Flavor>]) -> Vec<String> {
        let order = |(pa, na): &(Score, &str), (pb, nb): &(Score, &str)| {
            pa.0.total_cmp(&pb.0)
                .then(pa.1.total_cmp(&pb.1))
                .then_with(|| na.cmp(nb))
        };
        // Only the first few count, kept in order as the flavors go by (entries that compare equal
        // share a name, so which of them is kept does not show). The pool's flavors come cheapest
        // first, and a flavor's price per pod is at least its price over all the pods: once that
        // passes the last score kept, no later flavor can get in.
        let mut ranked: Vec<(Score, &str)> = Vec::with_capacity(FLAVORS_PER_MOVE + 1);
        let pods = self.count as f64;
        for flavor in flavors {
            if ranked.len() == FLAVORS_PER_MOVE {
                let floor = flavor.base_price / pods;
                let last = ranked[FLAVORS_PER_MOVE - 1].0 .0;
                if flavor.base_price >= 0.0 && floor.total_cmp(&last).is_gt() {
                    break;
                }
            }
            let entry = (self.score(flavor), flavor.name());
            let at = ranked.partition_point(|kept| order(kept, &entry).is_le());
            if at < FLAVORS_PER_MOVE {
                ranked.insert(at, entry);
                ranked.truncate(FLAVORS_PER_MOVE);
            }
        }
        ranked
            .iter()
            .take(FLAVORS_PER_MOVE)
            .filter(|(score, _)| score.0 != f64::INFINITY)
            .map(|(_, name)| name.to_string())
            .collect()
    }
}

/// Take claims off the plan: their pods leave the counts, their flavors leave the limits.
pub(super) fn take_off(s: &mut Scheduler, indexes: &[usize]) -> ClaimList {
    let mut taken = Vec::new();
    for index in indexes {
        let at = s.position(*index).expect("claim present");
        let claim = s.claims.remove(at);
        s.room.stale = true;
        for &pod in &claim.pods {
            let domain = |key: &str| claim.domain(key);
            let taints = claim.taints(&s.pools[claim.view].pool.taints);
            s.topology
                .record(pod, s.pods[pod], &domain, &taints, -1, true);
        }
        s.pools[claim.view].charge(None, Some(claim.chosen()));
        taken.push(claim);
    }
    taken
}

pub(super) fn put_back(s: &mut Scheduler, claims: ClaimList) {
    for claim in claims {
        s.pools[claim.view].charge(Some(claim.chosen()), None);
        for &pod in &claim.pods {
            let domain = |key: &str| claim.domain(key);
            let taints = claim.taints(&s.pools[claim.view].pool.taints);
            s.topology
                .record(pod, s.pods[pod], &domain, &taints, 1, true);
        }
        // Back where its index puts it (claims stay sorted by index).
        let at = s.claims.partition_point(|c| c.index < claim.index);
        s.claims.insert(at, claim);
    }
    s.room.stale = true;
}

/// Place the pods on new claims only, held to `restrict` where it fits; None (nothing left behind)
/// when some pod cannot be placed.
/// A pod's checks depend on its relaxation level and the registered groups, never on counts, so the
/// pass builds them once per pod.
type ChecksCache = HashMap<usize, Rc<Checks>>;

fn replace(
    s: &mut Scheduler,
    pods: &[usize],
    restrict: Option<&str>,
    budget: &mut i64,
    cache: &mut ChecksCache,
) -> Option<Vec<usize>> {
    let mut order = pods.to_vec();
    order.sort_by_cached_key(|&p| biggest_first(s.pods[p]));
    let mut created: Vec<usize> = Vec::new();
    for pod in order {
        *budget -= 1;
        let checks = match cache.get(&pod) {
            Some(found) => found.clone(),
            None => {
                let prefs = s.placed_prefs[&pod].clone();
                let built = Rc::new(s.checks(pod, &prefs));
                cache.insert(pod, built.clone());
                built
            }
        };
        let mut placed = false;
        for &index in &created {
            let at = s.position(index).expect("created claim");
            if s.try_claim(at, &checks, false).is_ok() {
                placed = true;
                break;
            }
        }
        if placed {
            continue;
        }
        let mut attempts = vec![restrict];
        if restrict.is_some() {
            attempts.push(None);
        }
        'attempts: for flavor in attempts {
            for v in 0..s.pools.len() {
                if let Ok(at) = s.open_claim(v, &checks, flavor) {
                    created.push(s.claims[at].index);
                    placed = true;
                    break 'attempts;
                }
            }
        }
        if !placed {
            let gone = take_off(s, &created);
            drop(gone);
            return None;
        }
    }
    Some(created)
}

fn repack(s: &mut Scheduler, indexes: &[usize], budget: &mut i64, cache: &mut ChecksCache) -> bool {
    let claims: Vec<&Claim> = indexes
        .iter()
        .map(|i| s.claim(*i).expect("present"))
        .collect();
    let before: f64 = claims.iter().fold(0.0, |acc, c| acc + c.price());
    let pods: Vec<usize> = claims.iter().flat_map(|c| c.pods.iter().copied()).collect();
    if pods.is_empty() {
        return false;
    }
    let strategies = candidate_flavors(s, &claims, &pods);
    let taken = take_off(s, indexes);
    let mut best: Option<(f64, Option<String>)> = None;
    for restrict in strategies {
        if *budget <= 0 {
            break;
        }
        let Some(created) = replace(s, &pods, restrict.as_deref(), budget, cache) else {
            continue;
        };
        let cost = created
            .iter()
            .fold(0.0, |acc, i| acc + s.claim(*i).expect("created").price());
        let gone = take_off(s, &created);
        drop(gone);
        if cost < before - SAVING && best.as_ref().is_none_or(|b| cost < b.0) {
            best = Some((cost, restrict));
        }
    }
    let Some((_, restrict)) = best else {
        put_back(s, taken);
        return false;
    };
    if replace(s, &pods, restrict.as_deref(), budget, cache).is_none() {
        put_back(s, taken);
        return false;
    }
    s.removed.extend(taken);
    true
}
