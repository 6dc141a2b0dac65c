//! Kueue's objects for a cluster: a ResourceFlavor per rendered node pool, a ClusterQueue per
//! team and a LocalQueue in each team's namespace, one set per region (each region is its own
//! cluster in the Terraform, so no ClusterQueue names a flavor whose nodes are elsewhere).
//!
//! How Kueue admits, as modelled in `tests/all/kueue.rs` (kubernetes-sigs/kueue
//! `pkg/scheduler/flavorassigner/flavorassigner.go`): it tries a ClusterQueue's flavors in
//! order and takes the first with quota; a flavor whose `nodeLabels` contradict the pod's
//! nodeSelector on a key the queue's flavors use is skipped, as is one whose `nodeTaints` the
//! pod does not tolerate, where a flavor's own `tolerations` count as the pod's. So the
//! flavors carry the pool's taints and no tolerations, and every pod selects its pool
//! (`workloads/values.yaml`): admission lands it on its planned pool whatever the order.

use indexmap::IndexMap;
use serde::Serialize;

use super::model::{KeyValue, PoolView, TaintView};
use super::request::{aks_mig, gpu_request};
use crate::catalog::Catalog;
use crate::core::Sharing;
use crate::engine::recommend::{RecPool, Recommendation};
use crate::plan::Plan;

/// The order Kueue admits and preempts work in: a WorkloadPriorityClass per kind of wait. A
/// person waiting on a user-facing service comes first, other serving and notebooks next, and
/// training, batch and evaluation last (the source article: queue batch work behind what
/// people wait on). Every workload's pods name theirs (`kueue.x-k8s.io/priority-class`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Priority {
    UserFacing,
    Serving,
    Batch,
}

impl Priority {
    pub(crate) fn of(w: &crate::plan::Workload) -> Priority {
        use crate::core::Kind;
        if w.user_facing() {
            return Priority::UserFacing;
        }
        match w.kind() {
            Kind::Inference | Kind::Notebook => Priority::Serving,
            Kind::Training | Kind::Batch | Kind::Evaluation => Priority::Batch,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Priority::UserFacing => "gpuplan-user-facing",
            Priority::Serving => "gpuplan-serving",
            Priority::Batch => "gpuplan-batch",
        }
    }

    fn value(self) -> i32 {
        match self {
            Priority::UserFacing => 1000,
            Priority::Serving => 500,
            Priority::Batch => 100,
        }
    }

    fn description(self) -> &'static str {
        match self {
            Priority::UserFacing => "gpuplan: user-facing work; a person waits on it",
            Priority::Serving => "gpuplan: inference and notebooks nobody waits on live",
            Priority::Batch => "gpuplan: training, batch and evaluation; queued behind serving",
        }
    }
}

#[derive(Debug, Serialize)]
pub struct PriorityView {
    pub name: &'static str,
    pub value: i32,
    pub description: &'static str,
}

/// The ProvisioningRequest admission check for pools that scale from zero: Kueue admits a
/// workload there only once cluster-autoscaler has scaled up nodes for all of it
/// (`best-effort-atomic-scale-up`), so no expensive node starts for a job that then cannot be
/// admitted (kubernetes-sigs/kueue `site/content/en/docs/concepts/all_or_nothing.md`).
#[derive(Debug, Serialize)]
pub struct ProvisioningView {
    pub check: &'static str,
    pub config: &'static str,
    pub class: &'static str,
    /// The accelerator resources of the checked flavors: a pod asking for none of them needs
    /// no scale-up and is not checked.
    pub managed: Vec<String>,
}

/// One cluster's Kueue objects.
#[derive(Debug, Serialize)]
pub struct ClusterView {
    pub region: String,
    /// The rendered file, `kueue/<region>.yaml`.
    pub file: String,
    pub flavors: Vec<FlavorView>,
    pub teams: Vec<TeamView>,
    /// The cohort every team's ClusterQueue joins in this cluster.
    pub cohort: String,
    /// The priority classes of the workloads placed here, highest first.
    pub priorities: Vec<PriorityView>,
    /// The admission check for flavors that scale from zero, if any does and the nodes come
    /// from cluster-autoscaler (Karpenter serves no ProvisioningRequest).
    pub provisioning: Option<ProvisioningView>,
}

