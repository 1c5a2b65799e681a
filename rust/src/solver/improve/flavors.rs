//! The flavors a move of the cost pass forces its pods into (twin of `_candidate_flavors` in
//! `improve.py`): the ones cheapest per pod of the move's mix, then those its claims are on.

use std::rc::Rc;

use crate::solver::flavors::Flavor;
use crate::solver::greedy::Scheduler;
use crate::solver::targets::Claim;

const FLAVORS_PER_MOVE: usize = 4;
/// Moves of more claims than this (zone groups) leave their claims' own flavors out.
const PAIR: usize = 2;

pub(super) fn candidate_flavors(
    s: &Scheduler,
    claims: &[&Claim],
    pods: &[usize],
) -> Vec<Option<String>> {
    // A move over a zone's claims tries the efficient flavors only: the flavors its many claims are
    // on would multiply its placements, and one of them rarely packs a whole zone best.
    let chosen = claims
        .iter()
        .take_while(|_| claims.len() <= PAIR)
        .map(|c| c.chosen().name().to_string());
    let mix = PodMix::of(s, pods);
    let efficient = mix.most_efficient(&s.pools[claims[0].view].flavors);
    let mut out: Vec<Option<String>> = vec![None];
    for name in efficient.into_iter().chain(chosen) {
        if !out.contains(&Some(name.clone())) {
            out.push(Some(name));
        }
    }
    if claims.len() == 1 {
        let current = claims[0].chosen().name();
        out.retain(|f| f.as_deref().is_some_and(|n| n != current));
    }
    out
}

/// The pods of a move as one mix: how many, and per resource the first pod requests (as positions
/// in the dense vectors) what they request in all, where that is more than nothing.
struct PodMix {
    count: i128,
    totals: Vec<(usize, i128)>,
}

/// A flavor's score for a mix: price per pod held, then price.
type Score = (f64, f64);

impl PodMix {
    fn of(s: &Scheduler, pods: &[usize]) -> PodMix {
        let totals = s.pods[pods[0]]
            .requests
            .iter()
            .filter_map(|(key, _)| s.names.position(key))
            .map(|at| {
                let total: i64 = pods.iter().map(|&p| s.requests[p][at]).sum();
                (at, total as i128)
            })
            .filter(|(_, total)| *total > 0)
            .collect();
        PodMix {
            count: pods.len() as i128,
            totals,
        }
    }

    /// How many average pods of this mix the flavor holds, in exact integers (as Python does).
    fn held_by(&self, flavor: &Flavor) -> i64 {
        let count = self.count;
        self.totals
            .iter()
            .map(|&(at, total)| {
                let net = flavor.net_dense[at];
                // i64 when the product fits (it nearly always does), i128 otherwise: the same floor.
                match (net.checked_mul(count as i64), i64::try_from(total)) {
                    (Some(product), Ok(total)) => product.div_euclid(total) as i128,
                    _ => (net as i128 * count).div_euclid(total),
                }
            })
            .min()
            .unwrap_or(count)
            .min(count) as i64
    }

    fn score(&self, flavor: &Flavor) -> Score {
        let fit = self.held_by(flavor);
        let price = flavor.base_price;
        let per_pod = if fit > 0 {
            price / fit as f64
        } else {
            f64::INFINITY
        };
        (per_pod, price)
    }

    /// The names of the `FLAVORS_PER_MOVE` flavors (of a pool's, cheapest first) with the best
    /// scores that hold a pod at all, best first.
    fn most_efficient(&self, flavors: &[Rc<Flavor>]) -> Vec<String> {
        let order = |(pa, na): &(Score, &str), (pb, nb): &(Score, &str)| {
            pa.0.total_cmp(&pb.0)
                .then(pa.1.total_cmp(&pb.1))
                .then_with(|| na.cmp(nb))
        };
        // Only the first few count, kept in order as the flavors go by (entries that compare equal
        // share a name, so which of them is kept does not show). The pool's flavors come cheapest
        // first, and a flavor's price per pod is at least its price over all the pods: once that
        // passes the last score kept, no later flavor can get in.
        let mut ranked: Vec<(Score, &str)> = Vec::with_capacity(FLAVORS_PER_MOVE + 1);
        let pods = self.count as f64;
        for flavor in flavors {
            if ranked.len() == FLAVORS_PER_MOVE {
                let floor = flavor.base_price / pods;
                let last = ranked[FLAVORS_PER_MOVE - 1].0 .0;
                if flavor.base_price >= 0.0 && floor.total_cmp(&last).is_gt() {
                    break;
                }
            }
            let entry = (self.score(flavor), flavor.name());
            let at = ranked.partition_point(|kept| order(kept, &entry).is_le());
            if at < FLAVORS_PER_MOVE {
                ranked.insert(at, entry);
                ranked.truncate(FLAVORS_PER_MOVE);
            }
        }
        ranked
            .iter()
            .take(FLAVORS_PER_MOVE)
            .filter(|(score, _)| score.0 != f64::INFINITY)
            .map(|(_, name)| name.to_string())
            .collect()
    }
}
