//! The prose of a recommendation's reasons: a pool's `why` line, an alternative's note, a
//! capacity option's note and why spot is shut. The engine returns these as data
//! (`engine::recommend::reason`); the JSON's `why` and `note` strings are these texts.

use std::fmt;

use crate::core::{num, rate, usd, Provider};
use crate::engine::recommend::candidate::{Detail, SpotNo};
use crate::engine::recommend::demand::SpotClosed;
use crate::engine::recommend::reason::{
    AksMember, AltNote, AltWhat, BandSeen, CapacityNote, ChangeNote, NodeUse, NotShared, NotTaken,
    Reason, Reserving, Said, SpotJudgement, SpotWeighing, Unmet, Why,
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

impl fmt::Display for AltNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&alt_what(&self.what))?;
        if let Some(n) = &self.not_taken {
            f.write_str("; not taken: ")?;
            f.write_str(&not_taken(n))?;
        }
        Ok(())
    }
}

impl fmt::Display for CapacityNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CapacityNote::FloorReserved { nodes, provider } => write!(
                f,
                "reserve the floor of {nodes} node(s) so a scale-up or node repair cannot stock out ({}); billed at the on-demand rate for every hour of the month whether used or not",
                crate::cloud::profile(*provider).capacity_reservation
            ),
        }
    }
}

crate::core::serialize_as_text!(Why, AltNote, CapacityNote);

/// Why spot is no option for `workload`.
pub(crate) fn spot_no(no: &SpotNo, workload: &str) -> String {
    match no {
        SpotNo::Closed(c) => spot_closed(*c, workload),
        SpotNo::PriceUnknown { sku, region } => format!(
            "spot price of `{sku}` in {region} unknown offline (no dated figure; a live refresh fetches it), so spot is not offered"
        ),
        SpotNo::BandUnknown {
            sku,
            region,
            wins_up_to: Some((label, p)),
        } => format!(
            "the eviction band of `{sku}` in {region} is unknown (refresh live data); spot would win up to band {label} ({}% of nodes a month), not at the worst",
            num(p * 100.0)
        ),
        SpotNo::BandUnknown {
            sku,
            region,
            wins_up_to: None,
        } => format!(
            "the eviction band of `{sku}` in {region} is unknown (refresh live data), and spot loses even at the lowest band"
        ),
    }
}

fn spot_closed(c: SpotClosed, name: &str) -> String {
    match c {
        SpotClosed::UserFacing => format!("`{name}` is user-facing: an interruption is an outage"),
        SpotClosed::NotInterruptible => format!("`{name}` is not `interruptible`"),
        SpotClosed::NoCheckpoint => {
            format!("`{name}` has no `checkpoint_minutes`: an interruption loses all its work")
        }
    }
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
        Reason::Spot(j) => format!("spot: {}", spot_judgement(j)),
        Reason::SpotZones { average, cheapest } => format!(
            "spot priced at the zones' average {}/h; the cheapest zone is {}/h, but nodes land in whichever zone has capacity",
            rate(*average),
            rate(*cheapest)
        ),
        Reason::OnDemand(j) => format!("on-demand; {}", spot_judgement(j)),
        Reason::ReservedUnknown { provider } => reserved_unknown(*provider),
        Reason::Reserved(n) => reserved(n),
        Reason::SpotWeighed(j) => spot_judgement(j),
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
            usd_per_hour,
            on_demand,
        } => {
            let n = f64::from(*nodes);
            format!(
                "EC2 Capacity Block for the gang: {nodes} node(s) x {} h x {}/h = {} a month against {} on-demand ({}/h), bought for the gang's hours and paid only for them; the gang must run inside the block's dates (`block_hours` on the written pool)",
                num(*hours),
                rate(*usd_per_hour),
                usd(n * hours * usd_per_hour),
                usd(n * hours * on_demand),
                rate(*on_demand)
            )
        }
        Reason::QuotaUnknown { region, family } => format!(
            "quota unknown in {region} for `{family}` (a live refresh reads it; the plan's other region knows its quota)"
        ),
    }
}

/// Names in backticks, comma-separated.
fn ticked(names: &[String]) -> String {
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
    }
}

/// No reservation price for a pool that keeps nodes all month: unknown offline where only a
/// live refresh fetches them, else not sold.
fn reserved_unknown(provider: Provider) -> String {
    let p = crate::cloud::profile(provider);
    if p.reservations_live_only {
        format!(
            "{} prices are unknown offline (a live refresh fetches them)",
            p.reservation
        )
    } else {
        format!(
            "no {} is sold for this type here in the catalog's data",
            p.reservation
        )
    }
}

