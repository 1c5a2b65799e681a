//! Where a pod can go (twin of `targets.py`): an existing node, or a claim inside a NodePool.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::rc::Rc;

use super::flavors::{offering_values, Flavor, FlavorList, OFFERING_KEYS};
use super::model::{
    lookup, DaemonSet, HostPort, Node, Pairs, Taint, CAPACITY_TYPE, HOSTNAME, ZONE,
};
use super::pools::daemonsets_on;
use super::requirements::{carried_value, Reqs, Requirement};
use super::resources::{self as res, Names};

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
        if let Some(known) = self.known_domain(key, reqs) {
            return vec![Some(known.to_string())];
        }
        let req: Option<&Requirement> = reqs.get(key);
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

    /// The claim's domain of `key` when it has only one under `reqs`: its hostname, or the value `reqs`
    /// pin the key to. The first answer of `domain_options`, without building its list.
    pub fn known_domain<'a>(&'a self, key: &str, reqs: &'a Reqs) -> Option<&'a str> {
        if key == HOSTNAME {
            return Some(&self.hostname);
        }
        reqs.get(key).and_then(|r| r.single_value())
    }

    pub fn domain(&self, key: &str) -> Option<String> {
        self.domain_of(key).map(Cow::into_owned)
    }

    /// `domain`, borrowed where the claim holds the value itself.
    pub fn domain_of(&self, key: &str) -> Option<Cow<'_, str>> {
        // Every placed pod is counted through here: most keys are known without building a list.
        if let Some(known) = self.known_domain(key, &self.requirements) {
            return Some(Cow::Borrowed(known));
        }
        let options = self.domain_options(key, &self.flavors, &self.requirements);
        if options.len() == 1 {
            options.into_iter().next().flatten().map(Cow::Owned)
        } else {
            None
        }
    }
}
