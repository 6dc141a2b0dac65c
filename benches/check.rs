//! `cargo bench --bench check`: `gpuplan check` on a 200-workload plan built from the openb
//! production trace (Weng et al., ATC'23). Reports medians and, as the baseline measured in the
//! same run, plain TOML parsing of the same text, so figures compare across machines.

#[path = "timing.rs"]
mod timing;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use timing::time;

use gpuplan::catalog::Catalog;
use gpuplan::core::Provider;
use gpuplan::plan::{self, Date};
use gpuplan::rules::{self, Levels};
use gpuplan::source::SourceFile;

const TRACE: &str = include_str!("data/openb_pod_list_default.csv");

/// Group GPU pods of identical shape into workloads (replicas = pods of that shape), keep the
/// 200 most common shapes, and declare pools that host them so the pool rules do work too.
fn plan_from_trace() -> String {
    let mut shapes: BTreeMap<(u32, u32, String, u32, u32), u32> = BTreeMap::new();
    for line in TRACE.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 7 {
            continue;
        }
        let (cpu, mem, gpus, milli) = (
            f[1].parse().unwrap_or(0u32),
            f[2].parse().unwrap_or(0u32),
            f[3].parse().unwrap_or(0u32),
            f[4].parse().unwrap_or(0u32),
        );
        if gpus == 0 {
            continue;
        }
        *shapes
            .entry((gpus, milli, f[6].to_owned(), cpu / 1000, mem / 1024))
            .or_default() += 1;
    }
    let mut ranked: Vec<_> = shapes.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut s = String::from("version = 1\n\n[plan]\nname = \"openb\"\nowner = \"bench\"\nprovider = \"azure\"\nregions = [\"eastus\", \"westus3\"]\nmonthly_budget = 5000000\n\n[cluster]\nmig_manager = \"gpu-operator\"\n");
    let mut pools: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (i, ((gpus, milli, qos, cpu, mem), count)) in ranked.iter().take(200).enumerate() {
        let name = format!("w{i:03}");
        let ls = qos == "LS";
        s.push_str(&format!("\n[[workload]]\nname = \"{name}\"\nteam = \"team-{}\"\nkind = \"{}\"\nreplicas = {{ min = {}, max = {count} }}\n", i % 12, if ls { "inference" } else { "batch" }, u32::from(ls)));
        if *milli < 1000 {
            s.push_str(&format!(
                "gpu_fraction = {}\nsharing = \"time-slicing\"\nfault_domain = \"shared\"\n",
                f64::from(*milli) / 1000.0
            ));
            pools.entry("shared").or_default().push(name);
        } else {
            s.push_str(&format!("gpus = {}\n", gpus.min(&8)));
            if !ls {
                s.push_str("interruptible = true\ncheckpoint_minutes = 30\n");
            }
            pools
                .entry(if *gpus > 1 { "multi" } else { "single" })
                .or_default()
                .push(name);
        }
        s.push_str(&format!(
            "cpu = {}\nmemory_gib = {}\nutilization = 0.5\n",
            (*cpu).max(1),
            (*mem).max(1)
        ));
    }
    for (pool, members) in &pools {
        let (sku, sharing) = match *pool {
            "shared" => (
                "Standard_NC64as_T4_v3",
                "sharing = \"time-slicing\"\ntime_slicing_replicas = 4\n",
            ),
            "multi" => ("Standard_ND96amsr_A100_v4", ""),
            _ => ("Standard_NC24ads_A100_v4", ""),
        };
        let list = members
            .iter()
            .map(|m| format!("\"{m}\""))
            .collect::<Vec<_>>()
            .join(", ");
        s.push_str(&format!("\n[[pool]]\nname = \"{pool}\"\nsku = \"{sku}\"\nregion = \"eastus\"\nnodes = {{ min = 0, max = 40 }}\n{sharing}workloads = [{list}]\n"));
    }
    s.push_str("\n[[decision]]\nfault_domain = \"shared\"\ndecided_by = \"bench\"\ndate = 2026-11-02\nreason = \"benchmark\"\n");
    s
}

fn main() {
    let text = plan_from_trace();
    let today = Date {
        year: 2026,
        month: 12,
        day: 2,
    };
    let catalog = Catalog::embedded(&[Provider::Azure]).expect("catalog");

    let baseline = time(200, || {
        let v: toml::Table = toml::from_str(&text).expect("toml");
        std::hint::black_box(v);
    });
    let catalog_load = time(200, || {
        std::hint::black_box(Catalog::embedded(&[Provider::Azure]).expect("catalog"));
    });
    let mut n_findings = 0;
    let check = time(200, || {
        let file = SourceFile::new("openb.toml", text.clone());
        let p = plan::Plan::load(file, &catalog).expect("bench plan is valid");
        n_findings = rules::check(&p, &catalog, today, &Levels::default()).len();
    });

    let dir = std::env::temp_dir().join(format!("gpuplan-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp");
    let path = dir.join("openb.toml");
    std::fs::write(&path, &text).expect("write");
    let bin = env!("CARGO_BIN_EXE_gpuplan");
    let process = time(30, || {
        let out = Command::new(bin)
            .args(["check", "--quiet", "--format", "json"])
            .arg(&path)
            .env("GPUPLAN_TODAY", "2026-12-02")
            .output()
            .expect("run");
        std::hint::black_box(out);
    });
    let _ = std::fs::remove_dir_all(&dir);

    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let r = |d: Duration| d.as_secs_f64() / baseline.as_secs_f64();
    println!(
        "plan: 200 workloads, {} bytes, {n_findings} findings",
        text.len()
    );
    println!(
        "baseline  toml parse of the plan   {:8.3} ms   1.00x",
        ms(baseline)
    );
    println!(
        "catalog   load embedded (azure)    {:8.3} ms  {:5.2}x",
        ms(catalog_load),
        r(catalog_load)
    );
    println!(
        "check     load+validate+28 rules   {:8.3} ms  {:5.2}x",
        ms(check),
        r(check)
    );
    println!(
        "process   gpuplan check (whole)    {:8.3} ms  {:5.2}x",
        ms(process),
        r(process)
    );
}
