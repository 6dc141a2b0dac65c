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
/// A workload several pools serve counts in each with the replicas the others cannot hold
/// (`must_run_here`): a quota split of 4 spot and 6 reserved nodes holds its 10 replicas.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct PeakNodes {
    pub nodes: u32,
    pub binding: Binding,
    /// The workload whose own replicas bind, when one does.
    pub replicas_per_node: Option<u32>,
}

/// The nodes `pool` needs at peak; `None` when its SKU is not in the catalog.
pub(crate) fn peak_nodes(catalog: &Catalog, plan: &Plan, pool: &Pool) -> Option<PeakNodes> {
    nodes_for(catalog, plan, pool, |w| {
        must_run_here(catalog, plan, pool, w)
    })
}

/// What one replica of a workload takes of a node of a pool.
struct ReplicaNeed {
    /// GPUs (or shares, or instances), allocatable vCPUs and memory, as shares of a node.
    dims: [f64; 3],
    /// Nodes one replica takes when it is a gang: a node per member (`None` otherwise).
    gang_nodes: Option<f64>,
    /// The MIG profile a replica takes on a MIG pool: replicas of different profiles take
    /// different instances of the same GPUs.
    profile: Option<String>,
}

/// What one replica of `w` takes of a node of `pool` on `sku`.
fn replica_need(
    catalog: &Catalog,
    plan: &Plan,
    pool: &Pool,
    sku: &crate::catalog::Sku,
    w: &Workload,
) -> ReplicaNeed {
    let per_node = f64::from(sku.gpu_count.max(1));
    let (cpu_node, mem_node) = catalog.allocatable(sku);
    let shares = pool
        .time_slicing_replicas
        .as_ref()
        .map_or(1.0, |r| (*r.get()).max(1) as f64);
    let (per_replica, profile) = match pool.sharing().hold() {
        // A shared inference server hosts several models on one GPU: a replica is its share.
        GpuHold::Whole if w.sharing().is_hosted() && w.gpus() <= 1 => {
            use crate::engine::memory;
            let share = catalog.sku_gpu(sku).and_then(|gpu| {
                memory::server_share(
                    memory::replica_share(w, catalog),
                    memory::need_in_instance(w, catalog),
                    memory::usable_share(w, catalog),
                    gpu,
                )
            });
            (share.unwrap_or(1.0), None)
        }
        GpuHold::Whole => (w.gpus().max(1) as f64, None),
        GpuHold::Replica => (w.gpus().max(1) as f64 / shares, None),
        GpuHold::Instance => match mig_replica_share(catalog, plan, pool, w) {
            Some((share, profile)) => (share, Some(profile)),
            None => (w.gpu_share().min(1.0), None),
        },
    };
    let gang = w.gang().max(1) as f64;
    let cpu = w.cpu.as_ref().map_or(0.0, |c| *c.get());
    let mem = w.memory_gib.as_ref().map_or(0.0, |m| *m.get());
    ReplicaNeed {
        dims: [
            per_replica / per_node,
            ratio(cpu, cpu_node),
            ratio(mem, mem_node),
        ],
        // Each member is a node of its own, as many GPUs of it as it asks.
        gang_nodes: (gang > 1.0).then(|| gang * (per_replica / per_node).ceil()),
        profile,
    }
}

/// The replicas of `w` at its peak that `pool` must hold: all of them, or, for a workload
/// several pools serve, those the other pools cannot, each counted at the most it could take
/// (its `nodes.max` less what the work only it runs needs). An upper bound on what the others
/// hold makes this a lower bound on what this pool holds, whatever the scheduler does.
fn must_run_here(catalog: &Catalog, plan: &Plan, pool: &Pool, w: &Workload) -> f64 {
    let all = w.replicas().max().max(0) as f64;
    plan.workload_pools(w.name.get())
        .filter(|q| q.name.get() != pool.name.get())
        .fold(all, |left, q| {
            (left - room(catalog, plan, q.get(), w)).max(0.0)
        })
}

