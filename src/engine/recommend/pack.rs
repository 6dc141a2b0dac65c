//! Putting replicas on nodes. A node offers GPU units (whole GPUs, or equal shares of its
//! GPUs when they are time-sliced), allocatable vCPUs and RAM; replicas are placed first fit
//! in decreasing order of the largest share they take, which never splits a replica across
//! nodes.

mod colgen;

/// What one replica (or one prepared GPU) takes of a node.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Item {
    pub units: u32,
    pub cpu: f64,
    pub mem: f64,
}

/// What one node offers.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NodeCap {
    pub units: u32,
    pub cpu: f64,
    pub mem: f64,
}

impl NodeCap {
    fn dominant(&self, i: &Item) -> f64 {
        let u = f64::from(i.units) / f64::from(self.units.max(1));
        let c = if self.cpu > 0.0 {
            i.cpu / self.cpu
        } else {
            0.0
        };
        let m = if self.mem > 0.0 {
            i.mem / self.mem
        } else {
            0.0
        };
        u.max(c).max(m)
    }
}

/// Nodes needed for `groups` of identical items (item, how many): the better of first fit
/// decreasing and a node-at-a-time dot-product fill. Returns the node count and the GPU
/// units left unused on them.
///
/// `thorough` adds the pattern search, which finds better fillings where a node holds a
/// handful of replicas, and column generation (`colgen`), which lands within a node or two of
/// the pattern LP's bound; both cost more time, so the final pools get them and comparisons
/// do not.
pub(crate) fn nodes(groups: &[(Item, u32)], cap: NodeCap, thorough: bool) -> (u32, u32) {
    let mut best = first_fit_decreasing(groups, cap);
    let dp = dot_product(groups, cap);
    if dp.0 < best.0 {
        best = dp;
    }
    // Patterns pay off where a node holds a handful of replicas of a few kinds; with dozens
    // of time-sliced shares per node, or hundreds of kinds (a large estate's pool), the
    // depth-first search only exhausts its budget, once per node: its cost would grow with
    // the square of the estate. Column generation still packs those pools.
    let kinds = groups.iter().filter(|g| g.1 > 0).count();
    if thorough && cap.units <= 16 && kinds <= PATTERN_KINDS {
        let p = patterns(groups, cap);
        if p.0 < best.0 {
            best = p;
        }
    }
    if thorough {
        if let Some(c) = colgen::pack(groups, cap) {
            if c.0 < best.0 {
                best = c;
            }
        }
    }
    best
}

/// Search nodes one pattern search may expand.
const PATTERN_BUDGET: u32 = 20_000;

/// Replica kinds a pool may have for the pattern search to run (openb's largest pool has 48).
const PATTERN_KINDS: usize = 64;

/// Sequential pattern fill (the cutting-stock "sequential heuristic procedure"): find the
/// filling of one node that best uses the resources the remaining replicas need most, by a
/// bounded depth-first search over replica kinds, then repeat it while the counts allow.
pub(crate) fn patterns(groups: &[(Item, u32)], cap: NodeCap) -> (u32, u32) {
    const EPS: f64 = 1e-9;
    let caps = [
        f64::from(cap.units.max(1)),
        cap.cpu.max(EPS),
        cap.mem.max(EPS),
    ];
    let kinds: Vec<([f64; 3], u32)> = groups
        .iter()
        .filter(|g| g.1 > 0)
        .map(|g| {
            (
                [
                    f64::from(g.0.units) / caps[0],
                    g.0.cpu / caps[1],
                    g.0.mem / caps[2],
                ],
                g.0.units,
            )
        })
        .collect();
    let mut left: Vec<u32> = groups.iter().filter(|g| g.1 > 0).map(|g| g.1).collect();
    let (mut nodes, mut free) = (0u32, 0u32);
    while left.iter().any(|&c| c > 0) {
        let mut total = [0.0f64; 3];
        for (k, (n, _)) in kinds.iter().enumerate() {
            for d in 0..3 {
                total[d] += n[d] * f64::from(left[k]);
            }
        }
        let sum: f64 = total.iter().sum::<f64>().max(EPS);
        let w = total.map(|t| t / sum);
        let mut search = PatternSearch {
            kinds: &kinds,
            left: &left,
            w,
            units: cap.units,
            best: (0.0, Vec::new()),
            cur: Vec::new(),
            budget: PATTERN_BUDGET,
        };
        search.dfs(0, [0.0; 3], 0);
        let pattern = search.best.1;
        if pattern.is_empty() {
            // A replica larger than a node: it gets one alone, so the count stays honest.
            if let Some(k) = left.iter().position(|&c| c > 0) {
                left[k] -= 1;
                nodes += 1;
            }
            continue;
        }
        let mut per: Vec<u32> = vec![0; kinds.len()];
        for &k in &pattern {
            per[k] += 1;
        }
        let reps = per
            .iter()
            .zip(&left)
            .filter(|(p, _)| **p > 0)
            .map(|(p, l)| l / p)
            .min()
            .unwrap_or(1)
            .max(1);
        let used: u32 = pattern.iter().map(|&k| kinds[k].1).sum();
        for (k, p) in per.iter().enumerate() {
            left[k] -= p * reps;
        }
        nodes += reps;
        free += reps * cap.units.saturating_sub(used);
    }
    (nodes, free)
}