#[derive(Debug, Serialize, Clone)]
pub struct FlavorView {
    /// The cluster its nodes are in.
    #[serde(skip)]
    pub region: String,
    /// Its pool scales from zero nodes under cluster-autoscaler.
    #[serde(skip)]
    pub from_zero: bool,
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
    /// Its flavors the provisioning check runs for.
    pub checked_flavors: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct FlavorQuotas {
    pub flavor: String,
    pub quotas: Vec<ResourceQuota>,
}

#[derive(Debug, Serialize)]
pub struct ResourceQuota {
    pub resource: String,
    /// A Kubernetes quantity: `96`, `95.5`, `1382Gi`.
    pub quota: String,
}

/// A quota as a Kubernetes quantity: memory in GiB, cpu to the millicore, counts whole.
pub(super) fn quantity(resource: &str, q: f64) -> String {
    match resource {
        "memory" => format!("{}Gi", q.max(0.0).floor()),
        "cpu" => {
            let m = (q.max(0.0) * 1000.0).floor();
            if m % 1000.0 == 0.0 {
                format!("{}", m / 1000.0)
            } else {
                format!("{m}m")
            }
        }
        _ => format!("{}", q.max(0.0).floor()),
    }
}

/// Every cluster's Kueue objects: the flavors of its pools and each team's quotas there.
#[allow(clippy::too_many_arguments)]
pub(super) fn clusters(
    plan: &Plan,
    catalog: &Catalog,
    rec: &Recommendation,
    pools: &[PoolView],
    rendered: &IndexMap<String, Vec<String>>,
    view_layouts: &IndexMap<String, IndexMap<String, u32>>,
    flavors: Vec<FlavorView>,
    karpenter: bool,
) -> Vec<ClusterView> {
    let mut regions: Vec<String> = rec.pools.iter().map(|p| p.region.clone()).collect();
    regions.sort();
    regions.dedup();
    regions
        .into_iter()
        .map(|region| {
            let here: Vec<FlavorView> = flavors
                .iter()
                .filter(|f| f.region == region)
                .cloned()
                .collect();
            let checked: Vec<String> = here
                .iter()
                .filter(|f| f.from_zero && !karpenter)
                .map(|f| f.name.clone())
                .collect();
            let mut teams = teams(plan, catalog, rec, pools, rendered, view_layouts, &region);
            let mut managed = Vec::new();
            for t in &mut teams {
                t.checked_flavors = t
                    .flavors
                    .iter()
                    .map(|f| f.flavor.clone())
                    .filter(|f| checked.contains(f))
                    .collect();
                if !t.checked_flavors.is_empty() {
                    managed.extend(
                        t.resources
                            .iter()
                            .filter(|r| r.starts_with("nvidia.com/"))
                            .cloned(),
                    );
                }
            }
            managed.sort();
            managed.dedup();
            ClusterView {
                file: format!("kueue/{region}.yaml"),
                flavors: here,
                priorities: priorities(plan, rec, &region),
                provisioning: (!managed.is_empty()).then_some(ProvisioningView {
                    check: "gpuplan-provisioning",
                    config: "gpuplan-atomic-scale-up",
                    class: "best-effort-atomic-scale-up.autoscaling.x-k8s.io",
                    managed,
                }),
                teams,
                cohort: "gpuplan".to_owned(),
                region,
            }
        })
        .collect()
}

/// The priority classes of the workloads on `region`'s pools, highest first.
fn priorities(plan: &Plan, rec: &Recommendation, region: &str) -> Vec<PriorityView> {
    let mut used: Vec<Priority> = rec
        .pools
        .iter()
        .filter(|p| p.region == region)
        .flat_map(|p| p.workloads.iter())
        .filter_map(|w| plan.workload(w))
        .map(|w| Priority::of(w))
        .collect();
    used.sort();
    used.dedup();
    used.into_iter()
        .map(|p| PriorityView {
            name: p.name(),
            value: p.value(),
            description: p.description(),
        })
        .collect()
}

/// One ClusterQueue per team covering every resource its pods request in `region` (cpu,
/// memory and the GPU or MIG resource each pool really advertises), quotas from the team's
/// planned peak, each bounded by what the flavor's nodes have.
fn teams(
    plan: &Plan,
    catalog: &Catalog,
    rec: &Recommendation,
    pools: &[PoolView],
    rendered: &IndexMap<String, Vec<String>>,
    view_layouts: &IndexMap<String, IndexMap<String, u32>>,
    region: &str,
) -> Vec<TeamView> {
    // Kueue: one ClusterQueue per team covering every resource its pods request (cpu,
    // memory and the GPU or MIG resource each pool really advertises), quotas from the team's
    // planned peak, each bounded by what the flavor's nodes have.
    let mut teams: IndexMap<String, IndexMap<String, IndexMap<String, f64>>> = IndexMap::new();
    for p in rec.pools.iter().filter(|p| p.region == region) {
        let Some(sku) = catalog.sku(plan.provider(), &p.sku) else {
            continue;
        };
        let alloc = crate::engine::recommend::candidate::allocatable(sku, catalog);
        let spec = catalog.sku_gpu(sku).and_then(|g| g.mig.as_ref());
        let aks_mig = aks_mig(rec, p);
        for view_name in rendered.get(&p.name).cloned().unwrap_or_default() {
            let Some(v) = pools.iter().find(|v| v.name == view_name) else {
                continue;
            };
            let physical = physical(p, v, alloc, aks_mig, view_layouts.get(&view_name));
            let demand = Demand::of(plan, catalog, p, spec, aks_mig, &physical);
            for (team, r, q) in demand.quotas(&physical) {
                *teams
                    .entry(team)
                    .or_default()
                    .entry(r)
                    .or_default()
                    .entry(view_name.clone())
                    .or_default() += q;
            }
        }
    }
    teams
        .into_iter()
        .map(|(team, by_resource)| team_view(team, by_resource))
        .collect()
}

/// What a flavor's nodes advertise, per resource: Terraform's nodes and the ones Karpenter
/// may add above them.
fn physical(
    p: &RecPool,
    v: &PoolView,
    (cpu_alloc, mem_alloc): (f64, f64),
    aks_mig: bool,
    per_gpu_layouts: Option<&IndexMap<String, u32>>,
) -> IndexMap<String, f64> {
    let nodes = f64::from(v.max + v.karpenter_nodes);
    let mut physical: IndexMap<String, f64> = IndexMap::new();
    physical.insert("cpu".into(), (cpu_alloc * nodes * 1000.0).floor() / 1000.0);
    physical.insert("memory".into(), (mem_alloc * nodes).floor());
    let gpus = nodes * f64::from(p.gpus_per_node);
    // Whole GPUs, or the time-sliced shares of each.
    let shared = |physical: &mut IndexMap<String, f64>| {
        let shares = f64::from(p.time_slicing_replicas.unwrap_or(1));
        physical.insert("nvidia.com/gpu".into(), gpus * shares);
    };
    match p.sharing {
        Sharing::Mig if aks_mig => {
            // AKS runs the single strategy: every MIG instance is one `nvidia.com/gpu`.
            let instances = p
                .mig_layout
                .as_ref()
                .and_then(|l| l.values().next().copied())
                .unwrap_or(1);
            physical.insert("nvidia.com/gpu".into(), gpus * f64::from(instances));
        }
        Sharing::Mig => match per_gpu_layouts {
            Some(layouts) => {
                for (profile, n) in layouts {
                    *physical
                        .entry(format!("nvidia.com/mig-{profile}"))
                        .or_default() += f64::from(*n) * nodes;
                }
            }
            None => shared(&mut physical),
        },
        Sharing::Dedicated | Sharing::TimeSlicing | Sharing::Mps | Sharing::SharedServer => {
            shared(&mut physical)
        }
    }
    physical
}

/// What each team's pods on one flavor ask for at peak (`None`: some pod states no request
/// of that resource), and their share of the flavor's GPU resource.
struct Demand {
    asks: IndexMap<String, IndexMap<String, Option<f64>>>,
    accel: IndexMap<String, f64>,
}

impl Demand {
    fn of(
        plan: &Plan,
        catalog: &Catalog,
        p: &RecPool,
        spec: Option<&crate::catalog::MigSpec>,
        aks_mig: bool,
        physical: &IndexMap<String, f64>,
    ) -> Demand {
        let mut asks: IndexMap<String, IndexMap<String, Option<f64>>> = IndexMap::new();
        let mut accel: IndexMap<String, f64> = IndexMap::new();
        for w in &p.workloads {
            let Some(wl) = plan.workload(w) else { continue };
            let pods = f64::from(u32::try_from(wl.replicas().max().max(0)).unwrap_or(0))
                * f64::from(u32::try_from(wl.gang().max(1)).unwrap_or(1));
            let team = asks.entry(wl.team.get().clone()).or_default();
            let (resource, per_pod) = gpu_request(plan, catalog, p, wl, spec, aks_mig);
            if physical.contains_key(&resource) {
                let e = team.entry(resource.clone()).or_insert(Some(0.0));
                *e = e.map(|x| x + pods * per_pod);
                // As a share of the flavor's GPU resource, so MIG profiles compare.
                let of = physical.get(&resource).copied().unwrap_or(0.0);
                if of > 0.0 {
                    *accel.entry(wl.team.get().clone()).or_default() += pods * per_pod / of;
                }
            }
            for (r, each) in [
                ("cpu", wl.cpu.as_ref().map(|c| *c.get())),
                ("memory", wl.memory_gib.as_ref().map(|m| *m.get())),
            ] {
                let e = team.entry(r.to_owned()).or_insert(Some(0.0));
                *e = match (*e, each) {
                    (Some(x), Some(c)) => Some(x + pods * c),
                    _ => None,
                };
            }
        }
        Demand { asks, accel }
    }

