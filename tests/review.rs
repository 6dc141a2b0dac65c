//! `gpuplan review` on synthetic telemetry of known ground truth: the same six hours through
//! OpenMetrics, CSV and a real Prometheus (Debian's package, loaded with promtool) give the
//! same numbers, and those numbers are the ones worked out by hand below.

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Child, Command as Process};
use std::time::{Duration, Instant};

mod common;

use assert_cmd::Command;
use serde_json::Value;

fn gpuplan() -> Command {
    let mut c = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"));
    c.env_remove("GPUPLAN_PROMETHEUS_URL");
    c
}

/// 2026-09-01T00:00:00Z
const START: i64 = 1_788_220_800;
const STEP: i64 = 60;
const POINTS: i64 = 360;

/// Pod, namespace, allocated GPUs, and GPUs in use at sample `i`.
type Pod = (&'static str, &'static str, f64, fn(i64) -> f64);

const PODS: [Pod; 5] = [
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
const NODES: [(&str, Option<&str>, f64); 3] = [
    ("aks-notebooks-1", Some("notebooks"), 1.0),
    ("aks-notebooks-2", Some("notebooks"), 1.0),
    ("gpu-node-x", None, 4.0),
];

fn node_of(pod: &str) -> Option<&'static str> {
    match pod {
        "research-notebooks-0" => Some("aks-notebooks-1"),
        "mystery-job-1" => Some("gpu-node-x"),
        _ => None,
    }
}

