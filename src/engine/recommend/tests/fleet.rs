//! Decisions about the fleet as a whole: quotas, alternatives, moves between pools and node
//! sizes, shared candidate lists.

use super::*;
use crate::core::{Capacity, Provider};
use crate::engine::recommend::build::{build, build_key, prefetch_thorough, BuildCache};
use crate::engine::recommend::candidate::Fit;
use crate::engine::recommend::choice::{group, Choice, FitKey};
use crate::engine::recommend::choose::first_choices;
use crate::engine::recommend::moves::move_workloads;
use crate::engine::recommend::types::AlternativeKind;

#[test]
fn known_quota_routes_a_workload_to_another_region() {
    // Two 24-vCPU nodes fit a 48-vCPU quota in eastus; the third workload goes to westus3.
    let mut text = head(
        "azure",
        "\"eastus\", \"westus3\"",
        "[[quota]]\nregion = \"eastus\"\nfamily = \"standardNCADSA100v4Family\"\nvcpus = 48\n",
    );
    for name in ["a", "b", "c"] {
        text.push_str(&format!(
            "\n[[workload]]\nname = \"{name}\"\nteam = \"t\"\nkind = \"inference\"\nuser_facing = true\nskus = [\"Standard_NC24ads_A100_v4\"]\n"
        ));
    }
    let r = rec(&text);
    assert!(
        !r.findings
            .iter()
            .any(|f| f.rule == FindingCode::Rule(crate::diag::RuleId::GP014)),
        "{:#?}",
        r.findings
    );
    let east: u32 = r
        .pools
        .iter()
        .filter(|p| p.region == "eastus")
        .map(|p| p.nodes.max * 24)
        .sum();
    assert!(east <= 48, "{east} vCPUs in eastus");
    assert!(r.pools.iter().any(|p| p.region == "westus3"));
    assert!(!r.unsatisfiable());
}

#[test]
fn a_cheaper_alternative_a_quota_blocks_says_so() {
    // An A100 node costs less in eastus than in centralus, but eastus's 48-vCPU quota holds
    // two 24-vCPU nodes: the third workload's centralus pool lists eastus as cheaper, and
    // names the quota as why it lost, with the numbers.
    let mut text = head(
        "azure",
        "\"eastus\", \"centralus\"",
        "[[quota]]\nregion = \"eastus\"\nfamily = \"standardNCADSA100v4Family\"\nvcpus = 48\n",
    );
    for name in ["a", "b", "c"] {
        text.push_str(&format!(
            "\n[[workload]]\nname = \"{name}\"\nteam = \"t\"\nkind = \"inference\"\nuser_facing = true\nskus = [\"Standard_NC24ads_A100_v4\"]\n"
        ));
    }
    let r = rec(&text);
    let central = r
        .pools
        .iter()
        .find(|p| p.region == "centralus")
        .expect("a pool in centralus");
    let cheaper: Vec<&Alternative> = central
        .considered
        .iter()
        .filter(|a| a.region == "eastus" && a.delta_usd.is_some_and(|d| d < 0.0))
        .collect();
    assert!(!cheaper.is_empty(), "{:#?}", central.considered);
    for a in cheaper {
        assert!(
            a.note.to_string().contains("not taken: quota, the standardNCADSA100v4Family quota in eastus is 48 vCPUs and the rest of the fleet uses 48, so its 24 more do not fit"),
            "{}",
            a.note
        );
    }
}

