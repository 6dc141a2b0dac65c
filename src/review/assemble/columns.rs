//! Reading the answers' label columns: a column by name, a device's card key.

use crate::review::query::{Answers, Q};

pub(super) fn col(q: Q, l: &str) -> usize {
    Answers::col(q, l)
}

/// The card (or MIG instance) a DCGM row of query `q` is about: its cluster, host, index,
/// UUID and instance id; `None` when it names neither host nor UUID.
pub(super) fn card(q: Q, g: &[String]) -> Option<Vec<String>> {
    let named = !g[col(q, "Hostname")].is_empty() || !g[col(q, "UUID")].is_empty();
    named.then(|| labels(q, g, &CARD))
}

/// The labels that name a card (or MIG instance).
pub(super) const CARD: [&str; 5] = ["cluster", "Hostname", "gpu", "UUID", "GPU_I_ID"];

/// The values of `names` in a row of query `q`.
pub(super) fn labels(q: Q, g: &[String], names: &[&str]) -> Vec<String> {
    names.iter().map(|l| g[col(q, l)].clone()).collect()
}
