//! The placement loop (twin of `greedy/placement.py`): each pod onto the first target that takes it
//! (existing nodes, claims that keep their flavor, claims that grow, a new claim), preferences relaxed
//! one at a time, failed pods retried while a round places something.

use rustc_hash::FxHashMap as HashMap;
use std::borrow::Cow;
use std::rc::Rc;

use super::{placement_sequence, Checks, Scheduler, NO_MANAGED_FLAVOR};
use crate::solver::model::lookup;
use crate::solver::preferences::Preferences;
use crate::solver::resources as res;

impl Scheduler<'_> {
    fn place_existing(&mut self, target: usize, pod_id: usize) {
        let pod = &self.pods[pod_id];
        let t = &mut self.existing[target];
        res::dense_add(&mut t.used, &self.requests[pod_id]);
        t.ports.extend(pod.host_ports.iter().cloned());
        t.placed.push(pod_id);
        let labels = t.node.labels.clone();
        let taints = t.node.taints.clone();
        let domain = |key: &str| lookup(&labels, key).map(|v| Cow::Borrowed(v.as_str()));
        self.topology
            .record(pod_id, self.pods[pod_id], &domain, &taints, 1, false);
    }

    fn place(&mut self, checks: &Checks) -> Result<(), String> {
        for t in 0..self.existing.len() {
            if self.fits_existing(&self.existing[t], checks) {
                self.place_existing(t, checks.pod);
                return Ok(());
            }
        }
        // Twice, as in Python: first where the pod costs nothing (the claim keeps its flavor), then
        // where the claim may grow.
        if !self.every_claim_excludes(checks) {
            // Where the claim keeps its flavor, only claims with room for the pod can take it: the
            // index skips the others, which `try_claim` would turn away first thing.
            self.sync_room();
            let mut from = 0;
            while let Some(c) = self.room.first_fit(from, &self.requests[checks.pod]) {
                if self.try_claim(c, checks, true) {
                    return Ok(());
                }
                from = c + 1;
            }
            for c in 0..self.claims.len() {
                if self.try_claim(c, checks, false) {
                    return Ok(());
                }
            }
        }
        if self.pools.is_empty() {
            return Err("no NodePool exists".into());
        }
        if self.snapshot.instance_types.is_empty() {
            return Err(NO_MANAGED_FLAVOR.into());
        }
        let mut reasons = Vec::new();
        for v in 0..self.pools.len() {
            match self.open_claim(v, checks, None) {
                Ok(_) => return Ok(()),
                Err(reason) => {
                    reasons.push(format!("NodePool {}: {reason}", self.pools[v].pool.name))
                }
            }
        }
        Err(reasons.join("; "))
    }

    fn place_with_relaxation(&mut self, pod_id: usize) -> Result<(), String> {
        let mut prefs = Preferences::strict(self.pods[pod_id]);
        loop {
            let checks = self.checks(pod_id, &prefs);
            match self.place(&checks) {
                Ok(()) => {
                    self.placed_prefs.insert(pod_id, prefs);
                    self.placed_checks.insert(pod_id, Rc::new(checks));
                    return Ok(());
                }
                Err(reason) => {
                    if !prefs.relax(self.pods[pod_id]) {
                        return Err(reason);
                    }
                }
            }
        }
    }

    pub fn schedule(&mut self) -> HashMap<usize, String> {
        let mut pending = placement_sequence(&self.pods, &self.pending);
        let mut failures = HashMap::default();
        while !pending.is_empty() {
            failures = HashMap::default();
            let mut retry = Vec::new();
            for &pod_id in &pending {
                if let Err(reason) = self.place_with_relaxation(pod_id) {
                    failures.insert(pod_id, reason);
                    retry.push(pod_id);
                }
            }
            if retry.len() == pending.len() {
                break;
            }
            pending = retry;
        }
        failures
    }
}
