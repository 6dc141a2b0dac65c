//! What a declared pool must be to hold its workloads at their peak: the one count `check`
//! (GP034), a declared pool's price (`cost::declared_pool`) and the next plan
//! (`review --write-plan`) read.

use crate::catalog::Catalog;
use crate::plan::raw::{Pool, Sharing, Workload};
use crate::plan::Plan;

/// What bounds a pool's nodes at peak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binding {
    /// Whole GPUs (a dedicated or shared-server pool).
    Gpus,
    /// Time-sliced or MPS replicas: the pool's shares per GPU.
    Shares,
    /// MIG instances of the pool's profile or layouts.
    MigInstances,
    /// Allocatable vCPUs (after the kubelet's reservation and DaemonSets).
    Vcpus,
    /// Allocatable memory.
    Memory,
    /// A gang's members, a node each.
    Gang,
}

/// Nodes a declared pool needs at its workloads' peak, and what binds it. A lower bound: every
/// dimension summed over its replicas, and each workload alone packed whole (`replicas` over
/// how many fit a node), so a pool below it cannot hold its work, whatever the scheduler does.
/// A workload several pools serve counts in each at an even share.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PeakNodes {
    pub nodes: u32,
    pub binding: Binding,
    /// The workload whose own replicas bind, when one does.
    pub replicas_per_node: Option<u32>,
}

/// The nodes `pool` needs at peak; `None` when its SKU is not in the catalog.
pub(crate) fn peak_nodes(catalog: &Catalog, plan: &Plan, pool: &Pool) -> Option<PeakNodes> {
    let sku = catalog.sku(plan.provider(), pool.sku.get())?;
    let per_node = f64::from(sku.gpu_count.max(1));
    let (cpu_node, mem_node) = catalog.allocatable(sku);
    let shares = pool
        .time_slicing_replicas
        .as_ref()
        .map_or(1.0, |r| (*r.get()).max(1) as f64);
    let gpu_binding = match pool.sharing() {
        Sharing::Dedicated | Sharing::SharedServer => Binding::Gpus,
        Sharing::TimeSlicing | Sharing::Mps => Binding::Shares,
        Sharing::Mig => Binding::MigInstances,
    };
    let (mut gang_nodes, mut sums, mut alone) = (0.0, [0.0f64; 3], (0.0f64, None));
    for w in plan.pool_workloads(pool) {
        let per_replica = match pool.sharing() {
            Sharing::Dedicated | Sharing::SharedServer => w.gpus().max(1) as f64,
            Sharing::TimeSlicing | Sharing::Mps => w.gpus().max(1) as f64 / shares,
            Sharing::Mig => {
                mig_replica_share(catalog, plan, pool, w).unwrap_or_else(|| w.gpu_share().min(1.0))
            }
        };
        // A workload several pools serve is taken as split evenly over them (the scheduler
        // may place it anywhere among them; this is the share each must hold).
        let pools = plan.workload_pools(w.name.get()).count().max(1) as f64;
        let replicas = w.replicas().max().max(0) as f64 / pools;
        let gang = w.gang().max(1) as f64;
        if gang > 1.0 {
            // Each member is a node of its own, as many GPUs of it as it asks.
            gang_nodes += replicas * gang * (per_replica / per_node).ceil();
            continue;
        }
        let cpu = w.cpu.as_ref().map_or(0.0, |c| *c.get());
        let mem = w.memory_gib.as_ref().map_or(0.0, |m| *m.get());
        let need = [
            per_replica / per_node,
            ratio(cpu, cpu_node),
            ratio(mem, mem_node),
        ];
        for (s, n) in sums.iter_mut().zip(need) {
            *s += replicas * n;
        }
        // Whole replicas per node: the fewest any dimension allows. A MIG replica's GPU share
        // averages the pool's layouts (an instance one GPU in several carries), so only vCPUs,
        // memory and whole GPUs hold a replica to one node.
        let whole = if pool.sharing() == Sharing::Mig {
            &need[1..]
        } else {
            &need[..]
        };
        let fit = whole
            .iter()
            .map(|n| {
                if *n <= 0.0 {
                    f64::INFINITY
                } else {
                    (1.0 / n + 1e-9).floor()
                }
            })
            .fold(f64::INFINITY, f64::min);
        let own = if fit < 1.0 {
            f64::INFINITY
        } else if fit.is_finite() {
            (replicas / fit).ceil()
        } else {
            0.0
        };
        if own > alone.0 {
            alone = (own, fit.is_finite().then_some(fit as u32));
        }
    }
    let dims = [
        (sums[0], gpu_binding),
        (sums[1], Binding::Vcpus),
        (sums[2], Binding::Memory),
    ];
    let (summed, binding) = dims
        .into_iter()
        .map(|(s, b)| ((s - 1e-9).ceil().max(0.0), b))
        .fold((0.0, gpu_binding), |a, b| if b.0 > a.0 { b } else { a });
    let (rest, binding, per) = if alone.0 > summed {
        let b = if alone.0.is_infinite() {
            Binding::Vcpus
        } else {
            binding
        };
        (alone.0, b, alone.1)
    } else {
        (summed, binding, None)
    };
    let total = gang_nodes + rest;
    Some(PeakNodes {
        nodes: if total.is_finite() {
            total.min(f64::from(u32::MAX)) as u32
        } else {
            u32::MAX
        },
        binding: if gang_nodes > rest {
            Binding::Gang
        } else {
            binding
        },
        replicas_per_node: per,
    })
}

fn ratio(need: f64, node: f64) -> f64 {
    if need <= 0.0 {
        0.0
    } else if node <= 0.0 {
        f64::INFINITY
    } else {
        need / node
    }
}

/// The share of a GPU one replica of `w` takes on MIG pool `pool`: one instance of the
/// pool's profile, or of the profile its pods ask for among the pool's layouts
/// (`mig::requested`), over how many of it the GPUs carry.
fn mig_replica_share(catalog: &Catalog, plan: &Plan, pool: &Pool, w: &Workload) -> Option<f64> {
    let sku = catalog.sku(plan.provider(), pool.sku.get())?;
    let spec = catalog.sku_gpu(sku)?.mig.as_ref()?;
    if let Some(p) = &pool.mig_profile {
        return Some(1.0 / f64::from(crate::mig::per_gpu(spec, p.get()).max(1)));
    }
    let layouts = pool.layouts();
    let profiles = layouts
        .iter()
        .flat_map(|(l, _)| l.keys())
        .filter_map(|k| spec.profile(k));
    let need = crate::engine::memory::slice_need(w, catalog, spec, w.gpu_share());
    let profile = crate::mig::requested(profiles, &need)?;
    let (mut instances, mut gpus) = (0.0, 0.0);
    for (layout, carriers) in &layouts {
        let n = carriers.unwrap_or(1).max(0) as f64;
        gpus += n;
        instances += layout
            .get()
            .get(&profile.name)
            .map_or(0.0, |c| (*c.get()).max(0) as f64)
            * n;
    }
    (instances > 0.0).then(|| gpus / instances)
}
