//! A value per step window, held in the space the data needs rather than per window.
//!
//! A review holds a few values per pod, node and card for every window of a quarter: 10,800
//! windows at the default step, for hundreds of GPUs. Most of those values are constant over
//! long runs (a pod's GPU request, a node's allocatable count, scrapes per window) and the
//! rest vary every window (GPU activity). A B-tree map spends 14–30 bytes on each entry of
//! either kind; a [`Timeline`] spends nothing per window on a constant run and one value per
//! window on a varying one, and answers the same questions in the same key order.
//!
//! Keys are window indices (`u32`) or window starts (`i64`, Unix seconds): both step evenly,
//! so a run is a first key, a stride and a length.

use std::fmt;

/// A key that steps evenly: window indices and window starts.
pub trait Key: Copy + Ord + fmt::Debug {
    /// `self - earlier`, when `self >= earlier`.
    fn after(self, earlier: Self) -> u64;
    /// `self + n`.
    fn plus(self, n: u64) -> Self;
}

impl Key for u32 {
    fn after(self, earlier: Self) -> u64 {
        u64::from(self - earlier)
    }
    fn plus(self, n: u64) -> Self {
        self.saturating_add(u32::try_from(n).unwrap_or(u32::MAX))
    }
}

impl Key for i64 {
    fn after(self, earlier: Self) -> u64 {
        self.abs_diff(earlier)
    }
    fn plus(self, n: u64) -> Self {
        self.saturating_add(i64::try_from(n).unwrap_or(i64::MAX))
    }
}

/// A value a run may repeat: equal means the same bits, so a run never turns `-0.0` into
/// `0.0` or loses a NaN's payload.
pub trait Cell: Copy + fmt::Debug {
    fn same(&self, other: &Self) -> bool;
}

impl Cell for f64 {
    fn same(&self, other: &Self) -> bool {
        self.to_bits() == other.to_bits()
    }
}

impl Cell for u32 {
    fn same(&self, other: &Self) -> bool {
        self == other
    }
}

impl Cell for (f64, f64) {
    fn same(&self, other: &Self) -> bool {
        self.0.same(&other.0) && self.1.same(&other.1)
    }
}

/// Equal values at the end of a varying run that become a constant run of their own.
const SPLIT_AFTER: usize = 8;

/// Shorter constant runs are rewritten as varying ones when a value inside them changes,
/// rather than split in three.
const SMALL: u32 = 16;

#[derive(Clone)]
enum Data<V> {
    Const(V),
    Dense(Vec<V>),
}

/// `len` keys from `start`, `stride` apart (the stride is meaningless while `len` is 1).
#[derive(Clone)]
struct Run<K, V> {
    start: K,
    stride: u64,
    len: u32,
    data: Data<V>,
}

