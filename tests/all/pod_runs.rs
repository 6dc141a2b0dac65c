//! Issue 56: a pod name used again is a new pod. JupyterHub names a user's server
//! `jupyter-<user>` every working day, often on another node; a fixed-name Job pod is rerun on
//! the same node. Each run is its own pod: by its `uid` where kube-state-metrics exports it
//! (every pod metric of kube-state-metrics 2 carries one), else by its node and its start.
//! Before, the review took such a name for one long pod: the other runs' GPU-hours were "no
//! data" and the efficiency came out twice the truth.

use crate::common;

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

const T0: i64 = 1_788_220_800;

/// One run of a pod: its name, `uid` (empty: not exported), node, start, minutes, and how
/// busy its one GPU was.
struct Run {
    pod: &'static str,
    uid: &'static str,
    node: &'static str,
    start: i64,
    minutes: i64,
    busy: f64,
}

fn runs() -> Vec<Run> {
    let day = 86_400;
    vec![
        // Three working days of one user's server, each on the node free that morning.
        Run {
            pod: "jupyter-alice",
            uid: "a1",
            node: "node-0",
            start: T0 + 8 * 3600,
            minutes: 480,
            busy: 0.9,
        },
        Run {
            pod: "jupyter-alice",
            uid: "a2",
            node: "node-1",
            start: T0 + day + 8 * 3600,
            minutes: 480,
            busy: 0.1,
        },
        Run {
            pod: "jupyter-alice",
            uid: "a3",
            node: "node-0",
            start: T0 + 2 * day + 8 * 3600,
            minutes: 480,
            busy: 0.2,
        },
        // A fixed-name pod rerun on the same node two hours later, no `uid` exported.
        Run {
            pod: "trainer-0",
            uid: "",
            node: "node-2",
            start: T0 + 3600,
            minutes: 240,
            busy: 0.6,
        },
        Run {
            pod: "trainer-0",
            uid: "",
            node: "node-2",
            start: T0 + 7 * 3600,
            minutes: 240,
            busy: 0.0,
        },
    ]
}

/// OpenMetrics of the runs at one-minute scrapes 7 s past the minute (a scrape's offset within
/// its interval), with each node's allocatable GPUs and its dcgm-exporter reporting over the
/// whole three days (idle cards report 0).
fn openmetrics() -> String {
    let mut fam: std::collections::BTreeMap<&str, String> = Default::default();
    let mut push = |m: &'static str, line: String| {
        let e = fam.entry(m).or_default();
        e.push_str(&line);
    };
    for r in runs() {
        let uid = if r.uid.is_empty() {
            String::new()
        } else {
            format!(",uid=\"{}\"", r.uid)
        };
        for i in 0..r.minutes {
            let t = r.start + i * 60 + 7;
            push("kube_pod_container_resource_requests", format!("kube_pod_container_resource_requests{{namespace=\"lab\",pod=\"{}\"{uid},container=\"main\",node=\"{}\",resource=\"nvidia_com_gpu\",unit=\"integer\"}} 1 {t}\n", r.pod, r.node));
            push("kube_pod_status_phase", format!("kube_pod_status_phase{{namespace=\"lab\",pod=\"{}\"{uid},phase=\"Running\"}} 1 {t}\n", r.pod));
        }
    }
    for n in ["node-0", "node-1", "node-2"] {
        for i in 0..(3 * 24 * 60) {
            let t = T0 + i * 60 + 7;
            push("kube_node_status_allocatable", format!("kube_node_status_allocatable{{node=\"{n}\",resource=\"nvidia_com_gpu\",unit=\"integer\"}} 1 {t}\n"));
            let holder = runs()
                .into_iter()
                .find(|r| r.node == n && t >= r.start && t < r.start + r.minutes * 60);
            let (pod, busy) = holder.map_or(("", 0.0), |r| (r.pod, r.busy));
            let named = if pod.is_empty() {
                String::new()
            } else {
                format!(",exported_namespace=\"lab\",exported_pod=\"{pod}\"")
            };
            push("DCGM_FI_PROF_GR_ENGINE_ACTIVE", format!("DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu=\"0\",Hostname=\"{n}\",namespace=\"gpu-operator\",pod=\"dcgm\"{named}}} {busy} {t}\n"));
        }
    }
    let mut s = String::new();
    for (m, lines) in fam {
        let _ = writeln!(s, "# TYPE {m} gauge");
        // OpenMetrics wants a series' samples together, in time order.
        let mut ls: Vec<&str> = lines.lines().collect();
        ls.sort_by_key(|l| {
            let (head, t) = l.rsplit_once(' ').expect("sample");
            let (series, _) = head.rsplit_once(' ').expect("value");
            (series.to_owned(), t.parse::<i64>().expect("t"))
        });
        for l in ls {
            s.push_str(l);
            s.push('\n');
        }
    }
    s.push_str("# EOF\n");
    s
}

const PLAN: &str = r#"version = 1
[plan]
name = "lab"
owner = "o"
provider = "aws"
regions = ["us-east-1"]

[[workload]]
name = "jupyter"
team = "lab"
kind = "notebook"
gpus = 1
skus = ["g6.xlarge"]

[[workload]]
name = "trainer"
team = "lab"
kind = "batch"
gpus = 1
skus = ["g6.xlarge"]
"#;

fn review(plan: &Path, source: &[&str]) -> Value {
    let out = common::gpuplan(Path::new("/nonexistent/gpuplan-test-cache"))
        .args(["review", "--format", "json"])
        .arg(plan)
        .args(source)
        .assert()
        .code(0)
        .get_output()
        .clone();
    common::contract(&out.stdout).expect("json")
}