    /// Each team's quota of each resource on the flavor, bounded by what its nodes have. A
    /// team whose pods state no cpu or memory request gets what the stating teams leave of
    /// the flavor, shared by GPU demand, instead of the whole flavor each: their quotas add up
    /// to what the nodes have, not to a multiple of it.
    fn quotas(&self, physical: &IndexMap<String, f64>) -> Vec<(String, String, f64)> {
        let (asks, accel) = (&self.asks, &self.accel);
        let stated = |r: &str| -> f64 {
            asks.values()
                .filter_map(|t| t.get(r).copied().flatten())
                .sum()
        };
        let unstated_accel = |r: &str| -> f64 {
            asks.iter()
                .filter(|(_, t)| matches!(t.get(r), Some(None)))
                .map(|(team, _)| accel.get(team).copied().unwrap_or(0.0))
                .sum()
        };
        let unstated_teams = |r: &str| {
            asks.values()
                .filter(|t| matches!(t.get(r), Some(None)))
                .count()
        };
        let mut quotas: Vec<(String, String, f64)> = Vec::new();
        for (team, by_resource) in asks {
            for (r, ask) in by_resource {
                let have = physical.get(r).copied().unwrap_or(0.0);
                let q = match ask {
                    Some(a) => a.min(have),
                    None => {
                        let left = (have - stated(r).min(have)).max(0.0);
                        let all = unstated_accel(r);
                        let share = if all > 0.0 {
                            accel.get(team).copied().unwrap_or(0.0) / all
                        } else {
                            1.0 / unstated_teams(r).max(1) as f64
                        };
                        left * share
                    }
                };
                quotas.push((team.clone(), r.clone(), q));
            }
        }
        quotas
    }
}

/// A team's ClusterQueue: its resources (cpu and memory first, then the accelerators, each
/// once) and its quota of each on every flavor it uses.
fn team_view(team: String, by_resource: IndexMap<String, IndexMap<String, f64>>) -> TeamView {
    let mut resources: Vec<String> = by_resource.keys().cloned().collect();
    resources.sort_by_key(|r| match r.as_str() {
        "cpu" => (0, String::new()),
        "memory" => (1, String::new()),
        other => (2, other.to_owned()),
    });
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
                .map(|r| {
                    let q = by_resource
                        .get(r)
                        .and_then(|fl| fl.get(&flavor))
                        .copied()
                        .unwrap_or(0.0);
                    ResourceQuota {
                        resource: r.clone(),
                        quota: quantity(r, q),
                    }
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
        checked_flavors: Vec::new(),
    }
}

/// What the Kueue template sees for one cluster.
#[derive(Debug, Serialize)]
pub struct KueueFile<'v> {
    pub plan: &'v str,
    pub provider: &'static str,
    pub plan_file: &'v str,
    pub kueue_api: &'v str,
    /// `kueue.x-k8s.io/v1beta2` names the cohort `cohortName`, v1beta1 `cohort`.
    pub cohort_field: &'static str,
    pub region: &'v str,
    pub cohort: &'v str,
    pub flavors: &'v [FlavorView],
    pub teams: &'v [TeamView],
    pub priorities: &'v [PriorityView],
    pub provisioning: Option<&'v ProvisioningView>,
    pub karpenter: bool,
}

/// Kueue's manager configuration for a plan with gangs (`kueue/values.yaml`, values of the
/// Kueue Helm chart): `waitForPodsReady`, Kueue's timeout-based all-or-nothing. An admitted
/// gang whose pods are not all ready in time is evicted, its quota released, and requeued
/// with backoff (kubernetes-sigs/kueue `site/content/en/docs/concepts/all_or_nothing.md`).
#[derive(Debug, Serialize)]
pub struct ConfigView {
    /// `config.kueue.x-k8s.io/v1beta2`, or v1beta1 (whose `waitForPodsReady` needs `enable`).
    pub api: &'static str,
    pub needs_enable: bool,
    /// Whole minutes: the longest time any gang needs to be ready once admitted.
    pub timeout_minutes: u32,
    /// The gang that sets it and its minutes, for the comment.
    pub longest: String,
    pub gangs: Vec<GangView>,
    /// Admission one gang at a time, where two gangs share a pool and could each hold part
    /// of what the other needs.
    pub block_admission: bool,
    pub shared_pools: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct GangView {
    pub workload: String,
    pub nodes: u32,
    pub minutes: String,
    /// The plan's `restart_minutes`, or the assumptions' default for its gang size.
    pub from_plan: bool,
}

/// The configuration for the plan's gangs placed by `rec`, if it has any.
pub(super) fn config(
    plan: &Plan,
    catalog: &Catalog,
    rec: &Recommendation,
    api: &str,
) -> Option<ConfigView> {
    let placed = |w: &str| rec.pools.iter().any(|p| p.workloads.iter().any(|x| x == w));
    let mut gangs: Vec<(GangView, f64)> = plan
        .workloads()
        .iter()
        .filter(|w| w.gang() > 1 && placed(w.name.get()))
        .map(|w| {
            let (minutes, default) = crate::engine::spot::restart_minutes(w, catalog);
            (
                GangView {
                    workload: w.name.get().clone(),
                    nodes: u32::try_from(w.gang()).unwrap_or(u32::MAX),
                    minutes: crate::core::num(minutes),
                    from_plan: !default,
                },
                minutes,
            )
        })
        .collect();
    if gangs.is_empty() {
        return None;
    }
    gangs.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.workload.cmp(&b.0.workload)));
    let (longest, minutes) = (&gangs[0].0, gangs[0].1);
    let mut shared_pools: Vec<String> = rec
        .pools
        .iter()
        .filter(|p| {
            p.workloads
                .iter()
                .filter(|w| gangs.iter().any(|(g, _)| &g.workload == *w))
                .count()
                > 1
        })
        .map(|p| p.name.clone())
        .collect();
    shared_pools.sort();
    let v1beta1 = api.ends_with("v1beta1");
    Some(ConfigView {
        api: if v1beta1 {
            "config.kueue.x-k8s.io/v1beta1"
        } else {
            "config.kueue.x-k8s.io/v1beta2"
        },
        needs_enable: v1beta1,
        timeout_minutes: minutes.ceil().clamp(1.0, f64::from(u32::MAX)) as u32,
        longest: format!("`{}` ({} minutes)", longest.workload, longest.minutes),
        block_admission: !shared_pools.is_empty(),
        shared_pools,
        gangs: gangs.into_iter().map(|(g, _)| g).collect(),
    })
}
