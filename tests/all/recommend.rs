//! `gpuplan recommend` as users run it: formats, exit codes, snapshots of the rendered answer.

use assert_cmd::Command;

fn gpuplan() -> Command {
    let mut c = Command::cargo_bin("gpuplan").expect("binary");
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("GPUPLAN_TODAY", "2026-12-02")
        .env("NO_COLOR", "1")
        .env_remove("GPUPLAN_CATALOG")
        .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache");
    c
}

fn stdout(args: &[&str], code: i32) -> String {
    let out = gpuplan()
        .args(args)
        .assert()
        .code(code)
        .get_output()
        .clone();
    String::from_utf8(out.stdout).expect("utf-8")
}

/// Example plans and the exit code `recommend` gives them: mixed-estate is over budget and
/// asks for a 70B model on one GPU, on purpose.
const EXAMPLES: [(&str, i32); 4] = [
    ("azure-inference", 0),
    ("aws-training", 0),
    ("mixed-estate", 1),
    ("minimal", 0),
];

#[test]
fn examples_render_in_every_format() {
    for (name, code) in EXAMPLES {
        let path = format!("plans/{name}.toml");
        let human = stdout(&["recommend", &path], code);
        insta::assert_snapshot!(format!("{name}_human"), human);
        let md = stdout(&["recommend", "--format", "markdown", &path], code);
        insta::assert_snapshot!(format!("{name}_markdown"), md);
        let json = stdout(&["recommend", "--format", "json", &path], code);
        let v: serde_json::Value = crate::common::contract(&json).expect("json");
        insta::assert_json_snapshot!(format!("{name}_json"), v);
    }
}

#[test]
fn json_follows_the_contract() {
    let json = stdout(
        &[
            "recommend",
            "--format",
            "json",
            "plans/azure-inference.toml",
        ],
        0,
    );
    let v: serde_json::Value = crate::common::contract(&json).expect("json");
    assert_eq!(v["schema"], "gpuplan.recommendation/v1");
    assert_eq!(v["plan"], "azure-inference");
    assert!(v["total_monthly_cost_usd"].as_f64().is_some());
    let pools = v["pools"].as_array().expect("pools");
    assert!(!pools.is_empty());
    for p in pools {
        for key in [
            "name",
            "provider",
            "region",
            "sku",
            "gpu_model",
            "gpus_per_node",
            "nodes",
            "capacity",
            "sharing",
            "mig_layout",
            "time_slicing_replicas",
            "workloads",
            "monthly_cost_usd",
        ] {
            assert!(p.get(key).is_some(), "pool lacks `{key}`: {p}");
        }
        assert!(p["nodes"]["min"].as_u64() <= p["nodes"]["max"].as_u64());
    }
    let sum: f64 = pools
        .iter()
        .map(|p| p["monthly_cost_usd"].as_f64().unwrap_or(0.0))
        .sum();
    let total = v["total_monthly_cost_usd"].as_f64().unwrap_or(0.0);
    assert!((sum - total).abs() < 0.05, "{sum} vs {total}");
    assert!(v["findings"].as_array().is_some());
}

#[test]
fn same_input_same_bytes() {
    let a = stdout(
        &["recommend", "--format", "json", "plans/mixed-estate.toml"],
        1,
    );
    let b = stdout(
        &["recommend", "--format", "json", "plans/mixed-estate.toml"],
        1,
    );
    assert_eq!(a, b);
}

#[test]
fn unsatisfiable_plan_exits_1_and_names_the_constraint() {
    let plan = r#"version = 1
[plan]
name = "too-big"
owner = "o"
provider = "aws"
regions = ["us-east-1"]

[[workload]]
name = "giant"
team = "t"
kind = "inference"
gpus = 1
gpu_memory_gib = 400
"#;
    let out = gpuplan()
        .args(["recommend", "-"])
        .write_stdin(plan)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("gpu memory"), "{err}");
    assert!(err.contains("giant"), "{err}");
}

