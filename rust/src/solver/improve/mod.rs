//! The cost pass (twin of `improve.py`): re-pack one or two claims into new claims held to one flavor,
//! keeping a move only when it is strictly cheaper; bounded by a count of pod placements. Claims holding
//! constrained pods go after the others, those pods anchored to their domains (`anchored`).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BTreeMap;
use std::rc::Rc;

use super::anchored::{
    constrained_counts, constrained_groups, is_constrained, AnchoredChecks, Anchors,
};
mod flavors;
mod mixed;

use flavors::candidate_flavors;

use super::greedy::{biggest_first, Checks, Restrict, Scheduler};
use super::model::ZONE;
use super::resources::dense_fits;
use super::targets::{Claim, ClaimList};

const PLACEMENTS_PER_POD: i64 = 10;
const BASE_PLACEMENTS: i64 = 2000;
const MAX_PLACEMENTS: i64 = 20_000;
const ALL_PAIRS_UP_TO: usize = 40;
const PAIR_WINDOW: usize = 8;
const GROUP_LIMIT: usize = 16;
const SAVING: f64 = 1e-9;

pub fn improve(s: &mut Scheduler) {
    let groups = constrained_groups(s);
    let mut pass = Pass {
        budget: (PLACEMENTS_PER_POD * s.pending.len() as i64 + BASE_PLACEMENTS).min(MAX_PLACEMENTS),
        anchors: Anchors::default(),
        floors: FloorCache::default(),
        sort_keys: vec![None; s.pods.len()],
        groups: &groups,
    };
    pass.mix(s);
    let mut improved = true;
    while improved && pass.budget > 0 {
        let (held, free): (Vec<&Claim>, Vec<&Claim>) = s
            .claims
            .iter()
            .map(|c| &**c)
            .partition(|c| c.pods.iter().any(|&p| is_constrained(s, p, &groups)));
        let free: Vec<usize> = free.iter().map(|c| c.index).collect();
        let held: Vec<usize> = held.iter().map(|c| c.index).collect();
        improved = pass.moves(s, &free);
        improved |= pass.zone_groups(s, &held);
    }
}

/// The pass's state across its moves: the placements left, the pods' checks (anchored or not), the cheapest claim per
/// pod shape, the pods' sort keys, the constrained groups.
struct Pass<'p> {
    budget: i64,
    anchors: Anchors,
    floors: FloorCache,
    sort_keys: SortKeys,
    groups: &'p HashSet<usize>,
}

