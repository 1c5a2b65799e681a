//! Where a pod can go (twin of `targets.py`): an existing node, or a claim inside a NodePool.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::rc::Rc;

use super::model::{
    lookup, DaemonSet, HostPort, InstanceType, Node, NodePool, Offering, Pairs, Pod, Taint,
    CAPACITY_TYPE, HOSTNAME, NODEPOOL, ZONE,
};
use super::requirements::{carried_value, Reqs, Requirement};
use super::resources::{self as res, Names, Res};
use super::topology::{matches_node, untolerated};

pub const OFFERING_KEYS: [&str; 2] = [ZONE, CAPACITY_TYPE];

/// The distinct (zone, capacity type) pairs the catalog offers. A pass over many flavors asks the
/// zone and capacity-type requirements about each pair once (`mask`), then reads offerings by pair.
pub struct OfferingKinds {
    pairs: Vec<(String, String)>,
}

impl OfferingKinds {
    pub fn build(catalog: &[InstanceType]) -> OfferingKinds {
        let mut pairs: Vec<(String, String)> = Vec::new();
        for o in catalog.iter().flat_map(|it| &it.offerings) {
            if !pairs
                .iter()
                .any(|(z, c)| *z == o.zone && *c == o.capacity_type)
            {
                pairs.push((o.zone.clone(), o.capacity_type.clone()));
            }
        }
        OfferingKinds { pairs }
    }

    fn kind(&self, offering: &Offering) -> u32 {
        self.pairs
            .iter()
            .position(|(z, c)| *z == offering.zone && *c == offering.capacity_type)
            .expect("every offering has a kind") as u32
    }

    /// Per pair, whether the requirements allow it.
    pub fn mask(&self, reqs: &Reqs) -> Vec<bool> {
        let (zone, capacity_type) = (reqs.get(ZONE), reqs.get(CAPACITY_TYPE));
        self.pairs
            .iter()
            .map(|(z, c)| zone.is_none_or(|r| r.has(z)) && capacity_type.is_none_or(|r| r.has(c)))
            .collect()
    }
}

/// One instance type as one NodePool sees it: allocatable minus that pool's DaemonSet overhead.
pub struct Flavor {
    pub it: InstanceType,
    /// Each offering's pair in `table`.
    pub kinds: Vec<u32>,
    pub table: Rc<OfferingKinds>,
    pub net: Res,
    pub net_dense: Vec<i64>,
    /// Price under the pool's own requirements, which never change during a solve.
    pub base_price: f64,
    /// Label keys the NodePool gives every node of its own (`pool_label_keys`), whatever the flavor.
    pub pool_keys: Rc<BTreeSet<String>>,
    /// Host ports the DaemonSets running on this flavor's nodes hold.
    pub daemon_ports: Vec<HostPort>,
}

impl Flavor {
    /// Whether none of the pod's host ports is held by a DaemonSet on this flavor's nodes.
    pub fn ports_free(&self, pod: &Pod) -> bool {
        !pod.host_ports
            .iter()
            .any(|a| self.daemon_ports.iter().any(|b| a.conflicts(b)))
    }

    pub fn name(&self) -> &str {
        &self.it.name
    }