fn band(b: &BandSeen) -> &str {
    match b {
        BandSeen::Known(l) => l,
        BandSeen::Unknown => "unknown",
        BandSeen::JudgedAtWorst => "unknown, judged at the worst band",
    }
}

fn spot_judgement(j: &SpotJudgement) -> String {
    match j {
        SpotJudgement::NoPrice => "no spot price".to_owned(),
        SpotJudgement::Weighed(w) => spot_weighed(w),
        SpotJudgement::Stateless {
            effective,
            on_demand,
            break_even,
            band: b,
        } => format!(
            "spot {}/useful hour vs on-demand {} (break-even {break_even:.2}x; band {}; stateless: only the restart is lost)",
            rate(*effective),
            rate(*on_demand),
            band(b)
        ),
        SpotJudgement::Shut { workload, why } => {
            format!("spot not open: {}", spot_no(why, workload))
        }
        SpotJudgement::NotAssessed => "spot not assessed".to_owned(),
    }
}

fn spot_weighed(w: &SpotWeighing) -> String {
    format!(
        "spot waste {:.4}x paid per useful hour vs break-even {:.2}x (on-demand {} / spot {}; band {} = {}% of nodes a month, hazard {:.2e}/node-hour, gang {}, checkpoint {} min, restart {} min{}){}",
        w.waste,
        w.break_even,
        rate(w.on_demand),
        rate(w.spot),
        band(&w.band),
        num(w.monthly_interruption * 100.0),
        w.node_hazard,
        w.gang,
        num(w.checkpoint_minutes),
        num(w.restart_minutes),
        if w.restart_is_default { ", default" } else { "" },
        if w.at_worst_band {
            "; wins even at the worst eviction band"
        } else {
            ""
        }
    )
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

fn alt_what(w: &AltWhat) -> String {
    match w {
        AltWhat::Packed { nodes, gpus } => format!("{nodes} node(s), {gpus} GPU(s) at peak"),
        AltWhat::FewerGpus {
            nodes,
            gpus,
            fewer,
            usd_per_gpu,
        } => format!(
            "{nodes} node(s), {gpus} GPU(s) at peak: {fewer} fewer GPUs, {} a month per GPU given back",
            usd(*usd_per_gpu)
        ),
        AltWhat::SpotShut { workload, why } => {
            format!("not considered: {}", spot_no(why, workload))
        }
    }
}

fn not_taken(n: &NotTaken) -> String {
    match n {
        NotTaken::Quota {
            family,
            region,
            quota,
            fleet,
            need,
        } => format!(
            "quota, the {family} quota in {region} is {} vCPUs and the rest of the fleet uses {}, so its {} more do not fit",
            num(*quota),
            num(*fleet),
            num(*need)
        ),
        NotTaken::NotTried { members, replicas } => format!(
            "not tried, only pools of up to {members} workloads and {replicas} replicas, none split over AKS profiles, are moved to their listed options (packing each for real costs more time than the rest of the recommendation)"
        ),
        NotTaken::Repaired => "quota repair moved a workload here off a pool over its quota after the pool stage, which does not revisit this pool's options".to_owned(),
        NotTaken::FleetCheaper => "priced as this pool alone it is cheaper, but the fleet as a whole costs less as chosen (its workloads share nodes, merges or reservations with other pools)".to_owned(),
    }
}

impl fmt::Display for Unmet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unmet::NoSku { provider, workload } => write!(
                f,
                "no SKU of {provider} in the catalog can be considered for `{workload}`"
            ),
            Unmet::Rejected {
                regions,
                workload,
                constraint,
                examples,
            } => {
                // The first three distinct texts: figures that differ below the shown
                // precision read as one.
                let mut shown: Vec<String> = Vec::new();
                for d in examples {
                    let t = detail(d);
                    if shown.len() < 3 && !shown.contains(&t) {
                        shown.push(t);
                    }
                }
                write!(
                    f,
                    "no SKU in {} can run `{workload}`: {} ({})",
                    regions.join(", "),
                    constraint.as_str(),
                    shown.join("; ")
                )
            }
        }
    }
}

