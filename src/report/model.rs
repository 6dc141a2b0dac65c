//! `gpuplan explain recommend`: how the recommender decides, in prose, with today's
//! catalog's figures.

use std::fmt::Write as _;

use crate::catalog::Catalog;
use crate::core::{Capacity, Provider};
use crate::engine::recommend::constraint_names;

/// The recommender's model and every assumption it makes, with the values in force
/// (`gpuplan explain recommend`).
pub(crate) fn model_text(catalog: &Catalog) -> String {
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
         run all month drop to zero), the maximum covers the peak. Node sizes of one GPU model, \
         region, segment, capacity type and sharing setting (whole GPUs or time-sliced; not \
         MIG, gangs, Capacity Blocks or capacity reservations) are one pool of several sizes: \
         they share its `gpuplan.io/pool` label (`pool_label`), each size priced on its own \
         nodes, and each workload's pods require the size chosen for its shape \
         (`node_sizes`).\n\n\
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
    assumptions(&mut o, catalog);
    restarts_and_reservations(&mut o, catalog);
    o
}

/// The allocatable share of a node, sharing caps, cost and spot assumptions, and the bands.
fn assumptions(o: &mut String, catalog: &Catalog) {
    let a = &catalog.assumptions;
    let reserved_64: Vec<String> = Provider::ALL
        .iter()
        .map(|&p| {
            let m = if a.kube_reserved_cpu.contains_key(&p) {
                format!(
                    "{} m",
                    crate::core::num(a.kube_reserved_cpu(p, 64.0) * 1000.0)
                )
            } else {
                "none listed".to_owned()
            };
            format!("{m} on {}", crate::cloud::profile(p).kubernetes)
        })
        .collect();
    let _ = writeln!(
        o,
        "## Assumptions (providers/assumptions.toml)\n\
         - pods may request a node's vCPUs less the kubelet's kube-reserved CPU (the \
         provider's published schedule: {} for a 64-vCPU node) and less \
         {} vCPU for the system DaemonSets (the GPU Operator's request none by default; a \
         plan's `[cluster] daemonset_cpu` replaces it), and {}% of its RAM\n\
         - time-sliced and MPS instances share a GPU equally; their memory caps add up to {} of \
         the card (`server.gpu_memory_utilization` = {} / replicas, rounded down)\n\
         - cost: the floor runs every hour of the plan, nodes above it for the workloads' \
         `hours_per_month`; replicas above a workload's minimum run all those hours unless \
         its `typical_replicas` says what it runs on average ((typical - min) / (max - min) \
         of them), and reservations cover only what runs past the break-even on that \
         profile; the at-maximum figure is every node of the maximum all its hours; a \
         Capacity Block is paid for the shortest length EC2 sells that holds its gang's \
         hours; spot node-hours are divided by the useful-work fraction\n\
         - spot is closed to user-facing workloads, to workloads that are not `interruptible`, \
         and to training or batch without `checkpoint_minutes`\n\
         - spot interruptions are a Poisson process per node; a gang dies when any node goes",
        reserved_64.join(" and "),
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
}

/// Restart times, checkpoint arithmetic, the spot break-even and reservations.
fn restarts_and_reservations(o: &mut String, catalog: &Catalog) {
    let a = &catalog.assumptions;
    let _ = writeln!(
        o,
        "- restart time when the plan gives no `restart_minutes`: {} x (1 + log2(gang nodes)) \
         + {} + {} minutes (re-acquire every node of the gang, pull the image, load weights): \
         {} min for one node, {} min for a 64-node gang\n\
         - expected wall time per checkpoint interval C with restart R at gang hazard λ: \
         e^(λR) (e^(λC) - 1) / λ; stateless work loses only the restart\n\
         - spot wins while paid hours per useful hour stay below the break-even on-demand / \
         spot price ({}); spot is priced at the zones' average (nodes land where capacity is), \
         never the cheapest zone, and an undated spot figure is no price: spot is then \
         unknown offline and not offered\n\
         - a reservation covers the k-th node of a pool when that node's busy hours beat the \
         break-even utilisation, the reserved / on-demand price ratio (a reservation is paid \
         all 730 hours), up to the plan's `reservation_term` (none, 1y by default, or 3y: a \
         3-year commitment is recorded, never assumed); nodes are stacked steady work first, \
         longest-running first: the floor (what runs every hour of the month, whatever the \
         workload's kind), then each workload's minimum replicas for its hours; replicas \
         above a minimum are a peak, which stays on-demand or spot; `why` states each node's \
         utilisation, and GP023 holds declared reservations to the same rule. {}\n\
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
        break_even_examples(catalog),
        reservation_sources(),
    );
}

/// Where each cloud's reservation rates come from.
fn reservation_sources() -> String {
    let each: Vec<String> = Provider::ALL
        .iter()
        .rev()
        .map(|&p| {
            let cloud = crate::cloud::profile(p);
            match cloud.embedded_reservations {
                Some(choice) if cloud.reservation.starts_with(cloud.name) => {
                    format!("{} rates are embedded ({choice})", cloud.reservation)
                }
                Some(choice) => format!(
                    "{} {} rates are embedded ({choice})",
                    cloud.name, cloud.reservation
                ),
                None => super::why::reservations_unknown(cloud.reservation, None),
            }
        })
        .collect();
    each.join("; ")
}

/// The break-even of the 8 x H100 sizes in today's catalog, each with its figures' dates:
/// an example quoted from data, never from a number typed into the text.
fn break_even_examples(catalog: &Catalog) -> String {
    let mut out = Vec::new();
    for &p in Provider::ALL.iter().rev() {
        let (sku, region) = crate::cloud::profile(p).h100_example;
        let listed = |c| catalog.listed(p, sku, region, c);
        if let (Some(od), Some(sp)) = (listed(Capacity::OnDemand), listed(Capacity::Spot)) {
            out.push(format!(
                "{sku} in {region}: {} / {} = {:.2}x, {} and {}",
                crate::core::rate(od.usd_per_hour),
                crate::core::rate(sp.usd_per_hour),
                od.usd_per_hour / sp.usd_per_hour,
                crate::catalog::dated(od.as_of),
                crate::catalog::dated(sp.as_of)
            ));
        }
    }
    if out.is_empty() {
        "no 8 x H100 size has both prices in this catalog".to_owned()
    } else {
        format!("today's catalog: {}", out.join("; "))
    }
}
