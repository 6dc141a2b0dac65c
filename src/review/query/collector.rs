//! The file path's evaluator of the queries: raw samples in, [`Answers`] out, each window's
//! samples joined into the aggregates the series' queries read when the next window begins.

use std::collections::{BTreeMap, HashMap};

use super::answers::{Answers, Row};
use super::spec::{Grid, Over, Q};
use super::table::QUERIES;

/// Samples of one window of one raw series.
#[derive(Debug, Clone, Copy)]
struct Acc {
    k: u32,
    sum: f64,
    count: u32,
    max: f64,
}

/// What one raw series keeps per window: only the aggregates its queries read.
#[derive(Default)]
struct Kept {
    sum: Option<Row>,
    count: Option<Row>,
    max: Option<Row>,
}

impl Kept {
    fn for_queries(groups: &[(Q, Vec<String>)]) -> Self {
        let overs = || groups.iter().map(|(q, _)| Answers::query(*q).over);
        let needs = |f: fn(Over) -> bool| overs().any(f).then(Row::new);
        Kept {
            sum: needs(|o| matches!(o, Over::Sum | Over::Avg)),
            count: needs(|o| matches!(o, Over::Count | Over::Avg)),
            max: needs(|o| matches!(o, Over::Max)),
        }
    }
    /// Window `a.k`'s samples joined in (the window may hold some already: a sample that
    /// came after a later window's).
    fn add(&mut self, a: &Acc) {
        if let Some(r) = &mut self.sum {
            r.add(a.k, a.sum);
        }
        if let Some(r) = &mut self.count {
            r.add(a.k, f64::from(a.count));
        }
        if let Some(r) = &mut self.max {
            let m = a.max;
            r.update(a.k, |x| x.map_or(m, |x| x.max(m)));
        }
    }
    /// Query `over`'s row; `last` when no other query of the series reads it after.
    fn row(&mut self, over: Over, last: bool) -> Row {
        let take = |r: &mut Option<Row>| {
            if last {
                r.take().unwrap_or_default()
            } else {
                r.clone().unwrap_or_default()
            }
        };
        match over {
            Over::Sum => take(&mut self.sum),
            Over::Count => take(&mut self.count),
            Over::Max => take(&mut self.max),
            Over::Avg => {
                let (Some(sum), Some(count)) = (&self.sum, &self.count) else {
                    return Row::new();
                };
                sum.iter()
                    .zip(count.iter())
                    .map(|((k, s), (_, c))| (k, s / c))
                    .collect()
            }
        }
    }
}

struct Series {
    /// The queries it answers, with its group in each.
    groups: Vec<(Q, Vec<String>)>,
    /// The window samples arrive in, not yet in `kept`: samples come in time order, so a
    /// window is joined in once, when the next begins.
    open: Option<Acc>,
    kept: Kept,
    last_ms: i64,
    last_value: f64,
    /// Every sample time, kept only for series that a first pass saw out of order (a file
    /// concatenated twice, two exports merged): duplicates there are found exactly.
    seen: Option<HashMap<i64, f64>>,
}

/// A label block that does not parse.
#[derive(Debug)]
pub(crate) struct BadLabels;

/// Raw samples in, [`Answers`] out: the file path's evaluator of [`QUERIES`].
pub(crate) struct Collector {
    pub grid: Grid,
    cluster: Option<String>,
    index: HashMap<String, usize>,
    series: Vec<Series>,
    pub duplicates: u64,
    pub conflicts: u64,
}

impl Collector {
    pub(crate) fn new(grid: Grid, cluster: Option<String>) -> Self {
        Collector {
            grid,
            cluster,
            index: HashMap::new(),
            series: Vec::new(),
            duplicates: 0,
            conflicts: 0,
        }
    }

    /// The series id of `key` (its metric name and label text as written), registering it
    /// with `labels()` the first time. `None` when no query wants it.
    pub(crate) fn series(
        &mut self,
        key: &str,
        name: &str,
        labels: impl FnOnce() -> Option<BTreeMap<String, String>>,
        out_of_order: bool,
    ) -> Result<Option<usize>, BadLabels> {
        if let Some(&i) = self.index.get(key) {
            return Ok((i != usize::MAX).then_some(i));
        }
        let got = self.register(name, labels, out_of_order)?;
        self.index.insert(key.to_owned(), got.unwrap_or(usize::MAX));
        Ok(got)
    }

    /// Register a new series of metric `name`: its id, or `None` when no query wants it.
    pub(crate) fn register(
        &mut self,
        name: &str,
        labels: impl FnOnce() -> Option<BTreeMap<String, String>>,
        out_of_order: bool,
    ) -> Result<Option<usize>, BadLabels> {
        let labels = labels().ok_or(BadLabels)?;
        let groups: Vec<(Q, Vec<String>)> = QUERIES
            .iter()
            .filter(|q| q.selects(name, &labels, self.cluster.as_deref()))
            .map(|q| (q.id, q.group(&labels)))
            .collect();
        if groups.is_empty() {
            return Ok(None);
        }
        let i = self.series.len();
        self.series.push(Series {
            kept: Kept::for_queries(&groups),
            groups,
            open: None,
            last_ms: i64::MIN,
            last_value: f64::NAN,
            seen: out_of_order.then(HashMap::new),
        });
        Ok(Some(i))
    }

    pub(crate) fn sample(&mut self, id: usize, ms: i64, v: f64) {
        let s = &mut self.series[id];
        if let Some(seen) = &mut s.seen {
            match seen.get(&ms) {
                Some(x) if *x == v => {
                    self.duplicates += 1;
                    return;
                }
                Some(_) => {
                    self.conflicts += 1;
                    return;
                }
                None => {
                    seen.insert(ms, v);
                }
            }
        } else if ms == s.last_ms {
            if v == s.last_value {
                self.duplicates += 1;
            } else {
                self.conflicts += 1;
            }
            return;
        }
        s.last_ms = s.last_ms.max(ms);
        s.last_value = v;
        let Some(k) = self.grid.window(ms) else {
            return;
        };
        match &mut s.open {
            Some(a) if a.k == k => a.take(v),
            Some(a) if a.k > k => {
                let mut late = Acc::new(k);
                late.take(v);
                s.kept.add(&late);
            }
            open => {
                if let Some(done) = open.replace(Acc::new(k)) {
                    s.kept.add(&done);
                }
                if let Some(a) = open {
                    a.take(v);
                }
            }
        }
    }

    pub(crate) fn finish(self) -> Answers {
        let mut out = Answers::default();
        for mut s in self.series {
            if let Some(a) = s.open.take() {
                s.kept.add(&a);
            }
            let overs: Vec<Over> = s
                .groups
                .iter()
                .map(|(q, _)| Answers::query(*q).over)
                .collect();
            for (i, (q, group)) in s.groups.into_iter().enumerate() {
                let over = overs[i];
                let last = !overs[i + 1..].iter().any(|o| o.shares(over));
                let row = s.kept.row(over, last);
                match out.rows.entry(q).or_default().entry(group) {
                    std::collections::btree_map::Entry::Vacant(v) => {
                        v.insert(row);
                    }
                    std::collections::btree_map::Entry::Occupied(mut o) => {
                        o.get_mut().merge_max(row);
                    }
                }
            }
        }
        out.compact();
        out
    }
}

impl Acc {
    fn new(k: u32) -> Self {
        Acc {
            k,
            sum: 0.0,
            count: 0,
            max: f64::NEG_INFINITY,
        }
    }
    fn take(&mut self, v: f64) {
        self.sum += v;
        self.count += 1;
        self.max = self.max.max(v);
    }
}
