//! `gpuplan review` on synthetic telemetry of known ground truth: the same six hours through
//! OpenMetrics, CSV and a real Prometheus (Debian's package, loaded with promtool) give the
//! same numbers, and those numbers are the ones worked out by hand below.

use std::fmt::Write as _;
use std::path::Path;

use crate::common;

use assert_cmd::Command;
use serde_json::Value;

pub(crate) fn gpuplan() -> Command {
    let mut c = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"));
    c.env_remove("GPUPLAN_PROMETHEUS_URL");
    c
}

/// 2026-09-01T00:00:00Z
pub(crate) const START: i64 = 1_788_220_800;
pub(crate) const STEP: i64 = 60;
pub(crate) const POINTS: i64 = 360;

/// Pod, namespace, allocated GPUs, and GPUs in use at sample `i`.
pub(crate) type Pod = (&'static str, &'static str, f64, fn(i64) -> f64);

pub(crate) const PODS: [Pod; 5] = [
    // half of one GPU busy all the time
    ("chat-api-7d9f-a", "assistants", 1.0, |_| 0.5),
    // a quarter busy for three hours, then nothing for three: stalled
    ("chat-api-7d9f-b", "assistants", 1.0, |i| {
        if i < 180 {
            0.25
        } else {
            0.0
        }
    }),
    // a tenth of its slice: over-sized
    ("embeddings-5c4-x", "search", 1.0, |_| 0.1),
    ("research-notebooks-0", "research", 1.0, |i| {
        if i % 2 == 0 {
            0.3
        } else {
            0.2
        }
    }),
    // no workload of the plan claims it
    ("mystery-job-1", "research", 2.0, |_| 1.0),
];

/// Nodes: name, pool label, allocatable GPUs. The notebook pod runs on `aks-notebooks-1`,
/// the mystery job on `gpu-node-x`; `aks-notebooks-2` hosts nothing.
pub(crate) const NODES: [(&str, Option<&str>, f64); 3] = [
    ("aks-notebooks-1", Some("notebooks"), 1.0),
    ("aks-notebooks-2", Some("notebooks"), 1.0),
    ("gpu-node-x", None, 4.0),
];

pub(crate) fn node_of(pod: &str) -> Option<&'static str> {
    match pod {
        "research-notebooks-0" => Some("aks-notebooks-1"),
        "mystery-job-1" => Some("gpu-node-x"),
        _ => None,
    }
}

pub(crate) fn openmetrics() -> String {
    let mut s = String::from("# TYPE kube_pod_container_resource_requests gauge\n");
    for (pod, ns, alloc, _) in PODS {
        let node = node_of(pod)
            .map(|n| format!(",node=\"{n}\""))
            .unwrap_or_default();
        for i in 0..POINTS {
            let _ = writeln!(
                s,
                "kube_pod_container_resource_requests{{namespace=\"{ns}\",pod=\"{pod}\",container=\"main\"{node},resource=\"nvidia_com_gpu\",unit=\"integer\"}} {alloc} {}",
                START + i * STEP
            );
        }
    }
    s.push_str("# TYPE kube_node_status_allocatable gauge\n");
    for (node, _, gpus) in NODES {
        for i in 0..POINTS {
            let _ = writeln!(
                s,
                "kube_node_status_allocatable{{node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\"}} {gpus} {}",
                START + i * STEP
            );
        }
    }
    s.push_str("# TYPE kube_node_labels gauge\n");
    for (node, pool, _) in NODES {
        let Some(pool) = pool else { continue };
        for i in 0..POINTS {
            let _ = writeln!(
                s,
                "kube_node_labels{{node=\"{node}\",label_kubernetes_azure_com_agentpool=\"{pool}\"}} 1 {}",
                START + i * STEP
            );
        }
    }
    s.push_str("# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n");
    for (pod, ns, alloc, used) in PODS {
        // one series per GPU, as dcgm-exporter reports them
        for gpu in 0..(alloc as i64) {
            for i in 0..POINTS {
                let _ = writeln!(
                    s,
                    "DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu=\"{gpu}\",namespace=\"gpu-operator\",pod=\"nvidia-dcgm-exporter-x\",exported_namespace=\"{ns}\",exported_pod=\"{pod}\"}} {} {}",
                    used(i) / alloc,
                    START + i * STEP
                );
            }
        }
    }
    s.push_str("# TYPE vllm:generation_tokens counter\n");
    for i in 0..POINTS {
        let _ = writeln!(
            s,
            "vllm:generation_tokens_total{{namespace=\"assistants\",pod=\"chat-api-7d9f-a\"}} {} {}",
            1000 * i,
            START + i * STEP
        );
    }
    s.push_str("# EOF\n");
    s
}

