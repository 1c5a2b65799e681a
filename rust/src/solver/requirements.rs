//! The requirements algebra (twin of `kapstan/scheduling/requirements.py`): the values a label may take
//! on a node, and whether it may be absent. `Reqs` keeps insertion order, like a Python dict, because
//! the order decides which conflict a reason names.

use std::collections::BTreeSet;
use std::rc::Rc;

use super::model::{lookup, NodeOperator, NodeSelectorRequirement};

/// A label value as an integer the way Kubernetes reads one for Gt/Lt (`strconv.ParseInt(v, 10, 64)`):
/// an optional sign and ASCII digits, within i64; anything else is not a number. Twin of Python's
/// `parse_int64`. Widened to i128 so that the bounds' +1/-1 cannot overflow.
pub fn parse_int64(text: &str) -> Option<i128> {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<i64>().ok().map(i128::from)
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Requirement {
    pub key: String,
    pub complement: bool,
    pub values: BTreeSet<String>,
    pub absent_ok: bool,
    pub greater_than: Option<i128>,
    pub less_than: Option<i128>,
    pub min_values: Option<i64>,
}

fn max_opt<T: Ord + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (None, b) => b,
        (a, None) => a,
        (Some(a), Some(b)) => Some(a.max(b)),
    }
}

fn min_opt<T: Ord + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (None, b) => b,
        (a, None) => a,
        (Some(a), Some(b)) => Some(a.min(b)),
    }
}

impl Requirement {
    fn new(key: &str, complement: bool, values: BTreeSet<String>, absent_ok: bool) -> Self {
        Requirement {
            key: key.to_string(),
            complement,
            values,
            absent_ok,
            greater_than: None,
            less_than: None,
            min_values: None,
        }
    }

    pub fn from_selector(req: &NodeSelectorRequirement) -> Self {
        let values: BTreeSet<String> = req.values.iter().cloned().collect();
        let bound = || req.values.first().and_then(|v| parse_int64(v)).unwrap_or(0);
        // Gt/Lt keep their bound; Gte/Lte become Gt/Lt of the next integer out.
        let numeric = |greater_than, less_than| Requirement {
            greater_than,
            less_than,
            ..Requirement::new(&req.key, true, BTreeSet::new(), false)
        };
        let mut out = match req.operator {
            NodeOperator::In => Requirement::new(&req.key, false, values, false),
            NodeOperator::NotIn => Requirement::new(&req.key, true, values, true),
            NodeOperator::Exists => Requirement::new(&req.key, true, BTreeSet::new(), false),
            NodeOperator::DoesNotExist => {
                return Requirement::new(&req.key, false, BTreeSet::new(), true)
            }
            NodeOperator::Gt => numeric(Some(bound()), None),
            NodeOperator::Gte => numeric(Some(bound() - 1), None),
            NodeOperator::Lt => numeric(None, Some(bound())),
            NodeOperator::Lte => numeric(None, Some(bound() + 1)),
        };
        // minValues holds for the numeric operators too: Karpenter counts the key's distinct values
        // among the flavors left, whatever the operator.
        out.min_values = req.min_values;
        out
    }

    pub fn exactly(key: &str, value: &str) -> Self {
        Requirement::new(key, false, BTreeSet::from([value.to_string()]), false)
    }

    pub fn any_value(key: &str) -> Self {
        Requirement::new(key, true, BTreeSet::new(), true)
    }

    pub fn exists(key: &str) -> Self {
        Requirement::new(key, true, BTreeSet::new(), false)
    }

    pub fn absent(key: &str) -> Self {
        Requirement::new(key, false, BTreeSet::new(), true)
    }

    fn in_bounds(&self, value: &str) -> bool {
        if self.greater_than.is_none() && self.less_than.is_none() {
            return true;
        }
        let Some(number) = parse_int64(value) else {
            return false;
        };
        if let Some(g) = self.greater_than {
            if number <= g {
                return false;
            }
        }
        self.less_than.is_none_or(|l| number < l)
    }

    pub fn has(&self, value: &str) -> bool {
        if !self.in_bounds(value) {
            return false;
        }
        self.values.contains(value) != self.complement
    }

    pub fn allows(&self, value: Option<&str>) -> bool {
        match value {
            None => self.absent_ok,
            Some(v) => self.has(v),
        }
    }

