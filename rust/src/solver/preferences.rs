//! Preferences treated as hard, then relaxed one at a time in Karpenter's order (twin of
//! `preferences.py`).

use super::model::{
    Pod, PodAffinityTerm, PreferredNodeTerm, TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use super::requirements::Reqs;

#[derive(Clone)]
pub struct Preferences {
    pub required_index: usize,
    pub preferred_node: Vec<PreferredNodeTerm>,
    pub preferred_affinity: Vec<PodAffinityTerm>,
    pub preferred_anti_affinity: Vec<PodAffinityTerm>,
    pub spread_anyway: Vec<TopologySpreadConstraint>,
    pub tolerate_prefer_no_schedule: bool,
}

fn by_weight(terms: &[WeightedPodAffinityTerm]) -> Vec<PodAffinityTerm> {
    let mut sorted: Vec<&WeightedPodAffinityTerm> = terms.iter().collect();
    sorted.sort_by_key(|t| -t.weight);
    sorted.into_iter().map(|t| t.term.clone()).collect()
}

impl Preferences {
    pub fn strict(pod: &Pod) -> Preferences {
        let mut preferred_node = pod.preferred_terms.clone();
        preferred_node.sort_by_key(|t| -t.weight);
        Preferences {
            required_index: 0,
            preferred_node,
            preferred_affinity: by_weight(&pod.preferred_affinity),
            preferred_anti_affinity: by_weight(&pod.preferred_anti_affinity),
            spread_anyway: pod
                .spread
                .iter()
                .filter(|c| c.when_unsatisfiable == "ScheduleAnyway")
                .cloned()
                .collect(),
            tolerate_prefer_no_schedule: false,
        }
    }

    pub fn node_requirements(&self, pod: &Pod) -> Reqs {
        let mut out = Reqs::build(&[], &pod.node_selector);
        if let Some(term) = pod.required_terms.get(self.required_index) {
            out = out.intersect(&Reqs::build(term, &[]));
        }
        if let Some(preferred) = self.preferred_node.first() {
            out = out.intersect(&Reqs::build(&preferred.term, &[]));
        }
        out
    }

    pub fn affinity(&self, pod: &Pod) -> Vec<PodAffinityTerm> {
        pod.affinity
            .iter()
            .chain(&self.preferred_affinity)
            .cloned()
            .collect()
    }

    pub fn anti_affinity(&self, pod: &Pod) -> Vec<PodAffinityTerm> {
        pod.anti_affinity
            .iter()
            .chain(&self.preferred_anti_affinity)
            .cloned()
            .collect()
    }

    pub fn spread(&self, pod: &Pod) -> Vec<TopologySpreadConstraint> {
        pod.spread
            .iter()
            .filter(|c| c.when_unsatisfiable == "DoNotSchedule")
            .chain(&self.spread_anyway)
            .cloned()
            .collect()
    }

    pub fn relax(&mut self, pod: &Pod) -> bool {
        if self.required_index + 1 < pod.required_terms.len() {
            self.required_index += 1;
        } else if !self.preferred_affinity.is_empty() {
            self.preferred_affinity.remove(0);
        } else if !self.preferred_anti_affinity.is_empty() {
            self.preferred_anti_affinity.remove(0);
        } else if !self.preferred_node.is_empty() {
            self.preferred_node.remove(0);
        } else if !self.spread_anyway.is_empty() {
            self.spread_anyway.remove(0);
        } else if !self.tolerate_prefer_no_schedule {
            self.tolerate_prefer_no_schedule = true;
        } else {
            return false;
        }
        true
    }
}
