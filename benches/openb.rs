//! A plan built from the openb production trace (Weng et al., "Beware of Fragmentation:
//! Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX ATC 2023;
//! alibaba/clusterdata cluster-trace-gpu-v2023), and the lower bounds a recommendation for it
//! is measured against. Shared by `benches/recommend.rs` and `tests/quality.rs`.

use std::collections::BTreeMap;

use gpuplan::catalog::Catalog;
use gpuplan::engine::recommend::candidate::{self, Fit};
use gpuplan::engine::recommend::demand;
use gpuplan::plan::Plan;

pub const TRACE: &str = include_str!("data/openb_pod_list_default.csv");

/// Pod shape: GPUs, thousandths of a GPU, vCPU thousandths, RAM MiB, QoS class.
type Shape = (u32, u32, u32, u32, String);

/// Every GPU pod of the trace, identical shapes grouped into one workload whose replicas are
/// the pods of that shape. Latency-sensitive pods (LS) are user-facing inference; the rest
/// are interruptible batch with 30-minute checkpoints. A pod asking for a share of a GPU
/// (`gpu_milli` < 1000) is time-sliced, in a fault domain someone decided on.
pub fn plan_text(provider: &str, regions: &[&str]) -> String {
    let mut shapes: BTreeMap<Shape, u32> = BTreeMap::new();
    for line in TRACE.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 7 {
            continue;
        }
        let num = |i: usize| f[i].parse::<u32>().unwrap_or(0);
        if num(3) == 0 {
            continue;
        }
        *shapes
            .entry((num(3), num(4), num(1), num(2), f[6].to_owned()))
            .or_default() += 1;
    }
    let regions = regions
        .iter()
        .map(|r| format!("\"{r}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut s = format!(
        "version = 1\n\n[plan]\nname = \"openb\"\nowner = \"bench\"\nprovider = \"{provider}\"\nregions = [{regions}]\n"
    );
    for (i, ((gpus, milli, cpu, mem, qos), count)) in shapes.iter().enumerate() {
        let ls = qos == "LS";
        s.push_str(&format!(
            "\n[[workload]]\nname = \"s{i:03}\"\nteam = \"{}\"\nkind = \"{}\"\nuser_facing = {ls}\nreplicas = {count}\n",
            qos.to_ascii_lowercase(),
            if ls { "inference" } else { "batch" },
        ));
        // A few pods request no CPU or RAM: the plan then says nothing.
        if *cpu > 0 {
            s.push_str(&format!("cpu = {}\n", f64::from(*cpu) / 1000.0));
        }
        if *mem > 0 {
            s.push_str(&format!(
                "memory_gib = {}\n",
                (f64::from(*mem) / 1024.0 * 1000.0).round() / 1000.0
            ));
        }
        if !ls {
            s.push_str("interruptible = true\ncheckpoint_minutes = 30\n");
        }
        if *milli < 1000 {
            s.push_str(&format!(
                "gpu_fraction = {}\nsharing = \"time-slicing\"\nfault_domain = \"shared-gpus\"\n",
                f64::from(*milli) / 1000.0
            ));
        } else {
            s.push_str(&format!("gpus = {gpus}\n"));
        }
    }
    s.push_str("\n[[decision]]\nfault_domain = \"shared-gpus\"\ndecided_by = \"bench\"\ndate = 2026-11-02\nreason = \"the trace's own cluster shares GPUs between these pods\"\n");
    s
}

/// Lower bounds on what any fleet for the plan needs.
#[derive(Debug, Clone)]
pub struct Bounds {
    /// GPUs the pods ask for, shares summed (no fleet can have fewer).
    pub demand_gpus: f64,
    /// GPUs with the device plugin's granularity: a time-sliced replica holds one of `N`
    /// equal shares, and `N` can be at most `1 / gpu_fraction`.
    pub slot_gpus: f64,
    /// The LP relaxation of the fleet problem: replicas split freely over every candidate
    /// SKU, region and capacity type, nodes fractional, GPU/vCPU/RAM capacity constraints per
    /// candidate, spot priced without restart waste.
    pub lp_cost: Option<f64>,
    /// GPUs no fleet can go below once every constraint counts: the same LP, minimising
    /// GPUs instead of cost (vCPU and RAM per node, segments, node-wide sharing).
    pub lp_gpus: Option<f64>,
    /// The same LP with counting cuts, still a valid bound: on one node, at most `j`
    /// replicas can each take more than `1/(j+1)` of its vCPUs (or RAM), since `j+1` of
    /// them would not fit. Every integer fleet satisfies them; the plain LP does not.
    pub lp_cut_cost: Option<f64>,
    /// GPUs no fleet can go below while its cost stays within 2% of `lp_cost`: the GPU LP
    /// with that cost as a constraint. Where it exceeds `lp_gpus` by more than 3%, the two
    /// quality targets cannot both be met by any fleet, fractional or not.
    pub lp_gpus_within_cost: Option<f64>,
}

