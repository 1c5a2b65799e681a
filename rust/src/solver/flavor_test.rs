//! One set of requirements asked of many flavors of one pool: what `Flavor::compatible` works out per
//! flavor, with the part that is the same for every flavor worked out once. `evaluate` asks it of every
//! candidate flavor of a claim for every pod that may join it, the hottest loop of a large solve.

use std::cell::OnceCell;
use std::collections::BTreeSet;

use super::flavors::{Flavor, OFFERING_KEYS};
use super::model::{lookup, CAPACITY_TYPE, ZONE};
use super::requirements::{Reqs, Requirement};

/// A label requirement on a key some flavor of the catalog carries, and whether a node of the pool
/// without that label meets it (absence allowed, or the pool gives every node the key).
struct LabelAsk<'r> {
    requirement: &'r Requirement,
    absent_allowed: bool,
}

pub struct FlavorTest<'r> {
    reqs: &'r Reqs,
    /// The requirements a flavor's own labels decide, in order.
    labels: Vec<LabelAsk<'r>>,
    /// Whether the requirements on keys no flavor carries hold: then on every flavor alike.
    unlabelled_hold: bool,
    /// Whether zone or capacity type is constrained at all.
    constrained: bool,
    /// Which offering pairs the requirements allow, worked out on first use.
    mask: OnceCell<Vec<bool>>,
}

impl<'r> FlavorTest<'r> {
    /// The test of `reqs` for the flavors of a pool giving its nodes `pool_keys`, in a catalog whose
    /// flavors carry the label keys `flavor_keys`.
    pub fn of(
        reqs: &'r Reqs,
        pool_keys: &BTreeSet<String>,
        flavor_keys: &BTreeSet<String>,
    ) -> FlavorTest<'r> {
        let mut labels = Vec::new();
        let mut unlabelled_hold = true;
        for requirement in reqs.0.iter() {
            let key = requirement.key.as_str();
            if OFFERING_KEYS.contains(&key) {
                continue;
            }
            let absent_allowed = requirement.absent_ok || pool_keys.contains(key);
            if flavor_keys.contains(key) {
                labels.push(LabelAsk {
                    requirement,
                    absent_allowed,
                });
            } else {
                unlabelled_hold &= absent_allowed;
            }
        }
        FlavorTest {
            reqs,
            labels,
            unlabelled_hold,
            constrained: reqs.get(ZONE).is_some() || reqs.get(CAPACITY_TYPE).is_some(),
            mask: OnceCell::new(),
        }
    }

    /// `flavor.compatible(reqs)`, for a flavor of the pool the test was made for.
    #[inline]
    pub fn admits(&self, flavor: &Flavor) -> bool {
        let admitted = self.unlabelled_hold
            && self.labels.iter().all(|ask| {
                match lookup(&flavor.it.labels, &ask.requirement.key) {
                    Some(value) => ask.requirement.has(value),
                    None => ask.absent_allowed,
                }
            })
            && (!self.constrained
                || flavor.offered_within(self.mask.get_or_init(|| flavor.table.mask(self.reqs))));
        debug_assert_eq!(admitted, flavor.compatible(self.reqs));
        admitted
    }
}
