//! Flavors (twin of the flavor part of `targets.py`): an instance type as one NodePool sees it, its
//! offerings and prices, and the pool's flavor list.

use std::collections::BTreeSet;
use std::rc::Rc;

use super::model::{lookup, HostPort, InstanceType, Offering, Pod, CAPACITY_TYPE, ZONE};
use super::requirements::{Reqs, Requirement};
use super::resources::Res;

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

    pub fn kind(&self, offering: &Offering) -> u32 {
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
        for req in reqs.0.iter() {
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

/// The zones (or capacity types) of the offerings the flavors have under the requirements, each once.
/// Which offering pairs any flavor has is found first, then their values.
pub fn offering_values<'a>(key: &str, flavors: &'a [Rc<Flavor>], reqs: &Reqs) -> Vec<&'a str> {
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