    pub fn offerings<'a>(&'a self, reqs: &'a Reqs) -> impl Iterator<Item = &'a Offering> + 'a {
        let zone = reqs.get(ZONE);
        let capacity_type = reqs.get(CAPACITY_TYPE);
        self.it.offerings.iter().filter(move |o| {
            o.available
                && zone.is_none_or(|z| z.has(&o.zone))
                && capacity_type.is_none_or(|c| c.has(&o.capacity_type))
        })
    }

    pub fn price(&self, reqs: &Reqs) -> f64 {
        self.price_within(reqs.get(ZONE), reqs.get(CAPACITY_TYPE))
    }

    /// The available offerings `mask` (from `OfferingKinds::mask`) allows.
    fn offerings_masked<'a>(&'a self, mask: &'a [bool]) -> impl Iterator<Item = &'a Offering> + 'a {
        self.it
            .offerings
            .iter()
            .zip(&self.kinds)
            .filter(move |(o, k)| o.available && mask[**k as usize])
            .map(|(o, _)| o)
    }

    /// `price` under the requirements `mask` was taken from.
    pub fn price_masked(&self, mask: &[bool]) -> f64 {
        self.offerings_masked(mask)
            .map(|o| o.price)
            .fold(f64::INFINITY, f64::min)
    }

    /// Whether an available offering is left under the requirements `mask` was taken from.
    pub fn offered_within(&self, mask: &[bool]) -> bool {
        self.offerings_masked(mask).next().is_some()
    }

    fn labels_allow(&self, reqs: &Reqs) -> bool {
        for req in &reqs.0 {
            if OFFERING_KEYS.contains(&req.key.as_str()) {
                continue;
            }
            if !self.label_allows(req) {
                return false;
            }
        }
        true
    }

    /// Whether a node of this flavor meets the requirement on its key: on the flavor's own label, and for
    /// a key that neither the flavor nor its NodePool gives the node, only if absence is allowed.
    fn label_allows(&self, req: &Requirement) -> bool {
        match lookup(&self.it.labels, &req.key) {
            Some(value) => req.has(value),
            None => req.absent_ok || self.pool_keys.contains(&req.key),
        }
    }

    /// `price` with the zone and capacity-type requirements already looked up.
    pub fn price_within(
        &self,
        zone: Option<&Requirement>,
        capacity_type: Option<&Requirement>,
    ) -> f64 {
        self.it
            .offerings
            .iter()
            .filter(|o| {
                o.available
                    && zone.is_none_or(|z| z.has(&o.zone))
                    && capacity_type.is_none_or(|c| c.has(&o.capacity_type))
            })
            .map(|o| o.price)
            .fold(f64::INFINITY, f64::min)
    }

    pub fn cheapest_offering<'a>(&'a self, reqs: &'a Reqs) -> &'a Offering {
        let mut best: Option<&Offering> = None;
        for o in self.offerings(reqs) {
            let better = match best {
                None => true,
                Some(b) => {
                    (o.price, &o.zone, &o.capacity_type) < (b.price, &b.zone, &b.capacity_type)
                }
            };
            if better {
                best = Some(o);
            }
        }
        best.expect("a chosen flavor has an offering")
    }

    pub fn compatible(&self, reqs: &Reqs) -> bool {
        if !self.labels_allow(reqs) {
            return false;
        }
        if reqs.get(ZONE).is_some() || reqs.get(CAPACITY_TYPE).is_some() {
            return self.offerings(reqs).next().is_some();
        }
        true
    }

    /// `compatible(reqs)` for a flavor that was compatible before `reqs` narrowed `key`: the other
    /// requirements (and, unless `key` is an offering key, the offerings) still pass.
    /// `mask` is taken from `reqs`.
    pub fn compatible_narrowed(&self, key: &str, reqs: &Reqs, mask: &[bool]) -> bool {
        if OFFERING_KEYS.contains(&key) {
            return self.offerings_masked(mask).next().is_some();
        }
        reqs.get(key).is_none_or(|req| self.label_allows(req))
    }

    pub fn label(&self, key: &str, reqs: &Reqs) -> Vec<String> {
        if key == ZONE || key == CAPACITY_TYPE {
            let values: BTreeSet<String> = self
                .offerings(reqs)
                .map(|o| {
                    if key == ZONE {
                        o.zone.clone()
                    } else {
                        o.capacity_type.clone()
                    }
                })
                .collect();
            return values.into_iter().collect();
        }
        lookup(&self.it.labels, key)
            .map(|v| vec![v.clone()])
            .unwrap_or_default()
    }
}