/// The bounds; `with_cuts` also solves the tighter LP (slower; the bench reports it).
pub fn bounds(plan: &Plan, catalog: &Catalog, with_cuts: bool) -> Bounds {
    let demands = satisfiable(plan, catalog);
    let mut demand_gpus = 0.0;
    let mut slot_gpus = 0.0;
    for d in &demands {
        let peak = f64::from(d.peak) * f64::from(d.gang);
        demand_gpus += d.share * peak;
        slot_gpus += if d.gpus == 0 || d.share < 1.0 {
            peak / (1.0 / d.share + 1e-9).floor().max(1.0)
        } else {
            f64::from(d.gpus) * peak
        };
    }
    let lp_cost = lp(plan, catalog, &demands, false, Objective::Cost);
    Bounds {
        demand_gpus,
        slot_gpus,
        lp_cost,
        lp_gpus: lp(plan, catalog, &demands, false, Objective::Gpus(None)),
        lp_gpus_within_cost: lp_cost.and_then(|c| {
            lp(
                plan,
                catalog,
                &demands,
                false,
                Objective::Gpus(Some(c * 1.02)),
            )
        }),
        lp_cut_cost: if with_cuts {
            lp(plan, catalog, &demands, true, Objective::Cost)
        } else {
            None
        },
    }
}

/// The fewest GPUs any fleet, fractional or not, can have while costing no more than `cost`
/// a month: the GPU LP with the cost as a constraint. Given the recommended fleet's cost, it
/// bounds how many GPUs a recommender that may not spend more could have saved.
pub fn gpus_at_cost(plan: &Plan, catalog: &Catalog, cost: f64) -> Option<f64> {
    lp(
        plan,
        catalog,
        &satisfiable(plan, catalog),
        false,
        Objective::Gpus(Some(cost)),
    )
}

/// How a replica pays for the node it sits on in [`fluid`].
#[derive(Clone, Copy, PartialEq)]
pub enum Share {
    /// Its share of the node's GPUs only (issue 40's "independent fluid bound"). Not a lower
    /// bound: a replica that takes most of a node's vCPUs still pays for one GPU's share.
    Gpus,
    /// The most of its GPU, vCPU and RAM shares (`Candidate::node_share`). Not a lower bound
    /// either: shapes never fill each other's leftover vCPUs or RAM, which the LP lets them.
    Node,
}

