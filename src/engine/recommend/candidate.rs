//! Which SKU and region can run a workload, how much of a node one replica takes there, and
//! what each capacity type would cost. A SKU that cannot run it is rejected with the
//! constraint that failed, so an unsatisfiable plan says why.

use super::demand::Demand;
use crate::catalog::{Catalog, GpuModel, MigProfile, Sku};
use crate::core::{Capacity, Kind, Sharing};
use crate::plan::Plan;

mod spot_quote;
use spot_quote::spot_quote;
pub use spot_quote::{SpotNo, SpotQuote};

mod rejection;
use rejection::reject;

mod host_mig;
pub use rejection::{Constraint, Detail, Rejection};

/// How a replica sits on a GPU of this SKU.
#[derive(Debug, Clone, PartialEq)]
pub enum Fit {
    /// `gpus` whole GPUs per replica.
    Whole { gpus: u32 },
    /// One MIG instance of this profile.
    Mig { profile: MigProfile },
    /// One of `replicas` equal time-sliced (or, with `mps`, MPS) shares of a GPU. The mode is
    /// part of the fit: an MPS workload and a time-sliced one never share a pool (GP027).
    Shared { replicas: u32, mps: bool },
    /// A share of one GPU inside a server process that hosts several models.
    Server { share: f64 },
}

/// A capacity type with its price per node-hour and, for spot, the restart arithmetic.
#[derive(Debug, Clone)]
pub struct Rate {
    pub capacity: Capacity,
    /// Price per node-hour.
    pub usd: f64,
    /// Paid hours per useful hour (spot restarts); 1 otherwise.
    pub waste: f64,
}

#[derive(Debug, Clone)]
pub struct Candidate<'c> {
    pub sku: &'c Sku,
    pub gpu: &'c GpuModel,
    pub region: String,
    /// Position of the region in the plan's preference order.
    pub region_rank: usize,
    pub fit: Fit,
    /// Share of one node a replica takes (the most of GPU, vCPU and RAM); a gang member
    /// takes a whole node.
    pub node_share: f64,
    pub on_demand: f64,
    pub spot: Option<SpotQuote>,
    pub reserved_1y: Option<f64>,
    pub reserved_3y: Option<f64>,
    /// EC2 Capacity Block price per instance-hour, where a refresh read an offering.
    pub capacity_block: Option<f64>,
}

/// Allocatable vCPUs and RAM of a node (`Catalog::allocatable`).
pub fn allocatable(sku: &Sku, catalog: &Catalog) -> (f64, f64) {
    catalog.allocatable(sku)
}

/// The profile a replica gets (`mig::choose`, the one chooser): under AKS only the profiles
/// AKS creates (`gpu_instance`), a larger one where the replica's own does not exist there.
pub(crate) fn mig_profile<'g>(
    gpu: &'g GpuModel,
    d: &Demand<'_>,
    manager: crate::core::MigManager,
) -> Option<&'g MigProfile> {
    let spec = gpu.mig.as_ref()?;
    crate::mig::choose(spec, &d.slice_need(spec), manager)
}

/// Equal shares per GPU that keep each replica's compute share and memory.
pub(crate) fn shared_replicas(gpu: &GpuModel, d: &Demand<'_>, headroom: f64) -> u32 {
    crate::engine::memory::time_slice_replicas(d.share, d.memory_need, gpu.memory_gib, headroom)
}

/// Every (SKU, region) that can run `d`, or the rejections when none can.
pub fn candidates<'c>(
    plan: &Plan,
    catalog: &'c Catalog,
    d: &Demand<'_>,
) -> Result<Vec<Candidate<'c>>, Vec<Rejection>> {
    found(plan, catalog, d).map(|f| f.open)
}

