//! `gpuplan review` on the stock-install fleet of `review_stock.rs`: time-sliced cards, workload
//! names as a stock install labels them, and reservations measured against what ran.

use crate::common;
use crate::review_stock::close;
use crate::review_stock::dcgm_target;
use crate::review_stock::review;
use crate::review_stock::row;
use crate::review_stock::telemetry;
use crate::review_stock::write;
use crate::review_stock::Om;
use crate::review_stock::DCGM;
use crate::review_stock::HOURS;
use crate::review_stock::KSM;
use crate::review_stock::KSM_TARGET;
use crate::review_stock::SPAN;
use std::path::Path;

/// On a time-sliced card dcgm-exporter reports one activity for the card: the notebooks'
/// efficiency is the card's shared by allocation, and the report says so; the MIG-served
/// chat's is its own.
#[test]
fn time_sliced_efficiencies_are_labelled_as_the_cards() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = write(dir.path(), "fleet.om", &telemetry(false, false, KSM, DCGM));
    let (v, _) = review(&f, &[]);
    let nb = row(&v, "workloads", "workload", "research-notebooks");
    assert_eq!(nb["efficiency_of_shared_cards"], true, "{nb:#}");
    let chat = row(&v, "workloads", "workload", "chat-api");
    assert_eq!(chat["efficiency_of_shared_cards"], false, "{chat:#}");
    assert_eq!(
        row(&v, "teams", "team", "research")["efficiency_of_shared_cards"],
        true
    );
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .args(["review", "plans/azure-inference.toml", "--metrics"])
        .arg(&f)
        .output()
        .expect("runs");
    let md = String::from_utf8_lossy(&out.stdout);
    let line = md
        .lines()
        .find(|l| l.starts_with("| `research-notebooks` |"))
        .expect("row");
    assert!(line.contains("% (card) |"), "{line}");
    assert!(md.contains("the figure is the card's, shared among its pods by allocation"));
    let chat = md
        .lines()
        .find(|l| l.starts_with("| `chat-api` |"))
        .expect("row");
    assert!(!chat.contains("(card)"), "{chat}");
}

