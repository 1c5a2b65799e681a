//! Live topology counts (twin of `counts.py`): pods per group and domain, owners of anti-affinity terms,
//! and the hard spread rules with where their carriers are. A spread constraint binds the pods that
//! carry it; a pod it counts may not join a domain holding one of its carriers past maxSkew there,
//! so the plan still holds it once every pod has landed. Pods are ids into the solver's pod arena.

use std::collections::BTreeSet;

use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;

use super::model::{
    NodeSelectorRequirement, Pairs, Pod, Snapshot, Taint, Toleration, TopologySpreadConstraint,
    HOSTNAME,
};
use super::topology::{
    min_count, spread_filter, spread_group, spread_universe, term_group, untolerated, DomainOf,
    Group, NodeFilter,
};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SpreadRule {
    pub group: usize,
    pub constraint: TopologySpreadConstraint,
    /// Shared with the spread checks of the pods carrying the rule.
    pub universe: Rc<BTreeSet<String>>,
}

#[derive(Default)]
pub struct TopologyCounts {
    pub groups: Vec<Group>,
    pub index: HashMap<Group, usize>,
    pub counts: Vec<HashMap<String, i64>>,
    pub totals: Vec<i64>,
    /// Group of a required anti-affinity term -> domain -> owners there.
    pub anti_owners: HashMap<usize, HashMap<String, i64>>,
    pub rules: Vec<SpreadRule>,
    rule_index: HashMap<SpreadRule, usize>,
    /// Per rule, domain -> placed pods carrying it there.
    carriers: Vec<HashMap<String, i64>>,
    /// Pending pod (arena id) -> the rules it carries.
    carried: HashMap<usize, Vec<usize>>,
    /// Hostname group -> number of planned claims holding at least one of its pods.
    pub claims_holding: HashMap<usize, i64>,
    universes: HashMap<UniverseKey, Rc<BTreeSet<String>>>,
    selecting: HashMap<usize, Rc<[usize]>>,
    /// Groups by the first label their selector matches (key, then value), and those matching none:
    /// a pod can only be counted by a group under one of its own labels or by one of those, so
    /// `selecting` asks only them (one Deployment's pod among many Deployments' groups).
    by_first_label: HashMap<String, HashMap<String, Vec<usize>>>,
    unlabelled: Vec<usize>,
    /// Per pod (arena id), the group of each of its required anti-affinity terms.
    anti_of: HashMap<usize, Rc<[usize]>>,
}

/// What `spread_universe` reads of a pod and its constraint: pods alike in all of it share the domains.
/// (A struct rather than a formatted signature: one of these per pending pod's spread constraint.)
#[derive(PartialEq, Eq, Hash)]
struct UniverseKey {
    topology_key: String,
    node_affinity_policy: String,
    node_taints_policy: String,
    /// Sorted.
    node_selector: Pairs<String>,
    required_terms: Vec<Vec<NodeSelectorRequirement>>,
    /// Only under nodeTaintsPolicy Honor (else empty).
    tolerations: Vec<Toleration>,
    nodes: Option<NodeFilter>,
}

impl UniverseKey {
    fn of(pod: &Pod, constraint: &TopologySpreadConstraint, nodes: &Option<NodeFilter>) -> Self {
        let mut node_selector = pod.node_selector.clone();
        node_selector.sort();
        let honor_taints = constraint.node_taints_policy == "Honor";
        UniverseKey {
            topology_key: constraint.topology_key.clone(),
            node_affinity_policy: constraint.node_affinity_policy.clone(),
            node_taints_policy: constraint.node_taints_policy.clone(),
            node_selector,
            required_terms: pod.required_terms.clone(),
            tolerations: if honor_taints {
                pod.tolerations.clone()
            } else {
                Vec::new()
            },
            nodes: nodes.clone(),
        }
    }
}

impl TopologyCounts {
    pub fn group_id(&mut self, group: Group) -> usize {
        if let Some(&id) = self.index.get(&group) {
            return id;
        }
        let id = self.groups.len();
        self.index.insert(group.clone(), id);
        match group.selector.match_labels.first() {
            Some((key, value)) => self
                .by_first_label
                .entry(key.clone())
                .or_default()
                .entry(value.clone())
                .or_default()
                .push(id),
            None => self.unlabelled.push(id),
        }
        self.groups.push(group);
        self.counts.push(HashMap::default());
        self.totals.push(0);
        id
    }

    pub fn id_of(&self, group: &Group) -> usize {
        self.index[group]
    }