impl fmt::Display for ChangeNote {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let caveat = |c: &Option<String>| c.as_ref().map(|c| format!(" ({c})")).unwrap_or_default();
        match self {
            ChangeNote::Keep { blocked } => write!(
                f,
                "keep it: its workloads cannot be placed elsewhere ({}); not compared, no saving claimed",
                blocked
                    .iter()
                    .map(|(w, u)| format!("`{w}`: {u}"))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            ChangeNote::BlockPriceUnknown { sku, region } => write!(
                f,
                "Capacity Block price of `{sku}` in {region} unknown offline (a live refresh reads DescribeCapacityBlockOfferings): not compared, no saving claimed"
            ),
            ChangeNote::NoPrice { sku, region } => write!(
                f,
                "no price for `{sku}` in {region} in the catalog: not compared"
            ),
            ChangeNote::Delete { caveat: c } => {
                write!(f, "no workload needs it: delete the pool{}", caveat(c))
            }
            ChangeNote::Moves { to, caveat: c } => write!(
                f,
                "its workloads move to {}{}",
                ticked(to),
                caveat(c)
            ),
        }
    }
}

crate::core::serialize_as_text!(Unmet, ChangeNote);

/// The figures a SKU and region failed a constraint by.
pub(crate) fn detail(d: &Detail) -> String {
    match d {
        Detail::NoData { provider } => format!("the catalog has no data for {provider}"),
        Detail::Retired { sku } => {
            format!("`{sku}` is retired by the provider and cannot be created")
        }
        Detail::GpuShare { need, sku, share } => format!(
            "a replica needs {} GPU(s) and `{sku}` has a {share} share of one",
            num(*need)
        ),
        Detail::GpuMemory {
            need,
            n,
            gpu,
            offered,
            cap,
        } => format!(
            "a replica needs {} GiB and {n} x {gpu} give it {} GiB{}",
            num(*need),
            num(*offered),
            if *cap < 1.0 {
                format!(" under its server's cap of {}", num(*cap))
            } else {
                String::new()
            }
        ),
        Detail::CappedMemory {
            need,
            gpu,
            offered,
            cap,
        } => format!(
            "a replica needs {} GiB and one {gpu} gives it {} GiB under its server's cap of {}",
            num(*need),
            num(*offered),
            num(*cap)
        ),
        Detail::SharedMemory { need, gpu, has } => format!(
            "a replica needs {} GiB and one {gpu} has {} GiB",
            num(*need),
            num(*has)
        ),
        Detail::NoPrice { sku, region } => {
            format!("`{sku}` has no price in {region} in the catalog")
        }
        Detail::NotInSkus { sku } => format!("`{sku}` is not in the workload's `skus`"),
        Detail::NotInGpuModels { gpu } => {
            format!("{gpu} is not in the workload's `gpu_models`")
        }
        Detail::Precision {
            gpu,
            has,
            precision,
            needs,
        } => format!(
            "{gpu} (compute capability {}.{}) does not compute in {precision}, which needs {}.{}",
            has.0, has.1, needs.0, needs.1
        ),
        Detail::Restricted { sku, region, why } => format!(
            "`{sku}` cannot be deployed in {region} by this account: {why} (catalog refresh)"
        ),
        Detail::GpusPerNode { gpus, sku, has } => {
            format!("a replica needs {gpus} GPUs on one node and `{sku}` has {has}")
        }
        Detail::NoMig { gpu } => format!("{gpu} has no MIG"),
        Detail::AksNoMig { gpu } => {
            format!("AKS creates no MIG instances on {gpu} (mig_manager = aks)")
        }
        Detail::NoMigProfile { gpu, need } => {
            format!("no MIG profile of {gpu} holds {} GiB", num(*need))
        }
        Detail::HostCpu {
            need,
            sku,
            allocatable,
        } => format!(
            "a replica needs {} vCPUs and `{sku}` has {} allocatable",
            num(*need),
            num(*allocatable)
        ),
        Detail::HostMemory {
            need,
            sku,
            allocatable,
        } => format!(
            "a replica needs {} GiB of RAM and `{sku}` has {} allocatable",
            num(*need),
            num(*allocatable)
        ),
        Detail::Interconnect { gang, sku, gap } => format!(
            "a {gang}-node gang needs InfiniBand or EFA between its nodes (and NVLink when a replica spans GPUs); `{sku}` has {gap}"
        ),
        Detail::Quota {
            need,
            family,
            region,
            limit,
            from,
        } => format!(
            "{} vCPUs of `{family}` needed in {region}, quota {} (from {from})",
            num(*need),
            num(*limit)
        ),
    }
}

