use super::*;
use crate::review::rows::PendingPod;
use crate::review::telemetry::{NodeSeries, Telemetry};

fn plan() -> (Plan, Catalog) {
    let catalog = Catalog::embedded(&[crate::core::Provider::Aws]).expect("catalog");
    let text = "version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"batch\"\ngpus = 1\nskus = [\"g6.xlarge\"]\n";
    let p = crate::plan::Plan::load(
        crate::source::SourceFile::new("p.toml", text.to_owned()),
        &catalog,
    )
    .unwrap_or_else(|_| panic!("plan"));
    (p, catalog)
}

/// A one-GPU node over `windows` 60 s windows, empty where `empty(k)`.
fn node(windows: i64, empty: impl Fn(i64) -> bool) -> Telemetry {
    let mut n = NodeSeries {
        gpus: 1.0,
        ..NodeSeries::default()
    };
    for k in 0..windows {
        n.capacity.insert(k * 60, 60.0);
        if !empty(k) {
            n.allocated.insert(k * 60, 60.0);
        }
    }
    Telemetry {
        step: 60,
        nodes: BTreeMap::from([("node-a".to_owned(), n)]),
        ..Telemetry::default()
    }
}

/// Issue 42: pending pods were blamed on `nodes.max` ("raise it") while the same pool
/// had free GPUs. A pool at its maximum is the wait only when no GPU was free there.
#[test]
fn a_pool_at_its_maximum_with_gpus_free_is_not_blamed_for_pending_pods() {
    let catalog = Catalog::embedded(&[crate::core::Provider::Aws]).expect("catalog");
    let text = "version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"batch\"\ngpus = 1\nskus = [\"g6.xlarge\"]\n\n[[pool]]\nname = \"batch\"\nsku = \"g6.xlarge\"\nregion = \"us-east-1\"\nnodes = { min = 0, max = 1 }\nworkloads = [\"w\"]\n";
    let p = crate::plan::Plan::load(
        crate::source::SourceFile::new("p.toml", text.to_owned()),
        &catalog,
    )
    .unwrap_or_else(|_| panic!("plan"));
    let pending = vec![PendingPod {
        workload: Some("w".into()),
        team: "t".into(),
        pod: "w-1".into(),
        gpu_seconds: 7200.0,
        unscheduled_gpu_seconds: Some(7200.0),
        image_pull_gpu_seconds: 0.0,
    }];
    let change = |busy: bool| {
        let mut t = node(120, |_| !busy);
        for n in t.nodes.values_mut() {
            n.plan_pool = Some("batch".into());
        }
        unmet_demand(&p, &t, &pending)
            .map(|a| a.change)
            .expect("two GPU-hours waited")
    };
    let wait = |w| crate::review::says::AdviceChange::Pending {
        wait: w,
        pulls_failed: false,
    };
    // Its one node held its GPU: full, and named with its nodes.max.
    assert_eq!(
        change(true),
        wait(crate::review::says::Wait::Full(vec![("batch".into(), 1)]))
    );
    // Its one node sat empty: at its maximum, but not full.
    assert_eq!(
        change(false),
        wait(crate::review::says::Wait::NotFull(vec![(
            "batch".into(),
            1
        )]))
    );
}

/// Issue 40 item 9: an empty MIG node (three 2g.20gb, 6/7 of its card offered) was idle
/// 6/7 of a node while the pool-floor line counted it whole. It is paid whole: idle whole,
/// its uncovered seventh named apart, and the empty-node saving a whole card's.
#[test]
fn an_empty_mig_node_is_idle_as_a_whole_card() {
    let (p, c) = plan();
    let mut t = node(2 * 24 * 60, |_| true);
    for n in t.nodes.values_mut() {
        n.gpus = 6.0 / 7.0;
        n.cards = 1.0;
        n.paid = n.capacity.clone();
        n.capacity.map_values(|v| v * (6.0 / 7.0));
        n.plan_pool = None;
    }
    let mut advice = Vec::new();
    let rows = idle_nodes(&p, &c, &t, &mut advice);
    let whole = 2.0 * 86_400.0;
    assert!((rows[0].idle_gpu_seconds - whole).abs() < 1.0, "{rows:?}");
    assert!(
        (rows[0].stranded_gpu_seconds - whole / 7.0).abs() < 1.0,
        "{rows:?}"
    );
    assert_eq!(rows[0].empty_seconds, 2 * 86_400, "{rows:?}");
}