/// A candidate a known quota closed (it cannot hold one node of it, or a workload that
/// cannot split), with the figures: listed beside the pool where it would cost less, as
/// Karpenter says how many instance types its limits excluded.
#[derive(Debug, Clone)]
pub struct Closed<'c> {
    pub c: Candidate<'c>,
    pub detail: Detail,
}

/// The candidates that can run `d` and those a known quota alone closed.
#[derive(Debug)]
pub struct Found<'c> {
    pub open: Vec<Candidate<'c>>,
    pub closed: Vec<Closed<'c>>,
}

/// Every (SKU, region) that can run `d` and every one a known quota closed, or the
/// rejections when none can run it.
pub fn found<'c>(
    plan: &Plan,
    catalog: &'c Catalog,
    d: &Demand<'_>,
) -> Result<Found<'c>, Vec<Rejection>> {
    let Some(pc) = catalog.provider(plan.provider()) else {
        return Err(vec![Rejection {
            constraint: Constraint::Region,
            detail: Detail::NoData {
                provider: plan.provider(),
            },
        }]);
    };
    let mut closed = Vec::new();
    let regions: Vec<&str> = plan.regions().collect();
    let mut out = Vec::new();
    let mut rejected = Vec::new();
    for sku in pc.skus.values() {
        let Some(gpu) = catalog.sku_gpu(sku) else {
            continue;
        };
        // A retired size is never proposed, even when named: it cannot be bought. Partitioned
        // GPUs, Arm hosts (arm64 images) and accelerators without the NVIDIA device plugin
        // are proposed only when the plan names them.
        let named =
            d.w.skus
                .as_ref()
                .is_some_and(|l| l.iter().any(|s| s.get() == &sku.name))
                || d.w.gpu_models.as_ref().is_some_and(|l| {
                    l.iter()
                        .any(|m| catalog.gpu(m.get()).is_some_and(|g| g.name == gpu.name))
                });
        if sku.retired {
            if named {
                rejected.push(reject(
                    Constraint::Retired,
                    Detail::Retired {
                        sku: sku.name.clone(),
                    },
                ));
            }
            continue;
        }
        if !named && (sku.arm64 || sku.gpu_partition < 1.0 || !gpu.is_nvidia()) {
            continue;
        }
        // A partitioned size (g6f, NVadsA10 v5) gives a share of one GPU: only a replica that
        // asks for no more than that share, and is not a multi-GPU or MIG replica, fits it.
        // Where the host sets MIG (NCv6) the share is a MIG slice, and `host_mig` decides.
        if sku.gpu_partition < 1.0 && !host_mig::applies(catalog, d, sku) {
            let need = d.w.gpu_share();
            if need > sku.gpu_partition + 1e-9 || d.w.gpus() > 1 || d.sharing.is_partitioned() {
                rejected.push(reject(
                    Constraint::GpusPerNode,
                    Detail::GpuShare {
                        need,
                        sku: sku.name.clone(),
                        share: sku.gpu_partition,
                    },
                ));
                continue;
            }
        }
        for (rank, region) in regions.iter().enumerate() {
            match candidate(plan, catalog, d, sku, gpu, region) {
                Ok(mut c) => {
                    c.region_rank = rank;
                    out.push(c);
                }
                Err(Refused::Closed(mut c, r)) => {
                    c.region_rank = rank;
                    closed.push(Closed {
                        c: *c,
                        detail: r.detail.clone(),
                    });
                    rejected.push(r);
                }
                Err(Refused::Cannot(r)) => rejected.push(r),
            }
        }
    }
    // A time-slicing or MPS replica may also take a GPU of its own where that costs less (one
    // T4 each for a replica of half a card, rather than two to an A10): sharing is what the
    // plan allows, not what it must pay for, and the bound may not exclude what a fleet can
    // do (issue 71: openb's MIG reading on Azure printed a bound 1.76% above a verified fleet).
    if out.is_empty() {
        Err(rejected)
    } else {
        // Every workload keeps its candidates to the end (alternatives, merges): without the
        // slack of a growing vector, a large estate's peak memory is a third lower.
        out.shrink_to_fit();
        // Only those a replica-hour would cost less on than on every open one are worth
        // keeping to list.
        let per_replica = |c: &Candidate<'_>| {
            c.rates(d)
                .iter()
                .map(|r| r.usd * r.waste * c.node_share)
                .fold(f64::INFINITY, f64::min)
        };
        // Most plans state no quota: nothing was closed, and nothing is priced for it.
        if !closed.is_empty() {
            let cheapest = out.iter().map(per_replica).fold(f64::INFINITY, f64::min);
            closed.retain(|k| per_replica(&k.c) < cheapest - 1e-9);
            closed.shrink_to_fit();
        }
        Ok(Found { open: out, closed })
    }
}