impl<K: Key, V: Cell> Run<K, V> {
    fn one(k: K, v: V) -> Self {
        Run {
            start: k,
            stride: 1,
            len: 1,
            data: Data::Const(v),
        }
    }
    fn key(&self, i: u32) -> K {
        self.start.plus(self.stride * u64::from(i))
    }
    fn last(&self) -> K {
        self.key(self.len - 1)
    }
    fn value(&self, i: u32) -> &V {
        match &self.data {
            Data::Const(v) => v,
            Data::Dense(vals) => &vals[i as usize],
        }
    }
    /// The position of `k` in the run, if it is one of its keys.
    fn position(&self, k: K) -> Option<u32> {
        if k < self.start {
            return None;
        }
        let d = k.after(self.start);
        if self.len == 1 {
            return (d == 0).then_some(0);
        }
        (d.is_multiple_of(self.stride) && d / self.stride < u64::from(self.len))
            .then(|| (d / self.stride) as u32)
    }
    /// Whether `k` continues the run: the next key on its stride, or any later key while it
    /// holds one.
    fn continues(&self, k: K) -> bool {
        k > self.last() && (self.len == 1 || k.after(self.last()) == self.stride)
    }
    /// Append `k` (which [`Run::continues`]); a trailing constant stretch of a varying run
    /// is split off and returned as a run of its own.
    fn push(&mut self, k: K, v: V) -> Option<Run<K, V>> {
        if self.len == 1 {
            self.stride = k.after(self.start);
        }
        match &mut self.data {
            Data::Const(c) if c.same(&v) => {}
            Data::Const(c) if self.len == 1 => self.data = Data::Dense(vec![*c, v]),
            Data::Const(_) => return Some(Run::one(k, v)),
            Data::Dense(vals) => {
                vals.push(v);
                let n = vals.len();
                if n > SPLIT_AFTER && vals[n - SPLIT_AFTER..].iter().all(|x| x.same(&v)) {
                    vals.truncate(n - SPLIT_AFTER);
                    self.len = (n - SPLIT_AFTER) as u32;
                    let first = self.key(self.len);
                    return Some(Run {
                        start: first,
                        stride: self.stride,
                        len: SPLIT_AFTER as u32,
                        data: Data::Const(v),
                    });
                }
            }
        }
        self.len += 1;
        None
    }
    /// The part from position `i` on, cut off this run.
    fn split_off(&mut self, i: u32) -> Run<K, V> {
        let start = self.key(i);
        let data = match &mut self.data {
            Data::Const(c) => Data::Const(*c),
            Data::Dense(vals) => Data::Dense(vals.split_off(i as usize)),
        };
        let tail = Run {
            start,
            stride: self.stride,
            len: self.len - i,
            data,
        };
        self.len = i;
        tail
    }
}

/// Values by key, in key order: the subset of `BTreeMap<K, V>`'s behaviour the review uses,
/// held as constant and varying runs.
#[derive(Clone)]
pub struct Timeline<K, V> {
    runs: Vec<Run<K, V>>,
    len: usize,
}

impl<K, V> Default for Timeline<K, V> {
    fn default() -> Self {
        Timeline {
            runs: Vec::new(),
            len: 0,
        }
    }
}

impl<K: Key, V: Cell> Timeline<K, V> {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The run that holds or precedes `k`.
    fn run_at(&self, k: K) -> Option<usize> {
        self.runs.partition_point(|r| r.start <= k).checked_sub(1)
    }
    pub fn get(&self, k: &K) -> Option<&V> {
        let r = &self.runs[self.run_at(*k)?];
        r.position(*k).map(|i| r.value(i))
    }
    pub fn contains_key(&self, k: &K) -> bool {
        self.get(k).is_some()
    }
    /// The entry with the largest key below `k`.
    pub fn lower(&self, k: K) -> Option<(K, &V)> {
        let r = self.runs.partition_point(|r| r.start < k).checked_sub(1)?;
        let run = &self.runs[r];
        let i = if run.len == 1 {
            0
        } else {
            let d = k.after(run.start);
            ((d - 1) / run.stride).min(u64::from(run.len) - 1) as u32
        };
        Some((run.key(i), run.value(i)))
    }
    /// The entry with the smallest key at or above `k`.
    pub fn ceil(&self, k: K) -> Option<(K, &V)> {
        if let Some(r) = self.run_at(k) {
            let run = &self.runs[r];
            if k <= run.last() {
                let i = if run.len == 1 {
                    0
                } else {
                    k.after(run.start).div_ceil(run.stride) as u32
                };
                return Some((run.key(i), run.value(i)));
            }
        }
        let next = &self.runs.get(self.runs.partition_point(|r| r.start < k))?;
        Some((next.start, next.value(0)))
    }
    fn first_key(&self) -> Option<K> {
        self.runs.first().map(|r| r.start)
    }
    fn last_key(&self) -> Option<K> {
        self.runs.last().map(Run::last)
    }

