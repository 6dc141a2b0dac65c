//! `cargo bench --bench review`: the streaming `--metrics` reader on a file of about 4M lines
//! with stock kube-state-metrics and dcgm-exporter label sets at real scrape offsets
//! (kube-state-metrics every 30 s at +7.1 s, dcgm-exporter every 15 s at +11.8 s), against
//! `wc -l` on the same file in the same run (the floor: reading the bytes once). Reports
//! lines per second in-process, and the whole `gpuplan review` as a process with its peak
//! RSS, which must not grow with the file.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::Command;
use std::time::Instant;

/// 2026-06-01T00:00:00Z
const START: i64 = 1_780_272_000;

fn plan() -> String {
    let mut s = String::from("version = 1\n[plan]\nname = \"fleet\"\nowner = \"bench\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n");
    for w in 0..20 {
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

fn main() {
    let dir = std::env::temp_dir().join(format!("gpuplan-review-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let plan_path = dir.join("fleet.toml");
    std::fs::write(&plan_path, plan()).expect("plan");
    let file = dir.join("fleet.prom");
    let lines = write_file(&file, 200, 34, 1);
    let bytes = std::fs::metadata(&file).map_or(0, |m| m.len());

    // Baseline: wc -l on the same file (warm page cache: it runs after the write).
    let t = Instant::now();
    let wc = Command::new("wc")
        .arg("-l")
        .arg(&file)
        .output()
        .expect("wc");
    let baseline = t.elapsed();
    assert!(wc.status.success());

    let t = Instant::now();
    let read = gpuplan::review::files::read_exposition(
        &file,
        gpuplan::review::files::Window::default(),
        None,
    )
    .expect("read");
    let parse = t.elapsed();

    // The whole review as a process, with its peak RSS from `--verbose`.
    let review = |file: &std::path::Path| {
        let t = Instant::now();
        let out = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
            .args([
                "review",
                "--verbose",
                "--format",
                "json",
                "--step",
                "60s",
                "--metrics",
            ])
            .arg(file)
            .arg(&plan_path)
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
    };
    let (process, rss, mb) = review(&file);
    // Memory against file size: the same series and windows at twice the scrape rate.
    let _ = std::fs::remove_file(&file);
    let dense = dir.join("dense.prom");
    let dense_lines = write_file(&dense, 200, 34, 2);
    let (_, dense_rss, dense_mb) = review(&dense);
    let _ = std::fs::remove_dir_all(&dir);
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
}