/// Time-slicing on a stock kube-state-metrics (no node labels) with pods no plan workload
/// claims: the replicas per card come from the data, allocatable nvidia.com/gpu over the
/// distinct cards dcgm-exporter reports, so four replicas of one card are one card's time,
/// not four (it read 48 GPU-h on 24 GPU-h of cards).
#[test]
fn time_slicing_replicas_come_from_the_cards_dcgm_reports() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut om = Om {
        seconds: true,
        ..Om::default()
    };
    let node = "gpu-node-t";
    om.series(
        "kube_node_status_allocatable",
        &format!("node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
        KSM,
        |_| Some(4.0),
    );
    for i in 0..4 {
        om.series(
            "kube_pod_status_phase",
            &format!(
                "namespace=\"lab\",pod=\"nb-{i}\",uid=\"u{i}\",phase=\"Running\",{KSM_TARGET}"
            ),
            KSM,
            |_| Some(1.0),
        );
        om.series(
            "kube_pod_container_resource_requests",
            &format!("namespace=\"lab\",pod=\"nb-{i}\",uid=\"u{i}\",container=\"main\",node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
            KSM,
            |_| Some(1.0),
        );
    }
    om.series(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        &format!("gpu=\"0\",UUID=\"GPU-{node}-0\",modelName=\"Tesla T4\",Hostname=\"{node}\",exported_namespace=\"lab\",exported_pod=\"nb-3\",exported_container=\"main\",{}", dcgm_target(node)),
        DCGM,
        |_| Some(0.4),
    );
    let f = write(dir.path(), "ts.om", &om.text());
    let (v, warnings) = review(&f, &[]);
    let t = row(&v, "teams", "team", "lab");
    close(
        "allocated",
        t["allocated_gpu_seconds"].as_f64().unwrap(),
        SPAN,
    );
    close("used", t["used_gpu_seconds"].as_f64().unwrap(), 0.4 * SPAN);
    assert!(
        warnings.contains("over the distinct cards (UUIDs)"),
        "{warnings}"
    );
}

/// Issue 42 item 6: on a stock install kube-state-metrics exports no pod labels, so a pod
/// is matched by the controller that made it (`kube_pod_info`'s `created_by_*`, a
/// ReplicaSet followed to its Deployment by `kube_replicaset_owner`), by its name prefix, or
/// as the only workload of its team that may run on its GPU model (`modelName` from
/// dcgm-exporter); each workload says how its pods were matched. Before, the two
/// time-sliced notebook workloads (JupyterHub names pods `jupyter-<user>`) got nothing
/// while their teams got all of it.
#[test]
fn workloads_are_named_on_a_stock_install() {
    let plan = r#"version = 1
[plan]
name = "stock"
owner = "platform"
provider = "azure"
regions = ["eastus"]

[[workload]]
name = "vision-notebooks"
team = "vision"
kind = "notebook"
replicas = { min = 0, max = 8 }
gpu_fraction = 0.25
sharing = "time-slicing"
fault_domain = "vision-notebooks"

[[workload]]
name = "speech-notebooks"
team = "speech"
kind = "notebook"
replicas = { min = 0, max = 8 }
gpu_fraction = 0.25
sharing = "time-slicing"
fault_domain = "speech-notebooks"

[[workload]]
name = "summarizer"
team = "docs"
kind = "inference"
replicas = 1
gpus = 1
gpu_models = ["A100-80GB"]

[[workload]]
name = "translator"
team = "docs"
kind = "inference"
replicas = 2
gpus = 1
gpu_models = ["A100-80GB"]

[[pool]]
name = "vision-t4"
sku = "Standard_NC4as_T4_v3"
region = "eastus"
nodes = { min = 1, max = 2 }
sharing = "time-slicing"
time_slicing_replicas = 4
workloads = ["vision-notebooks"]

[[pool]]
name = "speech-t4"
sku = "Standard_NC4as_T4_v3"
region = "eastus"
nodes = { min = 1, max = 2 }
sharing = "time-slicing"
time_slicing_replicas = 4
workloads = ["speech-notebooks"]

[[decision]]
fault_domain = "vision-notebooks"
decided_by = "head-of-vision"
date = 2026-11-02
reason = "notebooks; a crash costs an afternoon"

[[decision]]
fault_domain = "speech-notebooks"
decided_by = "head-of-speech"
date = 2026-11-02
reason = "notebooks; a crash costs an afternoon"
"#;
    let mut om = Om {
        seconds: true,
        ..Om::default()
    };
    // (namespace, pod, node, creator kind and name: None where kube_pod_info is absent)
    type Creator<'a> = Option<(&'a str, &'a str)>;
    let pods: [(&str, &str, &str, Creator); 8] = [
        ("vision", "jupyter-alice", "aks-nb-a", None),
        ("vision", "jupyter-bob", "aks-nb-a", None),
        ("speech", "jupyter-carol", "aks-nb-b", None),
        ("speech", "jupyter-dan", "aks-nb-b", None),
        // an operator's pods, named for nothing the plan knows
        (
            "docs",
            "ms-0a1b2c",
            "aks-a100-0",
            Some(("ReplicaSet", "summarizer-5c4f")),
        ),
        (
            "docs",
            "tr-77x",
            "aks-a100-0",
            Some(("ReplicaSet", "translator-7f9c")),
        ),
        ("docs", "translator-7f9c-q2w", "aks-a100-1", None),
        // two workloads of its team may run on an A100: not guessed
        (
            "docs",
            "scratch-0",
            "aks-a100-1",
            Some(("StatefulSet", "scratch")),
        ),
    ];
    for (ns, pod, node, creator) in pods {
        let id = format!("namespace=\"{ns}\",pod=\"{pod}\",uid=\"uid-{pod}\"");
        om.series(
            "kube_pod_status_phase",
            &format!("{id},phase=\"Running\",{KSM_TARGET}"),
            KSM,
            |_| Some(1.0),
        );
        om.series(
            "kube_pod_container_resource_requests",
            &format!("{id},container=\"main\",node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
            KSM,
            |_| Some(1.0),
        );
        if let Some((kind, name)) = creator {
            om.series(
                "kube_pod_info",
                &format!("{id},host_ip=\"10.0.0.4\",pod_ip=\"10.244.1.7\",node=\"{node}\",created_by_kind=\"{kind}\",created_by_name=\"{name}\",priority_class=\"\",host_network=\"false\",{KSM_TARGET}"),
                KSM,
                |_| Some(1.0),
            );
        }
    }
    om.series(
        "kube_replicaset_owner",
        &format!("namespace=\"docs\",replicaset=\"summarizer-5c4f\",owner_kind=\"Deployment\",owner_name=\"summarizer\",owner_is_controller=\"true\",{KSM_TARGET}"),
        KSM,
        |_| Some(1.0),
    );
    // Stock nodes: allocatable only, no exported labels; four replicas per T4.
    for (node, gpus) in [
        ("aks-nb-a", 4.0),
        ("aks-nb-b", 4.0),
        ("aks-a100-0", 2.0),
        ("aks-a100-1", 2.0),
    ] {
        om.series(
            "kube_node_status_allocatable",
            &format!("node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
            KSM,
            move |_| Some(gpus),
        );
        om.series(
            "kube_node_labels",
            &format!("node=\"{node}\",{KSM_TARGET}"),
            KSM,
            |_| Some(1.0),
        );
    }
    // dcgm-exporter: a T4 per notebook node (to the last pod it saw), the A100s per pod.
    let dev = |om: &mut Om, node: &str, gpu: u32, model: &str, who: (&str, &str), busy: f64| {
        om.series(
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            &format!("gpu=\"{gpu}\",UUID=\"GPU-{node}-{gpu}\",device=\"nvidia{gpu}\",modelName=\"{model}\",Hostname=\"{node}\",exported_namespace=\"{}\",exported_pod=\"{}\",exported_container=\"main\",{}", who.0, who.1, dcgm_target(node)),
            DCGM,
            move |_| Some(busy),
        );
    };
    dev(
        &mut om,
        "aks-nb-a",
        0,
        "Tesla T4",
        ("vision", "jupyter-bob"),
        0.5,
    );
    dev(
        &mut om,
        "aks-nb-b",
        0,
        "Tesla T4",
        ("speech", "jupyter-dan"),
        0.5,
    );
    let a100 = "NVIDIA A100 80GB PCIe";
    dev(&mut om, "aks-a100-0", 0, a100, ("docs", "ms-0a1b2c"), 0.7);
    dev(&mut om, "aks-a100-0", 1, a100, ("docs", "tr-77x"), 0.7);
    dev(
        &mut om,
        "aks-a100-1",
        0,
        a100,
        ("docs", "translator-7f9c-q2w"),
        0.7,
    );
    dev(&mut om, "aks-a100-1", 1, a100, ("docs", "scratch-0"), 0.7);

    let dir = tempfile::tempdir().expect("tmp");
    let plan_file = write(dir.path(), "stock.toml", plan);
    let metrics = write(dir.path(), "stock.om", &om.text());
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .env_remove("GPUPLAN_PROMETHEUS_URL")
        .args(["review", "--format", "json", "--metrics"])
        .arg(&metrics)
        .arg(&plan_file)
        .assert()
        .code(0)
        .get_output()
        .clone();
    let v = common::contract(&out.stdout).expect("json");
    let matched =
        |w: &str, how: &str| row(&v, "workloads", "workload", w)["matched_pods"][how].clone();
    for (w, gpus) in [("vision-notebooks", 0.5), ("speech-notebooks", 0.5)] {
        close(
            &format!("{w} allocated"),
            row(&v, "workloads", "workload", w)["allocated_gpu_seconds"]
                .as_f64()
                .unwrap_or(-1.0),
            gpus * SPAN,
        );
        assert_eq!(matched(w, "only_workload_on_gpu"), 2, "{w}");
    }
    assert_eq!(matched("summarizer", "controller"), 1);
    close(
        "summarizer allocated",
        row(&v, "workloads", "workload", "summarizer")["allocated_gpu_seconds"]
            .as_f64()
            .unwrap_or(-1.0),
        SPAN,
    );
    assert_eq!(matched("translator", "controller"), 1);
    assert_eq!(matched("translator", "name_prefix"), 1);
    let unmatched: Vec<&str> = v["unmatched"]
        .as_array()
        .expect("unmatched")
        .iter()
        .filter_map(|u| u["pod"].as_str())
        .collect();
    assert_eq!(unmatched, ["scratch-0"], "{:#}", v["unmatched"]);

    let md = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .env_remove("GPUPLAN_PROMETHEUS_URL")
        .args(["review", "--format", "markdown", "--metrics"])
        .arg(&metrics)
        .arg(&plan_file)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let md = String::from_utf8_lossy(&md);
    assert!(
        md.contains("- `vision-notebooks`: 2 as the team's only workload on the pod's GPU model")
            && md.contains("- `translator`: 1 by controller (Deployment, StatefulSet, Job, CronJob), 1 by name prefix"),
        "{md}"
    );
}

/// Issue 40 item 7: the review's reservation fill against the purchase list render wrote.
/// `serve-mig`'s two reserved A100 nodes held chat-api twice and embeddings once at 3g.40gb
/// (3/7 each): 9/7 of 2 GPUs, a fill of 64%, below its break-even; a reservation of a pool
/// the data never saw is all unfilled. A list of another schema is refused by name.
#[test]
fn reservations_bought_are_measured_against_what_ran() {
    let dir = tempfile::tempdir().expect("tmp");
    let om = write(dir.path(), "t.om", &telemetry(true, false, KSM, DCGM));
    let line = |pool: &str, count: u32| {
        serde_json::json!({
            "pool": pool, "provider": "azure", "region": "eastus",
            "sku": "Standard_NC24ads_A100_v4", "count": count, "term_years": 1,
            "offering": "1-year", "usd_per_hour": 2.5, "monthly_usd": 1825.0 * f64::from(count),
            "on_demand_usd_per_hour": 3.67,
            "price_source": "Azure Retail Prices API (Reservation, 1 Year)",
            "price_as_of": "2026-12-01"
        })
    };
    let list = serde_json::json!({
        "schema": "gpuplan.purchases/v1",
        "plan": "azure-inference",
        "purchases": [line("serve-mig", 2), line("gone-pool", 1)],
        "monthly_usd_if_not_bought": 1022.0
    });
    let text = serde_json::to_string_pretty(&list).expect("json");
    crate::common::contract(text.as_bytes()).expect("the purchase list render writes");
    let purchases = write(dir.path(), "purchases.json", &text);
    let (v, _) = review(&om, &["--purchases", purchases.to_str().expect("utf-8")]);
    let fills = v["purchase_fill"].as_array().expect("purchase_fill");
    assert_eq!(fills.len(), 2, "{fills:#?}");
    let serve = fills
        .iter()
        .find(|f| f["pool"] == "serve-mig")
        .expect("serve-mig");
    close(
        "reserved",
        serve["reserved_gpu_seconds"].as_f64().unwrap_or(0.0),
        2.0 * SPAN,
    );
    close(
        "held",
        serve["held_gpu_seconds"].as_f64().unwrap_or(0.0),
        9.0 / 7.0 * SPAN,
    );
    close(
        "fill",
        serve["fill"].as_f64().unwrap_or(0.0) * 100.0,
        900.0 / 14.0,
    );
    assert_eq!(serve["nodes_seen"], 2);
    let gone = fills
        .iter()
        .find(|f| f["pool"] == "gone-pool")
        .expect("gone");
    assert_eq!(gone["fill"], 0.0);
    assert_eq!(gone["nodes_seen"], 0);
    close(
        "unfilled cost",
        gone["unfilled_usd"].as_f64().unwrap_or(0.0),
        2.5 * HOURS as f64,
    );
    // another file is refused, naming it
    let bad = write(
        dir.path(),
        "bad.json",
        "{\"schema\": \"gpuplan.review/v1\", \"purchases\": []}",
    );
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .args(["review", "plans/azure-inference.toml", "--metrics"])
        .arg(&om)
        .arg("--purchases")
        .arg(&bad)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.json") && err.contains("gpuplan.purchases/v1"),
        "{err}"
    );
}
