//! `gpuplan review --write-plan NEXT.toml`: next quarter's plan from a measured history.
//! Histories are generated with a known trend (the truth the projection is held to), then
//! read through the binary as a user would; the plan it writes is held to `check` and priced
//! by `diff`.

use std::fmt::Write as _;
use std::path::Path;

use assert_cmd::Command;

use crate::common;

pub(crate) fn gpuplan() -> Command {
    let mut c = Command::cargo_bin("gpuplan").expect("binary");
    c.env("NO_COLOR", "1").env("GPUPLAN_TODAY", "2026-12-05");
    c
}

/// 2026-11-07T00:00:00Z
pub(crate) const NOV7: i64 = 1_794_009_600;
/// 2026-01-10T00:00:00Z
const JAN10: i64 = 1_768_003_200;

/// What one workload does each sample: pods holding one GPU each, and how busy each is.
pub(crate) struct Shape {
    namespace: &'static str,
    prefix: &'static str,
    /// Replicas at time `day` (days since the start, fractional) and hour of day.
    replicas: Box<dyn Fn(f64, f64) -> usize>,
    busy: f64,
}

/// A CSV history of `days` days from `start` at `step` seconds.
fn history(dir: &Path, start: i64, days: i64, step: i64, shapes: &[Shape]) -> std::path::PathBuf {
    let mut s = String::from("timestamp,namespace,pod,allocated_gpus,used_gpus\n");
    let mut k = 0;
    while k * step < days * 86_400 {
        let t = start + k * step;
        let day = (k * step) as f64 / 86_400.0;
        let hour = ((t % 86_400) as f64) / 3600.0;
        for sh in shapes {
            for i in 0..(sh.replicas)(day, hour) {
                let _ = writeln!(s, "{t},{},{}-{i},1,{}", sh.namespace, sh.prefix, sh.busy);
            }
        }
        k += 1;
    }
    let p = dir.join("history.csv");
    std::fs::write(&p, s).expect("write history");
    p
}

/// Busy hours: full load 8:00-20:00 UTC, half load at night.
fn diurnal(hour: f64) -> f64 {
    if (8.0..20.0).contains(&hour) {
        1.0
    } else {
        0.5
    }
}

const PLAN: &str = r#"version = 1

# Quarterly capacity plan: keep this comment.
[plan]
name = "quarterly"
owner = "platform"
provider = "azure"
regions = ["eastus"]

# The assistant: grows with its users.
[[workload]]
name = "chat"
team = "assistants"
kind = "inference"
user_facing = true
replicas = { min = 2, max = 40 }   # HPA bounds
gpu_memory_gib = 40
skus = ["Standard_NC24ads_A100_v4"]

# Embeddings: sized for a launch that never came.
[[workload]]
name = "embed"
team = "search"
kind = "inference"
replicas = { min = 6, max = 12 }
utilization = 0.6
gpu_memory_gib = 20
skus = ["Standard_NC24ads_A100_v4"]

[[workload]]
name = "notebook"
team = "research"
kind = "notebook"
replicas = 2
gpu_memory_gib = 8
skus = ["Standard_NC24ads_A100_v4"]

# Reranker: eight fixed replicas, 30% busy.
[[workload]]
name = "rerank"
team = "search"
kind = "inference"
replicas = 8
gpu_memory_gib = 30
skus = ["Standard_NC24ads_A100_v4"]

[[workload]]
name = "nightly"
team = "research"
kind = "batch"
replicas = 4
interruptible = true
checkpoint_minutes = 30
gpu_memory_gib = 20
skus = ["Standard_NC24ads_A100_v4"]

[[workload]]
name = "eval"
team = "research"
kind = "evaluation"
replicas = 1 # no telemetry for this one
"#;

pub(crate) fn fleet(slope: f64) -> Vec<Shape> {
    vec![
        Shape {
            namespace: "assistants",
            prefix: "chat",
            replicas: Box::new(move |day, hour| {
                ((3.0 + slope * day) * diurnal(hour)).round() as usize
            }),
            busy: 0.6,
        },
        Shape {
            namespace: "search",
            prefix: "embed",
            replicas: Box::new(|_, _| 4),
            busy: 0.6,
        },
        Shape {
            namespace: "search",
            prefix: "rerank",
            replicas: Box::new(|_, _| 8),
            busy: 0.3,
        },
        Shape {
            namespace: "research",
            prefix: "notebook",
            replicas: Box::new(|_, _| 2),
            busy: 0.01,
        },
        // Eight hours a night.
        Shape {
            namespace: "research",
            prefix: "nightly",
            replicas: Box::new(|_, hour| if hour < 8.0 { 4 } else { 0 }),
            busy: 0.9,
        },
    ]
}

fn write_plan(dir: &Path, csv: &Path, extra: &[&str]) -> (String, String, serde_json::Value) {
    let plan = dir.join("plan.toml");
    let next = dir.join("next.toml");
    let out = gpuplan()
        .arg("review")
        .arg(&plan)
        .arg("--csv")
        .arg(csv)
        .args(["--format", "json", "--write-plan"])
        .arg(&next)
        .args(extra)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    let json: serde_json::Value = crate::common::contract(&out.stdout).expect("json");
    (
        std::fs::read_to_string(&next).expect("next written"),
        stderr,
        json,
    )
}

pub(crate) fn line<'a>(text: &'a str, workload: &str, key: &str) -> Option<&'a str> {
    let start = text.find(&format!("name = \"{workload}\""))?;
    let rest = &text[start..];
    let end = rest[1..].find("[[").map_or(rest.len(), |i| i + 1);
    rest[..end]
        .lines()
        .find(|l| l.starts_with(&format!("{key} =")))
}

