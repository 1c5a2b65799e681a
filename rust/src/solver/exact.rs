//! The exact pass (twin of `exact.py`): for a small batch, the cheapest set of new claims for the pods
//! the cost pass may move, found by a bounded search instead of local moves.
//!
//! Pods are grouped into shapes (equal but for their name and the labels no selector reads, at the
//! same relaxation level); each (NodePool, flavor) column learns which shapes it holds, at what price,
//! and which pairs of shapes cannot share one of its nodes, from probe claims opened with the
//! scheduler's own checks and taken back. `exact_search` finds the cheapest cover by packing patterns;
//! the cover is placed with the same checks and kept only when every pod finds its place and it is
//! strictly cheaper. Only pods whose constraints stay on their own node take part (see `exact.py`).

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;

use super::anchored::{constrained_groups, is_constrained};
use super::exact_search::{patterns, Column, Pattern, Search, MAX_SHAPES, SAVING};
use super::exact_shapes::shapes;
use super::greedy::{biggest_first, Checks, Scheduler};
use super::improve::{put_back, take_off};
use super::model::HOSTNAME;
use super::resources as res;

const MAX_PODS: usize = 60;
const VISITS_PER_COLUMN: i64 = 20_000;
const SEARCH_STEPS: i64 = 150_000;

type ChecksOf = HashMap<usize, Checks>;

/// Replace the movable claims by the cheapest cover the search finds, when it is strictly cheaper.
pub fn exact(s: &mut Scheduler) {
    let pinned = constrained_groups(s);
    let movable: Vec<usize> = s
        .claims
        .iter()
        .filter(|c| !c.pods.iter().any(|&p| is_constrained(s, p, &pinned)))
        .map(|c| c.index)
        .collect();
    let count: usize = movable
        .iter()
        .map(|&i| s.claim(i).expect("present").pods.len())
        .sum();
    if count == 0 || count > MAX_PODS {
        return;
    }
    let mut pods: Vec<usize> = movable
        .iter()
        .flat_map(|&i| s.claim(i).expect("present").pods.clone())
        .collect();
    pods.sort_by_cached_key(|&p| biggest_first(s.pods[p]));
    let mut checks = ChecksOf::default();
    for &p in &pods {
        let prefs = s.placed_prefs[&p].clone();
        checks.insert(p, s.checks(p, &prefs));
    }
    if !checks.values().all(local) {
        return;
    }
    let shapes = shapes(s, &pods);
    if shapes.len() > MAX_SHAPES {
        return;
    }
    let before = movable
        .iter()
        .fold(0.0, |acc, i| acc + s.claim(*i).expect("present").price());
    let taken = take_off(s, &movable);
    let columns = columns(s, &shapes, &checks);
    let chosen = if columns.is_empty() {
        None
    } else {
        search(s, &shapes, &columns, before)
    };
    let kept = chosen.is_some_and(|c| materialise(s, &shapes, &checks, &columns, &c, before));
    if kept {
        s.removed.extend(taken);
    } else {
        put_back(s, taken);
    }
}

/// Whether the pod's constraints are all about its own node.
fn local(checks: &Checks) -> bool {
    checks.spread.is_empty()
        && checks.rules.is_empty()
        && checks.affinity.is_empty()
        && checks
            .anti
            .iter()
            .chain(&checks.symmetric_anti)
            .all(|a| a.key == HOSTNAME)
}

/// A claim of the column holding the first pod (and the second, if given), by index; the caller takes
/// it off.
fn probe(
    s: &mut Scheduler,
    view: usize,
    first: &Checks,
    flavor: &str,
    second: Option<&Checks>,
) -> Option<usize> {
    let at = s
        .open_claim(view, first, Some(std::slice::from_ref(&flavor)))
        .ok()?;
    let index = s.claims[at].index;
    if let Some(second) = second {
        if !s.try_claim(at, second, false) {
            drop(take_off(s, &[index]));
            return None;
        }
    }
    Some(index)
}