/// Fluid cost of the plan: every replica on the cheapest node size for its own shape, paying
/// only its share of a node (a gang member a whole node), at the cheapest capacity type its
/// demand may use (reservations within the plan's term, spot without restart waste), at peak
/// all month.
///
/// `sized`, when given, pins each workload to the SKU, region and capacity the recommendation
/// gave it: the same fluid cost with the recommendation's size choice, so that
/// `fluid(sized) / fluid(None)` is what the size choice costs and `cost / fluid(sized)` what the
/// packing inside the chosen sizes costs.
pub fn fluid(
    plan: &Plan,
    catalog: &Catalog,
    share: Share,
    sized: Option<&BTreeMap<String, (String, String, gpuplan::core::Capacity)>>,
) -> f64 {
    let hours = plan.hours_per_month();
    let mut total = 0.0;
    for d in satisfiable(plan, catalog) {
        if d.peak == 0 {
            continue;
        }
        let Ok(cands) = candidate::candidates(plan, catalog, &d) else {
            continue;
        };
        let pin = sized.and_then(|m| m.get(d.name));
        let best = cands
            .iter()
            .filter(|c| {
                pin.is_none_or(|(sku, region, _)| &c.sku.name == sku && &c.region == region)
            })
            .flat_map(|c| {
                let of_node = match share {
                    Share::Node => c.node_share * f64::from(d.gang.max(1)),
                    Share::Gpus => {
                        let gpus = f64::from(c.sku.gpu_count.max(1));
                        match &c.fit {
                            _ if d.gang > 1 => f64::from(d.gang),
                            Fit::Whole { gpus: n } => f64::from(*n) / gpus,
                            Fit::Shared { replicas, .. } => 1.0 / f64::from(*replicas) / gpus,
                            Fit::Server { share } => share / gpus,
                            // A MIG replica's GPU share is its slice share (node_share's GPU part).
                            Fit::Mig { .. } => c.node_share,
                        }
                    }
                };
                c.rates(&d)
                    .into_iter()
                    .filter(|r| pin.is_none_or(|(_, _, cap)| r.capacity == *cap))
                    .map(move |r| of_node * r.usd)
            })
            .fold(f64::INFINITY, f64::min);
        if best.is_finite() {
            total += best * f64::from(d.peak) * hours;
        }
    }
    total
}

/// Workloads no SKU can run are reported by the recommender; the bounds cover the rest.
fn satisfiable<'p>(plan: &'p Plan, catalog: &Catalog) -> Vec<demand::Demand<'p>> {
    demand::demands(plan, catalog)
        .into_iter()
        .filter(|d| candidate::candidates(plan, catalog, d).is_ok())
        .collect()
}

/// One kind of node in the LP: a node-count variable, its capacities and price, and each
/// replica variable that may use it with what one replica takes.
struct NodeKind {
    n: microlp::Variable,
    caps: [f64; 3],
    usd: f64,
    /// (replica variable, GPU units, vCPUs, RAM per gang member, gang size)
    uses: Vec<(microlp::Variable, [f64; 3], f64)>,
}