/// Why `candidate` gave no candidate: the SKU cannot run the workload here, or it can and a
/// known quota closed it (the candidate as it would have been, for the why-line).
enum Refused<'c> {
    Cannot(Rejection),
    Closed(Box<Candidate<'c>>, Rejection),
}

impl From<Rejection> for Refused<'_> {
    fn from(r: Rejection) -> Self {
        Refused::Cannot(r)
    }
}

/// The GPU memory `n` GPUs give a replica under its server's cap, or the rejection when that
/// is less than it needs (the fit rules' GP021 test).
fn memory_offered(d: &Demand<'_>, gpu: &GpuModel, n: u32) -> Result<f64, Rejection> {
    let offered = gpu.memory_gib * f64::from(n) * d.usable;
    match d.memory_need {
        Some(m) if m > offered + 1e-9 => Err(reject(
            Constraint::GpuMemory,
            Detail::GpuMemory {
                need: m,
                n,
                gpu: gpu.name.clone(),
                offered,
                cap: d.usable,
            },
        )),
        _ => Ok(offered),
    }
}

fn candidate<'c>(
    plan: &Plan,
    catalog: &'c Catalog,
    d: &Demand<'_>,
    sku: &'c Sku,
    gpu: &'c GpuModel,
    region: &str,
) -> Result<Candidate<'c>, Refused<'c>> {
    allowed(catalog, d, sku, gpu)?;
    let listed = |c: Capacity| {
        catalog
            .listed(plan.provider(), &sku.name, region, c)
            .map(|p| p.usd_per_hour)
    };
    let Some(on_demand) = listed(Capacity::OnDemand) else {
        return Err(reject(
            Constraint::Region,
            Detail::NoPrice {
                sku: sku.name.clone(),
                region: region.to_owned(),
            },
        )
        .into());
    };
    deployable(plan, catalog, d, sku, region)?;
    let fit = match host_mig::fit(catalog, d, sku, gpu) {
        Some(f) => f?,
        None => fit(catalog, d, gpu)?,
    };
    let (cpu_alloc, mem_alloc) = host_fits(catalog, d, sku)?;
    let node_share = node_share(&fit, sku, gpu, d, cpu_alloc, mem_alloc);
    let quota = within_quota(plan, catalog, d, sku, region, node_share);
    let spot = Some(spot_quote(
        catalog,
        plan,
        d,
        sku,
        region,
        listed(Capacity::Spot).is_some(),
    ));
    let c = Candidate {
        sku,
        gpu,
        region: region.to_owned(),
        region_rank: 0,
        fit,
        node_share,
        on_demand,
        spot,
        reserved_1y: listed(Capacity::Reserved1y),
        reserved_3y: listed(Capacity::Reserved3y),
        capacity_block: listed(Capacity::CapacityBlock),
    };
    match quota {
        Ok(()) => Ok(c),
        Err(r) => Err(Refused::Closed(Box::new(c), r)),
    }
}

