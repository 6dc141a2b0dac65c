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
use super::demand::Demand;
use super::{estimate, fit_key, pool_sharing, PoolKey};
use crate::catalog::Catalog;
use crate::plan::raw::{Capacity, MigManager};

/// One workload's options: (candidate index, rate) pairs, and which one it holds.
pub struct Options<'a, 'c> {
    pub d: &'a Demand<'a>,
    pub all: &'a [Candidate<'c>],
    pub options: Vec<(usize, Rate)>,
    pub pick: usize,
}

impl<'a, 'c> Options<'a, 'c> {
    /// Every candidate with every capacity type open to the workload, holding `start`.
    pub fn new(d: &'a Demand<'a>, all: &'a [Candidate<'c>], start: &(usize, Rate)) -> Self {
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
pub enum Objective {
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
        Fit::Shared { replicas } => 1.0 / f64::from((*replicas).max(1)),
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

fn key(o: &Options<'_, '_>, k: usize, mm: MigManager) -> Key {
    let (ci, r) = &o.options[k];
    let c = &o.all[*ci];
    (
        o.d.segment,
        c.sku.name.clone(),
        c.region.clone(),
        r.capacity,
        pool_sharing(&c.fit),
        fit_key(&c.fit, mm),
    )
}

fn reserved(r: &Rate) -> bool {
    matches!(r.capacity, Capacity::Reserved1y | Capacity::Reserved3y)
}

/// Improve the picks in place; returns how many moves were made.
pub fn improve(
    opts: &mut [Options<'_, '_>],
    catalog: &Catalog,
    hours: f64,
    mm: MigManager,
    objective: Objective,
) -> u32 {
    let mut pools: HashMap<Key, Pool> = HashMap::new();
    let mut fixed = 0.0;
    let add = |pools: &mut HashMap<Key, Pool>,
               fixed: &mut f64,
               o: &Options<'_, '_>,
               k: usize,
               sign: f64| {
        let (ci, r) = &o.options[k];
        let c = &o.all[*ci];
        if reserved(r) {
            *fixed += sign * estimate(o.d, c, r, hours);
            return;
        }
        let u = usage(o.d, c, r, catalog, hours, objective);
        let p = pools.entry(key(o, k, mm)).or_default();
        p.usd = r.usd;
        for (s, x) in p.sum.iter_mut().zip(u) {
            *s += sign * x;
        }
        if sign > 0.0 {
            p.members += 1;
        } else {
            p.members -= 1;
        }
    };
    for o in opts.iter() {
        add(&mut pools, &mut fixed, o, o.pick, 1.0);
    }
    let mut moves = 0;
    // Each sweep strictly lowers a bounded cost; the cap keeps a pathological plan bounded.
    for _ in 0..20 {
        let mut moved = false;
        for o in opts.iter_mut() {
            let cur = o.pick;
            let cur_key = key(o, cur, mm);
            let cur_reserved = reserved(&o.options[cur].1);
            // Cost of the workload's current pool with and without it.
            let (base_here, without_here) = if cur_reserved {
                let (ci, r) = &o.options[cur];
                (estimate(o.d, &o.all[*ci], r, hours), 0.0)
            } else {
                let p = pools.get(&cur_key).copied().unwrap_or_default();
                let mut q = p;
                let u = usage(
                    o.d,
                    &o.all[o.options[cur].0],
                    &o.options[cur].1,
                    catalog,
                    hours,
                    objective,
                );
                for (s, x) in q.sum.iter_mut().zip(u) {
                    *s -= x;
                }
                q.members -= 1;
                (p.cost(hours), q.cost(hours))
            };
            let mut best = (0.0, cur);
            for k in 0..o.options.len() {
                if k == cur {
                    continue;
                }
                let (ci, r) = &o.options[k];
                let c = &o.all[*ci];
                let delta = if reserved(r) {
                    estimate(o.d, c, r, hours) - (base_here - without_here)
                } else {
                    let kk = key(o, k, mm);
                    if kk == cur_key {
                        continue;
                    }
                    let p = pools.get(&kk).copied().unwrap_or(Pool {
                        usd: r.usd,
                        ..Pool::default()
                    });
                    let mut q = p;
                    q.usd = r.usd;
                    for (s, x) in q
                        .sum
                        .iter_mut()
                        .zip(usage(o.d, c, r, catalog, hours, objective))
                    {
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
                add(&mut pools, &mut fixed, o, cur, -1.0);
                add(&mut pools, &mut fixed, o, best.1, 1.0);
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
