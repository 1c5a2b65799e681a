//! The snapshot and plan as plain data, read from and written to JSON by the Python side
//! (`kapstan.scheduling.rust_engine`). Maps whose order matters arrive as lists of pairs.
//!
//! Every input struct denies unknown fields and no field has a default: a field the Python side adds,
//! renames or drops is an error naming it, never a constraint silently ignored.

use serde::{Deserialize, Serialize};

pub const HOSTNAME: &str = "kubernetes.io/hostname";
pub const ZONE: &str = "topology.kubernetes.io/zone";
pub const CAPACITY_TYPE: &str = "karpenter.sh/capacity-type";
pub const NODEPOOL: &str = "karpenter.sh/nodepool";
/// The key of the taint kube-scheduler checks a cordoned node's pods against (NoSchedule).
pub const CORDON_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";
pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";

pub type Pairs<V> = Vec<(String, V)>;

/// Reads a map that must keep its order (a pod's requests, labels) from either a JSON object, in
/// document order, or a list of `[key, value]` pairs.
pub fn ordered<'de, D, V>(deserializer: D) -> Result<Pairs<V>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Ordered<V>(std::marker::PhantomData<V>);

    impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Ordered<V> {
        type Value = Pairs<V>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object or a list of [key, value] pairs")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(map.size_hint().unwrap_or(0));
            while let Some(entry) = map.next_entry()? {
                out.push(entry);
            }
            Ok(out)
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some(entry) = seq.next_element()? {
                out.push(entry);
            }
            Ok(out)
        }
    }

    deserializer.deserialize_any(Ordered(std::marker::PhantomData))
}

pub fn lookup<'a, V>(pairs: &'a [(String, V)], key: &str) -> Option<&'a V> {
    pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v)
}

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

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pod {
    pub namespace: String,
    pub name: String,
    #[serde(deserialize_with = "ordered")]
    pub requests: Pairs<i64>,
    #[serde(deserialize_with = "ordered")]
    pub labels: Pairs<String>,
    #[serde(deserialize_with = "ordered")]
    pub node_selector: Pairs<String>,
    pub required_terms: Vec<Vec<NodeSelectorRequirement>>,
    pub preferred_terms: Vec<PreferredNodeTerm>,
    pub affinity: Vec<PodAffinityTerm>,
    pub preferred_affinity: Vec<WeightedPodAffinityTerm>,
    pub anti_affinity: Vec<PodAffinityTerm>,
    pub preferred_anti_affinity: Vec<WeightedPodAffinityTerm>,
    pub tolerations: Vec<Toleration>,
    pub spread: Vec<TopologySpreadConstraint>,
    pub host_ports: Vec<HostPort>,
    /// A bound pod being deleted: it holds its room and inter-pod affinity still counts it, but
    /// kube-scheduler's PodTopologySpread no longer does.
    pub terminating: bool,
}

impl Pod {
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Offering {
    pub zone: String,
    pub capacity_type: String,
    pub price: f64,
    pub available: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstanceType {
    pub name: String,
    #[serde(deserialize_with = "ordered")]
    pub capacity: Pairs<i64>,
    #[serde(deserialize_with = "ordered")]
    pub allocatable: Pairs<i64>,
    pub offerings: Vec<Offering>,
    #[serde(deserialize_with = "ordered")]
    pub labels: Pairs<String>,
    pub taints: Vec<Taint>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodePool {
    pub name: String,
    pub requirements: Vec<NodeSelectorRequirement>,
    #[serde(deserialize_with = "ordered")]
    pub labels: Pairs<String>,
    pub taints: Vec<Taint>,
    pub weight: i64,
    #[serde(deserialize_with = "ordered")]
    pub limits: Pairs<i64>,
    #[serde(deserialize_with = "ordered")]
    pub usage: Pairs<i64>,
    pub instance_types: Option<Vec<String>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Node {
    pub name: String,
    #[serde(deserialize_with = "ordered")]
    pub labels: Pairs<String>,
    #[serde(deserialize_with = "ordered")]
    pub allocatable: Pairs<i64>,
    pub taints: Vec<Taint>,
    pub pods: Vec<Pod>,
    pub unschedulable: bool,
    /// Keys of pending pods kube-scheduler would not bind here though a plan put them here (the
    /// provisioner's safety net): this node has no room for them.
    pub refused: Vec<String>,
}

impl Node {
    /// Whether `pod` may not be planned here: cordoned for it, or refused here.
    pub fn closed_to(&self, pod: &Pod) -> bool {
        if self.cordoned_for(pod) {
            return true;
        }
        if self.refused.is_empty() {
            return false;
        }
        let key = pod.key();
        self.refused.contains(&key)
    }

    /// Whether the node's cordon keeps the pod off: kube-scheduler's NodeUnschedulable admits a pod
    /// that tolerates the unschedulable taint (DaemonSet pods carry that toleration).
    pub fn cordoned_for(&self, pod: &Pod) -> bool {
        if !self.unschedulable {
            return false;
        }
        let cordon = Taint {
            key: CORDON_TAINT_KEY.to_string(),
            effect: TaintEffect::NoSchedule,
            value: String::new(),
        };
        !pod.tolerations.iter().any(|t| t.tolerates(&cordon))
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonSet {
    pub name: String,
    pub pod: Pod,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Snapshot {
    pub pods: Vec<Pod>,
    pub instance_types: Vec<InstanceType>,
    pub node_pools: Vec<NodePool>,
    pub nodes: Vec<Node>,
    pub daemonsets: Vec<DaemonSet>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PlannedNodeClaim {
    pub node_pool: String,
    pub instance_type: String,
    pub zone: String,
    pub capacity_type: String,
    pub price_per_hour: f64,
    pub pods: Vec<String>,
    pub labels: Pairs<String>,
    /// Other flavors that carry exactly these pods in the same zone and capacity type, cheapest first.
    pub alternatives: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub node_claims: Vec<PlannedNodeClaim>,
    pub existing_nodes: Pairs<Vec<String>>,
    pub unschedulable: Pairs<String>,
}