/// The workload's own lists allow the SKU and its GPU, and the GPU computes in its precision.
fn allowed(catalog: &Catalog, d: &Demand<'_>, sku: &Sku, gpu: &GpuModel) -> Result<(), Rejection> {
    let w = d.w;
    if !w.allows_sku(&sku.name) {
        return Err(reject(
            Constraint::SkuAllowList,
            Detail::NotInSkus {
                sku: sku.name.clone(),
            },
        ));
    }
    if !w.allows_gpu(catalog, &gpu.name) {
        return Err(reject(
            Constraint::GpuModelAllowList,
            Detail::NotInGpuModels {
                gpu: gpu.name.clone(),
            },
        ));
    }
    if let Some(gap) = crate::engine::memory::precision_gap(w, gpu, catalog) {
        return Err(reject(
            Constraint::Precision,
            Detail::Precision {
                gpu: gpu.name.clone(),
                has: gap.has,
                precision: gap.precision,
                needs: gap.needs,
            },
        ));
    }
    Ok(())
}

/// The account may deploy the SKU in the region, and one node holds a replica's GPUs.
fn deployable(
    plan: &Plan,
    catalog: &Catalog,
    d: &Demand<'_>,
    sku: &Sku,
    region: &str,
) -> Result<(), Rejection> {
    let pc = catalog.provider(plan.provider());
    if let Some(why) = pc.and_then(|p| p.restriction(&sku.name, region)) {
        return Err(reject(
            Constraint::Region,
            Detail::Restricted {
                sku: sku.name.clone(),
                region: region.to_owned(),
                why: why.to_string(),
            },
        ));
    }
    let per_node = sku.gpu_count;
    if d.gpus > per_node {
        return Err(reject(
            Constraint::GpusPerNode,
            Detail::GpusPerNode {
                gpus: d.gpus,
                sku: sku.name.clone(),
                has: per_node,
            },
        ));
    }
    Ok(())
}

/// How a replica takes the GPU under its sharing mode.
fn fit(catalog: &Catalog, d: &Demand<'_>, gpu: &GpuModel) -> Result<Fit, Rejection> {
    match d.sharing {
        Sharing::Mig => mig_fit(d, gpu),
        Sharing::TimeSlicing | Sharing::Mps if d.gpus <= 1 => {
            shared_fit(d, gpu, catalog.assumptions.time_slicing_memory_headroom)
        }
        Sharing::SharedServer if d.gpus <= 1 => {
            // The server process takes its cap of the card; the models it hosts share that.
            memory_offered(d, gpu, 1)?;
            Ok(Fit::Server {
                share: d.server_share(gpu).unwrap_or(1.0),
            })
        }
        // A replica of several GPUs takes them whole, whatever its mode shares.
        Sharing::Dedicated | Sharing::TimeSlicing | Sharing::Mps | Sharing::SharedServer => {
            let n = d.gpus.max(1);
            memory_offered(d, gpu, n)?;
            Ok(Fit::Whole { gpus: n })
        }
    }
}

/// The MIG profile a replica takes, under the effective MIG manager.
fn mig_fit(d: &Demand<'_>, gpu: &GpuModel) -> Result<Fit, Rejection> {
    if gpu.mig.is_none() {
        return Err(reject(
            Constraint::Mig,
            Detail::NoMig {
                gpu: gpu.name.clone(),
            },
        ));
    }
    let aks = matches!(d.mig_manager, crate::core::MigManager::Aks);
    if aks && gpu.mig.as_ref().is_some_and(|m| m.aks_profiles.is_empty()) {
        return Err(reject(
            Constraint::Mig,
            Detail::AksNoMig {
                gpu: gpu.name.clone(),
            },
        ));
    }
    match mig_profile(gpu, d, d.mig_manager) {
        Some(p) => Ok(Fit::Mig { profile: p.clone() }),
        None => Err(reject(
            Constraint::GpuMemory,
            Detail::NoMigProfile {
                gpu: gpu.name.clone(),
                need: d.memory_need.unwrap_or(0.0),
            },
        )),
    }
}