pub(crate) fn forecast<'a>(json: &'a serde_json::Value, workload: &str) -> &'a serde_json::Value {
    json["next_quarter"]["workloads"]
        .as_array()
        .expect("workloads")
        .iter()
        .find(|w| w["workload"] == workload)
        .unwrap_or_else(|| panic!("no forecast for {workload}"))
}

#[test]
fn a_28_day_history_becomes_next_quarters_plan() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("plan.toml"), PLAN).expect("plan");
    let csv = history(dir.path(), NOV7, 28, 300, &fleet(0.25));
    let (next, stderr, json) = write_plan(dir.path(), &csv, &[]);

    // Growing: the peak at the end of 2027-Q1 (2027-04-01, day 145) is 3 + 0.25 x 145 =
    // 39.25 replicas; max covers it with 15% headroom.
    let chat = forecast(&json, "chat");
    let projected = chat["projected_replicas"].as_f64().expect("projected");
    assert!((projected - 39.25).abs() / 39.25 < 0.05, "{chat:#}");
    assert_eq!(chat["trend"]["used"], true);
    let max = chat["proposed"]["max"].as_i64().expect("max");
    assert!(max as f64 >= 39.25 * 1.15 - 1.0 && max <= 48, "{chat:#}");
    assert_eq!(
        chat["proposed"]["min"], 2,
        "p10 at night: 3 x 0.5 rounds to 2"
    );
    let l = line(&next, "chat", "replicas").expect("chat replicas");
    assert!(
        l.starts_with(&format!("replicas = {{ min = 2, max = {max} }}")),
        "{l}"
    );
    assert!(
        l.contains("# HPA bounds") && l.contains("# gpuplan review: was { min = 2, max = 40 }"),
        "{l}"
    );
    assert!(l.contains("/day") && l.contains("2027-Q1"), "{l}");

    // Steady and over-provisioned: held 4 where the plan says 6 to 12, with no trend: min
    // from the p10, max from the peak seen, 4 x 1.15 = 4.6 -> 5.
    let embed = forecast(&json, "embed");
    assert_eq!(embed["trend"]["used"], false, "{embed:#}");
    assert_eq!(
        line(&next, "embed", "replicas").map(|l| &l[..31]),
        Some("replicas = { min = 4, max = 5 }")
    );

    // Over-provisioned by load: eight fixed replicas 30% busy are the work of 2.4 GPUs; at
    // the default 50% a replica, 4.8, +15% = 5.52 -> 6, still a fixed count.
    let rr = forecast(&json, "rerank");
    assert_eq!(rr["proposed"]["basis"], "consolidated", "{rr:#}");
    let l = line(&next, "rerank", "replicas").expect("rerank");
    assert!(
        l.starts_with("replicas = 6  # gpuplan review: was 8;"),
        "{l}"
    );
    assert!(l.contains("consolidated to 50% busy per replica"), "{l}");

    // Idle (1% busy): never grown; the right-size to a MIG slice passes check, so it is
    // taken, with the figures beside it.
    let nb = forecast(&json, "notebook");
    assert_eq!(nb["proposed"]["max"], 2);
    assert_eq!(nb["proposed"]["sharing"], "mig");
    assert!(
        line(&next, "notebook", "replicas") == Some("replicas = 2"),
        "unchanged line"
    );
    let frac = line(&next, "notebook", "gpu_fraction").expect("fraction");
    assert!(
        frac.starts_with("gpu_fraction = 0.1429") && frac.contains("1g.10gb"),
        "{frac}"
    );

    // A batch that ran 8 of 24 hours: a third of the month.
    let hours = line(&next, "nightly", "hours_per_month").expect("hours");
    let h: f64 = hours
        .trim_start_matches("hours_per_month = ")
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .expect("number");
    assert!((h - 730.0 / 3.0).abs() < 730.0 * 0.02, "{hours}");
    assert_eq!(line(&next, "nightly", "replicas"), Some("replicas = 4"));

    // No data: left as it is, and listed.
    assert_eq!(
        line(&next, "eval", "replicas"),
        Some("replicas = 1 # no telemetry for this one")
    );
    assert!(
        stderr.contains("no GPU held in the window: eval"),
        "{stderr}"
    );
    assert_eq!(json["next_quarter"]["without_data"][0], "eval");

    // Every line of the plan that was not changed is still there, in order.
    let kept: Vec<&str> = PLAN
        .lines()
        .filter(|l| !l.starts_with("replicas = {") && *l != "replicas = 8")
        .collect();
    let mut at = 0;
    for l in &kept {
        let found = next[at..]
            .find(l)
            .unwrap_or_else(|| panic!("lost `{l}`:\n{next}"));
        at += found + l.len();
    }

    // check passes it; diff prices it.
    let next_path = dir.path().join("next.toml");
    gpuplan().arg("check").arg(&next_path).assert().success();
    let diff = gpuplan()
        .arg("diff")
        .arg(dir.path().join("plan.toml"))
        .arg(&next_path)
        .output()
        .expect("diff");
    let d = String::from_utf8_lossy(&diff.stdout);
    assert!(
        d.contains("recommended $") && d.contains("workload `chat`: replicas.max 40 → "),
        "{d}"
    );
    assert!(
        d.contains("workload `notebook`: gpu_fraction none → 0.1429, sharing none → \"mig\""),
        "{d}"
    );

    insta::assert_snapshot!("next_plan_28_days", next);

    // The report's "Next quarter": per team and per workload in Markdown; in HTML a chart per
    // team with the forecast band.
    let report = |format: &str| {
        let out = gpuplan()
            .arg("review")
            .arg(dir.path().join("plan.toml"))
            .arg("--csv")
            .arg(&csv)
            .args(["--format", format])
            .output()
            .expect("report");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let md = report("markdown");
    let section = &md[md.find("## Next quarter").expect("section")..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |i| i + 3)];
    insta::assert_snapshot!("next_quarter_28_days", section);
    let html = report("html");
    let chart = &html[html.find("daily peak GPUs per team").expect("chart")..];
    let chart = &chart[..chart.find("</svg>").expect("svg end")];
    assert_eq!(chart.matches("<polygon").count(), 3, "a band per team");
    assert_eq!(
        chart.matches("stroke-dasharray=\"5 3\"").count(),
        3,
        "a forecast line per team"
    );
    assert!(chart.contains("end of data") && chart.contains("2027-04-01"));
    // Issue 75 item 13: each team's y axis says its zero and its unit, and no two labels
    // overprint (boxes estimated at 0.6 em a character, as a sans-serif digit runs).
    assert_eq!(chart.matches(">0</text>").count(), 3, "a zero per team");
    assert_eq!(chart.matches(" GPUs</text>").count(), 3, "a unit per team");
    let labels = svg_text_boxes(chart);
    for (i, a) in labels.iter().enumerate() {
        for b in &labels[i + 1..] {
            let same_row = (a.1 - b.1).abs() < a.3.max(b.3);
            let apart = a.0 .1 <= b.0 .0 || b.0 .1 <= a.0 .0;
            assert!(!same_row || apart, "{:?} overprints {:?}", a.2, b.2);
        }
    }

    // The same input writes the same bytes; writing again over NEXT keeps one header and one
    // comment per line.
    let (again, _, _) = write_plan(dir.path(), &csv, &[]);
    assert_eq!(again, next);
    std::fs::copy(&next_path, dir.path().join("plan.toml")).expect("copy");
    let (twice, _, _) = write_plan(dir.path(), &csv, &[]);
    assert_eq!(
        twice.matches("# gpuplan review: next quarter").count(),
        1,
        "{twice}"
    );
    let l = line(&twice, "chat", "replicas").expect("chat");
    assert_eq!(l.matches("# gpuplan review").count(), 1, "{l}");
    assert!(l.contains("# HPA bounds"), "{l}");
}