#[test]
fn empty_node_advice_comes_from_contiguous_stretches_only() {
    let (p, c) = plan();
    // Four days of 50 minutes held, 40 empty: two days empty in all, never an hour at a
    // time. No advice, and the longest stretch says why.
    let t = node(4 * 1440, |k| k % 90 >= 50);
    let mut advice = Vec::new();
    let out = idle_nodes(&p, &c, &t, &mut advice);
    assert!(
        advice.is_empty(),
        "{:?}",
        advice.first().map(|a| &a.message)
    );
    assert_eq!(out[0].longest_empty_seconds, 40 * 60);
    assert!(out[0].empty_seconds > 86_400);
    // A day and a half empty in one stretch is advice, for that stretch.
    let t = node(3 * 1440, |k| k >= 1440);
    let mut advice = Vec::new();
    idle_nodes(&p, &c, &t, &mut advice);
    assert_eq!(advice.len(), 1);
    let crate::review::says::AdviceSays::EmptyNode {
        days,
        longest_seconds,
        ..
    } = &advice[0].message
    else {
        panic!("an empty node: {:?}", advice[0].message);
    };
    assert!((days - 2.0).abs() < 0.05, "{days}");
    assert_eq!(*longest_seconds, 48 * 3600);
}

/// Issue 39: the review's right-size comes from the one MIG chooser with the effective
/// manager. A plain Azure plan names none, so AKS partitions the A100 and creates no
/// `1g.20gb`: 12 GiB at a tenth of the compute is `2g.20gb` (2/7 of a GPU), and the saving
/// is the idle cost less what 2/7 of a GPU still costs, not 1/7's.
#[test]
fn right_size_on_plain_azure_is_a_profile_aks_creates() {
    let catalog = Catalog::embedded(&[crate::core::Provider::Azure]).expect("catalog");
    let text = "version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"batch\"\ngpus = 1\ngpu_memory_gib = 12\nskus = [\"Standard_NC24ads_A100_v4\"]\n";
    let plan = crate::plan::Plan::load(
        crate::source::SourceFile::new("p.toml", text.to_owned()),
        &catalog,
    )
    .unwrap_or_else(|_| panic!("plan"));
    let rec = crate::engine::recommend::recommend(&plan, &catalog);
    let w = plan.workload("w").expect("workload");
    let (advice, fit) = right_size(&plan, &rec, &catalog, w, 0.1, 2343.72).expect("advice");
    assert!(
        matches!(&fit.slice, Slice::Mig { profile, .. } if profile == "2g.20gb"),
        "{:?}",
        fit.slice
    );
    assert_eq!(fit.fraction, 0.2857);
    assert_eq!(advice.saving_usd, Some(round(2343.72 * (1.0 - 0.2857))));
    // With the GPU Operator named, the smaller 1g.20gb exists and is advised.
    let op = text.replace(
        "[[workload]]",
        "[cluster]\nmig_manager = \"gpu-operator\"\n\n[[workload]]",
    );
    let plan = crate::plan::Plan::load(crate::source::SourceFile::new("p.toml", op), &catalog)
        .unwrap_or_else(|_| panic!("plan"));
    let rec = crate::engine::recommend::recommend(&plan, &catalog);
    let w = plan.workload("w").expect("workload");
    let (_, fit) = right_size(&plan, &rec, &catalog, w, 0.1, 2343.72).expect("advice");
    assert!(
        matches!(&fit.slice, Slice::Mig { profile, .. } if profile == "1g.20gb"),
        "{:?}",
        fit.slice
    );
}

