//! The greedy placement (twin of `greedy.py`): pods biggest first, CPU-heavy and memory-heavy interleaved, onto existing nodes, open claims, then
//! a new claim from the heaviest NodePool; preferences relaxed one at a time; failed pods retried while
//! a round places something.

use std::cell::RefCell;
use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

use super::counts::{SpreadRule, TopologyCounts};
use super::model::{
    lookup, HostPort, Pairs, PlannedNodeClaim, Pod, Snapshot, Toleration, TopologySpreadConstraint,
    CAPACITY_TYPE, CPU, HOSTNAME, MEMORY, NODEPOOL, ZONE,
};
use super::preferences::Preferences;
use super::requirements::{carried_value, Reqs, Requirement};
use super::resources::{self as res, Names};
use super::room::RoomIndex;
use super::targets::{
    most_net, set_label, Claim, ClaimList, ExistingTarget, Flavor, FlavorList, OfferingKinds,
    Offers, PoolView, OFFERING_KEYS,
};
use super::topology::{min_count, spread_group, term_group, untolerated};

/// How many domain choices one placement may try across its topology keys (`settle_domains`).
const SETTLE_TRIES: i64 = 32;

pub struct Checks {
    pub pod: usize,
    pub requirements: Reqs,
    pub prefer: bool,
    pub spread: Vec<(TopologySpreadConstraint, usize, BTreeSet<String>, i64)>,
    pub rules: Vec<usize>,
    pub affinity: Vec<(usize, String, bool)>,
    pub anti: Vec<(usize, String)>,
    pub symmetric_anti: Vec<(usize, String)>,
    pub keys: Vec<String>,
}

