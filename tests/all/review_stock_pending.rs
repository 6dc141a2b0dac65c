//! `gpuplan review` on the stock-install fleet of `review_stock.rs`: pending pods by cause,
//! exporter outages, pods that move between nodes, usage without a pod, and crash loops.

use crate::common;
use crate::review_stock::close;
use crate::review_stock::dcgm_target;
use crate::review_stock::review;
use crate::review_stock::row;
use crate::review_stock::telemetry;
use crate::review_stock::truth;
use crate::review_stock::write;
use crate::review_stock::Om;
use crate::review_stock::DCGM;
use crate::review_stock::H;
use crate::review_stock::KSM;
use crate::review_stock::KSM_TARGET;
use crate::review_stock::SPAN;
use crate::review_stock::T0;
use serde_json::Value;
use std::path::Path;

/// A Pending pod has no node to say its `nvidia.com/gpu` is a time-sliced replica or a MIG
/// single-strategy profile; its workload does. A fifth notebook Pending for 6 h while the
/// others hold a T4 four ways is 6 x 3600 / 4 = 5,400 GPU-seconds of unmet demand, not
/// 21,600; a chat-api pod Pending for 6 h on the AKS 3g.40gb pool is 6 x 3600 x 3/7. A MIG
/// resource of the mixed strategy is its profile's share whatever the workload: a 2g.20gb pod
/// Pending for 6 h is 6 x 3600 x 2/7 = 6,171 GPU-seconds, not 21,600.
#[test]
fn pending_counts_at_each_resources_share() {
    let mut om = Om::default();
    for (ns, pod, res) in [
        ("research", "research-notebooks-4", "nvidia_com_gpu"),
        ("assistants", "chat-api-7d9f-w", "nvidia_com_gpu"),
        // the mixed strategy's resource is its profile's share already: never scaled twice
        ("assistants", "chat-api-7d9f-m", "nvidia_com_mig_3g_40gb"),
        // no workload of the plan claims it
        ("search", "mig-wait-0", "nvidia_com_mig_2g_20gb"),
    ] {
        om.series(
            "kube_pod_status_phase",
            &format!(
                "namespace=\"{ns}\",pod=\"{pod}\",uid=\"uid-{pod}\",phase=\"Pending\",{KSM_TARGET}"
            ),
            KSM,
            |t| (t < 6.0 * H).then_some(1.0),
        );
        om.series(
            "kube_pod_container_resource_requests",
            &format!("namespace=\"{ns}\",pod=\"{pod}\",uid=\"uid-{pod}\",container=\"main\",node=\"\",resource=\"{res}\",unit=\"integer\",{KSM_TARGET}"),
            KSM,
            |t| (t < 6.0 * H).then_some(1.0),
        );
    }
    let dir = tempfile::tempdir().expect("tmp");
    let text = telemetry(false, false, KSM, DCGM) + &om.text();
    let f = write(dir.path(), "ts-pending.prom", &text);
    let (v, err) = review(&f, &[]);
    let pending = v["pending"].as_array().expect("pending");
    let of = |pod: &str| {
        pending
            .iter()
            .find(|p| p["pod"] == pod)
            .unwrap_or_else(|| panic!("{pending:#?}\n{err}"))["gpu_seconds"]
            .as_f64()
            .unwrap_or(0.0)
    };
    close(
        "pending time-sliced GPU-seconds",
        of("research-notebooks-4"),
        6.0 * H / 4.0,
    );
    close(
        "pending MIG single GPU-seconds",
        of("chat-api-7d9f-w"),
        6.0 * H * 3.0 / 7.0,
    );
    close(
        "pending MIG mixed GPU-seconds",
        of("chat-api-7d9f-m"),
        6.0 * H * 3.0 / 7.0,
    );
    close(
        "pending MIG GPU-seconds",
        of("mig-wait-0"),
        6.0 * H * 2.0 / 7.0,
    );
    assert!(err.contains("2 Pending pod(s) with no node yet"), "{err}");
}