/// The resource positions some shape requests, in name order.
fn keys(s: &Scheduler, shapes: &[Vec<usize>]) -> Vec<usize> {
    (0..s.names.zero().len())
        .filter(|&k| shapes.iter().any(|shape| s.requests[shape[0]][k] != 0))
        .collect()
}

/// Every (pool, flavor) some shape can use, with its prices and conflicts; empty when a shape fits no
/// pool.
fn columns(s: &mut Scheduler, shapes: &[Vec<usize>], checks: &ChecksOf) -> Vec<Column> {
    let keys = keys(s, shapes);
    let mut by_column: BTreeMap<(usize, usize), Column> = BTreeMap::new();
    for (shape_at, shape) in shapes.iter().enumerate() {
        let first = &checks[&shape[0]];
        let Some(view) = (0..s.pools.len()).find(|&v| opens(s, v, first)) else {
            return Vec::new();
        };
        for f in 0..s.pools[view].flavors.len() {
            let flavor = s.pools[view].flavors[f].clone();
            let Some(index) = probe(s, view, first, flavor.name(), None) else {
                continue;
            };
            let price = s.claim(index).expect("probe").price();
            drop(take_off(s, &[index]));
            let column = by_column.entry((view, f)).or_insert_with(|| Column {
                view,
                flavor: flavor.name().to_string(),
                net: keys.iter().map(|&k| flavor.net_dense[k]).collect(),
                prices: vec![None; shapes.len()],
                conflicts: vec![vec![false; shapes.len()]; shapes.len()],
                limits: Vec::new(),
            });
            column.prices[shape_at] = Some(price);
        }
    }
    let mut columns: Vec<Column> = by_column.into_values().collect();
    for column in &mut columns {
        find_conflicts(s, shapes, checks, column);
    }
    limit_needs(s, &mut columns);
    columns
}

fn opens(s: &mut Scheduler, view: usize, checks: &Checks) -> bool {
    match s.open_claim(view, checks, None) {
        Ok(at) => {
            let index = s.claims[at].index;
            drop(take_off(s, &[index]));
            true
        }
        Err(_) => false,
    }
}

/// The pairs of shapes whose pods, with room for both, still cannot share a node of the column.
fn find_conflicts(
    s: &mut Scheduler,
    shapes: &[Vec<usize>],
    checks: &ChecksOf,
    column: &mut Column,
) {
    let held: Vec<usize> = (0..shapes.len())
        .filter(|&i| column.prices[i].is_some())
        .collect();
    let flavor = flavor_of(s, column);
    for (i, &a) in held.iter().enumerate() {
        for &b in &held[i..] {
            if a == b && shapes[a].len() < 2 {
                continue;
            }
            let (first, second) = (shapes[a][0], shapes[b][usize::from(a == b)]);
            let room = flavor
                .net_dense
                .iter()
                .zip(&s.requests[first])
                .zip(&s.requests[second])
                .all(|((&net, &x), &y)| x as i128 + y as i128 <= net as i128 || x + y == 0);
            if !room {
                continue;
            }
            match probe(
                s,
                column.view,
                &checks[&first],
                &column.flavor,
                Some(&checks[&second]),
            ) {
                Some(index) => drop(take_off(s, &[index])),
                None => column.conflicts[a][b] = true,
            }
        }
    }
}

fn flavor_of(s: &Scheduler, column: &Column) -> std::rc::Rc<super::flavors::Flavor> {
    s.pools[column.view]
        .flavors
        .iter()
        .find(|f| f.name() == column.flavor)
        .expect("column flavor")
        .clone()
}