impl fmt::Display for Said {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Said::Rule(m) => f.write_str(m),
            Said::AllowExpired(said, on) => {
                write!(f, "{said} (the allow for this finding expired on {on})")
            }
            Said::QuotaOver {
                vcpus,
                family,
                region,
                limit,
                from,
            } => write!(
                f,
                "the recommended pools reach {} vCPUs of `{family}` in {region}, above the known quota of {} (from {from}): request more quota or lower the peaks",
                num(*vcpus),
                num(*limit)
            ),
            Said::PackingNotProven {
                pool,
                gpus,
                lower_bound,
            } => write!(
                f,
                "the MIG packing of `{pool}` was not proven optimal within the search budget: {gpus} GPUs, lower bound {lower_bound}"
            ),
            Said::IdleGpus {
                pool,
                room,
                idle,
                gpus,
                sku,
                region,
                option_gpus,
                more_usd,
            } => write!(
                f,
                "`{pool}` runs out of vCPUs or RAM before GPUs{}: {idle} GPUs' worth of its {gpus} idle at peak; {sku} {region} would need {option_gpus} GPUs for {} a month more (kept the cheaper pool)",
                room.map(|(cpu, mem)| format!(" ({} vCPUs and {} GiB a node for pods)", num(cpu), num(mem)))
                    .unwrap_or_default(),
                usd(*more_usd)
            ),
        }
    }
}

crate::core::serialize_as_text!(Said);

#[cfg(test)]
mod tests {
    //! The wordings no example plan prints, each as the engine wrote it before its reasons
    //! became data (the texts are the old format strings with the figures put in).
    use super::*;
    use crate::core::Sharing;
    use crate::engine::recommend::candidate::Constraint;

    fn why(r: Vec<Reason>) -> String {
        Why(r).to_string()
    }

    #[test]
    fn a_capacity_block_and_a_shared_server_read_as_before() {
        assert_eq!(
            why(vec![
                Reason::SharedServer,
                Reason::CapacityBlock {
                    nodes: 2,
                    hours: 96.0,
                    usd_per_hour: 31.464,
                    on_demand: 55.04,
                },
            ]),
            "one server process hosts the shares of a GPU; the device plugin sees whole GPUs; \
             EC2 Capacity Block for the gang: 2 node(s) x 96 h x $31.464/h = $6,041.09 a month \
             against $10,567.68 on-demand ($55.04/h), bought for the gang's hours and paid only \
             for them; the gang must run inside the block's dates (`block_hours` on the written pool)"
        );
        assert_eq!(why(vec![Reason::Declared]), "declared in the plan");
    }

    #[test]
    fn spot_judgements_read_as_before() {
        let stateless = SpotJudgement::Stateless {
            effective: 1.25,
            on_demand: 3.673,
            break_even: 2.5,
            band: BandSeen::Unknown,
        };
        assert_eq!(
            why(vec![Reason::OnDemand(stateless)]),
            "on-demand; spot $1.25/useful hour vs on-demand $3.673 (break-even 2.50x; band unknown; stateless: only the restart is lost)"
        );
        let band = SpotNo::BandUnknown {
            sku: "p5.48xlarge".into(),
            region: "us-east-1".into(),
            wins_up_to: Some(("15-20".into(), 0.175)),
        };
        assert_eq!(
            why(vec![Reason::SpotWeighed(SpotJudgement::Shut {
                workload: "train".into(),
                why: band,
            })]),
            "spot not open: the eviction band of `p5.48xlarge` in us-east-1 is unknown (refresh live data); spot would win up to band 15-20 (17.5% of nodes a month), not at the worst"
        );
        let loses = SpotNo::BandUnknown {
            sku: "p5.48xlarge".into(),
            region: "us-east-1".into(),
            wins_up_to: None,
        };
        assert_eq!(
            spot_no(&loses, "train"),
            "the eviction band of `p5.48xlarge` in us-east-1 is unknown (refresh live data), and spot loses even at the lowest band"
        );
        assert_eq!(
            why(vec![
                Reason::Spot(SpotJudgement::NoPrice),
                Reason::OnDemand(SpotJudgement::NotAssessed)
            ]),
            "spot: no spot price; on-demand; spot not assessed"
        );
    }

