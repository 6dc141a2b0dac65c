//! Column generation for packing a pool's replicas onto nodes (Gilmore and Gomory, "A Linear
//! Programming Approach to the Cutting-Stock Problem", 1961, applied to vectors: GPU units,
//! vCPUs and RAM).
//!
//! A *pattern* is one node's filling: how many replicas of each kind it holds. The LP chooses
//! how many nodes of each pattern to run so that every replica is placed; new patterns come
//! from a knapsack over the LP's dual prices. Once no pattern prices out, its optimum bounds
//! every packing from below, and rounding it (fix whole nodes of its patterns, solve again
//! for what is left) lands within a node or two of that bound, where the greedy fills strand
//! a few percent of nodes on pools whose GPU, vCPU and RAM are all nearly full.
//!
//! Everything is counted, nothing timed, so the same pool always packs the same way.

use microlp::{ComparisonOp, OptimizationDirection, Problem, SolveOutcome};

use super::{DotFill, Item, NodeCap};

const EPS: f64 = 1e-9;
/// Patterns one LP may add before it settles for what it has.
const ROUNDS: usize = 300;
/// Search nodes one knapsack may expand.
const KNAPSACK_BUDGET: u32 = 20_000;
/// Search nodes of the quick knapsack tried first.
const QUICK_BUDGET: u32 = 1000;
/// LP solves one packing may spend on the nodes rounding leaves over.
const DIVES: usize = 40;
/// Kinds above which the LP costs more than it saves; the greedy fills take those pools.
const MAX_KINDS: usize = 120;

/// One node's filling: replicas per kind.
type Pattern = Vec<u32>;

struct Packer<'a> {
    kinds: &'a [Item],
    cap: NodeCap,
}

