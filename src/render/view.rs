//! The typed view model the templates see: everything already decided, named and escaped
//! where the target language needs it, so templates only lay text out.

use indexmap::IndexMap;
use serde::Serialize;

use crate::engine::recommend::{RecPool, Recommendation};
use crate::plan::raw::Kind;
use crate::plan::Plan;

#[derive(Debug, Serialize)]
pub struct View {
    pub plan: String,
    pub plan_file: String,
    pub provider: String,
    pub regions: Vec<RegionView>,
    pub data: Vec<DataView>,
    pub pools: Vec<PoolView>,
    pub capacity_reservations: Vec<ReservationView>,
    pub mig_strategy: &'static str,
    pub mig_configs: Vec<MigConfigView>,
    pub sharing_configs: Vec<SharingView>,
    pub flavors: Vec<FlavorView>,
    pub teams: Vec<TeamView>,
    pub serving: Vec<ServingView>,
    pub total_monthly_cost: String,
}

#[derive(Debug, Serialize)]
pub struct RegionView {
    pub name: String,
    /// Terraform provider alias (AWS) / map key.
    pub alias: String,
}

#[derive(Debug, Serialize)]
pub struct DataView {
    pub file: String,
    pub as_of: String,
}

#[derive(Debug, Serialize, Clone)]
pub struct PoolView {
    pub name: String,
    /// Terraform resource name.
    pub ident: String,
    /// AKS node pool name: lowercase letters and digits, at most 12 characters.
    pub aks_name: String,
    pub region: String,
    pub region_alias: String,
    pub sku: String,
    pub gpu_model: String,
    pub gpus_per_node: u32,
    pub min: u32,
    pub max: u32,
    pub autoscaled: bool,
    pub spot: bool,
    /// An EC2 Capacity Block: `CAPACITY_BLOCK` with a launch template targeting it.
    pub capacity_block: bool,
    pub capacity: String,
    /// AKS managed MIG: `MIG3g` for a `3g.*` profile.
    pub gpu_instance: Option<String>,
    pub labels: Vec<KeyValue>,
    pub taints: Vec<TaintView>,
    pub reservation: Option<String>,
    pub workloads: String,
    pub monthly_cost: String,
}

#[derive(Debug, Serialize, Clone)]
pub struct KeyValue {
    pub key: String,
    pub value: String,
}

#[derive(Debug, Serialize, Clone)]
pub struct TaintView {
    /// `key=value:Effect` (AKS `node_taints`).
    pub spec: String,
    pub key: String,
    pub value: String,
    /// Kubernetes spelling (`NoSchedule`).
    pub effect: String,
    /// EKS API spelling (`NO_SCHEDULE`).
    pub eks_effect: String,
}

#[derive(Debug, Serialize)]
pub struct ReservationView {
    pub ident: String,
    pub name: String,
    pub region: String,
    pub region_alias: String,
    pub sku: String,
    pub count: u32,
    pub pool_ident: String,
}

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

#[derive(Debug, Serialize)]
pub struct SharingView {
    pub name: String,
    /// `timeSlicing` or `mps`.
    pub kind: &'static str,
    pub replicas: u32,
    pub rename_by_default: bool,
    pub fail_requests_greater_than_one: bool,
}

#[derive(Debug, Serialize)]
pub struct FlavorView {
    pub name: String,
    pub labels: Vec<KeyValue>,
    pub taints: Vec<TaintView>,
}

/// A team's ClusterQueue. Kueue lets a resource appear in one resource group only, and every
/// flavor of a group must list every covered resource: one group covers all of the team's
/// resources, with a quota of 0 where a flavor has none of one.
#[derive(Debug, Serialize)]
pub struct TeamView {
    pub name: String,
    pub queue: String,
    pub resources: Vec<String>,
    pub flavors: Vec<FlavorQuotas>,
}

#[derive(Debug, Serialize)]
pub struct FlavorQuotas {
    pub flavor: String,
    pub quotas: Vec<ResourceQuota>,
}

#[derive(Debug, Serialize)]
pub struct ResourceQuota {
    pub resource: String,
    pub quota: u32,
}

#[derive(Debug, Serialize)]
pub struct ServingView {
    pub workload: String,
    pub namespace: String,
    pub pool: String,
    pub gpu_memory_utilization: String,
    pub tensor_parallel_size: u32,
    pub why: String,
}