pub(crate) fn csv() -> String {
    let mut s = String::from("timestamp,namespace,pod,allocated_gpus,used_gpus,tokens_total\n");
    for (pod, ns, alloc, used) in PODS {
        for i in 0..POINTS {
            let tokens = if pod == "chat-api-7d9f-a" {
                (1000 * i).to_string()
            } else {
                String::new()
            };
            let _ = writeln!(
                s,
                "{},{ns},{pod},{alloc},{},{tokens}",
                START + i * STEP,
                used(i)
            );
        }
    }
    s
}

pub(crate) fn review(args: &[&str]) -> Value {
    let out = gpuplan()
        .args(["review", "plans/azure-inference.toml", "--format", "json"])
        .args(args)
        .assert()
        .code(0)
        .get_output()
        .clone();
    crate::common::contract(&out.stdout).expect("json")
}

pub(crate) fn workload<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["workloads"]
        .as_array()
        .and_then(|a| a.iter().find(|w| w["workload"] == name))
        .expect("workload")
}

/// The numbers worked out by hand from `PODS`.
pub(crate) fn assert_ground_truth(v: &Value) {
    assert_eq!(v["schema"], "gpuplan.review/v1");
    assert_eq!(v["window"]["from"], "2026-09-01T00:00:00Z");
    assert_eq!(v["window"]["to"], "2026-09-01T06:00:00Z");
    let chat = workload(v, "chat-api");
    // 2 pods x 360 min x 60 s allocated; used 0.5 x 21600 + 0.25 x 10800
    assert_eq!(chat["allocated_gpu_seconds"], 43_200.0);
    assert_eq!(chat["used_gpu_seconds"], 13_500.0);
    assert_eq!(chat["efficiency"], 0.3125);
    assert_eq!(chat["pods"], 2);
    // idle 29,700 GPU-s on serve-mig (Standard_NC24ads_A100_v4, eastus, $3.673/h, 1 GPU)
    assert_eq!(chat["idle_cost_usd"], 30.3);
    // 359,000 tokens for 21,600 GPU-s... of both pods: 43,200 x 3.673/3600 / 0.359
    let per_m = chat["usd_per_million_tokens"].as_f64().expect("tokens");
    assert!(
        (per_m - 43_200.0 * 3.673 / 3600.0 / 0.359).abs() < 1e-3,
        "{per_m}"
    );
    let emb = workload(v, "embeddings");
    assert_eq!(emb["efficiency"], 0.1);
    let nb = workload(v, "research-notebooks");
    assert_eq!(nb["used_gpu_seconds"], 5_400.0);
    let teams = v["teams"].as_array().expect("teams");
    let assistants = teams
        .iter()
        .find(|t| t["team"] == "assistants")
        .expect("team");
    assert_eq!(assistants["allocated_gpu_seconds"], 43_200.0);
    // stalled: chat-api-7d9f-b idle from 03:00 for three hours
    let stalled = v["stalled"].as_array().expect("stalled");
    assert_eq!(stalled.len(), 1, "{stalled:#?}");
    assert_eq!(stalled[0]["pod"], "chat-api-7d9f-b");
    assert_eq!(stalled[0]["since"], "2026-09-01T03:00:00Z");
    assert_eq!(stalled[0]["seconds"], 10_800);
    // unmatched usage is reported, not dropped
    let unmatched = v["unmatched"].as_array().expect("unmatched");
    assert_eq!(unmatched.len(), 1);
    assert_eq!(unmatched[0]["pod"], "mystery-job-1");
    assert_eq!(unmatched[0]["allocated_gpu_seconds"], 43_200.0);
    // serve-mig keeps 2 nodes all window: 43,200 GPU-s paid; chat-api and embeddings held 64,800
    // notebooks (min 0) and eval-spot (min 0) have no floor
    assert!(v["idle_pools"].as_array().expect("pools").is_empty());
    let kinds: Vec<&str> = v["recommendations"]
        .as_array()
        .expect("advice")
        .iter()
        .filter_map(|a| a["kind"].as_str())
        .collect();
    assert!(kinds.contains(&"right-size"), "{kinds:?}");
    assert!(kinds.contains(&"reap-stalled"), "{kinds:?}");
}