/// Backtest: for several known trends and quarters, the projection lands on the truth.
#[test]
fn the_projection_recovers_a_known_trend() {
    // (start, slope per day, horizon in days from the start): 2026-11-07 + 28 d ends in Q4,
    // so Q1 2027 ends on 2027-04-01, day 145; 2026-01-10 + 28 d ends in Q1, Q2 ends
    // 2026-07-01, day 172.
    for (start, slope, horizon) in [
        (NOV7, 0.1, 145.0),
        (NOV7, 0.5, 145.0),
        (JAN10, 0.25, 172.0),
        (JAN10, -0.05, 172.0),
    ] {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("plan.toml"), PLAN).expect("plan");
        let shapes = vec![Shape {
            namespace: "assistants",
            prefix: "chat",
            replicas: Box::new(move |day, hour| {
                ((6.0 + slope * day) * diurnal(hour)).round().max(1.0) as usize
            }),
            busy: 0.6,
        }];
        let csv = history(dir.path(), start, 28, 600, &shapes);
        let (_, _, json) = write_plan(dir.path(), &csv, &[]);
        let chat = forecast(&json, "chat");
        // A decline is held at today's level, never extrapolated (issue 42): its "truth" is
        // where the line stands at the end of the data.
        let truth = if slope < 0.0 {
            6.0 + slope * 28.0
        } else {
            6.0 + slope * horizon
        };
        let projected = chat["projected_replicas"].as_f64().expect("projected");
        assert!(
            (projected - truth).abs() <= 0.05 * truth + 0.5,
            "slope {slope}: projected {projected}, truth {truth}: {chat:#}"
        );
        let (lo, hi) = (
            chat["band_low"].as_f64().expect("lo"),
            chat["band_high"].as_f64().expect("hi"),
        );
        assert!(
            lo <= truth + 0.5 && truth - 0.5 <= hi,
            "band {lo}-{hi} misses {truth}"
        );
        // A falling workload is sized for today, not for the horizon.
        let max = chat["proposed"]["max"].as_i64().expect("max") as f64;
        let today = 6.0 + slope * 28.0;
        assert!(max >= today.max(truth), "max {max} below {today} / {truth}");
    }
}

/// A service launched halfway through the window at a steady four replicas has no trend: the
/// days before it ran are not its history (fitted from day 0, its step reads as growth).
#[test]
fn a_launch_mid_window_is_not_a_trend() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("plan.toml"), PLAN).expect("plan");
    // the fleet's steady embeddings, so the window is covered from its first day
    let mut shapes: Vec<Shape> = fleet(0.0)
        .into_iter()
        .filter(|s| s.prefix == "embed")
        .collect();
    shapes.push(Shape {
        namespace: "assistants",
        prefix: "chat",
        replicas: Box::new(|day, _| if day >= 14.0 { 4 } else { 0 }),
        busy: 0.6,
    });
    let csv = history(dir.path(), NOV7, 28, 600, &shapes);
    let (_, _, json) = write_plan(dir.path(), &csv, &[]);
    let chat = forecast(&json, "chat");
    assert_eq!(chat["trend"]["used"], false, "{chat:#}");
    assert_eq!(chat["proposed"]["max"], 5, "{chat:#}");
    // 10-minute samples at the default 4-minute step leave gaps of 2 and 3 windows: each
    // sample still stands for its 10 minutes (it read 20% short when a gap of 3 ended a run).
    let search = json["teams"]
        .as_array()
        .expect("teams")
        .iter()
        .find(|t| t["team"] == "search")
        .expect("search");
    let alloc = search["allocated_gpu_seconds"].as_f64().expect("alloc");
    let truth = 4.0 * 28.0 * 86_400.0;
    assert!(
        (alloc - truth).abs() / truth < 0.02,
        "{alloc} against {truth}"
    );
    assert_eq!(json["window"]["step_seconds"], 240);
}