/// The most replicas of `w` pool `q` could hold beside the work only it runs: in each
/// dimension, what its `nodes.max` leaves after that work's share (fractional, so never less
/// than what the nodes really leave), over what one replica of `w` takes.
fn room(catalog: &Catalog, plan: &Plan, q: &Pool, w: &Workload) -> f64 {
    let Some(sku) = catalog.sku(plan.provider(), q.sku.get()) else {
        // Nothing is known of what it holds: it may hold them all.
        return f64::INFINITY;
    };
    let mine = replica_need(catalog, plan, q, sku, w);
    let mut used = [0.0f64; 3];
    for v in plan.pool_workloads(q) {
        if plan.workload_pools(v.name.get()).nth(1).is_some() {
            continue;
        }
        let replicas = v.replicas().max().max(0) as f64;
        let need = replica_need(catalog, plan, q, sku, v);
        if let Some(nodes) = need.gang_nodes {
            for u in &mut used {
                *u += replicas * nodes;
            }
            continue;
        }
        for (i, (u, n)) in used.iter_mut().zip(need.dims).enumerate() {
            // Another MIG profile's instances are not this one's.
            if i > 0 || need.profile == mine.profile {
                *u += replicas * n;
            }
        }
    }
    let nodes = q.nodes().max().max(0) as f64;
    if let Some(per) = mine.gang_nodes {
        let free = used.iter().fold(nodes, |f, u| f.min(nodes - u)).max(0.0);
        return (free / per.max(1.0) + 1e-9).floor();
    }
    mine.dims
        .iter()
        .zip(used)
        .filter(|(n, _)| **n > 0.0)
        .map(|(n, u)| ((nodes - u).max(0.0) / n + 1e-9).floor())
        .fold(f64::INFINITY, f64::min)
}

/// The nodes `pool` needs for `replicas_of` each of its workloads at once.
fn nodes_for(
    catalog: &Catalog,
    plan: &Plan,
    pool: &Pool,
    replicas_of: impl Fn(&Workload) -> f64,
) -> Option<PeakNodes> {
    let sku = catalog.sku(plan.provider(), pool.sku.get())?;
    let gpu_binding = match pool.sharing().hold() {
        GpuHold::Whole => Binding::Gpus,
        GpuHold::Replica => Binding::Shares,
        GpuHold::Instance => Binding::MigInstances,
    };
    let dim_binding = [gpu_binding, Binding::Vcpus, Binding::Memory];
    // (nodes, replicas per node, what binds) of the workload that needs most nodes alone.
    let (mut gang_nodes, mut sums) = (0.0, [0.0f64; 3]);
    let mut alone: (f64, Option<u32>, Binding) = (0.0, None, gpu_binding);
    // MIG GPUs per profile: the pool's layouts carry each profile's instances side by side,
    // so the GPUs they need are the most any one profile needs, not the sum.
    let mut by_profile: std::collections::BTreeMap<Option<String>, f64> = Default::default();
    for w in plan.pool_workloads(pool) {
        let replicas = replicas_of(w);
        let ReplicaNeed {
            dims: need,
            gang_nodes: gang,
            profile,
        } = replica_need(catalog, plan, pool, sku, w);
        if let Some(nodes) = gang {
            gang_nodes += replicas * nodes;
            continue;
        }
        for (s, n) in sums.iter_mut().zip(need).skip(1) {
            *s += replicas * n;
        }
        match profile {
            Some(p) => *by_profile.entry(Some(p)).or_default() += replicas * need[0],
            None => sums[0] += replicas * need[0],
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
    sums[0] += by_profile.into_values().fold(0.0, f64::max);
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

/// The share of a GPU one replica of `w` takes on MIG pool `pool`, and its profile: one
/// instance of the pool's profile, or of the profile its pods ask for among the pool's
/// layouts (`mig::requested`), over how many of it the GPUs carry.
fn mig_replica_share(
    catalog: &Catalog,
    plan: &Plan,
    pool: &Pool,
    w: &Workload,
) -> Option<(f64, String)> {
    let sku = catalog.sku(plan.provider(), pool.sku.get())?;
    let spec = catalog.sku_gpu(sku)?.mig.as_ref()?;
    if let Some(p) = &pool.mig_profile {
        let share = 1.0 / f64::from(crate::mig::per_gpu(spec, p.get()).max(1));
        return Some((share, p.get().clone()));
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
    (instances > 0.0).then(|| (gpus / instances, profile.name.clone()))
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
