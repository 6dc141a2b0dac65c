//! Every query's answer: per group, per window, one value, joined across sources by the
//! queries' own rule.

use std::collections::BTreeMap;

use super::spec::{Grid, Query, Q};
use super::table::QUERIES;

/// The series of one group become one value by their maximum: the same series scraped twice
/// (copies differing only by `instance`) must count once, on both paths.
fn combine(row: &mut Row, k: u32, v: f64) {
    row.update(k, |x| x.map_or(v, |x| x.max(v)));
}

/// One group's value per window (by window index).
pub(crate) type Row = crate::review::timeline::Timeline<u32, f64>;

/// A counter's increase from one window's highest value to the next, across resets (a value
/// below the last is a restarted server counting from zero), with the start of the window it
/// fell in; windows that added nothing are left out.
pub(crate) fn increments(grid: Grid, w: &Row) -> impl Iterator<Item = (i64, f64)> + '_ {
    w.iter()
        .zip(w.iter().skip(1))
        .filter_map(move |((_, a), (k, b))| {
            let inc = if b >= a { b - a } else { *b };
            (inc > 0.0 && inc.is_finite()).then(|| (grid.start(k), inc))
        })
}

/// One query's answer: per group (the values of its `by` labels, in order), per window, the
/// value.
pub(crate) type Rows = BTreeMap<Vec<String>, Row>;

/// Every query's answer, by query.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Answers {
    pub rows: BTreeMap<Q, Rows>,
    /// Requests are already in physical GPUs (the CSV format): no node's time-slicing or
    /// MIG strategy applies to them.
    pub gpus_as_given: bool,
    /// Windows a sample was taken in with no pod running (the CSV format lists the pods
    /// running at each sample: a sample time with no row is a time nothing ran). Covered
    /// and sampled like a window with a kube-state-metrics sample.
    pub idle_samples: std::collections::BTreeSet<u32>,
    /// Seconds between samples where the format fixes them (the CSV format: each time in
    /// the file is one sample of every pod running): what a sample stands for when no pod
    /// lives long enough to show its scrape interval (1,000 jobs of 30 s one after another
    /// were each counted a whole step).
    pub sample_every: Option<f64>,
}

impl Answers {
    pub(crate) fn get(&self, q: Q) -> impl Iterator<Item = (&Vec<String>, &Row)> {
        self.rows.get(&q).into_iter().flat_map(|r| r.iter())
    }
    pub(crate) fn query(q: Q) -> &'static Query {
        QUERIES
            .iter()
            .find(|x| x.id == q)
            .expect("every Q has a query")
    }
    /// The index of label `l` in the rows of `q`.
    pub(crate) fn col(q: Q, l: &str) -> usize {
        Self::query(q)
            .by
            .iter()
            .position(|x| *x == l)
            .expect("a label the query groups by")
    }
    /// Every row in its fewest runs: pieces of a long window arrive in any order.
    pub(crate) fn compact(&mut self) {
        self.rows
            .values_mut()
            .flat_map(|rows| rows.values_mut())
            .for_each(Row::compact);
    }
    /// The clusters the rows name (their `cluster` label), empty ones left out.
    pub(crate) fn clusters(&self) -> std::collections::BTreeSet<String> {
        let mut out = std::collections::BTreeSet::new();
        for (q, rows) in &self.rows {
            if let Some(c) = Self::query(*q).by.iter().position(|l| *l == "cluster") {
                out.extend(rows.keys().map(|g| g[c].clone()).filter(|c| !c.is_empty()));
            }
        }
        out
    }
    /// The rows of one cluster (rows of a query that has no `cluster` label are kept).
    pub(crate) fn of_cluster(&self, cluster: &str) -> Answers {
        let rows = self
            .rows
            .iter()
            .map(|(q, rows)| {
                let col = Self::query(*q).by.iter().position(|l| *l == "cluster");
                let kept: Rows = rows
                    .iter()
                    .filter(|(g, _)| col.is_none_or(|c| g[c] == cluster))
                    .map(|(g, r)| (g.clone(), r.clone()))
                    .collect();
                (*q, kept)
            })
            .collect();
        Answers {
            rows,
            gpus_as_given: self.gpus_as_given,
            idle_samples: self.idle_samples.clone(),
            sample_every: self.sample_every,
        }
    }
    /// Join another set of answers into this one, each value combined as the queries combine
    /// series.
    pub(crate) fn merge(&mut self, other: Answers) {
        use std::collections::btree_map::Entry;
        // A group (or a whole query) this side lacks is moved, not copied entry by entry:
        // the two never hold it at once.
        self.idle_samples.extend(other.idle_samples);
        self.sample_every = match (self.sample_every, other.sample_every) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for (q, rows) in other.rows {
            let mine = match self.rows.entry(q) {
                Entry::Vacant(v) => {
                    v.insert(rows);
                    continue;
                }
                Entry::Occupied(o) => o.into_mut(),
            };
            for (group, row) in rows {
                match mine.entry(group) {
                    Entry::Vacant(v) => {
                        v.insert(row);
                    }
                    Entry::Occupied(mut o) => o.get_mut().merge_max(row),
                }
            }
        }
        self.gpus_as_given |= other.gpus_as_given;
    }

    /// Add one group's value of one window, combined as the query combines series.
    /// The group is copied only the first time it is seen: a server's answer gives thousands of
    /// points per group.
    pub(crate) fn add(&mut self, q: Q, group: &[String], k: u32, v: f64) {
        let rows = self.rows.entry(q).or_default();
        match rows.get_mut(group) {
            Some(row) => combine(row, k, v),
            None => {
                rows.insert(group.to_vec(), std::iter::once((k, v)).collect());
            }
        }
    }
}