#[test]
fn too_little_data_writes_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("plan.toml"), PLAN).expect("plan");
    let csv = history(dir.path(), NOV7, 5, 600, &fleet(0.25));
    let next = dir.path().join("next.toml");
    std::fs::write(&next, "keep me\n").expect("next");
    gpuplan()
        .arg("review")
        .arg(dir.path().join("plan.toml"))
        .arg("--csv")
        .arg(&csv)
        .arg("--write-plan")
        .arg(&next)
        .assert()
        .failure()
        .stderr(predicates::str::contains("at least 7 covered days"));
    assert_eq!(std::fs::read_to_string(&next).expect("read"), "keep me\n");
}

/// The notebooks run on a declared dedicated pool: a MIG slice there is a workload whose
/// sharing differs from its pool's, which check refuses (GP027). So the idle workload is
/// consolidated instead, and the user is told why.
#[test]
fn a_right_size_check_refuses_is_not_taken() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = format!(
        "{PLAN}\n[[pool]]\nname = \"notebooks\"\nsku = \"Standard_NC24ads_A100_v4\"\nregion = \"eastus\"\nnodes = 2\ncapacity = \"on-demand\"\nsharing = \"dedicated\"\nworkloads = [\"notebook\"]\n"
    );
    std::fs::write(dir.path().join("plan.toml"), &plan).expect("plan");
    let shapes: Vec<Shape> = fleet(0.0)
        .into_iter()
        .filter(|s| s.prefix == "notebook")
        .collect();
    let csv = history(dir.path(), NOV7, 14, 600, &shapes);
    let (next, stderr, json) = write_plan(dir.path(), &csv, &["--headroom", "0"]);
    assert!(!next.contains("sharing = \"mig\""), "{next}");
    assert!(
        stderr.contains("the right-size was not taken (check would report GP027"),
        "{stderr}"
    );
    // Issue 61: one story per run. The report's row is what the plan says (the count
    // without the slice), the refused slice kept beside it.
    let notebook = forecast(&json, "notebook");
    assert_eq!(notebook["written"], "without_right_size", "{notebook:#}");
    assert_eq!(notebook["not_written"]["sharing"], "mig", "{notebook:#}");
    assert_eq!(notebook["proposed"]["sharing"], serde_json::Value::Null);
    assert_eq!(notebook["proposed"]["max"], 1, "{notebook:#}");
    // Two pods 1% busy are the work of 0.02 GPU: one replica at 50% holds it.
    assert_eq!(
        line(&next, "notebook", "replicas").map(|l| &l[..12]),
        Some("replicas = 1")
    );
    gpuplan()
        .arg("check")
        .arg(dir.path().join("next.toml"))
        .assert()
        .success();
}

/// The same 28 days as OpenMetrics with stock label sets (kube-state-metrics, and
/// dcgm-exporter behind kube-prometheus-stack), one node per pod, scraped every 10 minutes.
pub(crate) fn openmetrics(start: i64, days: i64, shapes: &[Shape]) -> String {
    const STEP: i64 = 600;
    let ksm = "job=\"kube-state-metrics\",instance=\"10.244.0.9:8080\",service=\"kube-prometheus-stack-kube-state-metrics\",endpoint=\"http\"";
    let mut phase = String::from("# TYPE kube_pod_status_phase gauge\n");
    let mut req = String::from("# TYPE kube_pod_container_resource_requests gauge\n");
    let mut dcgm = String::from("# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n");
    // Series by series (OpenMetrics keeps a series' samples in time order).
    for sh in shapes {
        for i in 0..64 {
            let (pod, node) = (
                format!("{}-{i}", sh.prefix),
                format!("node-{}-{i}", sh.prefix),
            );
            let mut k = 0;
            let mut any = false;
            let (mut p, mut r, mut d) = (String::new(), String::new(), String::new());
            while k * STEP < days * 86_400 {
                let t = start + k * STEP;
                let day = (k * STEP) as f64 / 86_400.0;
                let hour = ((t % 86_400) as f64) / 3600.0;
                if i < (sh.replicas)(day, hour) {
                    any = true;
                    let _ = writeln!(p, "kube_pod_status_phase{{namespace=\"{}\",pod=\"{pod}\",uid=\"u-{pod}\",phase=\"Running\",{ksm}}} 1 {t}", sh.namespace);
                    let _ = writeln!(r, "kube_pod_container_resource_requests{{namespace=\"{}\",pod=\"{pod}\",uid=\"u-{pod}\",container=\"main\",node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{ksm}}} 1 {t}", sh.namespace);
                    let _ = writeln!(d, "DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu=\"0\",UUID=\"GPU-{node}\",modelName=\"NVIDIA A100 80GB PCIe\",Hostname=\"{node}\",exported_namespace=\"{}\",exported_pod=\"{pod}\",exported_container=\"main\",job=\"nvidia-dcgm-exporter\",instance=\"{node}:9400\",namespace=\"gpu-operator\",pod=\"nvidia-dcgm-exporter-{i}\",container=\"nvidia-dcgm-exporter\"}} {} {}", sh.namespace, sh.busy, t + 3);
                }
                k += 1;
            }
            if !any {
                break;
            }
            phase.push_str(&p);
            req.push_str(&r);
            dcgm.push_str(&d);
        }
    }
    format!("{phase}{req}{dcgm}# EOF\n")
}

