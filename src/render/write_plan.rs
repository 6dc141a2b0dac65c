//! `recommend --write-plan OUT`: the plan file with its `[[pool]]` tables replaced by the
//! recommended pools and the serving settings those pools need, everything else (comments,
//! order, formatting) kept as written.

use toml_edit::{value, Array, ArrayOfTables, DocumentMut, InlineTable, Item, Table, Value};

use crate::core::{MigManager, Sharing};
use crate::engine::recommend::reason::{NotShared, Reason};
use crate::engine::recommend::{RecPool, Recommendation};
use crate::plan::Plan;

/// A workload that declares time-slicing or MPS, written as dedicated because the recommender
/// gave it whole GPUs: what it declared and why (`report` words the comment).
#[derive(Debug, Clone, PartialEq)]
pub struct Dropped {
    pub was: Sharing,
    pub cause: NotShared,
}

/// The recommender's reason for giving `workload` dedicated GPUs, from its pools' `why`.
fn dropped(rec: &Recommendation, workload: &str) -> Option<Dropped> {
    rec.pools
        .iter()
        .filter(|p| p.workloads.iter().any(|w| w == workload))
        .flat_map(|p| p.why.0.iter())
        .find_map(|r| {
            if let Reason::Dedicated {
                workload: w,
                sharing,
                cause,
            } = r
            {
                (w == workload).then(|| Dropped {
                    was: *sharing,
                    cause: cause.clone(),
                })
            } else {
                None
            }
        })
}

/// Why `--write-plan` cannot rewrite a plan text.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum WritePlanError {
    #[error("the plan does not parse as TOML: {0}")]
    #[diagnostic(code(gpuplan::write_plan::toml))]
    NotToml(#[from] toml_edit::TomlError),
    /// The written plan would not load: nothing is written.
    #[error("the plan as rewritten does not validate, so nothing was written: {0}")]
    #[diagnostic(code(gpuplan::write_plan::invalid))]
    Invalid(String),
}

/// The text of `plan` with the recommendation's pools in place of its own, each written for
/// the MIG manager it was recommended under, or why not.
///
/// Each pool is headed by a comment of why it is recommended, in the words `why` gives it
/// (the caller passes the report's: the reasons are the engine's data, worded in `report`).
pub fn plan_with_pools(
    plan: &Plan,
    rec: &Recommendation,
    why: impl Fn(&RecPool) -> String,
) -> Result<String, WritePlanError> {
    let mut doc: DocumentMut = plan.file.text.parse()?;
    doc.remove("pool");
    // A pool states its MIG manager where it is not the cluster's, so the written plan reads
    // back as recommended.
    let cluster = plan.cluster_mig_manager();
    let mut pools = ArrayOfTables::new();
    let mut names: std::collections::BTreeSet<String> =
        rec.pools.iter().map(|p| p.name.clone()).collect();
    for whole in &rec.pools {
        for p in parts(whole, &mut names) {
            let mut t = pool_table(&p, p.mig_manager, &why(whole));
            if p.sharing.is_partitioned() && p.mig_manager != cluster {
                t["mig_manager"] = value(match p.mig_manager {
                    MigManager::Aks => "aks",
                    MigManager::GpuOperator => "gpu-operator",
                });
            }
            pools.push(t);
        }
    }
    // Each workload in a pool that shares GPUs by time gets the memory cap its share needs;
    // a workload without a `[workload.server]` table has no server to cap.
    if let Some(Item::ArrayOfTables(workloads)) = doc.get_mut("workload") {
        for w in workloads.iter_mut() {
            let Some(name) = w.get("name").and_then(Item::as_str).map(str::to_owned) else {
                continue;
            };
            let cap = rec
                .pools
                .iter()
                .filter(|p| p.workloads.contains(&name))
                .filter_map(|p| p.gpu_memory_utilization)
                .reduce(f64::min);
            // A time-sliced or MPS workload the recommender had to give whole GPUs is written
            // as what it gets, with the reason its pool's `why` holds, so plan and pools agree.
            if let Some(d) = dropped(rec, &name) {
                let mut v = Value::from(Sharing::Dedicated.as_str());
                v.decor_mut().set_suffix(format!("  # gpuplan: {d}"));
                w["sharing"] = Item::Value(v);
            }
            if let (Some(cap), Some(server)) = (cap, w.get_mut("server")) {
                match server {
                    Item::Table(t) => {
                        t["gpu_memory_utilization"] = value(cap);
                    }
                    Item::Value(Value::InlineTable(t)) => {
                        t.insert("gpu_memory_utilization", Value::from(cap));
                    }
                    _ => {}
                }
            }
        }
    }
    if !pools.is_empty() {
        doc.insert("pool", Item::ArrayOfTables(pools));
    }
    Ok(doc.to_string())
}

