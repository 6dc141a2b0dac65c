//! The `why` of a recommended pool: the reasons its SKU, region, sharing and capacity were
//! chosen, one stage each, as data (`report::why` writes them).

use super::super::reason::{
    AksMember, BandSeen, NodeUse, NotShared, Reason, Reserving, SpotJudgement, SpotWeighing, Why,
};
use crate::catalog::{Catalog, Sku};
use crate::core::{held_month_usd, HOURS_PER_MONTH};
use crate::core::{Capacity, MigManager, Sharing};
use crate::engine::recommend::build::Built;
use crate::engine::recommend::candidate;
use crate::engine::recommend::candidate::{Candidate, Fit, Rate};
use crate::engine::recommend::choice::{best_choice, Choice, PoolKey};

pub(in crate::engine::recommend) fn why_line(
    catalog: &Catalog,
    ms: &[&Choice<'_, '_>],
    b: &Built,
    key: &PoolKey,
    plan_hours: f64,
    gpu_mem_util: Option<f64>,
) -> Why {
    let c = &ms[0].c;
    let mut parts = vec![Reason::Cheapest {
        candidates: ms.iter().map(|m| m.all.len()).max().unwrap_or(0),
        gpus_per_node: c.sku.gpu_count,
        gpu: c.gpu.name.clone(),
        on_demand: c.on_demand,
        region: c.region.clone(),
    }];
    parts.extend(availability_reason(ms, b));
    parts.extend(fit_reason(catalog, ms, b, gpu_mem_util));
    parts.extend(declared_sharing_reasons(catalog, ms));
    parts.extend(packed_reasons(ms, plan_hours));
    if ms.iter().any(|m| m.d.gang > 1) {
        parts.push(Reason::Gang {
            nodes: ms.iter().map(|m| m.d.gang).max().unwrap_or(1),
        });
    }
    parts.extend(capacity_reasons(catalog, ms, b, key.3));
    parts.extend(arm_hosts_left_out(catalog, ms));
    Why(parts)
}

/// Arm-host sizes the recommender did not consider (no workload names them) that would cost
/// less per GPU in the pool's region and hold the largest replica's memory: the user can see
/// why a cheaper Graviton size was not chosen. MIG pools have none (no Arm size has MIG).
fn arm_hosts_left_out(catalog: &Catalog, ms: &[&Choice<'_, '_>]) -> Option<Reason> {
    let c = &ms[0].c;
    if c.sku.arm64 || matches!(c.fit, Fit::Mig { .. }) {
        return None;
    }
    let pc = catalog.provider(c.sku.provider)?;
    let per_gpu = |rate: f64, s: &Sku| rate / crate::engine::cost::gpus_per_node(s);
    let chosen = per_gpu(c.on_demand, c.sku);
    let need = ms
        .iter()
        .filter_map(|m| m.d.memory_need)
        .max_by(f64::total_cmp)
        .unwrap_or(c.gpu.memory_gib);
    let mut skus: Vec<(String, f64)> = pc
        .skus
        .values()
        .filter(|s| s.arm64 && !s.retired && s.gpu_count > 0)
        .filter(|s| {
            catalog
                .sku_gpu(s)
                .is_some_and(|g| g.memory_gib + 1e-9 >= need)
        })
        .filter_map(|s| {
            let od = catalog.listed(
                s.provider,
                &s.name,
                &c.region,
                crate::core::Capacity::OnDemand,
            )?;
            let r = per_gpu(od.usd_per_hour, s);
            (r + 1e-9 < chosen).then(|| (s.name.clone(), r))
        })
        .collect();
    skus.sort_by(|a, b| a.1.total_cmp(&b.1).then_with(|| a.0.cmp(&b.0)));
    skus.truncate(3);
    (!skus.is_empty()).then_some(Reason::ArmHostsLeftOut { skus })
}

/// The availability floor of user-facing workloads, and whose it is.
fn availability_reason(ms: &[&Choice<'_, '_>], b: &Built) -> Option<Reason> {
    let n = b.availability?;
    Some(Reason::AvailabilityFloor {
        nodes: n,
        workloads: ms
            .iter()
            .filter(|m| m.d.availability == n)
            .map(|m| m.d.name.to_owned())
            .collect(),
    })
}