/// The time-sliced (or MPS) shares of a GPU a replica takes one of.
fn shared_fit(d: &Demand<'_>, gpu: &GpuModel, headroom: f64) -> Result<Fit, Rejection> {
    if let Some(m) = d.memory_need {
        if m > gpu.memory_gib * (1.0 - headroom) {
            return Err(reject(
                Constraint::GpuMemory,
                Detail::SharedMemory {
                    need: m,
                    gpu: gpu.name.clone(),
                    has: gpu.memory_gib,
                },
            ));
        }
    }
    let replicas = shared_replicas(gpu, d, headroom);
    // One replica per GPU is a dedicated GPU: the pool sets no cap, so the replica's own
    // server cap applies.
    if let (1, Some(m)) = (replicas, d.memory_need) {
        if m > gpu.memory_gib * d.usable + 1e-9 {
            return Err(reject(
                Constraint::GpuMemory,
                Detail::CappedMemory {
                    need: m,
                    gpu: gpu.name.clone(),
                    offered: gpu.memory_gib * d.usable,
                    cap: d.usable,
                },
            ));
        }
    }
    Ok(Fit::Shared {
        replicas,
        mps: d.sharing.needs_mps_daemon(),
    })
}

/// The node's allocatable vCPUs and RAM hold a replica, and a gang's nodes are connected:
/// what pods may request on one node.
fn host_fits(catalog: &Catalog, d: &Demand<'_>, sku: &Sku) -> Result<(f64, f64), Rejection> {
    let (cpu_alloc, mem_alloc) = allocatable(sku, catalog);
    if d.cpu > cpu_alloc {
        return Err(reject(
            Constraint::HostCpu,
            Detail::HostCpu {
                need: d.cpu,
                sku: sku.name.clone(),
                allocatable: cpu_alloc,
            },
        ));
    }
    if d.memory_gib > mem_alloc {
        return Err(reject(
            Constraint::HostMemory,
            Detail::HostMemory {
                need: d.memory_gib,
                sku: sku.name.clone(),
                allocatable: mem_alloc,
            },
        ));
    }
    if d.gang > 1 && d.w.kind() == Kind::Training {
        if let Some(gap) = sku.gang_gap(d.gpus) {
            return Err(reject(
                Constraint::Interconnect,
                Detail::Interconnect {
                    gang: d.gang,
                    sku: sku.name.clone(),
                    gap,
                },
            ));
        }
    }
    Ok((cpu_alloc, mem_alloc))
}

/// A known quota that cannot hold what must start together here closes the candidate: one
/// replica's node, or the whole workload where it cannot be split (a gang starts its nodes
/// together; an availability floor is kept by one pool). Anything less is quota repair's to
/// decide, which keeps as many replicas here as the quota holds and runs the rest elsewhere,
/// and the bound's, whose quota rows hold the same limit: filtering here would make both
/// blind to the part of a cheaper size a quota still holds. When spot is open to the
/// workload, its separate quota may hold what on-demand's does not.
fn within_quota(
    plan: &Plan,
    catalog: &Catalog,
    d: &Demand<'_>,
    sku: &Sku,
    region: &str,
    node_share: f64,
) -> Result<(), Rejection> {
    let replicas = if d.may_split() { 1 } else { d.peak };
    let peak_nodes = (node_share * f64::from(replicas)).ceil();
    let family = &sku.quota_family;
    if let Some((limit, from)) = plan.known_quota(catalog, region, family) {
        let need = peak_nodes * f64::from(sku.vcpus);
        if need > limit && d.spot_closed.is_some() {
            return Err(reject(
                Constraint::Quota,
                Detail::Quota {
                    need,
                    family: family.clone(),
                    region: region.to_owned(),
                    limit,
                    from,
                },
            ));
        }
    }
    Ok(())
}