/// A claim's candidate flavors in price order: a shared list and how many of its first entries have
/// dropped out. Cloning it and dropping a prefix copy nothing; filtering copies only when an entry
/// past the first kept one goes, re-sorting only when the order changes.
#[derive(Clone)]
pub struct FlavorList {
    items: Rc<Vec<Rc<Flavor>>>,
    start: usize,
}

impl std::ops::Deref for FlavorList {
    type Target = [Rc<Flavor>];

    fn deref(&self) -> &[Rc<Flavor>] {
        &self.items[self.start..]
    }
}

impl FlavorList {
    pub fn new(items: Vec<Rc<Flavor>>) -> FlavorList {
        FlavorList::shared(Rc::new(items), 0)
    }

    pub fn shared(items: Rc<Vec<Rc<Flavor>>>, start: usize) -> FlavorList {
        FlavorList { items, start }
    }

    /// The first `count` flavors drop out.
    pub fn drop_front(&mut self, count: usize) {
        self.start += count.min(self.len());
    }

    /// The flavors `keep` accepts, in order (each asked once).
    pub fn filtered(&self, mut keep: impl FnMut(&Rc<Flavor>) -> bool) -> FlavorList {
        let kept: Vec<bool> = self.iter().map(&mut keep).collect();
        let first = kept.iter().position(|k| *k).unwrap_or(kept.len());
        if kept[first..].iter().all(|k| *k) {
            let mut out = self.clone();
            out.drop_front(first);
            return out;
        }
        FlavorList::new(
            self.iter()
                .zip(&kept)
                .filter(|(_, k)| **k)
                .map(|(f, _)| f.clone())
                .collect(),
        )
    }

    /// Cheapest first under `reqs`, ties by name (stable, so a list already in that order stays).
    pub fn sort_by_price(&mut self, reqs: &Reqs) {
        let Some(first) = self.first() else {
            return;
        };
        let mask = first.table.mask(reqs);
        let prices: Vec<f64> = self.iter().map(|f| f.price_masked(&mask)).collect();
        let order = |(pa, a): (&f64, &Rc<Flavor>), (pb, b): (&f64, &Rc<Flavor>)| {
            pa.total_cmp(pb).then_with(|| a.name().cmp(b.name()))
        };
        let sorted = (1..self.len()).all(|i| {
            order((&prices[i - 1], &self[i - 1]), (&prices[i], &self[i]))
                != std::cmp::Ordering::Greater
        });
        if sorted {
            return;
        }
        let mut keyed: Vec<(f64, Rc<Flavor>)> =
            prices.into_iter().zip(self.iter().cloned()).collect();
        keyed.sort_by(|(pa, a), (pb, b)| order((pa, a), (pb, b)));
        *self = FlavorList::new(keyed.into_iter().map(|(_, f)| f).collect());
    }
}

/// Cheapest first under `reqs`, ties by name. Each price is computed once (a stable sort on the same
/// order as comparing prices pairwise).
pub fn sort_by_price(flavors: &mut Vec<Rc<Flavor>>, reqs: &Reqs) {
    let (zone, capacity_type) = (reqs.get(ZONE), reqs.get(CAPACITY_TYPE));
    let mut keyed: Vec<(f64, Rc<Flavor>)> = flavors
        .drain(..)
        .map(|f| (f.price_within(zone, capacity_type), f))
        .collect();
    keyed.sort_by(|(pa, a), (pb, b)| pa.total_cmp(pb).then_with(|| a.name().cmp(b.name())));
    flavors.extend(keyed.into_iter().map(|(_, f)| f));
}

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