struct PatternSearch<'a> {
    kinds: &'a [([f64; 3], u32)],
    left: &'a [u32],
    w: [f64; 3],
    units: u32,
    best: (f64, Vec<usize>),
    cur: Vec<usize>,
    budget: u32,
}

impl PatternSearch<'_> {
    fn score(&self, used: [f64; 3]) -> f64 {
        (0..3).map(|d| self.w[d] * used[d].min(1.0)).sum()
    }

    /// Kinds are added in non-decreasing index order, so each multiset is seen once.
    fn dfs(&mut self, from: usize, used: [f64; 3], units: u32) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        let s = self.score(used);
        if s > self.best.0 + 1e-12 {
            self.best = (s, self.cur.clone());
        }
        for k in from..self.kinds.len() {
            let taken = self.cur.iter().filter(|&&c| c == k).count() as u32;
            if taken >= self.left[k] {
                continue;
            }
            let (n, u) = self.kinds[k];
            if units + u > self.units || used[1] + n[1] > 1.0 + 1e-9 || used[2] + n[2] > 1.0 + 1e-9
            {
                continue;
            }
            self.cur.push(k);
            self.dfs(
                k,
                [used[0] + n[0], used[1] + n[1], used[2] + n[2]],
                units + u,
            );
            self.cur.pop();
        }
    }
}

/// Fill one node at a time; each step adds the item that best matches what the node has left,
/// weighting each resource by how much of it the remaining items still need (after
/// Panigrahy et al., "Heuristics for Vector Bin Packing", the DotProduct rule). Where GPU,
/// vCPU and RAM are all nearly full across the pool, this pairs CPU-heavy replicas with
/// CPU-light ones, which first fit decreasing does not.
pub(crate) fn dot_product(groups: &[(Item, u32)], cap: NodeCap) -> (u32, u32) {
    let coarse;
    let groups = if groups.iter().filter(|g| g.1 > 0).count() > DOT_KINDS {
        coarse = coarsened(groups, cap);
        &coarse[..]
    } else {
        groups
    };
    let kinds: Vec<Item> = groups.iter().filter(|g| g.1 > 0).map(|g| g.0).collect();
    let mut left: Vec<u32> = groups.iter().filter(|g| g.1 > 0).map(|g| g.1).collect();
    let fill = DotFill::new(&kinds, cap);
    let (mut nodes, mut free) = (0u32, 0u32);
    while left.iter().any(|&c| c > 0) {
        nodes += 1;
        let p = fill.node(&left);
        let used: u32 = p.iter().zip(&kinds).map(|(n, it)| n * it.units).sum();
        if p.iter().all(|&n| n == 0) {
            // Nothing fits an empty node: the item is larger than a node; place it alone so
            // the count stays honest rather than looping.
            if let Some(k) = left.iter().position(|&c| c > 0) {
                left[k] -= 1;
            }
        }
        for (l, n) in left.iter_mut().zip(&p) {
            *l -= n;
        }
        free += cap.units.saturating_sub(used);
    }
    (nodes, free)
}

/// Replica kinds the DotProduct fill takes as they are. Each of its steps weighs every kind
/// still in the running, so its cost grows with kinds × replicas: on a large estate's pool
/// (thousands of workloads, each its own vCPU and RAM request) that is the square of the
/// estate. Above this many kinds it packs coarsened kinds instead (see `coarsened`).
const DOT_KINDS: usize = 512;