/// Node-level idle, worked out by hand from `NODES`: `aks-notebooks-2` offered one T4 for
/// six hours with nothing on it (the notebooks pool's Standard_NC4as_T4_v3 at $0.526/h:
/// $3.16); `gpu-node-x` offered four GPUs to a two-GPU job (43,200 GPU-s idle, no plan pool,
/// so no price); `aks-notebooks-1` was fully requested and is not listed.
pub(crate) fn assert_idle_nodes(v: &Value) {
    let nodes = v["idle_nodes"].as_array().expect("idle_nodes");
    assert_eq!(nodes.len(), 2, "{nodes:#?}");
    assert_eq!(nodes[0]["node"], "aks-notebooks-2");
    assert_eq!(nodes[0]["pool"], "notebooks");
    assert_eq!(nodes[0]["empty_seconds"], 21_600);
    assert_eq!(nodes[0]["idle_gpu_seconds"], 21_600.0);
    assert_eq!(nodes[0]["idle_cost_usd"], 3.16);
    assert_eq!(nodes[1]["node"], "gpu-node-x");
    assert_eq!(nodes[1]["pool"], Value::Null);
    assert_eq!(nodes[1]["empty_seconds"], 0);
    assert_eq!(nodes[1]["idle_gpu_seconds"], 43_200.0);
    assert_eq!(nodes[1]["idle_cost_usd"], Value::Null);
}

#[test]
pub(crate) fn files_give_the_hand_computed_numbers() {
    let dir = tempfile::tempdir().expect("tmp");
    let om = dir.path().join("gpu.om");
    std::fs::write(&om, openmetrics()).expect("write");
    let a = review(&["--metrics", om.to_str().expect("utf-8")]);
    assert_ground_truth(&a);
    assert_idle_nodes(&a);
    let c = dir.path().join("gpu.csv");
    std::fs::write(&c, csv()).expect("write");
    let b = review(&["--csv", c.to_str().expect("utf-8")]);
    assert_ground_truth(&b);
    for key in [
        "teams",
        "workloads",
        "stalled",
        "idle_pools",
        "unmatched",
        "recommendations",
    ] {
        assert_eq!(a[key], b[key], "{key}");
    }
}

