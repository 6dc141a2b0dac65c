//! Optimal MIG packing: the fewest GPUs whose layouts hold a demand of MIG instances.
//!
//! Every GPU carries a layout that [`super::place`] accepts. Any subset of a placeable layout
//! is placeable, so an optimal packing can be built from *maximal* layouts (no further
//! demanded instance fits) and trimmed afterwards. The search branches on the GPU that holds
//! one instance of the hardest remaining profile (every solution has such a GPU), prunes with
//! a lower bound, and remembers states already shown to need more GPUs than the best found.
//! When the lower bound is met the answer is proven optimal; a search budget keeps the time
//! bounded, and a packing that ran out of budget says so instead of claiming optimality.

use std::collections::HashMap;

use indexmap::IndexMap;

use super::{place, LayoutError};
use crate::catalog::MigSpec;

/// The result of packing a demand onto GPUs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Packing {
    /// One layout per GPU (profile -> count), trimmed to the demand, largest first.
    pub gpus: Vec<IndexMap<String, u32>>,
    /// No packing can use fewer GPUs than this.
    pub lower_bound: u32,
    /// The search finished: `gpus.len()` is the minimum.
    pub optimal: bool,
}

impl Packing {
    /// Compute and memory slices left unused on the GPUs of this packing.
    pub(crate) fn stranded(&self, spec: &MigSpec) -> (u32, u32) {
        let mut compute = 0u32;
        let mut memory = 0u32;
        for layout in &self.gpus {
            let (c, m) = layout.iter().fold((0u32, 0u32), |(c, m), (name, n)| {
                let p = spec.profile(name).map_or((0, 0), |p| {
                    (u32::from(p.compute) * n, u32::from(p.memory_slices) * n)
                });
                (c + p.0, m + p.1)
            });
            compute += u32::from(spec.compute_slices).saturating_sub(c);
            memory += u32::from(spec.memory_slices).saturating_sub(m);
        }
        (compute, memory)
    }
}

/// Search nodes allowed before the best packing found is returned unproven.
pub(crate) const DEFAULT_BUDGET: u64 = 200_000;

/// Pack `demand` (profile -> instances) onto as few GPUs as possible.
pub(crate) fn pack(spec: &MigSpec, demand: &IndexMap<String, u32>) -> Result<Packing, LayoutError> {
    pack_with_budget(spec, demand, DEFAULT_BUDGET)
}

pub(crate) fn pack_with_budget(
    spec: &MigSpec,
    demand: &IndexMap<String, u32>,
    budget: u64,
) -> Result<Packing, LayoutError> {
    let types: Vec<&str> = demand
        .iter()
        .filter(|(_, &n)| n > 0)
        .map(|(k, _)| k.as_str())
        .collect();
    for t in &types {
        // A profile that cannot stand alone on a GPU can never be packed.
        place(spec, &IndexMap::from([((*t).to_owned(), 1)]))?;
    }
    let need: Vec<u32> = types.iter().map(|t| demand[*t]).collect();
    if types.is_empty() {
        return Ok(Packing {
            gpus: Vec::new(),
            lower_bound: 0,
            optimal: true,
        });
    }
    let patterns = maximal_layouts(spec, &types);
    let weights: Vec<(u32, u32)> = types
        .iter()
        .map(|t| {
            spec.profile(t).map_or((1, 1), |p| {
                (u32::from(p.compute), u32::from(p.memory_slices))
            })
        })
        .collect();
    let mut s = Search {
        patterns: &patterns,
        weights: &weights,
        caps: (
            u32::from(spec.compute_slices),
            u32::from(spec.memory_slices),
        ),
        alone: types
            .iter()
            .map(|t| spec.profile(t).is_some_and(|p| p.starts == [0]))
            .collect(),
        best: greedy(&patterns, &need),
        failed: HashMap::new(),
        nodes: 0,
        budget,
    };
    let lower_bound = s.bound(&need);
    let mut chosen = Vec::new();
    let finished = if (s.best.len() as u32) <= lower_bound {
        true
    } else {
        s.dfs(&need, &mut chosen);
        s.nodes <= s.budget
    };
    let optimal = finished || s.best.len() as u32 == lower_bound;
    let gpus = trim(&types, &patterns, &s.best, &need);
    Ok(Packing {
        gpus,
        lower_bound,
        optimal,
    })
}

