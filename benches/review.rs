//! `cargo bench --bench review`: the streaming `--metrics` reader on a file of about 4M lines
//! with stock kube-state-metrics and dcgm-exporter label sets at real scrape offsets
//! (kube-state-metrics every 30 s at +7.1 s, dcgm-exporter every 15 s at +11.8 s), against
//! `wc -l` on the same file in the same run (the floor: reading the bytes once). Reports
//! lines per second in-process, and the whole `gpuplan review` as a process with its peak
//! RSS, which must not grow with the file.
//!
//! Then the memory target: a quarter of 500 GPUs at the default step (10,800 windows), peak
//! RSS under 300 MB. `GPUPLAN_BENCH_QUARTER=GPUSxDAYS` sizes it (`off` skips it; 500x90
//! writes a 5.6 GiB file to the temporary directory, removed after).

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::Command;
use std::time::Instant;

/// 2026-06-01T00:00:00Z
const START: i64 = 1_780_272_000;

/// A plan of `workloads` inference workloads of ten one-GPU replicas.
fn plan(workloads: usize) -> String {
    let mut s = String::from("version = 1\n[plan]\nname = \"fleet\"\nowner = \"bench\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n");
    for w in 0..workloads {
        let _ = write!(
            s,
            "\n[[workload]]\nname = \"svc-{w:02}\"\nteam = \"team-{}\"\nkind = \"inference\"\nreplicas = 10\nutilization = 0.5\nskus = [\"Standard_NC24ads_A100_v4\"]\n",
            w % 5
        );
    }
    s
}

/// `pods` one-GPU pods for `hours`: ~600 lines per pod-hour, `denser` times that with every
/// scrape interval divided by it (the same series and windows, more lines).
fn write_file(path: &std::path::Path, pods: usize, hours: i64, denser: i64) -> usize {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut lines = 0;
    let end = START + hours * 3600;
    for p in 0..pods {
        let (w, team) = (p / 10, (p / 10) % 5);
        let node = format!("aks-a100-{}-vmss{:06}", p / 4, p);
        let mut t = START * 1000 + 7_100;
        while t < end * 1000 {
            for (phase, v) in [("Running", 1), ("Pending", 0)] {
                writeln!(f, "kube_pod_status_phase{{namespace=\"team-{team}\",pod=\"svc-{w:02}-{p}\",uid=\"u-{p}\",phase=\"{phase}\",container=\"kube-state-metrics\",endpoint=\"http\",instance=\"10.0.0.5:8080\",job=\"kube-state-metrics\",service=\"kube-prometheus-stack-kube-state-metrics\"}} {v} {t}").expect("write");
            }
            writeln!(f, "kube_pod_container_resource_requests{{namespace=\"team-{team}\",pod=\"svc-{w:02}-{p}\",uid=\"u-{p}\",container=\"main\",node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",endpoint=\"http\",instance=\"10.0.0.5:8080\",job=\"kube-state-metrics\",service=\"kube-prometheus-stack-kube-state-metrics\"}} 1 {t}").expect("write");
            lines += 3;
            t += 30_000 / denser;
        }
        let mut t = START * 1000 + 11_800;
        let mut i = 0u64;
        while t < end * 1000 {
            let busy = 0.1
                + 0.6
                    * (((i / (240 * denser as u64)) % 24) as f64 / 24.0 * std::f64::consts::PI)
                        .sin();
            writeln!(f, "DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu=\"0\",UUID=\"GPU-{p:08x}\",pci_bus_id=\"00000001:00:00.0\",device=\"nvidia0\",modelName=\"NVIDIA A100 80GB PCIe\",Hostname=\"{node}\",DCGM_FI_DRIVER_VERSION=\"550.54.15\",container=\"main\",namespace=\"gpu-operator\",pod=\"nvidia-dcgm-exporter-x{p}\",exported_container=\"main\",exported_namespace=\"team-{team}\",exported_pod=\"svc-{w:02}-{p}\",instance=\"10.0.1.{}:9400\",job=\"nvidia-dcgm-exporter\",service=\"nvidia-dcgm-exporter\"}} {busy:.4} {t}", p % 250).expect("write");
            lines += 1;
            i += 1;
            t += 15_000 / denser;
        }
    }
    f.flush().expect("flush");
    lines
}