/// `groups` with each replica's vCPUs and RAM rounded up to a grid of 1/128 of the node (then
/// 1/64, 1/32 … while more than `DOT_KINDS` kinds remain), and equal kinds joined. Rounding
/// up only makes replicas larger, so a packing of the coarsened kinds is a valid packing of
/// the real ones; it gives away at most one grid step of each replica, and first fit
/// decreasing still sees the exact sizes.
fn coarsened(groups: &[(Item, u32)], cap: NodeCap) -> Vec<(Item, u32)> {
    let up = |v: f64, whole: f64, steps: f64| {
        if whole <= 0.0 || v > whole {
            return v;
        }
        let step = whole / steps;
        ((v / step).ceil() * step).min(whole)
    };
    let mut steps = 128.0;
    loop {
        let out = joined(
            groups
                .iter()
                .filter(|g| g.1 > 0)
                .map(|&(i, n)| {
                    let item = Item {
                        units: i.units,
                        cpu: up(i.cpu, cap.cpu, steps),
                        mem: up(i.mem, cap.mem, steps),
                    };
                    (item, n)
                })
                .collect(),
        );
        if out.len() <= DOT_KINDS || steps <= 4.0 {
            return out;
        }
        steps /= 2.0;
    }
}

/// The DotProduct fill of one pool's kinds, their shares of a node computed once for every
/// node it fills.
struct DotFill<'k> {
    kinds: &'k [Item],
    cap: NodeCap,
    norm: Vec<[f64; 3]>,
}

impl<'k> DotFill<'k> {
    const EPS: f64 = 1e-9;

    fn new(kinds: &'k [Item], cap: NodeCap) -> Self {
        let caps = [
            f64::from(cap.units.max(1)),
            cap.cpu.max(Self::EPS),
            cap.mem.max(Self::EPS),
        ];
        let norm = kinds
            .iter()
            .map(|i| {
                [
                    f64::from(i.units) / caps[0],
                    i.cpu / caps[1],
                    i.mem / caps[2],
                ]
            })
            .collect();
        Self { kinds, cap, norm }
    }

    /// One node filled from `left` replicas of each kind: how many of each it takes.
    ///
    /// Each step takes the kind whose shares best match what the node has left, weighted
    /// by what the remaining replicas still need; ties go to the earlier kind. A kind that
    /// is used up or no longer fits leaves the running for this node for good (what the node
    /// has left only shrinks), so a step scans only the kinds still in it: on a large pool
    /// the node's first steps drop most of them.
    fn node(&self, left: &[u32]) -> Vec<u32> {
        const EPS: f64 = DotFill::EPS;
        let mut total = [0.0f64; 3];
        for (n, &c) in self.norm.iter().zip(left) {
            for d in 0..3 {
                total[d] += n[d] * f64::from(c);
            }
        }
        let mut take = vec![0u32; self.kinds.len()];
        let mut res = [1.0f64, 1.0, 1.0];
        let mut units_left = self.cap.units;
        let mut open: Vec<usize> = (0..self.kinds.len()).filter(|&k| left[k] > 0).collect();
        loop {
            let mut best: Option<(f64, usize)> = None;
            open.retain(|&k| {
                let n = &self.norm[k];
                if take[k] >= left[k]
                    || self.kinds[k].units > units_left
                    || n[1] > res[1] + EPS
                    || n[2] > res[2] + EPS
                {
                    return false;
                }
                let score: f64 = (0..3).map(|d| total[d] * n[d] * res[d]).sum();
                if best.is_none_or(|(b, _)| score > b + EPS) {
                    best = Some((score, k));
                }
                true
            });
            let Some((_, k)) = best else { break };
            take[k] += 1;
            units_left -= self.kinds[k].units;
            for d in 0..3 {
                res[d] -= self.norm[k][d];
                total[d] -= self.norm[k][d];
            }
        }
        take
    }
}

