//! The pull-request workflow: SARIF that validates against the OASIS schema, GitHub
//! annotations, the Markdown comment, the baseline, and `diff` with its guardrail.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

pub(crate) fn gpuplan() -> Command {
    let mut c = Command::cargo_bin("gpuplan").expect("binary");
    c.current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("GPUPLAN_TODAY", "2026-12-02")
        .env("NO_COLOR", "1")
        .env_remove("GPUPLAN_CATALOG")
        .env("GPUPLAN_CACHE", "/nonexistent/gpuplan-test-cache")
        .env_remove("GPUPLAN_DOCS_URL");
    c
}

pub(crate) fn run(c: &mut Command, code: i32) -> (String, String) {
    let out = c.assert().code(code).get_output().clone();
    (
        String::from_utf8(out.stdout).expect("utf-8"),
        String::from_utf8(out.stderr).expect("utf-8"),
    )
}

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/conformance/sarif-schema-2.1.0.json"),
    )
    .expect("schema");
    let v: Value = crate::common::contract(&text).expect("schema json");
    jsonschema::validator_for(&v).expect("valid schema")
}

const EXAMPLES: [(&str, i32); 4] = [
    ("azure-inference", 0),
    ("aws-training", 0),
    ("mixed-estate", 1),
    ("minimal", 0),
];

#[test]
fn sarif_of_every_example_validates() {
    let validator = schema();
    for (name, code) in EXAMPLES {
        let path = format!("plans/{name}.toml");
        let (out, _) = run(gpuplan().args(["check", "--format", "sarif", &path]), code);
        let v: Value = crate::common::contract(&out).expect("json");
        let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        let run = &v["runs"][0];
        assert_eq!(
            run["tool"]["driver"]["rules"].as_array().map(Vec::len),
            Some(gpuplan::rules::RULES.len())
        );
        for r in run["results"].as_array().expect("results") {
            let loc = &r["locations"][0]["physicalLocation"];
            assert_eq!(loc["artifactLocation"]["uri"], path.as_str());
            assert!(loc["region"]["startLine"].as_u64().is_some_and(|l| l >= 1));
            assert!(r["partialFingerprints"]["gpuplan/v1"].is_string());
        }
    }
}

/// mixed-estate with its `[[allow]]` still in force.
pub(crate) fn with_live_allow(dir: &Path) {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/mixed-estate.toml"),
    )
    .expect("example");
    let live = text.replace("expires = 2026-10-31", "expires = 2027-10-31");
    assert_ne!(live, text);
    std::fs::write(dir.join("plan.toml"), live).expect("write");
}

#[test]
fn sarif_reports_allows_as_suppressions_and_links_rules() {
    let dir = tempfile::tempdir().expect("tmp");
    with_live_allow(dir.path());
    let (out, _) = run(
        gpuplan()
            .current_dir(dir.path())
            .args(["check", "--format", "sarif", "plan.toml"])
            .env(
                "GPUPLAN_DOCS_URL",
                "https://example.org/gpuplan/docs/rules.md",
            ),
        1,
    );
    let v: Value = crate::common::contract(&out).expect("json");
    assert!(schema().is_valid(&v));
    let suppressed: Vec<&Value> = v["runs"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|r| r.get("suppressions").is_some())
        .collect();
    assert!(!suppressed.is_empty());
    assert_eq!(suppressed[0]["suppressions"][0]["kind"], "inSource");
    assert!(suppressed[0]["suppressions"][0]["justification"]
        .as_str()
        .is_some_and(|j| j.contains("approved by")));
    assert_eq!(
        v["runs"][0]["tool"]["driver"]["rules"][0]["helpUri"],
        "https://example.org/gpuplan/docs/rules.md#gp001-timeslice-memory-oversubscribed"
    );
}