    /// Set the value at `k`.
    pub fn insert(&mut self, k: K, v: V) {
        let Some(r) = self.run_at(k) else {
            self.runs.insert(0, Run::one(k, v));
            self.len += 1;
            return;
        };
        if let Some(i) = self.runs[r].position(k) {
            self.replace(r, i, v);
            return;
        }
        self.len += 1;
        if self.runs[r].continues(k) && self.runs.get(r + 1).is_none_or(|n| n.start > k) {
            if let Some(tail) = self.runs[r].push(k, v) {
                self.runs.insert(r + 1, tail);
            }
            return;
        }
        // Between two keys of run `r` (off its stride) or in a gap after it.
        if k < self.runs[r].last() {
            let at = (k.after(self.runs[r].start) / self.runs[r].stride) as u32 + 1;
            let tail = self.runs[r].split_off(at);
            self.runs.insert(r + 1, tail);
        }
        self.runs.insert(r + 1, Run::one(k, v));
    }

    /// The value at position `i` of run `r` becomes `v`.
    fn replace(&mut self, r: usize, i: u32, v: V) {
        if i == 0 && r > 0 && self.moves_back(r, &v) {
            return;
        }
        let run = &mut self.runs[r];
        match &mut run.data {
            Data::Dense(vals) => vals[i as usize] = v,
            Data::Const(c) if c.same(&v) => {}
            Data::Const(_) if run.len == 1 => run.data = Data::Const(v),
            Data::Const(c) if run.len <= SMALL => {
                let mut vals = vec![*c; run.len as usize];
                vals[i as usize] = v;
                run.data = Data::Dense(vals);
            }
            Data::Const(_) => {
                let mut tail = run.split_off(i);
                let rest = tail.split_off(1);
                tail.data = Data::Const(v);
                let mut at = r + 1;
                if run.len == 0 {
                    self.runs.remove(r);
                    at = r;
                }
                self.runs.insert(at, tail);
                if rest.len > 0 {
                    self.runs.insert(at + 1, rest);
                }
            }
        }
    }

    /// A constant run's first key changed to `v` joins the run before it, when that ends
    /// just before: a sweep of writes across a constant run (another pod's GPUs added to a
    /// node's) grows one run rather than leaving a run per key.
    fn moves_back(&mut self, r: usize, v: &V) -> bool {
        let (before, after) = self.runs.split_at_mut(r);
        let (prev, run) = (&mut before[r - 1], &mut after[0]);
        let Data::Const(c) = &run.data else {
            return false;
        };
        if c.same(v) || !prev.continues(run.start) {
            return false;
        }
        let k = run.start;
        let split = prev.push(k, *v);
        if run.len == 1 {
            self.runs.remove(r);
        } else {
            run.start = run.key(1);
            run.len -= 1;
        }
        if let Some(tail) = split {
            self.runs.insert(r, tail);
        }
        true
    }

    /// `f` of the value at `k` (`None` when absent) becomes the value there.
    pub fn update(&mut self, k: K, f: impl FnOnce(Option<V>) -> V) {
        let v = f(self.get(&k).copied());
        self.insert(k, v);
    }

    /// Every value mapped by `f`, which must depend on the value alone: a constant run is
    /// mapped once.
    pub fn map_values(&mut self, f: impl Fn(V) -> V) {
        for r in &mut self.runs {
            match &mut r.data {
                Data::Const(c) => *c = f(*c),
                Data::Dense(vals) => vals.iter_mut().for_each(|v| *v = f(*v)),
            }
        }
    }

    /// The same entries in the fewest runs (after values were set out of order), in no more
    /// space than they take: most rows are one run, and a growing vector holds four.
    pub fn compact(&mut self) {
        let old = std::mem::take(self);
        *self = old.iter().map(|(k, v)| (k, *v)).collect();
        self.runs.shrink_to_fit();
        for r in &mut self.runs {
            if let Data::Dense(vals) = &mut r.data {
                vals.shrink_to_fit();
            }
        }
    }