/// Each workload's truth: (GPU-seconds allocated, used, runs).
fn truth(prefix: &str) -> (f64, f64, u64) {
    let rs: Vec<Run> = runs()
        .into_iter()
        .filter(|r| r.pod.starts_with(prefix))
        .collect();
    let alloc: f64 = rs.iter().map(|r| r.minutes as f64 * 60.0).sum();
    let used: f64 = rs.iter().map(|r| r.minutes as f64 * 60.0 * r.busy).sum();
    (alloc, used, rs.len() as u64)
}

fn assert_truth(v: &Value, at: &str) {
    for (w, prefix) in [("jupyter", "jupyter-"), ("trainer", "trainer-")] {
        let row = v["workloads"]
            .as_array()
            .expect("workloads")
            .iter()
            .find(|r| r["workload"] == w)
            .unwrap_or_else(|| panic!("{at}: no row for {w}: {v:#}"));
        let (alloc, used, n) = truth(prefix);
        let got = |k: &str| row[k].as_f64().unwrap_or(f64::NAN);
        assert!(
            (got("allocated_gpu_seconds") - alloc).abs() <= 120.0,
            "{at} {w}: {row}"
        );
        assert!(
            (got("used_gpu_seconds") - used).abs() <= 0.01 * alloc,
            "{at} {w}: {row}"
        );
        assert!(got("no_data_gpu_seconds") <= 120.0, "{at} {w}: {row}");
        // Within two points of the truth (jupyter 40%, trainer 30%).
        assert!(
            (got("efficiency") - used / alloc).abs() <= 0.02,
            "{at} {w}: {row}"
        );
        assert_eq!(row["pods"].as_u64(), Some(n), "{at} {w}: {row}");
    }
}

#[test]
fn a_pod_name_used_again_is_a_new_pod_in_a_file() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, PLAN).expect("plan");
    let om = dir.path().join("runs.om");
    std::fs::write(&om, openmetrics()).expect("om");
    let v = review(&plan, &["--metrics", om.to_str().expect("utf-8")]);
    assert_truth(&v, "file");
}

#[test]
#[ignore = "needs Debian's prometheus and victoria-metrics packages; .ci/run installs them and runs this test"]
fn a_pod_name_used_again_is_a_new_pod_through_prometheus_and_victoria_metrics() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.toml");
    std::fs::write(&plan, PLAN).expect("plan");
    let om = dir.path().join("runs.om");
    std::fs::write(&om, openmetrics()).expect("om");
    let window = [
        "--from",
        "2026-09-01T00:00:00Z",
        "--to",
        "2026-09-04T00:00:00Z",
        "--step",
        "60s",
    ];
    let prom = dir.path().join("prom");
    std::fs::create_dir_all(&prom).expect("dir");
    let (_p, url) = common::prometheus::start(&prom, &om);
    let mut args = vec!["--prometheus", url.as_str()];
    args.extend(window);
    assert_truth(&review(&plan, &args), "prometheus");
    let vm = dir.path().join("vm");
    std::fs::create_dir_all(&vm).expect("dir");
    let (_v, url) = common::victoria::start(&vm, &om);
    let mut args = vec!["--prometheus", url.as_str()];
    args.extend(window);
    assert_truth(&review(&plan, &args), "victoria-metrics");
}

/// Issue 72 item 11: a CSV of short jobs, 1,000 pods one after another, each sampled twice 15 s
/// apart, is 1,000 x 30 s = 8.33 GPU-h. No pod lives long enough to show the interval it was
/// sampled at, and each sample was counted a whole 60-s step: 33.3 GPU-h, more than the hours
/// covered with one GPU held at a time. The CSV's own spacing is what a sample stands for,
/// alone or beside a long-running pod.
#[test]
fn short_jobs_in_a_csv_count_the_seconds_they_held() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.toml");
    std::fs::write(
        &plan,
        "version = 1\n[plan]\nname = \"short\"\nowner = \"platform\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[[workload]]\nname = \"job\"\nteam = \"research\"\nkind = \"batch\"\nreplicas = 1\ngpus = 1\nskus = [\"g6.xlarge\"]\n\n[[workload]]\nname = \"long\"\nteam = \"research\"\nkind = \"batch\"\nreplicas = 1\ngpus = 1\nskus = [\"g6.xlarge\"]\n",
    )
    .expect("plan");
    for beside_a_long_pod in [false, true] {
        let mut rows: Vec<(i64, String)> = Vec::new();
        for i in 0..1000 {
            for k in 0..2 {
                rows.push((T0 + 30 * i + 15 * k, format!("research,job-{i},1,0.5")));
            }
        }
        if beside_a_long_pod {
            for t in (T0..T0 + 30_000).step_by(15) {
                rows.push((t, "research,long-0,1,0.5".to_owned()));
            }
        }
        rows.sort();
        let mut csv = String::from("timestamp,namespace,pod,allocated_gpus,used_gpus\n");
        for (t, r) in rows {
            let _ = writeln!(csv, "{t},{r}");
        }
        let file = dir.path().join("short.csv");
        std::fs::write(&file, csv).expect("csv");
        let v = review(&plan, &["--csv", file.to_str().expect("utf-8")]);
        let row = v["workloads"]
            .as_array()
            .expect("workloads")
            .iter()
            .find(|r| r["workload"] == "job")
            .expect("job row")
            .clone();
        let alloc = row["allocated_gpu_seconds"].as_f64().expect("allocated");
        let used = row["used_gpu_seconds"].as_f64().expect("used");
        let at = format!("beside a long pod: {beside_a_long_pod}");
        assert!((alloc / 30_000.0 - 1.0).abs() < 0.02, "{at}: {row}");
        assert!((used / 15_000.0 - 1.0).abs() < 0.02, "{at}: {row}");
    }
}
