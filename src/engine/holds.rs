//! What a declared pool must be to hold its workloads at their peak: the one count `check`
//! (GP034), a declared pool's price (`cost::declared_pool`) and the next plan
//! (`review --write-plan`) read.

use crate::catalog::Catalog;
use crate::core::GpuHold;
use crate::plan::Plan;
use crate::plan::{Pool, Workload};

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
    let gpu_binding = match pool.sharing().hold() {
        GpuHold::Whole => Binding::Gpus,
        GpuHold::Replica => Binding::Shares,
        GpuHold::Instance => Binding::MigInstances,
    };
    let dim_binding = [gpu_binding, Binding::Vcpus, Binding::Memory];
    // (nodes, replicas per node, what binds) of the workload that needs most nodes alone.
    let (mut gang_nodes, mut sums) = (0.0, [0.0f64; 3]);
    let mut alone: (f64, Option<u32>, Binding) = (0.0, None, gpu_binding);
    for w in plan.pool_workloads(pool) {
        let per_replica = match pool.sharing().hold() {
            GpuHold::Whole => w.gpus().max(1) as f64,
            GpuHold::Replica => w.gpus().max(1) as f64 / shares,
            GpuHold::Instance => {
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
        let first = usize::from(gpu_binding == Binding::MigInstances);
        let (fit, by) = (first..3)
            .map(|i| {
                let n = need[i];
                let fit = if n <= 0.0 {
                    f64::INFINITY
                } else {
                    (1.0 / n + 1e-9).floor()
                };
                (fit, dim_binding[i])
            })
            .fold(
                (f64::INFINITY, gpu_binding),
                |a, b| if b.0 < a.0 { b } else { a },
            );
        let own = if fit < 1.0 {
            f64::INFINITY
        } else if fit.is_finite() {
            (replicas / fit).ceil()
        } else {
            0.0
        };
        if own > alone.0 {
            alone = (own, fit.is_finite().then_some(fit as u32), by);
        }
    }
    let (summed, binding) = sums
        .into_iter()
        .zip(dim_binding)
        .map(|(s, b)| ((s - 1e-9).ceil().max(0.0), b))
        .fold((0.0, gpu_binding), |a, b| if b.0 > a.0 { b } else { a });
    let (rest, binding, per) = if alone.0 > summed {
        (alone.0, alone.2, alone.1)
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

#[cfg(test)]
mod tests {
    use super::{peak_nodes, Binding, PeakNodes};
    use crate::catalog::Catalog;
    use crate::plan::Plan;

    fn plan(workload: &str, pool: &str) -> (Plan, Catalog) {
        let catalog = Catalog::embedded(&[crate::core::Provider::Aws]).expect("catalog");
        let text = format!("version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"batch\"\n{workload}\n\n[[pool]]\nname = \"p\"\nregion = \"us-east-1\"\nworkloads = [\"w\"]\n{pool}\n");
        let p = crate::plan::Plan::load(crate::source::SourceFile::new("p.toml", text), &catalog)
            .unwrap_or_else(|_| panic!("plan"));
        (p, catalog)
    }

    fn need(workload: &str, pool: &str) -> PeakNodes {
        let (p, c) = plan(workload, pool);
        peak_nodes(&c, &p, p.pools()[0].get()).expect("sku")
    }

    #[test]
    fn what_binds_is_named_and_a_replica_no_node_holds_needs_every_node() {
        // Six one-GPU replicas on one-GPU nodes: six, by GPUs.
        let n = need("replicas = 6\ngpus = 1", "sku = \"g6.xlarge\"\nnodes = 1");
        assert_eq!((n.nodes, n.binding), (6, Binding::Gpus));
        // Three replicas of 7 vCPUs on 48-vCPU nodes with 4 GPUs: the GPUs bind (1 node).
        let n = need(
            "replicas = 3\ngpus = 1\ncpu = 7",
            "sku = \"g6.12xlarge\"\nnodes = 1",
        );
        assert_eq!(n.nodes, 1, "{n:?}");
        // Four replicas of 20 vCPUs: two fit a node's allocatable vCPUs, so two nodes.
        let n = need(
            "replicas = 4\ngpus = 1\ncpu = 20",
            "sku = \"g6.12xlarge\"\nnodes = 1",
        );
        assert_eq!((n.nodes, n.binding), (2, Binding::Vcpus), "{n:?}");
        // More memory than a node has: no number of nodes holds it.
        let n = need(
            "replicas = 1\ngpus = 1\nmemory_gib = 1000",
            "sku = \"g6.xlarge\"\nnodes = 1",
        );
        assert_eq!((n.nodes, n.binding), (u32::MAX, Binding::Memory), "{n:?}");
    }
}
