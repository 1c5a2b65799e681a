//! The greedy placement (twin of `greedy/` in Python): pods biggest first, CPU-heavy and memory-heavy
//! interleaved, onto existing nodes, open claims, then a new claim from the heaviest NodePool;
//! preferences relaxed one at a time; failed pods retried while a round places something. The
//! scheduler's state lives here; its steps in `order` (the order pods are taken in), `checks` (what a
//! pod's constraints allow where) and `problem` (the topology refusals it words), `domains` (the
//! domain a claim takes for each topology key), `claims` (joining and opening claims), `refusals` (why
//! a pool cannot open one) and `placement` (the loop over pods and targets).

mod alternatives;
mod checks;
mod claims;
mod domains;
mod order;
mod placement;
mod problem;
mod refusals;

use std::borrow::Cow;
use std::collections::BTreeSet;

use rustc_hash::FxHashMap as HashMap;
use std::rc::Rc;

use super::counts::TopologyCounts;
use super::flavors::{OfferingKinds, OFFERING_KEYS};
use super::model::{lookup, Pairs, PlannedNodeClaim, Pod, Snapshot, CAPACITY_TYPE, NODEPOOL, ZONE};
use super::pools::PoolView;
use super::preferences::Preferences;
use super::requirements::{carried_value, Reqs};
use super::resources::Names;
use super::room::RoomIndex;
use super::targets::{set_label, Claim, ClaimList, ExistingTarget};

pub use alternatives::{AlternativeFlavors, MAX_ALTERNATIVES};
pub use checks::{AffinityCheck, AntiCheck, Checks, SpreadCheck};
use claims::Opening;
pub use claims::Restrict;
pub use order::{biggest_first, interleaved, placement_sequence, slot_paced};
pub use problem::Problem;

/// Why nothing can be provisioned while the catalog is empty (the same words as Python's).
pub const NO_MANAGED_FLAVOR: &str = "kapstan manages no flavor yet: mark a MachineDeployment, or a \
    ClusterClass worker class in its metadata, with the label node.cluster.x-k8s.io/karpenter-member or \
    the annotation kapstan.io/managed: \"true\"";

pub struct Scheduler<'s> {
    pub snapshot: &'s Snapshot,
    /// Every pod: those bound to existing nodes first, then the pending ones. Borrowed from the
    /// snapshot: copying 20,000 pods (and dropping them) cost more than a tenth of a large solve.
    pub pods: Vec<&'s Pod>,
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
    /// Each placed pod's checks at its `placed_prefs`: they depend on the relaxation level and the
    /// groups registered up front, never on counts, so the cost pass reuses them.
    pub placed_checks: HashMap<usize, Rc<Checks>>,
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

impl<'s> Scheduler<'s> {
    pub fn new(snapshot: &'s Snapshot) -> Self {
        let names = resource_names(snapshot);
        let pools = pool_views(snapshot, &names);
        let flavor_keys = flavor_label_keys(snapshot);
        let mut nodes: Vec<_> = snapshot.nodes.iter().collect();
        nodes.sort_by(|a, b| a.name.cmp(&b.name));
        let existing: Vec<ExistingTarget> = nodes
            .iter()
            .map(|n| ExistingTarget::build(n, &names, &snapshot.daemonsets))
            .collect();
        let (pods, first_pending) = pod_arena(snapshot);
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
            placed_checks: HashMap::default(),
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
                let domain = |key: &str| lookup(&labels, key).map(|v| Cow::Borrowed(v.as_str()));
                self.topology
                    .record(id, self.pods[id], &domain, &node.taints, 1, false);
                id += 1;
            }
        }
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

    // -- output -------------------------------------------------------------------------------------

    pub fn planned(&self, claim: &Claim, alternatives: Vec<String>) -> PlannedNodeClaim {
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
        for req in claim.requirements.0.iter() {
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
            alternatives,
        }
    }
}

/// The NodePools as the solve sees them, heaviest first, then by name.
fn pool_views(snapshot: &Snapshot, names: &Names) -> Vec<PoolView> {
    let kinds = Rc::new(OfferingKinds::build(&snapshot.instance_types));
    let mut ordered: Vec<_> = snapshot.node_pools.iter().collect();
    ordered.sort_by(|a, b| (-a.weight, &a.name).cmp(&(-b.weight, &b.name)));
    ordered
        .iter()
        .map(|p| {
            PoolView::build(
                p,
                &snapshot.instance_types,
                &snapshot.daemonsets,
                names,
                &kinds,
            )
        })
        .collect()
}

/// Keys a flavor can give a node (as in Python, template labels and requirement-only keys are in their
/// own pool's base requirements only).
fn flavor_label_keys(snapshot: &Snapshot) -> BTreeSet<String> {
    let mut flavor_keys: BTreeSet<String> = snapshot
        .instance_types
        .iter()
        .flat_map(|it| it.labels.iter().map(|(k, _)| k.clone()))
        .collect();
    flavor_keys.extend(OFFERING_KEYS.map(String::from));
    flavor_keys
}

/// Every pod in one arena: those bound to existing nodes first (in snapshot node order), then the
/// pending ones; and where the pending ones start.
fn pod_arena(snapshot: &Snapshot) -> (Vec<&Pod>, usize) {
    let mut pods: Vec<&Pod> = snapshot.nodes.iter().flat_map(|n| &n.pods).collect();
    let first_pending = pods.len();
    pods.extend(&snapshot.pods);
    (pods, first_pending)
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