/// A topology constraint a placement would break, worded exactly as the Python engine words it.
pub enum Problem<'k> {
    Spread(&'k str, i64),
    GroupSpread(&'k str),
    AffinityNeedsLabel(&'k str),
    AffinityNoMatch(&'k str),
    Anti(&'k str),
    Excluded(&'k str, &'k str),
}

impl std::fmt::Display for Problem<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Spread(key, skew) => write!(
                f,
                "topology spread on {key} (maxSkew {skew}) would be exceeded"
            ),
            Problem::GroupSpread(key) => {
                write!(
                    f,
                    "topology spread on {key} of the pods already there would be exceeded"
                )
            }
            Problem::AffinityNeedsLabel(key) => {
                write!(f, "pod affinity needs a node labelled {key}")
            }
            Problem::AffinityNoMatch(key) => {
                write!(f, "pod affinity on {key}: no matching pod in that domain")
            }
            Problem::Anti(key) => write!(
                f,
                "pod anti-affinity on {key}: a matching pod is already there"
            ),
            Problem::Excluded(key, value) => write!(
                f,
                "anti-affinity of a pod already on {key}={value} excludes it"
            ),
        }
    }
}

/// What adding a pod to a claim changes, computed before anything is mutated.
pub struct Addition {
    requirements: Reqs,
    flavors: FlavorList,
    replacing: Option<Rc<Flavor>>,
}

/// Why nothing can be provisioned while the catalog is empty (the same words as Python's).
pub const NO_MANAGED_FLAVOR: &str = "kapstan manages no flavor yet: mark a MachineDeployment, or a \
    ClusterClass worker class in its metadata, with the label node.cluster.x-k8s.io/karpenter-member or \
    the annotation kapstan.io/managed: \"true\"";

/// The order the greedy pass takes pods in, as in Python: biggest first, alternating between CPU-heavy
/// and memory-heavy pods so that the running totals keep the batch's own CPU to memory ratio; nodes
/// filled in that order end full in both resources. Sizes are shares of the batch's totals, compared in
/// exact integers; a batch that requests no CPU (or no memory) is sized by the other of the two alone,
/// and one that requests neither by its other resources, largest first in name order.
pub fn placement_sequence(pods: &[Pod], ids: &[usize]) -> Vec<usize> {
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

/// Cpu, then memory, descending: first-fit decreasing, for re-packing into fixed-size flavors.
pub fn biggest_first(pod: &Pod) -> (i64, i64, String) {
    (
        -res::get(&pod.requests, CPU),
        -res::get(&pod.requests, MEMORY),
        pod.key(),
    )
}

pub struct Scheduler<'s> {
    pub snapshot: &'s Snapshot,
    /// Every pod: those bound to existing nodes first, then the pending ones.
    pub pods: Vec<Pod>,
    /// Each pod's requests as a dense vector over `names`.
    pub requests: Vec<Vec<i64>>,
    /// The resource names behind the dense vectors.
    pub names: Names,
    pub pending: Vec<usize>,
    pub pools: Vec<PoolView>,
    flavor_keys: BTreeSet<String>,
    pub existing: Vec<ExistingTarget>,
    pub claims: ClaimList,
    pub next_index: usize,
    pub topology: TopologyCounts,
    pub placed_prefs: HashMap<usize, Preferences>,
    /// Claims the cost pass re-packed away; their last state still orders the pass's pairs.
    pub removed: ClaimList,
    rules_of: HashMap<usize, Vec<usize>>,
    /// Each claim's room under its chosen flavor, by position in `claims`; whoever moves claims
    /// around marks it stale.
    pub room: RoomIndex,
    /// Per pool, per pod requirements: the requirements merged with the pool's and the pool's flavors
    /// compatible with them (or why the merge fails). Pools and flavors never change during a solve.
    opening: Vec<HashMap<Reqs, Result<Rc<Opening>, String>>>,
}

/// A pool's flavors for one set of pod requirements (see `Scheduler::opening`).
struct Opening {
    merged: Reqs,
    compatible: Rc<Vec<Rc<Flavor>>>,
    /// Per flavor restriction, toleration of PreferNoSchedule, tolerations and requests: the
    /// compatible flavors a new claim can start from and their `max_net`, or None when there is none.
    roomy: RefCell<HashMap<RoomyKey, Option<Start>>>,
}

type RoomyKey = (
    Option<String>,
    bool,
    Vec<Toleration>,
    Vec<HostPort>,
    Vec<i64>,
);

/// The flavors a new claim starts from and their `max_net`.
type Start = (FlavorList, Vec<i64>);

impl<'s> Scheduler<'s> {
    pub fn new(snapshot: &'s Snapshot) -> Self {
        let names = resource_names(snapshot);
        let kinds = Rc::new(OfferingKinds::build(&snapshot.instance_types));
        let mut ordered: Vec<_> = snapshot.node_pools.iter().collect();
        ordered.sort_by(|a, b| (-a.weight, &a.name).cmp(&(-b.weight, &b.name)));
        let pools = ordered
            .iter()
            .map(|p| {
                PoolView::build(
                    p,
                    &snapshot.instance_types,
                    &snapshot.daemonsets,
                    &names,
                    &kinds,
                )
            })
            .collect();
        // Keys a flavor can give a node (as in Python, template labels and requirement-only keys are in
        // their own pool's base requirements only).
        let mut flavor_keys: BTreeSet<String> = snapshot
            .instance_types
            .iter()
            .flat_map(|it| it.labels.iter().map(|(k, _)| k.clone()))
            .collect();
        flavor_keys.extend(OFFERING_KEYS.map(String::from));
        let mut nodes: Vec<_> = snapshot.nodes.iter().collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        let existing: Vec<ExistingTarget> = nodes
            .iter()
            .map(|n| ExistingTarget::build(n, &names, &snapshot.daemonsets))
            .collect();
        let mut pods: Vec<Pod> = snapshot
            .nodes
            .iter()
            .flat_map(|n| n.pods.iter().cloned())
            .collect();
        let first_pending = pods.len();
        pods.extend(snapshot.pods.iter().cloned());
        let pending = (first_pending..pods.len()).collect();
        let requests = pods.iter().map(|p| names.dense(&p.requests)).collect();
        let room = RoomIndex::new(names.zero().len());
        let mut topology = TopologyCounts::default();
        topology.register(snapshot, &pods, first_pending);
        let mut scheduler = Scheduler {
            snapshot,
            pods,
            requests,
            names,
            pending,
            pools,
            flavor_keys,
            existing,
            claims: Vec::new(),
            next_index: 0,
            topology,
            placed_prefs: HashMap::default(),
            removed: Vec::new(),
            rules_of: HashMap::default(),
            room,
            opening: Vec::new(),
        };
        scheduler.opening = scheduler.pools.iter().map(|_| HashMap::default()).collect();
        scheduler.record_existing();
        scheduler
    }

    fn record_existing(&mut self) {
        // Bound pods sit in the arena in snapshot node order; targets are sorted by name.
        let mut id = 0;
        for node in &self.snapshot.nodes {
            let target = self
                .existing
                .iter()
                .position(|t| t.node.name == node.name)
                .expect("node");
            for _ in &node.pods {
                let labels = self.existing[target].node.labels.clone();
                let domain = move |key: &str| lookup(&labels, key).cloned();
                self.topology
                    .record(id, &self.pods[id], &domain, &node.taints, 1, false);
                id += 1;
            }
        }
    }

    // -- checks -------------------------------------------------------------------------------------

    pub fn checks(&mut self, pod_id: usize, prefs: &Preferences) -> Checks {
        let pod = &self.pods[pod_id];
        let topo = &mut self.topology;
        let mut spread = Vec::new();
        for constraint in prefs.spread(pod) {
            let gid = topo.id_of(&spread_group(pod, &constraint));
            let universe = topo.universe(self.snapshot, pod, &constraint);
            let self_match = i64::from(topo.groups[gid].selects(pod));
            spread.push((constraint, gid, universe, self_match));
        }
        if let std::collections::hash_map::Entry::Vacant(slot) = self.rules_of.entry(pod_id) {
            let selecting: BTreeSet<usize> = topo.selecting(pod_id, pod).iter().copied().collect();
            let rules = (0..topo.rules.len())
                .filter(|&r| selecting.contains(&topo.rules[r].group))
                .collect();
            slot.insert(rules);
        }
        let rules = self.rules_of[&pod_id].clone();
        let affinity = prefs
            .affinity(pod)
            .iter()
            .map(|term| {
                let group = term_group(term);
                (
                    topo.id_of(&group),
                    term.topology_key.clone(),
                    group.selects(pod),
                )
            })
            .collect();
        let anti = prefs
            .anti_affinity(pod)
            .iter()
            .map(|t| (topo.id_of(&term_group(t)), t.topology_key.clone()))
            .collect();
        let symmetric_anti = topo
            .selecting(pod_id, pod)
            .iter()
            .copied()
            .filter(|g| topo.anti_owners.contains_key(g))
            .map(|g| (g, topo.groups[g].key.clone()))
            .collect();
        let keys = topo.relevant_keys(pod_id, pod);
        Checks {
            pod: pod_id,
            requirements: prefs.node_requirements(pod),
            prefer: !prefs.tolerate_prefer_no_schedule,
            spread,
            rules,
            affinity,
            anti,
            symmetric_anti,
            keys,
        }
    }

    fn spread_allows(
        &self,
        group: usize,
        constraint: &TopologySpreadConstraint,
        universe: &BTreeSet<String>,
        value: Option<&str>,
        self_match: i64,
    ) -> bool {
        let Some(value) = value else {
            return false;
        };
        let counts = &self.topology.counts[group];
        let floor = min_count(constraint, universe, counts);
        counts.get(value).copied().unwrap_or(0) + self_match - floor <= constraint.max_skew
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
        for (constraint, gid, universe, self_match) in &checks.spread {
            if constraint.topology_key == key
                && !self.spread_allows(*gid, constraint, universe, value, *self_match)
            {
                return Some(Problem::Spread(key, constraint.max_skew));
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
        for (gid, term_key, self_selected) in &checks.affinity {
            if term_key != key {
                continue;
            }
            let Some(value) = value else {
                return Some(Problem::AffinityNeedsLabel(key));
            };
            let here = topo.counts[*gid].get(value).copied().unwrap_or(0);
            if here == 0 && !(topo.totals[*gid] == 0 && *self_selected) {
                return Some(Problem::AffinityNoMatch(key));
            }
        }
        if let Some(value) = value {
            for (gid, term_key) in &checks.anti {
                if term_key == key && topo.counts[*gid].get(value).copied().unwrap_or(0) > 0 {
                    return Some(Problem::Anti(key));
                }
            }
            for (gid, term_key) in &checks.symmetric_anti {
                if term_key == key && topo.anti_owners[gid].get(value).copied().unwrap_or(0) > 0 {
                    return Some(Problem::Excluded(key, value));
                }
            }
        }
        None
    }

    pub fn merge(&self, base: &Reqs, pod_reqs: &Reqs) -> Result<Reqs, String> {
        let mut out = base.clone();
        for req in &pod_reqs.0 {
            let current = match out.get(&req.key) {
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

    // -- targets ------------------------------------------------------------------------------------

    fn fits_existing(&self, target: &ExistingTarget, checks: &Checks) -> bool {
        let (node, pod) = (&target.node, &self.pods[checks.pod]);
        if node.cordoned_for(pod)
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

    fn place_existing(&mut self, target: usize, pod_id: usize) {
        let pod = &self.pods[pod_id];
        let t = &mut self.existing[target];
        res::dense_add(&mut t.used, &self.requests[pod_id]);
        t.ports.extend(pod.host_ports.iter().cloned());
        t.placed.push(pod_id);
        let labels = t.node.labels.clone();
        let taints = t.node.taints.clone();
        let domain = move |key: &str| lookup(&labels, key).cloned();
        self.topology
            .record(pod_id, &self.pods[pod_id], &domain, &taints, 1, false);
    }

    /// `offers` is made from `merged`.
    fn holds(
        &self,
        claim: &Claim,
        checks: &Checks,
        merged: &Reqs,
        offers: &Offers,
        flavor: &Flavor,
    ) -> bool {
        let pod = &self.pods[checks.pod];
        let taints = &flavor.it.taints;
        res::dense_fits(&claim.used, &self.requests[checks.pod], &flavor.net_dense)
            && flavor.ports_free(pod)
            && flavor.compatible_with(merged, offers)
            && (taints.is_empty() || untolerated(&pod.tolerations, taints, checks.prefer).is_none())
            && (taints.is_empty()
                || claim
                    .pods
                    .iter()
                    .all(|&p| untolerated(&self.pods[p].tolerations, taints, false).is_none()))
    }

    /// Whether the pod can join the claim, and what that changes; otherwise why not.
    pub fn evaluate(&self, claim: &Claim, checks: &Checks) -> Result<Addition, String> {
        let pod = &self.pods[checks.pod];
        let view = &self.pools[claim.view];
        if let Some(taint) = untolerated(&pod.tolerations, &view.pool.taints, checks.prefer) {
            return Err(format!("does not tolerate the NodePool's taint {taint}"));
        }
        let mut merged = self.merge(&claim.requirements, &checks.requirements)?;
        if pod
            .host_ports
            .iter()
            .any(|a| claim.ports.iter().any(|b| a.conflicts(b)))
        {
            return Err("host port already taken".into());
        }
        let open_keys = checks
            .keys
            .iter()
            .any(|k| k != HOSTNAME && !merged.pinned(k));
        let needs_all = open_keys
            || merged
                .0
                .iter()
                .any(|r| r.min_values.is_some_and(|m| m != 0));
        // A claim without pods comes straight from `open_claim`, which kept only the flavors that hold
        // the pod under these same merged requirements: filtering them again would keep them all.
        let mut flavors: FlavorList = if needs_all && !claim.pods.is_empty() {
            let offers = Offers::of(&merged);
            claim
                .flavors
                .filtered(|f| self.holds(claim, checks, &merged, &offers, f))
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
        // `merged` may have narrowed since.
        let offers = Offers::of(&merged);
        let head = flavors.iter().position(|f| {
            (needs_all || self.holds(claim, checks, &merged, &offers, f))
                && view.within_limits(f, replacing.as_deref())
        });
        let Some(head) = head else {
            if needs_all
                || flavors
                    .iter()
                    .any(|f| self.holds(claim, checks, &merged, &offers, f))
            {
                return Err(format!("limits reached ({})", limits_text(view)));
            }
            return Err("no flavor has room for it".into());
        };
        flavors.drop_front(head);
        for req in &merged.0 {
            if let Some(min) = req.min_values.filter(|&m| m != 0) {
                let distinct: BTreeSet<String> = flavors
                    .iter()
                    .flat_map(|f| f.label(&req.key, &merged))
                    .collect();
                if (distinct.len() as i64) < min {
                    return Err(format!(
                        "fewer than minValues {min} flavors left for {}",
                        req.key
                    ));
                }
            }
        }
        Ok(Addition {
            requirements: merged,
            flavors,
            replacing,
        })
    }

    /// Pick the claim's domain for every topology key the pod is part of, pinning it in `merged`; the
    /// flavors left, or the reason met along the best choices. A choice that leaves a later key no
    /// passing domain gives way to the next best one, up to `SETTLE_TRIES` choices in all.
    fn settle_domains(
        &self,
        claim: &Claim,
        checks: &Checks,
        merged: &mut Reqs,
        flavors: FlavorList,
    ) -> Result<FlavorList, String> {
        let mut tries = SETTLE_TRIES;
        let (pinned, flavors) =
            self.settle_from(claim, checks, 0, merged.clone(), flavors, &mut tries)?;
        *merged = pinned;
        Ok(flavors)
    }

    fn settle_from(
        &self,
        claim: &Claim,
        checks: &Checks,
        start: usize,
        merged: Reqs,
        flavors: FlavorList,
        tries: &mut i64,
    ) -> Result<(Reqs, FlavorList), String> {
        for at in start..checks.keys.len() {
            let key = checks.keys[at].as_str();
            let options = claim.domain_options(key, &flavors, &merged);
            let passing: Vec<&Option<String>> = options
                .iter()
                .filter(|v| self.domain_problem(checks, key, v.as_deref()).is_none())
                .collect();
            if passing.is_empty() {
                let first = options.first().cloned().flatten();
                return Err(self
                    .domain_problem(checks, key, first.as_deref())
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| format!("no domain for {key}")));
            }
            if key == HOSTNAME || (passing.len() == 1 && passing[0].is_none()) || merged.pinned(key)
            {
                continue;
            }
            let candidates: Vec<&str> = passing.iter().filter_map(|v| v.as_deref()).collect();
            let best = self.best_domain(checks, key, &candidates, &flavors, &merged);
            let mut rest: Option<Vec<String>> = None;
            let mut next = 0;
            let mut value = best.clone();
            let mut first_failure: Option<String> = None;
            loop {
                *tries -= 1;
                let mut narrowed = merged.clone();
                narrowed.add(Requirement::exactly(key, &value));
                // Every flavor here was compatible before `key` narrowed (evaluate filters them when
                // a key is open), so only `key` can turn one away now.
                let mask = flavors
                    .first()
                    .map(|f| f.table.mask(&narrowed))
                    .unwrap_or_default();
                let left = flavors.filtered(|f| f.compatible_narrowed(key, &narrowed, &mask));
                let outcome = if left.is_empty() {
                    Err(format!("no flavor is offered with {key}={value}"))
                } else {
                    self.settle_from(claim, checks, at + 1, narrowed, left, tries)
                };
                match outcome {
                    Ok(settled) => return Ok(settled),
                    Err(why) => {
                        first_failure.get_or_insert(why);
                    }
                }
                if *tries <= 0 {
                    break;
                }
                let rest = rest.get_or_insert_with(|| {
                    self.ranked_domains(checks, key, &candidates, &flavors, &merged, &best)
                });
                let Some(following) = rest.get(next) else {
                    break;
                };
                value = following.clone();
                next += 1;
            }
            return Err(first_failure.expect("one choice was tried"));
        }
        Ok((merged, flavors))
    }

    /// The pod's own spread counts in `value` for `key`: the first part of a domain's rank.
    fn crowd(&self, checks: &Checks, key: &str, value: &str) -> i64 {
        checks
            .spread
            .iter()
            .filter(|(c, ..)| c.topology_key == key)
            .map(|(_, gid, ..)| self.topology.counts[*gid].get(value).copied().unwrap_or(0))
            .sum()
    }

    /// The values other than `best`, best first (crowd, price, name), once `best` has failed.
    fn ranked_domains(
        &self,
        checks: &Checks,
        key: &str,
        passing: &[&str],
        flavors: &[Rc<Flavor>],
        merged: &Reqs,
        best: &str,
    ) -> Vec<String> {
        let mut ranked: Vec<(i64, f64, &str)> = passing
            .iter()
            .filter(|v| **v != best)
            .map(|v| {
                let price = self.domain_price(key, v, flavors, merged);
                (self.crowd(checks, key, v), price, *v)
            })
            .collect();
        ranked.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(b.2)));
        ranked.into_iter().map(|(.., v)| v.to_string()).collect()
    }

    /// The cheapest price the flavors offer with `key` pinned to `value`.
    fn domain_price(&self, key: &str, value: &str, flavors: &[Rc<Flavor>], merged: &Reqs) -> f64 {
        let offering_key = OFFERING_KEYS.contains(&key);
        let narrowed = match merged.get(key) {
            Some(current) => current.intersect(&Requirement::exactly(key, value)),
            None => Requirement::exactly(key, value),
        };
        // The pinned zone and capacity-type requirements, asked of each offering pair once.
        let offering_reqs = Reqs(
            OFFERING_KEYS
                .iter()
                .filter_map(|k| {
                    if *k == key {
                        Some(narrowed.clone())
                    } else {
                        merged.get(k).cloned()
                    }
                })
                .collect(),
        );
        let Some(first) = flavors.first() else {
            return f64::INFINITY;
        };
        let mask = first.table.mask(&offering_reqs);
        flavors
            .iter()
            .filter(|f| offering_key || lookup(&f.it.labels, key).is_none_or(|v| narrowed.has(v)))
            .map(|f| f.price_masked(&mask))
            .fold(f64::INFINITY, f64::min)
    }

    /// Least crowded for the pod's own spread constraints, then cheapest, then by name. Every flavor
    /// here is compatible with `merged` (settle_domains keeps them so), so pinning `key` can only
    /// turn one away through its own label for `key`; and a flavor with no offering left prices at
    /// infinity, which never lowers a minimum. Prices are worked out only for the least crowded values.
    fn best_domain(
        &self,
        checks: &Checks,
        key: &str,
        passing: &[&str],
        flavors: &[Rc<Flavor>],
        merged: &Reqs,
    ) -> String {
        let crowds: Vec<i64> = passing.iter().map(|v| self.crowd(checks, key, v)).collect();
        let least = *crowds.iter().min().expect("a passing value");
        let mut best: Option<(&str, f64)> = None;
        for (&value, &c) in passing.iter().zip(&crowds) {
            if c != least {
                continue;
            }
            let p = self.domain_price(key, value, flavors, merged);
            let better = match best {
                None => true,
                Some((b, bp)) => p < bp || (p == bp && value < b),
            };
            if better {
                best = Some((value, p));
            }
        }
        best.expect("a least crowded value").0.to_string()
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
        self.room.set(claim_at, &room_left(claim));
        let domain = |key: &str| claim.domain(key);
        let taints = &self.pools[claim.view].pool.taints;
        self.topology
            .record(pod_id, &self.pods[pod_id], &domain, taints, 1, true);
    }

    /// Whether the pod's hostname anti-affinity already rules out every claim (each holds a pod it
    /// must not share a node with): then scanning the claims cannot succeed.
    fn every_claim_excludes(&self, checks: &Checks) -> bool {
        let claims = self.claims.len() as i64;
        checks.anti.iter().any(|(gid, key)| {
            key == HOSTNAME && self.topology.claims_holding.get(gid).copied().unwrap_or(0) == claims
        })
    }

    /// A cheap necessary condition for `evaluate` to succeed on a claim already holding pods: room
    /// under the largest candidate flavor, no hostname constraint already broken there, and some
    /// candidate flavor whose taints the pod tolerates (a tainted GPU node turns the others away).
    fn might_take(&self, claim: &Claim, checks: &Checks) -> bool {
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

    /// Add the pod to the claim if it fits (with `keep_flavor`, only if the claim keeps its flavor).
    pub fn try_claim(
        &mut self,
        claim_at: usize,
        checks: &Checks,
        keep_flavor: bool,
    ) -> Result<(), String> {
        let claim = &self.claims[claim_at];
        if keep_flavor
            && !res::dense_fits(
                &claim.used,
                &self.requests[checks.pod],
                &claim.chosen().net_dense,
            )
        {
            return Err("it would need a bigger flavor".into());
        }
        if !self.might_take(claim, checks) {
            return Err("no room".into());
        }
        let addition = self.evaluate(claim, checks)?;
        if keep_flavor && addition.flavors[0].name() != claim.chosen().name() {
            return Err("it would need a bigger flavor".into());
        }
        self.commit(claim_at, checks.pod, addition);
        Ok(())
    }

    /// Open a claim in the pool for the pod (held to one flavor when `restrict` names it); the claim's
    /// position in `claims`, or why not.
    pub fn open_claim(
        &mut self,
        view_at: usize,
        checks: &Checks,
        restrict: Option<&str>,
    ) -> Result<usize, String> {
        let opening = match self.opening[view_at].get(&checks.requirements) {
            Some(found) => found.clone(),
            None => {
                let view = &self.pools[view_at];
                let found = self.merge(&view.base, &checks.requirements).map(|merged| {
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
                self.opening[view_at].insert(checks.requirements.clone(), found.clone());
                found
            }
        };
        let opening = opening?;
        let pod = &self.pods[checks.pod];
        let key: RoomyKey = (
            restrict.map(str::to_string),
            checks.prefer,
            pod.tolerations.clone(),
            pod.host_ports.clone(),
            self.requests[checks.pod].clone(),
        );
        let cached = opening.roomy.borrow().get(&key).cloned();
        let start = match cached {
            Some(found) => found,
            None => {
                let found = self.roomy(&opening, checks, restrict);
                opening.roomy.borrow_mut().insert(key, found.clone());
                found
            }
        };
        let Some((roomy, max_net)) = start else {
            return Err(self.opening_failure(&opening, checks, view_at, restrict));
        };
        let view = &self.pools[view_at];
        let claim = Claim::new(
            self.next_index,
            view_at,
            &view.pool.name,
            view.base.clone(),
            roomy,
            max_net,
        );
        let addition = self.evaluate(&claim, checks)?;
        self.next_index += 1;
        self.claims.push(Box::new(claim));
        let at = self.claims.len() - 1;
        self.commit(at, checks.pod, addition);
        Ok(at)
    }

    /// The compatible flavors a new claim for the pod starts from: held to `restrict`, tolerated,
    /// with room for the pod on an empty node; with their `max_net`. None when there is none.
    fn roomy(&self, opening: &Opening, checks: &Checks, restrict: Option<&str>) -> Option<Start> {
        let pod = &self.pods[checks.pod];
        let request = &self.requests[checks.pod];
        let roomy = FlavorList::shared(opening.compatible.clone(), 0).filtered(|f| {
            restrict.is_none_or(|r| f.name() == r)
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
        let max_net = most_net(&roomy);
        Some((roomy, max_net))
    }

    /// Why no claim for the pod can open in the pool, when `roomy` found no flavor.
    fn opening_failure(
        &self,
        opening: &Opening,
        checks: &Checks,
        view_at: usize,
        restrict: Option<&str>,
    ) -> String {
        let (merged, compatible) = (&opening.merged, &opening.compatible);
        let pod = &self.pods[checks.pod];
        let view = &self.pools[view_at];
        let allowed = |f: &&Rc<Flavor>| restrict.is_none_or(|r| f.name() == r);
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

    /// Where the claim with this index sits: claims stay sorted by index (new ones get the next index,
    /// the cost pass puts claims back in order).
    pub fn position(&self, index: usize) -> Option<usize> {
        self.claims.binary_search_by_key(&index, |c| c.index).ok()
    }

    pub fn claim(&self, index: usize) -> Option<&Claim> {
        self.position(index).map(|at| &*self.claims[at])
    }

    fn sync_room(&mut self) {
        if self.room.stale || self.room.len() != self.claims.len() {
            self.room.stale = true;
            let rooms: Vec<Vec<i64>> = self.claims.iter().map(|c| room_left(c)).collect();
            self.room.rebuild(rooms.into_iter());
        }
    }

    // -- the greedy pass ----------------------------------------------------------------------------

    fn place(&mut self, checks: &Checks) -> Result<(), String> {
        for t in 0..self.existing.len() {
            if self.fits_existing(&self.existing[t], checks) {
                self.place_existing(t, checks.pod);
                return Ok(());
            }
        }
        // Twice, as in Python: first where the pod costs nothing (the claim keeps its flavor), then
        // where the claim may grow.
        if !self.every_claim_excludes(checks) {
            // Where the claim keeps its flavor, only claims with room for the pod can take it: the
            // index skips the others, which `try_claim` would turn away first thing.
            self.sync_room();
            let mut from = 0;
            while let Some(c) = self.room.first_fit(from, &self.requests[checks.pod]) {
                if self.try_claim(c, checks, true).is_ok() {
                    return Ok(());
                }
                from = c + 1;
            }
            for c in 0..self.claims.len() {
                if self.try_claim(c, checks, false).is_ok() {
                    return Ok(());
                }
            }
        }
        if self.pools.is_empty() {
            return Err("no NodePool exists".into());
        }
        if self.snapshot.instance_types.is_empty() {
            return Err(NO_MANAGED_FLAVOR.into());
        }
        let mut reasons = Vec::new();
        for v in 0..self.pools.len() {
            match self.open_claim(v, checks, None) {
                Ok(_) => return Ok(()),
                Err(reason) => {
                    reasons.push(format!("NodePool {}: {reason}", self.pools[v].pool.name))
                }
            }
        }
        Err(reasons.join("; "))
    }

    fn place_with_relaxation(&mut self, pod_id: usize) -> Result<(), String> {
        let mut prefs = Preferences::strict(&self.pods[pod_id]);
        loop {
            let checks = self.checks(pod_id, &prefs);
            match self.place(&checks) {
                Ok(()) => {
                    self.placed_prefs.insert(pod_id, prefs);
                    return Ok(());
                }
                Err(reason) => {
                    if !prefs.relax(&self.pods[pod_id]) {
                        return Err(reason);
                    }
                }
            }
        }
    }

    pub fn schedule(&mut self) -> HashMap<usize, String> {
        let mut pending = placement_sequence(&self.pods, &self.pending);
        let mut failures = HashMap::default();
        while !pending.is_empty() {
            failures = HashMap::default();
            let mut retry = Vec::new();
            for &pod_id in &pending {
                if let Err(reason) = self.place_with_relaxation(pod_id) {
                    failures.insert(pod_id, reason);
                    retry.push(pod_id);
                }
            }
            if retry.len() == pending.len() {
                break;
            }
            pending = retry;
        }
        failures
    }

    // -- output -------------------------------------------------------------------------------------

    pub fn planned(&self, claim: &Claim) -> PlannedNodeClaim {
        let flavor = claim.chosen();
        let pool = &self.pools[claim.view].pool;
        let offering = flavor.cheapest_offering(&claim.requirements);
        let mut labels: Pairs<String> = flavor.it.labels.clone();
        for (k, v) in &pool.labels {
            set_label(&mut labels, k, v);
        }
        set_label(&mut labels, NODEPOOL, &pool.name);
        set_label(&mut labels, ZONE, &offering.zone);
        set_label(&mut labels, CAPACITY_TYPE, &offering.capacity_type);
        for req in &claim.requirements.0 {
            if lookup(&labels, &req.key).is_none() {
                if let Some(value) = carried_value(req) {
                    labels.push((req.key.clone(), value));
                }
            }
        }
        labels.sort();
        PlannedNodeClaim {
            node_pool: pool.name.clone(),
            instance_type: flavor.name().to_string(),
            zone: offering.zone.clone(),
            capacity_type: offering.capacity_type.clone(),
            price_per_hour: offering.price,
            pods: claim.pods.iter().map(|&p| self.pods[p].key()).collect(),
            labels,
        }
    }
}

/// What the claim's chosen flavor has left after its pods, per resource.
fn room_left(claim: &Claim) -> Vec<i64> {
    claim
        .chosen()
        .net_dense
        .iter()
        .zip(&claim.used)
        .map(|(net, used)| net - used)
        .collect()
}

/// Every resource name the snapshot mentions, for dense vectors.
fn resource_names(snapshot: &Snapshot) -> Names {
    let pods = snapshot
        .pods
        .iter()
        .chain(snapshot.nodes.iter().flat_map(|n| &n.pods))
        .chain(snapshot.daemonsets.iter().map(|d| &d.pod));
    let mut names: Vec<String> = pods
        .flat_map(|p| p.requests.iter().map(|(k, _)| k.clone()))
        .collect();
    for it in &snapshot.instance_types {
        names.extend(
            it.allocatable
                .iter()
                .chain(&it.capacity)
                .map(|(k, _)| k.clone()),
        );
    }
    for node in &snapshot.nodes {
        names.extend(node.allocatable.iter().map(|(k, _)| k.clone()));
    }
    Names::new(names)
}

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

fn unmatched(view: &PoolView, pod_reqs: &Reqs, merged: &Reqs, restrict: Option<&str>) -> String {
    let candidates: Vec<&Rc<Flavor>> = view
        .flavors
        .iter()
        .filter(|f| restrict.is_none_or(|r| f.name() == r))
        .collect();
    for req in &pod_reqs.0 {
        let only = Reqs(vec![merged
            .get(&req.key)
            .expect("merged has every pod key")
            .clone()]);
        if !candidates.iter().any(|f| f.compatible(&only)) {
            return format!("no flavor matches {}", req.describe());
        }
    }
    "no flavor matches all of its requirements together".into()
}

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
