//! Each planned claim's fallback flavors (twin of `greedy/alternatives.py`, which says why they are
//! chosen so): the other flavors of its pool that carry exactly its pods in the same zone and capacity
//! type, cheapest there first, worked out with the engine's own checks once the solve is over. A flavor
//! is left out when any topology group could tell it from the chosen one (a label key the groups count by
//! or pick nodes on, or, when a spread group counts nodes by their taints, the flavor's taints).

use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;

use super::Scheduler;
use crate::solver::flavors::{Flavor, OFFERING_KEYS};
use crate::solver::model::{lookup, Offering, HOSTNAME};
use crate::solver::resources as res;
use crate::solver::targets::Claim;
use crate::solver::topology::untolerated;

/// How many fallback flavors a claim lists at the most.
pub const MAX_ALTERNATIVES: usize = 4;

/// A pool's flavors on sale in one zone and capacity type, with their price there, cheapest first.
type Offered = Rc<Vec<(f64, Rc<Flavor>)>>;

/// Ranks the fallback flavors of the claims of one finished solve.
pub struct AlternativeFlavors {
    same_keys: Vec<String>,
    same_taints: bool,
    offered: HashMap<(usize, String, String), Offered>,
}

impl AlternativeFlavors {
    pub fn new(scheduler: &Scheduler<'_>) -> AlternativeFlavors {
        let mut keys = std::collections::BTreeSet::new();
        let mut same_taints = false;
        for group in &scheduler.topology.groups {
            keys.insert(group.key.clone());
            if let Some(nodes) = &group.nodes {
                keys.extend(nodes.alternatives.iter().flatten().map(|r| r.key.clone()));
                same_taints |= nodes.tolerations.is_some();
            }
        }
        // A claim's zone, capacity type and hostname are the same whatever its flavor.
        let same_keys = keys
            .into_iter()
            .filter(|k| k != HOSTNAME && !OFFERING_KEYS.contains(&k.as_str()))
            .collect();
        AlternativeFlavors {
            same_keys,
            same_taints,
            offered: HashMap::default(),
        }
    }

    /// Up to `MAX_ALTERNATIVES` other flavors that carry the claim's pods, cheapest first.
    pub fn ranked(&mut self, scheduler: &Scheduler<'_>, claim: &Claim) -> Vec<String> {
        let chosen = claim.chosen();
        let offering = chosen.cheapest_offering(&claim.requirements);
        let offered = self.offered_in(scheduler, claim.view, offering);
        offered
            .iter()
            .map(|(_, flavor)| flavor)
            .filter(|flavor| {
                flavor.name() != chosen.name() && self.carries(scheduler, claim, flavor)
            })
            .take(MAX_ALTERNATIVES)
            .map(|flavor| flavor.name().to_string())
            .collect()
    }

    fn offered_in(
        &mut self,
        scheduler: &Scheduler<'_>,
        view: usize,
        offering: &Offering,
    ) -> Offered {
        let key = (view, offering.zone.clone(), offering.capacity_type.clone());
        self.offered
            .entry(key)
            .or_insert_with(|| {
                let mut priced: Vec<(f64, Rc<Flavor>)> = scheduler.pools[view]
                    .flavors
                    .iter()
                    .filter_map(|f| price_in(f, offering).map(|price| (price, f.clone())))
                    .collect();
                priced.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.name().cmp(b.1.name())));
                Rc::new(priced)
            })
            .clone()
    }

    fn carries(&self, scheduler: &Scheduler<'_>, claim: &Claim, flavor: &Flavor) -> bool {
        let chosen = claim.chosen();
        if self
            .same_keys
            .iter()
            .any(|k| lookup(&flavor.it.labels, k) != lookup(&chosen.it.labels, k))
        {
            return false;
        }
        if self.same_taints && flavor.it.taints != chosen.it.taints {
            return false;
        }
        let nothing = vec![0; claim.used.len()];
        if !res::dense_fits(&nothing, &claim.used, &flavor.net_dense)
            || !flavor.compatible(&claim.requirements)
        {
            return false;
        }
        if !scheduler.pools[claim.view].within_limits(flavor, Some(chosen)) {
            return false;
        }
        claim.pods.iter().all(|&p| {
            let pod = &scheduler.pods[p];
            flavor.ports_free(pod)
                && untolerated(&pod.tolerations, &flavor.it.taints, false).is_none()
        })
    }
}

/// The flavor's price in the offering's zone and capacity type; None when it is not on sale there.
fn price_in(flavor: &Flavor, offering: &Offering) -> Option<f64> {
    flavor
        .it
        .offerings
        .iter()
        .filter(|o| {
            o.available && o.zone == offering.zone && o.capacity_type == offering.capacity_type
        })
        .map(|o| o.price)
        .reduce(f64::min)
}
