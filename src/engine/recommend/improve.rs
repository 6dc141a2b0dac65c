//! Choosing every workload's SKU on its own misses what pools gain from mixing: replicas
//! that need many vCPUs per GPU strand GPUs that CPU-light replicas could fill. This pass
//! moves one workload at a time to the candidate and capacity type that lowers the fleet's
//! fluid cost most, until no move helps.
//!
//! The fluid cost of a pool is its node-hour price times the node-hours of whichever of GPU,
//! vCPU and RAM its workloads use most (a perfect packing, which is what the LP relaxation
//! assumes), plus half a node for the rounding every pool pays on average. Reservations keep
//! their per-workload estimate.

use std::collections::HashMap;

use super::candidate::{allocatable, Candidate, Fit, Rate};
use super::choice::{estimate, pool_key};
use super::demand::Demand;
use super::PoolKey;
use crate::catalog::Catalog;

/// One workload's options: (candidate index, rate) pairs, and which one it holds.
pub(super) struct Options<'a, 'c> {
    pub d: &'a Demand<'a>,
    pub all: &'a [Candidate<'c>],
    pub options: Vec<(usize, Rate)>,
    pub pick: usize,
}

impl<'a, 'c> Options<'a, 'c> {
    /// Every candidate with every capacity type open to the workload, holding `start`.
    pub(super) fn new(d: &'a Demand<'a>, all: &'a [Candidate<'c>], start: &(usize, Rate)) -> Self {
        let options: Vec<(usize, Rate)> = all
            .iter()
            .enumerate()
            .flat_map(|(i, c)| c.rates(d).into_iter().map(move |r| (i, r)))
            .collect();
        let pick = options
            .iter()
            .position(|(i, r)| *i == start.0 && r.capacity == start.1.capacity)
            .unwrap_or(0);
        Options {
            d,
            all,
            options,
            pick,
        }
    }
}

/// What a pool is taken to cost while searching.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Objective {
    /// A perfect packing of GPU, vCPU and RAM shares (what the LP relaxation assumes).
    Fluid,
    /// The same, with each workload's shares scaled up to the whole replicas a node holds
    /// (`candidate::node_share`): closer to what packing achieves when replicas tile badly.
    Whole,
}

/// Node-hours one workload asks of a pool, per resource, as shares of one node.
fn usage(
    d: &Demand<'_>,
    c: &Candidate<'_>,
    r: &Rate,
    catalog: &Catalog,
    hours: f64,
    objective: Objective,
) -> [f64; 3] {
    let (cpu_alloc, mem_alloc) = allocatable(c.sku, catalog);
    let per_node = f64::from(c.sku.gpu_count.max(1));
    let rh = d.replica_hours(hours) * r.waste;
    if d.gang > 1 {
        let n = rh * f64::from(d.gang);
        return [n, n, n];
    }
    let gpu = match &c.fit {
        Fit::Whole { gpus } => f64::from(*gpus),
        Fit::Shared { replicas, .. } => 1.0 / f64::from((*replicas).max(1)),
        Fit::Server { share } => *share,
        Fit::Mig { profile } => c.gpu.mig.as_ref().map_or(1.0, |s| {
            (f64::from(profile.compute) / f64::from(s.compute_slices))
                .max(f64::from(profile.memory_slices) / f64::from(s.memory_slices))
        }),
    };
    let share = |need: f64, cap: f64| if cap > 0.0 { need / cap } else { 0.0 };
    let v = [
        gpu / per_node,
        share(d.cpu, cpu_alloc),
        share(d.memory_gib, mem_alloc),
    ];
    // Alone, a pool of these replicas needs whole replicas per node (`node_share`); scale the
    // fluid shares up to that, keeping their proportions for what mixing can recover.
    let fluid = v.iter().copied().fold(0.0, f64::max);
    let scale = if fluid > 0.0 && objective == Objective::Whole {
        (c.node_share / fluid).max(1.0)
    } else {
        1.0
    };
    v.map(|x| rh * x * scale)
}

#[derive(Default, Clone, Copy)]
struct Pool {
    sum: [f64; 3],
    members: u32,
    usd: f64,
}

impl Pool {
    fn cost(&self, hours: f64) -> f64 {
        if self.members == 0 {
            return 0.0;
        }
        let node_hours = self.sum.iter().copied().fold(0.0, f64::max);
        self.usd * (node_hours + 0.5 * hours)
    }
}

