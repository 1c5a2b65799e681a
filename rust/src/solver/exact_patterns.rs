//! The exact search's packing patterns (twin of `exact_search.py`'s `patterns`): for one column, every
//! count of pods per shape one of its nodes holds that no shape can get one more pod of.

use super::exact_search::{Column, Pattern};

struct Enumeration<'a> {
    column_at: usize,
    column: &'a Column,
    requests: &'a [Vec<i64>],
    demand: &'a [usize],
    counts: Vec<usize>,
    used: Vec<i128>,
    visits: i64,
    found: Vec<Pattern>,
}

impl Enumeration<'_> {
    fn room(&self, shape: usize) -> bool {
        if self.column.prices[shape].is_none() || self.counts[shape] >= self.demand[shape] {
            return false;
        }
        if self.counts[shape] >= 1 && self.column.conflict(shape, shape) {
            return false;
        }
        let clash = self
            .counts
            .iter()
            .enumerate()
            .any(|(other, &n)| n > 0 && other != shape && self.column.conflict(other, shape));
        !clash
            && self
                .used
                .iter()
                .zip(&self.requests[shape])
                .zip(&self.column.net)
                .all(|((&u, &r), &cap)| u + r as i128 <= cap as i128)
    }

    fn charge(&mut self, shape: usize, sign: i128) {
        for (u, &r) in self.used.iter_mut().zip(&self.requests[shape]) {
            *u += sign * r as i128;
        }
    }

    fn leaf(&mut self) -> bool {
        self.visits -= 1;
        if self.visits < 0 {
            return false;
        }
        if self.counts.iter().all(|&n| n == 0) || (0..self.demand.len()).any(|s| self.room(s)) {
            return true;
        }
        let price = self
            .counts
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(s, _)| self.column.prices[s].expect("held"))
            .fold(f64::NEG_INFINITY, f64::max);
        self.found.push(Pattern {
            column: self.column_at,
            counts: self.counts.clone(),
            price,
            floor: self.column.cheapest(),
        });
        true
    }

    fn extend(&mut self, shape: usize) -> bool {
        if shape == self.demand.len() {
            return self.leaf();
        }
        let mut added = 0;
        while self.room(shape) {
            self.charge(shape, 1);
            self.counts[shape] += 1;
            added += 1;
        }
        loop {
            if !self.extend(shape + 1) {
                return false;
            }
            if added == 0 {
                return true;
            }
            self.charge(shape, -1);
            self.counts[shape] -= 1;
            added -= 1;
        }
    }
}

/// The maximal patterns of one column, in enumeration order; None when the enumeration would visit
/// more than `cap` count vectors.
pub fn patterns(
    column_at: usize,
    column: &Column,
    requests: &[Vec<i64>],
    demand: &[usize],
    cap: i64,
) -> Option<Vec<Pattern>> {
    let mut walk = Enumeration {
        column_at,
        column,
        requests,
        demand,
        counts: vec![0; demand.len()],
        used: vec![0; column.net.len()],
        visits: cap,
        found: Vec::new(),
    };
    walk.extend(0).then_some(walk.found)
}
