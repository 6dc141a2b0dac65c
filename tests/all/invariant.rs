//! The invariant a platform engineer tests first: declare the recommended pools in the plan
//! (`recommend --write-plan`) and `check` it; no fit rule (GP001-GP005, GP015, GP016, GP021,
//! GP027) may fail. Checked on every example and fixture plan and on plans generated the way
//! platform teams write them: LLM servers with KV caches and server caps, tensor parallel,
//! time-sliced notebooks, MIG under AKS and the GPU Operator, gangs, batch on spot.

use crate::common;

use common::gen::{generated, generated_wide};

use std::path::Path;

use gpuplan::catalog::Catalog;
use gpuplan::core::{Date, Provider};
use gpuplan::engine::recommend::recommend;
use gpuplan::plan::{self, Plan};
use gpuplan::render::write_plan::plan_with_pools;
use gpuplan::rules::{self, Levels};
use gpuplan::source::SourceFile;

const TODAY: Date = Date {
    year: 2026,
    month: 12,
    day: 3,
};

/// The fit rules, and GP034, which counts a pool's capacity the way the packer places
/// replicas (a quota split's parts, MIG layouts as laid out: issue 71).
const FIT_RULES: [&str; 10] = [
    "GP001", "GP002", "GP003", "GP004", "GP005", "GP015", "GP016", "GP021", "GP027", "GP034",
];

fn load(name: &str, text: String, catalog: &Catalog) -> Result<Plan, String> {
    plan::Plan::load(SourceFile::new(name, text), catalog).map_err(|ds| {
        ds.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })
}

/// Fit errors of `p` as (rule, workload, message).
fn fit_errors(p: &Plan, catalog: &Catalog) -> Vec<(String, Option<String>, String)> {
    rules::check(p, catalog, TODAY, &Levels::default())
        .into_iter()
        .filter(|d| FIT_RULES.contains(&d.code.as_str()))
        .filter(|d| d.severity == gpuplan::diag::Severity::Error)
        .map(|d| (d.code.to_string(), d.workload.clone(), d.message.clone()))
        .collect()
}

/// The plan text without its `[[pool]]` tables: what its workloads say on their own.
fn without_pools(text: &str) -> String {
    let mut doc: toml_edit::DocumentMut = text.parse().expect("toml");
    doc.remove("pool");
    doc.to_string()
}

/// Recommend, write the pools into the plan, check it: the fit errors that the recommendation
/// caused (not those the workloads have on their own, nor those of workloads nothing can run).
fn violations(name: &str, text: &str, catalog: &Catalog) -> Result<Vec<String>, String> {
    let p = load(name, text.to_owned(), catalog)?;
    let rec = recommend(&p, catalog);
    let written =
        plan_with_pools(&p, &rec, |pool| pool.why.to_string()).map_err(|e| e.to_string())?;
    let out = load(name, written.clone(), catalog)
        .map_err(|e| format!("the written plan does not load: {e}\n{written}"))?;
    let own = load(name, without_pools(text), catalog)
        .map(|q| fit_errors(&q, catalog))
        .unwrap_or_default();
    let unsatisfied: Vec<&str> = rec
        .unsatisfied
        .iter()
        .map(|u| u.workload.as_str())
        .collect();
    let mut v: Vec<String> = fit_errors(&out, catalog)
        .into_iter()
        .filter(|(_, w, _)| {
            w.as_deref().is_none_or(|w| {
                !unsatisfied.contains(&w) && !own.iter().any(|(_, ow, _)| ow.as_deref() == Some(w))
            })
        })
        .map(|(r, _, m)| format!("{r}: {m}"))
        .collect();
    v.extend(untaken(&p, &rec));
    // The printed bound is below every fleet, this one included (issue 55).
    if let Some(b) = &rec.lower_bound {
        if b.monthly_cost_usd > rec.total_monthly_cost_usd + 0.01 || b.gap < -1e-4 {
            v.push(format!(
                "lower bound {:.2} above the fleet's {:.2}",
                b.monthly_cost_usd, rec.total_monthly_cost_usd
            ));
        }
    } else if !rec.pools.is_empty() {
        v.push("a fleet without its lower bound".to_owned());
    }
    Ok(v)
}