fn segment_abbrev(segment: &str) -> &'static str {
    match segment {
        "serving" => "srv",
        "inference" => "inf",
        "interactive" => "nb",
        "training" => "trn",
        _ => "bat",
    }
}

/// AKS Linux node pool names are lowercase letters and digits, start with a letter and have
/// at most 12 characters: segment, GPU and a number, all from fixed vocabularies.
fn aks_name(p: &RecPool, index: usize) -> String {
    let gpu: String = p
        .gpu_model
        .to_ascii_lowercase()
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(5)
        .collect();
    let mut n = format!("{}{}{:02}", segment_abbrev(p.segment), gpu, index + 1);
    n.truncate(12);
    n
}

fn taint(spec: &str) -> TaintView {
    // `key=value:Effect`, as RecPool states them.
    let (kv, effect) = spec.rsplit_once(':').unwrap_or((spec, "NoSchedule"));
    let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
    let eks_effect = match effect {
        "NoExecute" => "NO_EXECUTE",
        "PreferNoSchedule" => "PREFER_NO_SCHEDULE",
        _ => "NO_SCHEDULE",
    };
    TaintView {
        spec: spec.to_owned(),
        key: key.to_owned(),
        value: value.to_owned(),
        effect: effect.to_owned(),
        eks_effect: eks_effect.to_owned(),
    }
}

fn alias(region: &str) -> String {
    region.replace('-', "_")
}

/// Whole GPUs one replica asks for (tensor-parallel size).
fn gpus_of(plan: &Plan, workload: &str) -> u32 {
    plan.workload(workload)
        .map_or(1, |w| u32::try_from(w.gpus().max(1)).unwrap_or(1))
}

/// Options the command line sets.
pub struct Options {
    pub capacity_reservations: bool,
}

