//! `cargo bench --bench review`: reviews of 1,000 GPUs (1,000 one-GPU pods in ten teams,
//! hourly samples) over 90 days, from an OpenMetrics file and from a local Prometheus
//! (Debian's package) loaded with promtool; and the first week from the same server.
//! promtool 2.42 re-reads its whole input for every two-hour block it writes, so one 90-day
//! file (1,080 blocks) would take over an hour to load; fed one day at a time (12 blocks a
//! file) it takes about a minute. Baseline, measured in the same run: parsing the 90 days of
//! samples from text in-process. Needs `prometheus` and `promtool` on PATH.

use std::fmt::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PODS: usize = 1000;
const TEAMS: usize = 10;
const STEP: i64 = 3600;
const DAYS: i64 = 90;
const WEEK: i64 = 7;
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
    openmetrics_points(0..points, points)
}

/// Samples `range` of a fleet history `points` long (the stalled week is its last).
fn openmetrics_points(range: std::ops::Range<i64>, points: i64) -> String {
    let mut s = String::with_capacity(PODS * (range.end - range.start) as usize * 2 * 150);
    s.push_str("# TYPE kube_pod_container_resource_requests gauge\n");
    for p in 0..PODS {
        let (w, team) = (p / 10, (p / 10) % TEAMS);
        for i in range.clone() {
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
        for i in range.clone() {
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

    // One file a day, two promtool runs at a time (two cores).
    let points = DAYS * 86_400 / STEP;
    let per_day = 86_400 / STEP;
    let t = Instant::now();
    let days: Vec<i64> = (0..DAYS).collect();
    std::thread::scope(|sc| {
        for half in days.chunks((DAYS as usize).div_ceil(2)) {
            let dir = &dir;
            sc.spawn(move || {
                for &d in half {
                    let f = dir.join(format!("day-{d}.om"));
                    std::fs::write(
                        &f,
                        openmetrics_points(d * per_day..(d + 1) * per_day, points),
                    )
                    .expect("write");
                    let out = Command::new("promtool")
                        .args(["tsdb", "create-blocks-from", "openmetrics", "--quiet"])
                        .arg(&f)
                        .arg(dir.join("data"))
                        .output()
                        .expect("promtool (Debian package prometheus)");
                    assert!(
                        out.status.success(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    let _ = std::fs::remove_file(&f);
                }
            });
        }
    });
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
    // Killed however the bench ends, so a failed run leaves no server behind.
    struct Server(std::process::Child);
    impl Drop for Server {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let server = Command::new("prometheus")
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
        .map(Server)
        .expect("prometheus");
    let url = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(120);
    while ureq::get(&format!("{url}/-/ready")).call().is_err() {
        assert!(Instant::now() < deadline, "prometheus not ready");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The server reads 1,080 two-hour blocks for the 90 days: give each query time.
    let run = |to: &str| {
        review_process(
            &[
                "--prometheus",
                &url,
                "--timeout",
                "900",
                "--step",
                "1h",
                "--from",
                "2026-06-01T00:00:00Z",
                "--to",
                to,
            ],
            &plan_path,
        )
    };
    // 90 days from 2026-06-01, and the first week.
    let (full, full_rss, full_v) = run("2026-08-30T00:00:00Z");
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..3 {
        let (d, rss, v) = run("2026-06-08T00:00:00Z");
        times.push(d);
        last = Some((rss, v));
    }
    times.sort();
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    let (rss, v) = last.expect("ran");
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let x = |d: Duration| d.as_secs_f64() / baseline.as_secs_f64();
    let alloc = |v: &serde_json::Value| {
        v["teams"].as_array().map_or(0.0, |t| {
            t.iter()
                .filter_map(|x| x["allocated_gpu_seconds"].as_f64())
                .sum::<f64>()
        })
    };
    println!(
        "== review of {PODS} GPUs, hourly: {DAYS} days = {samples} samples ({} pods parsed); Prometheus {DAYS} days: {} workloads, {} stalled, {:.0} GPU-hours allocated; first week: {} stalled",
        parsed.pods.len(),
        full_v["workloads"].as_array().map_or(0, Vec::len),
        full_v["stalled"].as_array().map_or(0, Vec::len),
        alloc(&full_v) / 3600.0,
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
        "load      promtool, {DAYS} days, a day a file {:9.1} ms {:8.2}x",
        ms(load),
        x(load)
    );
    println!(
        "review    --prometheus, {DAYS} days          {:9.1} ms {:8.2}x  ({full_rss})",
        ms(full),
        x(full)
    );
    println!(
        "review    --prometheus, {WEEK} days           {:9.1} ms {:8.2}x  (median of 3; {rss})",
        ms(times[1]),
        x(times[1])
    );
}