/// Issue 39/41/42: render labels every pod it plans `gpuplan.io/workload`, and the review
/// reads that label first (kube-state-metrics exports it as `label_gpuplan_io_workload` once
/// allow-listed), before `app.kubernetes.io/name` and the name prefix. `mystery-job-1`, which
/// neither its name nor its app label ties to a workload, is `research-notebooks`' by render's
/// label: it leaves the unmatched list and its GPU-seconds count for that workload.
#[test]
pub(crate) fn render_workload_label_names_the_workload_first() {
    let mut text = openmetrics();
    let labels: String = (0..POINTS)
        .map(|i| {
            format!(
                "kube_pod_labels{{namespace=\"research\",pod=\"mystery-job-1\",label_app_kubernetes_io_name=\"mystery\",label_gpuplan_io_workload=\"research-notebooks\"}} 1 {}\n",
                START + i * STEP
            )
        })
        .collect();
    text = text.replace(
        "# EOF\n",
        &format!("# TYPE kube_pod_labels gauge\n{labels}# EOF\n"),
    );
    let dir = tempfile::tempdir().expect("tmp");
    let om = dir.path().join("gpu.om");
    std::fs::write(&om, text).expect("write");
    let v = review(&["--metrics", om.to_str().expect("utf-8")]);
    let plain = dir.path().join("plain.om");
    std::fs::write(&plain, openmetrics()).expect("write");
    let before = review(&["--metrics", plain.to_str().expect("utf-8")]);
    let held = |v: &Value| workload(v, "research-notebooks")["allocated_gpu_seconds"].as_f64();
    // the job's two GPUs for six hours, counted as the notebooks' time-sliced share (four
    // replicas per T4): 43,200 / 4
    assert_eq!(held(&before), Some(21_600.0));
    assert_eq!(held(&v), Some(21_600.0 + 43_200.0 / 4.0));
    let unmatched = v["unmatched"].as_array().expect("unmatched");
    assert!(unmatched.is_empty(), "{unmatched:#?}");
}

#[test]
pub(crate) fn reports_render_in_markdown_and_html() {
    let dir = tempfile::tempdir().expect("tmp");
    let om = dir.path().join("gpu.om");
    std::fs::write(&om, openmetrics()).expect("write");
    let md = gpuplan()
        .args(["review", "plans/azure-inference.toml", "--metrics"])
        .arg(&om)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let md = String::from_utf8(md).expect("utf-8");
    insta::assert_snapshot!(
        "review_markdown",
        md.replace(om.to_str().expect("utf-8"), "gpu.om")
    );
    let page = dir.path().join("review.html");
    gpuplan()
        .args([
            "review",
            "plans/azure-inference.toml",
            "--format",
            "html",
            "--out",
        ])
        .arg(&page)
        .arg("--metrics")
        .arg(&om)
        .assert()
        .code(0);
    let html = std::fs::read_to_string(&page).expect("html");
    assert!(html.starts_with("<!doctype html>"));
    assert_eq!(html.matches("<svg").count(), 3);
    assert!(html.contains("<table>"));
    assert!(!html.contains("<script"), "self-contained and static");
    // The time series has a scale: a unit, a 0 and a peak tick per team row.
    let timeline = &html[html.find("<svg").expect("svg")..];
    let timeline = &timeline[..timeline.find("</svg>").expect("end")];
    assert!(
        timeline.contains(">GPUs</text>") && timeline.contains(">0</text>"),
        "{timeline}"
    );
    // The idle chart is pools only, each at the figure the pools table gives it.
    let idle_at = html.find("Idle cost per pool").expect("idle chart");
    let idle = &html[idle_at..];
    let idle = &idle[..idle.find("</svg>").expect("end")];
    assert!(!idle.contains(">team "), "{idle}");
    // Wide tables scroll inside the page instead of running off it.
    assert!(html.contains("overflow-x:auto"));
    // No saving is claimed where no price is known.
    assert!(!html.contains("saves $0.00"));
}

