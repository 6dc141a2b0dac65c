//! The prose of a recommendation's reasons: a pool's `why` line, an alternative's note, a
//! capacity option's note, why spot is shut, why work is unmet, what becomes of a declared
//! pool and what a finding says. The engine returns these as data
//! (`engine::recommend::reason`); the JSON's strings are these texts.

mod detail;
mod notes;
mod shared;
mod spot;
#[cfg(test)]
mod tests;

use std::fmt;

use crate::core::{node_hours_usd, num, rate, usd, Provider};
use crate::engine::recommend::reason::{
    AksMember, FillSplit, NodeUse, NotShared, QuotaClosed, QuotaRemoved, QuotaSplit, Reason,
    Reserving, Why,
};

impl fmt::Display for Why {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            f.write_str(&reason(r))?;
        }
        Ok(())
    }
}

crate::core::serialize_as_text!(Why);

/// A gang's Capacity Block: its arithmetic against on-demand for the gang's hours, and the
/// length bought where it is longer than the work.
fn capacity_block(
    nodes: u32,
    hours: f64,
    work_hours: f64,
    usd_per_hour: f64,
    on_demand: f64,
) -> String {
    let n = f64::from(nodes);
    let length = if (hours - work_hours).abs() < 1e-9 {
        String::new()
    } else {
        format!(
            " (the shortest block EC2 sells for the gang's {} h: 1-day steps to 14 days, 7-day steps to 182)",
            num(work_hours)
        )
    };
    format!(
        "EC2 Capacity Block for the gang: {nodes} node(s) x {} h x {}/h = {} a month{length} against {} on-demand for its {} h ({}/h), paid whether used or not; the gang must run inside the block's dates (`block_hours` on the written pool)",
        num(hours),
        rate(usd_per_hour),
        usd(node_hours_usd(usd_per_hour, n, hours)),
        usd(node_hours_usd(on_demand, n, work_hours)),
        num(work_hours),
        rate(on_demand)
    )
}

/// A cheaper capacity type a known quota closed, and what it would have saved.
fn quota_closed(c: &QuotaClosed) -> String {
    let (capacity, saving) = (c.capacity.as_str(), usd(c.saving_lost));
    let (family, region) = (&c.family, &c.region);
    if c.fleet > 0.0 {
        format!(
            "{capacity} would cost {saving} a month less but needs {} more vCPUs of `{family}` in {region}, where the rest of the fleet uses {} of its known quota of {}: the cheapest capacity that fits is taken",
            num(c.need),
            num(c.fleet),
            num(c.quota)
        )
    } else {
        format!(
            "{capacity} would cost {saving} a month less but needs {} vCPUs of `{family}` in {region}, above its known quota of {}: the cheapest capacity that fits is taken",
            num(c.need),
            num(c.quota)
        )
    }
}

/// One pool's part of a workload a known quota split: the quota's own part, or the rest.
fn quota_split(p: &QuotaSplit) -> String {
    let QuotaSplit {
        workload,
        here,
        planned,
        ..
    } = p;
    let rest = planned.saturating_sub(*here);
    let known = format!(
        "the known quota of `{}` in {} ({} vCPUs)",
        p.family,
        p.region,
        num(p.quota)
    );
    if p.within {
        format!(
            "`{workload}` is split by quota: {here} of its {planned} replicas run here, as many as {known} holds; the other {rest} run in the next cheapest pool"
        )
    } else {
        // A part in another region says which: that cluster runs it.
        let there = if p.pool_region == p.region {
            String::new()
        } else {
            format!(" in {}", p.region)
        };
        format!(
            "`{workload}` is split by quota: {here} of its {planned} replicas run here, the other {rest} on {}{there}, as many as {known} holds",
            p.capacity.as_str()
        )
    }
}

/// One pool's part of a workload split to fill GPUs another pool would leave idle.
fn fill_split(p: &FillSplit) -> String {
    let FillSplit {
        workload,
        here,
        planned,
        filled,
    } = p;
    let rest = planned.saturating_sub(*here);
    if *filled {
        format!("`{workload}` is split to fill GPUs its own pool would leave idle: {here} of its {planned} replicas run here, on nodes the pool needs anyway; the other {rest} in its own pool")
    } else {
        format!("`{workload}` is split: {here} of its {planned} replicas run here, the other {rest} on GPUs another pool would leave idle")
    }
}

