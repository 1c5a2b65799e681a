//! The exact pass's search (twin of `exact_search.py`): packing patterns per column and a branch and
//! bound over the pods left to cover.
//!
//! A column is one (NodePool, flavor) a claim can be; a pattern is how many pods of each shape one node
//! of it holds, maximal. The cheapest cover of every shape's pods by patterns is the cheapest plan. The
//! search covers the first shape with pods left, tries patterns by price per unit of bound covered,
//! prunes on a per-resource bound and on states already reached as cheaply, and stops after a fixed
//! count of steps. Every float is computed in the order the Python twin computes it.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

pub const SAVING: f64 = 1e-9;
/// The most shapes the search takes: the pods left per shape fit a fixed array, no allocation a step.
pub const MAX_SHAPES: usize = 8;

/// Pods left per shape, one byte each (the pass takes at most 60 pods), so that a demand is one `u64`
/// to hash in the search's memos.
type Demand = [u8; MAX_SHAPES];

fn key(demand: &Demand) -> u64 {
    u64::from_le_bytes(*demand)
}

/// The demand a pattern leaves: each shape's pods left less what it holds, never below 0.
fn minus(demand: &Demand, counts: &Demand) -> Demand {
    let mut after = *demand;
    for (d, &n) in after.iter_mut().zip(counts) {
        *d = d.saturating_sub(n);
    }
    after
}

/// One (NodePool, flavor) a claim can be.
pub struct Column {
    pub view: usize,
    pub flavor: String,
    /// Allocatable after DaemonSets, over the search's resource keys.
    pub net: Vec<i64>,
    /// Per shape, the price of a claim of this column holding one pod of it (None: it cannot).
    pub prices: Vec<Option<f64>>,
    /// `conflicts[s][t]` (s <= t): pods of the two shapes cannot share a node of this column.
    pub conflicts: Vec<Vec<bool>>,
    /// What one node takes from the search's limit counters.
    pub limits: Vec<i64>,
}

impl Column {
    fn conflict(&self, a: usize, b: usize) -> bool {
        self.conflicts[a.min(b)][a.max(b)]
    }

    pub fn cheapest(&self) -> f64 {
        self.prices
            .iter()
            .flatten()
            .fold(f64::INFINITY, |a, &b| a.min(b))
    }
}

#[derive(Clone)]
pub struct Pattern {
    pub column: usize,
    pub counts: Vec<usize>,
    pub price: f64,
    /// The least a node of this column costs whatever it holds (its cheapest shape's price).
    pub floor: f64,
}

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

type State = (u64, Vec<i64>);

/// The orders `duals` raises the shapes in: each rotation of 0..n, then (n > 2, where they are other
/// orders) each rotation of n-1..0. Which order gives the highest bound depends on the demand, and the
/// reversed ones alone prove seed 57 of `bench.exact` optimal at the root (78,422 steps before).
fn orders(n: usize) -> Vec<Vec<usize>> {
    let forward = (0..n).map(|first| (0..n).map(|step| (first + step) % n).collect());
    let backward = (0..n).map(|first| (0..n).map(|step| (first + n - step) % n).collect());
    forward
        .chain(backward.take(if n > 2 { n } else { 0 }))
        .collect()
}

