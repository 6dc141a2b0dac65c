//! `cargo bench --bench scale`: `gpuplan recommend` on generated estates of 1k, 2k, 4k and 8k
//! workloads, as a growth curve. Each estate mixes the shapes a large platform has: several
//! teams, dedicated and fractional inference, interruptible batch, small gangs, in two
//! regions. The ratio column is each size's time over the previous one: near 2 is linear,
//! near 4 quadratic. The baseline is a TOML parse of the same plan in the same run.

#[path = "timing.rs"]
mod timing;

use std::fmt::Write as _;
use std::time::Instant;

use gpuplan::catalog::Catalog;
use gpuplan::core::Provider;
use gpuplan::engine::recommend::recommend;
use gpuplan::source::SourceFile;

/// A deterministic estate of `n` workloads (a small linear congruential generator, so
/// every run and machine sees the same plan).
pub fn estate(n: usize, provider: &str, regions: &[&str]) -> String {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |m: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (seed >> 33) % m
    };
    let regions = regions
        .iter()
        .map(|r| format!("\"{r}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let mut s = format!(
        "version = 1\n\n[plan]\nname = \"estate\"\nowner = \"bench\"\nprovider = \"{provider}\"\nregions = [{regions}]\n"
    );
    let mut shared = std::collections::BTreeSet::new();
    for i in 0..n {
        let t = next(40);
        let team = format!("team-{t}");
        let kind = next(10);
        let _ = write!(s, "\n[[workload]]\nname = \"w{i:05}\"\nteam = \"{team}\"\n");
        match kind {
            // User-facing inference on whole GPUs.
            0..=2 => {
                let gpus = [1, 1, 2, 4][next(4) as usize];
                let _ = write!(
                    s,
                    "kind = \"inference\"\nuser_facing = true\ngpus = {gpus}\nreplicas = {{ min = {}, max = {} }}\ncpu = {}\nmemory_gib = {}\n",
                    1 + next(2),
                    3 + next(6),
                    4 + next(12),
                    16 + next(64)
                );
            }
            // Fractional notebooks and small models, time-sliced in a decided fault domain.
            3..=4 => {
                shared.insert(t);
                let _ = write!(
                    s,
                    "kind = \"notebook\"\ngpu_fraction = {}\nreplicas = {}\nsharing = \"time-slicing\"\nfault_domain = \"{team}-shared\"\ncpu = 2\nmemory_gib = 8\n",
                    [0.25, 0.5][next(2) as usize],
                    1 + next(6)
                );
            }
            // Interruptible batch, checkpointed.
            5..=7 => {
                let _ = write!(
                    s,
                    "kind = \"batch\"\ninterruptible = true\ncheckpoint_minutes = {}\ngpus = {}\nreplicas = {}\nhours_per_month = {}\ncpu = {}\nmemory_gib = {}\n",
                    [15, 30, 60][next(3) as usize],
                    [1, 1, 2, 4, 8][next(5) as usize],
                    1 + next(8),
                    100 + next(600),
                    4 + next(28),
                    32 + next(200)
                );
            }
            // Training, sometimes a small gang.
            _ => {
                let _ = write!(
                    s,
                    "kind = \"training\"\ninterruptible = true\ncheckpoint_minutes = 30\ngpus = 8\nnodes = {}\nhours_per_month = {}\n",
                    [1, 1, 2][next(3) as usize],
                    200 + next(500)
                );
            }
        }
    }
    // Every shared fault domain was decided on.
    for t in shared {
        let _ = write!(
            s,
            "\n[[decision]]\nfault_domain = \"team-{t}-shared\"\ndecided_by = \"platform\"\nreason = \"notebooks of one team\"\ndate = 2026-12-01\n"
        );
    }
    s
}

/// `n` one-GPU batch jobs that all look alike (one team in fifty each, as generated
/// per-tenant plans are): what must scale linearly, since their demands are one shape.
pub fn identical(n: usize, provider: &str, region: &str) -> String {
    let mut s = format!(
        "version = 1\n\n[plan]\nname = \"identical\"\nowner = \"bench\"\nprovider = \"{provider}\"\nregions = [\"{region}\"]\n"
    );
    for i in 0..n {
        let _ = write!(
            s,
            "[[workload]]\nname=\"j{i}\"\nteam=\"t{}\"\nkind=\"batch\"\ngpus=1\n",
            i % 50
        );
    }
    s
}

/// Time `recommend` on `text` (load excluded), with the size and what it made.
fn run(text: &str, catalog: &Catalog) -> (f64, usize, usize) {
    let file = SourceFile::new("estate.toml", text.to_owned());
    let p = match gpuplan::plan::Plan::load(file, catalog) {
        Ok(p) => p,
        Err(ds) => panic!("the generated plan is valid: {}", ds[0].message),
    };
    let t = Instant::now();
    let r = recommend(&p, catalog);
    (
        t.elapsed().as_secs_f64(),
        r.pools.len(),
        r.unsatisfied.len(),
    )
}

fn main() {
    // `GPUPLAN_SCALE_SIZES=8000` runs one size (to profile it); the default is the curve.
    let sizes: Vec<usize> = std::env::var("GPUPLAN_SCALE_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![1000, 2000, 4000, 8000]);
    for (provider, regions) in [
        (Provider::Azure, ["eastus", "westus3"]),
        (Provider::Aws, ["us-east-1", "us-west-2"]),
    ] {
        let catalog = Catalog::embedded(&[provider]).expect("catalog");
        println!("== generated estates on {provider}");
        let mut previous: Option<f64> = None;
        for &n in &sizes {
            let text = estate(n, provider.as_str(), &regions);
            // `GPUPLAN_BENCH_PLANS=DIR` keeps the generated plan, to compare across builds.
            if let Some(dir) = std::env::var_os("GPUPLAN_BENCH_PLANS") {
                let path = std::path::Path::new(&dir).join(format!("estate-{provider}-{n}.toml"));
                std::fs::write(path, &text).expect("write the plan");
            }
            let baseline = timing::time(5, || {
                let v: toml::Table = toml::from_str(&text).expect("toml");
                std::hint::black_box(v);
            });
            let (took, pools, unsatisfied) = run(&text, &catalog);
            let ratio = previous.map_or("-".to_owned(), |p| format!("{:.2}", took / p));
            println!(
                "{n:>6} workloads  {:>9.3} s  x{ratio:<5} vs the previous size  ({:.0}x its TOML parse; {pools} pools, {unsatisfied} unsatisfied)",
                took,
                took / baseline.as_secs_f64(),
            );
            previous = Some(took);
        }
        // Identical workloads, 4x at a time: each step should cost about 4x (linear).
        let sizes: Vec<usize> = std::env::var("GPUPLAN_IDENTICAL_SIZES")
            .ok()
            .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
            .filter(|v: &Vec<usize>| !v.is_empty())
            .unwrap_or_else(|| vec![6250, 25_000, 100_000]);
        println!("== identical one-GPU batch jobs on {provider}");
        let mut previous: Option<f64> = None;
        for &n in &sizes {
            let text = identical(n, provider.as_str(), regions[0]);
            let baseline = timing::time(3, || {
                let v: toml::Table = toml::from_str(&text).expect("toml");
                std::hint::black_box(v);
            });
            let (took, pools, _) = run(&text, &catalog);
            let ratio = previous.map_or("-".to_owned(), |p| format!("{:.2}", took / p));
            println!(
                "{n:>6} identical  {took:>9.3} s  x{ratio:<5} vs the previous size  ({:.1}x its TOML parse; {pools} pools)",
                took / baseline.as_secs_f64(),
            );
            previous = Some(took);
        }
    }
}