#[test]
fn invalid_plan_in_sarif_is_a_tool_notification() {
    let (out, _) = run(
        gpuplan()
            .args(["check", "--format", "sarif", "-"])
            .write_stdin("version = 2\n"),
        2,
    );
    let v: Value = crate::common::contract(&out).expect("json");
    assert!(schema().is_valid(&v));
    assert_eq!(v["runs"][0]["invocations"][0]["executionSuccessful"], false);
}

#[test]
fn github_annotations_point_at_lines() {
    let (out, _) = run(
        gpuplan().args(["check", "--format", "github", "plans/mixed-estate.toml"]),
        1,
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(!lines.is_empty());
    for l in &lines {
        assert!(
            l.starts_with("::error file=plans/mixed-estate.toml,line=")
                || l.starts_with("::warning file=plans/mixed-estate.toml,line=")
                || l.starts_with("::notice file=plans/mixed-estate.toml,line="),
            "{l}"
        );
        assert!(!l.contains('\r'));
    }
    assert!(out.contains(",line=63,col=25,"), "GP001 at 63:25:\n{out}");
    assert!(out.contains("title=GP001 timeslice-memory-oversubscribed::"));
}

#[test]
fn markdown_comment_groups_by_severity_with_the_cost_delta() {
    let (out, _) = run(
        gpuplan().args([
            "check",
            "--format",
            "markdown",
            "--link-base",
            "https://github.com/o/r/blob/abc/",
            "--base",
            "plans/azure-inference.toml",
            "plans/azure-inference.toml",
        ]),
        0,
    );
    insta::assert_snapshot!("check_markdown_clean", out);
    let dir = tempfile::tempdir().expect("tmp");
    with_live_allow(dir.path());
    let (out, _) = run(
        gpuplan()
            .current_dir(dir.path())
            .args(["check", "--format", "markdown", "plan.toml"]),
        1,
    );
    assert!(out.starts_with("### :x: gpuplan check: failed"));
    assert!(out.contains("#### Errors ("));
    assert!(out.contains("#### Warnings ("));
    assert!(
        out.contains("[`plan.toml:63:25`](plan.toml#L63) **GP001**"),
        "{out}"
    );
    assert!(out.contains("1 suppressed finding(s)"), "{out}");
}

#[test]
fn baseline_hides_known_findings_and_reports_new_ones() {
    let dir = tempfile::tempdir().expect("tmp");
    let plan = dir.path().join("plan.toml");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/mixed-estate.toml"),
    )
    .expect("example");
    std::fs::write(&plan, &text).expect("write");
    let base = dir.path().join("gpuplan-baseline.json");
    let cmd = |args: &[&str]| {
        let mut c = gpuplan();
        c.current_dir(dir.path()).args(args);
        c
    };
    let (_, err) = run(
        &mut cmd(&[
            "check",
            "--write-baseline",
            "gpuplan-baseline.json",
            "plan.toml",
        ]),
        0,
    );
    // mixed-estate: 20 findings (GP031: its bf16 support-bot on T4s; GP034: its spot A100
    // pool holds 4 of the 5 nodes its gang and llama-70b need), the expired allow's warning
    // among them (no GP022 on undated spot figures: those are no longer used as prices)
    assert!(err.contains("wrote 20 finding(s)"), "{err}");
    let b: Value =
        crate::common::contract(std::fs::read_to_string(&base).expect("baseline")).expect("json");
    assert_eq!(b["schema"], "gpuplan.baseline/v1");
    // Everything known: nothing blocks.
    let (out, _) = run(
        &mut cmd(&[
            "check",
            "--format",
            "json",
            "--baseline",
            "gpuplan-baseline.json",
            "plan.toml",
        ]),
        0,
    );
    let v: Value = crate::common::contract(&out).expect("json");
    assert!(v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .all(|f| f.get("suppressed").is_some()));
    // A new problem is reported, and only it.
    let worse = text.replace(
        "kind = \"training\"",
        "kind = \"training\"\nuser_facing = true",
    );
    std::fs::write(&plan, worse).expect("write");
    let (out, _) = run(
        &mut cmd(&[
            "check",
            "--format",
            "json",
            "--baseline",
            "gpuplan-baseline.json",
            "plan.toml",
        ]),
        1,
    );
    let v: Value = crate::common::contract(&out).expect("json");
    let new: Vec<&Value> = v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f.get("suppressed").is_none())
        .collect();
    assert!(!new.is_empty());
    assert!(new.iter().all(|f| f["workload"] == "pretrain"), "{new:#?}");
    // A broken baseline is an input error.
    std::fs::write(&base, "{\"schema\": \"other\"}").expect("write");
    run(
        &mut cmd(&["check", "--baseline", "gpuplan-baseline.json", "plan.toml"]),
        2,
    );
}