impl Packer<'_> {
    fn fits(&self, p: &[u32]) -> bool {
        let (mut u, mut c, mut m) = (0u32, 0.0, 0.0);
        for (k, &n) in p.iter().enumerate() {
            u += self.kinds[k].units * n;
            c += self.kinds[k].cpu * f64::from(n);
            m += self.kinds[k].mem * f64::from(n);
        }
        u <= self.cap.units && c <= self.cap.cpu + EPS && m <= self.cap.mem + EPS
    }

    /// The most replicas of kind `k` a node with `room` left holds.
    fn most(&self, k: usize, room: (u32, f64, f64)) -> u32 {
        let it = &self.kinds[k];
        let by = |need: f64, have: f64| {
            if need <= EPS {
                u32::MAX
            } else {
                ((have + EPS) / need)
                    .floor()
                    .max(0.0)
                    .min(f64::from(u32::MAX)) as u32
            }
        };
        let by_units = room.0.checked_div(it.units).unwrap_or(u32::MAX);
        by_units.min(by(it.cpu, room.1)).min(by(it.mem, room.2))
    }

    /// Nodes for `left` replicas per kind, or `None` when a replica is larger than a node or
    /// the LP fails (the caller's greedy fills then stand).
    fn pack(&self, mut left: Vec<u32>) -> Option<u32> {
        let empty = (self.cap.units, self.cap.cpu, self.cap.mem);
        if (0..self.kinds.len()).any(|k| left[k] > 0 && self.most(k, empty) == 0) {
            return None;
        }
        // Patterns found for one LP serve the next: the dives only shrink what is left.
        let mut patterns = self.seeds(&left);
        let mut nodes = 0u32;
        for _ in 0..DIVES {
            if left.iter().all(|&n| n == 0) {
                return Some(nodes);
            }
            let x = self.relaxation(&left, &mut patterns)?;
            let mut order: Vec<usize> = (0..patterns.len()).filter(|&p| x[p] > EPS).collect();
            order.sort_by(|&a, &b| x[b].total_cmp(&x[a]).then(a.cmp(&b)));
            let mut fixed = false;
            for &p in &order {
                for _ in 0..(x[p] + 1e-6).floor() as u64 {
                    fixed |= self.take(&patterns[p], &mut left, &mut nodes);
                }
            }
            if !fixed {
                // Every pattern is fractional: run one node of the largest and solve again.
                let &p = order.first()?;
                if !self.take(&patterns[p], &mut left, &mut nodes) {
                    return None;
                }
            }
            // The next LP starts from the patterns this one used; pricing finds the rest.
            patterns = order.into_iter().map(|p| patterns[p].clone()).collect();
        }
        // What the dives left: one node at a time, each the DotProduct filling.
        let fill = DotFill::new(self.kinds, self.cap);
        while left.iter().any(|&n| n > 0) {
            let p = fill.node(&left);
            if !self.take(&p, &mut left, &mut nodes) {
                return None;
            }
        }
        Some(nodes)
    }

    /// Run one node of pattern `p`, capped by what is left; false if it places nothing.
    fn take(&self, p: &[u32], left: &mut [u32], nodes: &mut u32) -> bool {
        let mut placed = false;
        for (l, &n) in left.iter_mut().zip(p) {
            let t = n.min(*l);
            placed |= t > 0;
            *l -= t;
        }
        if placed {
            *nodes += 1;
        }
        placed
    }

    /// Starting patterns: the nodes the DotProduct fill builds for `left` (see
    /// `dot_product`), each repeated while the counts allow; good starting columns save most
    /// pricing rounds.
    fn seeds(&self, left: &[u32]) -> Vec<Pattern> {
        let mut left = left.to_vec();
        let mut out: Vec<Pattern> = Vec::new();
        let fill = DotFill::new(self.kinds, self.cap);
        while left.iter().any(|&n| n > 0) {
            let p = fill.node(&left);
            let Some(reps) = (0..p.len())
                .filter(|&k| p[k] > 0)
                .map(|k| left[k] / p[k])
                .min()
            else {
                break;
            };
            for (l, &n) in left.iter_mut().zip(&p) {
                *l -= n * reps;
            }
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }

    /// The LP over patterns for `left`, adding priced-out patterns to `patterns`; returns the
    /// nodes of each pattern. The dual (one price per kind, one row per pattern) is what is
    /// solved and grown, since adding a row keeps the solver's basis; the primal is solved
    /// once at the end for the pattern counts.
    fn relaxation(&self, left: &[u32], patterns: &mut Vec<Pattern>) -> Option<Vec<f64>> {
        let active: Vec<usize> = (0..self.kinds.len()).filter(|&k| left[k] > 0).collect();
        let capped =
            |p: &Pattern| -> Pattern { p.iter().zip(left).map(|(&n, &l)| n.min(l)).collect() };
        let mut dual = Problem::new(OptimizationDirection::Maximize);
        let price: Vec<microlp::Variable> = active
            .iter()
            .map(|&k| dual.add_var(f64::from(left[k]), (0.0, f64::INFINITY)))
            .collect();
        let row = |p: &Pattern| -> Vec<(microlp::Variable, f64)> {
            active
                .iter()
                .zip(&price)
                .filter(|(&k, _)| p[k].min(left[k]) > 0)
                .map(|(&k, &v)| (v, f64::from(p[k].min(left[k]))))
                .collect()
        };
        // Every active kind has its homogeneous pattern among these, so the dual is bounded.
        for k in &active {
            if !patterns
                .iter()
                .any(|p| p[*k] > 0 && p.iter().filter(|&&n| n > 0).count() == 1)
            {
                let mut p = vec![0; self.kinds.len()];
                p[*k] = self
                    .most(*k, (self.cap.units, self.cap.cpu, self.cap.mem))
                    .min(left[*k]);
                patterns.push(p);
            }
        }
        for p in patterns.iter() {
            let r = row(p);
            if !r.is_empty() {
                dual.add_constraint(r, ComparisonOp::Le, 1.0);
            }
        }
        let mut sol = match dual.solve().ok()? {
            SolveOutcome::Solution(s) => s,
            SolveOutcome::Interrupted(_) => return None,
        };
        for _ in 0..ROUNDS {
            let mut pi = vec![0.0; self.kinds.len()];
            for (&k, &v) in active.iter().zip(&price) {
                pi[k] = sol.var_value(v);
            }
            // A quick search finds improving patterns while there are many; only when it
            // finds none does a long one look harder before the LP is called done.
            let mut found = self.knapsack(&pi, left, QUICK_BUDGET);
            if found.0 <= 1.0 + 1e-7 && !found.2 {
                found = self.knapsack(&pi, left, KNAPSACK_BUDGET);
            }
            let (value, p, exact) = found;
            if value <= 1.0 + 1e-7 {
                break;
            }
            // Farley's bound: no packing beats the LP so far divided by the best pattern's
            // worth. Once it rounds up to the same node count, more patterns cannot change
            // what rounding reaches, only tighten a bound nobody reads.
            let z = sol.objective();
            if exact && (z / value - 1e-6).ceil() >= (z - 1e-6).ceil() {
                break;
            }
            let r = row(&p);
            patterns.push(p);
            sol = match sol.add_constraint(r, ComparisonOp::Le, 1.0).ok()? {
                SolveOutcome::Solution(s) => s,
                SolveOutcome::Interrupted(_) => return None,
            };
        }
        let mut primal = Problem::new(OptimizationDirection::Minimize);
        let x: Vec<microlp::Variable> = patterns
            .iter()
            .map(|_| primal.add_var(1.0, (0.0, f64::INFINITY)))
            .collect();
        for &k in &active {
            let terms: Vec<(microlp::Variable, f64)> = patterns
                .iter()
                .zip(&x)
                .map(|(p, &v)| (v, f64::from(capped(p)[k])))
                .filter(|t| t.1 > 0.0)
                .collect();
            primal.add_constraint(terms, ComparisonOp::Ge, f64::from(left[k]));
        }
        let sol = match primal.solve().ok()? {
            SolveOutcome::Solution(s) => s,
            SolveOutcome::Interrupted(_) => return None,
        };
        Some(x.iter().map(|&v| sol.var_value(v)).collect())
    }

    /// The node filling worth most at prices `pi`, and whether the search finished (so the
    /// worth is the true maximum). Depth-first over replicas added one kind at a time, pruned
    /// by the fractional knapsack bound of each resource taken alone.
    fn knapsack(&self, pi: &[f64], left: &[u32], budget: u32) -> (f64, Pattern, bool) {
        let mut order: Vec<usize> = (0..self.kinds.len())
            .filter(|&k| left[k] > 0 && pi[k] > EPS)
            .collect();
        let density = |k: usize| pi[k] / self.cap.dominant(&self.kinds[k]).max(EPS);
        order.sort_by(|&a, &b| density(b).total_cmp(&density(a)).then(a.cmp(&b)));
        let size: Vec<[f64; 3]> = order
            .iter()
            .map(|&k| {
                let it = &self.kinds[k];
                [f64::from(it.units), it.cpu, it.mem]
            })
            .collect();
        // Worth per unit of each resource, at each position of `order`.
        let per_unit: Vec<[f64; 3]> = (0..order.len())
            .map(|i| {
                std::array::from_fn(|d| {
                    if size[i][d] <= EPS {
                        f64::INFINITY
                    } else {
                        pi[order[i]] / size[i][d]
                    }
                })
            })
            .collect();
        // For each resource, positions in `order` by worth per unit of it, best first.
        let by_dim: [Vec<usize>; 3] = std::array::from_fn(|d| {
            let mut v: Vec<usize> = (0..order.len()).collect();
            v.sort_by(|&a, &b| per_unit[b][d].total_cmp(&per_unit[a][d]).then(a.cmp(&b)));
            v
        });
        let mut rate = vec![[0.0f64; 3]; order.len() + 1];
        for i in (0..order.len()).rev() {
            rate[i] = std::array::from_fn(|d| per_unit[i][d].max(rate[i + 1][d]));
        }
        let mut s = Search {
            pi,
            left,
            order: &order,
            size: &size,
            by_dim: &by_dim,
            rate: &rate,
            cur: vec![0; self.kinds.len()],
            best: (0.0, vec![0; self.kinds.len()]),
            budget,
        };
        s.dfs(
            0,
            [f64::from(self.cap.units), self.cap.cpu, self.cap.mem],
            0.0,
        );
        debug_assert!(self.fits(&s.best.1));
        let exact = s.budget > 0;
        (s.best.0, s.best.1, exact)
    }
}