    /// The domains the pod's spread constraint is measured over (`spread_universe`), worked out once
    /// per `UniverseKey`; `nodes` is the constraint's node filter for the pod (`spread_filter`), which
    /// the caller has already made for the constraint's group.
    pub fn universe(
        &mut self,
        snapshot: &Snapshot,
        pod: &Pod,
        constraint: &TopologySpreadConstraint,
        nodes: &Option<NodeFilter>,
    ) -> Rc<BTreeSet<String>> {
        let key = UniverseKey::of(pod, constraint, nodes);
        if let Some(found) = self.universes.get(&key) {
            return found.clone();
        }
        let found = Rc::new(spread_universe(snapshot, pod, constraint));
        self.universes.insert(key, found.clone());
        found
    }

    /// Create every group any pod's constraints mention, and the hard spread rules of the pending pods
    /// (`pods` in arena order, the pending ones from `first_pending`; a bound pod's constraints were
    /// checked when it was scheduled). A rule takes the group just made for its constraint.
    pub fn register(&mut self, snapshot: &Snapshot, pods: &[&Pod], first_pending: usize) {
        for (id, pod) in pods.iter().enumerate() {
            for term in pod.affinity.iter().chain(&pod.anti_affinity) {
                self.group_id(term_group(term));
            }
            for weighted in pod
                .preferred_affinity
                .iter()
                .chain(&pod.preferred_anti_affinity)
            {
                self.group_id(term_group(&weighted.term));
            }
            for term in &pod.anti_affinity {
                let id = self.group_id(term_group(term));
                self.anti_owners.entry(id).or_default();
            }
            let mut carried = Vec::new();
            for constraint in &pod.spread {
                let group = spread_group(pod, constraint, spread_filter(pod, constraint));
                let hard = id >= first_pending && constraint.when_unsatisfiable == "DoNotSchedule";
                let universe = hard.then(|| self.universe(snapshot, pod, constraint, &group.nodes));
                let group = self.group_id(group);
                if let Some(universe) = universe {
                    carried.push(self.rule_id(group, constraint, universe));
                }
            }
            if id >= first_pending {
                self.carried.insert(id, carried);
            }
        }
    }

    /// The id of the hard spread rule, created on first sight.
    fn rule_id(
        &mut self,
        group: usize,
        constraint: &TopologySpreadConstraint,
        universe: Rc<BTreeSet<String>>,
    ) -> usize {
        let rule = SpreadRule {
            group,
            constraint: constraint.clone(),
            universe,
        };
        if let Some(&at) = self.rule_index.get(&rule) {
            return at;
        }
        let at = self.rules.len();
        self.rule_index.insert(rule.clone(), at);
        self.rules.push(rule);
        self.carriers.push(HashMap::default());
        at
    }

    /// Ids of the groups that count this pod (`id` is the pod's arena id).
    pub fn selecting(&mut self, id: usize, pod: &Pod) -> Rc<[usize]> {
        if let Some(found) = self.selecting.get(&id) {
            return found.clone();
        }
        let mut candidates = self.unlabelled.clone();
        for (key, value) in &pod.labels {
            let under = self.by_first_label.get(key).and_then(|v| v.get(value));
            candidates.extend(under.into_iter().flatten());
        }
        candidates.sort_unstable();
        candidates.dedup();
        let found: Rc<[usize]> = candidates
            .into_iter()
            .filter(|&g| self.groups[g].selects(pod))
            .collect();
        self.selecting.insert(id, found.clone());
        found
    }

    /// The groups of the pod's required anti-affinity terms, in term order.
    fn anti_groups(&mut self, id: usize, pod: &Pod) -> Rc<[usize]> {
        if let Some(found) = self.anti_of.get(&id) {
            return found.clone();
        }
        let found: Rc<[usize]> = pod
            .anti_affinity
            .iter()
            .map(|term| self.index[&term_group(term)])
            .collect();
        self.anti_of.insert(id, found.clone());
        found
    }

    /// Whether every group that counts these recorded pods counts them the same on a node with `taints`
    /// as on one with `other` (a group of a nodeTaintsPolicy Honor constraint skips nodes its owner
    /// does not tolerate).
    pub fn counted_alike(&self, pods: &[usize], taints: &[Taint], other: &[Taint]) -> bool {
        if taints == other {
            return true;
        }
        pods.iter().all(|&id| {
            self.selecting_cached(id).iter().all(|&g| {
                let tolerations = self.groups[g]
                    .nodes
                    .as_ref()
                    .and_then(|n| n.tolerations.as_ref());
                tolerations.is_none_or(|tolerations| {
                    untolerated(tolerations, taints, false).is_none()
                        == untolerated(tolerations, other, false).is_none()
                })
            })
        })
    }