    pub fn intersect(&self, other: &Requirement) -> Requirement {
        let greater = max_opt(self.greater_than, other.greater_than);
        let less = min_opt(self.less_than, other.less_than);
        let (complement, values) = match (self.complement, other.complement) {
            (true, true) => (true, self.values.union(&other.values).cloned().collect()),
            (true, false) => (
                false,
                other.values.difference(&self.values).cloned().collect(),
            ),
            (false, true) => (
                false,
                self.values.difference(&other.values).cloned().collect(),
            ),
            (false, false) => (
                false,
                self.values.intersection(&other.values).cloned().collect(),
            ),
        };
        let mut merged = Requirement {
            key: self.key.clone(),
            complement,
            values,
            absent_ok: self.absent_ok && other.absent_ok,
            greater_than: greater,
            less_than: less,
            min_values: max_opt(self.min_values, other.min_values),
        };
        if !complement && (greater.is_some() || less.is_some()) {
            let kept: BTreeSet<String> = merged
                .values
                .iter()
                .filter(|v| merged.in_bounds(v))
                .cloned()
                .collect();
            merged.values = kept;
        }
        merged
    }

    pub fn present_possible(&self) -> bool {
        if !self.complement {
            return !self.values.is_empty();
        }
        if let (Some(g), Some(l)) = (self.greater_than, self.less_than) {
            let span = l - g - 1;
            let excluded = self.values.iter().filter(|v| self.in_bounds(v)).count() as i128;
            return span > excluded;
        }
        true
    }

    pub fn is_empty(&self) -> bool {
        !self.absent_ok && !self.present_possible()
    }

    pub fn single_value(&self) -> Option<&str> {
        if !self.complement && self.values.len() == 1 && !self.absent_ok {
            return self.values.iter().next().map(String::as_str);
        }
        None
    }

    pub fn describe(&self) -> String {
        if self.greater_than.is_some() || self.less_than.is_some() {
            let low = self
                .greater_than
                .map(|g| format!(">{g}"))
                .unwrap_or_default();
            let high = self.less_than.map(|l| format!("<{l}")).unwrap_or_default();
            let sep = if !low.is_empty() && !high.is_empty() {
                " "
            } else {
                ""
            };
            return format!("{} {low}{sep}{high}", self.key);
        }
        let values = self.values.iter().cloned().collect::<Vec<_>>().join(", ");
        match (self.complement, values.is_empty()) {
            (true, false) => format!("{} NotIn [{values}]", self.key),
            (true, true) => format!("{} Exists", self.key),
            (false, false) => format!("{} In [{values}]", self.key),
            (false, true) => format!("{} DoesNotExist", self.key),
        }
    }
}

/// The value a new node carries for a key that only its NodePool's requirements define (twin of
/// `requirements.carried_value`): None when the node may go without the label or nothing is allowed;
/// otherwise the first allowed value (Karpenter's `Requirement.Any` draws one at random): the smallest
/// value of an In, or the smallest integer from the lower bound (from 0 without one, downwards below an
/// upper bound of 0 or less) that the bounds and the excluded values allow.
pub fn carried_value(req: &Requirement) -> Option<String> {
    if req.absent_ok || req.is_empty() {
        return None;
    }
    if !req.complement {
        return req.values.iter().next().cloned();
    }
    let (start, step): (i128, i128) = match (req.greater_than, req.less_than) {
        (Some(g), _) => (g.saturating_add(1), 1),
        (None, Some(l)) if l <= 0 => (l.saturating_sub(1), -1),
        _ => (0, 1),
    };
    // At most `values.len()` candidates are excluded, so the search ends within that many steps plus one.
    (0..=req.values.len() as i128)
        .map(|offset| start.saturating_add(step * offset).to_string())
        .find(|candidate| req.has(candidate))
}

/// Requirements by key, in insertion order (a key keeps its first position when narrowed again).
/// Shared until changed: a claim's requirements are copied for every pod it is asked to take, and
/// most pods narrow nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Reqs(pub Rc<Vec<Requirement>>);

impl Reqs {
    pub fn get(&self, key: &str) -> Option<&Requirement> {
        self.0.iter().find(|r| r.key == key)
    }

    pub fn set(&mut self, req: Requirement) {
        let all = Rc::make_mut(&mut self.0);
        match all.iter_mut().find(|r| r.key == req.key) {
            Some(slot) => *slot = req,
            None => all.push(req),
        }
    }

    pub fn add(&mut self, req: Requirement) {
        let merged = match self.get(&req.key) {
            Some(current) => current.intersect(&req),
            None => req,
        };
        self.set(merged);
    }