/// Through a real Prometheus and through the file, the same 28 days write the same NEXT.
#[test]
#[ignore = "needs Debian's prometheus package; .ci/run installs it and runs this test"]
fn a_real_prometheus_writes_the_same_next_quarter() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("plan.toml"), PLAN).expect("plan");
    let om = dir.path().join("fleet.om");
    std::fs::write(&om, openmetrics(NOV7, 28, &fleet(0.25))).expect("om");
    let (_server, url) = common::prometheus::start(dir.path(), &om);
    let window = [
        "--from",
        "2026-11-07T00:00:00Z",
        "--to",
        "2026-12-05T00:00:00Z",
        "--step",
        "600s",
    ];
    let run = |source: &[&str], next: &str| -> (String, serde_json::Value) {
        let out = gpuplan()
            .arg("review")
            .arg(dir.path().join("plan.toml"))
            .args(source)
            .args(window)
            .args(["--format", "json", "--write-plan"])
            .arg(dir.path().join(next))
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            std::fs::read_to_string(dir.path().join(next)).expect("next"),
            crate::common::contract(&out.stdout).expect("json"),
        )
    };
    let (from_server, v) = run(&["--prometheus", &url], "server.toml");
    let (from_file, w) = run(&["--metrics", om.to_str().expect("utf-8")], "file.toml");
    assert_eq!(from_server, from_file);
    common::prometheus::assert_close(&v["next_quarter"], &w["next_quarter"], "next_quarter");
    let chat = forecast(&v, "chat");
    let projected = chat["projected_replicas"].as_f64().expect("projected");
    assert!((projected - 39.25).abs() / 39.25 < 0.05, "{chat:#}");
    assert_eq!(forecast(&v, "embed")["proposed"]["max"], 5);
    assert_eq!(forecast(&v, "notebook")["proposed"]["max"], 2);
    gpuplan()
        .arg("check")
        .arg(dir.path().join("server.toml"))
        .assert()
        .success();
}

/// Declared pools follow their workloads: one whose workloads outgrow it is raised, one
/// whose workloads shrank (every one measured, on-demand) is lowered; where a raise check
/// refuses (the plan's quota) neither the pool nor its workload is raised (issue 56: the
/// workload was raised past its pool, and one pod of it never landed), and the user is told
/// why.
#[test]
fn declared_pools_follow_their_workloads_within_check() {
    let dir = tempfile::tempdir().expect("tmp");
    let serve_pool = "\n[[pool]]\nname = \"serve\"\nsku = \"Standard_NC24ads_A100_v4\"\nregion = \"eastus\"\nnodes = { min = 2, max = 40 }\nworkloads = [\"chat\"]\n";
    let embeds_pool = "\n[[pool]]\nname = \"embeds\"\nsku = \"Standard_NC24ads_A100_v4\"\nregion = \"eastus\"\nnodes = { min = 1, max = 12 }   # sized for the launch\nworkloads = [\"embed\"]\n";
    let run = |pools: &str, quota: &str| {
        std::fs::write(
            dir.path().join("plan.toml"),
            format!("{PLAN}{pools}{quota}"),
        )
        .expect("plan");
        gpuplan()
            .arg("check")
            .arg(dir.path().join("plan.toml"))
            .assert()
            .success();
        let csv = history(dir.path(), NOV7, 28, 300, &fleet(0.25));
        let (next, stderr, _) = write_plan(dir.path(), &csv, &[]);
        gpuplan()
            .arg("check")
            .arg(dir.path().join("next.toml"))
            .assert()
            .success();
        (next, stderr)
    };
    let pool_nodes = |next: &str, pool: &str| {
        line(next, pool, "nodes")
            .unwrap_or_else(|| panic!("{pool}: {next}"))
            .to_owned()
    };
    // chat at max 46 x 1 GPU needs 46 one-GPU nodes; embed at max 5 needs 5 of the 12.
    let (next, _) = run(&format!("{serve_pool}{embeds_pool}"), "");
    let serve = pool_nodes(&next, "serve");
    assert!(
        serve.starts_with("nodes = { min = 2, max = 46 }"),
        "{serve}"
    );
    assert!(serve.contains("was { min = 2, max = 40 }"), "{serve}");
    assert!(
        line(&next, "chat", "replicas").is_some_and(|l| l.contains("max = 46")),
        "{next}"
    );
    let embeds = pool_nodes(&next, "embeds");
    assert!(
        embeds
            .starts_with("nodes = { min = 1, max = 5 }   # sized for the launch  # gpuplan review"),
        "{embeds}"
    );
    // 1,000 vCPUs of A100 quota hold serve's 40 nodes of 24 vCPUs, not 46: neither the pool's
    // raise nor chat's is written (chat's pool could not hold it); the rest is.
    let (next, stderr) = run(
        serve_pool,
        "\n[[quota]]\nregion = \"eastus\"\nfamily = \"standardNCADSA100v4Family\"\nvcpus = 1000\n",
    );
    assert_eq!(pool_nodes(&next, "serve"), "nodes = { min = 2, max = 40 }");
    assert_eq!(
        line(&next, "chat", "replicas"),
        Some("replicas = { min = 2, max = 40 }   # HPA bounds"),
        "{next}"
    );
    assert!(
        stderr.contains("pool `serve` was left at its size") && stderr.contains("GP014"),
        "{stderr}"
    );
    assert!(
        stderr.contains("workload `chat` was left at its replicas as written: its pool `serve`"),
        "{stderr}"
    );
}