/// Cheaper sizes a known quota closed, and what the cheapest would save.
fn quota_removed(q: &QuotaRemoved) -> String {
    format!(
        "a known quota closed {} cheaper option(s) to its workloads (the cheapest listed as quota-closed): on {} in {} the pool would cost {} a month less",
        q.sizes,
        q.sku,
        q.region,
        usd(q.saving)
    )
}

fn reason(r: &Reason) -> String {
    match r {
        Reason::Declared => "declared in the plan".to_owned(),
        Reason::Cheapest {
            candidates,
            gpus_per_node,
            gpu,
            on_demand,
            region,
        } => format!(
            "cheapest expected cost of {candidates} SKU/region candidates that fit: {gpus_per_node} x {gpu} per node at {}/h in {region}",
            rate(*on_demand)
        ),
        Reason::AvailabilityFloor { nodes, workloads } => format!(
            "availability floor: {nodes} node(s) at least, floor and peak, for user-facing {} (one node failure is then not an outage; render spreads the pool over the region's zones, `var.zones` on AKS and the node group's subnets on EKS, and the pods over nodes and zones; `availability_floor` lowers it, GP033)",
            ticked(workloads)
        ),
        Reason::AksMig {
            profile,
            gpu_instance,
            members,
        } => aks_mig(profile, gpu_instance, members),
        Reason::MigPacked {
            gpus,
            stranded_slices,
        } => format!(
            "MIG layouts packed optimally (mig_manager = gpu-operator): {gpus} GPU(s){}",
            stranded_slices
                .map(|s| format!(", {s} compute slice(s) stranded"))
                .unwrap_or_default()
        ),
        Reason::HostMigSlice { sku, share } => format!(
            "MIG by the host: each `{sku}` node's GPU is a {} share of the card, the MIG instance Azure's vGPU host made (SR-IOV), one replica each; neither AKS nor the GPU Operator partitions it",
            crate::core::num(*share)
        ),
        Reason::TimeSliced {
            replicas,
            memory_cap,
            card_share,
        } => format!(
            "{replicas} time-sliced replicas per GPU (compute share and memory); each server caps memory at {} so the caps add up to {} of the card",
            memory_cap.map_or("-".into(), num),
            num(*card_share)
        ),
        Reason::SharedServer => {
            "one server process hosts the shares of a GPU; the device plugin sees whole GPUs".into()
        }
        Reason::DefaultShare { workload, share } => format!(
            "`{workload}` states no `utilization` or `gpu_fraction`: compute share {} assumed (time_slicing_default_share)",
            num(*share)
        ),
        Reason::Dedicated {
            workload,
            sharing,
            cause,
        } => format!(
            "`{workload}` declares `sharing = \"{}\"` but runs on dedicated GPUs: {}",
            sharing.as_str(),
            not_shared(cause)
        ),
        Reason::PackedHere {
            workload,
            sku,
            region,
            capacity,
        } => format!(
            "`{workload}` would cost least on {sku} in {region} ({}) priced per replica; packed, the fleet costs less with it here",
            capacity.as_str()
        ),
        Reason::Gang { nodes } => format!(
            "gangs take whole nodes; the pool holds the largest gang ({nodes} nodes)"
        ),
        Reason::Spot(j) => format!("spot: {}", spot::judgement(j)),
        Reason::SpotZones { average, cheapest } => format!(
            "spot priced at the zones' average {}/h; the cheapest zone is {}/h, but nodes land in whichever zone has capacity",
            rate(*average),
            rate(*cheapest)
        ),
        Reason::OnDemand(j) => format!("on-demand; {}", spot::judgement(j)),
        Reason::ReservedUnknown { provider } => reserved_unknown(*provider),
        Reason::Reserved(n) => reserved(n),
        Reason::SpotWeighed(j) => spot::judgement(j),
        Reason::LongerTerm {
            usd_per_hour,
            saving,
            term,
        } => format!(
            "a 3-year term at {}/h would save {} a month on these reserved nodes; the plan's `reservation_term = \"{}\"` caps the commitment",
            rate(*usd_per_hour),
            usd(*saving),
            term.as_str()
        ),
        Reason::CapacityBlock {
            nodes,
            hours,
            work_hours,
            usd_per_hour,
            on_demand,
        } => capacity_block(*nodes, *hours, *work_hours, *usd_per_hour, *on_demand),
        Reason::QuotaClosed(c) => quota_closed(c),
        Reason::QuotaSplit(p) => quota_split(p),
        Reason::FillSplit(p) => fill_split(p),
        Reason::QuotaRemoved(q) => quota_removed(q),
        Reason::QuotaUnknown { region, family } => format!(
            "quota unknown in {region} for `{family}` (a live refresh reads it; the plan's other region knows its quota)"
        ),
        Reason::ArmHostsLeftOut { skus } => format!(
            "left out, Arm hosts (arm64 images only) that cost less per GPU here: {}; name one in a workload's `skus` if its images are built for arm64",
            skus.iter()
                .map(|(s, r)| format!("`{s}` {}/GPU-h on demand", rate(*r)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Names in backticks, comma-separated.
pub(super) fn ticked(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn aks_mig(profile: &str, gpu_instance: &str, members: &[AksMember]) -> String {
    let mut s = format!(
        "MIG `{profile}` on every GPU (mig_manager = aks: one profile per pool, AKS `gpu_instance` {gpu_instance})"
    );
    for m in members {
        s.push_str(&match m {
            AksMember::Instead { workload, own } => format!(
                "; `{workload}` takes `{profile}` instead of its own `{own}`: sharing these nodes costs less than a pool of its own"
            ),
            AksMember::Split {
                workload,
                peak,
                planned,
            } => format!(
                "; `{workload}` is split over this family's profiles: {peak} of its {planned} replicas at peak run here (its pods ask for `nvidia.com/gpu` under AKS's single strategy, so any of these pools can run them)"
            ),
        });
    }
    s
}

fn not_shared(cause: &NotShared) -> String {
    match cause {
        NotShared::ManyGpus(n) => {
            format!("a replica asks for {n} GPUs, which a time-sliced GPU cannot give (GP003)")
        }
        NotShared::NoRoom(gib) => format!(
            "no allowed GPU holds 2 of its replicas ({} GiB each)",
            num(*gib)
        ),
        NotShared::Cheaper => {
            "a GPU of its own costs less than the sizes whose GPUs hold 2 of its replicas"
                .to_owned()
        }
    }
}

/// The one wording of a cloud whose reservation prices only a live refresh fetches
/// (`reservation`: the product, "Azure reservation").
pub(crate) fn reservations_unknown(reservation: &str, api: Option<&str>) -> String {
    let from = api.map(|a| format!(" from {a}")).unwrap_or_default();
    format!("{reservation} prices are unknown offline (a live refresh fetches them{from})")
}

/// No reservation price for a pool that keeps nodes all month: unknown offline where only a
/// live refresh fetches them, else not sold.
fn reserved_unknown(provider: Provider) -> String {
    let p = crate::cloud::profile(provider);
    if p.reservations_live_only() {
        reservations_unknown(p.reservation, None)
    } else {
        format!(
            "no {} is sold for this type here in the catalog's data",
            p.reservation
        )
    }
}

fn reserved(r: &Reserving) -> String {
    let Reserving {
        capacity,
        usd_per_hour,
        on_demand,
        month_hours,
        kept,
        rest,
    } = r;
    let above = if rest.is_empty() {
        String::new()
    } else {
        format!(
            "; the other {} node(s) stay on-demand at {}",
            rest.len(),
            utilisations(rest, *month_hours)
        )
    };
    format!(
        "{} for {} node(s) at {}/h against {}/h on-demand: a reservation is paid all {} h a month, so a node breaks even at {:.0}% utilisation; the reserved nodes run {}{above}",
        capacity.as_str(),
        kept.len(),
        rate(*usd_per_hour),
        rate(*on_demand),
        num(*month_hours),
        usd_per_hour / on_demand * 100.0,
        utilisations(kept, *month_hours),
    )
}

/// Nodes' utilisations of a month, runs of equal ones counted: "3 x 100%, 82%".
fn utilisations(busy: &[NodeUse], month: f64) -> String {
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