/// A quarter at the default step, the review's memory target: `gpus` one-GPU pods (stock
/// label sets) over `days`, every series scraped once per window of the default step (the
/// review holds series x windows, whatever the samples per window), GPU activity different at
/// every sample as dcgm-exporter's is (a constant one would fold into runs and flatter the
/// figure).
fn write_quarter(path: &std::path::Path, gpus: usize, days: i64) -> (usize, i64) {
    let step = gpuplan::review::default_step(days * 86_400);
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut lines = 0;
    let end = START + days * 86_400;
    for p in 0..gpus {
        let (w, team) = (p / 10, (p / 10) % 5);
        let node = format!("aks-a100-{}-vmss{:06}", p / 4, p / 4);
        let pod = format!("namespace=\"team-{team}\",pod=\"svc-{w:02}-{p}\",uid=\"u-{p}\"");
        let ksm = "endpoint=\"http\",instance=\"10.0.0.5:8080\",job=\"kube-state-metrics\",service=\"kube-prometheus-stack-kube-state-metrics\"";
        let mut t = START * 1000 + 7_100;
        let mut i = 0u64;
        while t < end * 1000 {
            for (phase, v) in [("Running", 1), ("Pending", 0)] {
                writeln!(
                    f,
                    "kube_pod_status_phase{{{pod},phase=\"{phase}\",{ksm}}} {v} {t}"
                )
                .expect("write");
            }
            writeln!(f, "kube_pod_container_resource_requests{{{pod},container=\"main\",node=\"{node}\",resource=\"nvidia_com_gpu\",unit=\"integer\",{ksm}}} 1 {t}").expect("write");
            let hour = ((t / 1000 - START) / 3600) % 24;
            let noise = ((p as u64)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(i.wrapping_mul(40_503))
                % 1000) as f64
                / 1000.0;
            let busy =
                (0.1 + 0.6 * (hour as f64 / 24.0 * std::f64::consts::PI).sin() + 0.2 * noise)
                    .min(1.0);
            writeln!(f, "DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu=\"{}\",UUID=\"GPU-{p:08x}\",device=\"nvidia{}\",modelName=\"NVIDIA A100 80GB PCIe\",Hostname=\"{node}\",container=\"main\",namespace=\"gpu-operator\",pod=\"nvidia-dcgm-exporter-x{}\",exported_container=\"main\",exported_namespace=\"team-{team}\",exported_pod=\"svc-{w:02}-{p}\",instance=\"10.0.1.{}:9400\",job=\"nvidia-dcgm-exporter\"}} {busy:.4} {}", p % 4, p % 4, p / 4, p % 250, t + 4_700).expect("write");
            lines += 4;
            i += 1;
            t += step * 1000;
        }
    }
    f.flush().expect("flush");
    (lines, step)
}