#[test]
pub(crate) fn bad_input_is_a_clear_error_never_a_silent_zero() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases: [(&str, &str, &str); 4] = [
        ("empty.om", "# EOF\n", "no GPU samples"),
        ("nolabels.om", "kube_pod_container_resource_requests{resource=\"nvidia_com_gpu\"} 1 1788220800\n# EOF\n", "nothing to review"),
        ("bad.csv", "timestamp,namespace,pod,allocated_gpus,used_gpus\n1788220800,a,b,one,0\n", "bad.csv:2:"),
        ("header.csv", "when,who\n", "no `timestamp` column"),
    ];
    for (name, text, needle) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write");
        let flag = if name.ends_with(".csv") {
            "--csv"
        } else {
            "--metrics"
        };
        let out = gpuplan()
            .args(["review", "plans/azure-inference.toml", flag])
            .arg(&p)
            .assert()
            .code(2)
            .get_output()
            .clone();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{name}: {err}");
    }
    // a window with no data
    let om = dir.path().join("gpu.om");
    std::fs::write(&om, openmetrics()).expect("write");
    let out = gpuplan()
        .args([
            "review",
            "plans/azure-inference.toml",
            "--from",
            "2027-01-01T00:00:00Z",
            "--to",
            "2027-01-02T00:00:00Z",
            "--metrics",
        ])
        .arg(&om)
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to review"));
    // Against a port with no server: exit 2 and what stderr says.
    let refused = |extra: &[&str]| {
        let out = gpuplan()
            .args([
                "review",
                "plans/azure-inference.toml",
                "--prometheus",
                "http://127.0.0.1:9",
            ])
            .args(extra)
            .assert()
            .code(2)
            .get_output()
            .clone();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    // an unreachable server
    assert!(refused(&["--timeout", "2", "--window", "1h"]).contains("cannot reach Prometheus"));
    // an empty window, refused before any request
    let err = refused(&[
        "--from",
        "2027-01-02T00:00:00Z",
        "--to",
        "2027-01-01T00:00:00Z",
    ]);
    assert!(err.contains("the window is empty"), "{err}");
    assert!(!err.contains("cannot reach"), "{err}");
}

/// A real Prometheus on 127.0.0.1 holding the synthetic series.
pub(crate) fn prometheus(dir: &Path) -> (common::prometheus::Server, String) {
    let om = dir.join("gpu.om");
    std::fs::write(&om, openmetrics()).expect("write");
    common::prometheus::start(dir, &om)
}

#[test]
#[ignore = "needs Debian's prometheus package; .ci/run installs it and runs this test"]
pub(crate) fn a_real_prometheus_gives_the_same_numbers() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_server, url) = prometheus(dir.path());
    let from_server = review(&[
        "--prometheus",
        &url,
        "--from",
        "2026-09-01T00:00:00Z",
        "--to",
        "2026-09-01T06:00:00Z",
        "--step",
        "60s",
    ]);
    assert_ground_truth(&from_server);
    assert_idle_nodes(&from_server);
    let from_file = review(&[
        "--metrics",
        dir.path().join("gpu.om").to_str().expect("utf-8"),
    ]);
    for key in [
        "teams",
        "workloads",
        "stalled",
        "idle_pools",
        "idle_nodes",
        "unmatched",
        "recommendations",
    ] {
        assert_eq!(from_server[key], from_file[key], "{key}");
    }
    // a query the server refuses is reported with the server's reason
    let out = gpuplan()
        .args([
            "review",
            "plans/azure-inference.toml",
            "--prometheus",
            &url,
            "--window",
            "1h",
            "--to",
            "2020-01-01T00:00:00Z",
        ])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no kube_pod_container_resource_requests")
    );
}

/// A Prometheus stand-in: `answer(query)` gives the series of each query (as `(labels JSON,
/// value)` held at every evaluation time asked for), and `fault(n)` a response for the n-th
/// request instead (0-based), to script 429/5xx, slow and truncated answers.
pub(crate) fn mock_prometheus(
    answer: impl Fn(&str) -> Vec<(String, f64)> + Send + Sync + 'static,
    fault: impl Fn(usize) -> Option<common::mock::Resp> + Send + Sync + 'static,
) -> common::mock::Mock {
    mock_prometheus_with(answer, move |n, _| fault(n))
}