type NodeKey = (demand::Segment, String, String, &'static str, String);

#[derive(Clone, Copy, PartialEq)]
enum Objective {
    Cost,
    /// GPUs, with the monthly cost at most the given amount when there is one.
    Gpus(Option<f64>),
}

fn lp(
    plan: &Plan,
    catalog: &Catalog,
    demands: &[demand::Demand<'_>],
    cuts: bool,
    objective: Objective,
) -> Option<f64> {
    use microlp::{ComparisonOp, OptimizationDirection, Problem};
    let hours = plan.hours_per_month();
    let mut p = Problem::new(OptimizationDirection::Minimize);
    // Per (segment, sku, region, capacity, sharing): segments never share nodes in the
    // recommender, and the device plugin's sharing is node-wide with one replica count per
    // node (gpu-sharing reference §4), so neither do different sharing settings.
    let mut kinds: BTreeMap<NodeKey, NodeKind> = BTreeMap::new();
    for d in demands {
        if d.peak == 0 {
            continue;
        }
        let cands = candidate::candidates(plan, catalog, d).ok()?;
        let mut xs = Vec::new();
        for c in &cands {
            let (cpu, mem) = candidate::allocatable(c.sku, catalog);
            let units = match &c.fit {
                _ if d.gang > 1 => f64::from(c.sku.gpu_count),
                Fit::Whole { gpus } => f64::from(*gpus),
                Fit::Shared { replicas, .. } => 1.0 / f64::from(*replicas),
                Fit::Server { share } => *share,
                Fit::Mig { profile } => {
                    let spec = c.gpu.mig.as_ref()?;
                    (f64::from(profile.compute) / f64::from(spec.compute_slices))
                        .max(f64::from(profile.memory_slices) / f64::from(spec.memory_slices))
                }
            };
            let sharing = match &c.fit {
                // MPS and time-sliced replicas never share a pool (GP027), in the bound as in the packer.
                Fit::Shared { replicas, mps } if *replicas > 1 => {
                    format!("{}-{replicas}", if *mps { "mps" } else { "shared" })
                }
                Fit::Mig { profile } => format!("mig-{}", profile.name),
                Fit::Server { .. } => "server".to_owned(),
                _ => "whole".to_owned(),
            };
            for r in c.rates(d) {
                let key = (
                    d.segment,
                    c.sku.name.clone(),
                    c.region.clone(),
                    r.capacity.as_str(),
                    sharing.clone(),
                );
                let kind = kinds.entry(key).or_insert_with(|| NodeKind {
                    n: p.add_var(
                        match objective {
                            Objective::Cost => r.usd * hours,
                            Objective::Gpus(_) => f64::from(c.sku.gpu_count),
                        },
                        (0.0, f64::INFINITY),
                    ),
                    caps: [f64::from(c.sku.gpu_count), cpu, mem],
                    usd: r.usd,
                    uses: Vec::new(),
                });
                let x = p.add_var(0.0, (0.0, f64::INFINITY));
                kind.uses
                    .push((x, [units, d.cpu, d.memory_gib], f64::from(d.gang)));
                xs.push((x, 1.0));
            }
        }
        p.add_constraint(xs, ComparisonOp::Eq, f64::from(d.peak));
    }
    if let Objective::Gpus(Some(limit)) = objective {
        let terms: Vec<(microlp::Variable, f64)> =
            kinds.values().map(|k| (k.n, k.usd * hours)).collect();
        p.add_constraint(terms, ComparisonOp::Le, limit);
    }
    for kind in kinds.values() {
        for dim in 0..3 {
            let mut terms: Vec<(microlp::Variable, f64)> = kind
                .uses
                .iter()
                .map(|(x, need, gang)| (*x, need[dim] * gang))
                .collect();
            terms.push((kind.n, -kind.caps[dim]));
            p.add_constraint(terms, ComparisonOp::Le, 0.0);
        }
        if !cuts {
            continue;
        }
        for dim in 1..3 {
            let mut last: Option<Vec<usize>> = None;
            for j in 1..=16u32 {
                let limit = kind.caps[dim] / f64::from(j + 1);
                let set: Vec<usize> = (0..kind.uses.len())
                    .filter(|&i| kind.uses[i].1[dim] > limit + 1e-9)
                    .collect();
                if set.is_empty() || last.as_ref() == Some(&set) {
                    last = Some(set);
                    continue;
                }
                // A replica of a gang is `gang` members, one per node.
                let mut terms: Vec<(microlp::Variable, f64)> = set
                    .iter()
                    .map(|&i| (kind.uses[i].0, kind.uses[i].2))
                    .collect();
                terms.push((kind.n, -f64::from(j)));
                p.add_constraint(terms, ComparisonOp::Le, 0.0);
                last = Some(set);
            }
        }
    }
    let solution = match p.solve().ok()? {
        microlp::SolveOutcome::Solution(s) => s,
        microlp::SolveOutcome::Interrupted(_) => return None,
    };
    if std::env::var_os("GPUPLAN_LP_DEBUG").is_some() {
        let mut by_segment: BTreeMap<demand::Segment, f64> = BTreeMap::new();
        for (k, kind) in &kinds {
            let n = solution[kind.n];
            if n > 1e-6 {
                eprintln!("LP {k:?}: {n:.2} nodes");
            }
            *by_segment.entry(k.0).or_default() += n * kind.usd * hours;
        }
        eprintln!("LP by segment {by_segment:?}");
    }
    Some(solution.objective())
}

/// The same trace with its latency-sensitive fractions on MIG instead of time-slicing, each
/// replica needing GPU memory in proportion to its share of a 16 GiB card (the trace records
/// no card model or memory; 16 GiB is the smallest card common to its cluster's V100, P100
/// and T4 nodes). Batch fractions stay time-sliced.
pub fn plan_text_mig(provider: &str, regions: &[&str]) -> String {
    let text = plan_text(provider, regions);
    let mut out = String::with_capacity(text.len());
    let mut ls = false;
    for line in text.lines() {
        if line == "[[workload]]" {
            ls = false;
        }
        if line == "team = \"ls\"" {
            ls = true;
        }
        if ls {
            if let Some(f) = line.strip_prefix("gpu_fraction = ") {
                let share: f64 = f.parse().expect("a fraction");
                out.push_str(&format!(
                    "{line}\ngpu_memory_gib = {}\n",
                    (share * 16.0 * 100.0).round() / 100.0
                ));
                continue;
            }
            if line == "sharing = \"time-slicing\"" {
                out.push_str("sharing = \"mig\"\n");
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The fleet LP built here from the catalog alone, not from `candidate::candidates`: every
/// priced GPU size of the plan's provider in its regions that the workload's lists allow
/// (Arm hosts, partitioned and retired sizes only where named, as the plan format says), each
/// replica's fit worked out from the GPU's own figures: whole GPUs; the MIG profile of least
/// GPU share holding its compute share and memory; the most time-sliced shares its compute
/// share allows whose equal split of the card's memory holds it. Capacity types are those the
/// workload may buy (spot when it is interruptible, reservations within the plan's term, paid
/// all month) at list price, each its own kind of node. Each is at least as permissive as the recommender's own rule, so the bound
/// stays a bound. Solved by the library's dual LP (`bound::solve`), the only part shared.
pub fn independent_bound(
    plan: &Plan,
    catalog: &Catalog,
) -> Option<gpuplan::engine::recommend::bound::Bound> {
    use gpuplan::core::Capacity;
    use gpuplan::engine::recommend::bound::{self, Group, Kind, Use};
    let pc = catalog.provider(plan.provider())?;
    let hours = plan.hours_per_month();
    let mut kinds: Vec<Kind> = Vec::new();
    let mut kind_of: BTreeMap<(demand::Segment, String, String, &str), usize> = BTreeMap::new();
    let mut groups = Vec::new();
    for d in demand::demands(plan, catalog) {
        if d.peak == 0 {
            continue;
        }
        let mut uses = Vec::new();
        for sku in pc.skus.values() {
            let Some(gpu) = catalog.sku_gpu(sku) else {
                continue;
            };
            let named = |l: &Option<gpuplan::core::Sp<Vec<gpuplan::core::Sp<String>>>>, v: &str| {
                l.as_ref()
                    .map(|l| l.iter().any(|s| s.get().eq_ignore_ascii_case(v)))
            };
            let by_name = named(&d.w.skus, &sku.name);
            // A model list may name the card by any of its names.
            let by_model = d.w.gpu_models.as_ref().map(|l| {
                l.iter().any(|m| {
                    let m = m.get();
                    m.eq_ignore_ascii_case(&gpu.name)
                        || m.eq_ignore_ascii_case(&sku.gpu_model)
                        || gpu.aliases.iter().any(|a| a.eq_ignore_ascii_case(m))
                })
            });
            if by_name == Some(false) || by_model == Some(false) || sku.retired {
                continue;
            }
            let asked = by_name == Some(true) || by_model == Some(true);
            if !asked && (sku.arm64 || sku.gpu_partition < 1.0 || !gpu.is_nvidia()) {
                continue;
            }
            if d.gpus > sku.gpu_count || (d.gang > 1 && sku.gpu_count == 0) {
                continue;
            }
            let (cpu, mem) = candidate::allocatable(sku, catalog);
            if d.cpu > cpu + 1e-9 || d.memory_gib > mem + 1e-9 {
                continue;
            }
            let need_mem = d.memory_need.unwrap_or(0.0) / d.usable.max(1e-9);
            let gpus = f64::from(sku.gpu_count);
            let mut base = vec![gpus, cpu, mem];
            // Each way a replica may sit on the size: its kind of node (sharing setting), and
            // what it takes of that node's capacities.
            let mut ways: Vec<(String, f64, Option<usize>)> = Vec::new();
            if d.gang > 1 {
                ways.push(("gang".to_owned(), gpus, None));
            } else if d.gpus >= 1 || d.share >= 1.0 {
                let n = d.gpus.max(1);
                if gpu.memory_gib * f64::from(n) + 1e-9 < need_mem {
                    continue;
                }
                ways.push(("whole".to_owned(), f64::from(n), None));
            } else if d.sharing.is_partitioned() {
                let Some(spec) = gpu.mig.as_ref() else {
                    continue;
                };
                // Under AKS a GPU is split into one profile (`gpu_instance`), only the ones AKS
                // creates, and holds that profile's count of instances. The GPU Operator lays
                // out mixed profiles, at most each profile's count per GPU.
                let uniform = d.mig_manager.one_profile_per_gpu();
                if !uniform {
                    // Each profile's count, then the memory slices (compute ones are the GPUs),
                    // then the instances of more than half a GPU, one per GPU at most.
                    base.extend(spec.profiles.iter().map(|p| f64::from(p.max_count) * gpus));
                    base.extend([gpus, gpus]);
                }
                for (at, p) in spec.profiles.iter().enumerate() {
                    let fits = f64::from(p.compute) / f64::from(spec.compute_slices) + 1e-9
                        >= d.share
                        && p.memory_gib + 1e-9 >= need_mem;
                    if !fits {
                        continue;
                    }
                    if uniform {
                        if spec.aks_creates(&p.name) {
                            let units = 1.0 / f64::from(p.max_count.max(1));
                            ways.push((format!("mig-{}", p.name), units, None));
                        }
                    } else {
                        let units = f64::from(p.compute) / f64::from(spec.compute_slices);
                        ways.push(("mig".to_owned(), units, Some(at)));
                    }
                }
            } else if d.sharing.is_replicated() {
                let most = (1.0 / d.share.max(1e-6) + 1e-9).floor().max(1.0) as u32;
                let Some(r) = (1..=most)
                    .rev()
                    .find(|&r| gpu.memory_gib / f64::from(r) + 1e-9 >= need_mem)
                else {
                    continue;
                };
                ways.push((format!("shared-{r}"), 1.0 / f64::from(r), None));
            } else {
                ways.push(("whole".to_owned(), 1.0, None));
            }
            let mut caps = vec![Capacity::OnDemand];
            if d.spot_closed.is_none() {
                caps.push(Capacity::Spot);
            }
            // A reservation is paid all month: a replica on it takes the month, however few
            // of its hours it runs (all of them for a floor).
            let longest = if d.floor > 0 { hours } else { d.hours };
            if longest > 0.0 {
                caps.extend(
                    [Capacity::Reserved1y, Capacity::Reserved3y]
                        .into_iter()
                        .filter(|&c| d.reservation_term.allows(c)),
                );
            }
            for capacity in caps {
                let usd = plan
                    .regions()
                    .filter_map(|r| pc.price(&sku.name, r))
                    .filter_map(|p| p.listed(capacity))
                    .map(|p| p.usd_per_hour)
                    .reduce(f64::min);
                let Some(usd) = usd else {
                    continue;
                };
                let stretch = match capacity {
                    Capacity::Reserved1y | Capacity::Reserved3y => hours / longest,
                    _ => 1.0,
                };
                for (sharing, units, profile) in &ways {
                    let k = *kind_of
                        .entry((
                            d.segment,
                            sku.name.clone(),
                            sharing.clone(),
                            capacity.as_str(),
                        ))
                        .or_insert_with(|| {
                            kinds.push(Kind {
                                usd,
                                cap: base.clone(),
                            });
                            kinds.len() - 1
                        });
                    kinds[k].usd = kinds[k].usd.min(usd);
                    let mut need = if d.gang > 1 {
                        base.clone()
                    } else {
                        let mut n = vec![0.0; base.len()];
                        n[..3].copy_from_slice(&[*units, d.cpu, d.memory_gib]);
                        n
                    };
                    if let (Some(at), Some(spec)) = (profile, gpu.mig.as_ref()) {
                        need[3 + at] = 1.0;
                        let p = &spec.profiles[*at];
                        need[3 + spec.profiles.len()] =
                            f64::from(p.memory_slices) / f64::from(spec.memory_slices);
                        // Two instances of more than half a GPU never share one.
                        if 2 * u32::from(p.compute) > u32::from(spec.compute_slices)
                            || 2 * u32::from(p.memory_slices) > u32::from(spec.memory_slices)
                        {
                            need[4 + spec.profiles.len()] = 1.0;
                        }
                    }
                    uses.push(Use {
                        kind: k,
                        need: need.iter().map(|x| x * stretch).collect(),
                    });
                }
            }
        }
        groups.push(Group {
            months: d.replica_hours(hours) * f64::from(d.gang.max(1)) / hours,
            floor: f64::from(d.availability),
            uses,
        });
    }
    bound::solve(&kinds, &groups, hours)
}