#[test]
fn a_cpu_bound_time_sliced_pool_lists_the_option_that_idles_fewer_gpus() {
    // Half a T4 each but 12 vCPUs: five fit the 62.76 vCPUs a 64-vCPU, four-GPU node leaves
    // pods, so 1.5 of its GPUs idle. The cheapest fleet keeps them; the option with fewer
    // GPUs is listed with its price, as packed (two regions, so the next cheapest are all
    // four-GPU T4 nodes).
    let r = rec(&(head("azure", "\"eastus\", \"westus3\"", "")
        + r#"
[[workload]]
name = "cpu-heavy"
team = "t"
kind = "inference"
replicas = 40
gpu_fraction = 0.5
cpu = 12
memory_gib = 40
sharing = "time-slicing"
fault_domain = "fd"
gpu_models = ["T4", "A10"]
"# + FD_DECISION));
    let p = pool_of(&r, "cpu-heavy");
    let chosen = p.gpus.max;
    let idle =
        p.stranded.as_ref().map_or(0, |s| s.gpu_units) / p.time_slicing_replicas.unwrap_or(1);
    assert!(idle >= 4, "{p:#?}");
    let lean = p
        .considered
        .iter()
        .find(|a| a.kind == AlternativeKind::FewerGpus)
        .unwrap_or_else(|| panic!("no fewer-GPU option: {:#?}", p.considered));
    let gpus = lean.gpus.expect("packed");
    assert!(
        gpus < chosen && 2 * (chosen - gpus) >= idle,
        "{lean:?} vs {chosen}"
    );
    // It costs more, or it would have been chosen.
    assert!(lean.delta_usd.expect("priced") > 0.0, "{lean:?}");
    assert!(
        lean.note.to_string().contains("fewer GPUs"),
        "{}",
        lean.note
    );
    let note = r
        .findings
        .iter()
        .find(|f| f.rule == FindingCode::IdleGpus)
        .expect("the idle GPUs are a finding");
    assert_eq!(note.pool.as_deref(), Some(p.name.as_str()));
    let crate::engine::recommend::reason::Said::IdleGpus {
        idle: said_idle,
        gpus,
        room: Some((cpu, mem)),
        ..
    } = &note.message
    else {
        panic!(
            "the idle-GPU figures, with the node's room: {:?}",
            note.message
        );
    };
    assert_eq!((*said_idle, *gpus), (idle, chosen));
    assert!(
        (cpu - 62.76).abs() < 0.005 && (mem - 396.0).abs() < 0.5,
        "{cpu} {mem}"
    );
    let text = note.message.to_string();
    assert!(
        text.contains(&format!("{idle} GPUs' worth of its {chosen} idle")),
        "{text}"
    );
    assert!(
        text.contains("(62.76 vCPUs and 396 GiB a node for pods)"),
        "{text}"
    );
    assert_eq!(p.nodes.max, 8, "40 replicas, five a node: {p:#?}");
    // A pool with nothing idle lists no such option.
    let r = rec(&(head("azure", "\"eastus\"", "")
        + r#"
[[workload]]
name = "gpu-bound"
team = "t"
kind = "inference"
replicas = 8
"#));
    let p = pool_of(&r, "gpu-bound");
    assert!(
        p.considered
            .iter()
            .all(|a| a.kind != AlternativeKind::FewerGpus),
        "{:#?}",
        p.considered
    );
    assert!(r.findings.iter().all(|f| f.rule != FindingCode::IdleGpus));
}

#[test]
fn a_pool_moved_elsewhere_keeps_one_time_slicing_setting() {
    // Sharing is node-wide, so a pool priced somewhere else holds every member at the
    // fewest shares per GPU any of them needs; priced on its own nine-way split, the
    // tenth-GPU workload made the alternatives look cheaper than anything that could run.
    let text = head("azure", "\"eastus\"", "")
        + r#"
[[workload]]
name = "half"
team = "t"
kind = "inference"
replicas = 3
gpu_fraction = 0.5
sharing = "time-slicing"
fault_domain = "fd"
gpu_models = ["T4"]

[[workload]]
name = "tenth"
team = "t"
kind = "inference"
replicas = 9
gpu_fraction = 0.1
sharing = "time-slicing"
fault_domain = "fd"
gpu_models = ["T4"]
"# + FD_DECISION;
    let cat = catalog(Provider::Azure);
    let plan = crate::plan::Plan::load(SourceFile::new("t.toml", text), cat)
        .unwrap_or_else(|_| panic!("valid plan"));
    let (choices, unsatisfied) = first_choices(&plan, cat, plan.hours_per_month());
    assert!(unsatisfied.is_empty() && choices.len() == 2);
    let alone = |name: &str| {
        let ch = choices.iter().find(|c| c.d.name == name).expect("workload");
        let c = ch
            .all
            .iter()
            .find(|c| c.sku.name == "Standard_NC64as_T4_v3")
            .expect("candidate");
        (c.fit.clone(), c.node_share)
    };
    assert!(matches!(alone("tenth").0, Fit::Shared { replicas, .. } if replicas > 2));
    let (to, moved) = rehome::rehomed(
        &choices,
        &[0, 1],
        "Standard_NC64as_T4_v3",
        "eastus",
        Capacity::OnDemand,
        cat,
    )
    .expect("both can run there");
    assert_eq!(to.5, FitKey::Shared(2, false));
    for (i, c, _) in &moved {
        assert!(
            matches!(c.fit, Fit::Shared { replicas: 2, .. }),
            "{:?}",
            c.fit
        );
        // Half of one of the node's four GPUs, whatever the workload asked.
        assert!(
            c.node_share >= 0.125 - 1e-9,
            "{}: {}",
            choices[*i].d.name,
            c.node_share
        );
    }
    assert!(alone("tenth").1 < 0.125);
}

#[test]
fn packings_prefetched_side_by_side_equal_the_sequential_ones() {
    let mut text = head("aws", "\"us-east-1\"", "");
    for (i, cpu) in [4, 12, 18, 30].iter().enumerate() {
        text += &format!(
            "\n[[workload]]\nname = \"w{i}\"\nteam = \"t\"\nkind = \"inference\"\n\
             replicas = {}\ngpus = 1\ncpu = {cpu}\ngpu_models = [\"T4\"]\n",
            7 + 5 * i
        );
    }
    let cat = catalog(Provider::Aws);
    let plan = crate::plan::Plan::load(SourceFile::new("t.toml", text), cat)
        .unwrap_or_else(|_| panic!("valid plan"));
    let hours = plan.hours_per_month();
    let (choices, _) = first_choices(&plan, cat, hours);
    let all: Vec<&Choice<'_, '_>> = choices.iter().collect();
    let sets = [
        all.clone(),
        all[..2].to_vec(),
        all[3..].to_vec(),
        all.clone(),
    ];
    let cache = BuildCache::default();
    let jobs = sets
        .iter()
        .map(|s| (s.clone(), Capacity::OnDemand))
        .collect();
    prefetch_thorough(&cache, jobs, cat, hours);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // The duplicate set is packed once; a single core packs nothing ahead.
    assert_eq!(cache.borrow().len(), if cores > 1 { 3 } else { 0 });
    for set in &sets {
        let key = build_key(set, Capacity::OnDemand, true);
        let Some(ahead) = cache.borrow().get(&key).cloned() else {
            continue;
        };
        let now = build(set, Capacity::OnDemand, cat, hours, true);
        assert_eq!(
            (ahead.nodes_min, ahead.nodes_max, ahead.cost.to_bits()),
            (now.nodes_min, now.nodes_max, now.cost.to_bits())
        );
    }
}

#[test]
fn a_small_pool_moves_to_the_node_size_its_replicas_fill() {
    // Two always-on replicas of 16 vCPUs and one T4 each. Priced per replica, a g4dn.metal
    // (96 vCPUs, 8 x T4, $3.38/h reserved) holds five, so each costs 3.38 / 5 = $0.676/h,
    // less than a g4dn.12xlarge (48 vCPUs, 4 x T4, $1.69/h) holding two at $0.845/h. But two
    // replicas pay for a whole node either way: the metal costs 3.38 x 730 = $2,467.40 a
    // month, the 12xlarge 1.69 x 730 = $1,233.70.
    let body = r#"
[[workload]]
name = "api"
team = "t"
kind = "inference"
user_facing = true
replicas = 2
cpu = 16
memory_gib = 16
gpus = 1
skus = ["g4dn.metal", "g4dn.12xlarge"]
# One node decided (GP033), so the node size alone decides the price.
availability_floor = 1
"#;
    // A 3-year term recorded in the plan (the default is one year).
    let r = rec(&(head("aws", "\"us-east-1\"", "reservation_term = \"3y\"") + body));
    let p = pool_of(&r, "api");
    assert_eq!(
        (p.sku.as_str(), p.nodes.max),
        ("g4dn.12xlarge", 1),
        "{}",
        p.why
    );
    assert!(
        (p.monthly_cost_usd - 1.69 * 730.0).abs() < 0.01,
        "{}",
        p.monthly_cost_usd
    );
    assert!(
        p.why.to_string().contains(
            "`api` would cost least on g4dn.metal in us-east-1 (reserved-3y) priced per replica"
        ),
        "{}",
        p.why
    );
    // The pool it left is listed as dearer, not as a saving left untaken.
    let metal = p.considered.iter().find(|a| a.sku == "g4dn.metal");
    assert!(
        metal.is_some_and(|a| a.delta_usd.is_some_and(|d| d > 0.0)),
        "{:?}",
        p.considered
    );
}

#[test]
fn one_workload_moves_to_the_pool_with_room_for_it() {
    // On-demand batch in us-east-1. A g4dn.12xlarge (4 x T4, 172.8 GiB allocatable) holds one
    // `wide` replica (2 GPUs, 96 GiB) and 76.8 GiB beside it; a g6.48xlarge (8 x L4, 691.2
    // GiB allocatable) holds three `l4` replicas (120 GiB each) and 331.2 GiB beside them.
    // `big` (2 replicas of 1 GPU and 120 GiB) fits beside no `wide` replica, so with the T4s
    // it takes two nodes of its own; beside `l4` both fit on the node already there. From
    // this start, moving `big` alone saves exactly those two nodes.
    let body = r#"
[[workload]]
name = "wide"
team = "t"
kind = "batch"
replicas = 3
cpu = 8
memory_gib = 96
gpus = 2

[[workload]]
name = "l4"
team = "t"
kind = "batch"
replicas = 3
cpu = 4
memory_gib = 120
gpus = 1

[[workload]]
name = "big"
team = "t"
kind = "batch"
replicas = 2
cpu = 12
memory_gib = 120
gpus = 1
"#;
    let text = head("aws", "\"us-east-1\"", "") + body;
    let catalog = catalog(Provider::Aws);
    let plan = crate::plan::Plan::load(SourceFile::new("t.toml", text), catalog)
        .unwrap_or_else(|_| panic!("test plan is invalid"));
    let cx = Cx {
        plan: &plan,
        catalog,
        plan_hours: plan.hours_per_month(),
        cache: BuildCache::default(),
    };
    let (mut choices, _) = first_choices(&plan, catalog, cx.plan_hours);
    // The start the test is about: `wide` and `big` on g4dn.12xlarge, `l4` on g6.48xlarge.
    for ch in &mut choices {
        let sku = if ch.d.name == "l4" {
            "g6.48xlarge"
        } else {
            "g4dn.12xlarge"
        };
        let c = ch
            .all
            .iter()
            .find(|c| c.sku.name == sku)
            .expect("candidate")
            .clone();
        ch.rate = c
            .rates(&ch.d)
            .into_iter()
            .find(|r| r.capacity.is_on_demand())
            .expect("on-demand");
        ch.c = c;
    }
    let mut groups = group(&choices);
    let cost = |groups: &Groups, choices: &[Choice<'_, '_>]| -> f64 {
        groups
            .iter()
            .map(|(k, m)| {
                let ms: Vec<&Choice<'_, '_>> = m.iter().map(|&i| &choices[i]).collect();
                build::build(&ms, k.3, catalog, cx.plan_hours, true).cost
            })
            .sum()
    };
    let before = cost(&groups, &choices);
    move_workloads(&cx, &mut groups, &mut choices);
    let after = cost(&groups, &choices);
    let big = choices.iter().find(|c| c.d.name == "big").expect("big");
    assert_eq!(big.c.sku.name, "g6.48xlarge");
    // Two g4dn.12xlarge nodes ($3.912/h on demand) for the plan's month.
    let saved = 2.0 * 3.912 * cx.plan_hours;
    assert!(
        (before - after - saved).abs() < 0.01,
        "{before} -> {after}, not {saved} less"
    );
    assert_eq!(
        groups.values().map(Vec::len).sum::<usize>(),
        3,
        "every workload in one pool"
    );
}

#[test]
fn workloads_of_one_shape_share_one_candidate_list_and_name_their_own_reasons() {
    // Two teams' identical jobs share one list (an estate of 100,000 of them holds one), and
    // a reason spot is closed still names each job, not the first of its shape.
    let mut text = head("azure", "\"eastus\"", "");
    for (name, team) in [("job-a", "one"), ("job-b", "two"), ("job-c", "one")] {
        text.push_str(&format!(
            "\n[[workload]]\nname = \"{name}\"\nteam = \"{team}\"\nkind = \"batch\"\ngpus = 1\n"
        ));
    }
    let file = SourceFile::new("t.toml", text.clone());
    let cat = catalog(Provider::Azure);
    let plan = crate::plan::Plan::load(file, cat).expect("valid");
    let (choices, _) = first_choices(&plan, cat, plan.hours_per_month());
    assert_eq!(choices.len(), 3);
    assert!(choices
        .windows(2)
        .all(|w| std::sync::Arc::ptr_eq(&w[0].all, &w[1].all)));
    // The shared reason is a fact of the shape, with no name in it; the pool names the
    // workload it is about when it says so.
    for ch in &choices {
        let why = ch.c.spot.as_ref().and_then(|q| q.effective.as_ref().err());
        assert_eq!(
            why,
            Some(&crate::engine::recommend::candidate::SpotNo::Closed(
                crate::engine::recommend::demand::SpotClosed::NotInterruptible
            ))
        );
    }
    let r = rec(&text);
    assert_eq!(r.pools.len(), 1, "one pool for the three");
    let shut: Vec<String> = r.pools[0]
        .considered
        .iter()
        .filter_map(|a| match &a.note.what {
            crate::engine::recommend::reason::AltWhat::SpotShut { workload, .. } => {
                Some(workload.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(shut, ["job-a"], "named by a workload of the pool");
}

#[test]
fn a_gang_of_one_gpu_replicas_runs_on_an_efa_type_without_nvlink() {
    // EC2 gives g6e.8xlarge and up EFA interfaces (DescribeInstanceTypes, Karpenter's
    // reference): a 4-node gang of one-L40S replicas may run there. A gang whose replicas
    // span 4 GPUs also needs NVLink, which no L40S size has: it is unsatisfiable.
    let one = r#"
[[workload]]
name = "ddp"
team = "t"
kind = "training"
nodes = 4
gpus = 1
gpu_models = ["L40S"]
"#;
    let r = rec(&(head("aws", "\"us-east-1\"", "") + one));
    let p = pool_of(&r, "ddp");
    let sku = catalog(Provider::Aws)
        .sku(Provider::Aws, &p.sku)
        .expect("sku");
    assert_eq!(sku.inter_node, crate::catalog::InterNode::Efa, "{}", p.sku);
    assert!(p.sku.starts_with("g6e."), "{}", p.sku);
    let four = one.replace("gpus = 1", "gpus = 4");
    let r = rec(&(head("aws", "\"us-east-1\"", "") + &four));
    assert!(
        r.pools.is_empty(),
        "{:?}",
        r.pools.iter().map(|p| &p.sku).collect::<Vec<_>>()
    );
    let u = r
        .unsatisfied
        .iter()
        .find(|u| u.workload == "ddp")
        .expect("unsatisfied");
    assert!(format!("{u:?}").contains("NVLink"), "{u:?}");
}
