//! The snapshot and plan as plain data, read from and written to JSON by the Python side
//! (`kapstan.scheduling.rust_engine`). Maps whose order matters arrive as lists of pairs.
//!
//! Every input struct denies unknown fields and no field has a default: a field the Python side adds,
//! renames or drops is an error naming it, never a constraint silently ignored.
//!
//! This module holds the snapshot's objects and the plan; the placement terms they carry are in
//! `placement`, the ordered maps in `pairs`, both re-exported here so callers name one module.

mod pairs;
mod placement;

use serde::{Deserialize, Serialize};

pub use pairs::{lookup, ordered, Pairs};
pub use placement::{
    HostPort, LabelOperator, LabelSelector, LabelSelectorRequirement, NodeOperator,
    NodeSelectorRequirement, PodAffinityTerm, PreferredNodeTerm, Taint, TaintEffect, Toleration,
    TolerationEffect, TolerationOperator, TopologySpreadConstraint, WeightedPodAffinityTerm,
};

pub const HOSTNAME: &str = "kubernetes.io/hostname";
pub const ZONE: &str = "topology.kubernetes.io/zone";
pub const CAPACITY_TYPE: &str = "karpenter.sh/capacity-type";
pub const NODEPOOL: &str = "karpenter.sh/nodepool";
/// The key of the taint kube-scheduler checks a cordoned node's pods against (NoSchedule).
pub const CORDON_TAINT_KEY: &str = "node.kubernetes.io/unschedulable";
pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";

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