/// The share of a node one replica takes when a node holds only replicas like it: one over
/// how many fit (GPUs, or slices, or shares; vCPUs; RAM), counted in whole replicas. Three
/// 12-vCPU replicas fit in the 47.3 vCPUs pods may request on a 48-vCPU EKS node, not 3.94,
/// and the fourth GPU of the node is paid for either way. Gang members each take a whole node.
pub(crate) fn node_share(
    fit: &Fit,
    sku: &Sku,
    gpu: &GpuModel,
    d: &Demand<'_>,
    cpu_alloc: f64,
    mem_alloc: f64,
) -> f64 {
    if d.gang > 1 {
        return 1.0;
    }
    const EPS: f64 = 1e-9;
    let per_node = f64::from(sku.gpu_count.max(1));
    let by_gpu = match fit {
        Fit::Whole { gpus } => (per_node / f64::from((*gpus).max(1)) + EPS).floor(),
        Fit::Mig { profile } => {
            let per_gpu = gpu
                .mig
                .as_ref()
                .map_or(1.0, |s| f64::from(crate::mig::per_gpu(s, &profile.name)));
            per_gpu.max(1.0) * per_node
        }
        Fit::Shared { replicas, .. } => f64::from((*replicas).max(1)) * per_node,
        Fit::Server { share } => (1.0 / share.max(EPS) + EPS).floor().max(1.0) * per_node,
    };
    let by_cpu = if d.cpu > 0.0 {
        (cpu_alloc / d.cpu + EPS).floor()
    } else {
        f64::INFINITY
    };
    let by_mem = if d.memory_gib > 0.0 {
        (mem_alloc / d.memory_gib + EPS).floor()
    } else {
        f64::INFINITY
    };
    1.0 / by_gpu.min(by_cpu).min(by_mem).max(1.0)
}

impl Candidate<'_> {
    /// The capacity types open to this workload here, each with its node-hour price.
    pub fn rates(&self, d: &Demand<'_>) -> Vec<Rate> {
        let mut out = vec![Rate {
            capacity: Capacity::OnDemand,
            usd: self.on_demand,
            waste: 1.0,
        }];
        if let Some(SpotQuote {
            effective: Ok(eff),
            assessment,
            ..
        }) = &self.spot
        {
            if let Some(price) = assessment.spot {
                out.push(Rate {
                    capacity: Capacity::Spot,
                    usd: price,
                    waste: eff / price,
                });
            }
        }
        // A training gang fits a Capacity Block bought for its hours: its nodes together,
        // guaranteed for the block, paid for the block. One that runs all month is as much a
        // buyer (EC2 sells blocks in 7-day steps up to 182 days; issue 74: an all-month
        // gang was never offered one where it cost 43% less than on-demand). Offered only
        // where a block price is known (a live refresh reads
        // DescribeCapacityBlockOfferings); never guessed.
        if let Some(usd) = self.capacity_block {
            if d.gang > 1 && d.w.kind() == Kind::Training && usd > 0.0 {
                out.push(Rate {
                    capacity: Capacity::CapacityBlock,
                    usd,
                    waste: 1.0,
                });
            }
        }
        for (cap, r) in [
            (Capacity::Reserved1y, self.reserved_1y),
            (Capacity::Reserved3y, self.reserved_3y),
        ] {
            if !d.reservation_term.allows(cap) {
                continue;
            }
            if let Some(usd) = r {
                // Open to a floor that runs all month, and to steady work (its minimum
                // replicas) whose hours beat the break-even utilisation (reserved /
                // on-demand) whatever its floor; never to a peak or to work that may scale to
                // zero, whose hours are not a promise to run.
                if d.floor > 0
                    || (d.steady() > 0
                        && d.hours * self.on_demand > crate::core::held_month_usd(usd, 1.0) + 0.01)
                {
                    out.push(Rate {
                        capacity: cap,
                        usd,
                        waste: 1.0,
                    });
                }
            }
        }
        out
    }
}
