//! A NodePool as the solve sees it (twin of the pool part of `targets.py`): its requirements, flavors,
//! the label keys it gives its nodes and the limits left.

use std::collections::BTreeSet;
use std::rc::Rc;

use super::flavors::{sort_by_price, Flavor, OfferingKinds, OFFERING_KEYS};
use super::model::{
    DaemonSet, InstanceType, NodePool, Pairs, Taint, CAPACITY_TYPE, HOSTNAME, NODEPOOL, ZONE,
};
use super::requirements::{carried_value, Reqs};
use super::resources::{self as res, Names, Res};
use super::targets::{merge_labels, set_label};
use super::topology::{matches_node, untolerated};

/// The DaemonSets whose pod a node with these labels and taints would run.
pub fn daemonsets_on<'d>(
    daemonsets: &'d [DaemonSet],
    labels: &Pairs<String>,
    taints: &[Taint],
) -> Vec<&'d DaemonSet> {
    daemonsets
        .iter()
        .filter(|ds| {
            matches_node(&ds.pod, labels)
                && untolerated(&ds.pod.tolerations, taints, false).is_none()
        })
        .collect()
}

/// The label keys a NodePool gives its nodes whatever their flavor (twin of `targets.pool_label_keys`):
/// its template labels, its own name, and every key of its requirements that no flavor defines (a label
/// some flavor carries is that flavor's). The node's value of such a key is `carried_value`.
pub fn pool_label_keys(pool: &NodePool, flavor_label_keys: &BTreeSet<&str>) -> BTreeSet<String> {
    let mut keys: BTreeSet<String> = pool.labels.iter().map(|(k, _)| k.clone()).collect();
    keys.insert(NODEPOOL.to_string());
    for req in &pool.requirements {
        let key = req.key.as_str();
        if !flavor_label_keys.contains(key) && key != HOSTNAME && !OFFERING_KEYS.contains(&key) {
            keys.insert(req.key.clone());
        }
    }
    keys
}

pub enum Limit {
    Nodes,
    Resource(String),
}

pub struct PoolView {
    pub pool: NodePool,
    pub base: Reqs,
    pub flavors: Vec<Rc<Flavor>>,
    /// Label keys the pool gives every node of its own (`pool_label_keys`), shared with its flavors.
    pub pool_keys: Rc<BTreeSet<String>>,
    /// Limits left for this solve, in the pool's order (`nodes` counts claims).
    pub remaining: Vec<(String, i64)>,
    /// Flavors left out because the DaemonSets that run on them do not fit (Karpenter filters them).
    pub crowded: Vec<String>,
}

/// The names of the flavors a pool may use: its NodeClass's list, else the whole catalog by name.
fn pool_flavor_names(pool: &NodePool, catalog: &[InstanceType]) -> Vec<String> {
    match &pool.instance_types {
        Some(names) => names.clone(),
        None => {
            let mut all: Vec<String> = catalog.iter().map(|it| it.name.clone()).collect();
            all.sort();
            all.dedup();
            all
        }
    }
}

/// The value each of the pool's own label keys carries on its nodes (`carried_value`), where it has one.
fn carried_labels(pool_keys: &BTreeSet<String>, base: &Reqs) -> Pairs<String> {
    pool_keys
        .iter()
        .filter_map(|key| {
            let value = carried_value(base.get(key)?)?;
            Some((key.clone(), value))
        })
        .collect()
}

/// What a pool makes of an instance type: the labels its nodes get, the DaemonSets that run there.
struct PoolSight<'a> {
    pool: &'a NodePool,
    carried: &'a Pairs<String>,
    pool_keys: &'a Rc<BTreeSet<String>>,
    daemonsets: &'a [DaemonSet],
    resources: &'a Names,
    kinds: &'a Rc<OfferingKinds>,
}

