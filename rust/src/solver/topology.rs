//! Topology definitions (twin of `topology.py`): selector groups and the nodes a spread group counts
//! on, taint toleration, node matching and the domain universe of a spread constraint.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use super::model::{
    lookup, LabelSelector, Pod, PodAffinityTerm, Snapshot, Taint, TaintEffect, Toleration,
    TopologySpreadConstraint, CAPACITY_TYPE, HOSTNAME, NODEPOOL, ZONE,
};
use super::requirements::{Reqs, Requirement};

/// The nodes whose pods a spread constraint counts for its pod (kube-scheduler's PreFilter): nodes
/// carrying every topology key of the pod's constraints of the same kind, matching its node affinity
/// (nodeAffinityPolicy Honor) and whose NoSchedule/NoExecute taints it tolerates (nodeTaintsPolicy
/// Honor).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NodeFilter {
    /// ORed; the requirements of each are ANDed, sorted by key.
    pub alternatives: Vec<Vec<Requirement>>,
    /// None: taints are ignored.
    pub tolerations: Option<Vec<Toleration>>,
}

/// A node's (or claim's) domain of a topology key: borrowed where it has it as it stands, since every
/// placed pod is counted through one.
pub type DomainOf<'a> = dyn Fn(&str) -> Option<Cow<'a, str>> + 'a;

impl NodeFilter {
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.alternatives.iter().flatten().map(|r| &r.key)
    }

    pub fn admits(&self, label: &DomainOf<'_>, taints: &[Taint]) -> bool {
        if let Some(tolerations) = &self.tolerations {
            if untolerated(tolerations, taints, false).is_some() {
                return false;
            }
        }
        self.alternatives
            .iter()
            .any(|alt| alt.iter().all(|r| r.allows(label(&r.key).as_deref())))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Group {
    pub key: String,
    pub namespaces: Option<BTreeSet<String>>,
    pub selector: LabelSelector,
    /// The nodes it counts on; None: every node.
    pub nodes: Option<NodeFilter>,
    /// A topology spread constraint's group: it leaves terminating pods out, as kube-scheduler's
    /// PodTopologySpread does; an affinity term's group counts them.
    pub spread: bool,
}

impl Group {
    pub fn selects(&self, pod: &Pod) -> bool {
        if self.spread && pod.terminating {
            return false;
        }
        if let Some(ns) = &self.namespaces {
            if !ns.contains(&pod.namespace) {
                return false;
            }
        }
        self.selector.matches(&pod.labels)
    }
}

pub fn term_group(term: &PodAffinityTerm) -> Group {
    let namespaces = if term.all_namespaces {
        None
    } else {
        Some(term.namespaces.iter().cloned().collect())
    };
    Group {
        key: term.topology_key.clone(),
        namespaces,
        selector: term.selector.clone(),
        nodes: None,
        spread: false,
    }
}

/// The nodes the constraint counts on for this pod; None when that is every node with its key.
pub fn spread_filter(pod: &Pod, constraint: &TopologySpreadConstraint) -> Option<NodeFilter> {
    let other_keys: BTreeSet<&String> = pod
        .spread
        .iter()
        .filter(|c| {
            c.when_unsatisfiable == constraint.when_unsatisfiable
                && c.topology_key != constraint.topology_key
        })
        .map(|c| &c.topology_key)
        .collect();
    let mut present = Reqs::default();
    for key in other_keys {
        present.add(Requirement::exists(key));
    }
    let honored = if constraint.node_affinity_policy == "Honor" {
        node_requirements(pod)
    } else {
        vec![Reqs::default()]
    };
    let alternatives: Vec<Vec<Requirement>> = honored
        .iter()
        .map(|alt| {
            let mut reqs = Vec::clone(&alt.intersect(&present).0);
            reqs.sort_by(|a, b| a.key.cmp(&b.key));
            reqs
        })
        .collect();
    let tolerations = (constraint.node_taints_policy == "Honor").then(|| pod.tolerations.clone());
    if tolerations.is_none() && alternatives.len() == 1 && alternatives[0].is_empty() {
        return None;
    }
    Some(NodeFilter {
        alternatives,
        tolerations,
    })
}

/// The group that counts the pods the constraint selects, on `nodes` (its `spread_filter` for the pod).
pub fn spread_group(
    pod: &Pod,
    constraint: &TopologySpreadConstraint,
    nodes: Option<NodeFilter>,
) -> Group {
    Group {
        key: constraint.topology_key.clone(),
        namespaces: Some(BTreeSet::from([pod.namespace.clone()])),
        selector: constraint.selector.clone(),
        nodes,
        spread: true,
    }
}

/// The first taint not tolerated; PreferNoSchedule counts only when `prefer` is set.
pub fn untolerated<'a>(
    tolerations: &[Toleration],
    taints: &'a [Taint],
    prefer: bool,
) -> Option<&'a Taint> {
    taints.iter().find(|taint| {
        (taint.effect != TaintEffect::PreferNoSchedule || prefer)
            && !tolerations.iter().any(|t| t.tolerates(taint))
    })
}