/// The zones (or capacity types) of the offerings the flavors have under the requirements, each once.
/// Which offering pairs any flavor has is found first, then their values.
fn offering_values<'a>(key: &str, flavors: &'a [Rc<Flavor>], reqs: &Reqs) -> Vec<&'a str> {
    let mut values: Vec<&str> = Vec::new();
    let Some(first) = flavors.first() else {
        return values;
    };
    let table = &first.table;
    let mask = table.mask(reqs);
    let mut seen = vec![false; mask.len()];
    for flavor in flavors {
        for (o, k) in flavor.it.offerings.iter().zip(&flavor.kinds) {
            if o.available && mask[*k as usize] {
                seen[*k as usize] = true;
            }
        }
    }
    for (k, (zone, capacity_type)) in table.pairs.iter().enumerate() {
        let value = if key == ZONE { zone } else { capacity_type };
        if seen[k] && !values.contains(&value.as_str()) {
            values.push(value.as_str());
        }
    }
    values
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

pub fn merge_labels(first: &Pairs<String>, second: &Pairs<String>) -> Pairs<String> {
    let mut out = first.clone();
    for (k, v) in second {
        set_label(&mut out, k, v);
    }
    out
}

pub fn set_label(labels: &mut Pairs<String>, key: &str, value: &str) {
    match labels.iter_mut().find(|(k, _)| k == key) {
        Some((_, slot)) => *slot = value.to_string(),
        None => labels.push((key.to_string(), value.to_string())),
    }
}

pub struct ExistingTarget {
    pub node: Node,
    pub used: Vec<i64>,
    pub allocatable: Vec<i64>,
    pub ports: Vec<HostPort>,
    pub placed: Vec<usize>,
}

impl ExistingTarget {
    /// The node with its pods; the DaemonSets that run on it hold their host ports there even when
    /// their pods are not in the snapshot (a second copy of a port held twice changes nothing).
    pub fn build(node: &Node, names: &Names, daemonsets: &[DaemonSet]) -> ExistingTarget {
        let mut used = names.zero();
        for pod in &node.pods {
            res::dense_add(&mut used, &names.dense(&pod.requests));
        }
        let running = daemonsets_on(daemonsets, &node.labels, &node.taints);
        let ports = node
            .pods
            .iter()
            .map(|p| &p.host_ports)
            .chain(running.iter().map(|ds| &ds.pod.host_ports))
            .flat_map(|ports| ports.iter().cloned())
            .collect();
        ExistingTarget {
            node: node.clone(),
            used,
            allocatable: names.dense(&node.allocatable),
            ports,
            placed: Vec::new(),
        }
    }

    pub fn domain(&self, key: &str) -> Option<String> {
        lookup(&self.node.labels, key).cloned()
    }
}

/// Claims, boxed: the cost pass takes them out of the middle of the list, and moving pointers is
/// cheaper than moving claims.
#[allow(clippy::vec_box)]
pub type ClaimList = Vec<Box<Claim>>;

pub struct Claim {
    pub index: usize,
    pub view: usize,
    pub pool_name: String,
    pub hostname: String,
    /// Per resource, the most any flavor offered when the claim opened: flavors only drop out, so it
    /// stays an upper bound, a cheap way to turn pods away.
    pub max_net: Vec<i64>,
    pub requirements: Reqs,
    pub flavors: FlavorList,
    /// What the claim's pods request, dense (see `resources::Names`).
    pub used: Vec<i64>,
    pub pods: Vec<usize>,
    pub ports: Vec<HostPort>,
}

/// The hostname a claim's node is counted under until it has one: `<pool>/claim-<index>`. Built by
/// hand: `format!` cost a fifth of opening a claim, and the cost pass opens thousands it throws away.
fn claim_hostname(pool_name: &str, index: usize) -> String {
    let number = index.to_string();
    let mut hostname = String::with_capacity(pool_name.len() + "/claim-".len() + number.len());
    hostname.push_str(pool_name);
    hostname.push_str("/claim-");
    hostname.push_str(&number);
    hostname
}

/// A pool's taints and a flavor's, as the node of that flavor in that pool carries them.
pub fn with_flavor_taints<'a>(pool: &'a [Taint], flavor: &'a [Taint]) -> Cow<'a, [Taint]> {
    if flavor.is_empty() {
        Cow::Borrowed(pool)
    } else {
        Cow::Owned(pool.iter().chain(flavor).cloned().collect())
    }
}

