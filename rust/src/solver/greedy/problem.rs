//! Why a domain is refused on topology grounds (twin of the messages in `greedy/checks.py`): a value the
//! hot path returns without allocating, formatted only when a refusal is reported.

/// A topology constraint a placement would break, worded exactly as the Python engine words it.
pub enum Problem<'k> {
    Spread(&'k str, i64),
    GroupSpread(&'k str),
    AffinityNeedsLabel(&'k str),
    AffinityNoMatch(&'k str),
    Anti(&'k str),
    Excluded(&'k str, &'k str),
}

impl std::fmt::Display for Problem<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Spread(key, skew) => write!(
                f,
                "topology spread on {key} (maxSkew {skew}) would be exceeded"
            ),
            Problem::GroupSpread(key) => {
                write!(
                    f,
                    "topology spread on {key} of the pods already there would be exceeded"
                )
            }
            Problem::AffinityNeedsLabel(key) => {
                write!(f, "pod affinity needs a node labelled {key}")
            }
            Problem::AffinityNoMatch(key) => {
                write!(f, "pod affinity on {key}: no matching pod in that domain")
            }
            Problem::Anti(key) => write!(
                f,
                "pod anti-affinity on {key}: a matching pod is already there"
            ),
            Problem::Excluded(key, value) => write!(
                f,
                "anti-affinity of a pod already on {key}={value} excludes it"
            ),
        }
    }
}