/// Raise each shape's price per pod in turn, in `order`, as far as every pattern holding it allows (a
/// feasible solution of the cover LP's dual: any cover costs at least the demand priced so).
fn duals(patterns: &[Pattern], shapes: usize, order: &[usize]) -> Vec<f64> {
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

/// The branch and bound over the pods left per shape, with limit counters left per pool key.
pub struct Search<'a> {
    patterns: &'a [Pattern],
    /// Each pattern's counts as a demand (every count is at most the demand it was enumerated for).
    counts: Vec<Demand>,
    pattern_limits: Vec<&'a [i64]>,
    requests: &'a [Vec<i64>],
    /// Per resource, the cheapest price per unit over the columns.
    ratios: Vec<f64>,
    /// Prices per pod of each shape that no pattern's pods exceed its floor with, each a lower bound.
    duals: Vec<Vec<f64>>,
    /// `bound` per demand already priced: it depends on the demand alone, and a node's children share
    /// most of theirs with other nodes' children.
    bounds: HashMap<u64, f64>,
    steps: i64,
    best_cost: f64,
    best: Option<Vec<usize>>,
    seen: HashMap<State, (f64, usize)>,
    by_shape: Vec<Vec<usize>>,
    /// One set per depth of the patterns' (column, demand left) tried at the node there, kept so that
    /// a node reuses its depth's allocation.
    tried: Vec<HashSet<(usize, u64)>>,
}

