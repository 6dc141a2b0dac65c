//! The binary as users run it: exit codes, formats, bad input, every subcommand.

use std::path::Path;

use assert_cmd::Command;
use predicates::prelude::*;

fn gpuplan() -> Command {
    let mut c = Command::cargo_bin("gpuplan").expect("binary");
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("GPUPLAN_TODAY", "2026-12-02")
        .env("NO_COLOR", "1")
        .env_remove("GPUPLAN_CATALOG")
        .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache");
    c
}

#[test]
fn clean_examples_pass() {
    gpuplan()
        .args([
            "check",
            "plans/azure-inference.toml",
            "plans/aws-training.toml",
        ])
        .assert()
        .code(0);
    gpuplan()
        .args(["check", "plans/minimal.toml"])
        .assert()
        .code(0);
}

#[test]
fn trap_laden_example_fails_with_located_findings() {
    let out = gpuplan()
        .args(["check", "--format", "json", "plans/mixed-estate.toml"])
        .assert()
        .code(1)
        .get_output()
        .stdout
        .clone();
    let v: serde_json::Value = crate::common::contract(&out).expect("json");
    assert_eq!(v["schema"], "gpuplan.findings/v1");
    let rules: Vec<&str> = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| f["rule"].as_str().unwrap_or(""))
        .collect();
    for r in [
        "GP001", "GP003", "GP007", "GP009", "GP010", "GP011", "GP012", "GP013", "GP015", "GP016",
        "GP017", "GP018", "GP021", "GP025", "GP026",
    ] {
        assert!(rules.contains(&r), "{r} missing from {rules:?}");
    }
    let gp001 = v["findings"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["rule"] == "GP001"))
        .expect("GP001")
        .clone();
    assert_eq!(
        (gp001["line"].as_u64(), gp001["column"].as_u64()),
        (Some(63), Some(25))
    );
    assert_eq!(gp001["file"], "plans/mixed-estate.toml");
    assert_eq!(gp001["pool"], "shared-t4");
    insta::assert_json_snapshot!("mixed_estate_findings", v);
}

#[test]
fn expired_allow_does_not_suppress() {
    let out = gpuplan()
        .args(["check", "--format", "json", "plans/mixed-estate.toml"])
        .output()
        .expect("runs");
    let v: serde_json::Value = crate::common::contract(&out.stdout).expect("json");
    let gp025 = v["findings"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["rule"] == "GP025"))
        .expect("GP025")
        .clone();
    assert!(gp025.get("suppressed").is_none());
    // Before the expiry date the same allow suppresses it.
    let out = gpuplan()
        .args([
            "check",
            "--format",
            "json",
            "--today",
            "2026-10-01",
            "plans/mixed-estate.toml",
        ])
        .output()
        .expect("runs");
    let v: serde_json::Value = crate::common::contract(&out.stdout).expect("json");
    let gp025 = v["findings"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["rule"] == "GP025"))
        .expect("GP025")
        .clone();
    assert_eq!(gp025["suppressed"]["approved_by"], "data-lead");
}

#[test]
fn deny_warnings_and_rule_levels() {
    gpuplan()
        .args(["check", "plans/aws-training.toml", "--deny", "warnings"])
        .assert()
        .code(1);
    gpuplan()
        .args(["check", "plans/aws-training.toml", "-D", "GP024"])
        .assert()
        .code(1);
    gpuplan()
        .args([
            "check",
            "plans/aws-training.toml",
            "--deny",
            "warnings",
            "-A",
            "GP024",
            "-A",
            "GP022",
        ])
        .assert()
        .code(0);
    gpuplan()
        .args(["check", "plans/aws-training.toml", "-D", "GP999"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown rule `GP999`"));
}

#[test]
fn plan_can_raise_rule_levels_and_the_command_line_wins() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("plan.toml");
    let base = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/aws-training.toml"),
    )
    .expect("read");
    std::fs::write(&p, format!("{base}\n[rules]\ndeny = [\"GP024\"]\n")).expect("write");
    gpuplan().arg("check").arg(&p).assert().code(1);
    gpuplan()
        .arg("check")
        .arg(&p)
        .args(["-W", "GP024"])
        .assert()
        .code(0);
}

