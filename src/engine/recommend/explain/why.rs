//! The `why` of a recommended pool: the reasons its SKU, region, sharing and capacity were
//! chosen, one stage each, joined into one line.

use super::super::*;

pub(in crate::engine::recommend) fn why_line(
    catalog: &Catalog,
    ms: &[&Choice<'_, '_>],
    b: &Built,
    key: &PoolKey,
    plan_hours: f64,
    gpu_mem_util: Option<f64>,
) -> String {
    let c = &ms[0].c;
    let n_candidates: usize = ms.iter().map(|m| m.all.len()).max().unwrap_or(0);
    let mut parts = vec![format!(
        "cheapest expected cost of {n_candidates} SKU/region candidates that fit: {} x {} per node at {}/h in {}",
        c.sku.gpu_count,
        c.gpu.name,
        crate::core::rate(c.on_demand),
        c.region
    )];
    parts.extend(availability_reason(ms, b));
    parts.extend(fit_reason(catalog, ms, b, gpu_mem_util));
    parts.extend(declared_sharing_reasons(catalog, ms));
    parts.extend(packed_reasons(ms, plan_hours));
    if ms.iter().any(|m| m.d.gang > 1) {
        parts.push(format!(
            "gangs take whole nodes; the pool holds the largest gang ({} nodes)",
            ms.iter().map(|m| m.d.gang).max().unwrap_or(1)
        ));
    }
    parts.extend(capacity_reasons(catalog, ms, b, key.3));
    parts.join("; ")
}

/// The availability floor of user-facing workloads, and whose it is.
fn availability_reason(ms: &[&Choice<'_, '_>], b: &Built) -> Option<String> {
    let n = b.availability?;
    let who: Vec<String> = ms
        .iter()
        .filter(|m| m.d.availability == n)
        .map(|m| format!("`{}`", m.d.name))
        .collect();
    Some(format!(
        "availability floor: {n} node(s) at least, floor and peak, for user-facing {} (one node failure is then not an outage; render spreads the pool over the region's zones, `var.zones` on AKS and the node group's subnets on EKS, and the pods over nodes and zones; `availability_floor` lowers it, GP033)",
        who.join(", ")
    ))
}

/// How the pool's GPUs are shared: its MIG profile or layouts, time-slicing or a server.
fn fit_reason(
    catalog: &Catalog,
    ms: &[&Choice<'_, '_>],
    b: &Built,
    gpu_mem_util: Option<f64>,
) -> Option<String> {
    let c = &ms[0].c;
    match &c.fit {
        Fit::Mig { profile } => Some(match ms[0].d.mig_manager {
            MigManager::Aks => aks_mig_reason(ms, &profile.name),
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
        Fit::Shared { replicas, .. } if *replicas > 1 => Some(format!(
            "{} time-sliced replicas per GPU (compute share and memory); each server caps memory at {} so the caps add up to {} of the card",
            replicas,
            gpu_mem_util.map_or("-".into(), crate::core::num),
            crate::core::num(1.0 - catalog.assumptions.time_slicing_memory_headroom)
        )),
        Fit::Server { .. } => Some(
            "one server process hosts the shares of a GPU; the device plugin sees whole GPUs".into(),
        ),
        Fit::Whole { .. } | Fit::Shared { .. } => None,
    }
}

/// An AKS MIG pool's one profile, and the workloads that take it instead of their own or are
/// split over the family's profiles.
fn aks_mig_reason(ms: &[&Choice<'_, '_>], profile: &str) -> String {
    let c = &ms[0].c;
    let mut s = format!(
        "MIG `{profile}` on every GPU (mig_manager = aks: one profile per pool, AKS `gpu_instance` {})",
        c.gpu
            .mig
            .as_ref()
            .and_then(|m| m.aks_gpu_instance(profile))
            .unwrap_or_default()
    );
    for m in ms {
        let own = candidate::mig_profile(m.c.gpu, &m.d, MigManager::Aks);
        if let Some(own) = own.filter(|o| o.name != profile) {
            s.push_str(&format!(
                "; `{}` takes `{profile}` instead of its own `{}`: sharing these nodes costs less than a pool of its own",
                m.d.name, own.name
            ));
        }
        if m.d.is_part() {
            s.push_str(&format!(
                "; `{}` is split over this family's profiles: {} of its {} replicas at peak run here (its pods ask for `nvidia.com/gpu` under AKS's single strategy, so any of these pools can run them)",
                m.d.name,
                m.d.peak,
                m.d.planned_peak()
            ));
        }
    }
    s
}

/// A declared time-slicing or MPS mode is honoured, or the reason it is not is stated.
fn declared_sharing_reasons(catalog: &Catalog, ms: &[&Choice<'_, '_>]) -> Vec<String> {
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
            parts.push(format!(
                "`{}` states no `utilization` or `gpu_fraction`: compute share {} assumed (time_slicing_default_share)",
                m.d.name,
                crate::core::num(catalog.assumptions.time_slicing_default_share)
            ));
        }
        if matches!(m.c.fit, Fit::Whole { .. } | Fit::Shared { replicas: 1, .. }) {
            let why = if m.d.gpus > 1 {
                format!(
                    "a replica asks for {} GPUs, which a time-sliced GPU cannot give (GP003)",
                    m.d.gpus
                )
            } else {
                format!(
                    "no allowed GPU holds 2 of its replicas ({} GiB each)",
                    crate::core::num(m.d.memory_need.unwrap_or(0.0))
                )
            };
            parts.push(format!(
                "`{}` declares `sharing = \"{}\"` but runs on dedicated GPUs: {why}",
                m.d.name,
                m.d.sharing.as_str()
            ));
        }
    }
    parts
}