/// [`PLAN`] in two regions, `chat` on a pool in each, of at most `max` nodes.
pub(crate) fn chat_in_two_regions(max: i64) -> String {
    let pool = |name: &str, region: &str| {
        format!(
            "\n[[pool]]\nname = \"{name}\"\nsku = \"Standard_NC24ads_A100_v4\"\nregion = \"{region}\"\nnodes = {{ min = 1, max = {max} }}\nworkloads = [\"chat\"]\n"
        )
    };
    PLAN.replace(
        "regions = [\"eastus\"]",
        "regions = [\"eastus\", \"westus3\"]",
    ) + &pool("chat-east", "eastus")
        + &pool("chat-west", "westus3")
}

/// An [`openmetrics`] history as one cluster of a multi-cluster store exports it: every
/// series labelled `cluster`.
pub(crate) fn in_cluster(om: &str, cluster: &str) -> String {
    om.replace(
        "{namespace=",
        &format!("{{cluster=\"{cluster}\",namespace="),
    )
    .replace("{gpu=", &format!("{{cluster=\"{cluster}\",gpu="))
}

/// Issue 42: `--write-plan` with `--cluster` rewrote fleet-wide keys from one cluster's pods
/// (a workload on pools in two regions became `{min 8, max 118}` from one cluster and
/// `{min 10, max 12}` from the other, with nothing said). A workload whose pools span regions
/// is left as written from one cluster, with the reason; one cluster's own workloads are
/// still proposed.
#[test]
fn one_cluster_never_rewrites_a_workload_that_spans_regions() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = chat_in_two_regions(40)
        + r#"
[[pool]]
name = "search-east"
sku = "Standard_NC24ads_A100_v4"
region = "eastus"
nodes = { min = 1, max = 20 }
workloads = ["embed", "rerank"]
"#;
    std::fs::write(dir.path().join("plan.toml"), &plan).expect("plan");
    let om = dir.path().join("east.om");
    let text = in_cluster(&openmetrics(NOV7, 28, &fleet(0.25)), "east");
    std::fs::write(&om, text).expect("om");
    let next = dir.path().join("next.toml");
    let out = gpuplan()
        .arg("review")
        .arg(dir.path().join("plan.toml"))
        .arg("--metrics")
        .arg(&om)
        .args(["--cluster", "east", "--format", "json", "--write-plan"])
        .arg(&next)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let written = std::fs::read_to_string(&next).expect("next");
    // Issue 61: the report's row says what the plan says, the forecast's proposal beside it.
    let v = crate::common::contract(&out.stdout).expect("json");
    let chat = forecast(&v, "chat");
    assert_eq!(chat["written"], "left_as_written", "{chat:#}");
    assert_eq!(
        (
            chat["proposed"]["min"].as_i64(),
            chat["proposed"]["max"].as_i64()
        ),
        (Some(2), Some(40)),
        "{chat:#}"
    );
    assert!(chat["not_written"]["max"].as_i64().is_some(), "{chat:#}");
    assert_eq!(
        line(&written, "chat", "replicas"),
        Some("replicas = { min = 2, max = 40 }   # HPA bounds"),
        "{written}"
    );
    assert!(
        stderr.contains("`chat` was left as written: its pools are in eastus and westus3"),
        "{stderr}"
    );
    assert!(
        line(&written, "embed", "replicas").is_some_and(|l| l.contains("gpuplan review")),
        "a workload of this cluster alone is still proposed: {written}"
    );
}

/// Issue 42: a shrinking autoscaled workload (24 -> 12 replicas) became a fixed
/// `replicas = 13`, above today's 12, with a band printed "0.0-0.0". A decline is held at
/// today's level, never extrapolated to zero; a range stays a range; its min is never above
/// what it holds today.
#[test]
fn a_shrinking_autoscaled_workload_stays_a_range_at_todays_level() {
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("plan.toml"), PLAN).expect("plan");
    let shrink = vec![Shape {
        namespace: "assistants",
        prefix: "chat",
        replicas: Box::new(|day, _| (24.0 - 12.0 * day / 27.0).round().max(12.0) as usize),
        busy: 0.6,
    }];
    let csv = history(dir.path(), NOV7, 28, 300, &shrink);
    let (next, _, json) = write_plan(dir.path(), &csv, &[]);
    let chat = forecast(&json, "chat");
    let proposed = &chat["proposed"];
    assert_eq!(proposed["fixed"], false, "{chat:#}");
    let (min, max) = (
        proposed["min"].as_i64().expect("min"),
        proposed["max"].as_i64().expect("max"),
    );
    assert!(min <= 12, "min above today's 12: {chat:#}");
    assert!(
        (12..=14).contains(&max),
        "max at today's level with headroom: {chat:#}"
    );
    let (low, high) = (
        chat["band_low"].as_f64().expect("low"),
        chat["band_high"].as_f64().expect("high"),
    );
    assert!(
        low > 5.0 && high < 20.0,
        "a band around today's level: {chat:#}"
    );
    let figures = chat["figures"].as_str().expect("figures");
    assert!(
        figures.contains("declining") && !figures.contains("0.0-0.0"),
        "{figures}"
    );
    let l = line(&next, "chat", "replicas").expect("chat replicas");
    assert!(l.starts_with("replicas = { min = "), "{l}");
}