#[test]
fn several_files_in_one_call() {
    gpuplan()
        .args(["check", "plans/minimal.toml", "plans/mixed-estate.toml"])
        .assert()
        .code(1);
    gpuplan()
        .args([
            "check",
            "plans/minimal.toml",
            "tests/fixtures/bad/unknown_key.toml",
        ])
        .assert()
        .code(2);
}

#[test]
fn bad_input_gets_exit_2_and_a_location() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bad");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("dir")
        .map(|e| e.expect("entry").path())
        .collect();
    names.sort();
    assert!(names.len() >= 20);
    let mut summary = Vec::new();
    for path in names {
        let rel = path
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .expect("rel")
            .display()
            .to_string();
        let out = gpuplan()
            .args(["check", "--format", "json", &rel])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{rel}");
        let v: serde_json::Value =
            crate::common::contract(&out.stdout).expect("json even for bad input");
        let e = &v["errors"][0];
        assert_eq!(e["file"], rel.as_str());
        assert!(
            e["line"].as_u64().is_some() && e["column"].as_u64().is_some(),
            "{rel}"
        );
        assert!(e["help"].is_string(), "{rel} has no help");
        assert!(
            !String::from_utf8_lossy(&out.stderr).contains("panicked"),
            "{rel} panicked"
        );
        summary.push(format!(
            "{}: {}:{}:{} {} — {}",
            path.file_name().unwrap_or_default().to_string_lossy(),
            e["line"],
            e["column"],
            e["rule"].as_str().unwrap_or(""),
            e["message"].as_str().unwrap_or(""),
            e["help"].as_str().unwrap_or("")
        ));
    }
    insta::assert_snapshot!("bad_input", summary.join("\n"));
}

#[test]
fn unknown_key_says_did_you_mean_with_a_caret() {
    gpuplan()
        .args(["check", "tests/fixtures/bad/unknown_key.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("did you mean `gpu_memory_gib`?"))
        .stderr(predicate::str::contains(
            "tests/fixtures/bad/unknown_key.toml:13:1",
        ));
}

#[test]
fn huge_file_is_refused_without_reading_it_all() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("big.toml");
    let line = "# padding padding padding padding padding padding padding padding padding\n";
    std::fs::write(&p, line.repeat(50 * 1024 * 1024 / line.len())).expect("write");
    gpuplan()
        .arg("check")
        .arg(&p)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("larger than 8 MiB"));
}