/// Issue 56: pods that waited only while a node started were told "raise nodes.max" when the
/// pool reached it at another time. The pool is judged in the windows they waited: growing
/// below its maximum then is a node booting; full then is capacity.
#[test]
fn a_wait_for_a_booting_node_is_not_blamed_on_nodes_max() {
    let catalog = Catalog::embedded(&[crate::core::Provider::Aws]).expect("catalog");
    let text = "version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"batch\"\ngpus = 1\nskus = [\"g6.xlarge\"]\n\n[[pool]]\nname = \"batch\"\nsku = \"g6.xlarge\"\nregion = \"us-east-1\"\nnodes = { min = 1, max = 2 }\nworkloads = [\"w\"]\n";
    let p = crate::plan::Plan::load(
        crate::source::SourceFile::new("p.toml", text.to_owned()),
        &catalog,
    )
    .unwrap_or_else(|_| panic!("plan"));
    // node-a busy all along; node-b joins at `joins` and stays busy.
    let change = |joins: i64, waited: std::ops::Range<i64>| {
        let mut t = node(600, |_| false);
        let mut b = NodeSeries {
            gpus: 1.0,
            ..NodeSeries::default()
        };
        for k in joins..600 {
            b.capacity.insert(k * 60, 60.0);
            b.allocated.insert(k * 60, 60.0);
        }
        t.nodes.insert("node-b".into(), b);
        for n in t.nodes.values_mut() {
            n.plan_pool = Some("batch".into());
        }
        let mut run = crate::review::telemetry::PodSeries {
            namespace: "t".into(),
            pod: "w-1".into(),
            ..Default::default()
        };
        for k in waited.clone() {
            run.waiting.insert(k * 60, 60.0);
        }
        t.pods.insert(("t".into(), "w-1".into()), vec![run]);
        let secs = (waited.end - waited.start) as f64 * 60.0;
        let pending = vec![PendingPod {
            workload: Some("w".into()),
            team: "t".into(),
            pod: "w-1".into(),
            gpu_seconds: secs,
            unscheduled_gpu_seconds: Some(secs),
            image_pull_gpu_seconds: 0.0,
        }];
        unmet_demand(&p, &t, &pending)
            .map(|a| a.change)
            .expect("an hour or more waited")
    };
    let wait = |w| crate::review::says::AdviceChange::Pending {
        wait: w,
        pulls_failed: false,
    };
    // Waited 70 minutes while node-b started (the pool at one of its two nodes): booting,
    // though the pool is at its maximum, full, for hours afterwards.
    assert_eq!(
        change(100, 30..100),
        wait(crate::review::says::Wait::Booting(vec![(
            "batch".into(),
            2
        )]))
    );
    // Waited after node-b joined, both nodes busy: capacity.
    assert_eq!(
        change(10, 100..170),
        wait(crate::review::says::Wait::Full(vec![("batch".into(), 2)]))
    );
}

/// Issue 72 item 12: a workload already on a `3g.40gb` MIG pool, idle, was advised a right-size
/// to `3g.40gb`: its `gpu_fraction = 0.43` read as more than the profile's 3/7 (0.4286). What
/// it has is no right-size; a smaller profile that holds its memory still is.
#[test]
fn a_mig_slice_it_already_has_is_no_right_size() {
    let catalog = Catalog::embedded(&[crate::core::Provider::Azure]).expect("catalog");
    let text = |memory: f64| {
        format!("version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n[[workload]]\nname = \"w\"\nteam = \"t\"\nkind = \"inference\"\ngpu_fraction = 0.43\nsharing = \"mig\"\ngpu_memory_gib = {memory}\nskus = [\"Standard_NC24ads_A100_v4\"]\n\n[[pool]]\nname = \"serve-mig\"\nsku = \"Standard_NC24ads_A100_v4\"\nregion = \"eastus\"\nnodes = {{ min = 1, max = 2 }}\nsharing = \"mig\"\nmig_profile = \"3g.40gb\"\nworkloads = [\"w\"]\n")
    };
    let advised = |memory: f64| {
        let plan = crate::plan::Plan::load(
            crate::source::SourceFile::new("p.toml", text(memory)),
            &catalog,
        )
        .unwrap_or_else(|d| {
            panic!(
                "plan: {:?}",
                d.iter().map(|x| &x.message).collect::<Vec<_>>()
            )
        });
        let rec = crate::engine::recommend::recommend(&plan, &catalog);
        let w = plan.workload("w").expect("workload");
        right_size(&plan, &rec, &catalog, w, 0.1, 1000.0).map(|(_, fit)| fit.slice)
    };
    assert_eq!(advised(30.0), None);
    assert!(
        matches!(advised(8.0), Some(Slice::Mig { profile, .. }) if profile != "3g.40gb"),
        "{:?}",
        advised(8.0)
    );
}
