//! How many nodes some replica counts need on one SKU: replicas sorted by how they take a GPU,
//! MIG instances packed onto GPUs, and every batch packed onto nodes.

use super::candidate::Fit;
use super::choice::Choice;
use super::pack::{Item, NodeCap};
use super::types::{MigConfig, Stranded};
use super::{candidate, pack};
use crate::catalog::{Catalog, GpuModel, Sku};
use crate::core::MigManager;
use indexmap::IndexMap;
/// Nodes for some replica counts, with the MIG geometry that got them there.
pub(super) struct Packed {
    pub(super) nodes: u32,
    pub(super) layout: Option<IndexMap<String, u32>>,
    pub(super) configs: Vec<MigConfig>,
    pub(super) stranded: Option<Stranded>,
}

/// The replicas of a pool by how they take a GPU.
#[derive(Default)]
struct Sorted {
    /// Gangs take whole nodes and never share them.
    gang_nodes: u32,
    /// Whole GPUs or time-sliced shares.
    items: Vec<(Item, u32)>,
    /// By MIG profile: (member, replicas).
    mig: IndexMap<String, Vec<(usize, u32)>>,
    /// Shares of a server process: (thousandths of a GPU, vCPUs, RAM, replicas).
    server: Vec<(u32, f64, f64, u32)>,
    ts_replicas: Option<u32>,
}

fn sort(ms: &[&Choice<'_, '_>], counts: &[u32]) -> Sorted {
    let mut out = Sorted::default();
    for (k, (m, &n)) in ms.iter().zip(counts).enumerate() {
        if n == 0 {
            continue;
        }
        if m.d.gang > 1 {
            out.gang_nodes += n * m.d.gang;
            continue;
        }
        let item = |units| Item {
            units,
            cpu: m.d.cpu,
            mem: m.d.memory_gib,
        };
        match &m.c.fit {
            Fit::Whole { gpus } => out.items.push((item(*gpus), n)),
            Fit::Shared { replicas, .. } => {
                out.ts_replicas = Some(*replicas);
                out.items.push((item(1), n));
            }
            Fit::Server { share } => out.server.push((
                ((share * 1000.0).ceil() as u32).clamp(1, 1000),
                m.d.cpu,
                m.d.memory_gib,
                n,
            )),
            Fit::Mig { profile } => out
                .mig
                .entry(profile.name.clone())
                .or_default()
                .push((k, n)),
        }
    }
    out
}

/// MIG instances packed onto GPUs: the GPUs as node items, and the geometry.
struct MigPacked {
    gpus: Vec<Item>,
    layout: Option<IndexMap<String, u32>>,
    configs: Vec<MigConfig>,
    stranded: Stranded,
}

fn pack_mig(
    ms: &[&Choice<'_, '_>],
    mig: &IndexMap<String, Vec<(usize, u32)>>,
    gpu: &GpuModel,
    mm: MigManager,
    node: (f64, f64),
) -> Option<MigPacked> {
    let spec = gpu.mig.as_ref()?;
    let demand: IndexMap<String, u32> = mig
        .iter()
        .map(|(p, v)| (p.clone(), v.iter().map(|x| x.1).sum()))
        .collect();
    let p = match mm {
        // One profile per pool: as many instances per GPU as place.
        MigManager::Aks => uniform_packing(spec, &demand),
        MigManager::GpuOperator => crate::mig::pack::pack(spec, &demand).ok(),
    }?;
    let laid_out = p.gpus.len();
    let (gpus, hosts) = gpu_hosts(ms, mig, p.gpus, node);
    let cut = gpus.len() > laid_out;
    let p = crate::mig::pack::Packing { gpus, ..p };
    let (sc, sm) = p.stranded(spec);
    let distinct = distinct_layouts(&p.gpus);
    let layout = match distinct.len() {
        1 => distinct.first().map(|(l, _)| l.clone()),
        _ => None,
    };
    let configs = distinct
        .into_iter()
        .enumerate()
        .map(|(i, (l, g))| MigConfig {
            name: format!("layout-{}", i + 1),
            layout: l,
            gpus: g,
        })
        .collect();
    let configured: u32 = p.gpus.iter().flat_map(|l| l.values()).sum();
    let used: u32 = demand.values().sum();
    Some(MigPacked {
        gpus: hosts,
        layout,
        configs,
        stranded: Stranded {
            mig_compute_slices: sc,
            mig_memory_slices: sm,
            gpu_units: 0,
            mig_unused_instances: configured.saturating_sub(used),
            // Slices packed optimally, then GPUs cut for their hosts: no longer a claim.
            optimal_packing: p.optimal && !cut,
            packing_lower_bound_gpus: Some(p.lower_bound),
        },
    })
}