struct Search<'a> {
    pi: &'a [f64],
    left: &'a [u32],
    /// Kinds worth pricing, densest first.
    order: &'a [usize],
    /// GPU units, vCPUs and RAM of the kind at each position of `order`.
    size: &'a [[f64; 3]],
    by_dim: &'a [Vec<usize>; 3],
    /// The best worth per unit of each resource among the kinds from each position on.
    rate: &'a [[f64; 3]],
    cur: Pattern,
    best: (f64, Pattern),
    budget: u32,
}

impl Search<'_> {
    /// What the kinds from position `from` on could still add to a node with `room` left,
    /// as an upper bound: the smallest over resources of that resource's fractional knapsack.
    fn bound(&self, from: usize, room: [f64; 3]) -> f64 {
        let mut best = f64::INFINITY;
        for (d, (order, room)) in self.by_dim.iter().zip(room).enumerate() {
            let (mut cap, mut worth) = (room.max(0.0), 0.0);
            for &i in order {
                if i < from {
                    continue;
                }
                let k = self.order[i];
                let avail = f64::from(self.left[k] - self.cur[k]);
                if self.size[i][d] <= EPS {
                    worth += avail * self.pi[k];
                    continue;
                }
                let take = avail.min(cap / self.size[i][d]);
                worth += take * self.pi[k];
                cap -= take * self.size[i][d];
                if cap <= EPS {
                    break;
                }
            }
            best = best.min(worth);
        }
        best
    }

    /// Kinds are added at non-decreasing positions, so each filling is seen once.
    fn dfs(&mut self, from: usize, room: [f64; 3], value: f64) {
        if self.budget == 0 {
            return;
        }
        self.budget -= 1;
        if value > self.best.0 + 1e-12 {
            self.best = (value, self.cur.clone());
        }
        if value + self.bound(from, room) <= self.best.0 + 1e-12 {
            return;
        }
        for i in from..self.order.len() {
            // A cheaper bound per position: the best worth per unit of each resource among
            // the kinds left. It only falls as positions advance, so the loop can stop.
            let r = self.rate[i];
            if value
                + (0..3)
                    .map(|d| room[d].max(0.0) * r[d])
                    .fold(f64::INFINITY, f64::min)
                <= self.best.0 + 1e-12
            {
                break;
            }
            let k = self.order[i];
            let s = self.size[i];
            if self.cur[k] >= self.left[k] || (0..3).any(|d| s[d] > room[d] + EPS) {
                continue;
            }
            self.cur[k] += 1;
            self.dfs(
                i,
                [room[0] - s[0], room[1] - s[1], room[2] - s[2]],
                value + self.pi[k],
            );
            self.cur[k] -= 1;
        }
    }
}