/// The same plan re-serialised by the TOML library (other formatting, no comments) with its
/// workloads and pools in reverse order.
fn reformatted(text: &str) -> String {
    let mut t: toml::Table = toml::from_str(text).expect("toml");
    for key in ["workload", "pool"] {
        if let Some(toml::Value::Array(a)) = t.get_mut(key) {
            a.reverse();
        }
    }
    toml::to_string_pretty(&t).expect("serialise")
}

fn fingerprints(dir: &Path, code: i32) -> Vec<String> {
    let (out, _) = run(
        gpuplan()
            .current_dir(dir)
            .args(["check", "--format", "sarif", "plan.toml"]),
        code,
    );
    let v: Value = crate::common::contract(&out).expect("json");
    let mut fps: Vec<String> = v["runs"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            r["partialFingerprints"]["gpuplan/v1"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect();
    fps.sort();
    fps
}

#[test]
fn fingerprints_survive_reformatting_and_reordering() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/mixed-estate.toml"),
    )
    .expect("example");
    let (a, b) = (
        tempfile::tempdir().expect("tmp"),
        tempfile::tempdir().expect("tmp"),
    );
    std::fs::write(a.path().join("plan.toml"), &text).expect("write");
    let other = reformatted(&text);
    assert_ne!(other, text);
    std::fs::write(b.path().join("plan.toml"), &other).expect("write");
    let (fa, fb) = (fingerprints(a.path(), 1), fingerprints(b.path(), 1));
    assert!(fa.len() > 10);
    assert_eq!(fa, fb);
}

fn total(path: &str) -> f64 {
    let (out, _) = run(gpuplan().args(["recommend", "--format", "json", path]), 0);
    let v: Value = crate::common::contract(&out).expect("json");
    v["total_monthly_cost_usd"].as_f64().expect("total")
}

/// Issue 75 item 10: a change of plan-level settings was listed by key alone
/// (`plan.regions`); each changed value is now named old -> new, tables key by key and the
/// `[[quota]]` entries one by one, in the JSON, the text and the pull-request table.
#[test]
fn diff_names_each_changed_setting_with_its_values() {
    let dir = tempfile::tempdir().expect("tmp");
    let base = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/azure-inference.toml");
    let text = std::fs::read_to_string(&base).expect("plan");
    let head_text = text
        .replacen(
            "regions = [\"eastus\", \"westus3\"]",
            "regions = [\"eastus\"]",
            1,
        )
        .replacen("vcpus = 192", "vcpus = 384", 1);
    assert_ne!(head_text, text);
    let head = dir.path().join("head.toml");
    std::fs::write(&head, head_text).expect("head");
    let (out, _) = run(
        gpuplan()
            .args(["diff", "--format", "json"])
            .arg(&base)
            .arg(&head),
        0,
    );
    let v: Value = crate::common::contract(&out).expect("json");
    assert_eq!(
        v["settings"],
        serde_json::json!(["plan.regions", "[[quota]]"])
    );
    assert_eq!(
        v["setting_changes"],
        serde_json::json!([
            {"key": "plan.regions", "before": "[\"eastus\", \"westus3\"]", "after": "[\"eastus\"]"},
            {"key": "quota[0].vcpus", "before": "192", "after": "384"}
        ])
    );
    let (md, _) = run(
        gpuplan()
            .args(["diff", "--format", "markdown"])
            .arg(&base)
            .arg(&head),
        0,
    );
    assert!(
        md.contains("| changed | setting | `plan.regions`: plan.regions \\[\"eastus\", \"westus3\"\\] → \\[\"eastus\"\\] |")
            && md.contains("| changed | setting | `[[quota]]`: quota\\[0\\].vcpus 192 → 384 |"),
        "{md}"
    );
    let (human, _) = run(gpuplan().arg("diff").arg(&base).arg(&head), 0);
    assert!(human.contains("quota[0].vcpus 192 → 384"), "{human}");
}