    pub fn build(reqs: &[NodeSelectorRequirement], labels: &[(String, String)]) -> Reqs {
        let mut out = Reqs::default();
        for (key, value) in labels {
            out.add(Requirement::exactly(key, value));
        }
        for req in reqs {
            out.add(Requirement::from_selector(req));
        }
        out
    }

    pub fn intersect(&self, other: &Reqs) -> Reqs {
        let mut out = self.clone();
        for req in other.0.iter() {
            out.add(req.clone());
        }
        out
    }

    pub fn first_conflict(&self, labels: &[(String, String)]) -> Option<&Requirement> {
        self.0
            .iter()
            .find(|r| !r.allows(lookup(labels, &r.key).map(String::as_str)))
    }

    pub fn pinned(&self, key: &str) -> bool {
        self.get(key).is_some_and(|r| r.single_value().is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sel(key: &str, operator: NodeOperator, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator,
            values: values.iter().map(|v| v.to_string()).collect(),
            min_values: None,
        }
    }

    #[test]
    fn in_and_not_in_intersect_to_the_difference() {
        let a = Requirement::from_selector(&sel("zone", NodeOperator::In, &["a", "b", "c"]));
        let b = Requirement::from_selector(&sel("zone", NodeOperator::NotIn, &["b"]));
        let both = a.intersect(&b);
        assert!(both.has("a") && !both.has("b") && both.has("c"));
        assert!(!both.absent_ok);
        assert_eq!(both.describe(), "zone In [a, c]");
    }

    #[test]
    fn numeric_bounds_and_go_ints() {
        let gt = Requirement::from_selector(&sel("gen", NodeOperator::Gt, &["3"]));
        let lte = Requirement::from_selector(&sel("gen", NodeOperator::Lte, &["5"]));
        let range = gt.intersect(&lte);
        assert!(!range.has("3") && range.has("4") && range.has("5") && !range.has("6"));
        assert!(range.has("+4") && !range.has("1_0") && !range.has(" 4"));
        assert!(!range.has("four") && !range.has("+-4"));
        assert_eq!(parse_int64("9223372036854775807"), Some(i64::MAX as i128));
        assert_eq!(parse_int64("9223372036854775808"), None);
        assert_eq!(parse_int64(&"9".repeat(45)), None);
        let never = range.intersect(&Requirement::from_selector(&sel(
            "gen",
            NodeOperator::Gte,
            &["9"],
        )));
        assert!(never.is_empty());
    }

    fn carried(reqs: &[NodeSelectorRequirement]) -> Option<String> {
        let mut merged = Requirement::from_selector(&reqs[0]);
        for other in &reqs[1..] {
            merged = merged.intersect(&Requirement::from_selector(other));
        }
        carried_value(&merged)
    }

    #[test]
    fn a_carried_value_is_the_first_allowed_one() {
        assert_eq!(
            carried(&[sel("team", NodeOperator::In, &["red", "blue"])]).as_deref(),
            Some("blue")
        );
        assert_eq!(
            carried(&[sel("team", NodeOperator::Exists, &[])]).as_deref(),
            Some("0")
        );
        let not_small = [
            sel("team", NodeOperator::NotIn, &["0", "1"]),
            sel("team", NodeOperator::Exists, &[]),
        ];
        assert_eq!(carried(&not_small).as_deref(), Some("2"));
        assert_eq!(carried(&[sel("team", NodeOperator::NotIn, &["0"])]), None);
        assert_eq!(
            carried(&[sel("gen", NodeOperator::Gt, &["-3"])]).as_deref(),
            Some("-2")
        );
        assert_eq!(
            carried(&[sel("gen", NodeOperator::Lt, &["-3"])]).as_deref(),
            Some("-4")
        );
        let none_left = [
            sel("gen", NodeOperator::Gt, &["2"]),
            sel("gen", NodeOperator::Lt, &["4"]),
            sel("gen", NodeOperator::NotIn, &["3"]),
        ];
        assert_eq!(carried(&none_left), None);
    }

    #[test]
    fn does_not_exist_only_allows_absence() {
        let gone = Requirement::from_selector(&sel("gpu", NodeOperator::DoesNotExist, &[]));
        assert!(gone.allows(None) && !gone.allows(Some("true")));
        assert!(gone
            .intersect(&Requirement::exactly("gpu", "t4"))
            .is_empty());
    }
}