/// How the pool's GPUs are shared: its MIG profile or layouts, time-slicing or a server.
fn fit_reason(
    catalog: &Catalog,
    ms: &[&Choice<'_, '_>],
    b: &Built,
    gpu_mem_util: Option<f64>,
) -> Option<Reason> {
    let c = &ms[0].c;
    match &c.fit {
        Fit::Mig { profile } => Some(match ms[0].d.mig_manager {
            MigManager::Aks => aks_mig_reason(ms, &profile.name),
            MigManager::GpuOperator => Reason::MigPacked {
                gpus: b.nodes_max * c.sku.gpu_count,
                stranded_slices: b.stranded.as_ref().map(|s| s.mig_compute_slices),
            },
        }),
        Fit::Shared { replicas, .. } if *replicas > 1 => Some(Reason::TimeSliced {
            replicas: *replicas,
            memory_cap: gpu_mem_util,
            card_share: 1.0 - catalog.assumptions.time_slicing_memory_headroom,
        }),
        Fit::Server { .. } => Some(Reason::SharedServer),
        // A MIG replica whole on a partial vGPU size: the VM's GPU is the host's MIG slice.
        Fit::Whole { .. } if ms[0].d.sharing.is_partitioned() && c.sku.gpu_partition < 1.0 => {
            Some(Reason::HostMigSlice {
                sku: c.sku.name.clone(),
                share: c.sku.gpu_partition,
            })
        }
        Fit::Whole { .. } | Fit::Shared { .. } => None,
    }
}

/// An AKS MIG pool's one profile, and the workloads that take it instead of their own or are
/// split over the family's profiles.
fn aks_mig_reason(ms: &[&Choice<'_, '_>], profile: &str) -> Reason {
    let c = &ms[0].c;
    let mut members = Vec::new();
    for m in ms {
        let own = candidate::mig_profile(m.c.gpu, &m.d, MigManager::Aks);
        if let Some(own) = own.filter(|o| o.name != profile) {
            members.push(AksMember::Instead {
                workload: m.d.name.to_owned(),
                own: own.name.clone(),
            });
        }
        if m.d.is_part() {
            members.push(AksMember::Split {
                workload: m.d.name.to_owned(),
                peak: m.d.peak,
                planned: m.d.planned_peak(),
            });
        }
    }
    Reason::AksMig {
        profile: profile.to_owned(),
        gpu_instance: c
            .gpu
            .mig
            .as_ref()
            .and_then(|m| m.aks_gpu_instance(profile))
            .unwrap_or_default(),
        members,
    }
}

/// A declared time-slicing or MPS mode is honoured, or the reason it is not is stated.
fn declared_sharing_reasons(catalog: &Catalog, ms: &[&Choice<'_, '_>]) -> Vec<Reason> {
    let mut parts = Vec::new();
    for m in ms {
        let w = m.d.w;
        let declared = match m.d.sharing {
            Sharing::TimeSlicing | Sharing::Mps => true,
            Sharing::Dedicated | Sharing::Mig | Sharing::SharedServer => false,
        };
        if !declared {
            continue;
        }
        if w.gpu_fraction.is_none() && w.utilization().is_none() && m.d.gpus <= 1 {
            parts.push(Reason::DefaultShare {
                workload: m.d.name.to_owned(),
                share: catalog.assumptions.time_slicing_default_share,
            });
        }
        if matches!(m.c.fit, Fit::Whole { .. } | Fit::Shared { replicas: 1, .. }) {
            parts.push(Reason::Dedicated {
                workload: m.d.name.to_owned(),
                sharing: m.d.sharing,
                cause: if m.d.gpus > 1 {
                    NotShared::ManyGpus(m.d.gpus)
                } else if m
                    .all
                    .iter()
                    .any(|c| matches!(c.fit, Fit::Shared { replicas, .. } if replicas >= 2))
                {
                    NotShared::Cheaper
                } else {
                    NotShared::NoRoom(m.d.memory_need.unwrap_or(0.0))
                },
            });
        }
    }
    parts
}

/// Workloads choose from the node share a replica takes; merges and moves then put some where
/// the packed fleet costs less. Say so, rather than let "cheapest" stand for each. One answer
/// per shared candidate list (workloads of one shape choose alike).
fn packed_reasons(ms: &[&Choice<'_, '_>], plan_hours: f64) -> Vec<Reason> {
    let c = &ms[0].c;
    let mut parts = Vec::new();
    let mut best: std::collections::HashMap<*const Vec<Candidate<'_>>, Option<(usize, Rate)>> =
        std::collections::HashMap::new();
    for m in ms {
        let pick = best
            .entry(std::sync::Arc::as_ptr(&m.all))
            .or_insert_with(|| best_choice(&m.d, &m.all, plan_hours))
            .clone();
        let Some((i, rate)) = pick else {
            continue;
        };
        let own = &m.all[i];
        if own.sku.name != c.sku.name || own.region != c.region {
            parts.push(Reason::PackedHere {
                workload: m.d.name.to_owned(),
                sku: own.sku.name.clone(),
                region: own.region.clone(),
                capacity: rate.capacity,
            });
        }
    }
    parts
}