/// What one node of each column takes from the limit counters (every pool's limited keys in turn).
fn limit_needs(s: &Scheduler, columns: &mut [Column]) {
    let counters: Vec<(usize, String)> = s
        .pools
        .iter()
        .enumerate()
        .flat_map(|(v, view)| view.remaining.iter().map(move |(key, _)| (v, key.clone())))
        .collect();
    for column in columns.iter_mut() {
        let flavor = flavor_of(s, column);
        column.limits = counters
            .iter()
            .map(|(v, key)| match (*v == column.view, key.as_str()) {
                (false, _) => 0,
                (true, "nodes") => 1000,
                (true, key) => res::get(&flavor.it.capacity, key),
            })
            .collect();
    }
}

fn search(
    s: &Scheduler,
    shapes: &[Vec<usize>],
    columns: &[Column],
    before: f64,
) -> Option<Vec<Pattern>> {
    let keys = keys(s, shapes);
    let requests: Vec<Vec<i64>> = shapes
        .iter()
        .map(|shape| keys.iter().map(|&k| s.requests[shape[0]][k]).collect())
        .collect();
    let demand: Vec<usize> = shapes.iter().map(Vec::len).collect();
    let mut found: Vec<Pattern> = Vec::new();
    for (at, column) in columns.iter().enumerate() {
        found.extend(patterns(at, column, &requests, &demand, VISITS_PER_COLUMN)?);
    }
    let ratios = (0..keys.len())
        .map(|k| ratio(columns, &found, &requests, k))
        .collect();
    let limits: Vec<i64> = s
        .pools
        .iter()
        .flat_map(|view| view.remaining.iter().map(|(_, left)| *left))
        .collect();
    let search = Search::new(&found, columns, &requests, ratios, SEARCH_STEPS, before);
    let chosen = search.run(&demand, limits)?;
    Some(chosen.into_iter().map(|i| found[i].clone()).collect())
}

/// The least any node can cost per unit of resource `k` its pods use: every node holds a subset of
/// some maximal pattern and costs at least its column's cheapest price (0 when no pattern uses `k`).
fn ratio(columns: &[Column], found: &[Pattern], requests: &[Vec<i64>], k: usize) -> f64 {
    found
        .iter()
        .filter_map(|p| {
            let used: i128 = p
                .counts
                .iter()
                .zip(requests)
                .map(|(&n, req)| n as i128 * req[k] as i128)
                .sum();
            (used > 0).then(|| columns[p.column].cheapest() / used as f64)
        })
        .fold(None, |best: Option<f64>, r| {
            Some(best.map_or(r, |b| b.min(r)))
        })
        .unwrap_or(0.0)
}

/// Place the cover's claims, pods in shape order; keep them if every pod fits and they cost less.
fn materialise(
    s: &mut Scheduler,
    shapes: &[Vec<usize>],
    checks: &ChecksOf,
    columns: &[Column],
    chosen: &[Pattern],
    before: f64,
) -> bool {
    let mut next = vec![0usize; shapes.len()];
    let mut created: Vec<usize> = Vec::new();
    for pattern in chosen {
        let column = &columns[pattern.column];
        let mut claim: Option<usize> = None;
        for (shape_at, &count) in pattern.counts.iter().enumerate() {
            let end = (next[shape_at] + count).min(shapes[shape_at].len());
            for &pod in &shapes[shape_at][next[shape_at]..end] {
                let placed = match claim {
                    None => probe(s, column.view, &checks[&pod], &column.flavor, None)
                        .inspect(|&index| {
                            claim = Some(index);
                            created.push(index);
                        })
                        .is_some(),
                    Some(index) => {
                        let at = s.position(index).expect("created claim");
                        s.try_claim(at, &checks[&pod], false)
                    }
                };
                if !placed {
                    drop(take_off(s, &created));
                    return false;
                }
            }
            next[shape_at] = end;
        }
    }
    let cost = created
        .iter()
        .fold(0.0, |acc, i| acc + s.claim(*i).expect("created").price());
    let all_placed = next.iter().zip(shapes).all(|(&n, shape)| n == shape.len());
    if !all_placed || cost >= before - SAVING {
        drop(take_off(s, &created));
        return false;
    }
    true
}

#[cfg(test)]
#[path = "exact_tests.rs"]
mod tests;
