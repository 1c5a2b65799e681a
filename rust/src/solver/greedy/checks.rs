//! What one pod's constraints allow where (twin of `greedy/checks.py`): its checks resolved against the
//! topology groups, the topology problem a domain would raise, and the feasibility tests of existing
//! nodes and claims.

use std::collections::BTreeSet;
use std::rc::Rc;

use super::Scheduler;
use crate::solver::counts::SpreadRule;
use crate::solver::flavor_test::FlavorTest;
use crate::solver::flavors::Flavor;
use crate::solver::model::{Taint, TopologySpreadConstraint, HOSTNAME};
use crate::solver::preferences::Preferences;
use crate::solver::requirements::{Reqs, Requirement};
use crate::solver::resources as res;
use crate::solver::targets::{with_flavor_taints, Claim, ExistingTarget};
use crate::solver::topology::{min_count, spread_filter, spread_group, term_group, untolerated};

use super::Problem;

/// One pod's constraints at one relaxation level, resolved against the topology groups.
#[derive(Clone)]
pub struct Checks {
    pub pod: usize,
    pub requirements: Reqs,
    /// Whether PreferNoSchedule taints still count.
    pub prefer: bool,
    /// Shared: the cost pass copies a pod's checks to anchor them, and the spread checks (selector,
    /// domains) are their largest part.
    pub spread: Rc<[SpreadCheck]>,
    /// Ids of the hard spread rules whose group counts this pod, but the pod's own: its spread checks
    /// test those (same group, constraint and domains, the pod counted), and first.
    pub rules: Vec<usize>,
    pub affinity: Vec<AffinityCheck>,
    pub anti: Vec<AntiCheck>,
    /// Anti-affinity that pods already placed declare against this one.
    pub symmetric_anti: Vec<AntiCheck>,
    /// The topology keys whose domain a placement must settle, sorted.
    pub keys: Vec<String>,
}

/// One of the pod's own topology spread constraints.
#[derive(Clone)]
pub struct SpreadCheck {
    pub constraint: TopologySpreadConstraint,
    /// The topology group that counts the pods the constraint selects.
    pub group: usize,
    /// The domains the skew is measured over.
    pub universe: Rc<BTreeSet<String>>,
    /// 1 when the pod counts towards its own constraint, else 0.
    pub self_match: i64,
}

/// A required pod affinity term: some pod of `group` must be in the pod's domain of `key`.
#[derive(Clone)]
pub struct AffinityCheck {
    pub group: usize,
    pub key: String,
    /// Whether the pod matches its own term (then the first such pod may land anywhere).
    pub self_selected: bool,
}

/// An anti-affinity term: no pod of `group` may be in the pod's domain of `key`.
#[derive(Clone)]
pub struct AntiCheck {
    pub group: usize,
    pub key: String,
}

