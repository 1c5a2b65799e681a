//! Joining and opening claims (twin of `greedy/claims.py`): what adding a pod to a claim changes, the
//! flavors a new claim starts from (cached per pool and pod requirements), and why a pool cannot open one.

use std::cell::RefCell;
use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

use super::{room_left, Checks, Scheduler};
use crate::solver::flavors::{most_net, Flavor, FlavorList, OFFERING_KEYS};
use crate::solver::model::{HostPort, Toleration, HOSTNAME};
use crate::solver::pools::PoolView;
use crate::solver::requirements::Reqs;
use crate::solver::resources as res;
use crate::solver::targets::Claim;
use crate::solver::topology::untolerated;

/// The flavors a new claim may take, by name; None: any.
pub type Restrict<'r> = Option<&'r [&'r str]>;

pub(super) fn allowed(restrict: Restrict, flavor: &Flavor) -> bool {
    restrict.is_none_or(|names| names.contains(&flavor.name()))
}

/// What adding a pod to a claim changes, computed before anything is mutated.
pub struct Addition {
    requirements: Reqs,
    flavors: FlavorList,
    replacing: Option<Rc<Flavor>>,
}

/// A pool's flavors for one set of pod requirements (see `Scheduler::opening`).
pub(super) struct Opening {
    pub(super) merged: Reqs,
    pub(super) compatible: Rc<Vec<Rc<Flavor>>>,
    /// Per flavor restriction, toleration of PreferNoSchedule, tolerations and requests: the
    /// compatible flavors a new claim can start from and their `max_net`, or None when there is none.
    roomy: RefCell<HashMap<StartKey, Option<Start>>>,
}

/// What decides which of an opening's flavors a new claim can start from.
#[derive(PartialEq, Eq, Hash)]
pub(super) struct StartKey {
    restrict: Option<Vec<String>>,
    prefer: bool,
    tolerations: Vec<Toleration>,
    host_ports: Vec<HostPort>,
    requests: Vec<i64>,
}

/// The flavors a new claim starts from and their `max_net`.
#[derive(Clone)]
pub(super) struct Start {
    flavors: FlavorList,
    max_net: Vec<i64>,
}

impl Scheduler<'_> {
    /// Whether the pod can join the claim, and what that changes; otherwise why not.
    pub fn evaluate(&self, claim: &Claim, checks: &Checks) -> Result<Addition, String> {
        let mut merged = self.admit(claim, checks)?;
        let needs_all = needs_every_flavor(checks, &merged);
        // A claim without pods comes straight from `open_claim`, which kept only the flavors that hold
        // the pod under these same merged requirements: filtering them again would keep them all.
        let mut flavors: FlavorList = if needs_all && !claim.pods.is_empty() {
            let test = self.flavor_test(claim, &merged);
            claim
                .flavors
                .filtered(|f| self.holds(claim, checks, &test, f))
        } else {
            claim.flavors.clone()
        };
        if needs_all && flavors.is_empty() {
            return Err("no flavor has room for it".into());
        }
        flavors = self.settle_domains(claim, checks, &mut merged, flavors)?;
        if OFFERING_KEYS
            .iter()
            .any(|k| merged.get(k) != claim.requirements.get(k))
        {
            flavors.sort_by_price(&merged);
        }
        let replacing = if claim.pods.is_empty() {
            None
        } else {
            Some(claim.flavors[0].clone())
        };
        let head =
            self.first_within_limits(claim, checks, &merged, &flavors, needs_all, &replacing)?;
        flavors.drop_front(head);
        min_values_problem(&flavors, &merged)?;
        Ok(Addition {
            requirements: merged,
            flavors,
            replacing,
        })
    }

    /// The claim's requirements merged with the pod's, unless the pool's taints, the merge or a host
    /// port already taken on the claim turn the pod away.
    fn admit(&self, claim: &Claim, checks: &Checks) -> Result<Reqs, String> {
        let pod = &self.pods[checks.pod];
        let view = &self.pools[claim.view];
        if let Some(taint) = untolerated(&pod.tolerations, &view.pool.taints, checks.prefer) {
            return Err(format!("does not tolerate the NodePool's taint {taint}"));
        }
        let merged = self.merge(&claim.requirements, &checks.requirements)?;
        if pod
            .host_ports
            .iter()
            .any(|a| claim.ports.iter().any(|b| a.conflicts(b)))
        {
            return Err("host port already taken".into());
        }
        Ok(merged)
    }

    /// Where the claim's new head flavor is: the first that holds the pod (every one does when
    /// `needs_all` filtered them) within the pool's limits; otherwise whether limits or room failed.
    fn first_within_limits(
        &self,
        claim: &Claim,
        checks: &Checks,
        merged: &Reqs,
        flavors: &FlavorList,
        needs_all: bool,
        replacing: &Option<Rc<Flavor>>,
    ) -> Result<usize, String> {
        let view = &self.pools[claim.view];
        // `merged` may have narrowed since the flavors were filtered.
        let test = self.flavor_test(claim, merged);
        let head = flavors.iter().position(|f| {
            (needs_all || self.holds(claim, checks, &test, f))
                && view.within_limits(f, replacing.as_deref())
        });
        head.ok_or_else(|| {
            if needs_all || flavors.iter().any(|f| self.holds(claim, checks, &test, f)) {
                format!("limits reached ({})", limits_text(view))
            } else {
                "no flavor has room for it".into()
            }
        })
    }

    fn commit(&mut self, claim_at: usize, pod_id: usize, addition: Addition) {
        let Addition {
            requirements,
            flavors,
            replacing,
        } = addition;
        let claim = &mut self.claims[claim_at];
        self.pools[claim.view].charge(Some(&flavors[0]), replacing.as_deref());
        claim.requirements = requirements;
        // Flavors only drop out, so the bound taken when the claim opened stays an upper bound.
        claim.flavors = flavors;
        let pod = &self.pods[pod_id];
        res::dense_add(&mut claim.used, &self.requests[pod_id]);
        claim.pods.push(pod_id);
        claim.ports.extend(pod.host_ports.iter().cloned());
        let claim = &self.claims[claim_at];
        // A stale index ignores what it is told (it is rebuilt before use): the cost pass leaves it
        // stale through its moves, and its room need not be worked out for every pod placed.
        if !self.room.stale {
            self.room.set(claim_at, &room_left(claim));
        }
        let domain = |key: &str| claim.domain_of(key);
        let taints = claim.taints(&self.pools[claim.view].pool.taints);
        self.topology
            .record(pod_id, self.pods[pod_id], &domain, &taints, 1, true);
    }

    /// Add the pod to the claim if it fits (with `keep_flavor`, only if the claim keeps its flavor);
    /// whether it did. Every caller only asks whether, and most claims turn most pods away, so the
    /// refusal is worded nowhere (`evaluate` says why for a new claim).
    pub fn try_claim(&mut self, claim_at: usize, checks: &Checks, keep_flavor: bool) -> bool {
        let claim = &self.claims[claim_at];
        if keep_flavor
            && !res::dense_fits(
                &claim.used,
                &self.requests[checks.pod],
                &claim.chosen().net_dense,
            )
        {
            return false;
        }
        if !self.might_take(claim, checks) {
            return false;
        }
        let Ok(addition) = self.evaluate(claim, checks) else {
            return false;
        };
        if keep_flavor && addition.flavors[0].name() != claim.chosen().name() {
            return false;
        }
        self.commit(claim_at, checks.pod, addition);
        true
    }

    /// Open a claim in the pool for the pod (held to the flavors `restrict` names, if any); the claim's
    /// position in `claims`, or why not.
    pub fn open_claim(
        &mut self,
        view_at: usize,
        checks: &Checks,
        restrict: Restrict,
    ) -> Result<usize, String> {
        let opening = self.opening_for(view_at, &checks.requirements)?;
        let pod = &self.pods[checks.pod];
        let key = StartKey {
            restrict: restrict.map(|names| names.iter().map(|n| n.to_string()).collect()),
            prefer: checks.prefer,
            tolerations: pod.tolerations.clone(),
            host_ports: pod.host_ports.clone(),
            requests: self.requests[checks.pod].clone(),
        };
        let cached = opening.roomy.borrow().get(&key).cloned();
        let start = match cached {
            Some(found) => found,
            None => {
                let found = self.roomy(view_at, &opening, checks, restrict);
                opening.roomy.borrow_mut().insert(key, found.clone());
                found
            }
        };
        let Some(Start { flavors, max_net }) = start else {
            return Err(self.opening_failure(&opening, checks, view_at, restrict));
        };
        // The claim starts from the pool's requirements merged with the pod's, worked out once per
        // opening: merging the pod's requirements into them again narrows nothing (intersecting is
        // idempotent), where merging them into the pool's alone was a fifth of opening a claim.
        let claim = Claim::new(
            self.next_index,
            view_at,
            &self.pools[view_at].pool.name,
            opening.merged.clone(),
            flavors,
            max_net,
        );
        let addition = self.evaluate(&claim, checks)?;
        self.next_index += 1;
        self.claims.push(Box::new(claim));
        let at = self.claims.len() - 1;
        self.commit(at, checks.pod, addition);
        Ok(at)
    }

    /// The pool's requirements merged with the pod's and the pool's flavors compatible with them (or why
    /// the merge fails), worked out once per pool and pod requirements.
    fn opening_for(&mut self, view_at: usize, pod_reqs: &Reqs) -> Result<Rc<Opening>, String> {
        if let Some(found) = self.opening[view_at].get(pod_reqs) {
            return found.clone();
        }
        let view = &self.pools[view_at];
        let found = self.merge(&view.base, pod_reqs).map(|merged| {
            let flavors = view
                .flavors
                .iter()
                .filter(|f| f.compatible(&merged))
                .cloned()
                .collect();
            Rc::new(Opening {
                merged,
                compatible: Rc::new(flavors),
                roomy: RefCell::default(),
            })
        });
        self.opening[view_at].insert(pod_reqs.clone(), found.clone());
        found
    }

    /// The compatible flavors a new claim for the pod starts from: held to `restrict`'s flavors, tolerated,
    /// with room for the pod on an empty node; with their `max_net`. None when there is none. In price
    /// order under the merged requirements when their zone or capacity type differs from the pool's
    /// (whose order the pool's flavors have), as `evaluate` would sort them for a claim starting from
    /// the pool's requirements.
    fn roomy(
        &self,
        view_at: usize,
        opening: &Opening,
        checks: &Checks,
        restrict: Restrict,
    ) -> Option<Start> {
        let pod = &self.pods[checks.pod];
        let request = &self.requests[checks.pod];
        let mut roomy = FlavorList::shared(opening.compatible.clone(), 0).filtered(|f| {
            allowed(restrict, f)
                && untolerated(&pod.tolerations, &f.it.taints, checks.prefer).is_none()
                && f.ports_free(pod)
                && request
                    .iter()
                    .zip(&f.net_dense)
                    .all(|(r, a)| *r == 0 || r <= a)
        });
        if roomy.is_empty() {
            return None;
        }
        let base = &self.pools[view_at].base;
        if OFFERING_KEYS
            .iter()
            .any(|k| opening.merged.get(k) != base.get(k))
        {
            roomy.sort_by_price(&opening.merged);
        }
        let max_net = most_net(&roomy);
        Some(Start {
            flavors: roomy,
            max_net,
        })
    }
}