    /// The groups counting a pod that has been recorded (and so is cached).
    pub fn selecting_cached(&self, id: usize) -> &[usize] {
        self.selecting
            .get(&id)
            .map(|found| &found[..])
            .unwrap_or(&[])
    }

    /// Topology keys whose domain must be known once this pod is placed, and the keys that decide
    /// whether a spread group counts it there.
    pub fn relevant_keys(&mut self, id: usize, pod: &Pod) -> Vec<String> {
        let mut keys: BTreeSet<String> = BTreeSet::new();
        for &g in self.selecting(id, pod).iter() {
            let group = &self.groups[g];
            keys.insert(group.key.clone());
            if let Some(nodes) = &group.nodes {
                keys.extend(nodes.keys().cloned());
            }
        }
        for t in pod.affinity.iter().chain(&pod.anti_affinity) {
            keys.insert(t.topology_key.clone());
        }
        for w in pod
            .preferred_affinity
            .iter()
            .chain(&pod.preferred_anti_affinity)
        {
            keys.insert(w.term.topology_key.clone());
        }
        for c in &pod.spread {
            keys.insert(c.topology_key.clone());
        }
        keys.into_iter().collect()
    }

    /// Count the pod where it lands (`sign` -1 takes it back); `domain` gives the node's labels.
    /// `on_claim`: it lands on a planned claim, whose hostname is a domain of its own, tracked in
    /// `claims_holding`.
    pub fn record(
        &mut self,
        id: usize,
        pod: &Pod,
        domain: &DomainOf<'_>,
        taints: &[Taint],
        sign: i64,
        on_claim: bool,
    ) {
        for &g in self.selecting(id, pod).iter() {
            let group = &self.groups[g];
            let value = domain(&group.key).filter(|_| {
                group
                    .nodes
                    .as_ref()
                    .is_none_or(|nodes| nodes.admits(domain, taints))
            });
            if let Some(value) = value {
                let before = add_count(&mut self.counts[g], &value, sign);
                let after = before + sign;
                self.totals[g] += sign;
                if on_claim && self.groups[g].key == HOSTNAME && (before == 0) != (after == 0) {
                    *self.claims_holding.entry(g).or_insert(0) += if after > 0 { 1 } else { -1 };
                }
            }
        }
        if let Some(carried) = self.carried.get(&id) {
            for &rule in carried {
                if let Some(value) = domain(&self.rules[rule].constraint.topology_key) {
                    add_count(&mut self.carriers[rule], &value, sign);
                }
            }
        }
        let anti = self.anti_groups(id, pod);
        for (term, &g) in pod.anti_affinity.iter().zip(anti.iter()) {
            if let Some(value) = domain(&term.topology_key) {
                add_count(
                    self.anti_owners.get_mut(&g).expect("registered"),
                    &value,
                    sign,
                );
            }
        }
    }

    /// Whether a pod landing in `domain` keeps the rule there (`self_match`: whether it counts).
    pub fn rule_allows(&self, rule: &SpreadRule, domain: Option<&str>, self_match: i64) -> bool {
        let Some(domain) = domain else {
            return false;
        };
        let counts = &self.counts[rule.group];
        let floor = min_count(&rule.constraint, &rule.universe, counts);
        counts.get(domain).copied().unwrap_or(0) + self_match - floor <= rule.constraint.max_skew
    }

    /// The hard spread rules of the pod's own constraints (`id` is its arena id; none for a bound pod).
    pub fn carried_by(&self, id: usize) -> &[usize] {
        self.carried.get(&id).map_or(&[], Vec::as_slice)
    }

    pub fn carriers_there(&self, rule: usize, domain: &str) -> bool {
        self.carriers[rule].get(domain).copied().unwrap_or(0) > 0
    }
}

/// Add `sign` to the domain's count (0 when it has none); the count before. The domain's name is
/// copied only when it is new.
fn add_count(counts: &mut HashMap<String, i64>, domain: &str, sign: i64) -> i64 {
    match counts.get_mut(domain) {
        Some(count) => {
            let before = *count;
            *count += sign;
            before
        }
        None => {
            counts.insert(domain.to_string(), sign);
            0
        }
    }
}