#[test]
fn host_cpu_is_what_the_kubelet_leaves() {
    // A 64-vCPU AKS node keeps 740 m for the kubelet (AKS's published table) and gpuplan
    // assumes 0.5 vCPU of system DaemonSets: 62.76 vCPUs for pods.
    let plan = |cpu: &str, cluster: &str| {
        format!(
            r#"version = 1
[plan]
name = "cpu-heavy"
owner = "o"
provider = "azure"
regions = ["eastus"]
{cluster}
[[workload]]
name = "encoder"
team = "t"
kind = "inference"
gpus = 1
gpu_models = ["T4"]
cpu = {cpu}
"#
        )
    };
    let run = |text: String, code: i32| {
        gpuplan()
            .args(["recommend", "--format", "json", "-"])
            .write_stdin(text)
            .assert()
            .code(code)
            .get_output()
            .clone()
    };
    let out = run(plan("62.7", ""), 0);
    let json: serde_json::Value = crate::common::contract(&out.stdout).expect("json");
    assert_eq!(json["pools"][0]["sku"], "Standard_NC64as_T4_v3", "{json}");
    let out = run(plan("62.8", ""), 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("host cpu"), "{err}");
    assert!(err.contains("62.76 allocatable"), "{err}");
    // A cluster whose agents ask for 2 vCPUs a node says so, and the same replica no longer fits.
    let out = run(plan("62.7", "[cluster]\ndaemonset_cpu = 2\n"), 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("61.26 allocatable"), "{err}");
    let out = run(plan("60", "[cluster]\ndaemonset_cpu = 2\n"), 0);
    assert!(!out.stdout.is_empty());
    // Out of range is a located plan error, exit 2.
    let out = run(plan("60", "[cluster]\ndaemonset_cpu = -1\n"), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("daemonset_cpu") && err.contains(":8:"),
        "{err}"
    );
}

#[test]
fn budget_below_the_recommendation_exits_1() {
    let plan = r#"version = 1
[plan]
name = "tight"
owner = "o"
provider = "azure"
regions = ["eastus"]
monthly_budget = 100

[[workload]]
name = "api"
team = "t"
kind = "inference"
user_facing = true
"#;
    let out = gpuplan()
        .args(["recommend", "--format", "json", "-"])
        .write_stdin(plan)
        .assert()
        .code(1)
        .get_output()
        .clone();
    let v: serde_json::Value = crate::common::contract(&out.stdout).expect("json");
    assert_eq!(v["findings"][0]["rule"], "GP017");
}

#[test]
fn invalid_plan_exits_2_with_a_location() {
    let out = gpuplan()
        .args(["recommend", "-"])
        .write_stdin(
            "version = 1\n[plan]\nname = \"x\"\nowner = \"o\"\nprovider = \"gcp\"\nregions = []\n",
        )
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("5:12") || err.contains(":5:"), "{err}");
}

#[test]
fn verbose_reports_time_and_memory() {
    let out = gpuplan()
        .args(["recommend", "--verbose", "plans/minimal.toml"])
        .assert()
        .code(0)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("peak RSS"), "{err}");
}

#[test]
fn explain_states_the_model_and_its_assumptions() {
    let text = stdout(&["explain", "recommend"], 0);
    for needle in [
        "hazard 4.886e-4 per node-hour",
        "35 min for one node, 95 min for a 64-node gang",
        "5.41x",
        "gpu memory",
        "740 m on AKS and 230 m on EKS for a 64-vCPU node",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }
}

/// Issue 41: a model is placed only on a GPU that computes in its precision (bf16 from compute
/// capability 8.0, fp8 from 8.9; `[precision]` in providers/assumptions.toml). A 3B bf16 model
/// went to a T4 (7.5); limited to T4s it is unsatisfiable and the reason says precision.
#[test]
fn a_model_goes_only_where_its_precision_computes() {
    let plan = |precision: &str, models: &str| {
        format!(
            "version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n\n[[workload]]\nname = \"chat\"\nteam = \"t\"\nkind = \"inference\"\nmodel = {{ params_billion = 3, precision = \"{precision}\" }}\n{models}"
        )
    };
    let gpu_of = |text: String| -> String {
        let out = gpuplan()
            .args(["recommend", "--format", "json", "-"])
            .write_stdin(text)
            .assert()
            .code(0)
            .get_output()
            .clone();
        let v: serde_json::Value = crate::common::contract(&out.stdout).expect("json");
        v["pools"][0]["gpu_model"].as_str().expect("gpu").to_owned()
    };
    let cc = |gpu: &str| -> f64 {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("providers/gpus.toml"),
        )
        .expect("gpus.toml");
        let t: toml::Table = toml::from_str(&text).expect("toml");
        t["gpu"]
            .as_array()
            .expect("gpus")
            .iter()
            .find(|g| g["name"].as_str() == Some(gpu))
            .and_then(|g| g.get("compute_capability"))
            .and_then(|c| c.as_str())
            .and_then(|c| c.parse().ok())
            .expect("a compute capability")
    };
    // fp16 may take the cheapest card; bf16 and fp8 only newer ones.
    assert!(cc(&gpu_of(plan("fp16", ""))) >= 7.0);
    assert!(cc(&gpu_of(plan("bf16", ""))) >= 8.0);
    assert!(cc(&gpu_of(plan("fp8", ""))) >= 8.9);
    let out = gpuplan()
        .args(["recommend", "-"])
        .write_stdin(plan("bf16", "gpu_models = [\"T4\"]\n"))
        .assert()
        .code(1)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("precision") && err.contains("7.5"), "{err}");
}