/// Nodes for `groups` by column generation, with the GPU units left unused on them; `None`
/// when the method does not apply (too many kinds, a replica larger than a node, or an LP the
/// solver gives up on).
pub(super) fn pack(groups: &[(Item, u32)], cap: NodeCap) -> Option<(u32, u32)> {
    let live: Vec<&(Item, u32)> = groups.iter().filter(|g| g.1 > 0).collect();
    if live.is_empty() {
        return Some((0, 0));
    }
    if live.len() > MAX_KINDS {
        return None;
    }
    let kinds: Vec<Item> = live.iter().map(|g| g.0).collect();
    let left: Vec<u32> = live.iter().map(|g| g.1).collect();
    let units: u32 = live.iter().map(|g| g.0.units * g.1).sum();
    let nodes = Packer { kinds: &kinds, cap }.pack(left)?;
    Some((nodes, (nodes * cap.units).saturating_sub(units)))
}

#[cfg(test)]
mod tests {
    use super::super::{dot_product, first_fit_decreasing, patterns};
    use super::*;
    use proptest::prelude::*;

    fn item(units: u32, cpu: f64, mem: f64) -> Item {
        Item { units, cpu, mem }
    }

    /// The fewest nodes that hold `items`, by trying every placement (small inputs only).
    fn exhaustive(items: &[Item], cap: NodeCap) -> u32 {
        fn place(
            items: &[Item],
            i: usize,
            bins: &mut Vec<(u32, f64, f64)>,
            cap: NodeCap,
            best: &mut u32,
        ) {
            if bins.len() as u32 >= *best {
                return;
            }
            let Some(it) = items.get(i) else {
                *best = bins.len() as u32;
                return;
            };
            for b in 0..bins.len() {
                let (u, c, m) = bins[b];
                if u + it.units <= cap.units
                    && c + it.cpu <= cap.cpu + EPS
                    && m + it.mem <= cap.mem + EPS
                {
                    bins[b] = (u + it.units, c + it.cpu, m + it.mem);
                    place(items, i + 1, bins, cap, best);
                    bins[b] = (u, c, m);
                }
            }
            bins.push((it.units, it.cpu, it.mem));
            place(items, i + 1, bins, cap, best);
            bins.pop();
        }
        let mut best = items.len() as u32;
        place(items, 0, &mut Vec::new(), cap, &mut best);
        best
    }