fn openmetrics() -> String {
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

fn csv() -> String {
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

fn review(args: &[&str]) -> Value {
    let out = gpuplan()
        .args(["review", "plans/azure-inference.toml", "--format", "json"])
        .args(args)
        .assert()
        .code(0)
        .get_output()
        .clone();
    serde_json::from_slice(&out.stdout).expect("json")
}

fn workload<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["workloads"]
        .as_array()
        .and_then(|a| a.iter().find(|w| w["workload"] == name))
        .expect("workload")
}

/// The numbers worked out by hand from `PODS`.
fn assert_ground_truth(v: &Value) {
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
fn assert_idle_nodes(v: &Value) {
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
fn files_give_the_hand_computed_numbers() {
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

#[test]
fn reports_render_in_markdown_and_html() {
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
}

#[test]
fn bad_input_is_a_clear_error_never_a_silent_zero() {
    let dir = tempfile::tempdir().expect("tmp");
    let cases: [(&str, &str, &str); 4] = [
        ("empty.om", "# EOF\n", "no GPU samples"),
        ("nolabels.om", "kube_pod_container_resource_requests{resource=\"nvidia_com_gpu\"} 1 1788220800\n# EOF\n", "without namespace/pod labels skipped"),
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
    // an unreachable server
    let out = gpuplan()
        .args([
            "review",
            "plans/azure-inference.toml",
            "--prometheus",
            "http://127.0.0.1:9",
            "--timeout",
            "2",
            "--window",
            "1h",
        ])
        .assert()
        .code(2)
        .get_output()
        .clone();
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot reach Prometheus"));
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port")
}

/// A real Prometheus on 127.0.0.1 holding the synthetic series.
fn prometheus(dir: &Path) -> (Server, String) {
    let om = dir.join("gpu.om");
    std::fs::write(&om, openmetrics()).expect("write");
    let data = dir.join("data");
    let status = Process::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&om)
        .arg(&data)
        .output()
        .expect("promtool (Debian package prometheus; .ci/run installs it)");
    assert!(
        status.status.success(),
        "promtool: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let cfg = dir.join("prometheus.yml");
    std::fs::write(&cfg, "global:\n  scrape_interval: 1m\n").expect("write");
    let port = free_port();
    let child = Process::new("prometheus")
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!("--storage.tsdb.path={}", data.display()))
        .arg("--storage.tsdb.retention.time=100y")
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("prometheus");
    let server = Server(child);
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if ureq::get(&format!("{url}/-/ready")).call().is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "prometheus did not become ready");
        std::thread::sleep(Duration::from_millis(200));
    }
    (server, url)
}

#[test]
#[ignore = "needs Debian's prometheus package; .ci/run installs it and runs this test"]
fn a_real_prometheus_gives_the_same_numbers() {
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

/// A one-connection-at-a-time HTTP server on 127.0.0.1 that answers each request with the
/// next scripted response (status, extra headers, body, delay), then stops. Bounded: it
/// serves at most `script.len()` requests.
fn scripted(
    script: Vec<(u16, &'static str, String, u64)>,
) -> (String, std::thread::JoinHandle<usize>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let handle = std::thread::spawn(move || {
        let mut served = 0;
        for (status, headers, body, delay) in script {
            let Ok((mut conn, _)) = listener.accept() else {
                break;
            };
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            std::thread::sleep(Duration::from_millis(delay));
            let reply = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n{headers}\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(reply.as_bytes());
            served += 1;
        }
        served
    });
    (url, handle)
}

fn matrix(metric: &str) -> String {
    format!(
        "{{\"status\":\"success\",\"data\":{{\"resultType\":\"matrix\",\"result\":[{{\"metric\":{metric},\"values\":[[{START},\"1\"],[{},\"1\"]]}}]}}}}",
        START + STEP
    )
}

fn review_against(url: &str, extra: &[&str], code: i32) -> String {
    let out = gpuplan()
        .args([
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
            "2026-09-01T00:02:00Z",
            "--step",
            "60s",
            "--timeout",
            "2",
        ])
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

#[test]
fn prometheus_faults_are_retried_or_reported() {
    let pod = "{\"namespace\":\"assistants\",\"pod\":\"chat-api-1\"}";
    // 503 with Retry-After, then the three answers: retried and used
    let (url, h) = scripted(vec![
        (
            503,
            "Retry-After: 1\r\n",
            "{\"status\":\"error\",\"error\":\"busy\"}".into(),
            0,
        ),
        (200, "", matrix(pod), 0),
        (200, "", matrix(pod), 0),
        (
            200,
            "",
            "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}".into(),
            0,
        ),
        // no node metrics: the review has no node section, and asks nothing more
        (
            200,
            "",
            "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}".into(),
            0,
        ),
    ]);
    let out = review_against(&url, &[], 0);
    assert_eq!(h.join().expect("server"), 5);
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(workload(&v, "chat-api")["allocated_gpu_seconds"], 120.0);
    // a query Prometheus refuses: its own reason is shown
    let (url, _) = scripted(vec![(
        400,
        "",
        "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"parse error at char 4\"}"
            .into(),
        0,
    )]);
    let err = review_against(&url, &[], 2);
    assert!(
        err.contains("HTTP 400") && err.contains("parse error at char 4"),
        "{err}"
    );
    // a truncated answer
    let (url, _) = scripted(vec![(
        200,
        "",
        "{\"status\":\"success\",\"data\":{\"resu".into(),
        0,
    )]);
    let err = review_against(&url, &[], 2);
    assert!(err.contains("not a query_range answer"), "{err}");
    // a server that keeps failing: three tries, then a clear error
    let (url, h) = scripted(vec![
        (500, "", "oops".into(), 0),
        (500, "", "oops".into(), 0),
        (500, "", "oops".into(), 0),
    ]);
    let err = review_against(&url, &[], 2);
    assert_eq!(h.join().expect("server"), 3);
    assert!(err.contains("HTTP 500"), "{err}");
    // a slow server: the timeout ends it
    let (url, _) = scripted(vec![(200, "", matrix(pod), 4_000)]);
    let t = Instant::now();
    let err = review_against(&url, &[], 2);
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "gave up at the timeout"
    );
    assert!(err.contains("Prometheus"), "{err}");
    // series without the labels the review needs
    let (url, _) = scripted(vec![(200, "", matrix("{\"job\":\"x\"}"), 0)]);
    let err = review_against(&url, &[], 2);
    assert!(err.contains("no namespace/pod labels"), "{err}");
}

#[test]
fn mig_instances_from_prometheus_count_as_their_share() {
    // one pod holding a 3g.40gb instance (3 of 7 compute slices), half busy
    let (url, _) = scripted(vec![
        (
            200,
            "",
            matrix("{\"namespace\":\"search\",\"pod\":\"embeddings-1\",\"resource\":\"nvidia_com_mig_3g_40gb\"}"),
            0,
        ),
        (
            200,
            "",
            format!(
                "{{\"status\":\"success\",\"data\":{{\"resultType\":\"matrix\",\"result\":[{{\"metric\":{{\"namespace\":\"search\",\"pod\":\"embeddings-1\",\"GPU_I_PROFILE\":\"3g.40gb\"}},\"values\":[[{START},\"0.5\"],[{},\"0.5\"]]}}]}}}}",
                START + STEP
            ),
            0,
        ),
        (200, "", "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}".into(), 0),
        (200, "", "{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\",\"result\":[]}}".into(), 0),
    ]);
    let v: Value = serde_json::from_str(&review_against(&url, &[], 0)).expect("json");
    assert_eq!(v["idle_nodes"], serde_json::json!([]));
    let emb = workload(&v, "embeddings");
    // 2 samples x 60 s x 3/7 allocated; half of it used
    assert_eq!(emb["allocated_gpu_seconds"], 51.43);
    assert_eq!(emb["used_gpu_seconds"], 25.71);
    assert_eq!(emb["efficiency"], 0.5);
}

#[test]
fn long_windows_are_asked_for_a_week_at_a_time_and_joined() {
    // One pod holding one GPU, fully busy, for eight days at an hourly step: each query is
    // split into a week and a day, and the pieces join into one series.
    let mock = common::mock::Mock::start(|r, _| {
        let q = |k: &str| {
            r.target
                .split(['?', '&'])
                .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
                .unwrap_or("")
                .to_owned()
        };
        let (start, end): (i64, i64) = (
            q("start").parse().unwrap_or(0),
            q("end").parse().unwrap_or(0),
        );
        let query = q("query");
        let pod = query.contains("kube_pod_container_resource_requests") && !query.contains("node")
            || query.contains("DCGM_FI_PROF_GR_ENGINE_ACTIVE");
        let result = if pod {
            let values: Vec<String> = (0..)
                .map(|i| start + i * 3600)
                .take_while(|t| *t <= end)
                .map(|t| format!("[{t},\"1\"]"))
                .collect();
            format!(
                "[{{\"metric\":{{\"namespace\":\"assistants\",\"pod\":\"chat-api-1\"}},\"values\":[{}]}}]",
                values.join(",")
            )
        } else {
            "[]".to_owned()
        };
        common::mock::Resp::json(format!(
            "{{\"status\":\"success\",\"data\":{{\"resultType\":\"matrix\",\"result\":{result}}}}}"
        ))
    });
    let out = gpuplan()
        .args([
            "review",
            "plans/azure-inference.toml",
            "--format",
            "json",
            "--prometheus",
            &mock.url,
            "--from",
            "2026-09-01T00:00:00Z",
            "--to",
            "2026-09-09T00:00:00Z",
            "--step",
            "1h",
        ])
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).expect("json");
    let chat = workload(&v, "chat-api");
    assert_eq!(chat["allocated_gpu_seconds"], 8.0 * 86_400.0);
    assert_eq!(chat["used_gpu_seconds"], 8.0 * 86_400.0);
    // allocated, used, tokens, node capacity: two pieces each
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 8, "{reqs:#?}");
    let first = reqs
        .iter()
        .find(|r| r.target.contains("end=1788822000"))
        .expect("a first piece ending after 7 days less one step");
    assert!(
        first.target.contains("start=1788220800"),
        "{}",
        first.target
    );
}