/// Cheaper options a pool lists without a reason that holds. The pool stage moves a pool of
/// up to 16 workloads and 600 replicas to any listed option that costs less packed, so an
/// option still listed as cheaper must be held back by a quota, or be a pool the fleet
/// already has (a merge, which the merge stage judged); "not tried" is for larger pools.
fn untaken(p: &Plan, rec: &gpuplan::engine::recommend::Recommendation) -> Vec<String> {
    let replicas = |name: &str| {
        p.workloads()
            .iter()
            .find(|w| w.name.as_str() == name)
            .map_or(0, |w| w.replicas().max())
    };
    let mut out = Vec::new();
    for pool in &rec.pools {
        let split = rec
            .workloads
            .iter()
            .any(|w| pool.workloads.contains(&w.workload) && !w.also_pools.is_empty());
        let large = pool.workloads.len() > 16
            || pool.workloads.iter().map(|w| replicas(w)).sum::<i64>() > 600
            || split;
        for a in &pool.considered {
            if a.kind.as_str() != "next-cheapest" || !a.delta_usd.is_some_and(|d| d < -0.01) {
                continue;
            }
            let exists = rec
                .pools
                .iter()
                .any(|q| q.sku == a.sku && q.region == a.region && q.capacity == a.capacity);
            let holds = a.note.to_string().contains("not taken: quota")
                || (a.note.to_string().contains("not taken: not tried") && large)
                || (a.note.to_string().contains("fleet as a whole") && exists);
            if !holds {
                out.push(format!(
                    "{}: {} {} {} is listed {:?} cheaper: {}",
                    pool.name, a.sku, a.region, a.capacity, a.delta_usd, a.note
                ));
            }
        }
    }
    out
}