/// Workloads choose from the node share a replica takes; merges and moves then put some where
/// the packed fleet costs less. Say so, rather than let "cheapest" stand for each. One answer
/// per shared candidate list (workloads of one shape choose alike).
fn packed_reasons(ms: &[&Choice<'_, '_>], plan_hours: f64) -> Vec<String> {
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
            parts.push(format!(
                "`{}` would cost least on {} in {} ({}) priced per replica; packed, the fleet costs less with it here",
                m.d.name,
                own.sku.name,
                own.region,
                rate.capacity.as_str()
            ));
        }
    }
    parts
}

/// How spot was judged for a workload: its waste against the break-even, or why it is shut.
fn spot_detail(m: &Choice<'_, '_>) -> String {
    use crate::core::rate as r;
    let Some(q) = &m.c.spot else {
        return "no spot price".to_owned();
    };
    let a = &q.assessment;
    let band = a.band.as_ref().map_or(
        if q.at_worst_band {
            "unknown, judged at the worst band".to_owned()
        } else {
            "unknown".to_owned()
        },
        |b| b.label.clone(),
    );
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
        ) + if q.at_worst_band {
            "; wins even at the worst eviction band"
        } else {
            ""
        },
        (Ok(eff), _, Some(be)) => format!(
            "spot {}/useful hour vs on-demand {} (break-even {:.2}x; band {band}; stateless: only the restart is lost)",
            r(*eff),
            r(a.on_demand.unwrap_or(0.0)),
            be
        ),
        (Err(why), _, _) => format!("spot not open: {}", why.why(m.d.name)),
        _ => "spot not assessed".to_owned(),
    }
}

/// Why the pool is bought as it is: spot, on-demand, reserved or a Capacity Block.
fn capacity_reasons(
    catalog: &Catalog,
    ms: &[&Choice<'_, '_>],
    b: &Built,
    cap: Capacity,
) -> Vec<String> {
    let m = ms[0];
    let c = &m.c;
    match cap {
        Capacity::Spot => {
            let mut parts = vec![format!("spot: {}", spot_detail(m))];
            // Priced at the zones' average, as bought; the cheapest zone is only a note.
            let cheapest = catalog
                .provider(c.sku.provider)
                .and_then(|pc| pc.price(&c.sku.name, &c.region))
                .and_then(|p| p.spot.as_ref().zip(p.spot_cheapest_zone));
            if let Some((avg, min)) = cheapest {
                parts.push(format!(
                    "spot priced at the zones' average {}/h; the cheapest zone is {}/h, but nodes land in whichever zone has capacity",
                    crate::core::rate(avg.usd_per_hour),
                    crate::core::rate(min)
                ));
            }
            parts
        }
        Capacity::OnDemand => {
            let mut parts = vec![format!("on-demand; {}", spot_detail(m))];
            if c.reserved_1y.is_none() && c.reserved_3y.is_none() && b.nodes_min > 0 {
                parts.push(
                    match c.sku.provider {
                        crate::core::Provider::Azure => {
                            "Azure reservation prices are unknown offline (a live refresh fetches them)"
                        }
                        crate::core::Provider::Aws => {
                            "no Reserved Instance is sold for this type here in the catalog's data"
                        }
                    }
                    .into(),
                );
            }
            parts
        }
        Capacity::Reserved1y | Capacity::Reserved3y => reserved_reasons(m, b, cap),
        Capacity::CapacityBlock => vec![capacity_block_reason(ms, b)],
        Capacity::CapacityReservation => Vec::new(),
    }
}