#[test]
fn diff_of_two_revisions_shows_the_delta_and_honours_the_guardrail() {
    let base = "plans/azure-inference.toml";
    let head = "tests/fixtures/diff/azure-inference-head.toml";
    let (out, _) = run(gpuplan().args(["diff", "--format", "json", base, head]), 0);
    let v: Value = crate::common::contract(&out).expect("json");
    assert_eq!(v["schema"], "gpuplan.diff/v1");
    let expected = total(head) - total(base);
    assert!(
        (v["delta_usd"].as_f64().unwrap_or(0.0) - expected).abs() < 0.02,
        "{v:#}"
    );
    assert!(expected > 0.0, "the head revision adds capacity");
    assert_eq!(
        v["workloads"]["added"],
        serde_json::json!(["translation-api"])
    );
    assert_eq!(
        v["workloads"]["removed"],
        serde_json::json!(["nightly-eval"])
    );
    assert_eq!(v["workloads"]["changed"][0]["name"], "chat-api");
    assert_eq!(
        v["workloads"]["changed"][0]["keys"],
        serde_json::json!(["replicas"])
    );
    let (human, _) = run(gpuplan().args(["diff", base, head]), 0);
    insta::assert_snapshot!("diff_human", human);
    let (md, _) = run(
        gpuplan().args(["diff", "--format", "markdown", base, head]),
        0,
    );
    insta::assert_snapshot!("diff_markdown", md);
    // guardrails: a 1% limit trips, a generous amount does not, a bad limit is a usage error
    let (_, err) = run(
        gpuplan().args(["diff", "--fail-on-increase", "1%", base, head]),
        1,
    );
    assert!(err.contains("past `--fail-on-increase 1%`"), "{err}");
    run(
        gpuplan().args(["diff", "--fail-on-increase", "1000000", base, head]),
        0,
    );
    run(
        gpuplan().args(["diff", "--fail-on-increase", "lots", base, head]),
        2,
    );
    // going back is a saving of the recommendation: never over a limit; but it declares
    // the removed pool again, which the declared-fleet guard sees
    run(
        gpuplan().args([
            "diff",
            "--fail-on-increase",
            "0",
            "--guard",
            "recommended",
            head,
            base,
        ]),
        0,
    );
    // Going back declares the removed spot pool again ($881.52), but the MIG pool the head
    // grew to hold chat-api's new peak (5 -> 7 nodes, $5,362.58) shrinks: the declared fleet
    // costs less. Forward, the declared-fleet guard sees the rise.
    run(
        gpuplan().args(["diff", "--fail-on-increase", "0", head, base]),
        0,
    );
    let (_, err) = run(
        gpuplan().args([
            "diff",
            "--fail-on-increase",
            "0",
            "--guard",
            "declared",
            base,
            head,
        ]),
        1,
    );
    assert!(
        err.contains("the declared pools' monthly cost rises by $4,481.06"),
        "{err}"
    );
}