    pub fn iter(&self) -> Iter<'_, K, V> {
        Iter {
            runs: &self.runs,
            r: 0,
            i: 0,
            left: self.len,
        }
    }
    pub fn keys(&self) -> impl Iterator<Item = K> + '_ {
        self.iter().map(|(k, _)| k)
    }
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.iter().map(|(_, v)| v)
    }
    /// The entries with keys in `from..to`.
    pub fn range(&self, from: K, to: K) -> impl Iterator<Item = (K, &V)> + '_ {
        let r = self.run_at(from).unwrap_or(0);
        let i = self.runs.get(r).map_or(0, |run| {
            if from <= run.start || run.len == 1 {
                0
            } else {
                let d = from.after(run.start);
                (d.div_ceil(run.stride)).min(u64::from(run.len)) as u32
            }
        });
        Iter {
            runs: &self.runs,
            r,
            i,
            left: usize::MAX,
        }
        .skip_while(move |(k, _)| *k < from)
        .take_while(move |(k, _)| *k < to)
    }
}

impl<K: Key, V: Cell + PartialOrd> Timeline<K, V> {
    /// Join `other` in, each key's value the larger of the two: the same series from two
    /// sources counts once.
    pub fn merge_max(&mut self, other: Timeline<K, V>) {
        if self.is_empty() {
            *self = other;
            return;
        }
        if other.is_empty() {
            return;
        }
        if other.first_key() > self.last_key() {
            for (k, v) in other.iter() {
                self.insert(k, *v);
            }
            return;
        }
        let mine = std::mem::take(self);
        let (mut a, mut b) = (mine.iter().peekable(), other.iter().peekable());
        let mut out = Timeline::new();
        loop {
            let (ka, kb) = (a.peek().map(|x| x.0), b.peek().map(|x| x.0));
            let take_a = match (ka, kb) {
                (None, None) => break,
                (Some(x), Some(y)) if x == y => {
                    if let (Some((k, va)), Some((_, vb))) = (a.next(), b.next()) {
                        out.insert(k, if *vb > *va { *vb } else { *va });
                    }
                    continue;
                }
                (Some(x), Some(y)) => x < y,
                (Some(_), None) => true,
                (None, Some(_)) => false,
            };
            let next = if take_a { a.next() } else { b.next() };
            if let Some((k, v)) = next {
                out.insert(k, *v);
            }
        }
        *self = out;
    }
}

impl<K: Key, V: Cell + std::ops::Add<Output = V> + Default> Timeline<K, V> {
    /// Add `v` to the value at `k` (absent counts as the default, zero).
    pub fn add(&mut self, k: K, v: V) {
        self.update(k, |x| x.unwrap_or_default() + v);
    }
}

/// Entries in key order.
pub struct Iter<'a, K, V> {
    runs: &'a [Run<K, V>],
    r: usize,
    i: u32,
    left: usize,
}

impl<'a, K: Key, V: Cell> Iterator for Iter<'a, K, V> {
    type Item = (K, &'a V);
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let run = self.runs.get(self.r)?;
            if self.i < run.len {
                let item = (run.key(self.i), run.value(self.i));
                self.i += 1;
                self.left = self.left.saturating_sub(1);
                return Some(item);
            }
            self.r += 1;
            self.i = 0;
        }
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.left == usize::MAX {
            (0, None)
        } else {
            (self.left, Some(self.left))
        }
    }
}

impl<'a, K: Key, V: Cell> IntoIterator for &'a Timeline<K, V> {
    type Item = (K, &'a V);
    type IntoIter = Iter<'a, K, V>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<K: Key, V: Cell> FromIterator<(K, V)> for Timeline<K, V> {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut out = Timeline::new();
        for (k, v) in iter {
            out.insert(k, v);
        }
        out
    }
}

impl<K: Key, V: Cell + PartialEq> PartialEq for Timeline<K, V> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().eq(other.iter())
    }
}

impl<K: Key, V: Cell> fmt::Debug for Timeline<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests;