impl<'a> Search<'a> {
    pub fn new(
        patterns: &'a [Pattern],
        columns: &'a [Column],
        requests: &'a [Vec<i64>],
        ratios: Vec<f64>,
        steps: i64,
        best_cost: f64,
    ) -> Search<'a> {
        let worth: Vec<f64> = requests
            .iter()
            .map(|req| {
                req.iter()
                    .zip(&ratios)
                    .fold(0.0, |a: f64, (&r, &q)| a.max(r as f64 * q))
            })
            .collect();
        let mut ranked: Vec<(f64, usize)> = patterns
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let value = p
                    .counts
                    .iter()
                    .zip(&worth)
                    .fold(0.0, |a, (&n, &w)| a + n as f64 * w);
                let score = if value > 0.0 {
                    p.price / value
                } else {
                    f64::INFINITY
                };
                (score, i)
            })
            .collect();
        ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let by_shape = (0..requests.len())
            .map(|s| {
                ranked
                    .iter()
                    .filter(|(_, i)| patterns[*i].counts[s] > 0)
                    .map(|&(_, i)| i)
                    .collect()
            })
            .collect();
        Search {
            patterns,
            counts: patterns
                .iter()
                .map(|p| {
                    let mut counts: Demand = [0; MAX_SHAPES];
                    for (c, &n) in counts.iter_mut().zip(&p.counts) {
                        *c = u8::try_from(n).expect("at most 255 pods a shape");
                    }
                    counts
                })
                .collect(),
            pattern_limits: patterns
                .iter()
                .map(|p| columns[p.column].limits.as_slice())
                .collect(),
            requests,
            ratios,
            duals: orders(requests.len())
                .iter()
                .map(|order| duals(patterns, requests.len(), order))
                .collect(),
            bounds: HashMap::default(),
            steps,
            best_cost,
            best: None,
            seen: HashMap::default(),
            by_shape,
            tried: Vec::new(),
        }
    }

    fn bound(&mut self, demand: &Demand) -> f64 {
        if let Some(&known) = self.bounds.get(&key(demand)) {
            return known;
        }
        let mut out = 0.0f64;
        for (k, &ratio) in self.ratios.iter().enumerate() {
            let need: i128 = demand
                .iter()
                .zip(self.requests)
                .map(|(&d, req)| i128::from(d) * req[k] as i128)
                .sum();
            out = out.max(need as f64 * ratio);
        }
        for duals in &self.duals {
            let priced = demand
                .iter()
                .zip(duals)
                .fold(0.0, |acc, (&d, &y)| acc + f64::from(d) * y);
            out = out.max(priced);
        }
        self.bounds.insert(key(demand), out);
        out
    }

    /// The cheapest cover found below the starting cost (pattern indexes), None if none was.
    pub fn run(mut self, demand: &[usize], limits: Vec<i64>) -> Option<Vec<usize>> {
        let mut chosen = Vec::new();
        let mut left: Demand = [0; MAX_SHAPES];
        for (l, &d) in left.iter_mut().zip(demand) {
            *l = u8::try_from(d).expect("at most 255 pods a shape");
        }
        self.dive(left, limits.clone());
        self.expand(left, limits, 0.0, &mut chosen, 0);
        self.best
    }

    /// The NodePool limits left once pattern `i` is bought; None when it would go over one.
    fn limits_after(&self, limits: &[i64], i: usize) -> Option<Vec<i64>> {
        let left: Vec<i64> = limits
            .iter()
            .zip(self.pattern_limits[i])
            .map(|(a, b)| a.saturating_sub(*b))
            .collect();
        left.iter().all(|&x| x >= 0).then_some(left)
    }

    /// A first cover, each step the pattern (of the first shape with pods left, within the limits)
    /// whose price plus the bound of what it leaves is least, the first in rank order of equals: the
    /// search then starts from a near-optimal cover and prunes (see the Python twin's `_dive`).
    fn dive(&mut self, mut demand: Demand, mut limits: Vec<i64>) {
        let mut cost = 0.0f64;
        let mut chosen = Vec::new();
        while let Some(shape) = demand.iter().position(|&d| d > 0) {
            let mut pick: Option<(f64, usize, Demand, Vec<i64>)> = None;
            for rank in 0..self.by_shape[shape].len() {
                let i = self.by_shape[shape][rank];
                let Some(left) = self.limits_after(&limits, i) else {
                    continue;
                };
                let after = minus(&demand, &self.counts[i]);
                let score = self.patterns[i].price + self.bound(&after);
                if pick.as_ref().is_none_or(|(least, ..)| score < *least) {
                    pick = Some((score, i, after, left));
                }
            }
            let Some((_, i, after, left)) = pick else {
                return;
            };
            cost += self.patterns[i].price;
            chosen.push(i);
            demand = after;
            limits = left;
        }
        if cost < self.best_cost - SAVING {
            self.best_cost = cost;
            self.best = Some(chosen);
        }
    }

    /// Cover the first shape with pods left by each pattern from rank `start` on: the patterns
    /// covering one shape are taken in rank order, so each set of them is tried once.
    fn expand(
        &mut self,
        demand: Demand,
        limits: Vec<i64>,
        cost: f64,
        chosen: &mut Vec<usize>,
        start: usize,
    ) {
        let Some(shape) = demand.iter().position(|&d| d > 0) else {
            if cost < self.best_cost - SAVING {
                self.best_cost = cost;
                self.best = Some(chosen.clone());
            }
            return;
        };
        if cost + self.bound(&demand) >= self.best_cost - SAVING {
            return;
        }
        let state = (key(&demand), limits);
        match self.seen.get_mut(&state) {
            Some(&mut (seen, from)) if seen <= cost && from <= start => return,
            Some(known) => *known = (cost, start),
            None => {
                self.seen.insert(state.clone(), (cost, start));
            }
        }
        let (_, limits) = state;
        let depth = chosen.len();
        if self.tried.len() <= depth {
            self.tried.resize_with(depth + 1, HashSet::default);
        }
        self.tried[depth].clear();
        for rank in start..self.by_shape[shape].len() {
            let i = self.by_shape[shape][rank];
            let after = minus(&demand, &self.counts[i]);
            // The same node as a pattern tried before, at this demand.
            if !self.tried[depth].insert((self.patterns[i].column, key(&after))) {
                continue;
            }
            if self.steps <= 0 {
                return;
            }
            self.steps -= 1;
            let Some(left) = self.limits_after(&limits, i) else {
                continue;
            };
            let price = self.patterns[i].price;
            // What the child's own bound check would find, without the call.
            let cost_after = cost + price;
            if after.iter().any(|&d| d > 0)
                && cost_after + self.bound(&after) >= self.best_cost - SAVING
            {
                continue;
            }
            let next = if after[shape] > 0 { rank } else { 0 };
            chosen.push(i);
            self.expand(after, left, cost_after, chosen, next);
            chosen.pop();
        }
    }
}