    #[test]
    fn finds_the_packing_the_greedy_fills_miss() {
        // 4 GPUs, 48 vCPUs, 192 GiB a node. Four nodes hold it: [C,A] [C,B,B] [C,B,B] [C,C];
        // every greedy fill pairs the two-GPU replicas first and needs five.
        let cap = NodeCap {
            units: 4,
            cpu: 48.0,
            mem: 192.0,
        };
        let g = [
            (item(1, 4.0, 101.0), 1),
            (item(1, 4.0, 50.0), 4),
            (item(2, 18.0, 81.0), 5),
        ];
        assert_eq!(first_fit_decreasing(&g, cap).0, 5);
        assert_eq!(dot_product(&g, cap).0, 5);
        assert_eq!(patterns(&g, cap).0, 5);
        assert_eq!(pack(&g, cap), Some((4, 1)));
        let items: Vec<Item> = g
            .iter()
            .flat_map(|(i, n)| std::iter::repeat_n(*i, *n as usize))
            .collect();
        assert_eq!(exhaustive(&items, cap), 4);
    }

    #[test]
    fn a_replica_larger_than_a_node_is_left_to_the_caller() {
        let cap = NodeCap {
            units: 4,
            cpu: 48.0,
            mem: 192.0,
        };
        assert_eq!(pack(&[(item(1, 64.0, 1.0), 2)], cap), None);
        assert_eq!(pack(&[(item(1, 1.0, 1.0), 0)], cap), Some((0, 0)));
    }

    proptest! {
        /// Column generation never reports fewer nodes than the true optimum, and every GPU
        /// unit is accounted for.
        #[test]
        fn never_beats_the_exhaustive_optimum(
            raw in proptest::collection::vec((1u32..=3, 1.0f64..40.0, 1.0f64..150.0, 1u32..4), 1..4)
        ) {
            let cap = NodeCap { units: 4, cpu: 48.0, mem: 192.0 };
            let groups: Vec<(Item, u32)> = raw.iter().map(|&(u, c, m, n)| (item(u, c, m), n)).collect();
            let items: Vec<Item> = groups.iter().flat_map(|(i, n)| std::iter::repeat_n(*i, *n as usize)).collect();
            prop_assume!(items.len() <= 8);
            let opt = exhaustive(&items, cap);
            let (n, free) = pack(&groups, cap).expect("every replica fits a node");
            prop_assert!(n >= opt, "{n} nodes, below the optimum {opt}");
            let units: u32 = items.iter().map(|i| i.units).sum();
            prop_assert_eq!(n * cap.units - free, units);
        }
    }
}
