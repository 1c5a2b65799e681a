//! The terms that say where a pod may go, as the snapshot carries them: node selector requirements,
//! label selectors, pod (anti-)affinity terms, taints and tolerations, topology spread constraints and
//! host ports, with the matching rules that need nothing but the term itself.

use serde::Deserialize;

use super::pairs::{lookup, ordered, Pairs};

/// A node selector operator; an operator not listed here is an error naming it, as an unknown field is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
pub enum NodeOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
    Gte,
    Lte,
}

/// A label selector operator (pod affinity, topology spread): no numeric comparisons.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
pub enum LabelOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSelectorRequirement {
    pub key: String,
    pub operator: NodeOperator,
    pub values: Vec<String>,
    pub min_values: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PreferredNodeTerm {
    pub weight: i64,
    pub term: Vec<NodeSelectorRequirement>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: LabelOperator,
    pub values: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelSelector {
    #[serde(deserialize_with = "ordered")]
    pub match_labels: Pairs<String>,
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

impl LabelSelector {
    pub fn matches(&self, labels: &[(String, String)]) -> bool {
        for (key, value) in &self.match_labels {
            if lookup(labels, key) != Some(value) {
                return false;
            }
        }
        for expr in &self.match_expressions {
            let present = lookup(labels, &expr.key);
            let ok = match expr.operator {
                LabelOperator::In => present.is_some_and(|v| expr.values.contains(v)),
                LabelOperator::NotIn => !present.is_some_and(|v| expr.values.contains(v)),
                LabelOperator::Exists => present.is_some(),
                LabelOperator::DoesNotExist => present.is_none(),
            };
            if !ok {
                return false;
            }
        }
        true
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PodAffinityTerm {
    pub selector: LabelSelector,
    pub topology_key: String,
    pub namespaces: Vec<String>,
    pub all_namespaces: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WeightedPodAffinityTerm {
    pub weight: i64,
    pub term: PodAffinityTerm,
}

/// What a taint does to pods that do not tolerate it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
pub enum TaintEffect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl std::fmt::Display for TaintEffect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
pub enum TolerationOperator {
    Equal,
    Exists,
}

/// A toleration's effect: the empty string, as in the Kubernetes API, tolerates every effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
pub enum TolerationEffect {
    #[serde(rename = "")]
    Any,
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl TolerationEffect {
    fn covers(self, effect: TaintEffect) -> bool {
        match self {
            TolerationEffect::Any => true,
            TolerationEffect::NoSchedule => effect == TaintEffect::NoSchedule,
            TolerationEffect::PreferNoSchedule => effect == TaintEffect::PreferNoSchedule,
            TolerationEffect::NoExecute => effect == TaintEffect::NoExecute,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Toleration {
    pub key: String,
    pub operator: TolerationOperator,
    pub value: String,
    pub effect: TolerationEffect,
}

impl Toleration {
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if !self.effect.covers(taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        if self.operator == TolerationOperator::Exists {
            return true;
        }
        self.key == taint.key && self.value == taint.value
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Taint {
    pub key: String,
    pub effect: TaintEffect,
    pub value: String,
}

impl std::fmt::Display for Taint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.value.is_empty() {
            write!(f, "{}:{}", self.key, self.effect)
        } else {
            write!(f, "{}={}:{}", self.key, self.value, self.effect)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologySpreadConstraint {
    pub max_skew: i64,
    pub topology_key: String,
    pub when_unsatisfiable: String,
    pub selector: LabelSelector,
    pub min_domains: i64,
    pub node_affinity_policy: String,
    pub node_taints_policy: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostPort {
    pub port: i64,
    pub protocol: String,
    pub host_ip: String,
}

impl HostPort {
    pub fn conflicts(&self, other: &HostPort) -> bool {
        if self.port != other.port || self.protocol != other.protocol {
            return false;
        }
        let wildcard = |ip: &str| ip.is_empty() || ip == "0.0.0.0" || ip == "::";
        wildcard(&self.host_ip) || wildcard(&other.host_ip) || self.host_ip == other.host_ip
    }
}