/// Host resources of the replicas that land on each GPU, members taken in order; a GPU
/// whose replicas' vCPUs or RAM would not fit its node (`node`, allocatable) is cut into as
/// many GPUs of the same layout's instances as the node holds them (a subset of a valid
/// placement is valid), since every instance of a GPU runs on that GPU's node. The GPUs'
/// layouts come back beside their hosts.
fn gpu_hosts(
    ms: &[&Choice<'_, '_>],
    mig: &IndexMap<String, Vec<(usize, u32)>>,
    gpus: Vec<IndexMap<String, u32>>,
    node: (f64, f64),
) -> (Vec<IndexMap<String, u32>>, Vec<Item>) {
    const EPS: f64 = 1e-9;
    let mut queues = mig.clone();
    let (mut layouts, mut out) = (Vec::new(), Vec::new());
    for l in gpus {
        let (mut cpu, mut mem) = (0.0, 0.0);
        let mut here: IndexMap<String, u32> = IndexMap::new();
        for (prof, cnt) in l {
            let Some(q) = queues.get_mut(&prof) else {
                // An instance no replica takes stays on the GPU as laid out.
                *here.entry(prof).or_default() += cnt;
                continue;
            };
            for _ in 0..cnt {
                let Some(front) = q.first_mut() else {
                    *here.entry(prof.clone()).or_default() += 1;
                    continue;
                };
                let (c, m) = (ms[front.0].d.cpu, ms[front.0].d.memory_gib);
                if !here.is_empty() && (cpu + c > node.0 + EPS || mem + m > node.1 + EPS) {
                    layouts.push(std::mem::take(&mut here));
                    out.push(Item { units: 1, cpu, mem });
                    (cpu, mem) = (0.0, 0.0);
                }
                cpu += c;
                mem += m;
                *here.entry(prof.clone()).or_default() += 1;
                front.1 -= 1;
                if front.1 == 0 {
                    q.remove(0);
                }
            }
        }
        layouts.push(here);
        out.push(Item { units: 1, cpu, mem });
    }
    (layouts, out)
}

/// Node count for the given replica counts (one per member).
pub(super) fn nodes_for(
    ms: &[&Choice<'_, '_>],
    counts: &[u32],
    sku: &Sku,
    gpu: &GpuModel,
    catalog: &Catalog,
    mm: MigManager,
    thorough: bool,
) -> Packed {
    let (cpu, mem) = candidate::allocatable(sku, catalog);
    let per_node = sku.gpu_count.max(1);
    let sorted = sort(ms, counts);
    let units_per_node = match sorted.ts_replicas {
        Some(r) if r > 1 => r * per_node,
        _ => per_node,
    };
    // What goes onto nodes, with the GPU units a node offers it: replicas (time-sliced shares
    // or whole GPUs), and GPUs prepared by a shared server or a MIG layout.
    let mut batches: Vec<(Vec<(Item, u32)>, u32)> = Vec::new();
    if !sorted.items.is_empty() {
        batches.push((pack::merged(sorted.items), units_per_node));
    }
    if !sorted.server.is_empty() {
        batches.push((
            pack::group(pack::server_gpus(&sorted.server, (cpu, mem))),
            per_node,
        ));
    }
    let mig = if sorted.mig.is_empty() {
        None
    } else {
        pack_mig(ms, &sorted.mig, gpu, mm, (cpu, mem))
    };
    let (layout, configs, stranded) = match mig {
        Some(m) => {
            batches.push((pack::group(m.gpus), per_node));
            (m.layout, m.configs, Some(m.stranded))
        }
        None => (None, Vec::new(), None),
    };
    let mut nodes = sorted.gang_nodes;
    let mut free_units = 0;
    for (groups, units) in &batches {
        let cap = NodeCap {
            units: *units,
            cpu,
            mem,
        };
        let (n, free) = pack::nodes(groups, cap, thorough);
        nodes += n;
        free_units += free;
    }
    let stranded = Some(Stranded {
        gpu_units: free_units,
        ..stranded.unwrap_or(Stranded {
            mig_compute_slices: 0,
            mig_memory_slices: 0,
            gpu_units: 0,
            mig_unused_instances: 0,
            optimal_packing: true,
            packing_lower_bound_gpus: None,
        })
    });
    Packed {
        nodes,
        layout,
        configs,
        stranded,
    }
}

pub(super) fn distinct_layouts(
    gpus: &[IndexMap<String, u32>],
) -> Vec<(IndexMap<String, u32>, u32)> {
    let mut out: Vec<(IndexMap<String, u32>, u32)> = Vec::new();
    for g in gpus {
        match out.iter_mut().find(|(l, _)| l == g) {
            Some((_, n)) => *n += 1,
            None => out.push((g.clone(), 1)),
        }
    }
    out
}

/// AKS: every GPU of the pool carries the same profile, as many as place on one GPU.
pub(super) fn uniform_packing(
    spec: &crate::catalog::MigSpec,
    demand: &IndexMap<String, u32>,
) -> Option<crate::mig::pack::Packing> {
    let (profile, &n) = demand.iter().next()?;
    let per_gpu = crate::mig::per_gpu(spec, profile);
    if per_gpu == 0 {
        return None;
    }
    // AKS creates every instance the profile allows on each GPU; the ones no replica uses
    // are stranded (counted by the caller).
    let gpus = vec![IndexMap::from([(profile.clone(), per_gpu)]); n.div_ceil(per_gpu) as usize];
    Some(crate::mig::pack::Packing {
        lower_bound: n.div_ceil(per_gpu),
        gpus,
        optimal: true,
    })
}
