//! `cargo bench --bench review`: reviews of 1,000 GPUs (1,000 one-GPU pods in ten teams,
//! hourly samples): 90 days from an OpenMetrics file, and 7 days from a local Prometheus
//! (Debian's package) loaded with promtool. promtool 2.42 re-reads its input for every
//! two-hour block, so loading 90 days (1,080 blocks) takes over an hour; the Prometheus run
//! uses the last week of the same fleet. Baseline, measured in the same run: parsing the
//! 90 days of samples from text in-process. Needs `prometheus` and `promtool` on PATH.

use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PODS: usize = 1000;
const TEAMS: usize = 10;
const STEP: i64 = 3600;
const DAYS: i64 = 90;
const PROMETHEUS_DAYS: i64 = 7;
/// 2026-06-01T00:00:00Z
const START: i64 = 1_780_272_000;

fn plan() -> String {
    let mut s = String::from("version = 1\n[plan]\nname = \"fleet\"\nowner = \"bench\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n");
    for w in 0..100 {
        let _ = write!(
            s,
            "\n[[workload]]\nname = \"svc-{w:02}\"\nteam = \"team-{}\"\nkind = \"inference\"\nreplicas = 10\nutilization = 0.5\nskus = [\"Standard_NC24ads_A100_v4\"]\n",
            w % TEAMS
        );
    }
    s
}

fn openmetrics(days: i64) -> String {
    let points = days * 86_400 / STEP;
    let mut s = String::with_capacity(PODS * points as usize * 2 * 150);
    s.push_str("# TYPE kube_pod_container_resource_requests gauge\n");
    for p in 0..PODS {
        let (w, team) = (p / 10, (p / 10) % TEAMS);
        for i in 0..points {
            let _ = writeln!(
                s,
                "kube_pod_container_resource_requests{{namespace=\"team-{team}\",pod=\"svc-{w:02}-{p}\",resource=\"nvidia_com_gpu\"}} 1 {}",
                START + i * STEP
            );
        }
    }
    s.push_str("# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge\n");
    for p in 0..PODS {
        let (w, team) = (p / 10, (p / 10) % TEAMS);
        for i in 0..points {
            // a daily rhythm, and every 50th pod idle for its last week (stalled)
            let busy = if p % 50 == 0 && i > points - 168 {
                0.0
            } else {
                0.1 + 0.6
                    * (((i % 24) as f64) / 24.0 * std::f64::consts::PI)
                        .sin()
                        .abs()
            };
            let _ = writeln!(
                s,
                "DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu=\"0\",exported_namespace=\"team-{team}\",exported_pod=\"svc-{w:02}-{p}\"}} {busy:.3} {}",
                START + i * STEP
            );
        }
    }
    s.push_str("# EOF\n");
    s
}

/// `gpuplan review --verbose --format json ARGS PLAN` as a process: its wall time, the
/// `resources:` line it reports (time and peak RSS) and its JSON.
fn review_process(args: &[&str], plan: &std::path::Path) -> (Duration, String, serde_json::Value) {
    let t = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
        .args(["review", "--verbose", "--format", "json"])
        .args(args)
        .arg(plan)
        .output()
        .expect("run");
    let elapsed = t.elapsed();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let rss = err
        .lines()
        .find(|l| l.starts_with("resources:"))
        .unwrap_or("")
        .to_owned();
    (
        elapsed,
        rss,
        serde_json::from_slice(&out.stdout).expect("json"),
    )
}

fn main() {
    let dir = std::env::temp_dir().join(format!("gpuplan-review-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let plan_path = dir.join("fleet.toml");
    std::fs::write(&plan_path, plan()).expect("plan");
    let t = Instant::now();
    let text = openmetrics(DAYS);
    let generate = t.elapsed();
    let om = dir.join("fleet.om");
    std::fs::write(&om, &text).expect("write");
    let samples = text.lines().filter(|l| !l.starts_with('#')).count();

    // Baseline: the same samples parsed from text in-process.
    let t = Instant::now();
    let catalog = gpuplan::catalog::Catalog::embedded(&[]).expect("catalog");
    let parsed =
        gpuplan::review::files::read_exposition("fleet.om", &text, None, &catalog).expect("parse");
    let baseline = t.elapsed();
    drop(text);

    // The whole 90 days through the file input, as a process.
    let (file_review, file_rss, _) =
        review_process(&["--metrics", om.to_str().expect("utf-8")], &plan_path);

    let week = dir.join("week.om");
    std::fs::write(&week, openmetrics(PROMETHEUS_DAYS)).expect("write");
    let t = Instant::now();
    let out = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&week)
        .arg(dir.join("data"))
        .output()
        .expect("promtool (Debian package prometheus)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let load = t.elapsed();
    std::fs::write(
        dir.join("prometheus.yml"),
        "global:\n  scrape_interval: 1m\n",
    )
    .expect("cfg");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("port");
    let mut server = Command::new("prometheus")
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg("--storage.tsdb.retention.time=100y")
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus");
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(120);
    while ureq::get(&format!("{url}/-/ready")).call().is_err() {
        assert!(Instant::now() < deadline, "prometheus not ready");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The week that was loaded.
    let run = || {
        review_process(
            &[
                "--prometheus",
                &url,
                "--step",
                "1h",
                "--from",
                "2026-06-01T00:00:00Z",
                "--to",
                "2026-06-08T00:00:00Z",
            ],
            &plan_path,
        )
    };
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..3 {
        let (d, rss, v) = run();
        times.push(d);
        last = Some((rss, v));
    }
    times.sort();
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
    let (rss, v) = last.expect("ran");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let x = |d: Duration| d.as_secs_f64() / baseline.as_secs_f64();
    println!(
        "== review of {PODS} GPUs, hourly: {DAYS} days = {samples} samples ({} pods parsed); Prometheus: {PROMETHEUS_DAYS} days, {} workloads, {} stalled",
        parsed.pods.len(),
        v["workloads"].as_array().map_or(0, Vec::len),
        v["stalled"].as_array().map_or(0, Vec::len)
    );
    println!(
        "baseline  parse the samples from text  {:9.1} ms    1.00x",
        ms(baseline)
    );
    println!(
        "generate  synthetic OpenMetrics        {:9.1} ms {:8.2}x",
        ms(generate),
        x(generate)
    );
    println!(
        "review    --metrics, {DAYS} days           {:9.1} ms {:8.2}x  ({file_rss})",
        ms(file_review),
        x(file_review)
    );
    println!(
        "load      promtool, {PROMETHEUS_DAYS} days           {:9.1} ms {:8.2}x",
        ms(load),
        x(load)
    );
    println!(
        "review    --prometheus, {PROMETHEUS_DAYS} days       {:9.1} ms {:8.2}x  (median of 3; {rss})",
        ms(times[1]),
        x(times[1])
    );
}