/// A dcgm-exporter outage is no data, never idle: three hours without usage samples on one
/// node leave its pods' efficiency over the time that was observed, name the gap in the
/// coverage, and give no stalled advice from missing data (it read as -25% used and "stalled"
/// before).
#[test]
fn a_dcgm_outage_is_no_data_never_idle() {
    let dir = tempfile::tempdir().expect("tmp");
    let node = "aks-servemig-14912-vmss000000";
    let (from, to) = (T0 as f64 + 2.0 * H, T0 as f64 + 5.0 * H);
    let text: String = telemetry(true, false, KSM, DCGM)
        .lines()
        .filter(|l| {
            if !l.starts_with("DCGM_") || !l.contains(&format!("Hostname=\"{node}\"")) {
                return true;
            }
            let ts: f64 = l
                .rsplit(' ')
                .next()
                .and_then(|t| t.parse().ok())
                .unwrap_or(0.0);
            !(from..to).contains(&ts)
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let f = write(dir.path(), "outage.om", &text);
    let mig = 3.0 / 7.0;
    let (_, truth) = truth();
    for step in ["60s", "5m"] {
        let (v, _) = review(&f, &["--step", step]);
        // chat-api: pod a (0.6) lost 3 h of usage data on that node, pod b (0.3) none.
        let (alloc, used) = truth["chat-api"];
        let r = row(&v, "workloads", "workload", "chat-api");
        close(
            "chat-api allocated",
            r["allocated_gpu_seconds"].as_f64().unwrap(),
            alloc,
        );
        let used_seen = used - 0.6 * 3.0 * H * mig;
        close(
            "chat-api used",
            r["used_gpu_seconds"].as_f64().unwrap(),
            used_seen,
        );
        close(
            "chat-api efficiency",
            r["efficiency"].as_f64().unwrap() * 100.0,
            used_seen / (alloc - 3.0 * H * mig) * 100.0,
        );
        let (alloc, used) = truth["embeddings"];
        let r = row(&v, "workloads", "workload", "embeddings");
        close(
            "embeddings efficiency",
            r["efficiency"].as_f64().unwrap() * 100.0,
            (used - 0.2 * 3.0 * H * mig) / (alloc - 3.0 * H * mig) * 100.0,
        );
        // The gap is listed, and nothing on that node is called stalled.
        let gaps = v["coverage"]["dcgm_gaps"].as_array().expect("gaps");
        assert_eq!(gaps.len(), 1, "{gaps:#?}");
        assert_eq!(gaps[0]["node"], node);
        close("gap", gaps[0]["seconds"].as_f64().unwrap(), 3.0 * H);
        let stalled = v["stalled"].as_array().expect("stalled");
        assert_eq!(stalled.len(), 1, "{stalled:#?}");
        assert_eq!(stalled[0]["pod"], "mystery-job-1");
    }
}

/// A pod name that ran on two nodes, one after the other (a StatefulSet pod recreated
/// elsewhere after 6 of 12 hours): each node holds it for its own time, so each is empty for
/// the other six hours (the node whose name sorts last was charged all twelve).
#[test]
fn a_pod_on_two_nodes_is_split_by_time() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut om = Om {
        seconds: true,
        ..Om::default()
    };
    let moved = 6.0 * H;
    for (node, uid, from, to) in [
        ("gpu-node-a", "uid-1", 0.0, moved),
        ("gpu-node-b", "uid-2", moved, SPAN),
    ] {
        let held = move |t: f64| (from..to).contains(&t);
        om.series(
            "kube_pod_status_phase",
            &format!(
                "namespace=\"search\",pod=\"db-0\",uid=\"{uid}\",phase=\"Running\",{KSM_TARGET}"
            ),
            KSM,
            move |t| held(t).then_some(1.0),
        );
        om.series(
            "kube_pod_container_resource_requests",
            &format!("namespace=\"search\",pod=\"db-0\",uid=\"{uid}\",container=\"main\",node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
            KSM,
            move |t| held(t).then_some(1.0),
        );
        om.series(
            "kube_node_status_allocatable",
            &format!("node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
            KSM,
            |_| Some(1.0),
        );
        om.series(
            "kube_node_labels",
            &format!("node=\"{node}\",label_kubernetes_io_os=\"linux\",{KSM_TARGET}"),
            KSM,
            |_| Some(1.0),
        );
        om.series(
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            &format!("gpu=\"0\",UUID=\"GPU-{node}-0\",modelName=\"NVIDIA A100 80GB PCIe\",Hostname=\"{node}\",exported_namespace=\"search\",exported_pod=\"db-0\",exported_container=\"main\",{}", dcgm_target(node)),
            DCGM,
            move |t| held(t).then_some(0.5),
        );
    }
    let f = write(dir.path(), "moved.om", &om.text());
    for step in ["60s", "5m"] {
        let (v, _) = review(&f, &["--step", step]);
        let nodes = v["idle_nodes"].as_array().expect("idle nodes");
        for node in ["gpu-node-a", "gpu-node-b"] {
            let n = nodes
                .iter()
                .find(|n| n["node"] == node)
                .unwrap_or_else(|| panic!("{node}: {nodes:#?}"));
            close(
                &format!("{node} empty"),
                n["empty_seconds"].as_f64().unwrap(),
                6.0 * H,
            );
            close(
                &format!("{node} idle"),
                n["idle_gpu_seconds"].as_f64().unwrap(),
                6.0 * H,
            );
        }
        let t = row(&v, "teams", "team", "search");
        close(
            "allocated",
            t["allocated_gpu_seconds"].as_f64().unwrap(),
            SPAN,
        );
        close("used", t["used_gpu_seconds"].as_f64().unwrap(), 0.5 * SPAN);
    }
}

/// GPU work no GPU-requesting pod held is listed by the node and GPU it ran on, and only
/// above a tenth of a GPU-hour: a device reporting a sliver of activity under the exporter's
/// own pod is noise, not a line of the report.
#[test]
fn usage_without_a_pod_is_listed_by_node_and_gpu_above_a_floor() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut om = Om {
        seconds: true,
        ..Om::default()
    };
    for (node, busy) in [("gpu-node-p", 0.5), ("gpu-node-q", 0.001)] {
        om.series(
            "kube_node_status_allocatable",
            &format!("node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
            KSM,
            |_| Some(1.0),
        );
        // No exported_pod: the series carries only the exporter's own pod.
        om.series(
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            &format!("gpu=\"0\",UUID=\"GPU-{node}-0\",modelName=\"NVIDIA A100 80GB PCIe\",Hostname=\"{node}\",{}", dcgm_target(node)),
            DCGM,
            move |_| Some(busy),
        );
    }
    // One pod with a request, so the review has pods to read.
    om.series(
        "kube_pod_container_resource_requests",
        &format!("namespace=\"search\",pod=\"w-0\",uid=\"u\",container=\"main\",node=\"gpu-node-p\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
        KSM,
        |t| (t < H).then_some(1.0),
    );
    let f = write(dir.path(), "orphan.om", &om.text());
    let (v, md) = review(&f, &[]);
    let list = v["coverage"]["usage_without_pod"].as_array().expect("list");
    assert_eq!(list.len(), 1, "{list:#?}");
    assert_eq!(list[0]["node"], "gpu-node-p");
    assert_eq!(list[0]["gpu"], "0");
    // 0.5 busy all 12 h: the series never names w-0, so none of it is w-0's.
    close(
        "orphan",
        list[0]["used_gpu_seconds"].as_f64().unwrap(),
        0.5 * SPAN,
    );
    let _ = md;
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .args([
            "review",
            "plans/azure-inference.toml",
            "--format",
            "markdown",
            "--metrics",
        ])
        .arg(&f)
        .output()
        .expect("runs");
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(
        md.contains("node `gpu-node-p` GPU `0`: 6.0 GPU-h of usage no GPU-requesting pod held")
            && !md.contains("node `gpu-node-q` GPU"),
        "{md}"
    );
}

/// Pending time is said as what it is (unscheduled or starting), and capacity is blamed only
/// where a pool reached its nodes.max: in this fleet none did.
#[test]
fn unmet_demand_blames_capacity_only_where_a_pool_was_full() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = write(dir.path(), "fleet.om", &telemetry(true, false, KSM, DCGM));
    let (v, _) = review(&f, &[]);
    let advice = v["recommendations"].as_array().expect("advice");
    let unmet = advice
        .iter()
        .find(|a| a["kind"] == "unmet-demand")
        .unwrap_or_else(|| panic!("{advice:#?}"));
    let msg = unmet["message"].as_str().unwrap();
    assert!(
        msg.contains("while Pending") && !msg.contains("never ran"),
        "{msg}"
    );
    let change = unmet["change"].as_str().unwrap();
    assert!(
        change.starts_with("no pool reached its nodes.max"),
        "{change}"
    );
}

/// Pending time splits by `kube_pod_status_scheduled`: a notebook unscheduled for 4 h, then
/// on the T4 (four replicas) pulling its image for 2 h, is 4 h / 4 unscheduled and 2 h / 4
/// starting. A pool is named as full only when it reached nodes.max while its own workload
/// waited unscheduled: with `notebooks` at nodes.max = 1 it is; at 4 (the plan) it is not.
#[test]
fn pending_splits_into_unscheduled_and_starting_and_names_a_full_pool() {
    let mut om = Om::default();
    let pod = "namespace=\"research\",pod=\"research-notebooks-9\",uid=\"uid-nb-9\"";
    let node = "aks-notebooks-31337-vmss000000";
    om.series(
        "kube_pod_status_phase",
        &format!("{pod},phase=\"Pending\",{KSM_TARGET}"),
        KSM,
        |t| (t < 6.0 * H).then_some(1.0),
    );
    for (cond, when) in [("false", true), ("true", false)] {
        om.series(
            "kube_pod_status_scheduled",
            &format!("{pod},condition=\"{cond}\",{KSM_TARGET}"),
            KSM,
            move |t| (t < 6.0 * H).then_some(if (t < 4.0 * H) == when { 1.0 } else { 0.0 }),
        );
    }
    om.series(
        "kube_pod_container_resource_requests",
        &format!("{pod},container=\"main\",node=\"\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
        KSM,
        |t| (t < 4.0 * H).then_some(1.0),
    );
    // on the node, its image would not pull for the last hour
    om.series(
        "kube_pod_container_status_waiting_reason",
        &format!("{pod},container=\"main\",reason=\"ImagePullBackOff\",{KSM_TARGET}"),
        KSM,
        |t| (5.0 * H..6.0 * H).contains(&t).then_some(1.0),
    );
    om.series(
        "kube_pod_container_resource_requests",
        &format!("{pod},container=\"main\",node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
        KSM,
        |t| (4.0 * H..6.0 * H).contains(&t).then_some(1.0),
    );
    let dir = tempfile::tempdir().expect("tmp");
    let text = telemetry(false, false, KSM, DCGM) + &om.text();
    let f = write(dir.path(), "split.prom", &text);
    let (v, err) = review(&f, &[]);
    let p = v["pending"]
        .as_array()
        .expect("pending")
        .iter()
        .find(|p| p["pod"] == "research-notebooks-9")
        .cloned()
        .unwrap_or_else(|| panic!("{v:#}\n{err}"));
    close(
        "pending",
        p["gpu_seconds"].as_f64().unwrap_or(0.0),
        6.0 * H / 4.0,
    );
    close(
        "unscheduled",
        p["unscheduled_gpu_seconds"].as_f64().unwrap_or(0.0),
        4.0 * H / 4.0,
    );
    close(
        "image pull",
        p["image_pull_gpu_seconds"].as_f64().unwrap_or(0.0),
        H / 4.0,
    );
    let unmet = |v: &Value| {
        v["recommendations"]
            .as_array()
            .expect("advice")
            .iter()
            .find(|a| a["kind"] == "unmet-demand")
            .cloned()
            .unwrap_or_else(|| panic!("{v:#}"))
    };
    let a = unmet(&v);
    let msg = a["message"].as_str().unwrap_or("");
    // with the fleet's own eval pod, 2 h unscheduled at a whole GPU
    assert!(
        msg.contains("3.0 unscheduled")
            && msg.contains("0.5 scheduled and starting")
            && msg.contains("(0.2 of it failing to pull images"),
        "{msg}"
    );
    assert!(
        a["change"].as_str().unwrap_or("").ends_with(
            "fix the image pulls first (the image name, the registry's credentials or reach)"
        ),
        "{a:#}"
    );
    assert!(
        a["change"]
            .as_str()
            .unwrap_or("")
            .starts_with("no pool reached"),
        "{a:#}"
    );

    // The same fleet with the notebooks pool capped at the one node it ran.
    let plan = std::fs::read_to_string("plans/azure-inference.toml").expect("plan").replace(
        "name = \"notebooks\"\nsku = \"Standard_NC4as_T4_v3\"\nregion = \"eastus\"\nnodes = { min = 0, max = 4 }",
        "name = \"notebooks\"\nsku = \"Standard_NC4as_T4_v3\"\nregion = \"eastus\"\nnodes = { min = 0, max = 1 }",
    );
    assert!(plan.contains("max = 1 }"), "the plan changed shape");
    let pf = write(dir.path(), "capped.toml", &plan);
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .args(["review"])
        .arg(&pf)
        .args(["--format", "json", "--metrics"])
        .arg(&f)
        .output()
        .expect("runs");
    let v: Value = crate::common::contract(&out.stdout).expect("json");
    let change = unmet(&v)["change"].as_str().unwrap_or("").to_owned();
    assert!(
        change.starts_with("`notebooks` (1 nodes) reached nodes.max"),
        "{change}"
    );
}

/// A pod in CrashLoopBackOff holds its GPU idle whatever its size: the review says it
/// crashes and gives no right-size advice; the same pod idle without crashing gets one.
#[test]
fn crash_looping_pods_get_no_right_size() {
    let build = |crash: bool| {
        let mut om = Om {
            seconds: true,
            ..Om::default()
        };
        let node = "gpu-node-c";
        let pod = "namespace=\"search\",pod=\"embeddings-crash-0\",uid=\"uid-c\"";
        om.series(
            "kube_pod_status_phase",
            &format!("{pod},phase=\"Running\",{KSM_TARGET}"),
            KSM,
            |_| Some(1.0),
        );
        om.series(
            "kube_pod_container_resource_requests",
            &format!("{pod},container=\"main\",node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{KSM_TARGET}"),
            KSM,
            |_| Some(1.0),
        );
        if crash {
            om.series(
                "kube_pod_container_status_waiting_reason",
                &format!("{pod},container=\"main\",reason=\"CrashLoopBackOff\",{KSM_TARGET}"),
                KSM,
                |t| (t < 0.8 * SPAN).then_some(1.0),
            );
        }
        om.series(
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            &format!("gpu=\"0\",UUID=\"GPU-{node}-0\",modelName=\"NVIDIA A100 80GB PCIe\",Hostname=\"{node}\",exported_namespace=\"search\",exported_pod=\"embeddings-crash-0\",exported_container=\"main\",{}", dcgm_target(node)),
            DCGM,
            |_| Some(0.01),
        );
        om.text()
    };
    let dir = tempfile::tempdir().expect("tmp");
    let right_size = |v: &Value| {
        v["recommendations"]
            .as_array()
            .expect("advice")
            .iter()
            .any(|a| a["kind"] == "right-size" && a["workload"] == "embeddings")
    };
    let f = write(dir.path(), "idle.om", &build(false));
    let (v, _) = review(&f, &[]);
    assert!(
        right_size(&v),
        "the idle control gets right-size advice: {v:#}"
    );
    let f = write(dir.path(), "crash.om", &build(true));
    let (v, _) = review(&f, &[]);
    assert!(!right_size(&v), "{v:#}");
    let w = row(&v, "workloads", "workload", "embeddings");
    close(
        "crash-loop share",
        w["crashloop_share"].as_f64().unwrap_or(0.0) * 100.0,
        80.0,
    );
    assert!(
        v["recommendations"]
            .as_array()
            .expect("advice")
            .iter()
            .any(|a| a["kind"] == "crash-loop" && a["workload"] == "embeddings"),
        "{v:#}"
    );
}