/// Per resource, the most any of the flavors offers (a claim's `max_net`).
pub fn most_net(flavors: &[Rc<Flavor>]) -> Vec<i64> {
    let width = flavors.first().map_or(0, |f| f.net_dense.len());
    let mut max_net = vec![i64::MIN; width];
    for flavor in flavors {
        for (bound, value) in max_net.iter_mut().zip(&flavor.net_dense) {
            *bound = (*bound).max(*value);
        }
    }
    max_net
}

impl Claim {
    pub fn new(
        index: usize,
        view: usize,
        pool_name: &str,
        requirements: Reqs,
        flavors: FlavorList,
        max_net: Vec<i64>,
    ) -> Claim {
        let width = max_net.len();
        Claim {
            index,
            view,
            pool_name: pool_name.to_string(),
            hostname: claim_hostname(pool_name, index),
            max_net,
            requirements,
            flavors,
            used: vec![0; width],
            pods: Vec::new(),
            ports: Vec::new(),
        }
    }

    pub fn chosen(&self) -> &Flavor {
        &self.flavors[0]
    }

    /// The taints the claim's node will carry: its pool template's (`pool`) and its flavor's own.
    pub fn taints<'a>(&'a self, pool: &'a [Taint]) -> Cow<'a, [Taint]> {
        with_flavor_taints(pool, &self.chosen().it.taints)
    }

    pub fn price(&self) -> f64 {
        self.chosen().price(&self.requirements)
    }

    pub fn domain_options<'a>(
        &self,
        key: &str,
        flavors: &'a [Rc<Flavor>],
        reqs: &'a Reqs,
    ) -> Vec<Option<String>> {
        if key == HOSTNAME {
            return vec![Some(self.hostname.clone())];
        }
        let req: Option<&Requirement> = reqs.get(key);
        if let Some(pinned) = req.and_then(|r| r.single_value()) {
            return vec![Some(pinned.to_string())];
        }
        if OFFERING_KEYS.contains(&key)
            || flavors.iter().any(|f| lookup(&f.it.labels, key).is_some())
        {
            // Borrowed values: this runs for every pod that pins a zone, over every candidate flavor.
            // Few distinct values among many flavors: a short list, deduplicated as it grows.
            let mut values: Vec<&str> = Vec::new();
            if key == ZONE || key == CAPACITY_TYPE {
                values = offering_values(key, flavors, reqs);
            } else {
                let mut distinct: BTreeSet<&str> = BTreeSet::new();
                for flavor in flavors {
                    if let Some(value) = lookup(&flavor.it.labels, key) {
                        distinct.insert(value);
                    }
                }
                values.extend(distinct);
            }
            values.sort_unstable();
            return values
                .into_iter()
                .filter(|v| req.is_none_or(|r| r.has(v)))
                .map(|v| Some(v.to_string()))
                .collect();
        }
        if let Some(r) = req {
            if !r.complement && (!r.values.is_empty() || !r.absent_ok) {
                return r.values.iter().cloned().map(Some).collect();
            }
        }
        // A key only the pool's requirements define (Exists, Gt, ...) is given carried_value on the node:
        // that is its one domain now, so a pod counted there is counted as the node will be labelled, and
        // a later pod cannot narrow the key under the pods already counted without it.
        vec![req.and_then(carried_value)]
    }

    pub fn domain(&self, key: &str) -> Option<String> {
        // The two common answers of `domain_options`, without building its list: every placed pod
        // is counted through here.
        if key == HOSTNAME {
            return Some(self.hostname.clone());
        }
        if let Some(pinned) = self.requirements.get(key).and_then(|r| r.single_value()) {
            return Some(pinned.to_string());
        }
        let options = self.domain_options(key, &self.flavors, &self.requirements);
        if options.len() == 1 {
            options.into_iter().next().flatten()
        } else {
            None
        }
    }
}