impl Pass<'_> {
    /// The claims of one NodePool and zone together, up to GROUP_LIMIT at a time in index order:
    /// anchored pods move only within their zone, and one move over many of a zone's claims fills
    /// their holes first fit, biggest pod first, where single and pair moves only shuffle the same
    /// holes around. Whether some move was kept.
    fn zone_groups(&mut self, s: &mut Scheduler, movable: &[usize]) -> bool {
        let mut groups: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
        for claim in movable.iter().filter_map(|&i| s.claim(i)) {
            let key = (
                claim.pool_name.clone(),
                claim.domain(ZONE).unwrap_or_default(),
            );
            groups.entry(key).or_default().push(claim.index);
        }
        let mut improved = false;
        for chunk in groups
            .values()
            .flat_map(|members| members.chunks(GROUP_LIMIT))
        {
            if self.budget <= 0 {
                return improved;
            }
            if present(s, chunk) && self.repack(s, chunk) {
                improved = true;
            }
        }
        improved
    }

    /// Each claim alone, then pairs (all of them for small plans, neighbours by price otherwise);
    /// whether some move was kept.
    fn moves(&mut self, s: &mut Scheduler, movable: &[usize]) -> bool {
        let mut improved = false;
        for claim in movable {
            if self.budget <= 0 {
                return improved;
            }
            if present(s, &[*claim]) && self.repack(s, &[*claim]) {
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
        for i in 0..ordered.len() {
            for j in i + 1..(i + 1 + window).min(ordered.len()) {
                if self.budget <= 0 {
                    return improved;
                }
                let pair = [ordered[i].2, ordered[j].2];
                if present(s, &pair) && self.repack(s, &pair) {
                    improved = true;
                }
            }
        }
        improved
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

/// What the claims (by index) cost together, summed in their order as Python sums them.
fn price_of(s: &Scheduler, indexes: &[usize]) -> f64 {
    indexes
        .iter()
        .fold(0.0, |acc, i| acc + s.claim(*i).expect("created").price())
}

/// A new claim for the pod from the first pool that takes it, held to `restrict` if any can be;
/// where it sits in `claims`.
fn open(s: &mut Scheduler, checks: &Checks, restrict: Restrict) -> Option<usize> {
    let mut attempts = vec![restrict];
    if restrict.is_some() {
        attempts.push(None);
    }
    attempts
        .into_iter()
        .find_map(|flavor| (0..s.pools.len()).find_map(|v| s.open_claim(v, checks, flavor).ok()))
}

/// Take claims off the plan: their pods leave the counts, their flavors leave the limits.
pub(super) fn take_off(s: &mut Scheduler, indexes: &[usize]) -> ClaimList {
    let mut taken = Vec::new();
    for index in indexes {
        let at = s.position(*index).expect("claim present");
        let claim = s.claims.remove(at);
        s.room.stale = true;
        for &pod in &claim.pods {
            let domain = |key: &str| claim.domain_of(key);
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
            let domain = |key: &str| claim.domain_of(key);
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

/// Per pod (arena id), its `biggest_first` key, built the first time a move holds the pod: the key
/// names the pod, and formatting names again for every move was a sixteenth of capi-1000's solve.
type SortKeys = Vec<Option<(i64, i64, String)>>;

/// Per pod requests, the least a new claim holding such a pod can cost (`cheapest_fit`).
type FloorCache = HashMap<Vec<i64>, f64>;

/// The cheapest available offering of any pool's flavor whose net resources hold the requests: a
/// claim's price is an available offering of its chosen flavor, which holds every pod on it, so no new
/// claim for such a pod costs less (infinite when no flavor holds it, and then none opens).
fn cheapest_fit(s: &Scheduler, requests: &[i64]) -> f64 {
    let nothing = vec![0; requests.len()];
    s.pools
        .iter()
        .flat_map(|view| view.flavors.iter())
        .filter(|f| dense_fits(&nothing, requests, &f.net_dense))
        .flat_map(|f| f.it.offerings.iter().filter(|o| o.available))
        .map(|o| o.price)
        .fold(f64::INFINITY, f64::min)
}

impl Pass<'_> {
    /// The pod's checks: anchored ones for a constrained pod of the move, else those it was placed with.
    fn checks_of(s: &Scheduler, pod: usize, anchored: &AnchoredChecks) -> Rc<Checks> {
        anchored
            .get(&pod)
            .unwrap_or_else(|| &s.placed_checks[&pod])
            .clone()
    }

    fn floor_of(&mut self, s: &Scheduler, pod: usize) -> f64 {
        let requests = &s.requests[pod];
        if let Some(found) = self.floors.get(requests) {
            return *found;
        }
        let floor = cheapest_fit(s, requests);
        self.floors.insert(requests.clone(), floor);
        floor
    }

    /// Place the pods (biggest first, as `repack` sorted them) on new claims only, held to the flavors
    /// of `restrict` where they fit (and anchored pods to their domains); None (nothing left behind)
    /// when some pod cannot be placed, or as soon as the new claims and what the move `spent` before
    /// them cost `ceiling` or more: claims only grow and multiply, so such a move could no longer be
    /// kept.
    fn replace(
        &mut self,
        s: &mut Scheduler,
        order: &[usize],
        restrict: Restrict,
        anchored: &AnchoredChecks,
        ceiling: f64,
        spent: f64,
    ) -> Option<Vec<usize>> {
        let mut created: Vec<usize> = Vec::new();
        // Each created claim's price, in `created`'s order: only the claim that takes a pod changes
        // price, so it alone is priced again (pricing them all after every pod was a fifth of
        // spread-1000's solve). Summed in order, as `price_of` sums them.
        let mut prices: Vec<f64> = Vec::new();
        // New claims go to the end of `claims` (their indexes are the highest) and nothing else
        // moves claims until the move ends, so the created ones sit from `first` on, in order.
        let first = s.claims.len();
        for &pod in order {
            self.budget -= 1;
            let checks = Self::checks_of(s, pod, anchored);
            let joined = (first..first + created.len()).position(|at| {
                debug_assert_eq!(s.claims[at].index, created[at - first]);
                s.try_claim(at, &checks, false)
            });
            let total = |prices: &[f64]| prices.iter().fold(0.0, |acc, p| acc + p);
            match joined {
                Some(i) => prices[i] = s.claims[first + i].price(),
                None => {
                    // A new claim costs at least the pod's floor: when that reaches the ceiling, give
                    // the move up before opening it, as the check after opening would (the same
                    // placements spent).
                    if spent + total(&prices) + self.floor_of(s, pod) >= ceiling {
                        drop(take_off(s, &created));
                        return None;
                    }
                    let Some(at) = open(s, &checks, restrict) else {
                        drop(take_off(s, &created));
                        return None;
                    };
                    created.push(s.claims[at].index);
                    prices.push(s.claims[at].price());
                }
            }
            if spent + total(&prices) >= ceiling {
                drop(take_off(s, &created));
                return None;
            }
        }
        Some(created)
    }

    fn repack(&mut self, s: &mut Scheduler, indexes: &[usize]) -> bool {
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
        // Every strategy places the pods in the same order: sorted once here, not per strategy (the
        // sort key builds each pod's name).
        for &p in &pods {
            self.sort_keys[p].get_or_insert_with(|| biggest_first(s.pods[p]));
        }
        let mut order = pods.clone();
        order.sort_by(|a, b| self.sort_keys[*a].cmp(&self.sort_keys[*b]));
        let anchored = self.anchors.checks(s, indexes, self.groups);
        let counts = (!anchored.is_empty()).then(|| constrained_counts(s, &pods, self.groups));
        let taken = take_off(s, indexes);
        // The cheapest move so far, its claims taken off and kept aside: placing its pods again once
        // the strategies are all tried would give the same claims (the pass is deterministic and the
        // plan is back where it was), at a placement per pod.
        let mut best: Option<(f64, ClaimList)> = None;
        for restrict in strategies {
            if self.budget <= 0 {
                break;
            }
            let ceiling = match &best {
                None => before - SAVING,
                Some(b) => (before - SAVING).min(b.0),
            };
            let one = restrict.as_deref();
            let held = one.as_ref().map(std::slice::from_ref);
            let Some(created) = self.replace(s, &order, held, &anchored, ceiling, 0.0) else {
                continue;
            };
            let cost = price_of(s, &created);
            let kept = counts
                .as_ref()
                .is_none_or(|c| *c == constrained_counts(s, &pods, self.groups));
            let placed = take_off(s, &created);
            if kept && cost < before - SAVING && best.as_ref().is_none_or(|b| cost < b.0) {
                best = Some((cost, placed));
            }
        }
        let Some((_, placed)) = best else {
            put_back(s, taken);
            return false;
        };
        put_back(s, placed);
        s.removed.extend(taken);
        true
    }
}

#[cfg(test)]
#[path = "floors_tests.rs"]
mod tests;
