//! Why a pool cannot open a claim for a pod (twin of `greedy/refusals.py`): the reason a pod's
//! FailedScheduling Event and the plan give when no flavor of the pool can start a claim for it.

use std::rc::Rc;

use super::claims::{allowed, Opening, Restrict};
use super::{Checks, Scheduler};
use crate::solver::flavors::Flavor;
use crate::solver::model::{Pod, CPU, MEMORY};
use crate::solver::pools::PoolView;
use crate::solver::requirements::Reqs;
use crate::solver::resources as res;
use crate::solver::topology::untolerated;

impl Scheduler<'_> {
    /// Why no claim for the pod can open in the pool, when `roomy` found no flavor.
    pub(super) fn opening_failure(
        &self,
        opening: &Opening,
        checks: &Checks,
        view_at: usize,
        restrict: Restrict,
    ) -> String {
        let (merged, compatible) = (&opening.merged, &opening.compatible);
        let pod = &self.pods[checks.pod];
        let view = &self.pools[view_at];
        let allowed = |f: &&Rc<Flavor>| allowed(restrict, f);
        let tolerated =
            |f: &&Rc<Flavor>| untolerated(&pod.tolerations, &f.it.taints, checks.prefer).is_none();
        if !compatible.iter().any(|f| allowed(&f)) {
            if view.flavors.is_empty() && !view.crowded.is_empty() {
                return format!("its DaemonSets do not fit on {}", view.crowded.join(", "));
            }
            return unmatched(view, &checks.requirements, merged, restrict);
        }
        let flavors: Vec<Rc<Flavor>> = compatible
            .iter()
            .filter(allowed)
            .filter(tolerated)
            .cloned()
            .collect();
        if flavors.is_empty() {
            return "it does not tolerate the taints of any flavor".into();
        }
        let flavors: Vec<Rc<Flavor>> = flavors.into_iter().filter(|f| f.ports_free(pod)).collect();
        if flavors.is_empty() {
            return "a DaemonSet holds its host port on every flavor".into();
        }
        too_big(pod, &flavors)
    }
}

/// Name the pod requirement that no flavor of the pool can meet.
fn unmatched(view: &PoolView, pod_reqs: &Reqs, merged: &Reqs, restrict: Restrict) -> String {
    let candidates: Vec<&Rc<Flavor>> = view
        .flavors
        .iter()
        .filter(|f| allowed(restrict, f))
        .collect();
    for req in pod_reqs.0.iter() {
        let only = Reqs(Rc::new(vec![merged
            .get(&req.key)
            .expect("merged has every pod key")
            .clone()]));
        if !candidates.iter().any(|f| f.compatible(&only)) {
            return format!("no flavor matches {}", req.describe());
        }
    }
    "no flavor matches all of its requirements together".into()
}

/// The largest flavor left and the resource it is short of for the pod.
fn too_big(pod: &Pod, flavors: &[Rc<Flavor>]) -> String {
    let mut largest = &flavors[0];
    for f in &flavors[1..] {
        let key = |f: &Flavor| (res::get(&f.net, CPU), res::get(&f.net, MEMORY));
        if (key(f), f.name()) > (key(largest), largest.name()) {
            largest = f;
        }
    }
    let short = res::first_shortfall(&[], &pod.requests, &largest.net).unwrap_or(CPU);
    format!(
        "no flavor is big enough: it requests {short}={}, the largest flavor {} has {} allocatable after DaemonSets",
        res::describe(short, res::get(&pod.requests, short)),
        largest.name(),
        res::describe(short, res::get(&largest.net, short).max(0))
    )
}
