//! An alternative's, a capacity option's and a declared pool's notes, unmet work and what a
//! finding says, in words.

use std::fmt;

use crate::core::{num, usd};
use crate::engine::recommend::reason::{
    AltNote, AltWhat, CapacityNote, ChangeNote, NotTaken, Said, Unmet,
};

use super::detail::detail;
use super::spot::spot_no;
use super::ticked;

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

crate::core::serialize_as_text!(AltNote, CapacityNote);

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
        AltWhat::QuotaClosed { nodes, gpus, quota } => format!(
            "{nodes} node(s), {gpus} GPU(s) at peak; closed by a known quota: {}",
            detail(quota)
        ),
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
        let caveat = |c: &Option<crate::engine::cost::Caveat>| {
            c.as_ref().map(|c| format!(" ({c})")).unwrap_or_default()
        };
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
                "`{sku}` in {region}: {}: not compared, no saving claimed",
                crate::engine::cost::block_price_unknown_said(crate::core::Provider::Aws)
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
            Said::SpotGang {
                pool,
                workload,
                nodes,
                sku,
                region,
                score,
            } => write!(
                f,
                "capacity risk: `{workload}` runs as a gang of {nodes} {sku} nodes on spot in `{pool}` ({region}); each interruption needs all {nodes} again at once, which is when a scarce size is least available, and {}. `render --karpenter` gives its NodePool an on-demand way back (Karpenter launches on-demand when spot cannot be had, priced in the README); the Terraform node group alone has none: keep on-demand or reserved quota of its size for it, or plan it off spot",
                match score {
                    Some((s, model, source)) => format!(
                        "the last refresh's spot placement score for {model} in {region} is {s}/10 ({source}), asked for one instance: {nodes} at once are less likely than that says"
                    ),
                    None => "no availability signal exists offline (a live `catalog refresh` on AWS reads EC2 spot placement scores; Azure publishes none)".to_owned(),
                }
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

/// The allow that accepted a finding: its justification and who approved it.
impl fmt::Display for crate::engine::recommend::reason::Accepted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}, approved by {}",
            self.0.justification, self.0.approved_by
        )
    }
}

crate::core::serialize_as_text!(Said, crate::engine::recommend::reason::Accepted);
