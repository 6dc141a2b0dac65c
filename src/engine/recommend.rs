//! `gpuplan recommend`: the cheapest fleet that honours every constraint of a plan.
//!
//! 1. Each workload's demand ([`demand`]) is matched against every SKU and region of the
//!    plan ([`candidate`]); a SKU that cannot run it is rejected with the constraint that
//!    failed.
//! 2. Each workload takes the candidate and capacity type with the lowest expected monthly
//!    cost (ties: the plan's region order, then catalog order).
//! 3. Workloads that chose the same SKU, region, capacity type and sharing settings, and may
//!    share a pool (their [`demand::Segment`]), form one pool. With `mig_manager = "aks"` a pool
//!    has one MIG profile, and profiles are merged upwards when that saves nodes.
//! 4. Each pool is packed: MIG instances onto GPUs optimally ([`crate::mig::pack`]), then
//!    replicas or prepared GPUs onto nodes ([`pack`]); the minimum covers the warm floor, the
//!    maximum the peak.
//! 5. Costs per pool, workload and team, the alternatives considered, and today's declared
//!    pools for comparison.

pub mod candidate;
mod declared;
pub mod demand;
mod improve;
pub mod pack;
mod rehome;

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::Serialize;

use crate::catalog::{Catalog, GpuModel, Sku};
use crate::core::{cents, HOURS_PER_MONTH};
use crate::plan::raw::{Capacity, MigManager, Provider, Sharing};
use crate::plan::Plan;
use candidate::{Candidate, Constraint, Fit, Rate};
use demand::{Demand, Segment};
use pack::{Item, NodeCap};

pub use declared::declared;

pub const SCHEMA: &str = "gpuplan.recommendation/v1";

