//! The exact search's lower bounds on what covering the pods left costs (twins of `exact_search.py`'s
//! `_orders`, `Search._duals` and `_least_nodes`): prices per pod from the cover LP's dual, and those
//! raised to what whole nodes can cost.

use super::exact_search::{Pattern, SAVING};

/// The orders `duals` raises the shapes in: each rotation of 0..n, then (n > 2, where they are other
/// orders) each rotation of n-1..0. Which order gives the highest bound depends on the demand, and the
/// reversed ones alone prove seed 57 of `bench.exact` optimal at the root (78,422 steps before).
pub fn orders(n: usize) -> Vec<Vec<usize>> {
    let forward = (0..n).map(|first| (0..n).map(|step| (first + step) % n).collect());
    let backward = (0..n).map(|first| (0..n).map(|step| (first + n - step) % n).collect());
    forward
        .chain(backward.take(if n > 2 { n } else { 0 }))
        .collect()
}

/// Raise each shape's price per pod in turn, in `order`, as far as every pattern holding it allows (a
/// feasible solution of the cover LP's dual: any cover costs at least the demand priced so).
pub fn duals(patterns: &[Pattern], shapes: usize, order: &[usize]) -> Vec<f64> {
    let mut duals = vec![0.0f64; shapes];
    for &s in order {
        let mut raise_by = f64::INFINITY;
        for p in patterns.iter().filter(|p| p.counts[s] > 0) {
            let paid = p
                .counts
                .iter()
                .zip(&duals)
                .fold(0.0, |acc, (&n, &y)| acc + n as f64 * y);
            raise_by = raise_by.min((p.floor - paid) / p.counts[s] as f64);
        }
        if raise_by != f64::INFINITY {
            duals[s] += raise_by.max(0.0);
        }
    }
    duals
}

/// Per column holding a pattern: its floor and the most of each resource one of its nodes uses.
pub type Node = (f64, Vec<i128>);

struct Walk<'a> {
    nodes: &'a [Node],
    need: &'a [i128],
    target: f64,
    /// Per column j and resource, the least floor per unit of it over columns j on: what holding the
    /// rest of `need` costs at least, to stop a count vector that cannot get below the least found.
    per_unit: Vec<Vec<f64>>,
    least: f64,
    left: i64,
}

impl Walk<'_> {
    fn walk(&mut self, j: usize, paid: f64, held: &[i128]) -> bool {
        self.left -= 1;
        if self.left < 0 {
            return false;
        }
        if paid >= self.target && held.iter().zip(self.need).all(|(h, n)| h >= n) {
            self.least = self.least.min(paid);
            return true;
        }
        if j == self.nodes.len() || paid >= self.least {
            return true;
        }
        let rest = held
            .iter()
            .zip(self.need)
            .zip(&self.per_unit[j])
            .filter(|((h, n), _)| h < n)
            .fold(0.0f64, |acc, ((&h, &n), &r)| acc.max((n - h) as f64 * r));
        if paid + rest >= self.least {
            return true;
        }
        let (floor, use_) = &self.nodes[j];
        let mut most: i128 = if *floor > 0.0 && paid < self.target {
            ((self.target - paid) / floor).ceil() as i128
        } else {
            0
        };
        for ((&h, &n), &u) in held.iter().zip(self.need).zip(use_) {
            if h < n && u > 0 {
                most = most.max((n - h + u - 1) / u);
            }
        }
        for count in 0..=most {
            let cost = paid + count as f64 * floor;
            if count > 0 && cost >= self.least {
                break;
            }
            let more: Vec<i128> = held.iter().zip(use_).map(|(h, u)| h + count * u).collect();
            if !self.walk(j + 1, cost, &more) {
                return false;
            }
        }
        true
    }
}

/// The least `sum(count * floor)` over whole node counts per column with a sum of at least `bound` and
/// room for `need`; None when there is none or finding it would take more than `visits` steps.
pub fn least_nodes(nodes: &[Node], need: &[i128], bound: f64, visits: i64) -> Option<f64> {
    // A sum equal to `bound` may round below it in another order: within SAVING counts as reaching it.
    let mut per_unit = vec![vec![f64::INFINITY; need.len()]; nodes.len() + 1];
    for (j, (floor, use_)) in nodes.iter().enumerate().rev() {
        per_unit[j] = per_unit[j + 1]
            .iter()
            .zip(use_)
            .map(|(&r, &u)| if u > 0 { r.min(floor / u as f64) } else { r })
            .collect();
    }
    let mut walk = Walk {
        nodes,
        need,
        target: bound - SAVING,
        per_unit,
        least: f64::INFINITY,
        left: visits,
    };
    let found = walk.walk(0, 0.0, &vec![0; need.len()]);
    (found && walk.least != f64::INFINITY).then_some(walk.least)
}