#[test]
fn missing_file_and_stdin() {
    gpuplan()
        .args(["check", "plans/nope.toml"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read"));
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/minimal.toml"))
            .expect("read");
    gpuplan()
        .args(["check", "-"])
        .write_stdin(text)
        .assert()
        .code(0);
}

#[test]
fn explain_prints_rule_docs() {
    gpuplan()
        .args(["explain", "GP001"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("## Why is this bad?"))
        .stdout(predicate::str::contains("per-instance"));
    gpuplan()
        .args(["explain", "gang-on-spot"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("-ln(1 - p) / 730"));
    gpuplan()
        .args(["explain", "GP0001"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("did you mean"));
    let out = gpuplan()
        .args(["explain", "--all", "--format", "json"])
        .output()
        .expect("runs");
    let v: serde_json::Value = crate::common::contract(&out.stdout).expect("json");
    assert_eq!(v["schema"], "gpuplan.rules/v1");
    assert_eq!(
        v["rules"].as_array().map(Vec::len),
        Some(gpuplan::rules::RULES.len())
    );
}

/// Run with `args`, expect exit 0 and every needle in stdout.
fn stdout_has(args: &[&str], needles: &[&str]) {
    let out = gpuplan()
        .args(args)
        .assert()
        .code(0)
        .get_output()
        .stdout
        .clone();
    let text = String::from_utf8_lossy(&out);
    for n in needles {
        assert!(text.contains(n), "`gpuplan {}` lacks `{n}`", args.join(" "));
    }
}

#[test]
fn catalog_lists_and_shows_with_sources() {
    stdout_has(&["catalog"], &["Standard_ND96isr_H100_v5", "SkyPilot"]);
    stdout_has(
        &["catalog", "--sku", "Standard_ND96isr_H100_v5"],
        &["8 x H100-80GB", "$98.32", "$18.1695"],
    );
    stdout_has(&["catalog", "--gpu", "A100-80GB"], &["3g.40gb", "{0,4}"]);
    stdout_has(&["catalog", "--gpu", "L4"], &["MIG: not supported"]);
    stdout_has(
        &["catalog", "--sku", "p5.48xlarge", "--format", "json"],
        &["\"spot_band\": \">20%\""],
    );
    gpuplan()
        .args(["catalog", "--gpu", "A100-81GB"])
        .assert()
        .code(2);
}

/// Every `catalog --format json` document is held to its published schema: the overview (every
/// GPU and SKU, with and without a region), and each document of its own of a GPU with MIG,
/// one without, and SKUs of both clouds.
#[test]
fn catalog_json_keeps_its_schemas() {
    let json = |args: &[&str]| {
        let out = crate::common::ok(gpuplan().args(args).output().expect("runs"));
        crate::common::contract(&out.stdout).expect("json")
    };
    let all = json(&["catalog", "--format", "json"]);
    assert_eq!(all["schema"], "gpuplan.catalog/v1");
    let skus = all["providers"]
        .as_array()
        .expect("providers")
        .iter()
        .map(|p| p["skus"].as_array().map_or(0, Vec::len))
        .sum::<usize>();
    assert!(skus > 100, "{skus} SKUs");
    json(&["catalog", "--format", "json", "--region", "eastus"]);
    for gpu in ["A100-80GB", "L4"] {
        let v = json(&["catalog", "--gpu", gpu, "--format", "json"]);
        assert_eq!(v["schema"], "gpuplan.catalog-gpu/v1");
        assert_eq!(v["name"], gpu);
    }
    for sku in ["p5.48xlarge", "g5g.xlarge", "Standard_NC24ads_A100_v4"] {
        let v = json(&["catalog", "--sku", sku, "--format", "json"]);
        assert_eq!(v["schema"], "gpuplan.catalog-sku/v1");
        assert!(v["regions"][0]["figures"]["on_demand"]["usd_per_hour"].is_f64());
    }
}

#[test]
fn schema_is_json_schema_of_the_plan() {
    let out = gpuplan().arg("schema").output().expect("runs");
    let v: serde_json::Value = crate::common::contract(&out.stdout).expect("json");
    assert!(v["$schema"]
        .as_str()
        .is_some_and(|s| s.contains("json-schema.org")));
    assert!(v["definitions"]["Workload"]["properties"]["gpu_memory_gib"].is_object());
    assert_eq!(v["definitions"]["Workload"]["additionalProperties"], false);
    assert_eq!(v["properties"]["version"]["const"], 1);
    // Every example and rule fixture that loads is valid under the schema; a SKU, region or
    // GPU-model typo, or another version, is not.
    let validator = jsonschema::validator_for(&v).expect("a valid schema");
    let mut plans: Vec<std::path::PathBuf> = std::fs::read_dir("plans")
        .expect("plans")
        .flatten()
        .map(|e| e.path())
        .collect();
    for rule in std::fs::read_dir("tests/fixtures/rules")
        .expect("fixtures")
        .flatten()
    {
        plans.extend(
            std::fs::read_dir(rule.path())
                .expect("rule")
                .flatten()
                .map(|e| e.path()),
        );
    }
    // TOML as an editor's schema support sees it: dates are strings.
    fn json_of(t: toml::Value) -> serde_json::Value {
        match t {
            toml::Value::Datetime(d) => serde_json::Value::String(d.to_string()),
            toml::Value::Array(a) => a.into_iter().map(json_of).collect(),
            toml::Value::Table(m) => m.into_iter().map(|(k, v)| (k, json_of(v))).collect(),
            other => serde_json::to_value(other).expect("json"),
        }
    }
    let as_json =
        |text: &str| -> serde_json::Value { json_of(toml::from_str(text).expect("toml")) };
    for p in &plans {
        let text = std::fs::read_to_string(p).expect("plan");
        let doc = as_json(&text);
        let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", p.display());
    }
    let minimal = std::fs::read_to_string("plans/minimal.toml").expect("plan");
    for (from, to) in [
        ("version = 1", "version = 2"),
        ("\"eastus\"", "\"eastuss\""),
    ] {
        let bad = as_json(&minimal.replacen(from, to, 1));
        assert!(!validator.is_valid(&bad), "{to}");
    }
}

#[test]
fn init_writes_a_plan_that_checks() {
    let dir = tempfile::tempdir().expect("tmp");
    for provider in ["azure", "aws"] {
        let p = dir.path().join(format!("{provider}.toml"));
        gpuplan()
            .arg("init")
            .arg(&p)
            .args(["--provider", provider])
            .assert()
            .code(0);
        gpuplan().arg("check").arg(&p).assert().code(0);
        gpuplan()
            .arg("init")
            .arg(&p)
            .assert()
            .code(2)
            .stderr(predicate::str::contains("already exists"));
        // taplo reads the first line's `#:schema`; the file it names is beside the plan, is
        // `gpuplan schema`'s, and the starter plan passes it.
        let text = std::fs::read_to_string(&p).expect("plan");
        assert_eq!(text.lines().next(), Some("#:schema ./gpuplan.schema.json"));
        let written = std::fs::read(dir.path().join("gpuplan.schema.json")).expect("schema");
        let printed = gpuplan().arg("schema").output().expect("run").stdout;
        assert_eq!(written, printed);
        let schema: serde_json::Value = serde_json::from_slice(&written).expect("json");
        let plan = toml_as_json(toml::Value::Table(text.parse().expect("toml")));
        assert!(jsonschema::validator_for(&schema)
            .expect("schema")
            .is_valid(&plan));
    }
}

#[test]
fn catalog_override_directory_is_used_and_validated() {
    let dir = tempfile::tempdir().expect("tmp");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("providers");
    for entry in [
        "sources.toml",
        "gpus.toml",
        "assumptions.toml",
        "azure/skus.toml",
        "azure/prices.csv",
        "azure/prices-retail.csv",
    ] {
        let to = dir.path().join(entry);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(src.join(entry), &to).expect("copy");
    }
    gpuplan()
        .args(["check", "plans/minimal.toml", "--catalog"])
        .arg(dir.path())
        .assert()
        .code(0);
    // A kube-reserved schedule whose points do not rise is refused, not interpolated.
    let assumptions = dir.path().join("assumptions.toml");
    let text = std::fs::read_to_string(&assumptions).expect("read");
    let bad = text.replacen(
        "vcpus = [1, 2, 4, 8, 16, 32, 64]",
        "vcpus = [1, 2, 4, 8, 16, 64, 32]",
        1,
    );
    assert_ne!(bad, text, "the AKS schedule is in the file");
    std::fs::write(&assumptions, bad).expect("write");
    gpuplan()
        .args(["check", "plans/minimal.toml", "--catalog"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("kube_reserved_cpu for azure"));
    std::fs::write(&assumptions, text).expect("write");
    std::fs::write(dir.path().join("gpus.toml"), "[meta]\nas_of = 1\n").expect("write");
    gpuplan()
        .args(["check", "plans/minimal.toml", "--catalog"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicate::str::contains("gpus.toml"));
}

#[test]
fn help_and_completions() {
    let out = gpuplan().arg("--help").output().expect("runs");
    insta::assert_snapshot!("help", String::from_utf8_lossy(&out.stdout));
    gpuplan()
        .args(["completions", "bash"])
        .assert()
        .code(0)
        .stdout(predicate::str::contains("gpuplan"));
    gpuplan().arg("frobnicate").assert().code(2);
}

#[test]
fn every_load_time_mistake_shows_in_one_run() {
    // A key typo, a wrong-case enum, an inline table's key typo, a SKU typo, a workload typo
    // and a misspelled required enum: all located, in file order, in one run.
    let out = gpuplan()
        .args([
            "check",
            "--format",
            "json",
            "tests/fixtures/bad/many_mistakes.toml",
        ])
        .assert()
        .code(2)
        .get_output()
        .clone();
    let v: serde_json::Value = crate::common::contract(&out.stdout).expect("json");
    let found: Vec<(String, u64)> = v["errors"]
        .as_array()
        .or_else(|| v["findings"].as_array())
        .expect("errors")
        .iter()
        .map(|d| {
            (
                d["message"].as_str().unwrap_or("").to_owned(),
                d["line"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let expect = [
        ("unknown key `sharring`", 14),
        ("`MIG` is not an allowed value", 20),
        ("unknown key `maxx`", 21),
        ("SKU `Standard_NC24ads_A100_v5`", 25),
        ("names workload `chatt`", 28),
        ("`trainig` is not an allowed value", 33),
    ];
    assert_eq!(found.len(), expect.len(), "{found:#?}");
    for ((msg, line), (want, at)) in found.iter().zip(expect) {
        assert!(msg.contains(want), "{msg} vs {want}");
        assert_eq!(*line, at, "{msg}");
    }
}

#[test]
fn a_required_value_of_the_wrong_type_stops_reading_but_keeps_what_came_before() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("p.toml");
    std::fs::write(
        &p,
        "version = 1\n[plan]\nname = \"p\"\nowner = \"o\"\nprovider = \"azure\"\nregions = [\"eastus\"]\ncolour = 1\n\n[[workload]]\nname = 5\nteam = \"t\"\nkind = \"batch\"\n",
    )
    .expect("plan");
    let out = gpuplan()
        .arg("check")
        .arg(&p)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown key `colour`"), "{err}");
    assert!(
        err.contains("wrong type") || err.contains("invalid type"),
        "{err}"
    );
}

#[test]
fn a_misspelled_quota_family_is_an_error_not_a_silent_rule() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("q.toml");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rules/GP014/fires.toml"),
    )
    .expect("fixture")
    .replace("StandardNCADSA100v4Family", "StandardNCADSA100v4Familly");
    std::fs::write(&p, text).expect("plan");
    let out = gpuplan()
        .arg("check")
        .arg(&p)
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("quota family `StandardNCADSA100v4Familly`"),
        "{err}"
    );
    assert!(
        err.contains("did you mean `standardNCADSA100v4Family`"),
        "{err}"
    );
}

#[test]
fn long_work_shows_progress_on_a_terminal_only() {
    // On a terminal (a pty, as `script` gives one) the recommender's progress appears once
    // the wait has passed (0 here); through a pipe, or with --quiet, nothing does.
    let bin = assert_cmd::cargo::cargo_bin("gpuplan");
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("pty.log");
    // Long enough that the progress is drawn before it ends: 2,000 alike jobs.
    let plan = dir.path().join("many.toml");
    let mut text = String::from(
        "version = 1\n[plan]\nname = \"many\"\nowner = \"o\"\nprovider = \"aws\"\nregions = [\"us-east-1\"]\n",
    );
    for i in 0..2000 {
        text.push_str(&format!(
            "[[workload]]\nname=\"j{i}\"\nteam=\"t\"\nkind=\"batch\"\ngpus=1\n"
        ));
    }
    std::fs::write(&plan, text).expect("plan");
    let on_tty = |extra: &str| {
        let status = std::process::Command::new("script")
            .args(["-qefc"])
            .arg(format!(
                "'{}' {extra} recommend '{}' > /dev/null",
                bin.display(),
                plan.display()
            ))
            .arg(&log)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("GPUPLAN_PROGRESS_DELAY_MS", "0")
            .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache")
            .output()
            .expect("script");
        assert!(status.status.success());
        std::fs::read_to_string(&log).expect("log")
    };
    assert!(on_tty("").contains("recommending pools for"));
    assert!(!on_tty("--quiet").contains("recommending pools for"));
    let out = gpuplan()
        .env("GPUPLAN_PROGRESS_DELAY_MS", "0")
        .args(["recommend", "plans/aws-training.toml"])
        .output()
        .expect("runs");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("recommending"));
}

#[test]
fn the_readmes_sample_outputs_are_what_the_binary_prints() {
    // Each `<!-- sample: gpuplan ARGS ... -->` block of the README: its lines appear in the
    // binary's output for ARGS, in order, exactly.
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README");
    let mut samples = 0;
    let mut rest = readme.as_str();
    while let Some(at) = rest.find("<!-- sample: gpuplan ") {
        rest = &rest[at + "<!-- sample: gpuplan ".len()..];
        let args_end = rest.find(" (").expect("the sample's command");
        let args: Vec<&str> = rest[..args_end].split_whitespace().collect();
        let block = &rest[rest.find("```text\n").expect("a text block") + 8..];
        let block = &block[..block.find("```").expect("its end")];
        let out = gpuplan().args(&args).output().expect("runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines = text.lines();
        for want in block.lines() {
            assert!(
                lines.any(|l| l == want),
                "README sample of `gpuplan {}` has a line the binary does not print (in that order):\n{want}\n--- output:\n{text}",
                args.join(" ")
            );
        }
        samples += 1;
    }
    assert!(samples >= 1, "the README has samples");
}

/// Issue 44: every JSON output holds to the schema `gpuplan schema --output NAME` publishes,
/// on every example plan and on plans that fail; and the schemas are closed, so a key added to
/// an output without its schema is caught (the control below).
#[test]
fn every_json_output_holds_to_its_published_schema() {
    let run = |args: &[&str]| {
        let out = gpuplan().args(args).output().expect("run");
        let v = crate::common::contract(&out.stdout)
            .unwrap_or_else(|e| panic!("{args:?}: {e}\n{}", String::from_utf8_lossy(&out.stderr)));
        (v, out.stdout)
    };
    let plans = [
        "plans/azure-inference.toml",
        "plans/aws-training.toml",
        "plans/mixed-estate.toml",
        "plans/minimal.toml",
        "tests/fixtures/render/mig-spread.toml",
        "tests/fixtures/render/capacity-block.toml",
    ];
    let mut seen = std::collections::BTreeSet::new();
    for p in plans {
        for cmd in ["check", "recommend"] {
            let (v, _) = run(&[cmd, "--format", "json", p]);
            seen.insert(v["schema"].as_str().unwrap_or("").to_owned());
        }
    }
    let (v, _) = run(&["check", "--format", "json", "/nonexistent/plan.toml"]);
    assert!(v["errors"].as_array().is_some_and(|e| !e.is_empty()));
    let (v, _) = run(&[
        "diff",
        "--format",
        "json",
        "plans/azure-inference.toml",
        "tests/fixtures/diff/azure-inference-head.toml",
    ]);
    seen.insert(v["schema"].as_str().unwrap_or("").to_owned());
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        [
            "gpuplan.diff/v1",
            "gpuplan.findings/v1",
            "gpuplan.recommendation/v1"
        ]
    );
    // The published text is the schema the tests hold outputs to, and it parses.
    for name in [
        "findings",
        "recommendation",
        "review",
        "diff",
        "plan",
        "catalog",
        "catalog-gpu",
        "catalog-sku",
        "baseline",
    ] {
        let out = gpuplan()
            .args(["schema", "--output", name])
            .output()
            .expect("run");
        assert!(out.status.success());
        let s: serde_json::Value = serde_json::from_slice(&out.stdout).expect("schema json");
        assert!(jsonschema::validator_for(&s).is_ok(), "{name}");
    }
    // Control: an output with a key its schema does not know is refused.
    let (_, bytes) = run(&["recommend", "--format", "json", "plans/minimal.toml"]);
    let mut v: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
    v["pools"][0]["surprise"] = serde_json::json!(1);
    let tampered = serde_json::to_vec(&v).expect("bytes");
    let caught = std::panic::catch_unwind(|| crate::common::contract(&tampered));
    assert!(caught.is_err(), "an unknown key passed the schema");
}

/// A plan file as the JSON an editor's schema validator sees (taplo converts TOML so): dates
/// as strings.
fn toml_as_json(v: toml::Value) -> serde_json::Value {
    match v {
        toml::Value::String(s) => s.into(),
        toml::Value::Integer(i) => i.into(),
        toml::Value::Float(f) => f.into(),
        toml::Value::Boolean(b) => b.into(),
        toml::Value::Datetime(d) => d.to_string().into(),
        toml::Value::Array(a) => a.into_iter().map(toml_as_json).collect(),
        toml::Value::Table(t) => t.into_iter().map(|(k, v)| (k, toml_as_json(v))).collect(),
    }
}

/// Issue 44: the plan schema refuses what the loader refuses wherever a schema can say it
/// (types, keys, enums of catalog names and rule ids, ranges, DNS-1123 names, GUIDs), and
/// accepts every plan the loader accepts.
#[test]
fn the_plan_schema_refuses_what_check_refuses_at_load() {
    let out = gpuplan().arg("schema").output().expect("run");
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).expect("schema");
    let validator = jsonschema::validator_for(&schema).expect("valid schema");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let as_json = |p: &Path| -> Option<serde_json::Value> {
        let text = std::fs::read_to_string(p).ok()?;
        text.parse::<toml::Table>()
            .ok()
            .map(|t| toml_as_json(toml::Value::Table(t)))
    };
    let check_code = |p: &Path| {
        gpuplan()
            .arg("check")
            .arg(p)
            .output()
            .expect("run")
            .status
            .code()
    };
    // Every plan the loader accepts passes.
    let mut good = vec![];
    for dir in ["plans", "tests/fixtures/render", "tests/fixtures/diff"] {
        for e in std::fs::read_dir(root.join(dir)).expect(dir).flatten() {
            if e.path().extension().is_some_and(|x| x == "toml") {
                good.push(e.path());
            }
        }
    }
    good.sort();
    for p in &good {
        let code = check_code(p);
        if code == Some(2) {
            continue;
        }
        let v = as_json(p).expect("parses");
        let errors: Vec<String> = validator
            .iter_errors(&v)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{} loads but the schema refuses it: {errors:#?}",
            p.display()
        );
    }
    assert!(good.len() >= 10, "{good:?}");
    // The bad fixtures: the loader refuses each (exit 2); the schema catches all it can see.
    let mut caught = vec![];
    let mut missed = vec![];
    let mut unparsable = vec![];
    let mut names: Vec<_> = std::fs::read_dir(root.join("tests/fixtures/bad"))
        .expect("bad")
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    for p in &names {
        let code = check_code(p);
        assert_eq!(code, Some(2), "{} loads", p.display());
        let name = p
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        match as_json(p) {
            None => unparsable.push(name),
            Some(v) if !validator.is_valid(&v) => caught.push(name),
            Some(_) => missed.push(name),
        }
    }
    // What no schema can say: a name used twice, a reference to a name not defined, min
    // above max of a range, a pool label naming a pool of another GPU.
    assert_eq!(
        missed,
        [
            "dangling_decision",
            "dangling_pool_label",
            "dangling_reference",
            "duplicate_name",
            "inverted_range",
            "pool_label_mismatch"
        ],
        "caught: {caught:?}"
    );
    // TOML the parser refuses before any schema is asked (syntax, a repeated key, bytes
    // that are not UTF-8, nesting past the parser's depth).
    assert_eq!(
        unparsable,
        ["deeply_nested", "duplicate_key", "malformed", "not_utf8"]
    );
    assert_eq!(caught.len(), names.len() - 10, "{caught:?}");
    // The README states these counts; they are held to the fixtures (issue 75: it said 24).
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README");
    let said = format!(
        "Of the {}\nbad plans in `tests/fixtures/bad/`, it refuses the {} a TOML parser can read",
        names.len(),
        caught.len()
    );
    assert!(readme.contains(&said), "README does not say: {said}");
    assert!(
        readme.contains(&format!("TOML syntax ({})", unparsable.len()))
            && readme.contains(&format!("another GPU's pool:\n{})", missed.len())),
        "README's counts of the bad fixtures"
    );
}

/// taplo (the TOML toolkit behind VS Code's Even Better TOML) checks plans against the schema
/// as an editor does: by the `#:schema` line `init` writes, and with `--schema`. It refuses
/// the bad fixtures a schema can judge and passes every example. `.ci/run` installs taplo
/// from npm (`@taplo/cli`) and names it in GPUPLAN_TAPLO.
#[test]
#[ignore = "needs taplo (npm @taplo/cli); .ci/run installs it and runs this"]
fn taplo_checks_plans_by_the_schema_line_init_writes() {
    let taplo = std::env::var("GPUPLAN_TAPLO").unwrap_or_else(|_| "taplo".into());
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("gpuplan.toml");
    gpuplan().arg("init").arg(&plan).assert().code(0);
    let taplo_check = |args: &[&std::ffi::OsStr]| {
        std::process::Command::new(&taplo)
            .arg("check")
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("taplo runs")
    };
    let ok = taplo_check(&[plan.as_os_str()]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    // The directive alone makes taplo refuse what check refuses.
    let text = std::fs::read_to_string(&plan).expect("plan");
    let broken = text.replacen("version = 1", "version = 1\nsurprise = true", 1);
    std::fs::write(&plan, broken).expect("write");
    assert!(!taplo_check(&[plan.as_os_str()]).status.success());
    // Every bad fixture a schema can judge, and every example plan.
    let schema = dir.path().join("gpuplan.schema.json");
    let url = format!("file://{}", schema.display());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut passed = vec![];
    for e in std::fs::read_dir(root.join("tests/fixtures/bad"))
        .expect("bad")
        .flatten()
    {
        let out = taplo_check(&["--schema".as_ref(), url.as_ref(), e.path().as_os_str()]);
        if out.status.success() {
            passed.push(e.file_name().to_string_lossy().into_owned());
        }
    }
    passed.sort();
    assert_eq!(
        passed,
        [
            "dangling_decision.toml",
            "dangling_pool_label.toml",
            "dangling_reference.toml",
            "duplicate_name.toml",
            "inverted_range.toml",
            "pool_label_mismatch.toml"
        ]
    );
    for e in std::fs::read_dir(root.join("plans"))
        .expect("plans")
        .flatten()
    {
        let out = taplo_check(&["--schema".as_ref(), url.as_ref(), e.path().as_os_str()]);
        assert!(
            out.status.success(),
            "{}: {}",
            e.path().display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