impl Scheduler<'_> {
    pub fn checks(&mut self, pod_id: usize, prefs: &Preferences) -> Checks {
        let spread = self.spread_checks(pod_id, prefs);
        let rules = self.rules_counting(pod_id);
        let pod = &self.pods[pod_id];
        let topo = &mut self.topology;
        let affinity = prefs
            .affinity(pod)
            .iter()
            .map(|term| {
                let group = term_group(term);
                AffinityCheck {
                    group: topo.id_of(&group),
                    key: term.topology_key.clone(),
                    self_selected: group.selects(pod),
                }
            })
            .collect();
        let anti = prefs
            .anti_affinity(pod)
            .iter()
            .map(|t| AntiCheck {
                group: topo.id_of(&term_group(t)),
                key: t.topology_key.clone(),
            })
            .collect();
        let symmetric_anti = topo
            .selecting(pod_id, pod)
            .iter()
            .copied()
            .filter(|g| topo.anti_owners.contains_key(g))
            .map(|g| AntiCheck {
                group: g,
                key: topo.groups[g].key.clone(),
            })
            .collect();
        let keys = topo.relevant_keys(pod_id, pod);
        Checks {
            pod: pod_id,
            requirements: prefs.node_requirements(pod),
            prefer: !prefs.tolerate_prefer_no_schedule,
            spread: spread.into(),
            rules,
            affinity,
            anti,
            symmetric_anti,
            keys,
        }
    }

    /// The pod's spread constraints under these preferences, each with its group and domains. A
    /// pending pod's hard ones are its own rules, made with their groups and domains when the topology
    /// registered it: only the soft ones (ScheduleAnyway, still enforced) are worked out here.
    fn spread_checks(&mut self, pod_id: usize, prefs: &Preferences) -> Vec<SpreadCheck> {
        let pod = &self.pods[pod_id];
        let topo = &mut self.topology;
        let own = topo.carried_by(pod_id);
        let mut spread: Vec<SpreadCheck> = own
            .iter()
            .map(|&r| {
                let rule = &topo.rules[r];
                SpreadCheck {
                    constraint: rule.constraint.clone(),
                    group: rule.group,
                    universe: rule.universe.clone(),
                    self_match: i64::from(topo.groups[rule.group].selects(pod)),
                }
            })
            .collect();
        let rest = if own.is_empty() {
            prefs.spread(pod)
        } else {
            prefs.spread_anyway.clone()
        };
        for constraint in rest {
            let group = spread_group(pod, &constraint, spread_filter(pod, &constraint));
            let gid = topo.id_of(&group);
            let universe = topo.universe(self.snapshot, pod, &constraint, &group.nodes);
            let self_match = i64::from(topo.groups[gid].selects(pod));
            spread.push(SpreadCheck {
                constraint,
                group: gid,
                universe,
                self_match,
            });
        }
        spread
    }

    /// The spread rules of pending pods whose group counts this pod, its own left out (kept per pod:
    /// they never change). A rule of its own allows a domain whenever its spread check does, and that
    /// check comes first: asking the rule too cost a tenth of every placement's topology checks.
    fn rules_counting(&mut self, pod_id: usize) -> Vec<usize> {
        let pod = &self.pods[pod_id];
        let topo = &mut self.topology;
        if let std::collections::hash_map::Entry::Vacant(slot) = self.rules_of.entry(pod_id) {
            let selecting: BTreeSet<usize> = topo.selecting(pod_id, pod).iter().copied().collect();
            let own = topo.carried_by(pod_id);
            let rules = (0..topo.rules.len())
                .filter(|&r| selecting.contains(&topo.rules[r].group) && !own.contains(&r))
                .collect();
            slot.insert(rules);
        }
        self.rules_of[&pod_id].clone()
    }

    fn spread_allows(&self, spread: &SpreadCheck, value: Option<&str>) -> bool {
        let Some(value) = value else {
            return false;
        };
        let counts = &self.topology.counts[spread.group];
        let floor = min_count(&spread.constraint, &spread.universe, counts);
        counts.get(value).copied().unwrap_or(0) + spread.self_match - floor
            <= spread.constraint.max_skew
    }

    /// Why placing the pod where `key` has `value` breaks a topology constraint, or None. Returns a
    /// `Problem` rather than a message so the hot path of rejecting claims allocates nothing.
    pub fn domain_problem<'k>(
        &self,
        checks: &Checks,
        key: &'k str,
        value: Option<&'k str>,
    ) -> Option<Problem<'k>> {
        let topo = &self.topology;
        for spread in checks.spread.iter() {
            if spread.constraint.topology_key == key && !self.spread_allows(spread, value) {
                return Some(Problem::Spread(key, spread.constraint.max_skew));
            }
        }
        for &r in &checks.rules {
            let rule: &SpreadRule = &topo.rules[r];
            if rule.constraint.topology_key == key
                && value.is_some_and(|v| topo.carriers_there(r, v))
                && !topo.rule_allows(rule, value, 1)
            {
                return Some(Problem::GroupSpread(key));
            }
        }
        for term in &checks.affinity {
            if term.key != key {
                continue;
            }
            let Some(value) = value else {
                return Some(Problem::AffinityNeedsLabel(key));
            };
            let here = topo.counts[term.group].get(value).copied().unwrap_or(0);
            if here == 0 && !(topo.totals[term.group] == 0 && term.self_selected) {
                return Some(Problem::AffinityNoMatch(key));
            }
        }
        if let Some(value) = value {
            for term in &checks.anti {
                if term.key == key && topo.counts[term.group].get(value).copied().unwrap_or(0) > 0 {
                    return Some(Problem::Anti(key));
                }
            }
            for term in &checks.symmetric_anti {
                if term.key == key
                    && topo.anti_owners[&term.group]
                        .get(value)
                        .copied()
                        .unwrap_or(0)
                        > 0
                {
                    return Some(Problem::Excluded(key, value));
                }
            }
        }
        None
    }

    pub fn merge(&self, base: &Reqs, pod_reqs: &Reqs) -> Result<Reqs, String> {
        let mut out = base.clone();
        for req in pod_reqs.0.iter() {
            let current = match out.get(&req.key) {
                // A requirement met again as it stands (a pod anchored to its claim's zone, a pool's
                // own requirement) narrows nothing: intersecting it with itself gives it back, since
                // without bounds (or as a complement) no value is filtered out; an empty one still
                // fails below.
                Some(found)
                    if found == req
                        && !found.is_empty()
                        && (req.complement
                            || (req.greater_than.is_none() && req.less_than.is_none())) =>
                {
                    continue
                }
                Some(found) => found.clone(),
                None if self.flavor_keys.contains(&req.key) => Requirement::any_value(&req.key),
                None => Requirement::absent(&req.key),
            };
            let merged = current.intersect(req);
            if merged.is_empty() {
                return Err(format!(
                    "requirement {} cannot be met (the NodePool allows {})",
                    req.describe(),
                    current.describe()
                ));
            }
            out.set(merged);
        }
        Ok(out)
    }

    /// The test of `merged` for the flavors of the claim's pool.
    pub(super) fn flavor_test<'r>(&self, claim: &Claim, merged: &'r Reqs) -> FlavorTest<'r> {
        FlavorTest::of(merged, &self.pools[claim.view].pool_keys, &self.flavor_keys)
    }

    pub(super) fn fits_existing(&self, target: &ExistingTarget, checks: &Checks) -> bool {
        let (node, pod) = (&target.node, &self.pods[checks.pod]);
        if node.closed_to(pod)
            || !res::dense_fits(
                &target.used,
                &self.requests[checks.pod],
                &target.allocatable,
            )
        {
            return false;
        }
        if checks.requirements.first_conflict(&node.labels).is_some() {
            return false;
        }
        if untolerated(&pod.tolerations, &node.taints, checks.prefer).is_some() {
            return false;
        }
        if pod
            .host_ports
            .iter()
            .any(|a| target.ports.iter().any(|b| a.conflicts(b)))
        {
            return false;
        }
        checks.keys.iter().all(|key| {
            self.domain_problem(checks, key, target.domain(key).as_deref())
                .is_none()
        })
    }

    /// Whether the flavor takes the claim's pods and this one under the requirements `test` asks.
    /// Pods already on the claim are held to the flavor's hard taints only, and were counted with the
    /// node's taints: a flavor whose taints would change how a nodeTaintsPolicy Honor spread counts
    /// them is no candidate (as in Python).
    pub(super) fn holds(
        &self,
        claim: &Claim,
        checks: &Checks,
        test: &FlavorTest,
        flavor: &Flavor,
    ) -> bool {
        let pod = &self.pods[checks.pod];
        let taints = &flavor.it.taints;
        res::dense_fits(&claim.used, &self.requests[checks.pod], &flavor.net_dense)
            && flavor.ports_free(pod)
            && test.admits(flavor)
            && (taints.is_empty() || untolerated(&pod.tolerations, taints, checks.prefer).is_none())
            && (taints.is_empty()
                || claim
                    .pods
                    .iter()
                    .all(|&p| untolerated(&self.pods[p].tolerations, taints, false).is_none()))
            && (same_taints(taints, &claim.chosen().it.taints) || {
                let pool = &self.pools[claim.view].pool.taints;
                let moved = with_flavor_taints(pool, taints);
                self.topology
                    .counted_alike(&claim.pods, &claim.taints(pool), &moved)
            })
    }

    /// Whether the pod's hostname anti-affinity already rules out every claim (each holds a pod it
    /// must not share a node with): then scanning the claims cannot succeed.
    pub(super) fn every_claim_excludes(&self, checks: &Checks) -> bool {
        let claims = self.claims.len() as i64;
        checks.anti.iter().any(|term| {
            term.key == HOSTNAME
                && self
                    .topology
                    .claims_holding
                    .get(&term.group)
                    .copied()
                    .unwrap_or(0)
                    == claims
        })
    }

    /// A cheap necessary condition for `evaluate` to succeed on a claim already holding pods: room
    /// under the largest candidate flavor, no hostname constraint already broken there, and some
    /// candidate flavor whose taints the pod tolerates (a tainted GPU node turns the others away).
    pub(crate) fn might_take(&self, claim: &Claim, checks: &Checks) -> bool {
        let tolerations = &self.pods[checks.pod].tolerations;
        res::dense_fits(&claim.used, &self.requests[checks.pod], &claim.max_net)
            && (!checks.keys.iter().any(|k| k == HOSTNAME)
                || self
                    .domain_problem(checks, HOSTNAME, Some(&claim.hostname))
                    .is_none())
            && claim.flavors.iter().any(|f| {
                f.it.taints.is_empty()
                    || untolerated(tolerations, &f.it.taints, checks.prefer).is_none()
            })
    }
}

/// Whether two flavors carry the same taints; most carry none, which is asked without a call.
#[inline]
fn same_taints(a: &[Taint], b: &[Taint]) -> bool {
    a.len() == b.len() && (a.is_empty() || a == b)
}