type Key = PoolKey;

fn key(o: &Options<'_, '_>, k: usize) -> Key {
    let (ci, r) = &o.options[k];
    pool_key(o.d, &o.all[*ci], r.capacity)
}

fn reserved(r: &Rate) -> bool {
    r.capacity.is_reserved()
}

/// One option as the search weighs it: its pool (an index into the pools), whether it is a
/// reservation, its fixed monthly estimate if so, else its node-hour usage and rate.
struct Weighed {
    pool: usize,
    reserved: bool,
    estimate: f64,
    usage: [f64; 3],
    usd: f64,
}

/// Improve the picks in place; returns how many moves were made.
///
/// Every option's pool key and usage are worked out once before the sweeps: a sweep visits
/// every option of every workload, and building keys there (two strings cloned and hashed
/// per option) made the search cost grow with the estate times its sweeps.
pub(super) fn improve(
    opts: &mut [Options<'_, '_>],
    catalog: &Catalog,
    hours: f64,
    objective: Objective,
) -> u32 {
    let mut ids: HashMap<Key, usize> = HashMap::new();
    let weighed: Vec<Vec<Weighed>> = opts
        .iter()
        .map(|o| {
            (0..o.options.len())
                .map(|k| {
                    let (ci, r) = &o.options[k];
                    let c = &o.all[*ci];
                    let next = ids.len();
                    let pool = *ids.entry(key(o, k)).or_insert(next);
                    let reserved = reserved(r);
                    Weighed {
                        pool,
                        reserved,
                        estimate: if reserved {
                            estimate(o.d, c, r, hours)
                        } else {
                            0.0
                        },
                        usage: if reserved {
                            [0.0; 3]
                        } else {
                            usage(o.d, c, r, catalog, hours, objective)
                        },
                        usd: r.usd,
                    }
                })
                .collect()
        })
        .collect();
    let mut pools: Vec<Pool> = vec![Pool::default(); ids.len()];
    let add = |pools: &mut [Pool], w: &Weighed, sign: f64| {
        if w.reserved {
            return;
        }
        let p = &mut pools[w.pool];
        p.usd = w.usd;
        for (s, x) in p.sum.iter_mut().zip(w.usage) {
            *s += sign * x;
        }
        if sign > 0.0 {
            p.members += 1;
        } else {
            p.members -= 1;
        }
    };
    for (o, w) in opts.iter().zip(&weighed) {
        add(&mut pools, &w[o.pick], 1.0);
    }
    let mut moves = 0;
    // Each sweep strictly lowers a bounded cost; the cap keeps a pathological plan bounded.
    for _ in 0..20 {
        let mut moved = false;
        for (o, w) in opts.iter_mut().zip(&weighed) {
            let cur = o.pick;
            let here = &w[cur];
            // Cost of the workload's current pool with and without it.
            let (base_here, without_here) = if here.reserved {
                (here.estimate, 0.0)
            } else {
                let p = pools[here.pool];
                let mut q = p;
                for (s, x) in q.sum.iter_mut().zip(here.usage) {
                    *s -= x;
                }
                q.members -= 1;
                (p.cost(hours), q.cost(hours))
            };
            let mut best = (0.0, cur);
            for (k, there) in w.iter().enumerate() {
                if k == cur {
                    continue;
                }
                let delta = if there.reserved {
                    there.estimate - (base_here - without_here)
                } else {
                    if there.pool == here.pool {
                        continue;
                    }
                    // An empty pool costs nothing whatever its rate, so it needs no rate here.
                    let p = pools[there.pool];
                    let mut q = p;
                    q.usd = there.usd;
                    for (s, x) in q.sum.iter_mut().zip(there.usage) {
                        *s += x;
                    }
                    q.members += 1;
                    (q.cost(hours) - p.cost(hours)) - (base_here - without_here)
                };
                // Only a move that saves more than a cent counts, so the search ends.
                if delta < best.0 - 0.01 {
                    best = (delta, k);
                }
            }
            if best.1 != cur {
                add(&mut pools, &w[cur], -1.0);
                add(&mut pools, &w[best.1], 1.0);
                o.pick = best.1;
                moves += 1;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    moves
}