#[test]
fn recommended_pools_pass_check_on_every_example_and_fixture() {
    let catalog = Catalog::embedded(&Provider::ALL).expect("catalog");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["plans", "tests/fixtures/render", "tests/fixtures/diff"] {
        for e in std::fs::read_dir(root.join(dir)).expect("dir").flatten() {
            files.push(e.path());
        }
    }
    for e in std::fs::read_dir(root.join("tests/fixtures/rules"))
        .expect("rules")
        .flatten()
    {
        for f in std::fs::read_dir(e.path()).expect("rule dir").flatten() {
            files.push(f.path());
        }
    }
    files.retain(|f| f.extension().is_some_and(|x| x == "toml"));
    files.sort();
    assert!(files.len() > 50, "{}", files.len());
    let mut failures = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).expect("read");
        match violations(&f.display().to_string(), &text, &catalog) {
            Ok(v) if v.is_empty() => {}
            Ok(v) => failures.push(format!("{}:\n  {}", f.display(), v.join("\n  "))),
            // A fixture that is invalid on purpose is not a recommendation's fault.
            Err(e) if e.starts_with("the written plan") => failures.push(e),
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The seeds a generator test runs: `GPUPLAN_INVARIANT_SEEDS=N` for 1 to N, or `FROM..TO`;
/// CI runs the first `default`.
fn seed_range(default: u64) -> (u64, u64) {
    let seeds = std::env::var("GPUPLAN_INVARIANT_SEEDS").unwrap_or_default();
    match seeds.split_once("..") {
        Some((a, b)) => (a.parse().unwrap_or(1), b.parse().unwrap_or(default)),
        None => (1, seeds.parse().unwrap_or(default)),
    }
}

/// Every plan `make` generates over the seed range, recommended, written and checked: how
/// many seeds ran, how many plans loaded, and each failure with its plan. With `must_load`, a
/// plan that does not load is a defect of the generator; otherwise it is a combination the
/// validator refuses (an allow-list naming no SKU of the provider), not a recommendation.
fn sweep(
    prefix: &str,
    default: u64,
    make: fn(u64) -> String,
    must_load: bool,
) -> (u64, u64, Vec<String>) {
    let catalog = Catalog::embedded(&Provider::ALL).expect("catalog");
    let (from, to) = seed_range(default);
    let mut failures = Vec::new();
    let mut loaded = 0;
    for seed in from..=to {
        let text = make(seed);
        match violations(&format!("{prefix}-{seed}.toml"), &text, &catalog) {
            Ok(v) => {
                loaded += 1;
                if !v.is_empty() {
                    failures.push(format!("seed {seed}:\n  {}\n{text}", v.join("\n  ")));
                }
            }
            Err(e) if e.starts_with("the written plan") => {
                failures.push(format!("seed {seed}: {e}\n{text}"))
            }
            Err(e) if must_load => {
                panic!("seed {seed}: the generated plan does not load: {e}\n{text}")
            }
            Err(_) => {}
        }
    }
    eprintln!(
        "{prefix}: {loaded} of {} generated plans load",
        to - from + 1
    );
    let first: Vec<String> = failures.iter().take(8).cloned().collect();
    assert!(
        failures.is_empty(),
        "{} of {loaded} generated plans fail:\n{}",
        failures.len(),
        first.join("\n")
    );
    (to - from + 1, loaded, failures)
}

#[test]
fn recommended_pools_pass_check_on_wider_generated_plans() {
    let (ran, loaded, _) = sweep("wide", 200, generated_wide, false);
    assert!(
        loaded * 2 > ran,
        "most generated plans load ({loaded} of {ran})"
    );
}

#[test]
fn recommended_pools_pass_check_on_generated_plans() {
    let (ran, loaded, _) = sweep("gen", 300, generated, true);
    assert_eq!(loaded, ran);
}

/// The recommendation for one plan, its written plan's fit errors, and the pools.
fn hand(text: &str) -> (gpuplan::engine::recommend::Recommendation, Vec<String>) {
    let catalog = Catalog::embedded(&Provider::ALL).expect("catalog");
    let p = load("hand.toml", text.to_owned(), &catalog).expect("loads");
    let rec = recommend(&p, &catalog);
    let v = violations("hand.toml", text, &catalog).expect("checks");
    (rec, v)
}

const HEAD_AWS: &str = "version = 1\n[plan]\nname = \"h\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n";

#[test]
fn a_70b_tensor_parallel_replica_gets_memory_for_weights_kv_cache_and_its_cap() {
    // 70B bf16 = 130.39 GiB of weights + 60 GiB KV cache = 190.39 GiB in a vLLM instance
    // capped at 0.9, over 4 GPUs: each GPU must offer 190.39 / 0.9 / 4 = 52.9 GiB. Four L40S
    // (48 GB) give 172.8 GiB under the cap and are out; 4 x A100 80GB give 288.
    let text = HEAD_AWS.to_owned()
        + r#"
[[workload]]
name = "chat"
team = "apps"
kind = "inference"
replicas = 2
gpus = 4
model = { params_billion = 70, precision = "bf16" }
kv_cache_gib = 60
gpu_models = ["L40S", "A100-80GB", "H100-80GB"]

[workload.server]
engine = "vllm"
gpu_memory_utilization = 0.9
tensor_parallel_size = 4
"#;
    let (rec, v) = hand(&text);
    assert!(v.is_empty(), "{v:?}");
    let p = &rec.pools[0];
    assert_ne!(p.gpu_model, "L40S", "{p:#?}");
    let catalog = Catalog::embedded(&[Provider::Aws]).expect("catalog");
    let mem = catalog.gpu(&p.gpu_model).expect("gpu").memory_gib;
    assert!(4.0 * mem * 0.9 >= 190.39, "{}", p.gpu_model);
}

#[test]
fn a_mig_replica_gets_a_slice_that_holds_it_under_its_cap() {
    // 7B bf16 = 13.04 GiB + 5 GiB KV = 18.04 GiB at a 0.9 cap needs a 20.04 GiB slice: not
    // 1g.20gb (18 GiB under the cap) nor 2g.20gb; 3g.40gb on an A100 80GB.
    let text = HEAD_AWS.to_owned()
        + r#"
[cluster]
mig_manager = "gpu-operator"

[[workload]]
name = "small"
team = "apps"
kind = "inference"
replicas = 3
gpus = 1
sharing = "mig"
model = { params_billion = 7, precision = "bf16" }
kv_cache_gib = 5
gpu_models = ["A100-80GB"]

[workload.server]
engine = "vllm"
gpu_memory_utilization = 0.9
"#;
    let (rec, v) = hand(&text);
    assert!(v.is_empty(), "{v:?}");
    let layout = rec.pools[0]
        .mig_layout
        .clone()
        .or_else(|| rec.pools[0].mig_configs.first().map(|c| c.layout.clone()))
        .expect("a MIG layout");
    assert!(
        layout
            .keys()
            .all(|k| k.starts_with("3g") || k.starts_with("4g") || k.starts_with("7g")),
        "{layout:?}"
    );
}

#[test]
fn time_sliced_notebooks_are_packed_by_memory_and_capped_to_fit() {
    // 12 notebooks of 10 GiB that declare time-slicing and state no utilisation: the default
    // compute share (0.1) allows 10 per GPU, memory on an A100 80GB allows 7 at the rounded
    // cap 0.13 (0.95 / 7, 10.4 GiB each): 2 GPUs, not 12 dedicated ones.
    let text = "version = 1\n[plan]\nname = \"nb\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n".to_owned()
        + r#"
[[workload]]
name = "notebooks"
team = "research"
kind = "notebook"
replicas = { min = 0, max = 12 }
gpus = 1
sharing = "time-slicing"
gpu_memory_gib = 10
gpu_models = ["A100-80GB"]
fault_domain = "nb"

[[decision]]
fault_domain = "nb"
decided_by = "lead"
date = 2026-11-02
reason = "notebooks tolerate a noisy neighbour"
"#;
    let (rec, v) = hand(&text);
    assert!(v.is_empty(), "{v:?}");
    let p = &rec.pools[0];
    assert_eq!(p.sharing, gpuplan::core::Sharing::TimeSlicing, "{p:#?}");
    assert_eq!(p.time_slicing_replicas, Some(7), "{p:#?}");
    assert_eq!(p.gpus.max, 2, "{p:#?}");
    assert!(
        p.why.to_string().contains("compute share 0.1 assumed"),
        "{}",
        p.why
    );

    // A 3B bf16 server (5.59 GiB of weights, and a tenth of the instance kept for KV cache:
    // 6.21 GiB) on 24 GiB L4s: 0.95 / 4 rounds to 0.23 = 5.52 GiB, too little; 3 per GPU at
    // 0.31 = 7.44 GiB holds it.
    let text = HEAD_AWS.to_owned()
        + r#"
[[workload]]
name = "small-llm"
team = "apps"
kind = "notebook"
replicas = { min = 0, max = 6 }
gpus = 1
sharing = "time-slicing"
utilization = 0.2
model = { params_billion = 3, precision = "bf16" }
gpu_models = ["L4"]
fault_domain = "nb"

[workload.server]
engine = "vllm"

[[decision]]
fault_domain = "nb"
decided_by = "lead"
date = 2026-11-02
reason = "dev servers"
"#;
    let (rec, v) = hand(&text);
    assert!(v.is_empty(), "{v:?}");
    let p = &rec.pools[0];
    assert_eq!(p.time_slicing_replicas, Some(3), "{p:#?}");
    assert_eq!(p.gpu_memory_utilization, Some(0.31), "{p:#?}");
}

#[test]
fn write_plan_rewrites_the_pools_in_place_and_keeps_everything_else() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.toml");
    let original = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/azure-inference.toml"),
    )
    .expect("example");
    std::fs::write(&plan, &original).expect("copy");
    let run = |args: &[&str]| {
        assert_cmd::Command::cargo_bin("gpuplan")
            .expect("binary")
            .env("GPUPLAN_TODAY", "2026-12-03")
            .env("NO_COLOR", "1")
            .env("GPUPLAN_CACHE", dir.path().join("cache"))
            .args(args)
            .output()
            .expect("runs")
    };
    let p = plan.to_str().expect("utf-8");
    let out = run(&["recommend", p, "--write-plan", p, "--format", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = std::fs::read_to_string(&plan).expect("written");
    // Comments and the workloads stay as written; the pools are the recommended ones.
    for line in original.lines().filter(|l| l.trim_start().starts_with('#')) {
        if !line.contains("[[pool]]") {
            assert!(written.contains(line), "lost comment {line:?}");
        }
    }
    let rec: serde_json::Value = crate::common::contract(&out.stdout).expect("json");
    for pool in rec["pools"].as_array().expect("pools") {
        let name = pool["name"].as_str().expect("name");
        assert!(
            written.contains(&format!("name = \"{name}\"")),
            "{name} missing"
        );
    }
    assert!(written.contains("# recommended by gpuplan: "));
    // AKS creates one profile per pool; the notebooks share T4s four ways.
    assert!(written.contains("mig_profile = \"3g.40gb\""), "{written}");
    assert!(written.contains("time_slicing_replicas = 4"), "{written}");
    // The written plan checks clean of errors, and writing it again changes nothing.
    let check = run(&["check", p]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    let again = run(&["recommend", p, "--write-plan", p]);
    assert_eq!(again.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&plan).expect("read"), written);

    // An unwritable destination is an error that leaves the plan alone.
    let bad = dir.path().join("no/such/dir/out.toml");
    let out = run(&["recommend", p, "--write-plan", bad.to_str().expect("utf-8")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot write"));
    assert_eq!(std::fs::read_to_string(&plan).expect("read"), written);
}

#[test]
fn aks_mig_takes_only_creatable_profiles_and_upsizes_when_it_saves_a_gpu() {
    // A100 80GB (NC24ads_A100_v4, one GPU a node) under AKS: five replicas need a 1g.10gb, one
    // a 2g.20gb, one a 3g.40gb. Three single-profile pools take 3 GPUs; the 2g replica can
    // take the second slot of the MIG3g GPU, so 2 GPUs suffice.
    let mut text = "version = 1\n[plan]\nname = \"aks\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n[cluster]\nmig_manager = \"aks\"\n".to_owned();
    for (name, replicas, frac, gib) in [
        ("small", 5, "0.14", 8),
        ("mid", 1, "0.28", 18),
        ("large", 1, "0.42", 35),
    ] {
        text += &format!(
            "\n[[workload]]\nname = \"{name}\"\nteam = \"t\"\nkind = \"inference\"\nreplicas = {replicas}\ngpu_fraction = {frac}\nsharing = \"mig\"\ngpu_memory_gib = {gib}\nskus = [\"Standard_NC24ads_A100_v4\"]\n"
        );
    }
    let (rec, v) = hand(&text);
    assert!(v.is_empty(), "{v:?}");
    let gpus: u32 = rec.pools.iter().map(|p| p.gpus.max).sum();
    assert_eq!(gpus, 2, "{:#?}", rec.pools);
    let catalog = Catalog::embedded(&[Provider::Azure]).expect("catalog");
    let spec = catalog
        .gpu("A100-80GB")
        .and_then(|g| g.mig.clone())
        .expect("mig");
    for p in &rec.pools {
        let layout = p.mig_layout.as_ref().expect("one layout");
        assert_eq!(layout.len(), 1, "one profile per AKS pool");
        let profile = layout.keys().next().expect("profile");
        assert!(
            spec.aks_creates(profile),
            "{profile} is not creatable on AKS"
        );
    }
    let mid = rec
        .pools
        .iter()
        .find(|p| p.workloads.contains(&"mid".to_owned()))
        .expect("mid");
    assert!(
        mid.why
            .to_string()
            .contains("`mid` takes `3g.40gb` instead of its own `2g.20gb`"),
        "{}",
        mid.why
    );

    // A replica needing 18 GiB on AKS never gets 1g.20gb (AKS cannot create it) ...
    let one = "version = 1\n[plan]\nname = \"aks\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\n\n[[workload]]\nname = \"mid\"\nteam = \"t\"\nkind = \"inference\"\nreplicas = 3\ngpu_fraction = 0.14\nsharing = \"mig\"\ngpu_memory_gib = 18\nskus = [\"Standard_NC24ads_A100_v4\"]\n";
    let (rec, _) = hand(one);
    let p = rec
        .pools
        .iter()
        .find(|p| p.workloads.contains(&"mid".to_owned()))
        .expect("mid");
    assert_eq!(
        p.mig_layout
            .as_ref()
            .and_then(|l| l.keys().next().cloned())
            .as_deref(),
        Some("2g.20gb")
    );

    // ... and a declared AKS pool asking for it is refused, naming what AKS creates.
    let declared = text.clone()
        + "\n[[pool]]\nname = \"p\"\nsku = \"Standard_NC24ads_A100_v4\"\nregion = \"eastus\"\nnodes = 3\nsharing = \"mig\"\nmig_profile = \"1g.20gb\"\nworkloads = [\"small\"]\n";
    let p = load("declared.toml", declared, &catalog).expect("loads");
    let f = rules::check(&p, &catalog, TODAY, &Levels::default());
    let gp015 = f
        .iter()
        .find(|d| d.code.as_str() == "GP015")
        .expect("GP015");
    assert!(
        gp015.message.contains("`1g.20gb`, which AKS cannot create"),
        "{}",
        gp015.message
    );
    assert!(
        gp015.message.contains("`2g.20gb` (MIG2g)"),
        "{}",
        gp015.message
    );
}

#[test]
fn each_workload_is_recommended_under_its_declared_pools_mig_manager() {
    // The cluster is AKS's (Azure's default); `embed`'s declared pool says the GPU Operator
    // partitions its GPUs. Its recommended pool must keep that manager (per-GPU layouts, which
    // AKS cannot create), while `chat` stays with AKS and one creatable profile.
    let text = include_str!("../fixtures/render/per-pool-mig.toml");
    let (rec, v) = hand(text);
    assert!(v.is_empty(), "{v:?}");
    let embed = pool_holding(&rec, "embed");
    assert_eq!(embed.mig_manager, gpuplan::core::MigManager::GpuOperator);
    let chat = pool_holding(&rec, "chat");
    assert_eq!(chat.mig_manager, gpuplan::core::MigManager::Aks);
    assert_ne!(embed.name, chat.name, "pools of two managers never merge");
    // Written back, the GPU-Operator pool says so (else the AKS cluster's manager applies).
    let catalog = Catalog::embedded(&Provider::ALL).expect("catalog");
    let p = load("hand.toml", text.to_owned(), &catalog).expect("loads");
    let written: toml::Table =
        toml::from_str(&plan_with_pools(&p, &rec, |pool| pool.why.to_string()).expect("written"))
            .expect("TOML");
    let pools = written["pool"].as_array().expect("pools");
    let manager_of = |w: &str| {
        pools
            .iter()
            .find(|p| {
                p["workloads"]
                    .as_array()
                    .is_some_and(|ws| ws.iter().any(|x| x.as_str() == Some(w)))
            })
            .and_then(|p| p.get("mig_manager"))
            .and_then(|m| m.as_str())
    };
    assert_eq!(manager_of("embed"), Some("gpu-operator"));
    assert_eq!(
        manager_of("chat"),
        None,
        "the cluster's own manager is not repeated"
    );

    // And the other way round: a GPU-Operator cluster with one AKS-managed pool.
    let flipped = text
        .replace(
            "[[workload]]\nname = \"chat\"",
            "[cluster]\nmig_manager = \"gpu-operator\"\n\n[[workload]]\nname = \"chat\"",
        )
        .replace("mig_manager = \"gpu-operator\"\nmig_layout", "mig_layout");
    let (rec, v) = hand(&flipped);
    assert!(v.is_empty(), "{v:?}");
    assert_eq!(
        pool_holding(&rec, "chat").mig_manager,
        gpuplan::core::MigManager::Aks
    );
    assert_eq!(
        pool_holding(&rec, "embed").mig_manager,
        gpuplan::core::MigManager::GpuOperator
    );
}

/// The (first) recommended pool that holds workload `w`.
fn pool_holding<'r>(
    rec: &'r gpuplan::engine::recommend::Recommendation,
    w: &str,
) -> &'r gpuplan::engine::recommend::RecPool {
    rec.pools
        .iter()
        .find(|p| p.workloads.iter().any(|x| x == w))
        .unwrap_or_else(|| panic!("`{w}` is placed"))
}

#[test]
fn an_aks_workload_splits_over_profiles_when_that_saves_a_gpu() {
    // One A100 80GB per node (NC24ads_A100_v4), AKS-managed MIG. `embed`: 8 replicas of 8 GiB
    // at a seventh of a GPU each (1g.10gb); `rerank`: one replica of 30 GiB (3g.40gb). Kept
    // whole: MIG1g holds 7 per GPU, so embed takes 2 GPUs and rerank a third. Split: 7 embed
    // replicas on one MIG1g GPU and the eighth in the spare 3g.40gb slot beside rerank (a
    // MIG3g GPU has two): 2 GPUs. Every pod asks for `nvidia.com/gpu` under AKS's single
    // strategy, so either pool runs an embed replica.
    let text = r#"version = 1
[plan]
name = "split"
owner = "platform"
provider = "azure"
regions = ["eastus"]

[cluster]
mig_manager = "aks"

[[workload]]
name = "embed"
team = "search"
kind = "inference"
replicas = 8
sharing = "mig"
gpu_fraction = 0.14
gpu_memory_gib = 8
skus = ["Standard_NC24ads_A100_v4"]

[[workload]]
name = "rerank"
team = "search"
kind = "inference"
replicas = 1
sharing = "mig"
gpu_fraction = 0.4
gpu_memory_gib = 30
skus = ["Standard_NC24ads_A100_v4"]
"#;
    let (rec, v) = hand(text);
    assert!(v.is_empty(), "the written plan passes check: {v:?}");
    let nodes: u32 = rec.pools.iter().map(|p| p.nodes.max).sum();
    assert_eq!(nodes, 2, "{:#?}", rec.pools);
    let holding: Vec<_> = rec
        .pools
        .iter()
        .filter(|p| p.workloads.iter().any(|w| w == "embed"))
        .collect();
    assert_eq!(holding.len(), 2, "embed is split over two pools");
    assert!(holding
        .iter()
        .all(|p| p.mig_manager == gpuplan::core::MigManager::Aks));
    let three = holding
        .iter()
        .find(|p| {
            p.mig_layout
                .as_ref()
                .is_some_and(|l| l.contains_key("3g.40gb"))
        })
        .expect("the 3g.40gb pool holds an embed replica");
    assert!(
        three
            .why
            .to_string()
            .contains("`embed` is split over this family's profiles: 1 of its 8"),
        "{}",
        three.why
    );
    let embed = rec
        .workloads
        .iter()
        .find(|w| w.workload == "embed")
        .expect("embed's cost");
    assert!(
        embed.pool.is_some() && embed.also_pools.len() == 1,
        "{embed:?}"
    );
    // The team's cost is the fleet's: nothing counted twice.
    let teams: f64 = rec.teams.iter().map(|t| t.monthly_cost_usd).sum();
    assert!(
        (teams - rec.total_monthly_cost_usd).abs() < 0.05,
        "{teams} vs {}",
        rec.total_monthly_cost_usd
    );

    // Rendered, the split workload is one serving entry whose pods may run in either pool.
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let plan = dir.join("split.toml");
    std::fs::write(&plan, text).expect("write");
    common::gpuplan(&dir.join("no-cache"))
        .args(["--quiet", "render"])
        .arg(&plan)
        .arg("--out")
        .arg(dir.join("out"))
        .assert()
        .success();
    let values = std::fs::read_to_string(dir.join("out/workloads/values.yaml")).expect("values");
    let v: serde_yaml::Value = serde_yaml::from_str(&values).expect("YAML");
    let terms = &v["embed"]["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
        ["matchExpressions"][0];
    let mut names: Vec<&str> = holding.iter().map(|p| p.name.as_str()).collect();
    names.sort_unstable();
    let mut got: Vec<&str> = terms["values"]
        .as_sequence()
        .expect("values")
        .iter()
        .filter_map(|x| x.as_str())
        .collect();
    got.sort_unstable();
    assert_eq!(got, names, "{values}");
    assert_eq!(
        values.matches("\n\"embed\":").count(),
        1,
        "one entry: {values}"
    );
}

/// One workload as a proptest value: each field an index into what platform teams write.
#[derive(Debug, Clone)]
struct GenWorkload {
    kind: usize,
    sharing: usize,
    need: usize,
    fraction: usize,
    min: u32,
    extra: u32,
    cap: usize,
    models: usize,
}

fn gen_workload() -> impl proptest::strategy::Strategy<Value = GenWorkload> {
    use proptest::prelude::*;
    (
        0usize..5,
        0usize..5,
        0usize..8,
        0usize..5,
        0u32..3,
        0u32..9,
        0usize..4,
        0usize..4,
    )
        .prop_map(
            |(kind, sharing, need, fraction, min, extra, cap, models)| GenWorkload {
                kind,
                sharing,
                need,
                fraction,
                min,
                extra,
                cap,
                models,
            },
        )
}

/// The plan text of a proptest case: a provider, a MIG manager and the workloads.
fn proptest_plan(azure: bool, aks: bool, ws: &[GenWorkload]) -> String {
    let (provider, region) = if azure {
        ("azure", "eastus")
    } else {
        ("aws", "us-east-1")
    };
    let mm = if azure && aks { "aks" } else { "gpu-operator" };
    let mut t = format!(
        "version = 1\n[plan]\nname = \"prop\"\nowner = \"o\"\nprovider = \"{provider}\"\nregions = [\"{region}\"]\n[cluster]\nmig_manager = \"{mm}\"\n"
    );
    let kinds = ["inference", "notebook", "batch", "inference", "inference"];
    let sharings = ["dedicated", "mig", "time-slicing", "mps", "shared-server"];
    let needs = [
        "",
        "gpu_memory_gib = 6\n",
        "gpu_memory_gib = 11\n",
        "gpu_memory_gib = 21\n",
        "gpu_memory_gib = 22\n",
        "model = { params_billion = 7, precision = \"bf16\" }\nkv_cache_gib = 4\n",
        "model = { params_billion = 8, precision = \"fp8\" }\n",
        "model = { params_billion = 13, precision = \"int4\" }\nkv_cache_gib = 2\n",
    ];
    let fractions = [
        "",
        "gpu_fraction = 0.1\n",
        "gpu_fraction = 0.25\n",
        "gpu_fraction = 0.4\n",
        "utilization = 0.3\n",
    ];
    let caps = ["", "0.5", "0.8", "0.9"];
    let models: &[&str] = if azure {
        &[
            "",
            "gpu_models = [\"A100-80GB\"]\n",
            "gpu_models = [\"T4\"]\n",
            "gpu_models = [\"H100-80GB\", \"A100-80GB\"]\n",
        ]
    } else {
        &[
            "",
            "gpu_models = [\"A100-80GB\"]\n",
            "gpu_models = [\"L4\"]\n",
            "gpu_models = [\"A10G\", \"L40S\"]\n",
        ]
    };
    let mut shared = false;
    for (i, w) in ws.iter().enumerate() {
        let kind = kinds[w.kind];
        let sharing = sharings[w.sharing];
        let min = if kind == "inference" { w.min.max(1) } else { 0 };
        t += &format!(
            "\n[[workload]]\nname = \"w{i}\"\nteam = \"t{}\"\nkind = \"{kind}\"\nreplicas = {{ min = {min}, max = {} }}\nsharing = \"{sharing}\"\n{}",
            i % 2,
            (min + w.extra).max(1),
            needs[w.need]
        );
        if sharing != "dedicated" {
            t += fractions[w.fraction];
            t += "fault_domain = \"shared\"\n";
            shared = true;
        }
        t += models[w.models];
        if kind == "inference" && w.cap > 0 {
            t += &format!(
                "\n[workload.server]\nengine = \"vllm\"\ngpu_memory_utilization = {}\n",
                caps[w.cap]
            );
        }
    }
    if shared {
        t += "\n[[decision]]\nfault_domain = \"shared\"\ndecided_by = \"lead\"\ndate = 2026-11-02\nreason = \"r\"\n";
    }
    t
}

proptest::proptest! {
    // A fixed seed: CI sees the same cases on every run; a failure shrinks to its smallest plan.
    #![proptest_config(proptest::test_runner::Config {
        cases: 512,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x6770_7570_6c61_6e00),
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    })]

    #[test]
    fn recommended_pools_pass_check_as_a_property(
        azure in proptest::bool::ANY,
        aks in proptest::bool::ANY,
        ws in proptest::collection::vec(gen_workload(), 1..5),
    ) {
        let catalog = catalog_all();
        let text = proptest_plan(azure, aks, &ws);
        if let Ok(v) = violations("prop.toml", &text, catalog) {
            proptest::prop_assert!(v.is_empty(), "{}\n{text}", v.join("\n"));
        }
    }
}

fn catalog_all() -> &'static Catalog {
    static C: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
    C.get_or_init(|| Catalog::embedded(&Provider::ALL).expect("catalog"))
}
