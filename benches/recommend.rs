//! `cargo bench --bench recommend`: `gpuplan recommend` on the whole openb production trace
//! (7,064 GPU pods grouped into workloads by shape). Reports, per provider:
//! - GPUs provisioned against the demand and the device-plugin slot bound;
//! - monthly cost against the LP relaxation bound (solved here with microlp);
//! - wall time of the recommendation in-process and of the whole process, with its peak RSS;
//! - as the baseline measured in the same run, plain TOML parsing of the same plan text, so
//!   the time figures compare across machines as ratios.

#[path = "openb.rs"]
mod openb;

#[path = "timing.rs"]
mod timing;

use std::process::Command;
use std::time::{Duration, Instant};

use timing::time;

use gpuplan::catalog::Catalog;
use gpuplan::engine::recommend::recommend;
use gpuplan::plan::{self, raw::Provider};
use gpuplan::source::SourceFile;

fn main() {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    // The plan's default term (1 year), and AWS with 3-year reservations allowed.
    for (provider, regions, term) in [
        (Provider::Azure, ["eastus", "westus3"], None),
        (Provider::Aws, ["us-east-1", "us-west-2"], None),
        (Provider::Aws, ["us-east-1", "us-west-2"], Some("3y")),
    ] {
        let mut text = openb::plan_text(provider.as_str(), &regions);
        if let Some(term) = term {
            text = text.replacen(
                "[plan]\n",
                &format!("[plan]\nreservation_term = \"{term}\"\n"),
                1,
            );
        }
        // `GPUPLAN_BENCH_PLANS=DIR` keeps the generated plan, to compare outputs across builds.
        if let Some(dir) = std::env::var_os("GPUPLAN_BENCH_PLANS") {
            let path = std::path::Path::new(&dir).join(format!(
                "openb-{provider}{}.toml",
                term.map_or(String::new(), |t| format!("-{t}"))
            ));
            std::fs::write(path, &text).expect("write the plan");
        }
        let catalog = Catalog::embedded(&[provider]).expect("catalog");
        let p = plan::load_and_validate(SourceFile::new("openb.toml", text.clone()), &catalog)
            .expect("openb plan is valid");

        let baseline = time(50, || {
            let v: toml::Table = toml::from_str(&text).expect("toml");
            std::hint::black_box(v);
        });
        let mut r = None;
        let rec = time(10, || r = Some(recommend(&p, &catalog)));
        let r = r.expect("ran");
        let t = Instant::now();
        let b = openb::bounds(&p, &catalog, true);
        let lp_time = t.elapsed();

        let dir = std::env::temp_dir().join(format!("gpuplan-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp");
        let path = dir.join("openb.toml");
        std::fs::write(&path, &text).expect("write");
        let mut rss = String::new();
        let process = time(5, || {
            let out = Command::new(env!("CARGO_BIN_EXE_gpuplan"))
                .args(["recommend", "--verbose", "--format", "json"])
                .arg(&path)
                .output()
                .expect("run");
            let err = String::from_utf8_lossy(&out.stderr);
            if let Some(l) = err.lines().find(|l| l.starts_with("resources:")) {
                rss = l.to_owned();
            }
        });
        let _ = std::fs::remove_dir_all(&dir);

        let gpus: u32 = r.pools.iter().map(|p| p.gpus.max).sum();
        let pods: u32 = p
            .workloads()
            .iter()
            .map(|w| w.replicas().max() as u32)
            .sum();
        println!(
            "== openb on {provider}{}: {} workloads, {pods} pods, {} unsatisfied, {} pools",
            term.map_or(String::new(), |t| format!(" (reservation_term = {t})")),
            p.workloads().len(),
            r.unsatisfied.len(),
            r.pools.len()
        );
        println!(
            "GPUs      provisioned {gpus}  demand {:.1} ({:+.2}%)  slot bound {:.1} ({:+.2}%)",
            b.demand_gpus,
            (f64::from(gpus) / b.demand_gpus - 1.0) * 100.0,
            b.slot_gpus,
            (f64::from(gpus) / b.slot_gpus - 1.0) * 100.0
        );
        if let Some(g) = b.lp_gpus {
            println!(
                "          GPU LP bound (every constraint) {g:.1} ({:+.2}%)",
                (f64::from(gpus) / g - 1.0) * 100.0
            );
        }
        if let Some(g) = b.lp_gpus_within_cost {
            println!(
                "          GPU LP bound within 2% of the cost bound {g:.1} ({:+.2}%)",
                (f64::from(gpus) / g - 1.0) * 100.0
            );
        }
        if let Some(g) = openb::gpus_at_cost(&p, &catalog, r.total_monthly_cost_usd) {
            println!(
                "          GPU LP bound at no more than this fleet's cost {g:.1} ({:+.2}%)",
                (f64::from(gpus) / g - 1.0) * 100.0
            );
        }
        match b.lp_cost {
            Some(lp) => println!(
                "cost      {:.2}/month  LP bound {lp:.2} ({:+.2}%)",
                r.total_monthly_cost_usd,
                (r.total_monthly_cost_usd / lp - 1.0) * 100.0
            ),
            None => println!(
                "cost      {:.2}/month  LP did not solve",
                r.total_monthly_cost_usd
            ),
        }
        let pins = r
            .workloads
            .iter()
            .filter_map(|w| {
                let pool = r.pools.iter().find(|q| Some(&q.name) == w.pool.as_ref())?;
                Some((
                    w.workload.clone(),
                    (pool.sku.clone(), pool.region.clone(), pool.capacity),
                ))
            })
            .collect();
        for (share, what) in [
            (openb::Share::Gpus, "GPU share (issue 40's)"),
            (openb::Share::Node, "node share"),
        ] {
            let fluid = openb::fluid(&p, &catalog, share, None);
            let sized = openb::fluid(&p, &catalog, share, Some(&pins));
            let lp = b
                .lp_cost
                .map_or(String::new(), |lp| format!("; LP bound {:.3}x", lp / fluid));
            println!(
                "          fluid, {what}: {fluid:.2}  cost {:.3}x = size choice {:.3}x * packing {:.3}x{lp}",
                r.total_monthly_cost_usd / fluid,
                sized / fluid,
                r.total_monthly_cost_usd / sized
            );
        }
        if let Some(cut) = b.lp_cut_cost {
            println!(
                "          LP with counting cuts {cut:.2} ({:+.2}%)",
                (r.total_monthly_cost_usd / cut - 1.0) * 100.0
            );
        }
        let x = |d: Duration| d.as_secs_f64() / baseline.as_secs_f64();
        println!(
            "baseline  toml parse of the plan   {:9.3} ms    1.00x",
            ms(baseline)
        );
        println!(
            "recommend in-process               {:9.3} ms {:8.2}x",
            ms(rec),
            x(rec)
        );
        println!(
            "process   gpuplan recommend        {:9.3} ms {:8.2}x  ({rss})",
            ms(process),
            x(process)
        );
        println!(
            "bound     LP relaxation (microlp)  {:9.3} ms {:8.2}x",
            ms(lp_time),
            x(lp_time)
        );
    }
}