#[test]
fn diff_reads_the_base_from_git() {
    let dir = tempfile::tempdir().expect("tmp");
    let git = |args: &[&str]| {
        let s = std::process::Command::new("git")
            .current_dir(dir.path())
            .args(["-c", "user.email=ci@example.org", "-c", "user.name=ci"])
            .args(args)
            .output()
            .expect("git");
        assert!(
            s.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&s.stderr)
        );
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    git(&["init", "-q"]);
    std::fs::create_dir_all(dir.path().join("plans")).expect("mkdir");
    let plan = dir.path().join("plans/plan.toml");
    std::fs::copy(root.join("plans/azure-inference.toml"), &plan).expect("copy");
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "base"]);
    std::fs::copy(
        root.join("tests/fixtures/diff/azure-inference-head.toml"),
        &plan,
    )
    .expect("copy");
    let (out, _) = run(
        gpuplan().current_dir(dir.path()).args([
            "diff",
            "--format",
            "json",
            "--base-ref",
            "HEAD",
            "plans/plan.toml",
        ]),
        0,
    );
    let v: Value = crate::common::contract(&out).expect("json");
    assert_eq!(v["base"]["source"], "HEAD:plans/plan.toml");
    assert_eq!(
        v["workloads"]["added"],
        serde_json::json!(["translation-api"])
    );
    let (_, err) = run(
        gpuplan().current_dir(dir.path()).args([
            "diff",
            "--base-ref",
            "no-such-ref",
            "plans/plan.toml",
        ]),
        2,
    );
    assert!(err.contains("cannot read"), "{err}");
}

/// A baseline written in a repository is honoured from anywhere: from its root with a
/// relative path, from a subdirectory, with `./` or an absolute path.
#[test]
fn baseline_fingerprints_do_not_depend_on_the_working_directory() {
    let dir = tempfile::tempdir().expect("tmp");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).expect("a repository root");
    std::fs::create_dir_all(repo.join("plans/sub")).expect("dirs");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("plans/mixed-estate.toml"),
    )
    .expect("example");
    std::fs::write(repo.join("plans/estate.toml"), &text).expect("write");
    let base = repo.join("gpuplan-baseline.json");
    let mut c = gpuplan();
    c.current_dir(&repo).args([
        "check",
        "--write-baseline",
        "gpuplan-baseline.json",
        "plans/estate.toml",
    ]);
    run(&mut c, 0);
    let plan = repo.join("plans/estate.toml");
    let spellings: [(&Path, String); 3] = [
        (&repo, "./plans/estate.toml".to_owned()),
        (&repo.join("plans/sub"), "../estate.toml".to_owned()),
        (dir.path(), plan.display().to_string()),
    ];
    for (cwd, spelled) in spellings {
        let mut c = gpuplan();
        c.current_dir(cwd)
            .args(["check", "--format", "json", "--baseline"])
            .arg(&base)
            .arg(&spelled);
        let (out, _) = run(&mut c, 0);
        let v: Value = crate::common::contract(&out).expect("json");
        assert!(
            v["findings"]
                .as_array()
                .expect("findings")
                .iter()
                .all(|f| f.get("suppressed").is_some()),
            "from {} as {spelled}: every finding is known",
            cwd.display()
        );
    }
}