/// `gpuplan review` of `file` as a process: its wall time, its `--verbose` resources line and
/// the peak RSS in it (MB).
fn review(
    plan: &std::path::Path,
    file: &std::path::Path,
    step: Option<&str>,
) -> (std::time::Duration, String, f64) {
    let t = Instant::now();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpuplan"));
    cmd.args(["review", "--verbose", "--format", "json"]);
    if let Some(s) = step {
        cmd.args(["--step", s]);
    }
    let out = cmd
        .arg("--metrics")
        .arg(file)
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
    let mb: f64 = rss
        .split("peak RSS ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN);
    (elapsed, rss, mb)
}

/// `wc -l` of `file`: the floor, reading the bytes once (warm page cache: it runs after the
/// write).
fn wc(file: &std::path::Path) -> std::time::Duration {
    let t = Instant::now();
    let out = Command::new("wc").arg("-l").arg(file).output().expect("wc");
    assert!(out.status.success());
    t.elapsed()
}

/// `GPUPLAN_BENCH_QUARTER`: `GPUSxDAYS` (500x90 unless set), or `off`.
fn quarter(dir: &std::path::Path) {
    let spec = std::env::var("GPUPLAN_BENCH_QUARTER").unwrap_or_else(|_| "500x90".into());
    let Some((gpus, days)) = spec
        .split_once('x')
        .and_then(|(g, d)| Some((g.parse::<usize>().ok()?, d.parse::<i64>().ok()?)))
    else {
        println!("quarter   skipped (GPUPLAN_BENCH_QUARTER={spec})");
        return;
    };
    let plan_path = dir.join("quarter.toml");
    std::fs::write(&plan_path, plan(gpus.div_ceil(10))).expect("plan");
    let file = dir.join("quarter.prom");
    let (lines, step) = write_quarter(&file, gpus, days);
    let bytes = std::fs::metadata(&file).map_or(0, |m| m.len());
    let baseline = wc(&file);
    let (process, rss, mb) = review(&plan_path, &file, None);
    let _ = std::fs::remove_file(&file);
    let windows = days * 86_400 / step;
    println!(
        "== quarter: {gpus} GPUs x {days} days at the default step ({windows} windows of {step} s), {lines} lines, {:.1} GiB",
        bytes as f64 / (1u64 << 30) as f64
    );
    println!(
        "baseline  wc -l                      {:8.1} ms   1.00x",
        baseline.as_secs_f64() * 1e3
    );
    println!(
        "review    gpuplan review (process)   {:8.1} ms {:6.2}x  ({rss})",
        process.as_secs_f64() * 1e3,
        process.as_secs_f64() / baseline.as_secs_f64()
    );
    println!(
        "memory    peak RSS {mb:.1} MB: {:.1} bytes per GPU-window; target 300 MB",
        mb * 1e6 / (gpus as f64 * windows as f64)
    );
}

fn main() {
    let dir = std::env::temp_dir().join(format!("gpuplan-review-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let plan_path = dir.join("fleet.toml");
    std::fs::write(&plan_path, plan(20)).expect("plan");
    let file = dir.join("fleet.prom");
    let lines = write_file(&file, 200, 34, 1);
    let bytes = std::fs::metadata(&file).map_or(0, |m| m.len());

    let baseline = wc(&file);

    let t = Instant::now();
    let read = gpuplan::review::files::read_exposition(
        &file,
        gpuplan::review::files::Window::default(),
        None,
    )
    .expect("read");
    let parse = t.elapsed();

    let (process, rss, mb) = review(&plan_path, &file, Some("60s"));
    // Memory against file size: the same series and windows at twice the scrape rate.
    let _ = std::fs::remove_file(&file);
    let dense = dir.join("dense.prom");
    let dense_lines = write_file(&dense, 200, 34, 2);
    let (_, dense_rss, dense_mb) = review(&plan_path, &dense, Some("60s"));
    let _ = std::fs::remove_file(&dense);
    let x = |d: std::time::Duration| d.as_secs_f64() / baseline.as_secs_f64();
    println!(
        "== review --metrics: {lines} lines, {:.0} MiB, {} windows of {} s",
        bytes as f64 / (1 << 20) as f64,
        read.grid.windows,
        read.grid.step
    );
    println!(
        "baseline  wc -l                      {:8.1} ms   1.00x  {:6.2} M lines/s",
        baseline.as_secs_f64() * 1e3,
        lines as f64 / baseline.as_secs_f64() / 1e6
    );
    println!(
        "read      streaming, in-process      {:8.1} ms {:6.2}x  {:6.2} M lines/s",
        parse.as_secs_f64() * 1e3,
        x(parse),
        lines as f64 / parse.as_secs_f64() / 1e6
    );
    println!(
        "review    gpuplan review (process)   {:8.1} ms {:6.2}x  ({rss})",
        process.as_secs_f64() * 1e3,
        x(process)
    );
    println!(
        "memory    {dense_lines} lines (2x, same series): {dense_rss}; peak RSS {:.2}x the {lines}-line run",
        dense_mb / mb
    );
    quarter(&dir);
    let _ = std::fs::remove_dir_all(&dir);
}