/// Every layout of the given profiles that is placeable and to which no further instance of
/// them can be added. Counts per profile are bounded by the profile's maximum.
pub(crate) fn maximal_layouts(spec: &MigSpec, types: &[&str]) -> Vec<Vec<u32>> {
    let maxes: Vec<u32> = types
        .iter()
        .map(|t| spec.profile(t).map_or(0, |p| u32::from(p.max_count)))
        .collect();
    let fits = |counts: &[u32]| {
        let layout: IndexMap<String, u32> = types
            .iter()
            .zip(counts)
            .filter(|(_, &n)| n > 0)
            .map(|(t, &n)| ((*t).to_owned(), n))
            .collect();
        place(spec, &layout).is_ok()
    };
    let mut all = Vec::new();
    let mut counts = vec![0u32; types.len()];
    enumerate(0, &maxes, &mut counts, &fits, &mut all);
    let mut maximal: Vec<Vec<u32>> = all
        .iter()
        .filter(|c| {
            (0..types.len()).all(|i| {
                let mut more = (*c).clone();
                more[i] += 1;
                more[i] > maxes[i] || !fits(&more)
            })
        })
        .cloned()
        .collect();
    maximal.retain(|c| c.iter().any(|&n| n > 0));
    maximal.sort();
    maximal.dedup();
    maximal
}

fn enumerate(
    i: usize,
    maxes: &[u32],
    counts: &mut Vec<u32>,
    fits: &dyn Fn(&[u32]) -> bool,
    out: &mut Vec<Vec<u32>>,
) {
    if i == maxes.len() {
        out.push(counts.clone());
        return;
    }
    for n in 0..=maxes[i] {
        counts[i] = n;
        // Fewer instances of this profile never fit worse: stop at the first misfit.
        if n > 0 && !fits(counts) {
            break;
        }
        enumerate(i + 1, maxes, counts, fits, out);
    }
    counts[i] = 0;
}

struct Search<'a> {
    patterns: &'a [Vec<u32>],
    weights: &'a [(u32, u32)],
    caps: (u32, u32),
    /// Profiles that only start at slice 0: two of them never share a GPU.
    alone: Vec<bool>,
    best: Vec<usize>,
    /// Remaining demand -> GPUs known not to be enough for it.
    failed: HashMap<Vec<u32>, u32>,
    nodes: u64,
    budget: u64,
}

impl Search<'_> {
    /// GPUs any packing of `need` uses at least: compute and memory slices, the most
    /// instances of each profile one GPU holds, and profiles that each need slice 0.
    fn bound(&self, need: &[u32]) -> u32 {
        let (mut c, mut m, mut alone) = (0u32, 0u32, 0u32);
        let mut per_type = 0u32;
        for (i, &n) in need.iter().enumerate() {
            c += self.weights[i].0 * n;
            m += self.weights[i].1 * n;
            if self.alone[i] {
                alone += n;
            }
            let most = self.patterns.iter().map(|p| p[i]).max().unwrap_or(0);
            if n > 0 && most > 0 {
                per_type = per_type.max(n.div_ceil(most));
            }
        }
        c.div_ceil(self.caps.0)
            .max(m.div_ceil(self.caps.1))
            .max(alone)
            .max(per_type)
    }

    fn dfs(&mut self, need: &[u32], chosen: &mut Vec<usize>) {
        self.nodes += 1;
        if self.nodes > self.budget {
            return;
        }
        if need.iter().all(|&n| n == 0) {
            if chosen.len() < self.best.len() {
                self.best = chosen.clone();
            }
            return;
        }
        let used = chosen.len() as u32;
        let best = self.best.len() as u32;
        let lb = self.bound(need);
        if used + lb >= best {
            return;
        }
        // GPUs left for this state before it cannot improve on the best.
        let allowance = best - 1 - used;
        if self.failed.get(need).is_some_and(|&f| allowance <= f) {
            return;
        }
        // The remaining profile with the most memory per instance is the hardest to place.
        let hardest = (0..need.len())
            .filter(|&i| need[i] > 0)
            .max_by_key(|&i| (self.weights[i].1, self.weights[i].0, std::cmp::Reverse(i)))
            .unwrap_or(0);
        let mut options: Vec<(usize, Vec<u32>)> = self
            .patterns
            .iter()
            .enumerate()
            .filter(|(_, p)| p[hardest] > 0)
            .map(|(k, p)| {
                let rest: Vec<u32> = need
                    .iter()
                    .zip(p)
                    .map(|(&n, &x)| n.saturating_sub(x))
                    .collect();
                (k, rest)
            })
            .collect();
        // A pattern whose leftover demand is a superset of another's is never better.
        options.sort_by(|a, b| a.1.cmp(&b.1));
        options.dedup_by(|a, b| a.1 == b.1);
        let snapshot = options.clone();
        options.retain(|(_, rest)| {
            !snapshot
                .iter()
                .any(|(_, other)| other != rest && other.iter().zip(rest).all(|(o, r)| o <= r))
        });
        options.sort_by_key(|(_, rest)| self.bound(rest));
        for (k, rest) in options {
            chosen.push(k);
            self.dfs(&rest, chosen);
            chosen.pop();
            if self.nodes > self.budget {
                return;
            }
        }
        if (self.best.len() as u32) > used + lb {
            let entry = self.failed.entry(need.to_vec()).or_insert(0);
            *entry = (*entry).max(allowance.min(self.best.len() as u32 - 1 - used));
        }
    }
}