/// Whether every flavor left must be checked against the pod: a topology key still open (its domain
/// is chosen among the flavors) or a minValues requirement (it counts them).
fn needs_every_flavor(checks: &Checks, merged: &Reqs) -> bool {
    checks
        .keys
        .iter()
        .any(|k| k != HOSTNAME && !merged.pinned(k))
        || merged
            .0
            .iter()
            .any(|r| r.min_values.is_some_and(|m| m != 0))
}

/// The first minValues requirement the flavors left no longer meet, as a reason.
fn min_values_problem(flavors: &FlavorList, merged: &Reqs) -> Result<(), String> {
    for req in merged.0.iter() {
        if let Some(min) = req.min_values.filter(|&m| m != 0) {
            let distinct: BTreeSet<String> = flavors
                .iter()
                .flat_map(|f| f.label(&req.key, merged))
                .collect();
            if (distinct.len() as i64) < min {
                return Err(format!(
                    "fewer than minValues {min} flavors left for {}",
                    req.key
                ));
            }
        }
    }
    Ok(())
}

/// The pool's limits and what is left of each, for a reason that names them.
fn limits_text(view: &PoolView) -> String {
    let mut keys: Vec<&(String, i64)> = view.remaining.iter().collect();
    keys.sort();
    keys.iter()
        .map(|(key, left)| {
            let limit = res::get(&view.pool.limits, key);
            format!(
                "{key} limit {}, {} left",
                res::describe(key, limit),
                res::describe(key, (*left).max(0))
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}