    #[test]
    fn aks_members_and_dedicated_sharing_read_as_before() {
        assert_eq!(
            why(vec![Reason::AksMig {
                profile: "3g.40gb".into(),
                gpu_instance: "MIG3g".into(),
                members: vec![
                    AksMember::Instead {
                        workload: "mid".into(),
                        own: "2g.20gb".into(),
                    },
                    AksMember::Split {
                        workload: "embed".into(),
                        peak: 1,
                        planned: 8,
                    },
                ],
            }]),
            "MIG `3g.40gb` on every GPU (mig_manager = aks: one profile per pool, AKS `gpu_instance` MIG3g); \
             `mid` takes `3g.40gb` instead of its own `2g.20gb`: sharing these nodes costs less than a pool of its own; \
             `embed` is split over this family's profiles: 1 of its 8 replicas at peak run here (its pods ask for \
             `nvidia.com/gpu` under AKS's single strategy, so any of these pools can run them)"
        );
        assert_eq!(
            why(vec![Reason::Dedicated {
                workload: "big".into(),
                sharing: Sharing::Mps,
                cause: NotShared::ManyGpus(2),
            }]),
            "`big` declares `sharing = \"mps\"` but runs on dedicated GPUs: a replica asks for 2 GPUs, which a time-sliced GPU cannot give (GP003)"
        );
    }

    #[test]
    fn why_an_alternative_was_not_taken_reads_as_before() {
        let note = |n| {
            AltNote {
                what: AltWhat::Packed { nodes: 3, gpus: 24 },
                not_taken: Some(n),
            }
            .to_string()
        };
        assert_eq!(
            note(NotTaken::Quota {
                family: "standardNCADSA100v4Family".into(),
                region: "eastus".into(),
                quota: 48.0,
                fleet: 48.0,
                need: 24.0,
            }),
            "3 node(s), 24 GPU(s) at peak; not taken: quota, the standardNCADSA100v4Family quota in eastus is 48 vCPUs and the rest of the fleet uses 48, so its 24 more do not fit"
        );
        assert_eq!(
            note(NotTaken::NotTried {
                members: 16,
                replicas: 600,
            }),
            "3 node(s), 24 GPU(s) at peak; not taken: not tried, only pools of up to 16 workloads and 600 replicas, none split over AKS profiles, are moved to their listed options (packing each for real costs more time than the rest of the recommendation)"
        );
        assert!(note(NotTaken::Repaired).ends_with("; not taken: quota repair moved a workload here off a pool over its quota after the pool stage, which does not revisit this pool's options"));
        assert!(note(NotTaken::FleetCheaper).ends_with("; not taken: priced as this pool alone it is cheaper, but the fleet as a whole costs less as chosen (its workloads share nodes, merges or reservations with other pools)"));
    }

    #[test]
    fn unmet_work_changes_and_findings_read_as_before() {
        let unmet = Unmet::Rejected {
            regions: vec!["eastus".into()],
            workload: "w".into(),
            constraint: Constraint::GpuMemory,
            // Two figures that print alike are shown once; four distinct show three.
            examples: vec![
                Detail::SharedMemory {
                    need: 90.001,
                    gpu: "A10".into(),
                    has: 24.0,
                },
                Detail::SharedMemory {
                    need: 90.002,
                    gpu: "A10".into(),
                    has: 24.0,
                },
                Detail::NoMigProfile {
                    gpu: "A100-80GB".into(),
                    need: 90.0,
                },
                Detail::NoMig { gpu: "T4".into() },
                Detail::AksNoMig { gpu: "H100".into() },
            ],
        };
        assert_eq!(
            unmet.to_string(),
            "no SKU in eastus can run `w`: gpu memory (a replica needs 90 GiB and one A10 has 24 GiB; no MIG profile of A100-80GB holds 90 GiB; T4 has no MIG)"
        );
        assert_eq!(
            ChangeNote::Keep {
                blocked: vec![(
                    "w".into(),
                    Unmet::NoSku {
                        provider: Provider::Aws,
                        workload: "w".into(),
                    },
                )],
            }
            .to_string(),
            "keep it: its workloads cannot be placed elsewhere (`w`: no SKU of aws in the catalog can be considered for `w`); not compared, no saving claimed"
        );
        assert_eq!(
            ChangeNote::Delete {
                caveat: Some("c".into())
            }
            .to_string(),
            "no workload needs it: delete the pool (c)"
        );
        assert_eq!(
            Said::AllowExpired(
                Box::new(Said::PackingNotProven {
                    pool: "p".into(),
                    gpus: 9,
                    lower_bound: 8,
                }),
                crate::core::Date::parse("2026-01-31").expect("a date"),
            )
            .to_string(),
            "the MIG packing of `p` was not proven optimal within the search budget: 9 GPUs, lower bound 8 (the allow for this finding expired on 2026-01-31)"
        );
        assert_eq!(
            CapacityNote::FloorReserved {
                nodes: 2,
                provider: Provider::Aws
            }
            .to_string(),
            "reserve the floor of 2 node(s) so a scale-up or node repair cannot stock out (EC2 On-Demand Capacity Reservation); billed at the on-demand rate for every hour of the month whether used or not"
        );
    }
}