/// A reserved pool: which nodes run past the break-even, and what a longer term would save.
fn reserved_reasons(m: &Choice<'_, '_>, b: &Built, cap: Capacity) -> Vec<String> {
    let ratio = m.rate.usd / m.c.on_demand;
    // Each node's utilisation, so the break-even can be checked node by node: the reserved
    // ones run past it, the on-demand ones do not.
    let (kept, rest): (Vec<_>, Vec<_>) = b
        .busy
        .iter()
        .partition(|n| n.worth_reserving(m.rate.usd, m.c.on_demand));
    let reserved = kept.len();
    let above = if rest.is_empty() {
        String::new()
    } else {
        format!(
            "; the other {} node(s) stay on-demand at {}",
            rest.len(),
            utilisations(&rest, HOURS_PER_MONTH)
        )
    };
    let mut parts = vec![
        format!(
            "{} for {} node(s) at {}/h against {}/h on-demand: a reservation is paid all {} h a month, so a node breaks even at {:.0}% utilisation; the reserved nodes run {}{above}",
            cap.as_str(),
            reserved,
            crate::core::rate(m.rate.usd),
            crate::core::rate(m.c.on_demand),
            crate::core::num(HOURS_PER_MONTH),
            ratio * 100.0,
            utilisations(&kept, HOURS_PER_MONTH),
        ),
        spot_detail(m),
    ];
    // The plan's term caps the commitment; say what a longer one would save.
    let term = m.d.reservation_term;
    if let (Capacity::Reserved1y, Some(r3)) = (cap, m.c.reserved_3y) {
        if term < crate::core::ReservationTerm::ThreeYear && r3 < m.rate.usd {
            parts.push(format!(
                "a 3-year term at {}/h would save {} a month on these reserved nodes; the plan's `reservation_term = \"{}\"` caps the commitment",
                crate::core::rate(r3),
                crate::core::usd(reserved as f64 * (m.rate.usd - r3) * HOURS_PER_MONTH),
                term.as_str()
            ));
        }
    }
    parts
}

/// A gang's Capacity Block: its hours and price against on-demand.
fn capacity_block_reason(ms: &[&Choice<'_, '_>], b: &Built) -> String {
    let m = ms[0];
    let hours = ms.iter().map(|m| m.d.hours).fold(0.0, f64::max);
    let nodes = f64::from(b.nodes_max);
    format!(
        "EC2 Capacity Block for the gang: {} node(s) x {} h x {}/h = {} a month against {} on-demand ({}/h), bought for the gang's hours and paid only for them; the gang must run inside the block's dates (`block_hours` on the written pool)",
        b.nodes_max,
        crate::core::num(hours),
        crate::core::rate(m.rate.usd),
        crate::core::usd(nodes * hours * m.rate.usd),
        crate::core::usd(nodes * hours * m.c.on_demand),
        crate::core::rate(m.c.on_demand)
    )
}

/// Nodes' utilisations of a month, runs of equal ones counted: "3 x 100%, 82%".
fn utilisations(busy: &[&crate::engine::cost::BusyNode], month: f64) -> String {
    let mut runs: Vec<(u32, String)> = Vec::new();
    for n in busy {
        let pct = format!(
            "{:.0}%{}",
            n.hours / month * 100.0,
            if n.steady { "" } else { " (peak)" }
        );
        match runs.last_mut() {
            Some((n, p)) if *p == pct => *n += 1,
            _ => runs.push((1, pct)),
        }
    }
    if runs.is_empty() {
        return "nothing".to_owned();
    }
    runs.iter()
        .map(|(n, p)| {
            if *n > 1 {
                format!("{n} x {p}")
            } else {
                p.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}
