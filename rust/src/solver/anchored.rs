//! Moves of claims holding constrained pods (twin of `anchored.py`). A pod is constrained when a group
//! that another pod's affinity (required or preferred) or a zone-level hard spread rule counts over
//! selects it. The cost pass re-packs its claim with the pod anchored: held to its claim's value of
//! every topology key it is part of except the hostname (a new claim is a new host), so each such
//! group counts what it counted before in every domain, and the affinity of pods left in place and the
//! global minimum of every spread rule do not move. A node of another flavor can still count a pod
//! differently (nodeTaintsPolicy Honor), so a move stands only when the constrained groups' counts
//! come out exactly as they were.

use std::collections::BTreeSet;
use std::rc::Rc;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::greedy::{Checks, Scheduler};
use super::model::HOSTNAME;
use super::requirements::Requirement;
use super::targets::Claim;
use super::topology::term_group;

/// Per constrained group (ascending), its non-zero counts by domain (ascending).
pub type GroupCounts = Vec<(usize, Vec<(String, i64)>)>;

/// Pod (arena id) -> its checks narrowed to its claim's domains.
pub type AnchoredChecks = HashMap<usize, Rc<Checks>>;

/// Groups that some pod's affinity or a zone-level (not hostname) hard spread rule counts over.
pub fn constrained_groups(s: &Scheduler) -> HashSet<usize> {
    let topo = &s.topology;
    let mut groups = HashSet::default();
    for pod in &s.pods {
        for t in &pod.affinity {
            groups.insert(topo.id_of(&term_group(t)));
        }
        for w in &pod.preferred_affinity {
            groups.insert(topo.id_of(&term_group(&w.term)));
        }
    }
    for rule in &topo.rules {
        if rule.constraint.topology_key != HOSTNAME {
            groups.insert(rule.group);
        }
    }
    groups
}

pub fn is_constrained(s: &Scheduler, pod: usize, groups: &HashSet<usize>) -> bool {
    s.topology
        .selecting_cached(pod)
        .iter()
        .any(|g| groups.contains(g))
}

/// The anchored checks of the constrained pods, kept across the cost pass's moves with the domains
/// each was anchored to. A pod's checks never change during the pass (its relaxation level and the
/// groups are fixed), and a kept move leaves an anchored pod in the domains it had, so the next move
/// over its claim anchors it to the same ones: building them again for every move was a tenth of
/// spread-1000's solve. A pod whose claim's domains differ from the ones kept is anchored anew.
#[derive(Default)]
pub struct Anchors {
    known: HashMap<usize, (Vec<Option<String>>, Rc<Checks>)>,
}

impl Anchors {
    /// The checks of each constrained pod on the claims (by index), narrowed to its claim's domains.
    pub fn checks(
        &mut self,
        s: &Scheduler,
        indexes: &[usize],
        groups: &HashSet<usize>,
    ) -> AnchoredChecks {
        let mut out = AnchoredChecks::default();
        for &index in indexes {
            let claim = s.claim(index).expect("present");
            let pods: Vec<usize> = claim
                .pods
                .iter()
                .copied()
                .filter(|&p| is_constrained(s, p, groups))
                .collect();
            for pod in pods {
                let claim = s.claim(index).expect("present");
                if let Some((domains, checks)) = self.known.get(&pod) {
                    if anchor_domains(claim, &checks.keys) == *domains {
                        out.insert(pod, checks.clone());
                        continue;
                    }
                }
                let mut checks = Checks::clone(&s.placed_checks[&pod]);
                let claim = s.claim(index).expect("present");
                let domains = anchor_domains(claim, &checks.keys);
                let keys = checks.keys.iter().filter(|k| *k != HOSTNAME);
                for (key, value) in keys.zip(&domains) {
                    // Added one by one, as intersecting with them all would add them.
                    checks.requirements.add(match value {
                        Some(value) => Requirement::exactly(key, value),
                        None => Requirement::absent(key),
                    });
                }
                let checks = Rc::new(checks);
                self.known.insert(pod, (domains, checks.clone()));
                out.insert(pod, checks);
            }
        }
        out
    }
}

/// The claim's domain of each of the keys but the hostname, in order: what a pod there is anchored to.
fn anchor_domains(claim: &Claim, keys: &[String]) -> Vec<Option<String>> {
    keys.iter()
        .filter(|k| *k != HOSTNAME)
        .map(|k| claim.domain(k))
        .collect()
}

/// What the constrained groups counting these pods count per domain (hostname groups aside: the moved
/// pods' new hosts are new domains, and no pod left in place shares them).
pub fn constrained_counts(s: &Scheduler, pods: &[usize], groups: &HashSet<usize>) -> GroupCounts {
    let topo = &s.topology;
    let counting: BTreeSet<usize> = pods
        .iter()
        .flat_map(|&p| topo.selecting_cached(p).iter().copied())
        .filter(|g| groups.contains(g) && topo.groups[*g].key != HOSTNAME)
        .collect();
    counting
        .into_iter()
        .map(|g| {
            let mut here: Vec<(String, i64)> = topo.counts[g]
                .iter()
                .filter(|(_, n)| **n != 0)
                .map(|(domain, n)| (domain.clone(), *n))
                .collect();
            here.sort();
            (g, here)
        })
        .collect()
}