/// [`mock_prometheus`] whose `fault` also sees the request (a store's limits depend on it).
pub(crate) fn mock_prometheus_with(
    answer: impl Fn(&str) -> Vec<(String, f64)> + Send + Sync + 'static,
    fault: impl Fn(usize, &common::mock::Req) -> Option<common::mock::Resp> + Send + Sync + 'static,
) -> common::mock::Mock {
    common::mock::Mock::start(move |r, seen| {
        // The series index, asked once whether the window holds data: it answers as the
        // queries would (a series when any query has one). Faults count the other requests.
        if r.target.contains("/api/v1/series") {
            let any = [
                "kube_pod_container_resource_requests",
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            ]
            .iter()
            .any(|m| !answer(m).is_empty());
            return common::mock::Resp::json(if any {
                "{\"status\":\"success\",\"data\":[{\"__name__\":\"kube_pod_container_resource_requests\"}]}"
            } else {
                "{\"status\":\"success\",\"data\":[]}"
            });
        }
        // The range-boundary probe's instant queries find nothing here (the review then reads
        // the server's version), and count no more than the series index does.
        if r.target.contains("/api/v1/query?") {
            return common::mock::Resp::json(
                "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[]}}",
            );
        }
        let n = seen
            .iter()
            .filter(|r| {
                !r.target.contains("/api/v1/series") && !r.target.contains("/api/v1/query?")
            })
            .count();
        if let Some(f) = fault(n, r) {
            return f;
        }
        if r.target.contains("buildinfo") {
            return common::mock::Resp::json(
                "{\"status\":\"success\",\"data\":{\"version\":\"2.53.0\"}}",
            );
        }
        let q = |k: &str| {
            r.target
                .split(['?', '&'])
                .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
                .map(|v| {
                    let v = v.replace('+', " ");
                    let mut out = Vec::new();
                    let b = v.as_bytes();
                    let mut i = 0;
                    while i < b.len() {
                        if b[i] == b'%' && i + 2 < b.len() {
                            out.push(u8::from_str_radix(&v[i + 1..i + 3], 16).unwrap_or(b'?'));
                            i += 3;
                        } else {
                            out.push(b[i]);
                            i += 1;
                        }
                    }
                    String::from_utf8_lossy(&out).into_owned()
                })
                .unwrap_or_default()
        };
        let (start, end, step): (f64, f64, f64) = (
            q("start").parse().unwrap_or(0.0),
            q("end").parse().unwrap_or(0.0),
            q("step").parse().unwrap_or(60.0),
        );
        let series: Vec<String> = answer(&q("query"))
            .into_iter()
            .map(|(labels, v)| {
                let mut t = start;
                let mut values = Vec::new();
                while t <= end + 1e-6 {
                    values.push(format!("[{t:.3},\"{v}\"]"));
                    t += step;
                }
                format!("{{\"metric\":{labels},\"values\":[{}]}}", values.join(","))
            })
            .collect();
        common::mock::Resp::json(format!(
            "{{\"status\":\"success\",\"data\":{{\"resultType\":\"matrix\",\"result\":[{}]}}}}",
            series.join(",")
        ))
    })
}

/// One pod holding `resource`, Running, its GPU `busy`: answers per query, at a 60 s step
/// with 30 s kube-state-metrics scrapes (2 per window) and 15 s DCGM scrapes (4).
pub(crate) fn one_pod(
    pod: &'static str,
    ns: &'static str,
    resource: &'static str,
    profile: Option<&'static str>,
    busy: f64,
) -> impl Fn(&str) -> Vec<(String, f64)> {
    move |query: &str| {
        let who = format!("\"namespace\":\"{ns}\",\"pod\":\"{pod}\"");
        let prof = profile
            .map(|p| format!(",\"GPU_I_PROFILE\":\"{p}\",\"GPU_I_ID\":\"1\""))
            .unwrap_or_default();
        if query.contains("kube_pod_container_resource_requests") {
            vec![(
                format!(
                    "{{{who},\"container\":\"main\",\"node\":\"n1\",\"resource\":\"{resource}\"}}"
                ),
                1.0,
            )]
        } else if query.contains("phase=\"Running\"") {
            // Running in both scrapes of every window, and two phase samples counted
            vec![(format!("{{{who}}}"), 2.0)]
        } else if query.contains("DCGM_FI_PROF_GR_ENGINE_ACTIVE")
            && query.contains("count_over_time")
        {
            vec![(
                format!("{{{who},\"gpu\":\"0\",\"UUID\":\"GPU-1\"{prof}}}"),
                4.0,
            )]
        } else if query.contains("DCGM_FI_PROF_GR_ENGINE_ACTIVE") {
            vec![(
                format!("{{{who},\"gpu\":\"0\",\"UUID\":\"GPU-1\"{prof}}}"),
                4.0 * busy,
            )]
        } else {
            Vec::new()
        }
    }
}