/// Issue 72 item 5: a steady workload within noise of its consolidation target holds still.
/// Exactly 3 replicas, each busy `busy` of a GPU, for 28 days, behind an autoscaler of 1 to 4;
/// the next plan reviewed again on the same usage gives the same `replicas.max`, whichever side
/// of the 50% target the reading falls. It flipped 3 -> 4 -> 4 -> 3 -> 4 when the consolidated
/// count (capped at what it held) and the flat one (held plus headroom) disagreed at the target.
#[test]
fn a_steady_workload_at_its_target_holds_still_over_quarters() {
    let plan = "version = 1\n\n[plan]\nname = \"steady\"\nowner = \"platform\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n[[workload]]\nname = \"embed\"\nteam = \"search\"\nkind = \"inference\"\nreplicas = { min = 1, max = 4 }\ngpu_memory_gib = 20\nskus = [\"Standard_NC24ads_A100_v4\"]\n";
    let mut maxima = Vec::new();
    for busy in [0.49991, 0.49997, 0.5, 0.50004] {
        let dir = tempfile::tempdir().expect("tmp");
        std::fs::write(dir.path().join("plan.toml"), plan).expect("plan");
        let shapes = |busy: f64| {
            vec![Shape {
                namespace: "search",
                prefix: "embed",
                replicas: Box::new(|_, _| 3),
                busy,
            }]
        };
        let csv = history(dir.path(), NOV7, 28, 300, &shapes(busy));
        let mut seen = Vec::new();
        for _quarter in 0..3 {
            let (next, _, _) = write_plan(dir.path(), &csv, &[]);
            let l = line(&next, "embed", "replicas")
                .expect("embed replicas")
                .to_owned();
            seen.push(l);
            std::fs::write(dir.path().join("plan.toml"), next).expect("next becomes the plan");
        }
        assert!(
            seen.windows(2).all(|w| w[0] == w[1]),
            "busy {busy}: {seen:?}"
        );
        maxima.push(seen[0].clone());
    }
    assert!(maxima.windows(2).all(|w| w[0] == w[1]), "{maxima:?}");
}

/// Issue 72 item 9: a pool is never lowered below the availability floor of the user-facing
/// work it holds, counted at that work's proposed replicas: a service planned at one replica
/// that ran three (proposed at four) on a pool of 4-GPU nodes needs one node by GPUs, and two
/// by its floor. Its
/// pool was lowered to one node (the floor read at the old maximum of 1), and `check NEXT`
/// then warned GP033, which the input plan did not.
#[test]
fn a_pool_keeps_the_availability_floor_of_the_replicas_proposed() {
    let plan = "version = 1\n\n[plan]\nname = \"floor\"\nowner = \"platform\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n[[workload]]\nname = \"chat\"\nteam = \"assistants\"\nkind = \"inference\"\nuser_facing = true\nreplicas = { min = 1, max = 1 }\ngpu_memory_gib = 40\nskus = [\"Standard_NC96ads_A100_v4\"]\n\n[[pool]]\nname = \"chat\"\nsku = \"Standard_NC96ads_A100_v4\"\nregion = \"eastus\"\nnodes = { min = 1, max = 6 }\nworkloads = [\"chat\"]\n";
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("plan.toml"), plan).expect("plan");
    let shapes = vec![Shape {
        namespace: "assistants",
        prefix: "chat",
        replicas: Box::new(|_, _| 3),
        busy: 0.7,
    }];
    let csv = history(dir.path(), NOV7, 28, 300, &shapes);
    let (next, _, _) = write_plan(dir.path(), &csv, &[]);
    let pool = next.find("[[pool]]").map(|i| &next[i..]).expect("pool");
    let nodes = pool
        .lines()
        .find(|l| l.starts_with("nodes ="))
        .expect("nodes");
    let max: i64 = nodes
        .split("max = ")
        .nth(1)
        .or_else(|| nodes.strip_prefix("nodes = "))
        .and_then(|s| s.trim_end_matches([' ', '}']).split_whitespace().next())
        .and_then(|s| s.trim_end_matches([',', '}']).parse().ok())
        .expect("a node count");
    assert!(max >= 2, "{nodes}\n{next}");
    assert!(
        nodes.contains("= 1 node(s) of 4; 2 to keep the availability floor"),
        "{nodes}"
    );
    let p = dir.path().join("next.toml");
    let out = gpuplan()
        .args(["check", "--format", "json"])
        .arg(&p)
        .output()
        .expect("check");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("GP033"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The figure a next plan prices a workload at, per month: `hours_per_month` (the plan's
/// month without one) x `typical_replicas` (its `max` without one).
fn replica_hours_priced(next: &str, workload: &str) -> f64 {
    let value = |key: &str| {
        line(next, workload, key).map(|l| {
            let v = l.split('=').nth(1).expect("value");
            let v = v.split('#').next().expect("value").trim();
            v.parse::<f64>().expect("number")
        })
    };
    let max = line(next, workload, "replicas")
        .and_then(|l| l.split("max = ").nth(1))
        .and_then(|v| v.split([' ', '}']).next())
        .and_then(|v| v.parse::<f64>().ok())
        .expect("replicas max");
    value("hours_per_month").unwrap_or(730.0) * value("typical_replicas").unwrap_or(max)
}

/// 2026-11-02T00:00:00Z, a Monday.
const NOV2: i64 = 1_793_577_600;

/// Issue 72 items 1 and 3: a nightly job (4 pods, 01:20-03:20) was written `hours_per_month =
/// 61` and `typical_replicas = 2.67` (a mean over the hour buckets each night touches), so the
/// next plan priced 163 of the 243 replica-hours a month it ran. Hours x typical replicas is
/// now what ran, the comment names that figure, and reviewing the next plan on the same usage
/// gives the same plan.
#[test]
fn a_nightly_job_is_priced_at_the_replica_hours_it_ran() {
    let plan = "version = 1\n\n[plan]\nname = \"batch\"\nowner = \"platform\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n[[workload]]\nname = \"api\"\nteam = \"search\"\nkind = \"inference\"\nreplicas = 1\ngpu_memory_gib = 20\nskus = [\"Standard_NC24ads_A100_v4\"]\n\n[[workload]]\nname = \"nightly\"\nteam = \"research\"\nkind = \"batch\"\nreplicas = { min = 0, max = 4 }\ninterruptible = true\ncheckpoint_minutes = 30\ngpu_memory_gib = 20\nskus = [\"Standard_NC24ads_A100_v4\"]\n";
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("plan.toml"), plan).expect("plan");
    let shapes = vec![
        Shape {
            namespace: "search",
            prefix: "api",
            replicas: Box::new(|_, _| 1),
            busy: 0.6,
        },
        Shape {
            namespace: "research",
            prefix: "nightly",
            replicas: Box::new(|_, hour| {
                if (1.0 + 20.0 / 60.0..3.0 + 20.0 / 60.0).contains(&hour) {
                    4
                } else {
                    0
                }
            }),
            busy: 0.9,
        },
    ];
    let csv = history(dir.path(), NOV2, 14, 60, &shapes);
    // 4 replicas x 2 h a night, over a 730-h month.
    let truth = 4.0 * 2.0 * 730.0 / 24.0;
    let mut written = Vec::new();
    for _quarter in 0..3 {
        let (next, _, _) = write_plan(dir.path(), &csv, &[]);
        let priced = replica_hours_priced(&next, "nightly");
        assert!(
            (priced / truth - 1.0).abs() < 0.02,
            "priced {priced} replica-hours a month against {truth} that ran:\n{next}"
        );
        if let Some(l) = line(&next, "nightly", "typical_replicas") {
            typical_says_its_value(l);
        }
        let nightly: Vec<&str> = ["replicas", "typical_replicas", "hours_per_month"]
            .iter()
            .filter_map(|k| line(&next, "nightly", k))
            .map(|l| l.split('#').next().unwrap_or(l).trim())
            .collect();
        written.push(nightly.join("; "));
        std::fs::write(dir.path().join("plan.toml"), &next).expect("next becomes the plan");
    }
    assert_eq!(written[1], written[2], "{written:?}");
}

/// Issue 72 item 4: notebooks on weekdays 08:00-20:00, read from a CSV over two weeks asked
/// for from Monday 00:00: the rows start Monday 08:00 and end Friday 20:00, and the hours
/// outside them are hours nothing ran, not hours without data (60 of 168 hours, not 120 of
/// 276).
#[test]
fn weekday_notebooks_run_the_hours_of_the_window_asked_for() {
    let plan = "version = 1\n\n[plan]\nname = \"weekdays\"\nowner = \"platform\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[[workload]]\nname = \"notebook\"\nteam = \"research\"\nkind = \"notebook\"\nreplicas = { min = 0, max = 1 }\ngpu_memory_gib = 8\nskus = [\"g4dn.2xlarge\"]\n";
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("plan.toml"), plan).expect("plan");
    let shapes = vec![Shape {
        namespace: "research",
        prefix: "notebook",
        replicas: Box::new(|day, hour| {
            usize::from((day.floor() as i64) % 7 < 5 && (8.0..20.0).contains(&hour))
        }),
        busy: 0.3,
    }];
    let csv = history(dir.path(), NOV2, 14, 60, &shapes);
    let (next, _, json) = write_plan(
        dir.path(),
        &csv,
        &[
            "--from",
            "2026-11-02T00:00:00Z",
            "--to",
            "2026-11-16T00:00:00Z",
        ],
    );
    let hours = forecast(&json, "notebook")["hours_per_month"]
        .as_f64()
        .expect("hours");
    let truth = 60.0 / 168.0 * 730.0;
    assert!(
        (hours / truth - 1.0).abs() < 0.01,
        "{hours} against {truth}"
    );
    assert!(
        (replica_hours_priced(&next, "notebook") / truth - 1.0).abs() < 0.01,
        "{next}"
    );
}