impl PoolSight<'_> {
    /// The instance type as this pool's flavor (base price not yet set), and its DaemonSets' requests.
    fn flavor(&self, it: &InstanceType) -> (Flavor, Res) {
        let pool = self.pool;
        let mut node_labels = merge_labels(&merge_labels(self.carried, &it.labels), &pool.labels);
        set_label(&mut node_labels, NODEPOOL, &pool.name);
        if let Some(cheapest) = it.offerings.iter().filter(|o| o.available).min_by(|a, b| {
            a.price
                .total_cmp(&b.price)
                .then_with(|| a.zone.cmp(&b.zone))
        }) {
            set_label(&mut node_labels, ZONE, &cheapest.zone);
            set_label(&mut node_labels, CAPACITY_TYPE, &cheapest.capacity_type);
        }
        let taints: Vec<Taint> = pool.taints.iter().chain(&it.taints).cloned().collect();
        let running = daemonsets_on(self.daemonsets, &node_labels, &taints);
        let mut overhead = Res::new();
        for ds in &running {
            res::add_into(&mut overhead, &ds.pod.requests, 1);
        }
        let net = res::subtract(&it.allocatable, &overhead);
        let flavor = Flavor {
            it: it.clone(),
            kinds: it.offerings.iter().map(|o| self.kinds.kind(o)).collect(),
            table: self.kinds.clone(),
            net_dense: self.resources.dense(&net),
            net,
            base_price: 0.0,
            pool_keys: self.pool_keys.clone(),
            daemon_ports: running
                .iter()
                .flat_map(|ds| ds.pod.host_ports.iter().cloned())
                .collect(),
        };
        (flavor, overhead)
    }
}

impl PoolView {
    pub fn build(
        pool: &NodePool,
        catalog: &[InstanceType],
        daemonsets: &[DaemonSet],
        resources: &Names,
        kinds: &Rc<OfferingKinds>,
    ) -> PoolView {
        let mut labels = pool.labels.clone();
        labels.push((NODEPOOL.into(), pool.name.clone()));
        let base = Reqs::build(&pool.requirements, &labels);
        let flavor_label_keys: BTreeSet<&str> = catalog
            .iter()
            .flat_map(|it| it.labels.iter().map(|(k, _)| k.as_str()))
            .collect();
        let pool_keys = Rc::new(pool_label_keys(pool, &flavor_label_keys));
        let carried = carried_labels(&pool_keys, &base);
        let mut flavors = Vec::new();
        let mut crowded = Vec::new();
        let sight = PoolSight {
            pool,
            carried: &carried,
            pool_keys: &pool_keys,
            daemonsets,
            resources,
            kinds,
        };
        for name in pool_flavor_names(pool, catalog) {
            let Some(it) = catalog.iter().rev().find(|it| it.name == name) else {
                continue;
            };
            let (mut flavor, overhead) = sight.flavor(it);
            // A flavor with no available offering the pool allows can never be bought: no candidate
            // (requirements only narrow, so every claim's flavors keep an offering).
            if !flavor.compatible(&base) || flavor.offerings(&base).next().is_none() {
                continue;
            }
            if res::fits(&[], &overhead, &it.allocatable) {
                flavor.base_price = flavor.price(&base);
                flavors.push(Rc::new(flavor));
            } else {
                crowded.push(it.name.clone());
            }
        }
        sort_by_price(&mut flavors, &base);
        let remaining = pool
            .limits
            .iter()
            .map(|(key, limit)| (key.clone(), limit - res::get(&pool.usage, key)))
            .collect();
        PoolView {
            pool: pool.clone(),
            base,
            flavors,
            pool_keys,
            remaining,
            crowded,
        }
    }

    fn need(key: &str, flavor: Option<&Flavor>, replacing: Option<&Flavor>) -> i64 {
        if key == "nodes" {
            return if flavor.is_some() { 1000 } else { 0 }
                - if replacing.is_some() { 1000 } else { 0 };
        }
        flavor.map_or(0, |f| res::get(&f.it.capacity, key))
            - replacing.map_or(0, |f| res::get(&f.it.capacity, key))
    }

    pub fn within_limits(&self, flavor: &Flavor, replacing: Option<&Flavor>) -> bool {
        self.remaining.iter().all(|(key, left)| {
            let need = if key == "nodes" {
                if replacing.is_some() {
                    0
                } else {
                    1000
                }
            } else {
                Self::need(key, Some(flavor), replacing)
            };
            need <= *left
        })
    }

    pub fn charge(&mut self, flavor: Option<&Flavor>, replacing: Option<&Flavor>) {
        for (key, left) in self.remaining.iter_mut() {
            *left -= Self::need(key, flavor, replacing);
        }
    }
}
