//! Integer resource vectors in milli-units (twin of `resources.py`), kept as ordered pairs because the
//! order of a pod's requests decides which shortfall a reason names.
//!
//! Python's integers never overflow; these must not either. The snapshot bounds every amount to an
//! int64 and the pods' totals too (`kapstan/snapshot_bounds.py`), and on top of that sums saturate and
//! a fit whose sum would overflow is no fit, which is what exact arithmetic says as well.

use super::model::{lookup, Pairs};

pub type Res = Pairs<i64>;

pub fn get(vector: &[(String, i64)], key: &str) -> i64 {
    lookup(vector, key).copied().unwrap_or(0)
}

pub fn add_into(out: &mut Res, other: &[(String, i64)], sign: i64) {
    for (key, value) in other {
        match out.iter_mut().find(|(k, _)| k == key) {
            Some((_, slot)) => *slot = slot.saturating_add(sign.saturating_mul(*value)),
            None => out.push((key.clone(), sign.saturating_mul(*value))),
        }
    }
}

pub fn add(a: &[(String, i64)], b: &[(String, i64)]) -> Res {
    let mut out = a.to_vec();
    add_into(&mut out, b, 1);
    out
}

pub fn subtract(a: &[(String, i64)], b: &[(String, i64)]) -> Res {
    let mut out = a.to_vec();
    add_into(&mut out, b, -1);
    out
}

pub fn fits(
    used: &[(String, i64)],
    request: &[(String, i64)],
    available: &[(String, i64)],
) -> bool {
    first_shortfall(used, request, available).is_none()
}

pub fn first_shortfall<'a>(
    used: &[(String, i64)],
    request: &'a [(String, i64)],
    available: &[(String, i64)],
) -> Option<&'a str> {
    request
        .iter()
        .find(|(key, value)| *value != 0 && !within(get(used, key), *value, get(available, key)))
        .map(|(key, _)| key.as_str())
}

/// `used + request <= available`, exactly: a sum beyond i64 is beyond any amount available.
pub fn within(used: i64, request: i64, available: i64) -> bool {
    used.checked_add(request)
        .is_some_and(|total| total <= available)
}

/// Resource names of one snapshot, so amounts on the hot path are dense vectors indexed by name.
pub struct Names(Vec<String>);

impl Names {
    pub fn new(mut names: Vec<String>) -> Names {
        names.sort();
        names.dedup();
        Names(names)
    }

    pub fn dense(&self, pairs: &[(String, i64)]) -> Vec<i64> {
        let mut out = vec![0i64; self.0.len()];
        for (key, value) in pairs {
            if let Ok(at) = self.0.binary_search(key) {
                out[at] = out[at].saturating_add(*value);
            }
        }
        out
    }

    /// Where the resource sits in the dense vectors.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.0.binary_search_by(|n| n.as_str().cmp(name)).ok()
    }

    pub fn zero(&self) -> Vec<i64> {
        vec![0; self.0.len()]
    }
}

/// `fits` on dense vectors: every nonzero request fits in what is left.
pub fn dense_fits(used: &[i64], request: &[i64], available: &[i64]) -> bool {
    request
        .iter()
        .zip(used)
        .zip(available)
        .all(|((r, u), a)| *r == 0 || within(*u, *r, *a))
}

pub fn dense_add(used: &mut [i64], request: &[i64]) {
    for (u, r) in used.iter_mut().zip(request) {
        *u = u.saturating_add(*r);
    }
}

/// A readable amount, exactly as the Python engine words it.
pub fn describe(name: &str, milli: i64) -> String {
    if name == "cpu" {
        return if milli % 1000 == 0 {
            format!("{}", milli / 1000)
        } else {
            format!("{milli}m")
        };
    }
    if milli % 1000 != 0 {
        return format!("{milli}m");
    }
    let value = milli / 1000;
    if name == "memory" || name == "ephemeral-storage" || name.starts_with("hugepages-") {
        for (suffix, size) in [("Gi", 1i64 << 30), ("Mi", 1 << 20), ("Ki", 1 << 10)] {
            if value % size == 0 && value >= size {
                return format!("{}{suffix}", value / size);
            }
        }
        if value >= 1 << 20 {
            return format!("{:.2}Gi", value as f64 / (1u64 << 30) as f64);
        }
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fit_that_would_overflow_is_no_fit() {
        let used = vec![("memory".to_string(), 1 << 40)];
        let request = vec![("memory".to_string(), i64::MAX)];
        let available = vec![("memory".to_string(), 64 << 40)];
        assert!(!fits(&used, &request, &available));
        assert_eq!(first_shortfall(&used, &request, &available), Some("memory"));
        assert!(!dense_fits(&[1 << 40], &[i64::MAX], &[64 << 40]));
        assert!(dense_fits(&[0], &[i64::MAX], &[i64::MAX]));
        let mut total = vec![1 << 40];
        dense_add(&mut total, &[i64::MAX]);
        assert_eq!(total, vec![i64::MAX]);
        assert_eq!(add(&used, &request), vec![("memory".to_string(), i64::MAX)]);
    }

    #[test]
    fn describes_like_the_python_engine() {
        assert_eq!(describe("cpu", 1500), "1500m");
        assert_eq!(describe("cpu", 2000), "2");
        assert_eq!(describe("memory", (256i64 << 20) * 1000), "256Mi");
        assert_eq!(describe("memory", 4_000_000_000_000), "3906250Ki");
        assert_eq!(describe("memory", 4_000_000_001_000), "3.73Gi");
        assert_eq!(describe("pods", 110_000), "110");
    }
}