/// First fit decreasing by the largest share an item takes.
pub(crate) fn first_fit_decreasing(groups: &[(Item, u32)], cap: NodeCap) -> (u32, u32) {
    let mut order: Vec<&(Item, u32)> = groups.iter().filter(|g| g.1 > 0).collect();
    order.sort_by(|a, b| {
        cap.dominant(&b.0)
            .total_cmp(&cap.dominant(&a.0))
            .then(b.0.units.cmp(&a.0.units))
            .then(b.0.cpu.total_cmp(&a.0.cpu))
            .then(b.0.mem.total_cmp(&a.0.mem))
    });
    // Remaining (units, cpu, mem) per open node.
    let mut bins: Vec<(u32, f64, f64)> = Vec::new();
    const EPS: f64 = 1e-9;
    for (item, count) in order {
        // Nodes only lose room, so a node too full for one copy is too full for the next:
        // each copy starts looking where the previous one was placed.
        let mut start = 0usize;
        for _ in 0..*count {
            let found = bins[start..]
                .iter()
                .position(|b| b.0 >= item.units && b.1 + EPS >= item.cpu && b.2 + EPS >= item.mem);
            let at = match found {
                Some(k) => start + k,
                None => {
                    bins.push((cap.units, cap.cpu, cap.mem));
                    bins.len() - 1
                }
            };
            let b = &mut bins[at];
            b.0 = b.0.saturating_sub(item.units);
            b.1 -= item.cpu;
            b.2 -= item.mem;
            start = at;
        }
    }
    let free = bins.iter().map(|b| b.0).sum();
    (u32::try_from(bins.len()).unwrap_or(u32::MAX), free)
}

/// Shares of one GPU (thousandths) packed onto GPUs, first fit decreasing; each GPU comes
/// back as the vCPUs and RAM of the replicas on it. A GPU's replicas run on its node, so a GPU
/// takes no more of them than a node's allocatable vCPUs and RAM (`node`) hold: four 8-vCPU
/// models at a tenth of a GPU each need two 24-vCPU nodes, not one GPU.
pub(crate) fn server_gpus(groups: &[(u32, f64, f64, u32)], node: (f64, f64)) -> Vec<Item> {
    const EPS: f64 = 1e-9;
    let mut order: Vec<&(u32, f64, f64, u32)> = groups.iter().filter(|g| g.3 > 0).collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.total_cmp(&a.1)));
    let mut gpus: Vec<(u32, f64, f64)> = Vec::new();
    for (milli, cpu, mem, count) in order {
        let mut start = 0usize;
        for _ in 0..*count {
            let fits = |g: &(u32, f64, f64)| {
                g.0 + milli <= 1000 && g.1 + cpu <= node.0 + EPS && g.2 + mem <= node.1 + EPS
            };
            let at = match gpus[start..].iter().position(fits) {
                Some(k) => start + k,
                None => {
                    gpus.push((0, 0.0, 0.0));
                    gpus.len() - 1
                }
            };
            let g = &mut gpus[at];
            g.0 += milli;
            g.1 += cpu;
            g.2 += mem;
            start = at;
        }
    }
    gpus.into_iter()
        .map(|(_, cpu, mem)| Item { units: 1, cpu, mem })
        .collect()
}

/// Identical items counted once.
pub(crate) fn group(items: Vec<Item>) -> Vec<(Item, u32)> {
    joined(items.into_iter().map(|i| (i, 1)).collect())
}

/// `groups` with equal items joined at the first one's place, counts added: what every packer
/// sees is the same, but a pool of thousands of identical workloads is a handful of kinds,
/// not thousands (packing is then linear in the estate).
pub(crate) fn merged(groups: Vec<(Item, u32)>) -> Vec<(Item, u32)> {
    let mut at: std::collections::HashMap<(u32, u64, u64), usize> =
        std::collections::HashMap::new();
    let mut out: Vec<(Item, u32)> = Vec::with_capacity(groups.len().min(1024));
    for (i, n) in groups {
        let key = (i.units, i.cpu.to_bits(), i.mem.to_bits());
        match at.get(&key) {
            Some(&k) => out[k].1 += n,
            None => {
                at.insert(key, out.len());
                out.push((i, n));
            }
        }
    }
    out
}

/// `groups` sorted by units, vCPUs and RAM, equal items joined with their counts added.
fn joined(mut groups: Vec<(Item, u32)>) -> Vec<(Item, u32)> {
    groups.sort_by(|(a, _), (b, _)| {
        a.units
            .cmp(&b.units)
            .then(a.cpu.total_cmp(&b.cpu))
            .then(a.mem.total_cmp(&b.mem))
    });
    let mut out: Vec<(Item, u32)> = Vec::new();
    for (i, n) in groups {
        match out.last_mut() {
            Some((last, c)) if *last == i => *c += n,
            _ => out.push((i, n)),
        }
    }
    out
}

#[cfg(test)]
mod tests;