/// The answer.
#[derive(Debug, Clone, Serialize)]
pub struct Recommendation {
    pub schema: &'static str,
    pub plan: String,
    pub provider: String,
    pub regions: Vec<String>,
    /// Expected monthly cost: floors all month, peaks for the workloads' hours.
    pub total_monthly_cost_usd: f64,
    /// Every pool at its maximum for the whole month (what `monthly_budget` is held to).
    pub total_monthly_cost_at_max_usd: f64,
    pub pools: Vec<RecPool>,
    pub workloads: Vec<WorkloadCost>,
    pub teams: Vec<TeamCost>,
    pub unsatisfied: Vec<Unsatisfied>,
    pub comparison: Option<Comparison>,
    pub findings: Vec<Finding>,
    pub data: Vec<DataUsed>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Nodes {
    pub min: u32,
    pub max: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct RecPool {
    pub name: String,
    pub provider: String,
    pub region: String,
    pub sku: String,
    pub gpu_model: String,
    pub gpus_per_node: u32,
    pub nodes: Nodes,
    pub capacity: &'static str,
    pub sharing: &'static str,
    pub segment: &'static str,
    /// Per-GPU MIG layout when every GPU carries the same one.
    pub mig_layout: Option<IndexMap<String, u32>>,
    /// Named per-GPU layouts with how many GPUs carry each (mixed MIG, gpu-operator).
    pub mig_configs: Vec<MigConfig>,
    pub time_slicing_replicas: Option<u32>,
    /// The memory cap each inference server on a shared GPU must set.
    pub gpu_memory_utilization: Option<f64>,
    pub workloads: Vec<String>,
    pub monthly_cost_usd: f64,
    pub monthly_cost_at_max_usd: f64,
    pub usd_per_node_hour: f64,
    /// Spot pools: paid node-hours per useful node-hour (interruptions and restarts).
    pub spot_waste_factor: Option<f64>,
    pub gpus: Nodes,
    pub stranded: Option<Stranded>,
    pub labels: IndexMap<String, String>,
    pub taints: Vec<String>,
    pub why: String,
    pub considered: Vec<Alternative>,
    pub capacity_options: Vec<CapacityOption>,
}

#[derive(Debug, Clone, Serialize)]
pub struct MigConfig {
    pub name: String,
    pub layout: IndexMap<String, u32>,
    pub gpus: u32,
}

/// Capacity that is paid for and not used at peak.
#[derive(Debug, Clone, Serialize)]
pub struct Stranded {
    /// MIG compute slices left unconfigured or unused.
    pub mig_compute_slices: u32,
    pub mig_memory_slices: u32,
    /// Time-sliced shares or whole GPUs nothing is placed on.
    pub gpu_units: u32,
    /// MIG instances configured (AKS creates all a profile allows) that no replica uses.
    pub mig_unused_instances: u32,
    pub optimal_packing: bool,
    pub packing_lower_bound_gpus: Option<u32>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Alternative {
    pub sku: String,
    pub region: String,
    pub capacity: &'static str,
    pub monthly_cost_usd: Option<f64>,
    pub delta_usd: Option<f64>,
    /// GPUs the alternative provisions at peak, when it was packed.
    pub gpus: Option<u32>,
    /// Why it is listed: `next-cheapest` (among the next cheapest options), `fewer-gpus`
    /// (for a pool whose GPUs idle because its replicas run out of vCPUs or RAM first, the
    /// option that idles fewer for the least money per GPU given back), or `not-considered`.
    pub kind: &'static str,
    pub note: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct CapacityOption {
    pub capacity: &'static str,
    pub monthly_cost_usd: f64,
    pub note: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct WorkloadCost {
    pub workload: String,
    pub team: String,
    pub pool: Option<String>,
    pub monthly_cost_usd: f64,
    pub usd_per_million_tokens: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TeamCost {
    pub team: String,
    pub monthly_cost_usd: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Unsatisfied {
    pub workload: String,
    pub constraint: &'static str,
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    pub today_monthly_cost_usd: f64,
    pub recommended_monthly_cost_usd: f64,
    pub saving_usd: f64,
    pub changes: Vec<Change>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Change {
    pub declared_pool: String,
    pub today_monthly_cost_usd: Option<f64>,
    /// What the declared pool's workloads cost in the recommended pools.
    pub recommended_monthly_cost_usd: f64,
    pub saving_usd: Option<f64>,
    pub moves_to: Vec<String>,
    pub note: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub rule: &'static str,
    pub severity: &'static str,
    pub message: String,
    pub workload: Option<String>,
    pub pool: Option<String>,
    /// Why the finding is accepted: the `[[allow]]` that matched it (`rules::settle_recommendation`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DataUsed {
    pub file: String,
    pub as_of: String,
    pub source: String,
}

impl Recommendation {
    /// The plan cannot be met: a workload has no SKU, or budget or quota is exceeded.
    pub fn unsatisfiable(&self) -> bool {
        !self.unsatisfied.is_empty() || self.findings.iter().any(|f| f.severity == "error")
    }
}

/// A workload's choice: where, and on what capacity.
struct Choice<'p, 'c> {
    d: Demand<'p>,
    c: Candidate<'c>,
    rate: Rate,
    /// Every candidate the workload had (for alternatives).
    all: Vec<Candidate<'c>>,
}

impl<'p, 'c> Choice<'p, 'c> {
    /// The same workload on another candidate and rate, as a trial member of a pool (without
    /// its other candidates, which only the first choice needs).
    fn with(&self, c: Candidate<'c>, rate: Rate) -> Choice<'p, 'c> {
        Choice {
            d: self.d.clone(),
            c,
            rate,
            all: Vec::new(),
        }
    }
}

/// Expected monthly cost of one workload on a candidate at a rate, from its node share (a
/// perfect packing); used to choose, not to report.
fn estimate(d: &Demand<'_>, c: &Candidate<'_>, r: &Rate, plan_hours: f64) -> f64 {
    let share = c.node_share * f64::from(d.gang.max(1));
    let floor = f64::from(d.floor);
    let burst = f64::from(d.peak - d.floor);
    match r.capacity {
        Capacity::Reserved1y | Capacity::Reserved3y => {
            share * (floor * r.usd * HOURS_PER_MONTH + burst * c.on_demand * d.hours)
        }
        _ => share * r.usd * r.waste * (floor * plan_hours + burst * d.hours),
    }
}

fn best_choice<'c>(
    d: &Demand<'_>,
    all: &[Candidate<'c>],
    plan_hours: f64,
) -> Option<(usize, Rate)> {
    let mut best: Option<(f64, usize, usize, Rate)> = None;
    for (i, c) in all.iter().enumerate() {
        for r in c.rates(d) {
            let cost = estimate(d, c, &r, plan_hours);
            let better = match &best {
                None => true,
                // Cheaper by more than a cent; on a tie the preferred region, then the
                // simpler commitment (on-demand before spot before reservations).
                Some((bc, _, rank, br)) => {
                    cost < bc - 0.005
                        || ((cost - bc).abs() <= 0.005
                            && (c.region_rank, cap_order(r.capacity))
                                < (*rank, cap_order(br.capacity)))
                }
            };
            if better {
                best = Some((cost, i, c.region_rank, r));
            }
        }
    }
    best.map(|(_, i, _, r)| (i, r))
}

/// Each workload with demand on its cheapest candidate and capacity type alone, and the
/// workloads no candidate can run, with why.
fn first_choices<'p, 'c>(
    plan: &'p Plan,
    catalog: &'c Catalog,
    plan_hours: f64,
) -> (Vec<Choice<'p, 'c>>, Vec<Unsatisfied>) {
    let mut unsatisfied = Vec::new();
    let mut choices = Vec::new();
    for d in demand::demands(plan, catalog) {
        if d.peak == 0 {
            continue;
        }
        match candidate::candidates(plan, catalog, &d) {
            Err(rejections) => unsatisfied.push(explain_rejections(plan, &d, &rejections)),
            Ok(all) => {
                if let Some((i, rate)) = best_choice(&d, &all, plan_hours) {
                    let c = all[i].clone();
                    choices.push(Choice { d, c, rate, all });
                }
            }
        }
    }
    (choices, unsatisfied)
}

fn cap_order(c: Capacity) -> u8 {
    match c {
        Capacity::OnDemand => 0,
        Capacity::Spot => 1,
        Capacity::Reserved1y => 2,
        Capacity::Reserved3y => 3,
        Capacity::CapacityReservation => 4,
        Capacity::CapacityBlock => 5,
    }
}

/// The (candidate, rate) a choice holds, as an index into its candidates.
fn pick_of(ch: &Choice<'_, '_>) -> (usize, Rate) {
    let i = ch
        .all
        .iter()
        .position(|c| c.sku.name == ch.c.sku.name && c.region == ch.c.region)
        .unwrap_or(0);
    (i, ch.rate.clone())
}

fn apply(choices: &mut [Choice<'_, '_>], picks: &[(usize, Rate)]) {
    for (ch, (i, rate)) in choices.iter_mut().zip(picks) {
        ch.c = ch.all[*i].clone();
        ch.rate = rate.clone();
    }
}

/// Workloads that chose the same SKU, region, capacity and sharing settings, and may share
/// nodes, form one pool.
fn group(choices: &[Choice<'_, '_>], mm: MigManager) -> BTreeMap<PoolKey, Vec<usize>> {
    let mut groups: BTreeMap<PoolKey, Vec<usize>> = BTreeMap::new();
    for (i, ch) in choices.iter().enumerate() {
        let key = (
            ch.d.segment,
            ch.c.sku.name.clone(),
            ch.c.region.clone(),
            ch.rate.capacity,
            pool_sharing(&ch.c.fit),
            fit_key(&ch.c.fit, mm),
        );
        groups.entry(key).or_default().push(i);
    }
    groups
}

/// The sharing settings that split pools: the fit without the replica-specific parts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum FitKey {
    Whole,
    Mig(Option<String>),
    Shared(u32),
    Server,
}

fn fit_key(fit: &Fit, mig_manager: MigManager) -> FitKey {
    match fit {
        Fit::Whole { .. } => FitKey::Whole,
        Fit::Mig { profile } => FitKey::Mig(match mig_manager {
            MigManager::Aks => Some(profile.name.clone()),
            MigManager::GpuOperator => None,
        }),
        Fit::Shared { replicas } if *replicas <= 1 => FitKey::Whole,
        Fit::Shared { replicas } => FitKey::Shared(*replicas),
        Fit::Server { .. } => FitKey::Server,
    }
}

type PoolKey = (Segment, String, String, Capacity, Sharing, FitKey);

/// The MIG manager in effect: the plan's, else AKS's managed MIG on Azure and the GPU
/// Operator's mig-manager elsewhere (EKS has no managed MIG).
pub fn mig_manager(plan: &Plan) -> MigManager {
    plan.mig_manager().unwrap_or(match plan.provider() {
        Provider::Azure => MigManager::Aks,
        Provider::Aws => MigManager::GpuOperator,
    })
}

/// The whole recommendation for a plan.
pub fn recommend(plan: &Plan, catalog: &Catalog) -> Recommendation {
    // A plan that states its DaemonSets' CPU overrides the catalog's allowance for it.
    let own;
    let catalog = match plan.daemonset_cpu() {
        Some(v) if v != catalog.assumptions.daemonset_cpu => {
            own = Catalog {
                assumptions: crate::catalog::Assumptions {
                    daemonset_cpu: v,
                    ..catalog.assumptions.clone()
                },
                ..catalog.clone()
            };
            &own
        }
        _ => catalog,
    };
    let plan_hours = plan.hours_per_month();
    let mm = mig_manager(plan);
    let (mut choices, unsatisfied) = first_choices(plan, catalog, plan_hours);

    // Three ways to choose, each packed for real; the cheapest fleet wins. Choosing alone
    // is exact for plans whose workloads never share a pool; the local searches let
    // workloads move to where they complement each other (see `improve`).
    let greedy: Vec<(usize, Rate)> = choices.iter().map(|ch| pick_of(ch)).collect();
    let cache = BuildCache::default();
    let mut best: Option<(f64, Vec<(usize, Rate)>)> = None;
    for strategy in [
        None,
        Some(improve::Objective::Fluid),
        Some(improve::Objective::Whole),
    ] {
        let picks = match strategy {
            None => greedy.clone(),
            Some(objective) => {
                let mut opts: Vec<improve::Options<'_, '_>> = choices
                    .iter()
                    .zip(&greedy)
                    .map(|(ch, g)| improve::Options::new(&ch.d, &ch.all, g))
                    .collect();
                improve::improve(&mut opts, catalog, plan_hours, mm, objective);
                opts.iter().map(|o| o.options[o.pick].clone()).collect()
            }
        };
        apply(&mut choices, &picks);
        let mut groups = group(&choices, mm);
        if mm == MigManager::Aks {
            merge_aks_profiles(&mut groups, &mut choices, catalog, plan_hours);
        }
        let cost: f64 = groups
            .iter()
            .map(|(key, members)| {
                let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
                build_cached(&cache, &ms, key.3, catalog, mm, plan_hours, false).cost
            })
            .sum();
        if best.as_ref().is_none_or(|(b, _)| cost < b - 0.005) {
            best = Some((cost, picks));
        }
    }
    if let Some((_, picks)) = best {
        apply(&mut choices, &picks);
    }
    let mut groups = group(&choices, mm);
    if mm == MigManager::Aks {
        merge_aks_profiles(&mut groups, &mut choices, catalog, plan_hours);
    }
    merge_pools(&mut groups, &mut choices, catalog, mm, plan_hours, &cache);
    repair_quota(
        plan,
        catalog,
        &mut groups,
        &mut choices,
        mm,
        plan_hours,
        &cache,
    );

    let mut pools = Vec::new();
    let mut workload_pool: IndexMap<String, (String, f64)> = IndexMap::new();
    for (key, members) in &groups {
        let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
        let built = build_cached(&cache, &ms, key.3, catalog, mm, plan_hours, true);
        let mut pool = describe(plan, catalog, key, &ms, &built, plan_hours, mm);
        pool.considered = alternatives(&choices, members, key, &built, catalog, mm, plan_hours);
        // Split the pool's cost over its workloads by the node-hours each asks for.
        let weights: Vec<f64> = ms
            .iter()
            .map(|m| m.c.node_share * f64::from(m.d.gang.max(1)) * m.d.replica_hours(plan_hours))
            .collect();
        let total_w: f64 = weights.iter().sum();
        for (m, wgt) in ms.iter().zip(&weights) {
            let share = if total_w > 0.0 {
                wgt / total_w
            } else {
                1.0 / ms.len() as f64
            };
            workload_pool.insert(m.d.name.to_owned(), (pool.name.clone(), built.cost * share));
        }
        pools.push(pool);
    }
    name_pools(&mut pools, &mut workload_pool, plan.regions().count() > 1);

    let mut workloads = Vec::new();
    let mut teams: BTreeMap<String, f64> = BTreeMap::new();
    for w in plan.workloads() {
        let (pool, cost) = workload_pool
            .get(w.name.get().as_str())
            .map_or((None, 0.0), |(p, c)| (Some(p.clone()), *c));
        let tokens = w.tokens_per_second.as_ref().map(|t| *t.get());
        let replica_hours = choices
            .iter()
            .find(|c| c.d.name == w.name.get())
            .map(|c| c.d.replica_hours(plan_hours));
        let per_million = match (tokens, replica_hours) {
            (Some(t), Some(h)) if t > 0.0 && h > 0.0 => Some(cost / (t * 3600.0 * h / 1e6)),
            _ => None,
        };
        *teams.entry(w.team.get().clone()).or_default() += cost;
        workloads.push(WorkloadCost {
            workload: w.name.get().clone(),
            team: w.team.get().clone(),
            pool,
            monthly_cost_usd: cents(cost),
            usd_per_million_tokens: per_million.map(|x| (x * 10_000.0).round() / 10_000.0),
        });
    }
    let total: f64 = pools.iter().map(|p| p.monthly_cost_usd).sum();
    let at_max: f64 = pools.iter().map(|p| p.monthly_cost_at_max_usd).sum();
    let mut findings = Vec::new();
    if let Some(b) = plan.monthly_budget() {
        if at_max > *b.get() {
            findings.push(Finding {
                rule: "GP017",
                severity: "error",
                message: format!(
                    "the recommended pools cost {} a month at their maximum size, above the budget of {}",
                    crate::core::usd(at_max),
                    crate::core::usd(*b.get())
                ),
                workload: None,
                pool: None,
                suppressed: None,
            });
        }
    }
    findings.extend(quota_findings(plan, catalog, &pools));
    for p in &pools {
        if let Some(s) = &p.stranded {
            if !s.optimal_packing {
                findings.push(Finding {
                    rule: "mig-packing",
                    severity: "note",
                    message: format!(
                        "the MIG packing of `{}` was not proven optimal within the search budget: {} GPUs, lower bound {}",
                        p.name,
                        p.gpus.max,
                        s.packing_lower_bound_gpus.unwrap_or(0)
                    ),
                    workload: None,
                    pool: Some(p.name.clone()),
                    suppressed: None,
                });
            }
        }
    }
    for p in &pools {
        // Pools are named only now; the option was found while they were built.
        if let Some(a) = p.considered.iter().find(|a| a.kind == "fewer-gpus") {
            // What pods may request on one of its nodes, so the claim can be checked.
            let room = catalog
                .sku(plan.provider(), &p.sku)
                .map(|sku| {
                    let (cpu, mem) = candidate::allocatable(sku, catalog);
                    format!(
                        " ({} vCPUs and {} GiB a node for pods)",
                        crate::core::num(cpu),
                        crate::core::num(mem)
                    )
                })
                .unwrap_or_default();
            findings.push(Finding {
                rule: "idle-gpus",
                severity: "note",
                message: format!(
                    "`{}` runs out of vCPUs or RAM before GPUs{room}: {} GPUs' worth of its {} idle at peak; {} {} would need {} GPUs for {} a month more (kept the cheaper pool)",
                    p.name,
                    idle_gpus(p.stranded.as_ref(), p.time_slicing_replicas),
                    p.gpus.max,
                    a.sku,
                    a.region,
                    a.gpus.unwrap_or(0),
                    crate::core::usd(a.delta_usd.unwrap_or(0.0)),
                ),
                workload: None,
                pool: Some(p.name.clone()),
                suppressed: None,
            });
        }
    }
    let comparison = compare(plan, catalog, &pools, &workloads, total);
    Recommendation {
        schema: SCHEMA,
        plan: plan.name().to_owned(),
        provider: plan.provider().as_str().to_owned(),
        regions: plan.regions().map(str::to_owned).collect(),
        total_monthly_cost_usd: cents(total),
        total_monthly_cost_at_max_usd: cents(at_max),
        pools,
        workloads,
        teams: teams
            .into_iter()
            .map(|(team, c)| TeamCost {
                team,
                monthly_cost_usd: cents(c),
            })
            .collect(),
        unsatisfied,
        comparison,
        findings,
        data: catalog
            .sources_for(plan.provider())
            .map(|s| DataUsed {
                file: s.file.clone(),
                as_of: s.as_of.to_string(),
                source: s.source.clone(),
            })
            .collect(),
    }
}

/// A pool's GPU capacity idle at peak, in whole GPUs (time-sliced shares summed, rounded
/// down).
fn idle_gpus(stranded: Option<&Stranded>, ts_replicas: Option<u32>) -> u32 {
    stranded.map_or(0, |s| s.gpu_units) / ts_replicas.unwrap_or(1).max(1)
}

fn pool_sharing(fit: &Fit) -> Sharing {
    match fit {
        Fit::Whole { .. } | Fit::Server { .. } => Sharing::Dedicated,
        Fit::Shared { replicas } if *replicas <= 1 => Sharing::Dedicated,
        Fit::Mig { .. } => Sharing::Mig,
        // MPS and time-slicing both come out as `Shared`; the workload says which.
        Fit::Shared { .. } => Sharing::TimeSlicing,
    }
}

/// Why no SKU fits: the constraint that rejected the candidates that got furthest.
fn explain_rejections(
    plan: &Plan,
    d: &Demand<'_>,
    rejections: &[crate::engine::recommend::candidate::Rejection],
) -> Unsatisfied {
    let regions: Vec<&str> = plan.regions().collect();
    let deepest = rejections.iter().map(|r| r.constraint).max();
    let Some(constraint) = deepest else {
        return Unsatisfied {
            workload: d.name.to_owned(),
            constraint: "catalog",
            message: format!(
                "no SKU of {} in the catalog can be considered for `{}`",
                plan.provider(),
                d.name
            ),
        };
    };
    let mut examples: Vec<&str> = Vec::new();
    for r in rejections.iter().filter(|r| r.constraint == constraint) {
        if !examples.contains(&r.detail.as_str()) {
            examples.push(&r.detail);
        }
    }
    examples.truncate(3);
    Unsatisfied {
        workload: d.name.to_owned(),
        constraint: constraint.as_str(),
        message: format!(
            "no SKU in {} can run `{}`: {} ({})",
            regions.join(", "),
            d.name,
            constraint.as_str(),
            examples.join("; ")
        ),
    }
}

/// What a pool comes to once packed.
#[derive(Debug, Clone)]
struct Built {
    nodes_min: u32,
    nodes_max: u32,
    cost: f64,
    cost_at_max: f64,
    usd_per_node_hour: f64,
    waste: f64,
    mig_layout: Option<IndexMap<String, u32>>,
    mig_configs: Vec<MigConfig>,
    ts_replicas: Option<u32>,
    stranded: Option<Stranded>,
}

/// Nodes for some replica counts, with the MIG geometry that got them there.
struct Packed {
    nodes: u32,
    layout: Option<IndexMap<String, u32>>,
    configs: Vec<MigConfig>,
    stranded: Option<Stranded>,
}

/// Node count for the given replica counts (one per member).
fn nodes_for(
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
    // Gangs take whole nodes and never share them.
    let mut gang_nodes = 0u32;
    let mut items: Vec<(Item, u32)> = Vec::new();
    let mut mig_demand: IndexMap<String, Vec<(usize, u32)>> = IndexMap::new();
    let mut server: Vec<(u32, f64, f64, u32)> = Vec::new();
    let mut ts_replicas = None;
    for (k, (m, &n)) in ms.iter().zip(counts).enumerate() {
        if n == 0 {
            continue;
        }
        if m.d.gang > 1 {
            gang_nodes += n * m.d.gang;
            continue;
        }
        match &m.c.fit {
            Fit::Whole { gpus } => items.push((
                Item {
                    units: *gpus,
                    cpu: m.d.cpu,
                    mem: m.d.memory_gib,
                },
                n,
            )),
            Fit::Shared { replicas } => {
                ts_replicas = Some(*replicas);
                items.push((
                    Item {
                        units: 1,
                        cpu: m.d.cpu,
                        mem: m.d.memory_gib,
                    },
                    n,
                ));
            }
            Fit::Server { share } => server.push((
                ((share * 1000.0).ceil() as u32).clamp(1, 1000),
                m.d.cpu,
                m.d.memory_gib,
                n,
            )),
            Fit::Mig { profile } => mig_demand
                .entry(profile.name.clone())
                .or_default()
                .push((k, n)),
        }
    }
    let mut layout = None;
    let mut configs = Vec::new();
    let mut stranded = None;
    let units_per_node = match ts_replicas {
        Some(r) if r > 1 => r * per_node,
        _ => per_node,
    };
    // What goes onto nodes, with the GPU units a node offers it: replicas (time-sliced shares
    // or whole GPUs), and GPUs prepared by a shared server or a MIG layout.
    let mut batches: Vec<(Vec<(Item, u32)>, u32)> = Vec::new();
    if !items.is_empty() {
        batches.push((items, units_per_node));
    }
    if !server.is_empty() {
        batches.push((pack::group(pack::server_gpus(&server)), per_node));
    }
    if !mig_demand.is_empty() {
        if let Some(spec) = gpu.mig.as_ref() {
            let demand: IndexMap<String, u32> = mig_demand
                .iter()
                .map(|(p, v)| (p.clone(), v.iter().map(|x| x.1).sum()))
                .collect();
            let packing = match mm {
                // One profile per pool: as many instances per GPU as place.
                MigManager::Aks => uniform_packing(spec, &demand),
                MigManager::GpuOperator => crate::mig::pack::pack(spec, &demand).ok(),
            };
            if let Some(p) = packing {
                // Host resources of the replicas that land on each GPU.
                let mut queues: IndexMap<String, Vec<(usize, u32)>> = mig_demand.clone();
                let mut gpu_items = Vec::new();
                for l in &p.gpus {
                    let (mut c, mut mm_) = (0.0, 0.0);
                    for (prof, &cnt) in l {
                        let q = queues.get_mut(prof);
                        let mut left = cnt;
                        if let Some(q) = q {
                            while left > 0 {
                                let Some(front) = q.first_mut() else { break };
                                let take = front.1.min(left);
                                c += ms[front.0].d.cpu * f64::from(take);
                                mm_ += ms[front.0].d.memory_gib * f64::from(take);
                                front.1 -= take;
                                left -= take;
                                if front.1 == 0 {
                                    q.remove(0);
                                }
                            }
                        }
                    }
                    gpu_items.push(Item {
                        units: 1,
                        cpu: c,
                        mem: mm_,
                    });
                }
                batches.push((pack::group(gpu_items), per_node));
                let (sc, sm) = p.stranded(spec);
                let distinct = distinct_layouts(&p.gpus);
                if distinct.len() == 1 {
                    layout = distinct.first().map(|(l, _)| l.clone());
                }
                configs = distinct
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
                stranded = Some(Stranded {
                    mig_compute_slices: sc,
                    mig_memory_slices: sm,
                    gpu_units: 0,
                    mig_unused_instances: configured.saturating_sub(used),
                    optimal_packing: p.optimal,
                    packing_lower_bound_gpus: Some(p.lower_bound),
                });
            }
        }
    }
    let mut nodes = gang_nodes;
    let mut free_units = 0;
    for (groups, units) in &batches {
        let (n, free) = pack::nodes(
            groups,
            NodeCap {
                units: *units,
                cpu,
                mem,
            },
            thorough,
        );
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

fn distinct_layouts(gpus: &[IndexMap<String, u32>]) -> Vec<(IndexMap<String, u32>, u32)> {
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
fn uniform_packing(
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

/// Packings already computed, by what determines them: the pool and its members' choices.
type BuildCache = std::cell::RefCell<std::collections::HashMap<String, Built>>;

/// The cache key of a packing: how thoroughly it is packed, the capacity type, and each
/// member's choice.
fn build_key(ms: &[&Choice<'_, '_>], capacity: Capacity, thorough: bool) -> String {
    let mut k = format!("{thorough}|{capacity:?}");
    for m in ms {
        k.push_str(&format!(
            "|{}:{}:{}:{:?}:{}",
            m.d.name, m.c.sku.name, m.c.region, m.c.fit, m.rate.usd
        ));
    }
    k
}

/// Thorough builds of these pools that the cache lacks, computed on every core.
fn prefetch_thorough(
    cache: &BuildCache,
    jobs: Vec<(Vec<&Choice<'_, '_>>, Capacity)>,
    catalog: &Catalog,
    mm: MigManager,
    plan_hours: f64,
) {
    let mut todo: Vec<(String, Vec<&Choice<'_, '_>>, Capacity)> = Vec::new();
    for (ms, capacity) in jobs {
        let key = build_key(&ms, capacity, true);
        if !cache.borrow().contains_key(&key) && todo.iter().all(|t| t.0 != key) {
            todo.push((key, ms, capacity));
        }
    }
    let workers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(todo.len());
    if workers < 2 {
        return;
    }
    // Largest first, so the last packing to finish is a small one.
    todo.sort_by_key(|t| std::cmp::Reverse(t.1.iter().map(|m| m.d.peak).sum::<u32>()));
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done: Vec<std::sync::Mutex<Option<Built>>> =
        todo.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((_, ms, capacity)) = todo.get(i) else {
                    break;
                };
                let b = build(ms, *capacity, catalog, mm, plan_hours, true);
                if let Ok(mut slot) = done[i].lock() {
                    *slot = Some(b);
                }
            });
        }
    });
    for ((key, _, _), slot) in todo.into_iter().zip(done) {
        if let Some(b) = slot.into_inner().ok().flatten() {
            cache.borrow_mut().insert(key, b);
        }
    }
}

fn build_cached(
    cache: &BuildCache,
    ms: &[&Choice<'_, '_>],
    capacity: Capacity,
    catalog: &Catalog,
    mm: MigManager,
    plan_hours: f64,
    thorough: bool,
) -> Built {
    let key = build_key(ms, capacity, thorough);
    if let Some(b) = cache.borrow().get(&key) {
        return b.clone();
    }
    let b = build(ms, capacity, catalog, mm, plan_hours, thorough);
    cache.borrow_mut().insert(key, b.clone());
    b
}

fn build(
    ms: &[&Choice<'_, '_>],
    capacity: Capacity,
    catalog: &Catalog,
    mm: MigManager,
    plan_hours: f64,
    thorough: bool,
) -> Built {
    let first = &ms[0].c;
    let peaks: Vec<u32> = ms.iter().map(|m| m.d.peak).collect();
    let floors: Vec<u32> = ms.iter().map(|m| m.d.floor).collect();
    let Packed {
        nodes: nodes_max,
        layout,
        configs,
        stranded,
    } = nodes_for(ms, &peaks, first.sku, first.gpu, catalog, mm, thorough);
    let nodes_min = if floors == peaks {
        nodes_max
    } else if floors.iter().all(|&f| f == 0) {
        0
    } else {
        nodes_for(ms, &floors, first.sku, first.gpu, catalog, mm, thorough).nodes
    };
    let nodes_min = nodes_min.min(nodes_max);
    let burst_hours = ms
        .iter()
        .filter(|m| m.d.peak > m.d.floor)
        .map(|m| m.d.hours)
        .fold(0.0, f64::max);
    let od = first.on_demand;
    // Spot waste differs by workload (gang, checkpoints): weight it by node-hours asked.
    let (mut wsum, mut wtot) = (0.0, 0.0);
    for m in ms {
        let h = m.c.node_share * f64::from(m.d.gang.max(1)) * m.d.replica_hours(plan_hours);
        wsum += m.rate.waste * h;
        wtot += h;
    }
    let waste = if wtot > 0.0 { wsum / wtot } else { 1.0 };
    let rate = ms[0].rate.usd;
    let floor_h = f64::from(nodes_min) * plan_hours;
    let burst_h = f64::from(nodes_max - nodes_min) * burst_hours;
    let (cost, cost_at_max) = match capacity {
        Capacity::Reserved1y | Capacity::Reserved3y => (
            f64::from(nodes_min) * rate * HOURS_PER_MONTH + burst_h * od,
            f64::from(nodes_min) * rate * HOURS_PER_MONTH
                + f64::from(nodes_max - nodes_min) * od * plan_hours,
        ),
        Capacity::Spot => (
            rate * waste * (floor_h + burst_h),
            rate * f64::from(nodes_max) * plan_hours,
        ),
        _ => (
            rate * (floor_h + burst_h),
            rate * f64::from(nodes_max) * plan_hours,
        ),
    };
    let ts = ms.iter().find_map(|m| match m.c.fit {
        Fit::Shared { replicas } if replicas > 1 => Some(replicas),
        _ => None,
    });
    Built {
        nodes_min,
        nodes_max,
        cost,
        // Restarts can make spot work need more node-hours than a month of the maximum.
        cost_at_max: cost_at_max.max(cost),
        usd_per_node_hour: rate,
        waste,
        mig_layout: layout,
        mig_configs: configs,
        ts_replicas: ts,
        stranded,
    }
}

/// The quota bucket a pool draws on: region and VM family (Azure) or quota code (AWS); spot
/// capacity has its own.
fn bucket(ch: &Choice<'_, '_>, capacity: Capacity) -> (String, String) {
    let family = if capacity == Capacity::Spot {
        ch.c.sku.spot_quota().to_owned()
    } else {
        ch.c.sku.quota_family.clone()
    };
    (ch.c.region.clone(), family)
}

/// vCPUs each known quota bucket reaches at the pools' maximum.
fn bucket_use(
    groups: &BTreeMap<PoolKey, Vec<usize>>,
    choices: &[Choice<'_, '_>],
    catalog: &Catalog,
    mm: MigManager,
    plan_hours: f64,
    cache: &BuildCache,
) -> BTreeMap<(String, String), f64> {
    let mut used: BTreeMap<(String, String), f64> = BTreeMap::new();
    for (key, members) in groups {
        let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
        let b = build_cached(cache, &ms, key.3, catalog, mm, plan_hours, false);
        *used.entry(bucket(ms[0], key.3)).or_default() +=
            f64::from(b.nodes_max) * f64::from(ms[0].c.sku.vcpus);
    }
    used
}

/// Known quota is a hard limit: while a bucket is over it, move the one workload whose move
/// to another region or VM family costs least, without pushing the destination over its
/// own quota. What cannot be moved stays, and GP014 reports it.
fn repair_quota(
    plan: &Plan,
    catalog: &Catalog,
    groups: &mut BTreeMap<PoolKey, Vec<usize>>,
    choices: &mut [Choice<'_, '_>],
    mm: MigManager,
    plan_hours: f64,
    cache: &BuildCache,
) {
    let quota = |b: &(String, String)| plan.known_quota(catalog, &b.0, &b.1).map(|q| q.0);
    let cost = |choices: &[Choice<'_, '_>], key: &PoolKey, members: &[usize]| {
        if members.is_empty() {
            return 0.0;
        }
        let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
        build_cached(cache, &ms, key.3, catalog, mm, plan_hours, false).cost
    };
    // Each round moves one workload; the bound keeps a plan with no way out finite.
    for _ in 0..choices.len().max(1) * 2 {
        let used = bucket_use(groups, choices, catalog, mm, plan_hours, cache);
        let Some(over) = used
            .iter()
            .find(|(b, v)| quota(b).is_some_and(|q| **v > q + 1e-9))
            .map(|(b, _)| b.clone())
        else {
            return;
        };
        let mut best: Option<(f64, usize, PoolKey, PoolKey, Candidate<'_>, Rate)> = None;
        for (key, members) in groups.iter() {
            if bucket(&choices[members[0]], key.3) != over {
                continue;
            }
            for &i in members {
                let ch = &choices[i];
                let rest: Vec<usize> = members.iter().copied().filter(|&j| j != i).collect();
                let leave = cost(choices, key, members) - cost(choices, key, &rest);
                for c in &ch.all {
                    let Some(rate) = c.rates(&ch.d).into_iter().find(|r| r.capacity == key.3)
                    else {
                        continue;
                    };
                    let trial = ch.with(c.clone(), rate.clone());
                    let dest_bucket = bucket(&trial, key.3);
                    if dest_bucket == over {
                        continue;
                    }
                    let dest = (
                        ch.d.segment,
                        c.sku.name.clone(),
                        c.region.clone(),
                        rate.capacity,
                        pool_sharing(&c.fit),
                        fit_key(&c.fit, mm),
                    );
                    let others = groups.get(&dest).cloned().unwrap_or_default();
                    let mut with: Vec<&Choice<'_, '_>> =
                        others.iter().map(|&j| &choices[j]).collect();
                    with.push(&trial);
                    let after = build_cached(cache, &with, dest.3, catalog, mm, plan_hours, false);
                    let before = cost(choices, &dest, &others);
                    if let Some(q) = quota(&dest_bucket) {
                        let before_nodes = if others.is_empty() {
                            0
                        } else {
                            let ms: Vec<&Choice<'_, '_>> =
                                others.iter().map(|&j| &choices[j]).collect();
                            build_cached(cache, &ms, dest.3, catalog, mm, plan_hours, false)
                                .nodes_max
                        };
                        let extra = f64::from(after.nodes_max - before_nodes.min(after.nodes_max))
                            * f64::from(c.sku.vcpus);
                        if used.get(&dest_bucket).copied().unwrap_or(0.0) + extra > q + 1e-9 {
                            continue;
                        }
                    }
                    let delta = after.cost - before - leave;
                    if best.as_ref().is_none_or(|b| delta < b.0 - 0.005) {
                        best = Some((delta, i, key.clone(), dest, c.clone(), rate));
                    }
                }
            }
        }
        let Some((_, i, from, to, c, rate)) = best else {
            return;
        };
        choices[i].c = c;
        choices[i].rate = rate;
        if let Some(m) = groups.get_mut(&from) {
            m.retain(|&j| j != i);
            if m.is_empty() {
                groups.remove(&from);
            }
        }
        groups.entry(to).or_default().push(i);
    }
}

/// A merge found: its saving, the pool folded, the pool it joins, and each moved workload's
/// new candidate and rate.
type Merge<'c> = (f64, PoolKey, PoolKey, Vec<(usize, Candidate<'c>, Rate)>);

/// Workloads two pools may hold between them for a merge to be judged by the final packing.
const THOROUGH_MERGE_MEMBERS: usize = 12;

/// Fold one pool into another of the same segment and capacity type where the packed fleet
/// gets cheaper: its workloads move to the other pool's SKU and region (bigger nodes pack
/// better), or time-sliced replicas join a pool with fewer, larger shares per GPU (one node
/// fewer of rounding). Repeats while a merge saves money; each merge removes a pool.
fn merge_pools(
    groups: &mut BTreeMap<PoolKey, Vec<usize>>,
    choices: &mut [Choice<'_, '_>],
    catalog: &Catalog,
    mm: MigManager,
    plan_hours: f64,
    cache: &BuildCache,
) {
    // First stage: every merge, judged by the quick packers, or by the final packing where
    // the two pools are small (a merge often saves only the node each pool rounds up to).
    // Second stage: merges onto nodes with the same card and at least as many GPUs (bigger
    // nodes pack better), judged by the final packing whatever the pools' size. The quick
    // packers misjudge large pools whose GPU, vCPU and RAM are all nearly full by a few
    // percent either way, more than such a merge saves (openb on AWS: folding the
    // g4dn.12xlarge serving pool into the g4dn.metal one saves 1.3% of the fleet, and the
    // quick packers put the two pools 7% above their packing). The final packing costs more
    // time, so it only judges what the first stage left.
    for final_stage in [false, true] {
        merge_stage(groups, choices, catalog, mm, plan_hours, cache, final_stage);
    }
}

fn merge_stage(
    groups: &mut BTreeMap<PoolKey, Vec<usize>>,
    choices: &mut [Choice<'_, '_>],
    catalog: &Catalog,
    mm: MigManager,
    plan_hours: f64,
    cache: &BuildCache,
    final_stage: bool,
) {
    let cost_of = |choices: &[Choice<'_, '_>], key: &PoolKey, members: &[usize], thorough: bool| {
        let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
        build_cached(cache, &ms, key.3, catalog, mm, plan_hours, thorough).cost
    };
    loop {
        let keys: Vec<PoolKey> = groups.keys().cloned().collect();
        // Every merge open now: the pool folded, the pool it joins, the moved workloads'
        // new candidates and rates, the joined pool's members, and how it is judged.
        let mut trials = Vec::new();
        for a in &keys {
            for b in &keys {
                if a == b || a.0 != b.0 || a.3 != b.3 || a.4 != b.4 {
                    continue;
                }
                let sku = |k: &PoolKey| groups[k].first().map(|&i| choices[i].c.sku);
                let onto_same_card = match (sku(a), sku(b)) {
                    (Some(x), Some(y)) => x.gpu_model == y.gpu_model && x.gpu_count <= y.gpu_count,
                    _ => false,
                };
                let small = groups[a].len() + groups[b].len() <= THOROUGH_MERGE_MEMBERS;
                let thorough = small || (final_stage && onto_same_card);
                if final_stage && !thorough {
                    continue;
                }
                // The replicas of `a`, re-homed on `b`'s SKU and region with `b`'s sharing.
                let shares = match b.5 {
                    FitKey::Shared(n) => Some(n),
                    _ => None,
                };
                let mut moved = Vec::new();
                for &i in &groups[a] {
                    let Some((c, rate)) =
                        rehome::moved_to(&choices[i], &b.1, &b.2, b.3, shares, catalog)
                    else {
                        break;
                    };
                    if fit_key(&c.fit, mm) != b.5 {
                        break;
                    }
                    moved.push((i, c, rate));
                }
                if moved.len() != groups[a].len() {
                    continue;
                }
                let mut joined: Vec<Choice<'_, '_>> = Vec::new();
                for &i in &groups[b] {
                    let ch = &choices[i];
                    joined.push(ch.with(ch.c.clone(), ch.rate.clone()));
                }
                for (i, c, rate) in &moved {
                    joined.push(choices[*i].with(c.clone(), rate.clone()));
                }
                trials.push((a, b, moved, joined, thorough));
            }
        }
        // The final packings these merges are judged by take most of the time: pack them
        // side by side first. Each packing is deterministic, so the answer is the same.
        let mut jobs: Vec<(Vec<&Choice<'_, '_>>, Capacity)> = Vec::new();
        for (a, b, _, joined, thorough) in &trials {
            if *thorough {
                let members = |k: &PoolKey| groups[k].iter().map(|&i| &choices[i]).collect();
                jobs.push((members(a), a.3));
                jobs.push((members(b), b.3));
                jobs.push((joined.iter().collect(), b.3));
            }
        }
        prefetch_thorough(cache, jobs, catalog, mm, plan_hours);
        let mut best: Option<Merge<'_>> = None;
        for (a, b, moved, joined, thorough) in trials {
            let before = cost_of(choices, a, &groups[a], thorough)
                + cost_of(choices, b, &groups[b], thorough);
            let refs: Vec<&Choice<'_, '_>> = joined.iter().collect();
            let after = build_cached(cache, &refs, b.3, catalog, mm, plan_hours, thorough).cost;
            let saving = before - after;
            if saving > 0.005 && best.as_ref().is_none_or(|x| saving > x.0) {
                best = Some((saving, a.clone(), b.clone(), moved));
            }
        }
        let Some((_, a, b, moved)) = best else { break };
        for (i, c, rate) in moved {
            choices[i].c = c;
            choices[i].rate = rate;
        }
        if let Some(members) = groups.remove(&a) {
            if let Some(target) = groups.get_mut(&b) {
                target.extend(members);
            }
        }
    }
}

/// AKS pools carry one MIG profile. Where workloads of one segment chose different profiles
/// on the same SKU, region and capacity, run them all on the largest profile when that needs
/// fewer nodes than separate pools.
fn merge_aks_profiles(
    groups: &mut BTreeMap<PoolKey, Vec<usize>>,
    choices: &mut [Choice<'_, '_>],
    catalog: &Catalog,
    plan_hours: f64,
) {
    let mut families: BTreeMap<(Segment, String, String, Capacity), Vec<PoolKey>> = BTreeMap::new();
    for key in groups.keys() {
        if let FitKey::Mig(Some(_)) = &key.5 {
            families
                .entry((key.0, key.1.clone(), key.2.clone(), key.3))
                .or_default()
                .push(key.clone());
        }
    }
    for keys in families.into_values().filter(|k| k.len() > 1) {
        let members: Vec<usize> = keys.iter().flat_map(|k| groups[k].clone()).collect();
        let separate: f64 = keys
            .iter()
            .map(|k| {
                let ms: Vec<&Choice<'_, '_>> = groups[k].iter().map(|&i| &choices[i]).collect();
                build(&ms, k.3, catalog, MigManager::Aks, plan_hours, false).cost
            })
            .sum();
        // The largest profile (memory slices, then compute) holds every member.
        let Some(big) = members
            .iter()
            .filter_map(|&i| match &choices[i].c.fit {
                Fit::Mig { profile } => Some(profile.clone()),
                _ => None,
            })
            .max_by_key(|p| (p.memory_slices, p.compute))
        else {
            continue;
        };
        let mut upsized: Vec<Choice<'_, '_>> = Vec::new();
        for &i in &members {
            let ch = &choices[i];
            let mut c = ch.c.clone();
            c.fit = Fit::Mig {
                profile: big.clone(),
            };
            let (ca, ma) = candidate::allocatable(c.sku, catalog);
            c.node_share = candidate::node_share(&c.fit, c.sku, c.gpu, &ch.d, ca, ma);
            upsized.push(ch.with(c, ch.rate.clone()));
        }
        let refs: Vec<&Choice<'_, '_>> = upsized.iter().collect();
        let merged = build(
            &refs,
            keys[0].3,
            catalog,
            MigManager::Aks,
            plan_hours,
            false,
        )
        .cost;
        if merged + 0.005 < separate {
            for k in &keys {
                groups.remove(k);
            }
            let key = (
                keys[0].0,
                keys[0].1.clone(),
                keys[0].2.clone(),
                keys[0].3,
                Sharing::Mig,
                FitKey::Mig(Some(big.name.clone())),
            );
            for (&i, up) in members.iter().zip(upsized) {
                choices[i].c = up.c;
            }
            groups.insert(key, members);
        }
    }
}

fn describe(
    plan: &Plan,
    catalog: &Catalog,
    key: &PoolKey,
    ms: &[&Choice<'_, '_>],
    b: &Built,
    plan_hours: f64,
    mm: MigManager,
) -> RecPool {
    let c = &ms[0].c;
    let segment = key.0;
    let sharing = match key.4 {
        Sharing::TimeSlicing if ms.iter().all(|m| m.d.sharing == Sharing::Mps) => Sharing::Mps,
        s => s,
    };
    let mut labels = IndexMap::new();
    labels.insert("gpuplan.io/segment".to_owned(), segment.as_str().to_owned());
    labels.insert("gpuplan.io/capacity".to_owned(), key.3.as_str().to_owned());
    let mut taints = vec![format!(
        "gpuplan.io/segment={}:NoSchedule",
        segment.as_str()
    )];
    taints.push("nvidia.com/gpu=present:NoSchedule".to_owned());
    if key.3 == Capacity::Spot {
        taints.push(match plan.provider() {
            Provider::Azure => "kubernetes.azure.com/scalesetpriority=spot:NoSchedule".to_owned(),
            Provider::Aws => "gpuplan.io/spot=true:NoSchedule".to_owned(),
        });
    }
    let gpu_mem_util = b.ts_replicas.map(|n| {
        let h = catalog.assumptions.time_slicing_memory_headroom;
        ((1.0 - h) / f64::from(n) * 100.0).floor() / 100.0
    });
    let why = why_line(catalog, ms, b, key, plan_hours, mm, gpu_mem_util);
    let per_node = c.sku.gpu_count;
    let mut capacity_options = Vec::new();
    if ms.iter().any(|m| m.d.w.user_facing()) && b.nodes_min > 0 {
        capacity_options.push(CapacityOption {
            capacity: Capacity::CapacityReservation.as_str(),
            monthly_cost_usd: cents(f64::from(b.nodes_min) * c.on_demand * HOURS_PER_MONTH),
            note: format!(
                "reserve the floor of {} node(s) so a scale-up or node repair cannot stock out ({}); billed at the on-demand rate for every hour of the month whether used or not",
                b.nodes_min,
                match plan.provider() {
                    Provider::Azure => "Azure capacity reservation group",
                    Provider::Aws => "EC2 On-Demand Capacity Reservation",
                },
            ),
        });
    }
    RecPool {
        name: String::new(),
        provider: plan.provider().as_str().to_owned(),
        region: c.region.clone(),
        sku: c.sku.name.clone(),
        gpu_model: c.gpu.name.clone(),
        gpus_per_node: per_node,
        nodes: Nodes {
            min: b.nodes_min,
            max: b.nodes_max,
        },
        capacity: key.3.as_str(),
        sharing: sharing.as_str(),
        segment: segment.as_str(),
        mig_layout: b.mig_layout.clone(),
        mig_configs: if b.mig_layout.is_some() {
            Vec::new()
        } else {
            b.mig_configs.clone()
        },
        time_slicing_replicas: b.ts_replicas,
        gpu_memory_utilization: gpu_mem_util,
        workloads: ms.iter().map(|m| m.d.name.to_owned()).collect(),
        monthly_cost_usd: cents(b.cost),
        monthly_cost_at_max_usd: cents(b.cost_at_max),
        usd_per_node_hour: b.usd_per_node_hour,
        spot_waste_factor: (key.3 == Capacity::Spot).then(|| (b.waste * 1e6).round() / 1e6),
        gpus: Nodes {
            min: b.nodes_min * per_node,
            max: b.nodes_max * per_node,
        },
        stranded: b.stranded.clone(),
        labels,
        taints,
        why,
        considered: Vec::new(),
        capacity_options,
    }
}

fn why_line(
    catalog: &Catalog,
    ms: &[&Choice<'_, '_>],
    b: &Built,
    key: &PoolKey,
    plan_hours: f64,
    mm: MigManager,
    gpu_mem_util: Option<f64>,
) -> String {
    use crate::core::rate as r;
    let c = &ms[0].c;
    let n_candidates: usize = ms.iter().map(|m| m.all.len()).max().unwrap_or(0);
    let mut parts = vec![format!(
        "cheapest expected cost of {n_candidates} SKU/region candidates that fit: {} x {} per node at {}/h in {}",
        c.sku.gpu_count,
        c.gpu.name,
        r(c.on_demand),
        c.region
    )];
    match &c.fit {
        Fit::Mig { profile } => parts.push(match mm {
            MigManager::Aks => format!(
                "MIG `{}` on every GPU (mig_manager = aks: one profile per pool)",
                profile.name
            ),
            MigManager::GpuOperator => format!(
                "MIG layouts packed optimally (mig_manager = gpu-operator): {} GPU(s){}",
                b.nodes_max * c.sku.gpu_count,
                b.stranded
                    .as_ref()
                    .map(|s| format!(
                        ", {} compute slice(s) stranded",
                        s.mig_compute_slices
                    ))
                    .unwrap_or_default()
            ),
        }),
        Fit::Shared { replicas } if *replicas > 1 => parts.push(format!(
            "{} time-sliced replicas per GPU (compute share and memory); each server caps memory at {} so the caps add up to {} of the card",
            replicas,
            gpu_mem_util.map_or("-".into(), crate::core::num),
            crate::core::num(1.0 - catalog.assumptions.time_slicing_memory_headroom)
        )),
        Fit::Server { .. } => parts.push(
            "one server process hosts the shares of a GPU; the device plugin sees whole GPUs".into(),
        ),
        _ => {}
    }
    if ms.iter().any(|m| m.d.gang > 1) {
        parts.push(format!(
            "gangs take whole nodes; the pool holds the largest gang ({} nodes)",
            ms.iter().map(|m| m.d.gang).max().unwrap_or(1)
        ));
    }
    let cap = key.3;
    let spot_detail = |m: &Choice<'_, '_>| -> String {
        match &m.c.spot {
            Some(q) => {
                let a = &q.assessment;
                let band = a
                    .band
                    .as_ref()
                    .map_or("unknown".to_owned(), |b| b.label.clone());
                match (&q.effective, a.economics, a.break_even) {
                    (Ok(_), Some(e), Some(be)) => format!(
                        "spot waste {:.4}x paid per useful hour vs break-even {:.2}x (on-demand {} / spot {}; band {band} = {}% of nodes a month, hazard {:.2e}/node-hour, gang {}, checkpoint {} min, restart {} min{})",
                        e.waste_factor,
                        be,
                        r(a.on_demand.unwrap_or(0.0)),
                        r(a.spot.unwrap_or(0.0)),
                        crate::core::num(a.monthly_interruption.unwrap_or(0.0) * 100.0),
                        e.node_hazard,
                        m.d.gang,
                        crate::core::num(a.checkpoint_minutes.unwrap_or(0.0)),
                        crate::core::num(a.restart_minutes),
                        if a.restart_is_default { ", default" } else { "" }
                    ),
                    (Ok(eff), _, Some(be)) => format!(
                        "spot {}/useful hour vs on-demand {} (break-even {:.2}x; band {band}; stateless: only the restart is lost)",
                        r(*eff),
                        r(a.on_demand.unwrap_or(0.0)),
                        be
                    ),
                    (Err(why), _, _) => format!("spot not open: {why}"),
                    _ => "spot not assessed".to_owned(),
                }
            }
            None => "no spot price".to_owned(),
        }
    };
    match cap {
        Capacity::Spot => parts.push(format!("spot: {}", spot_detail(ms[0]))),
        Capacity::OnDemand => {
            let m = ms[0];
            parts.push(format!("on-demand; {}", spot_detail(m)));
            if m.c.reserved_1y.is_none() && m.c.reserved_3y.is_none() && b.nodes_min > 0 {
                parts.push("no reserved price in the catalog (refresh live data)".into());
            }
        }
        Capacity::Reserved1y | Capacity::Reserved3y => {
            let m = ms[0];
            parts.push(format!(
                "{} for the floor of {} node(s): they run {} of {} h a month, above the reserved/on-demand price ratio {:.2}; nodes above the floor on-demand",
                cap.as_str(),
                b.nodes_min,
                crate::core::num(plan_hours),
                crate::core::num(HOURS_PER_MONTH),
                m.rate.usd / m.c.on_demand
            ));
        }
        Capacity::CapacityReservation | Capacity::CapacityBlock => {}
    }
    parts.join("; ")
}

/// Other SKUs, regions and capacity types every workload of the pool could use, cheapest
/// first, with their cost delta; for a pool that idles GPUs, the cheapest way to fewer of
/// them; and the capacity types that were closed, with why.
fn alternatives(
    choices: &[Choice<'_, '_>],
    members: &[usize],
    key: &PoolKey,
    chosen: &Built,
    catalog: &Catalog,
    mm: MigManager,
    plan_hours: f64,
) -> Vec<Alternative> {
    let first = &choices[members[0]];
    // (estimated cost, estimated GPUs, the pool there, its members)
    let mut options: Vec<(f64, f64, PoolKey, rehome::Moved<'_>)> = Vec::new();
    for c0 in &first.all {
        for r0 in c0.rates(&first.d) {
            if c0.sku.name == key.1 && c0.region == key.2 && r0.capacity == key.3 {
                continue;
            }
            let Some((to, moved)) = rehome::rehomed(
                choices,
                members,
                &c0.sku.name,
                &c0.region,
                r0.capacity,
                catalog,
                mm,
            ) else {
                continue;
            };
            let mut est = 0.0;
            let mut gpus = 0.0;
            for (i, c, rate) in &moved {
                let d = &choices[*i].d;
                est += estimate(d, c, rate, plan_hours);
                gpus += f64::from(d.peak)
                    * f64::from(d.gang.max(1))
                    * c.node_share
                    * f64::from(c.sku.gpu_count);
            }
            options.push((est, gpus, to, moved));
        }
    }
    options.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.2.cmp(&b.2)));
    let pack = |to: &PoolKey, moved: &rehome::Moved<'_>| -> (Built, u32) {
        let trial: Vec<Choice<'_, '_>> = moved
            .iter()
            .map(|(i, c, rate)| choices[*i].with(c.clone(), rate.clone()))
            .collect();
        let refs: Vec<&Choice<'_, '_>> = trial.iter().collect();
        let b = build(&refs, to.3, catalog, mm, plan_hours, false);
        let per_node = refs.first().map_or(0, |m| m.c.sku.gpu_count);
        let gpus = b.nodes_max * per_node;
        (b, gpus)
    };
    let mut out = Vec::new();
    for (_, _, to, moved) in options.iter().take(3) {
        let (b, gpus) = pack(to, moved);
        out.push(Alternative {
            sku: to.1.clone(),
            region: to.2.clone(),
            capacity: to.3.as_str(),
            monthly_cost_usd: Some(cents(b.cost)),
            delta_usd: Some(cents(b.cost - chosen.cost)),
            gpus: Some(gpus),
            kind: "next-cheapest",
            note: format!("{} node(s), {gpus} GPU(s) at peak", b.nodes_max),
        });
    }
    // A pool whose replicas run out of vCPUs or RAM before GPUs pays for GPUs nothing uses.
    // The recommendation stays the cheapest; the trade is listed beside it: the option that
    // idles fewer GPUs for the least money per GPU given back (estimated from node shares,
    // then packed), if it gives back at least half of the idle GPUs and no listed option
    // already provisions fewer.
    let ms: Vec<&Choice<'_, '_>> = members.iter().map(|&i| &choices[i]).collect();
    let chosen_gpus = chosen.nodes_max * first.c.sku.gpu_count;
    let idle = idle_gpus(chosen.stranded.as_ref(), chosen.ts_replicas);
    let listed_fewer = out.iter().any(|a| a.gpus.is_some_and(|g| g < chosen_gpus));
    // Shown where at least a node's worth of GPUs idles, which rounding alone cannot explain.
    let per_node = first.c.sku.gpu_count.max(1);
    if idle >= per_node && !listed_fewer && ms.iter().all(|m| m.d.gang <= 1) {
        let here: f64 = ms
            .iter()
            .map(|m| estimate(&m.d, &m.c, &m.rate, plan_hours))
            .sum();
        let per_gpu = |o: &(f64, f64, PoolKey, rehome::Moved<'_>)| {
            (o.0 - here) / (f64::from(chosen_gpus) - o.1)
        };
        let mut leaner: Vec<&(f64, f64, PoolKey, rehome::Moved<'_>)> = options
            .iter()
            .skip(3)
            .filter(|o| o.1 < f64::from(chosen_gpus) - 0.5)
            .collect();
        leaner.sort_by(|a, b| per_gpu(a).total_cmp(&per_gpu(b)).then(a.1.total_cmp(&b.1)));
        // Estimates and packings disagree most on such pools: pack the few best and keep the
        // one that gives GPUs back cheapest as packed.
        let best = leaner
            .into_iter()
            .take(3)
            .filter_map(|(_, _, to, moved)| {
                let (b, gpus) = pack(to, moved);
                // Worth showing when it gives back at least half of the idle GPUs.
                (gpus < chosen_gpus && 2 * (chosen_gpus - gpus) >= idle).then(|| {
                    let per = (b.cost - chosen.cost) / f64::from(chosen_gpus - gpus);
                    (per, to, b, gpus)
                })
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(a.3.cmp(&b.3)));
        if let Some((_, to, b, gpus)) = best {
            let fewer = chosen_gpus - gpus;
            let delta = b.cost - chosen.cost;
            out.push(Alternative {
                sku: to.1.clone(),
                region: to.2.clone(),
                capacity: to.3.as_str(),
                monthly_cost_usd: Some(cents(b.cost)),
                delta_usd: Some(cents(delta)),
                gpus: Some(gpus),
                kind: "fewer-gpus",
                note: format!(
                    "{} node(s), {gpus} GPU(s) at peak: {fewer} fewer GPUs, {} a month per GPU given back",
                    b.nodes_max,
                    crate::core::usd(delta / f64::from(fewer)),
                ),
            });
        }
    }
    // Spot that was not open, once per pool.
    if key.3 != Capacity::Spot {
        if let Some(why) = ms.iter().find_map(|m| match &m.c.spot {
            Some(q) => q.effective.as_ref().err().cloned(),
            None => None,
        }) {
            out.push(Alternative {
                sku: key.1.clone(),
                region: key.2.clone(),
                capacity: Capacity::Spot.as_str(),
                monthly_cost_usd: None,
                delta_usd: None,
                gpus: None,
                kind: "not-considered",
                note: format!("not considered: {why}"),
            });
        }
    }
    out
}

/// DNS-1123 names from what a pool is: segment, GPU, sharing, capacity; numbered on clashes.
/// Names depend on the plan, not on the answer: a plan with several regions always gets
/// the region in its pool names, so a change that moves one pool renames no other.
fn name_pools(
    pools: &mut [RecPool],
    workload_pool: &mut IndexMap<String, (String, f64)>,
    multi_region: bool,
) {
    let mut seen: BTreeMap<String, u32> = BTreeMap::new();
    let mut renames = Vec::new();
    for p in pools.iter_mut() {
        let gpu: String = p
            .gpu_model
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let mut name = format!("{}-{}-{}", p.segment, gpu, p.sharing);
        if p.capacity == "spot" {
            name.push_str("-spot");
        }
        if multi_region {
            name.push('-');
            name.push_str(&p.region);
        }
        let mut name: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        name.truncate(60);
        let name_trim = name.trim_matches('-').to_owned();
        let n = seen.entry(name_trim.clone()).or_insert(0);
        *n += 1;
        let final_name = if *n > 1 {
            format!("{name_trim}-{n}")
        } else {
            name_trim
        };
        renames.push((p.workloads.clone(), final_name.clone()));
        p.name = final_name;
    }
    for (ws, name) in renames {
        for w in ws {
            if let Some(e) = workload_pool.get_mut(&w) {
                e.0 = name.clone();
            }
        }
    }
}

fn quota_findings(plan: &Plan, catalog: &Catalog, pools: &[RecPool]) -> Vec<Finding> {
    let mut need: BTreeMap<(String, String), f64> = BTreeMap::new();
    for p in pools {
        let Some(sku) = catalog.sku(plan.provider(), &p.sku) else {
            continue;
        };
        let family = if p.capacity == "spot" {
            sku.spot_quota().to_owned()
        } else {
            sku.quota_family.clone()
        };
        *need.entry((p.region.clone(), family)).or_default() +=
            f64::from(p.nodes.max) * f64::from(sku.vcpus);
    }
    let mut out = Vec::new();
    for ((region, family), vcpus) in need {
        if let Some((limit, from)) = plan.known_quota(catalog, &region, &family) {
            if vcpus > limit {
                out.push(Finding {
                    rule: "GP014",
                    severity: "error",
                    message: format!(
                        "the recommended pools reach {} vCPUs of `{family}` in {region}, above the known quota of {} (from {from}): request more quota or lower the peaks",
                        crate::core::num(vcpus),
                        crate::core::num(limit)
                    ),
                    workload: None,
                    pool: None,
                    suppressed: None,
                });
            }
        }
    }
    out
}

/// Today's declared pools against the recommendation.
fn compare(
    plan: &Plan,
    catalog: &Catalog,
    pools: &[RecPool],
    workload_costs: &[WorkloadCost],
    recommended: f64,
) -> Option<Comparison> {
    if plan.pools().is_empty() {
        return None;
    }
    let mut today = 0.0;
    let mut changes = Vec::new();
    for p in plan.pools() {
        let cost = crate::engine::cost::declared_pool(plan, catalog, p).map(|c| c.expected);
        today += cost.unwrap_or(0.0);
        let mut moves: Vec<String> = Vec::new();
        for w in &p.workloads {
            if let Some(rp) = pools.iter().find(|rp| rp.workloads.contains(w.get())) {
                if !moves.contains(&rp.name) {
                    moves.push(rp.name.clone());
                }
            }
        }
        let note = match (&cost, moves.is_empty()) {
            (None, _) => format!(
                "no price for `{}` in {} in the catalog",
                p.sku.get(),
                p.region.get()
            ),
            (Some(_), true) => "no workload needs it: delete the pool".to_owned(),
            (Some(_), false) => format!(
                "its workloads move to {}",
                moves
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        // What the pool's workloads cost where they are recommended to run.
        let recommended_here: f64 = workload_costs
            .iter()
            .filter(|w| p.workloads.iter().any(|x| x.get() == &w.workload))
            .map(|w| w.monthly_cost_usd)
            .sum();
        changes.push(Change {
            declared_pool: p.name.get().clone(),
            today_monthly_cost_usd: cost.map(cents),
            recommended_monthly_cost_usd: cents(recommended_here),
            saving_usd: cost.map(|c| cents(c - recommended_here)),
            moves_to: moves,
            note,
        });
    }
    Some(Comparison {
        today_monthly_cost_usd: cents(today),
        recommended_monthly_cost_usd: cents(recommended),
        saving_usd: cents(today - recommended),
        changes,
    })
}

/// The recommender's model and every assumption it makes, with the values in force
/// (`gpuplan explain recommend`).
pub fn model_text(catalog: &Catalog) -> String {
    use std::fmt::Write as _;
    let a = &catalog.assumptions;
    let reserved_64 = |p: Provider| {
        if a.kube_reserved_cpu.contains_key(&p) {
            format!(
                "{} m",
                crate::core::num(a.kube_reserved_cpu(p, 64.0) * 1000.0)
            )
        } else {
            "none listed".to_owned()
        }
    };
    let mut o = String::from(
        "# How `gpuplan recommend` decides\n\n\
         ## Constraints a SKU is held to, in this order\n",
    );
    for c in constraint_names() {
        let _ = writeln!(o, "- {c}");
    }
    o.push_str(
        "\nA workload no SKU satisfies is reported with the constraint that rejected the \
         candidates that got furthest, and the command exits 1.\n\n\
         ## Pools\n\
         Training, user-facing inference (serving), other inference, interactive work \
         (notebooks) and batch/evaluation never share a pool; each pool is tainted \
         `gpuplan.io/segment=<segment>:NoSchedule`. Within a segment, workloads that chose the \
         same SKU, region, capacity type and sharing settings share a pool: time-slicing and \
         MPS are node-wide with one replica count per node, and with `mig_manager = \"aks\"` \
         a pool carries one MIG profile (merged upwards when that needs fewer nodes). Gangs \
         take whole nodes. The minimum covers the warm floor (user-facing workloads keep at \
         least one replica; batch and evaluation, `scale_to_zero` and workloads that do not \
         run all month drop to zero), the maximum covers the peak.\n\n\
         ## Choosing\n\
         Each workload first takes the candidate and capacity type with the lowest expected \
         monthly cost (ties: the plan's region order, then on-demand before spot before \
         reservations). Two local searches then move one workload at a time to where it \
         complements the others; all three answers are packed for real and the cheapest \
         fleet is kept. MIG instances are packed onto GPUs optimally (branch and bound, \
         proven by a lower bound); replicas onto nodes by the best of first fit decreasing, a \
         dot-product fill, a pattern search and, for the final pools, column generation (the \
         pattern LP over GPU units, vCPUs and RAM, rounded by fixing whole nodes). Merges of \
         small pools are judged by that final packing. The fleet is the cheapest, not the one \
         with the fewest GPUs: a pool whose replicas run out of vCPUs or RAM with a node's \
         worth of GPUs idle keeps them, and an `idle-gpus` note prices the cheapest way to \
         fewer GPUs.\n\n",
    );
    let _ = writeln!(
        o,
        "## Assumptions (providers/assumptions.toml)\n\
         - pods may request a node's vCPUs less the kubelet's kube-reserved CPU (the \
         provider's published schedule: {} on AKS and {} on EKS for a 64-vCPU node) and less \
         {} vCPU for the system DaemonSets (the GPU Operator's request none by default; a \
         plan's `[cluster] daemonset_cpu` replaces it), and {}% of its RAM\n\
         - time-sliced and MPS instances share a GPU equally; their memory caps add up to {} of \
         the card (`server.gpu_memory_utilization` = {} / replicas, rounded down)\n\
         - cost: the floor runs every hour of the plan, nodes above it for the workloads' \
         `hours_per_month`; spot node-hours are divided by the useful-work fraction\n\
         - spot is closed to user-facing workloads, to workloads that are not `interruptible`, \
         and to training or batch without `checkpoint_minutes`\n\
         - spot interruptions are a Poisson process per node; a gang dies when any node goes",
        reserved_64(Provider::Azure),
        reserved_64(Provider::Aws),
        crate::core::num(a.daemonset_cpu),
        crate::core::num(a.allocatable_memory_share * 100.0),
        crate::core::num(1.0 - a.time_slicing_memory_headroom),
        crate::core::num(1.0 - a.time_slicing_memory_headroom),
    );
    for (i, aws, azure, p) in &a.band_monthly_interruption {
        let h = crate::engine::spot::node_hazard(*p);
        let _ = writeln!(
            o,
            "  - band {i} (AWS `{aws}`, Azure `{azure}`): {}% of nodes interrupted a month, hazard {:.3e} per node-hour",
            crate::core::num(p * 100.0),
            h
        );
    }
    let _ = writeln!(
        o,
        "- restart time when the plan gives no `restart_minutes`: {} x (1 + log2(gang nodes)) \
         + {} + {} minutes (re-acquire every node of the gang, pull the image, load weights): \
         {} min for one node, {} min for a 64-node gang\n\
         - expected wall time per checkpoint interval C with restart R at gang hazard λ: \
         e^(λR) (e^(λC) - 1) / λ; stateless work loses only the restart\n\
         - spot wins while paid hours per useful hour stay below the break-even on-demand / \
         spot price (the 8 x H100 example: $98.32 / $18.17 = 5.41x)\n\
         - reservations (1 or 3 years) cover the floor when it runs more of the month than \
         the reserved / on-demand price ratio; they never exceed the floor (GP023). No \
         reserved prices are embedded: a refreshed catalog brings them\n\
         - a capacity reservation for a user-facing floor is offered as an option, priced at \
         the on-demand rate for every hour of the month",
        crate::core::num(a.node_acquire_minutes),
        crate::core::num(a.image_pull_minutes),
        crate::core::num(a.weight_load_minutes),
        crate::core::num(crate::engine::spot::default_restart_minutes(
            1,
            a.node_acquire_minutes,
            a.image_pull_minutes,
            a.weight_load_minutes
        )),
        crate::core::num(crate::engine::spot::default_restart_minutes(
            64,
            a.node_acquire_minutes,
            a.image_pull_minutes,
            a.weight_load_minutes
        )),
    );
    o
}

/// The constraint names, for documentation and tests.
pub fn constraint_names() -> Vec<&'static str> {
    [
        Constraint::SkuAllowList,
        Constraint::GpuModelAllowList,
        Constraint::Region,
        Constraint::GpusPerNode,
        Constraint::Mig,
        Constraint::GpuMemory,
        Constraint::HostCpu,
        Constraint::HostMemory,
        Constraint::Interconnect,
        Constraint::Quota,
    ]
    .iter()
    .map(|c| c.as_str())
    .collect()
}

#[cfg(test)]
mod tests;
