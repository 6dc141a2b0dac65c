//! MIG as the GPU Operator applies it: each distinct node filling of a pool is a node pool
//! of its own, labelled with the mig-parted config that partitions its GPUs
//! (`nvidia.com/mig.config`), and the per-GPU layouts of that config.

use indexmap::IndexMap;
use serde::Serialize;

use super::model::{KeyValue, PoolView};
use crate::engine::names::NodePoolName;
use crate::engine::recommend::RecPool;

#[derive(Debug, Serialize)]
pub struct MigConfigView {
    pub name: String,
    pub entries: Vec<MigEntryView>,
}

#[derive(Debug, Serialize)]
pub struct MigEntryView {
    /// `all`, or a flow list of GPU indices: `[0, 1]`.
    pub devices: String,
    pub devices_yaml: String,
    pub enabled: bool,
    pub profiles: Vec<ProfileCount>,
}

#[derive(Debug, Serialize, Clone)]
pub struct ProfileCount {
    pub profile: String,
    pub count: u32,
}

/// The node pools of an operator-MIG pool, one per distinct node filling: each with the MIG
/// instances one of its nodes carries by profile, and its mig-parted config. The pool's floor
/// goes to the first fillings.
/// The mig-parted config of a pool's `k`-th node filling of `kinds` (its nodes' label
/// `nvidia.com/mig.config`).
fn config_name(p: &RecPool, k: usize, kinds: usize) -> String {
    if kinds == 1 {
        format!("gpuplan-{}", p.name)
    } else {
        format!("gpuplan-{}-{}", p.name, k + 1)
    }
}

/// The configs of the pool's node fillings that hold a `profile` instance, where some do
/// not: a pod asking for that profile must select those nodes, so a topology spread counts
/// only nodes that can host it. `None` where every node can.
pub(super) fn configs_holding(p: &RecPool, profile: &str) -> Option<Vec<String>> {
    let kinds = p.node_fillings();
    let holding: Vec<String> = kinds
        .iter()
        .enumerate()
        .filter(|(_, (layouts, _))| layouts.iter().any(|l| l.contains_key(profile)))
        .map(|(k, _)| config_name(p, k, kinds.len()))
        .collect();
    (holding.len() < kinds.len()).then_some(holding)
}

pub(super) fn node_fillings(
    p: &RecPool,
    names: &[NodePoolName],
    base: &PoolView,
) -> Vec<(PoolView, IndexMap<String, u32>, MigConfigView)> {
    let mut out = Vec::new();
    // Node labels are per pool: each distinct node filling gets its own sub-pool labelled
    // with its own mig-parted config.
    let kinds = p.node_fillings();
    let per = p.gpus_per_node.max(1) as usize;
    let mut floor_left = p.nodes.min;
    for (k, (layouts, count)) in kinds.iter().enumerate() {
        let cfg = config_name(p, k, kinds.len());
        let mut entries = Vec::new();
        for (g, l) in layouts.iter().enumerate() {
            entries.push(MigEntryView {
                devices: format!("[{g}]"),
                devices_yaml: format!("[{g}]"),
                enabled: true,
                profiles: l
                    .iter()
                    .map(|(profile, count)| ProfileCount {
                        profile: profile.clone(),
                        count: *count,
                    })
                    .collect(),
            });
        }
        for g in layouts.len()..per {
            entries.push(MigEntryView {
                devices: format!("[{g}]"),
                devices_yaml: format!("[{g}]"),
                enabled: false,
                profiles: Vec::new(),
            });
        }
        // Identical GPUs fold into one `devices: all` entry.
        if entries.len() == per
            && entries.iter().all(|e| e.enabled)
            && layouts.windows(2).all(|w| w[0] == w[1])
        {
            entries.truncate(1);
            entries[0].devices = "all".into();
            entries[0].devices_yaml = "all".into();
        }
        let config = MigConfigView {
            name: cfg.clone(),
            entries,
        };
        let floor = floor_left.min(*count);
        floor_left -= floor;
        let mut v = PoolView {
            name: names[k].name.clone(),
            ident: super::escape::hcl_ident(&names[k].name),
            aks_name: names[k].aks.clone(),
            rotation_name: names[k].rotation.clone(),
            min: floor,
            max: *count,
            autoscaled: floor != *count || base.spot,
            labels: base.labels.clone(),
            ..base.clone()
        };
        v.labels.push(KeyValue {
            key: "nvidia.com/mig.config".into(),
            value: cfg,
        });
        let mut per_node: IndexMap<String, u32> = IndexMap::new();
        for l in layouts {
            for (profile, n) in l {
                *per_node.entry(profile.clone()).or_default() += n;
            }
        }
        out.push((v, per_node, config));
    }
    out
}