/// nodeSelector AND one required term, as alternatives (the terms are ORed).
pub fn node_requirements(pod: &Pod) -> Vec<Reqs> {
    let base = Reqs::build(&[], &pod.node_selector);
    if pod.required_terms.is_empty() {
        return vec![base];
    }
    pod.required_terms
        .iter()
        .map(|term| base.intersect(&Reqs::build(term, &[])))
        .collect()
}

pub fn matches_node(pod: &Pod, labels: &[(String, String)]) -> bool {
    node_requirements(pod)
        .iter()
        .any(|alt| alt.first_conflict(labels).is_none())
}

fn possible(combined: &Reqs, labels: &BTreeMap<&str, &str>) -> bool {
    combined
        .0
        .iter()
        .all(|req| match labels.get(req.key.as_str()) {
            Some(value) => req.has(value),
            None => !req.is_empty(),
        })
}

/// Values of `key` a new node able to take this pod could have, across every pool and flavor.
pub fn flavor_domain_values(
    snapshot: &Snapshot,
    pod: &Pod,
    key: &str,
    honor_taints: bool,
) -> BTreeSet<String> {
    let alternatives = node_requirements(pod);
    let mut values = BTreeSet::new();
    for pool in &snapshot.node_pools {
        let mut pool_labels = pool.labels.clone();
        pool_labels.push((NODEPOOL.to_string(), pool.name.clone()));
        let pool_reqs = Reqs::build(&pool.requirements, &pool_labels);
        if honor_taints && untolerated(&pod.tolerations, &pool.taints, false).is_some() {
            continue;
        }
        let flavors: Vec<_> = match &pool.instance_types {
            Some(names) => names
                .iter()
                .filter_map(|n| snapshot.instance_types.iter().find(|it| &it.name == n))
                .collect(),
            None => snapshot.instance_types.iter().collect(),
        };
        for flavor in flavors {
            if honor_taints && untolerated(&pod.tolerations, &flavor.taints, false).is_some() {
                continue;
            }
            for alt in &alternatives {
                let combined = pool_reqs.intersect(alt);
                for offering in flavor.offerings.iter().filter(|o| o.available) {
                    let mut labels: BTreeMap<&str, &str> = BTreeMap::new();
                    for (k, v) in flavor.labels.iter().chain(pool.labels.iter()) {
                        labels.insert(k, v);
                    }
                    labels.insert(NODEPOOL, &pool.name);
                    labels.insert(ZONE, &offering.zone);
                    labels.insert(CAPACITY_TYPE, &offering.capacity_type);
                    if !possible(&combined, &labels) {
                        continue;
                    }
                    if let Some(v) = labels.get(key) {
                        values.insert(v.to_string());
                    } else if let Some(req) = combined.get(key).filter(|r| !r.complement) {
                        // A key only the requirements define: Karpenter gives the node one of the
                        // allowed values, so each is a domain.
                        values.extend(req.values.iter().filter(|v| req.has(v)).cloned());
                    }
                }
            }
        }
    }
    values
}

pub fn spread_universe(
    snapshot: &Snapshot,
    pod: &Pod,
    constraint: &TopologySpreadConstraint,
) -> BTreeSet<String> {
    let key = constraint.topology_key.as_str();
    let honor_affinity = constraint.node_affinity_policy == "Honor";
    let honor_taints = constraint.node_taints_policy == "Honor";
    let nodes = spread_filter(pod, constraint);
    let mut values = BTreeSet::new();
    for node in &snapshot.nodes {
        let Some((_, value)) = node.labels.iter().find(|(k, _)| k == key) else {
            continue;
        };
        let label = |k: &str| lookup(&node.labels, k).map(|v| Cow::Borrowed(v.as_str()));
        if nodes
            .as_ref()
            .is_some_and(|f| !f.admits(&label, &node.taints))
        {
            continue;
        }
        values.insert(value.clone());
    }
    if honor_affinity {
        values.extend(flavor_domain_values(snapshot, pod, key, honor_taints));
    } else {
        let mut probe = pod.clone();
        probe.node_selector.clear();
        probe.required_terms.clear();
        values.extend(flavor_domain_values(snapshot, &probe, key, honor_taints));
    }
    values
}

/// kube-scheduler's global minimum: zero for hostname or when fewer domains exist than minDomains.
pub fn min_count(
    constraint: &TopologySpreadConstraint,
    universe: &BTreeSet<String>,
    counts: &rustc_hash::FxHashMap<String, i64>,
) -> i64 {
    if constraint.topology_key == HOSTNAME
        || universe.is_empty()
        || (universe.len() as i64) < constraint.min_domains
    {
        return 0;
    }
    universe
        .iter()
        .map(|d| counts.get(d).copied().unwrap_or(0))
        .min()
        .unwrap_or(0)
}