#[test]
fn the_guardrail_watches_the_declared_fleet_too() {
    // Issue 40: a declared pool's `nodes.max` is a ceiling the autoscaler reaches only for
    // work that needs it. Raising it alone (5 to 50) changes no expected figure; only the
    // at-maximum figure (GP017's) moves. Issue 57: that exposure is what a reviewer must
    // see, so the guardrail holds it too and every PR output shows it, old → new.
    let dir = tempfile::tempdir().expect("tmp");
    let base_text = std::fs::read_to_string("plans/azure-inference.toml").expect("plan");
    assert!(base_text.contains("nodes = { min = 2, max = 5 }"));
    let ceiling = base_text.replacen(
        "nodes = { min = 2, max = 5 }",
        "nodes = { min = 2, max = 50 }",
        1,
    );
    let (base, head) = (dir.path().join("base.toml"), dir.path().join("head.toml"));
    std::fs::write(&base, &base_text).expect("base");
    std::fs::write(&head, &ceiling).expect("head");
    let (b, h) = (base.to_str().unwrap(), head.to_str().unwrap());
    let (out, _) = run(gpuplan().args(["diff", "--format", "json", b, h]), 0);
    let v: Value = crate::common::contract(&out).expect("json");
    assert_eq!(v["delta_usd"].as_f64(), Some(0.0), "{v:#}");
    assert_eq!(v["declared_delta_usd"].as_f64(), Some(0.0), "{v:#}");
    let at_max = v["declared_at_max_delta_usd"].as_f64().expect("at max");
    // 45 more Standard_NC24ads_A100_v4 at $3.673/h for 730 h
    assert!((at_max - 45.0 * 3.673 * 730.0).abs() < 0.02, "{v:#}");
    let serve = &v["declared_pools"][0];
    assert_eq!(serve["name"], "serve-mig", "{v:#}");
    assert!((serve["at_max"]["delta_usd"].as_f64().expect("pool") - at_max).abs() < 0.01);
    assert_eq!(serve["after_basis"]["nodes_max"], 50, "{v:#}");
    assert_eq!(serve["after_basis"]["usd_per_node_hour"], 3.673, "{v:#}");
    let changed = &v["pools"]["changed"][0];
    assert_eq!(changed["values"][0]["key"], "nodes.max", "{v:#}");
    assert_eq!(changed["values"][0]["before"], "5", "{v:#}");
    assert_eq!(changed["values"][0]["after"], "50", "{v:#}");
    let (text, err) = run(
        gpuplan().args(["diff", "--fail-on-increase", "10%", b, h]),
        1,
    );
    assert!(
        err.contains("the declared pools' monthly cost at maximum (every node of `nodes.max`) rises by $120,"),
        "{err}"
    );
    assert!(text.contains("nodes.max 5 → 50"), "{text}");
    assert!(
        text.contains("Standard_NC24ads_A100_v4 × 50 nodes × 730 h × $3.673/h"),
        "{text}"
    );
    assert!(
        text.contains("exceeded by the declared at maximum cost"),
        "{text}"
    );
    // The comment's cost lines and the PR check's Markdown show the exposure too.
    for args in [
        vec!["diff", "--format", "markdown", b, h],
        vec!["check", "--format", "markdown", "--base", b, h],
    ] {
        let o = gpuplan().args(&args).output().expect("run");
        let md = String::from_utf8_lossy(&o.stdout);
        assert!(
            md.contains("**at maximum:** $") && md.contains("(+$120,"),
            "{args:?}\n{md}"
        );
    }

    // A floor raised from 2 to 20 nodes is paid every hour: the declared cost (what
    // Terraform will keep running) rises while the recommendation does not move, and the
    // guardrail trips.
    let floor = ceiling.replacen(
        "nodes = { min = 2, max = 50 }",
        "nodes = { min = 20, max = 50 }",
        1,
    );
    std::fs::write(&head, &floor).expect("head");
    let (out, _) = run(gpuplan().args(["diff", "--format", "json", b, h]), 0);
    let v: Value = crate::common::contract(&out).expect("json");
    assert_eq!(v["delta_usd"].as_f64(), Some(0.0), "{v:#}");
    let declared = v["declared_delta_usd"].as_f64().expect("declared delta");
    // The work needs 5 nodes all month (chat-api's 6 and embeddings' 4 replicas, one
    // 3g.40gb each, two to an A100): a floor of 20 is 15 more.
    let serve = &v["declared_pools"][0];
    assert_eq!(serve["name"], "serve-mig");
    assert!((serve["before_usd"].as_f64().expect("before") - 5.0 * 3.673 * 730.0).abs() < 0.01);
    assert!((declared - 15.0 * 3.673 * 730.0).abs() < 0.05, "{v:#}");
    // Per pool, and they add up.
    let per_pool: f64 = v["declared_pools"]
        .as_array()
        .expect("declared pools")
        .iter()
        .map(|l| l["delta_usd"].as_f64().unwrap_or(0.0))
        .sum();
    assert!((per_pool - declared).abs() < 0.02, "{v:#}");
    let (_, err) = run(
        gpuplan().args(["diff", "--fail-on-increase", "10%", b, h]),
        1,
    );
    assert!(
        err.contains("the declared pools' monthly cost rises"),
        "{err}"
    );
    // Watching only the recommendation, as before, it passes.
    run(
        gpuplan().args([
            "diff",
            "--fail-on-increase",
            "10%",
            "--guard",
            "recommended",
            b,
            h,
        ]),
        0,
    );
    // The PR comment shows the declared cost beside the recommended one.
    // (The head fails `check`: fifty nodes pass the plan's budget and quota.)
    let (md, _) = run(
        gpuplan().args(["check", "--format", "markdown", "--base", b, h]),
        1,
    );
    let before = v["base"]["declared_monthly_cost_usd"]
        .as_f64()
        .expect("base");
    let after = v["head"]["declared_monthly_cost_usd"]
        .as_f64()
        .expect("head");
    let money = |x: f64| {
        let c = format!("{:.2}", x);
        let (whole, cents) = c.split_once('.').expect("cents");
        let mut out = String::new();
        for (i, ch) in whole.chars().enumerate() {
            if i > 0 && (whole.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(ch);
        }
        format!("${out}.{cents}")
    };
    let line = format!(
        "**Declared pools' monthly cost:** {} → {}",
        money(before),
        money(after)
    );
    assert!(md.contains(&line), "{line}\n{md}");
}

/// A Markdown document as GitHub reads it (CommonMark with GFM tables): its headings, its
/// tables' rows of cell text, its link targets and its paragraphs' text.
#[derive(Debug, Default)]
struct Doc {
    headings: Vec<(usize, String)>,
    tables: Vec<Vec<Vec<String>>>,
    links: Vec<String>,
    paragraphs: Vec<String>,
    html: Vec<String>,
}

fn read_markdown(text: &str) -> Doc {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let mut doc = Doc::default();
    let mut buf = String::new();
    let mut heading = None;
    for event in Parser::new_ext(text, Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
        match event {
            Event::Start(Tag::Heading { level, .. }) => {
                // A list before it (the findings) leaves its items' text behind.
                buf.clear();
                heading = Some(level as usize);
            }
            Event::Start(Tag::Table(_)) => doc.tables.push(Vec::new()),
            Event::Start(Tag::TableHead | Tag::TableRow) => {
                if let Some(t) = doc.tables.last_mut() {
                    t.push(Vec::new());
                }
            }
            Event::Start(Tag::Link { dest_url, .. }) => doc.links.push(dest_url.to_string()),
            Event::Start(Tag::Paragraph | Tag::TableCell) => buf.clear(),
            Event::Text(t) | Event::Code(t) => buf.push_str(&t),
            Event::SoftBreak | Event::HardBreak => buf.push('\n'),
            Event::Html(t) | Event::InlineHtml(t) => doc.html.push(t.to_string()),
            Event::End(TagEnd::Heading(_)) => {
                doc.headings
                    .push((heading.take().unwrap_or(0), buf.clone()));
                buf.clear();
            }
            Event::End(TagEnd::TableCell) => {
                if let Some(row) = doc.tables.last_mut().and_then(|t| t.last_mut()) {
                    row.push(std::mem::take(&mut buf));
                }
            }
            Event::End(TagEnd::Paragraph) => doc.paragraphs.push(std::mem::take(&mut buf)),
            _ => {}
        }
    }
    doc
}

/// What a reader of the comment must see as structure, never as literal text: headings and
/// tables that parse as such, rows as wide as their header, and no paragraph that is really a
/// heading, a table row or a rule a missing blank line turned into text.
fn assert_well_formed(doc: &Doc, md: &str) {
    for t in &doc.tables {
        let width = t.first().map_or(0, Vec::len);
        assert!(width > 1, "a table has a header:\n{md}");
        for row in t {
            assert_eq!(
                row.len(),
                width,
                "row {row:?} is as wide as its header:\n{md}"
            );
            assert!(row.iter().all(|c| !c.contains('|')), "cell split: {row:?}");
        }
    }
    // HTML is the hidden marker or a <details> fold, each a block of its own that swallows
    // no Markdown after it.
    for h in &doc.html {
        let h = h.trim();
        let marker = h.starts_with("<!--") && h.ends_with("-->") && !h.contains('\n');
        let fold = h == "</details>"
            || (h.starts_with("<details><summary>")
                && h.ends_with("</summary>")
                && !h.contains('\n'));
        assert!(
            marker || fold,
            "HTML that is not a marker or a fold: {h:?}\n{md}"
        );
    }
    for p in &doc.paragraphs {
        for line in p.lines() {
            let l = line.trim_start();
            assert!(
                !(l.starts_with('#') || l.starts_with('|') || l.starts_with("---")),
                "literal Markdown structure in the text: {line:?}\n{md}"
            );
        }
    }
}

#[test]
fn the_pr_comment_parses_as_commonmark_with_its_headings_and_tables() {
    let base = "plans/azure-inference.toml";
    let head = "tests/fixtures/diff/azure-inference-head.toml";
    let link = "https://github.com/o/r/blob/abc/";
    // Built as examples/github-actions.yml builds it: check's comment alone, with what
    // changed and the cost once.
    let (check, _) = run(
        gpuplan().args([
            "check",
            "--format",
            "markdown",
            "--link-base",
            link,
            "--base",
            base,
            head,
        ]),
        0,
    );
    // As `gpuplan comment` posts it: its marker line first.
    let md = format!("<!-- gpuplan-comment: gpuplan -->\n{check}");
    let doc = read_markdown(&md);
    assert_well_formed(&doc, &md);
    // The check's title and its one warning's (GP035: translation-api is in no pool).
    let titles: Vec<_> = doc.headings.iter().map(|(l, t)| (*l, t.as_str())).collect();
    assert_eq!(titles.len(), 2, "{titles:?}\n{md}");
    assert_eq!(titles[0].0, 3);
    assert!(titles[0].1.contains("gpuplan check: passed"), "{titles:?}");
    assert_eq!(titles[1], (4, "Warnings (1)"));
    assert_eq!(
        doc.paragraphs
            .iter()
            .filter(|p| p.starts_with("Recommended monthly cost:"))
            .count(),
        1,
        "one cost line per figure: {md}"
    );
    // the diff's tables: what changed, and the cost per recommended pool and per team
    let heads: Vec<_> = doc.tables.iter().map(|t| t[0][0].as_str()).collect();
    assert_eq!(
        heads,
        ["change", "declared pool", "recommended pool", "team"],
        "{md}"
    );
    assert!(doc
        .paragraphs
        .iter()
        .any(|p| p.starts_with("Recommended monthly cost:")));

    // A failing plan: severity sections, each finding linked to its line.
    let dir = tempfile::tempdir().expect("tmp");
    with_live_allow(dir.path());
    let (md, _) = run(
        gpuplan().current_dir(dir.path()).args([
            "check",
            "--format",
            "markdown",
            "--link-base",
            link,
            "plan.toml",
        ]),
        1,
    );
    let doc = read_markdown(&md);
    assert_well_formed(&doc, &md);
    let levels: Vec<_> = doc.headings.iter().map(|(l, _)| *l).collect();
    assert_eq!(levels[0], 3, "{md}");
    assert!(levels[1..].iter().all(|l| *l == 4), "{levels:?}");
    assert!(doc.headings[0].1.contains("gpuplan check: failed"));
    assert!(doc.headings.iter().any(|(_, t)| t.starts_with("Errors (")));
    assert!(!doc.links.is_empty());
    for l in &doc.links {
        assert!(l.starts_with(&format!("{link}plan.toml#L")), "{l}");
    }
}