/// Issue 40: a declared pool whose workloads quota keeps from being placed is not idle.
/// recommend advised "no workload needs it: delete the pool" with the whole pool as saving;
/// it now keeps it, says what quota the work needs, and claims no saving.
#[test]
fn a_pool_whose_work_quota_blocks_is_kept() {
    let out = stdout(
        &[
            "recommend",
            "--format",
            "json",
            "tests/fixtures/render/quota-blocked.toml",
        ],
        1,
    );
    let v: serde_json::Value = crate::common::contract(&out).expect("json");
    let c = &v["comparison"];
    let change = &c["changes"][0];
    let note = change["note"].as_str().expect("note");
    assert!(!note.to_string().contains("delete"), "{note}");
    assert!(
        note.starts_with("keep it") && note.to_string().contains("96 vCPUs"),
        "{note}"
    );
    assert!(change["saving_usd"].is_null(), "{change:#}");
    assert_eq!(c["saving_usd"].as_f64(), Some(0.0), "{c:#}");
    assert_eq!(c["not_compared"][0], "train");
}

/// Issue 74 item 2 (its finding, not yet a fallback): a 16-node p4d.24xlarge gang on spot had
/// its restart arithmetic right but nothing said that every interruption needs all 16 nodes
/// again at once, that no availability signal exists offline, or that no fallback is rendered.
/// A `spot-gang` note says so for every gang on a spot pool, and only there.
#[test]
fn a_spot_gang_is_named_as_a_capacity_risk() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("gang.toml");
    let text = crate::common::SPOT_GANG_PLAN;
    let findings = |text: &str| -> Vec<serde_json::Value> {
        std::fs::write(&plan, text).expect("plan");
        let out = gpuplan()
            .args(["recommend", "--format", "json"])
            .arg(&plan)
            .output()
            .expect("recommend");
        let rec = crate::common::contract(&out.stdout).expect("json");
        rec["findings"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .filter(|f| f["rule"] == "spot-gang")
            .collect()
    };
    let on_spot = findings(text);
    assert_eq!(on_spot.len(), 1, "{on_spot:#?}");
    let message = on_spot[0]["message"].as_str().unwrap_or("");
    assert!(
        message.contains("a gang of 16 p4d.24xlarge nodes on spot")
            && message.contains("no availability signal exists offline"),
        "{message}"
    );
    // Off spot, nothing to say.
    assert!(findings(&text.replace("interruptible = true\n", "")).is_empty());
}

/// Issue 74 item 2: where a live refresh read EC2 spot placement scores, the spot-gang note
/// gives the score for the pool's GPU model and region, and says it was asked for one
/// instance; offline it says no signal exists and where one comes from.
#[test]
fn a_spot_gang_note_reads_the_refreshed_placement_score() {
    let dir = tempfile::tempdir().expect("tmp");
    let cache = dir.path().join("cache");
    let file = cache.join("aws/spot-placement.csv");
    std::fs::create_dir_all(file.parent().expect("dir")).expect("dir");
    std::fs::write(
        cache.join("CACHEDIR.TAG"),
        "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by gpuplan.\n",
    )
    .expect("tag");
    std::fs::write(
        cache.join("sources.toml"),
        "[[file]]\npath = \"aws/spot-placement.csv\"\nkind = \"spot-bands\"\nprovider = \"aws\"\nas_of = \"2026-12-01\"\nsource = \"EC2 GetSpotPlacementScores (test)\"\nlicence = \"test\"\n",
    )
    .expect("sources");
    std::fs::write(
        &file,
        "gpu_model,region,score,captured,source\nA100-40GB,us-east-1,3,2026-12-01,EC2 GetSpotPlacementScores\n",
    )
    .expect("scores");
    let plan = dir.path().join("gang.toml");
    std::fs::write(&plan, crate::common::SPOT_GANG_PLAN).expect("plan");
    let message = |cache: &std::path::Path| -> String {
        let out = crate::common::gpuplan(cache)
            .args(["recommend", "--format", "json"])
            .arg(&plan)
            .output()
            .expect("recommend");
        let rec = crate::common::contract(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        rec["findings"]
            .as_array()
            .and_then(|f| f.iter().find(|f| f["rule"] == "spot-gang"))
            .and_then(|f| f["message"].as_str())
            .expect("a spot-gang note")
            .to_owned()
    };
    let live = message(&cache);
    assert!(
        live.contains("spot placement score for A100-40GB in us-east-1 is 3/10")
            && live.contains("asked for one instance: 16 at once are less likely"),
        "{live}"
    );
    let offline = message(std::path::Path::new("/nonexistent/gpuplan-test-cache"));
    assert!(
        offline.contains("no availability signal exists offline")
            && offline.contains("spot placement scores"),
        "{offline}"
    );
}