/// A pool of more nodes than one `[[pool]]` may declare (`limits::POOL_NODES`, AKS's own
/// limit per node pool) written as several pools of the same node size, the nodes shared out
/// evenly, each naming the pool's workloads: their pods may run on any of them (as a
/// workload a quota split), and `check` counts each part by what the others cannot hold.
/// A pool label joins node sizes, not copies of one, so the parts after the first are pools
/// of their own. 1,500 one-GPU batch
/// replicas were written as `nodes = 1500`, which the written plan then refused to load. A
/// MIG pool's layouts name GPUs of the whole pool, so it is written whole.
fn parts(p: &RecPool, names: &mut std::collections::BTreeSet<String>) -> Vec<RecPool> {
    let limit = u32::try_from(crate::plan::limits::POOL_NODES.max_cap).unwrap_or(u32::MAX);
    if p.nodes.max <= limit || p.sharing.is_partitioned() {
        return vec![p.clone()];
    }
    let k = p.nodes.max.div_ceil(limit);
    let share = |n: u32, i: u32| n / k + u32::from(i < n % k);
    (0..k)
        .map(|i| {
            let mut part = p.clone();
            if i > 0 {
                let mut n = i + 1;
                part.name = loop {
                    let candidate = format!("{}-part{n}", p.name);
                    if names.insert(candidate.clone()) {
                        break candidate;
                    }
                    n += k;
                };
            }
            if i > 0 {
                part.pool_label = part.name.clone();
            }
            part.nodes.min = share(p.nodes.min, i);
            part.nodes.max = share(p.nodes.max, i);
            part
        })
        .collect()
}

fn pool_table(p: &RecPool, mm: MigManager, why: &str) -> Table {
    let mut t = Table::new();
    t.decor_mut()
        .set_prefix(format!("\n# recommended by gpuplan: {}\n", oneline(why)));
    t["name"] = value(&p.name);
    if p.pool_label != p.name {
        t["pool_label"] = value(&p.pool_label);
    }
    t["sku"] = value(&p.sku);
    t["region"] = value(&p.region);
    t["nodes"] = if p.nodes.min == p.nodes.max {
        value(i64::from(p.nodes.max))
    } else {
        let mut n = InlineTable::new();
        n.insert("min", Value::from(i64::from(p.nodes.min)));
        n.insert("max", Value::from(i64::from(p.nodes.max)));
        value(n)
    };
    t["capacity"] = value(p.capacity.as_str());
    if let Some(h) = p.block_hours {
        // The length bought: a pool that keeps its nodes all month is paid a month of a
        // longer block (the rest serves the next month), and the plan names the block sold.
        let sold = crate::cloud::profile(p.provider).sold_block(h).unwrap_or(h);
        t["block_hours"] = value(sold);
    }
    t["sharing"] = value(p.sharing.as_str());
    if let Some(n) = p.time_slicing_replicas {
        t["time_slicing_replicas"] = value(i64::from(n));
    }
    if p.sharing.is_partitioned() {
        let uniform = p.mig_layout.as_ref().filter(|l| l.len() == 1);
        match (mm, uniform) {
            // AKS creates one profile on every GPU (`gpu_instance`).
            (MigManager::Aks, Some(l)) => {
                if let Some(profile) = l.keys().next() {
                    t["mig_profile"] = value(profile);
                }
            }
            _ if p.mig_configs.len() > 1 => {
                let mut layouts = Array::new();
                for c in &p.mig_configs {
                    let mut entry = InlineTable::new();
                    entry.insert("layout", Value::InlineTable(layout_table(&c.layout)));
                    entry.insert("gpus", Value::from(i64::from(c.gpus)));
                    layouts.push(Value::InlineTable(entry));
                }
                t["mig_layouts"] = value(layouts);
            }
            _ => {
                let layout = p
                    .mig_layout
                    .clone()
                    .or_else(|| p.mig_configs.first().map(|c| c.layout.clone()));
                if let Some(l) = layout {
                    t["mig_layout"] = value(layout_table(&l));
                }
            }
        }
    }
    let mut ws = Array::new();
    for w in &p.workloads {
        ws.push(w.as_str());
    }
    t["workloads"] = value(ws);
    t
}

fn layout_table(l: &indexmap::IndexMap<String, u32>) -> InlineTable {
    let mut t = InlineTable::new();
    for (profile, n) in l {
        t.insert(profile, Value::from(i64::from(*n)));
    }
    t
}

/// A why-line as one comment line: no line breaks or control characters can end the comment.
fn oneline(s: &str) -> String {
    let flat: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let mut out: String = flat.chars().take(300).collect();
    if flat.chars().count() > 300 {
        out.push_str(" ...");
    }
    out
}