pub(crate) fn review_against(url: &str, extra: &[&str], code: i32) -> String {
    let out = review_command(url)
        .args(extra)
        .assert()
        .code(code)
        .get_output()
        .clone();
    if code == 0 {
        String::from_utf8_lossy(&out.stdout).into_owned()
    } else {
        String::from_utf8_lossy(&out.stderr).into_owned()
    }
}

/// The review of `plans/azure-inference.toml` against a store at `url`, over the 20 minutes
/// the mock stores answer for, with `--timeout 2`.
pub(crate) fn review_command(url: &str) -> assert_cmd::Command {
    let mut c = gpuplan();
    c.args([
        "review",
        "plans/azure-inference.toml",
        "--format",
        "json",
        "--prometheus",
        url,
    ])
    .args([
        "--from",
        "2026-09-01T00:00:00Z",
        "--to",
        "2026-09-01T00:20:00Z",
        "--step",
        "60s",
        "--timeout",
        "2",
    ]);
    c
}

/// Issue 72 item 12: a notebook busy 08:00-20:00 and idle every night, four days. The stalled
/// advice listed only its longest night (12 h of the 44 h it sat idle), and priced reaping it
/// at that night alone. Every night over the threshold is counted and priced; the longest is
/// still the one named.
#[test]
fn a_pod_idle_every_night_is_stalled_every_night() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "version = 1\n[plan]\nname = \"nights\"\nowner = \"platform\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[[workload]]\nname = \"notebook\"\nteam = \"research\"\nkind = \"notebook\"\nreplicas = 1\ngpus = 1\nskus = [\"g6.xlarge\"]\n",
    )
    .expect("plan");
    let mut csv = String::from("timestamp,namespace,pod,allocated_gpus,used_gpus\n");
    for k in 0..(4 * 24 * 60) {
        let t = START + k * 60;
        let hour = (k / 60) % 24;
        let busy = if (8..20).contains(&hour) { 0.8 } else { 0.0 };
        let _ = writeln!(csv, "{t},research,notebook-0,1,{busy}");
    }
    let file = dir.path().join("nights.csv");
    std::fs::write(&file, csv).expect("csv");
    let out = gpuplan()
        .args(["review", "--format", "json"])
        .arg(&plan)
        .arg("--csv")
        .arg(&file)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = common::contract(&out.stdout).expect("json");
    let stalled = v["stalled"].as_array().expect("stalled");
    assert_eq!(stalled.len(), 1, "{stalled:#?}");
    let s = &stalled[0];
    // 00-08 the first day, 20-08 three times, 20-24 the last: 8 + 36 + 4 h.
    assert_eq!(s["seconds"], 12 * 3600, "{s:#}");
    assert_eq!(s["stretches"], 5, "{s:#}");
    assert_eq!(s["all_seconds"], 48 * 3600, "{s:#}");
    let reap = v["recommendations"]
        .as_array()
        .expect("advice")
        .iter()
        .find(|a| a["kind"] == "reap-stalled")
        .expect("reap advice")
        .clone();
    let hourly = reap["saving_usd"].as_f64().expect("saving") / 48.0;
    // g6.xlarge lists near $0.80 an hour on demand: 48 idle hours are priced, not 12.
    assert!((0.5..1.2).contains(&hourly), "{reap:#}");
    assert!(
        reap["message"]
            .as_str()
            .is_some_and(|m| m.contains("the longest of 5 such stretches, 48.0 h in all")),
        "{reap:#}"
    );
}