/// First fit decreasing over the maximal layouts: a starting upper bound.
fn greedy(patterns: &[Vec<u32>], need: &[u32]) -> Vec<usize> {
    let mut rest = need.to_vec();
    let mut out = Vec::new();
    while rest.iter().any(|&n| n > 0) {
        let Some((k, _)) = patterns
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let covered: u32 = p.iter().zip(&rest).map(|(&x, &n)| x.min(n)).sum();
                (k, covered)
            })
            .max_by_key(|&(k, c)| (c, std::cmp::Reverse(k)))
        else {
            break;
        };
        for (n, &x) in rest.iter_mut().zip(&patterns[k]) {
            *n = n.saturating_sub(x);
        }
        out.push(k);
    }
    out
}

/// Turn chosen patterns into per-GPU layouts holding exactly the demand.
fn trim(
    types: &[&str],
    patterns: &[Vec<u32>],
    chosen: &[usize],
    need: &[u32],
) -> Vec<IndexMap<String, u32>> {
    let mut rest = need.to_vec();
    let mut gpus: Vec<Vec<u32>> = chosen.iter().map(|&k| patterns[k].clone()).collect();
    for g in &mut gpus {
        for (i, x) in g.iter_mut().enumerate() {
            *x = (*x).min(rest[i]);
            rest[i] -= *x;
        }
    }
    gpus.sort_by(|a, b| b.cmp(a));
    gpus.into_iter()
        .filter(|g| g.iter().any(|&n| n > 0))
        .map(|g| {
            types
                .iter()
                .zip(g)
                .filter(|(_, n)| *n > 0)
                .map(|(t, n)| ((*t).to_owned(), n))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use proptest::prelude::*;

    fn spec(gpu: &str) -> MigSpec {
        static CATALOG: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
        let c = CATALOG.get_or_init(|| Catalog::embedded(&[]).expect("embedded catalog loads"));
        c.gpu(gpu).and_then(|g| g.mig.clone()).expect("MIG GPU")
    }

    fn demand(items: &[(&str, u32)]) -> IndexMap<String, u32> {
        items.iter().map(|(p, n)| ((*p).to_owned(), *n)).collect()
    }

    /// The minimum by exhaustive dynamic programming over every remaining-demand vector.
    fn exhaustive(spec: &MigSpec, d: &IndexMap<String, u32>) -> u32 {
        let types: Vec<&str> = d.keys().map(String::as_str).collect();
        let need: Vec<u32> = d.values().copied().collect();
        let patterns = maximal_layouts(spec, &types);
        fn go(need: &[u32], patterns: &[Vec<u32>], memo: &mut HashMap<Vec<u32>, u32>) -> u32 {
            if need.iter().all(|&n| n == 0) {
                return 0;
            }
            if let Some(&v) = memo.get(need) {
                return v;
            }
            let v = patterns
                .iter()
                .map(|p| {
                    let rest: Vec<u32> = need
                        .iter()
                        .zip(p)
                        .map(|(&n, &x)| n.saturating_sub(x))
                        .collect();
                    if rest == need {
                        u32::MAX
                    } else {
                        go(&rest, patterns, memo).saturating_add(1)
                    }
                })
                .min()
                .unwrap_or(u32::MAX);
            memo.insert(need.to_vec(), v);
            v
        }
        go(&need, &patterns, &mut HashMap::new())
    }

    fn assert_valid(spec: &MigSpec, d: &IndexMap<String, u32>, p: &Packing) {
        let mut got: IndexMap<String, u32> = IndexMap::new();
        for layout in &p.gpus {
            assert!(place(spec, layout).is_ok(), "{layout:?} is not placeable");
            for (k, n) in layout {
                *got.entry(k.clone()).or_default() += n;
            }
        }
        for (k, n) in d {
            assert_eq!(got.get(k).copied().unwrap_or(0), *n, "demand of {k}");
        }
    }

    #[test]
    fn a_mix_first_fit_decreasing_gets_wrong() {
        // Largest first puts 3g+3g on one GPU (all 8 memory slices) and leaves the 2g and
        // 1g instances to share the others badly; the optimum pairs each 3g with a 2g + 1g.
        let s = spec("A100-80GB");
        let d = demand(&[("3g.40gb", 2), ("2g.20gb", 2), ("1g.10gb", 4)]);
        let p = pack(&s, &d).expect("packs");
        assert_valid(&s, &d, &p);
        assert_eq!(p.gpus.len() as u32, exhaustive(&s, &d));
        assert!(p.optimal);
        assert_eq!(p.gpus.len(), 2);
        assert_eq!(ffd(&s, &d), 3);
    }

    /// Instance-by-instance first fit decreasing (largest memory first), the usual heuristic.
    pub(super) fn ffd(spec: &MigSpec, d: &IndexMap<String, u32>) -> usize {
        let mut items: Vec<&str> = Vec::new();
        for (k, &n) in d {
            items.extend(std::iter::repeat_n(k.as_str(), n as usize));
        }
        items.sort_by_key(|k| {
            let p = spec.profile(k).expect("profile");
            std::cmp::Reverse((p.memory_slices, p.compute))
        });
        let mut gpus: Vec<IndexMap<String, u32>> = Vec::new();
        for it in items {
            let slot = gpus.iter_mut().find(|g| {
                let mut t = (*g).clone();
                *t.entry(it.to_owned()).or_default() += 1;
                place(spec, &t).is_ok()
            });
            match slot {
                Some(g) => *g.entry(it.to_owned()).or_default() += 1,
                None => gpus.push(IndexMap::from([(it.to_owned(), 1)])),
            }
        }
        gpus.len()
    }

    #[test]
    fn a100_maximal_layouts_match_the_enumeration() {
        // Without +me and the double-memory 1g: 12 maximal layouts (reference §1.4).
        let s = spec("A100-80GB");
        let l = maximal_layouts(&s, &["1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]);
        assert_eq!(l.len(), 12, "{l:?}");
    }

    #[test]
    fn hundreds_of_replicas_are_packed_optimally() {
        let s = spec("H100-80GB");
        let d = demand(&[
            ("1g.10gb", 140),
            ("2g.20gb", 90),
            ("3g.40gb", 70),
            ("4g.40gb", 30),
        ]);
        let p = pack(&s, &d).expect("packs");
        assert_valid(&s, &d, &p);
        assert!(p.optimal, "{} GPUs, bound {}", p.gpus.len(), p.lower_bound);
    }

    #[test]
    fn unknown_profile_is_an_error() {
        let s = spec("A100-80GB");
        assert!(pack(&s, &demand(&[("3g.20gb", 1)])).is_err());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn packing_is_minimal_and_valid(
            counts in proptest::collection::vec(0u32..6, 4),
            gpu in 0usize..3,
        ) {
            let name = ["A100-80GB", "A30", "H100-94GB"][gpu];
            let s = spec(name);
            let usable: Vec<&str> = s.profiles.iter()
                .filter(|p| !p.name.contains("+me"))
                .map(|p| p.name.as_str())
                .collect();
            let d: IndexMap<String, u32> = usable.iter().zip(&counts)
                .filter(|(_, &n)| n > 0)
                .map(|(k, &n)| ((*k).to_owned(), n))
                .collect();
            let p = pack(&s, &d).expect("packs");
            assert_valid(&s, &d, &p);
            prop_assert!(p.optimal);
            prop_assert_eq!(p.gpus.len() as u32, exhaustive(&s, &d));
            prop_assert!(p.lower_bound <= p.gpus.len() as u32);
            prop_assert!(p.gpus.len() <= ffd(&s, &d));
        }
    }
}