pub fn build(plan: &Plan, rec: &Recommendation, opts: &Options) -> View {
    let mut pools = Vec::new();
    let mut reservations = Vec::new();
    let mut mig_configs = Vec::new();
    let mut sharing_configs = Vec::new();
    let mut flavors = Vec::new();
    let mut any_operator_mig = false;
    // The rendered node pools of each recommended pool (one, or one per MIG node filling).
    let mut rendered: IndexMap<String, Vec<String>> = IndexMap::new();
    for (i, p) in rec.pools.iter().enumerate() {
        let mut labels: Vec<KeyValue> = p
            .labels
            .iter()
            .map(|(k, v)| KeyValue {
                key: k.clone(),
                value: v.clone(),
            })
            .collect();
        labels.push(KeyValue {
            key: "gpuplan.io/pool".into(),
            value: p.name.clone(),
        });
        let taints: Vec<TaintView> = p
            .taints
            .iter()
            // The spot taint AKS adds itself is not set on the pool.
            .filter(|t| !t.starts_with("kubernetes.azure.com/"))
            .map(|t| taint(t))
            .collect();
        // AKS partitions GPUs itself (`gpu_instance`); elsewhere the GPU Operator's
        // mig-manager applies a mig-parted config chosen by node label.
        let aks_managed = p.sharing == "mig"
            && rec.provider == "azure"
            && crate::engine::recommend::mig_manager(plan) == crate::plan::raw::MigManager::Aks;
        let operator_mig = p.sharing == "mig" && !aks_managed;
        let mut base = PoolView {
            name: p.name.clone(),
            ident: super::escape::hcl_ident(&p.name),
            aks_name: aks_name(p, i),
            region: p.region.clone(),
            region_alias: alias(&p.region),
            sku: p.sku.clone(),
            gpu_model: p.gpu_model.clone(),
            gpus_per_node: p.gpus_per_node,
            min: p.nodes.min,
            max: p.nodes.max,
            autoscaled: p.nodes.min != p.nodes.max,
            spot: p.capacity == "spot",
            capacity_block: p.capacity == "capacity-block",
            capacity: p.capacity.to_owned(),
            gpu_instance: None,
            labels: labels.clone(),
            taints: taints.clone(),
            reservation: None,
            workloads: p.workloads.join(", "),
            monthly_cost: crate::core::usd(p.monthly_cost_usd),
        };
        if p.time_slicing_replicas.is_some() {
            let name = format!("gpuplan-{}", p.name);
            sharing_configs.push(SharingView {
                name: name.clone(),
                kind: if p.sharing == "mps" {
                    "mps"
                } else {
                    "timeSlicing"
                },
                replicas: p.time_slicing_replicas.unwrap_or(2),
                rename_by_default: false,
                fail_requests_greater_than_one: true,
            });
            base.labels.push(KeyValue {
                key: "nvidia.com/device-plugin.config".into(),
                value: name,
            });
        }
        let mut views = Vec::new();
        if operator_mig {
            any_operator_mig = true;
            // Node labels are per pool: each distinct node filling gets its own sub-pool
            // labelled with its own mig-parted config.
            let mut gpus: Vec<IndexMap<String, u32>> = Vec::new();
            match (&p.mig_layout, p.mig_configs.is_empty()) {
                (Some(l), _) => gpus.extend(std::iter::repeat_n(l.clone(), p.gpus.max as usize)),
                (None, false) => {
                    for c in &p.mig_configs {
                        gpus.extend(std::iter::repeat_n(c.layout.clone(), c.gpus as usize));
                    }
                }
                (None, true) => {}
            }
            let per = p.gpus_per_node.max(1) as usize;
            let mut nodes: Vec<Vec<IndexMap<String, u32>>> =
                gpus.chunks(per).map(<[_]>::to_vec).collect();
            // A last node with fewer GPUs in use still has all of them: unused ones stay
            // without MIG.
            let mut kinds: Vec<(Vec<IndexMap<String, u32>>, u32)> = Vec::new();
            for n in nodes.drain(..) {
                match kinds.iter_mut().find(|(k, _)| *k == n) {
                    Some((_, c)) => *c += 1,
                    None => kinds.push((n, 1)),
                }
            }
            let mut floor_left = p.nodes.min;
            for (k, (layouts, count)) in kinds.iter().enumerate() {
                let cfg = if kinds.len() == 1 {
                    format!("gpuplan-{}", p.name)
                } else {
                    format!("gpuplan-{}-{}", p.name, k + 1)
                };
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
                mig_configs.push(MigConfigView {
                    name: cfg.clone(),
                    entries,
                });
                let floor = floor_left.min(*count);
                floor_left -= floor;
                let mut v = PoolView {
                    name: if kinds.len() == 1 {
                        p.name.clone()
                    } else {
                        format!("{}-{}", p.name, k + 1)
                    },
                    ident: super::escape::hcl_ident(&if kinds.len() == 1 {
                        p.name.clone()
                    } else {
                        format!("{}-{}", p.name, k + 1)
                    }),
                    aks_name: aks_name(p, i * 10 + k),
                    min: floor,
                    max: *count,
                    autoscaled: floor != *count,
                    labels: base.labels.clone(),
                    ..base.clone()
                };
                v.labels.push(KeyValue {
                    key: "nvidia.com/mig.config".into(),
                    value: cfg,
                });
                views.push(v);
            }
        } else if aks_managed {
            let profile = p
                .mig_layout
                .as_ref()
                .and_then(|l| l.keys().next().cloned())
                .unwrap_or_default();
            let slices: String = profile.chars().take_while(char::is_ascii_digit).collect();
            base.gpu_instance = Some(format!("MIG{slices}g"));
            views.push(base);
        } else {
            views.push(base);
        }
        rendered.insert(
            p.name.clone(),
            views.iter().map(|v| v.name.clone()).collect(),
        );
        for mut v in views {
            if opts.capacity_reservations && !p.capacity_options.is_empty() && v.min > 0 {
                let ident = format!("{}_reservation", v.ident);
                v.reservation = Some(ident.clone());
                reservations.push(ReservationView {
                    ident,
                    name: format!("gpuplan-{}", v.name),
                    region: v.region.clone(),
                    region_alias: v.region_alias.clone(),
                    sku: v.sku.clone(),
                    count: v.min,
                    pool_ident: v.ident.clone(),
                });
            }
            flavors.push(FlavorView {
                name: v.name.clone(),
                labels: vec![KeyValue {
                    key: "gpuplan.io/pool".into(),
                    value: p.name.clone(),
                }],
                taints: v.taints.clone(),
            });
            pools.push(v);
        }
    }

    // Kueue: one ClusterQueue per team, quotas from the plan's peaks on the pools it uses.
    let mut teams: IndexMap<String, IndexMap<String, IndexMap<String, u32>>> = IndexMap::new();
    for p in &rec.pools {
        let resource = match (&p.mig_layout, p.sharing) {
            _ if p.sharing == "mig" && !p.mig_configs.is_empty() => None,
            (Some(l), "mig") => l.keys().next().map(|k| format!("nvidia.com/mig-{k}")),
            _ => Some("nvidia.com/gpu".to_owned()),
        };
        for w in &p.workloads {
            let Some(wl) = plan.workload(w) else { continue };
            let peak = u32::try_from(wl.replicas().max().max(0)).unwrap_or(0)
                * u32::try_from(wl.gang().max(1)).unwrap_or(1);
            let per = if p.sharing == "mig" || p.time_slicing_replicas.is_some() {
                1
            } else {
                u32::try_from(wl.gpus().max(1)).unwrap_or(1)
            };
            let resources: Vec<String> = match &resource {
                Some(r) => vec![r.clone()],
                None => p
                    .mig_configs
                    .iter()
                    .flat_map(|c| c.layout.keys().map(|k| format!("nvidia.com/mig-{k}")))
                    .collect(),
            };
            for r in resources {
                let flavor_names = rendered.get(&p.name).cloned().unwrap_or_default();
                for f in flavor_names {
                    *teams
                        .entry(wl.team.get().clone())
                        .or_default()
                        .entry(r.clone())
                        .or_default()
                        .entry(f)
                        .or_default() += peak * per;
                }
            }
        }
    }
    let teams = teams
        .into_iter()
        .map(|(team, by_resource)| {
            let resources: Vec<String> = by_resource.keys().cloned().collect();
            let mut flavor_names: Vec<String> = Vec::new();
            for fl in by_resource.values() {
                for f in fl.keys() {
                    if !flavor_names.contains(f) {
                        flavor_names.push(f.clone());
                    }
                }
            }
            let flavors = flavor_names
                .into_iter()
                .map(|flavor| FlavorQuotas {
                    quotas: resources
                        .iter()
                        .map(|r| ResourceQuota {
                            resource: r.clone(),
                            quota: by_resource
                                .get(r)
                                .and_then(|fl| fl.get(&flavor))
                                .copied()
                                .unwrap_or(0),
                        })
                        .collect(),
                    flavor,
                })
                .collect();
            TeamView {
                queue: format!("gpuplan-{team}"),
                name: team,
                resources,
                flavors,
            }
        })
        .collect();

    let serving = rec
        .pools
        .iter()
        .flat_map(|p| {
            p.workloads.iter().filter_map(move |w| {
                let wl = plan.workload(w)?;
                if wl.kind() != Kind::Inference {
                    return None;
                }
                let declared = wl
                    .server
                    .as_ref()
                    .and_then(|s| s.gpu_memory_utilization.as_ref())
                    .map(|u| *u.get());
                let (util, why) = match (p.gpu_memory_utilization, declared) {
                    (Some(u), _) => (
                        u,
                        format!(
                            "{} instances share each GPU; their caps add up to at most 0.95",
                            p.time_slicing_replicas.unwrap_or(1)
                        ),
                    ),
                    (None, Some(d)) => (
                        d,
                        "the plan's setting; the GPU or slice is the instance's own".into(),
                    ),
                    (None, None) => (0.9, "the GPU or slice is the instance's own".into()),
                };
                Some(ServingView {
                    workload: w.clone(),
                    namespace: wl.team.get().clone(),
                    pool: p.name.clone(),
                    gpu_memory_utilization: crate::core::num(util),
                    tensor_parallel_size: gpus_of(plan, w),
                    why,
                })
            })
        })
        .collect();

    let mut region_names: Vec<String> = rec.pools.iter().map(|p| p.region.clone()).collect();
    region_names.sort();
    region_names.dedup();
    View {
        plan: rec.plan.clone(),
        plan_file: crate::render::escape::path_label(&plan.file.stable_name()),
        provider: rec.provider.clone(),
        regions: region_names
            .into_iter()
            .map(|r| RegionView {
                alias: alias(&r),
                name: r,
            })
            .collect(),
        data: rec
            .data
            .iter()
            .map(|d| DataView {
                file: d.file.clone(),
                as_of: d.dated(),
            })
            .collect(),
        pools,
        capacity_reservations: reservations,
        mig_strategy: if any_operator_mig { "mixed" } else { "single" },
        mig_configs,
        sharing_configs,
        flavors,
        teams,
        serving,
        total_monthly_cost: crate::core::usd(rec.total_monthly_cost_usd),
    }
}
