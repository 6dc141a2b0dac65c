//! `cargo bench --bench recommend`: `gpuplan recommend` on the whole openb production trace
//! (7,064 GPU pods grouped into workloads by shape), in six readings: the trace's fractions
//! time-sliced (AWS us-east-1 + us-west-2 with 1- and 3-year terms, Azure eastus + westus3)
//! and its latency-sensitive fractions on MIG with GPU memory needs (AWS us-east-1, 1 and 3
//! years, Azure eastus). Reports, per reading:
//! - monthly cost against the lower bound `recommend` prints (its own LP, from its candidates)
//!   and against an independent bound built here from the catalog alone
//!   (`openb::independent_bound`);
//! - wall time of the recommendation in-process and of the whole process, with its peak RSS;
//! - as the baseline measured in the same run, plain TOML parsing of the same plan text, so
//!   the time figures compare across machines as ratios.

// The quality test uses the rest of the file (its candidate LPs and fluid figures).
#[allow(dead_code)]
#[path = "openb.rs"]
mod openb;

#[path = "timing.rs"]
mod timing;

use std::process::Command;
use std::time::{Duration, Instant};

use timing::time;

use gpuplan::catalog::Catalog;
use gpuplan::core::Provider;
use gpuplan::engine::recommend::recommend;
use gpuplan::plan;
use gpuplan::source::SourceFile;

/// One reading of the trace: provider, regions, reservation term, MIG for LS fractions.
type Reading = (
    Provider,
    &'static [&'static str],
    Option<&'static str>,
    bool,
);

const READINGS: [Reading; 6] = [
    (Provider::Aws, &["us-east-1", "us-west-2"], None, false),
    (
        Provider::Aws,
        &["us-east-1", "us-west-2"],
        Some("3y"),
        false,
    ),
    (Provider::Azure, &["eastus", "westus3"], None, false),
    (Provider::Aws, &["us-east-1"], None, true),
    (Provider::Aws, &["us-east-1"], Some("3y"), true),
    (Provider::Azure, &["eastus"], None, true),
];

fn main() {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    for (provider, regions, term, mig) in READINGS {
        let mut text = if mig {
            openb::plan_text_mig(provider.as_str(), regions)
        } else {
            openb::plan_text(provider.as_str(), regions)
        };
        if let Some(term) = term {
            text = text.replacen(
                "[plan]\n",
                &format!("[plan]\nreservation_term = \"{term}\"\n"),
                1,
            );
        }
        let label = format!(
            "{provider} {}{}{}",
            regions.join("+"),
            term.map_or(String::new(), |t| format!(" {t}")),
            if mig {
                ", LS on MIG"
            } else {
                ", LS time-sliced"
            }
        );
        // `GPUPLAN_BENCH_PLANS=DIR` keeps the generated plan, to compare outputs across builds.
        if let Some(dir) = std::env::var_os("GPUPLAN_BENCH_PLANS") {
            let path = std::path::Path::new(&dir).join(format!(
                "openb-{provider}{}{}.toml",
                term.map_or(String::new(), |t| format!("-{t}")),
                if mig { "-mig" } else { "" }
            ));
            std::fs::write(path, &text).expect("write the plan");
        }
        let catalog = Catalog::embedded(&[provider]).expect("catalog");
        let p = plan::Plan::load(SourceFile::new("openb.toml", text.clone()), &catalog)
            .expect("openb plan is valid");

        let baseline = time(50, || {
            let v: toml::Table = toml::from_str(&text).expect("toml");
            std::hint::black_box(v);
        });
        let mut r = None;
        let rec = time(5, || r = Some(recommend(&p, &catalog)));
        let r = r.expect("ran");
        let t = Instant::now();
        let independent = openb::independent_bound(&p, &catalog);
        let independent_time = t.elapsed();

        let dir = std::env::temp_dir().join(format!("gpuplan-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp");
        let path = dir.join("openb.toml");
        std::fs::write(&path, &text).expect("write");
        let mut rss = String::new();
        let process = time(3, || {
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
        println!(
            "== openb, {label}: {} workloads, {} unsatisfied, {} pools, {gpus} GPUs",
            p.workloads().len(),
            r.unsatisfied.len(),
            r.pools.len()
        );
        let cost = r.total_monthly_cost_usd;
        match &r.lower_bound {
            Some(b) => println!(
                "cost      {cost:.2}/month  its own bound {:.2} ({:.3}x{})",
                b.monthly_cost_usd,
                cost / b.monthly_cost_usd,
                if b.optimal {
                    ""
                } else {
                    ", LP not at its optimum"
                }
            ),
            None => println!("cost      {cost:.2}/month  no bound"),
        }
        match independent {
            Some(b) => println!(
                "          independent bound {:.2} ({:.3}x{})",
                b.monthly_usd,
                cost / b.monthly_usd,
                if b.solved {
                    ""
                } else {
                    ", LP not at its optimum"
                }
            ),
            None => println!("          independent bound did not solve"),
        }
        let x = |d: Duration| d.as_secs_f64() / baseline.as_secs_f64();
        println!(
            "baseline  toml parse of the plan   {:9.3} ms    1.00x",
            ms(baseline)
        );
        println!(
            "recommend in-process, with bound   {:9.3} ms {:8.2}x",
            ms(rec),
            x(rec)
        );
        println!(
            "process   gpuplan recommend        {:9.3} ms {:8.2}x  ({rss})",
            ms(process),
            x(process)
        );
        println!(
            "bound     independent LP           {:9.3} ms {:8.2}x",
            ms(independent_time),
            x(independent_time)
        );
    }
}