/// A `typical_replicas` line's comment names the value it annotates: the figure measured
/// where nothing changed it, else the product it states (`= VALUE`).
pub(crate) fn typical_says_its_value(l: &str) {
    let (value, comment) = l.split_once('#').expect("commented");
    let v: f64 = value
        .split('=')
        .nth(1)
        .and_then(|v| v.trim().parse().ok())
        .expect("value");
    let said = comment
        .split_once("; the expected cost")
        .map_or(comment, |(s, _)| s);
    let stated = said
        .rsplit_once(" = ")
        .or_else(|| said.split_once("measured: "))
        .and_then(|(_, rest)| rest.split([' ', ';']).next())
        .and_then(|x| x.parse::<f64>().ok())
        .expect("a figure");
    assert!((stated - v).abs() < 0.005, "{l}");
}

/// Each `<text>` of an SVG as ((left, right), baseline, content, font size), its width
/// estimated at 0.6 em a character and placed by its `text-anchor`.
fn svg_text_boxes(svg: &str) -> Vec<((f64, f64), f64, String, f64)> {
    let attr = |tag: &str, name: &str| -> Option<String> {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        Some(tag[at..at + tag[at..].find('"')?].to_owned())
    };
    let mut out = Vec::new();
    for piece in svg.split("<text").skip(1) {
        let Some((tag, rest)) = piece.split_once('>') else {
            continue;
        };
        let content = rest.split("</text>").next().unwrap_or("").to_owned();
        let num = |n: &str| {
            attr(tag, n)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        let (x, y, size) = (num("x"), num("y"), num("font-size").max(1.0));
        let width = 0.6 * size * content.chars().count() as f64;
        let left = match attr(tag, "text-anchor").as_deref() {
            Some("end") => x - width,
            Some("middle") => x - width / 2.0,
            _ => x,
        };
        out.push(((left, left + width), y, content, size));
    }
    out
}