/// How spot was judged for a workload: its waste against the break-even, or why it is shut.
fn spot_judgement(m: &Choice<'_, '_>) -> SpotJudgement {
    let Some(q) = &m.c.spot else {
        return SpotJudgement::NoPrice;
    };
    let a = &q.assessment;
    let band = match (&a.band, q.at_worst_band) {
        (Some(b), _) => BandSeen::Known(b.label.clone()),
        (None, true) => BandSeen::JudgedAtWorst,
        (None, false) => BandSeen::Unknown,
    };
    match (&q.effective, a.economics, a.break_even) {
        (Ok(_), Some(e), Some(be)) => SpotJudgement::Weighed(Box::new(SpotWeighing {
            waste: e.waste_factor,
            break_even: be,
            on_demand: a.on_demand.unwrap_or(0.0),
            spot: a.spot.unwrap_or(0.0),
            band,
            monthly_interruption: a.monthly_interruption.unwrap_or(0.0),
            node_hazard: e.node_hazard,
            gang: m.d.gang,
            checkpoint_minutes: a.checkpoint_minutes.unwrap_or(0.0),
            restart_minutes: a.restart_minutes,
            restart_is_default: a.restart_is_default,
            at_worst_band: q.at_worst_band,
        })),
        (Ok(eff), _, Some(be)) => SpotJudgement::Stateless {
            effective: *eff,
            on_demand: a.on_demand.unwrap_or(0.0),
            break_even: be,
            band,
        },
        (Err(why), _, _) => SpotJudgement::Shut {
            workload: m.d.name.to_owned(),
            why: why.clone(),
        },
        (Ok(_), _, None) => SpotJudgement::NotAssessed,
    }
}

/// Why the pool is bought as it is: spot, on-demand, reserved or a Capacity Block.
fn capacity_reasons(
    catalog: &Catalog,
    ms: &[&Choice<'_, '_>],
    b: &Built,
    cap: Capacity,
) -> Vec<Reason> {
    let m = ms[0];
    let c = &m.c;
    match cap {
        Capacity::Spot => {
            let mut parts = vec![Reason::Spot(spot_judgement(m))];
            // Priced at the zones' average, as bought; the cheapest zone is only a note.
            let cheapest = catalog
                .prices(c.sku.provider, &c.sku.name, &c.region)
                .and_then(|p| p.spot.as_ref().zip(p.spot_cheapest_zone));
            if let Some((avg, min)) = cheapest {
                parts.push(Reason::SpotZones {
                    average: avg.usd_per_hour,
                    cheapest: min,
                });
            }
            parts
        }
        Capacity::OnDemand => {
            let mut parts = vec![Reason::OnDemand(spot_judgement(m))];
            if c.reserved_1y.is_none() && c.reserved_3y.is_none() && b.nodes_min > 0 {
                parts.push(Reason::ReservedUnknown {
                    provider: c.sku.provider,
                });
            }
            parts
        }
        Capacity::Reserved1y | Capacity::Reserved3y => reserved_reasons(m, b, cap),
        Capacity::CapacityBlock => vec![capacity_block_reason(ms, b)],
        Capacity::CapacityReservation => Vec::new(),
    }
}

/// A reserved pool: which nodes run past the break-even, and what a longer term would save.
fn reserved_reasons(m: &Choice<'_, '_>, b: &Built, cap: Capacity) -> Vec<Reason> {
    // Each node's utilisation, so the break-even can be checked node by node: the reserved
    // ones run past it, the on-demand ones do not.
    let (kept, rest): (Vec<_>, Vec<_>) = b
        .busy
        .iter()
        .partition(|n| n.worth_reserving(m.rate.usd, m.c.on_demand));
    let uses = |ns: &[&crate::engine::cost::BusyNode]| -> Vec<NodeUse> {
        ns.iter()
            .map(|n| NodeUse {
                hours: n.hours,
                steady: n.steady,
            })
            .collect()
    };
    let reserved = kept.len();
    let mut parts = vec![
        Reason::Reserved(Reserving {
            capacity: cap,
            usd_per_hour: m.rate.usd,
            on_demand: m.c.on_demand,
            month_hours: HOURS_PER_MONTH,
            kept: uses(&kept),
            rest: uses(&rest),
        }),
        Reason::SpotWeighed(spot_judgement(m)),
    ];
    // The plan's term caps the commitment; say what a longer one would save.
    let term = m.d.reservation_term;
    if let (Capacity::Reserved1y, Some(r3)) = (cap, m.c.reserved_3y) {
        if term < crate::core::ReservationTerm::ThreeYear && r3 < m.rate.usd {
            parts.push(Reason::LongerTerm {
                usd_per_hour: r3,
                saving: held_month_usd(m.rate.usd - r3, reserved as f64),
                term,
            });
        }
    }
    parts
}

/// A gang's Capacity Block: its hours and price against on-demand.
fn capacity_block_reason(ms: &[&Choice<'_, '_>], b: &Built) -> Reason {
    let m = ms[0];
    let work_hours = ms.iter().map(|m| m.d.hours).fold(0.0, f64::max);
    Reason::CapacityBlock {
        nodes: b.nodes_max,
        hours: b.block_hours.unwrap_or(work_hours),
        work_hours,
        usd_per_hour: m.rate.usd,
        on_demand: m.c.on_demand,
    }
}
