//! The choice of domains (twin of `greedy/domains.py`): for a claim taking a pod, the domain of every
//! topology key the pod is part of, least crowded first, then cheapest, then by name; a choice that
//! leaves a later key no domain gives way to the next one, a bounded number of times.

use std::rc::Rc;

use super::{Checks, Scheduler};
use crate::solver::flavors::{Flavor, FlavorList, OFFERING_KEYS};
use crate::solver::model::{lookup, HOSTNAME};
use crate::solver::requirements::{Reqs, Requirement};
use crate::solver::targets::Claim;

/// How many domain choices one placement may try across its topology keys (`settle_domains`).
const SETTLE_TRIES: i64 = 32;

/// An open topology key being settled: its position among the pod's keys and the domains that pass.
struct KeyChoice<'k> {
    at: usize,
    key: &'k str,
    candidates: &'k [&'k str],
}

impl Scheduler<'_> {
    /// Pick the claim's domain for every topology key the pod is part of, pinning it in `merged`; the
    /// flavors left, or the reason met along the best choices (then `merged` is left empty). A choice
    /// that leaves a later key no passing domain gives way to the next best one, up to
    /// `SETTLE_TRIES` choices in all.
    pub(super) fn settle_domains(
        &self,
        claim: &Claim,
        checks: &Checks,
        merged: &mut Reqs,
        flavors: FlavorList,
    ) -> Result<FlavorList, String> {
        let mut tries = SETTLE_TRIES;
        // Taken, not copied: on a failure the caller drops `merged` with the reason.
        let taken = std::mem::take(merged);
        let (pinned, flavors) = self.settle_from(claim, checks, 0, taken, flavors, &mut tries)?;
        *merged = pinned;
        Ok(flavors)
    }

    fn settle_from(
        &self,
        claim: &Claim,
        checks: &Checks,
        start: usize,
        mut merged: Reqs,
        flavors: FlavorList,
        tries: &mut i64,
    ) -> Result<(Reqs, FlavorList), String> {
        for at in start..checks.keys.len() {
            let key = checks.keys[at].as_str();
            // A key with one domain already (the claim's hostname, a pinned value) has nothing to
            // choose: its one option passes or is the reason, without building the lists below.
            if let Some(value) = claim.known_domain(key, &merged) {
                if let Some(problem) = self.domain_problem(checks, key, Some(value)) {
                    return Err(problem.to_string());
                }
                continue;
            }
            let options = claim.domain_options(key, &flavors, &merged);
            let passing: Vec<&Option<String>> = options
                .iter()
                .filter(|v| self.domain_problem(checks, key, v.as_deref()).is_none())
                .collect();
            if passing.is_empty() {
                let first = options.first().cloned().flatten();
                return Err(self
                    .domain_problem(checks, key, first.as_deref())
                    .map(|p| p.to_string())
                    .unwrap_or_else(|| format!("no domain for {key}")));
            }
            let absent = passing.len() == 1 && passing[0].is_none();
            if absent && key != HOSTNAME && merged.get(key).is_some() {
                // The node goes without the label (the pool allows that: NotIn, DoesNotExist). Pinned
                // absent, so that a later pod cannot give it a value under this pod counted without one.
                merged.add(Requirement::absent(key));
            }
            if key == HOSTNAME || absent || merged.pinned(key) {
                continue;
            }
            let candidates: Vec<&str> = passing.iter().filter_map(|v| v.as_deref()).collect();
            let choice = KeyChoice {
                at,
                key,
                candidates: &candidates,
            };
            return self.settle_key(claim, checks, &choice, merged, flavors, tries);
        }
        Ok((merged, flavors))
    }

    /// Try the domains of one open key, best first: each narrows the flavors and settles the keys after
    /// it; the first that settles them all wins, else the first failure met is the reason.
    fn settle_key(
        &self,
        claim: &Claim,
        checks: &Checks,
        choice: &KeyChoice<'_>,
        merged: Reqs,
        flavors: FlavorList,
        tries: &mut i64,
    ) -> Result<(Reqs, FlavorList), String> {
        let key = choice.key;
        let best = self.best_domain(checks, choice, &flavors, &merged);
        let mut rest: Option<Vec<String>> = None;
        let mut next = 0;
        let mut value = best.clone();
        let mut first_failure: Option<String> = None;
        loop {
            *tries -= 1;
            let mut narrowed = merged.clone();
            narrowed.add(Requirement::exactly(key, &value));
            // Every flavor here was compatible before `key` narrowed (evaluate filters them when
            // a key is open), so only `key` can turn one away now.
            let mask = flavors
                .first()
                .map(|f| f.table.mask(&narrowed))
                .unwrap_or_default();
            let left = flavors.filtered(|f| f.compatible_narrowed(key, &narrowed, &mask));
            let outcome = if left.is_empty() {
                Err(format!("no flavor is offered with {key}={value}"))
            } else {
                self.settle_from(claim, checks, choice.at + 1, narrowed, left, tries)
            };
            match outcome {
                Ok(settled) => return Ok(settled),
                Err(why) => {
                    first_failure.get_or_insert(why);
                }
            }
            if *tries <= 0 {
                break;
            }
            let rest = rest.get_or_insert_with(|| {
                self.ranked_domains(checks, choice, &flavors, &merged, &best)
            });
            let Some(following) = rest.get(next) else {
                break;
            };
            value = following.clone();
            next += 1;
        }
        Err(first_failure.expect("one choice was tried"))
    }

    /// The pod's own spread counts in `value` for `key`: the first part of a domain's rank.
    fn crowd(&self, checks: &Checks, key: &str, value: &str) -> i64 {
        checks
            .spread
            .iter()
            .filter(|spread| spread.constraint.topology_key == key)
            .map(|spread| {
                self.topology.counts[spread.group]
                    .get(value)
                    .copied()
                    .unwrap_or(0)
            })
            .sum()
    }

    /// The values other than `best`, best first (crowd, price, name), once `best` has failed.
    fn ranked_domains(
        &self,
        checks: &Checks,
        choice: &KeyChoice<'_>,
        flavors: &[Rc<Flavor>],
        merged: &Reqs,
        best: &str,
    ) -> Vec<String> {
        let key = choice.key;
        let mut ranked: Vec<(i64, f64, &str)> = choice
            .candidates
            .iter()
            .filter(|v| **v != best)
            .map(|v| {
                let price = self.domain_price(key, v, flavors, merged);
                (self.crowd(checks, key, v), price, *v)
            })
            .collect();
        ranked.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)).then(a.2.cmp(b.2)));
        ranked.into_iter().map(|(.., v)| v.to_string()).collect()
    }

    /// The cheapest price the flavors offer with `key` pinned to `value`.
    fn domain_price(&self, key: &str, value: &str, flavors: &[Rc<Flavor>], merged: &Reqs) -> f64 {
        let offering_key = OFFERING_KEYS.contains(&key);
        let narrowed = match merged.get(key) {
            Some(current) => current.intersect(&Requirement::exactly(key, value)),
            None => Requirement::exactly(key, value),
        };
        // The pinned zone and capacity-type requirements, asked of each offering pair once.
        let offering_reqs = Reqs(Rc::new(
            OFFERING_KEYS
                .iter()
                .filter_map(|k| {
                    if *k == key {
                        Some(narrowed.clone())
                    } else {
                        merged.get(k).cloned()
                    }
                })
                .collect(),
        ));
        let Some(first) = flavors.first() else {
            return f64::INFINITY;
        };
        let mask = first.table.mask(&offering_reqs);
        flavors
            .iter()
            .filter(|f| offering_key || lookup(&f.it.labels, key).is_none_or(|v| narrowed.has(v)))
            .map(|f| f.price_masked(&mask))
            .fold(f64::INFINITY, f64::min)
    }

    /// Least crowded for the pod's own spread constraints, then cheapest, then by name. Every flavor
    /// here is compatible with `merged` (settle_domains keeps them so), so pinning `key` can only
    /// turn one away through its own label for `key`; and a flavor with no offering left prices at
    /// infinity, which never lowers a minimum. Prices are worked out only for the least crowded values.
    fn best_domain(
        &self,
        checks: &Checks,
        choice: &KeyChoice<'_>,
        flavors: &[Rc<Flavor>],
        merged: &Reqs,
    ) -> String {
        let (key, passing) = (choice.key, choice.candidates);
        let crowds: Vec<i64> = passing.iter().map(|v| self.crowd(checks, key, v)).collect();
        let least = *crowds.iter().min().expect("a passing value");
        let mut best: Option<(&str, f64)> = None;
        for (&value, &c) in passing.iter().zip(&crowds) {
            if c != least {
                continue;
            }
            let p = self.domain_price(key, value, flavors, merged);
            let better = match best {
                None => true,
                Some((b, bp)) => p < bp || (p == bp && value < b),
            };
            if better {
                best = Some((value, p));
            }
        }
        best.expect("a least crowded value").0.to_string()
    }
}
