//! `check`'s CI reports: JUnit XML with a suite per plan and a case per rule (valid against
//! the xUnit schema), and GitLab Code Quality JSON holding each unsuppressed finding.

use std::path::Path;

use serde_json::Value;

use crate::pr::{gpuplan, run, with_live_allow};

/// The plans every CI report test reads, in a directory of their own: the example with
/// findings (one suppressed by its `[[allow]]`), a clean one, and one that cannot be loaded
/// whose name and text hold markup.
fn ci_report_plans() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tmp");
    with_live_allow(dir.path());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(
        root.join("plans/minimal.toml"),
        dir.path().join("clean.toml"),
    )
    .expect("copy");
    std::fs::write(
        dir.path().join("bad<&\"'>.toml"),
        "version = 1\n[plan]\nname = \"a<b>&'\\\"c\"\n",
    )
    .expect("write");
    dir
}

const CI_PLANS: [&str; 3] = ["plan.toml", "clean.toml", "bad<&\"'>.toml"];

fn check_in(dir: &Path, format: &str, extra: &[&str]) -> String {
    let (out, _) = run(
        gpuplan()
            .current_dir(dir)
            .args(["check", "--format", format])
            .args(extra)
            .args(CI_PLANS),
        2,
    );
    out
}

#[test]
fn junit_has_a_suite_per_plan_a_case_per_rule_and_fails_where_check_does() {
    let dir = ci_report_plans();
    let xml = check_in(dir.path(), "junit", &["-A", "GP003"]);
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let suites: Vec<_> = root.children().filter(|n| n.is_element()).collect();
    let names: Vec<_> = suites
        .iter()
        .map(|s| s.attribute("name").unwrap_or(""))
        .collect();
    assert_eq!(
        names, CI_PLANS,
        "a suite per plan, in order, names unescaped"
    );

    let json = check_in(dir.path(), "json", &["-A", "GP003"]);
    let v: Value = crate::common::contract(&json).expect("json");
    let n = |node: roxmltree::Node, a: &str| -> usize {
        node.attribute(a)
            .and_then(|x| x.parse().ok())
            .expect("count")
    };
    let (mut tests, mut failures) = (0, 0);
    for suite in &suites[..2] {
        let cases: Vec<_> = suite
            .children()
            .filter(|c| c.has_tag_name("testcase"))
            .collect();
        assert_eq!(n(*suite, "tests"), cases.len());
        let failed: Vec<&str> = cases
            .iter()
            .filter(|c| c.children().any(|x| x.has_tag_name("failure")))
            .map(|c| c.attribute("name").unwrap_or("")[..5].as_ref())
            .collect();
        assert_eq!(n(*suite, "failures"), failed.len());
        // The rules with an unsuppressed error finding in this plan, from the JSON report.
        let mut expected: Vec<&str> = v["findings"]
            .as_array()
            .expect("findings")
            .iter()
            .filter(|f| f["file"] == suite.attribute("name").unwrap_or(""))
            .filter(|f| f["severity"] == "error" && f.get("suppressed").is_none())
            .filter_map(|f| f["rule"].as_str())
            .collect();
        expected.sort();
        expected.dedup();
        assert_eq!(
            failed,
            expected,
            "{}",
            suite.attribute("name").unwrap_or("")
        );
        let skipped: Vec<_> = cases
            .iter()
            .filter(|c| c.children().any(|x| x.has_tag_name("skipped")))
            .map(|c| c.attribute("name").unwrap_or(""))
            .collect();
        assert_eq!(skipped, ["GP003 timeslice-multi-gpu-request"]);
        tests += cases.len();
        failures += failed.len();
    }
    assert!(failures >= 5, "the example has error findings: {failures}");
    // The suppressed finding is reported, as suppressed, in its case's output.
    assert!(
        xml.contains("(suppressed by allow: labeling spikes"),
        "{xml}"
    );
    // The plan that cannot be loaded: one case in error, its markup read back as text.
    let bad = suites[2];
    assert_eq!((n(bad, "tests"), n(bad, "errors")), (1, 1));
    let error = bad
        .descendants()
        .find(|x| x.has_tag_name("error"))
        .expect("error");
    assert!(error
        .attribute("type")
        .is_some_and(|t| t.starts_with("plan::")));
    assert_eq!(n(root, "tests"), tests + 1);
    assert_eq!(n(root, "failures"), failures);
    assert_eq!(n(root, "errors"), 1);
}

/// Jenkins' xUnit schema, by libxml2's validator (Debian `libxml2-utils`, installed by
/// `.ci/run`), with a control the validator must refuse.
#[test]
#[ignore = "needs xmllint (Debian libxml2-utils); .ci/run installs it and runs this"]
fn junit_validates_against_the_xunit_schema() {
    let xsd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conformance/junit-10.xsd");
    let dir = ci_report_plans();
    let valid = |xml: &str| {
        let f = dir.path().join("report.xml");
        std::fs::write(&f, xml).expect("write");
        let out = std::process::Command::new("xmllint")
            .args(["--noout", "--schema"])
            .arg(&xsd)
            .arg(&f)
            .output()
            .expect("xmllint runs (Debian libxml2-utils)");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for extra in [&[][..], &["-A", "GP003"], &["--deny", "warnings"]] {
        let xml = check_in(dir.path(), "junit", extra);
        let (ok, err) = valid(&xml);
        assert!(ok, "{err}\n{xml}");
    }
    let (ok, _) =
        valid(&check_in(dir.path(), "junit", &[]).replacen(" name=\"GP001", " nom=\"GP001", 1));
    assert!(!ok, "a test case without its name is refused");
}

#[test]
fn gitlab_code_quality_validates_and_holds_each_unsuppressed_finding() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/conformance/gitlab-codequality.schema.json"),
    )
    .expect("schema");
    let schema = jsonschema::validator_for(&crate::common::contract(&text).expect("json"))
        .expect("valid schema");
    let dir = ci_report_plans();
    let report: Value = crate::common::contract(check_in(dir.path(), "gitlab", &[])).expect("json");
    let errors: Vec<_> = schema.iter_errors(&report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}\n{report:#}");
    // A control: the schema refuses a severity GitLab does not know.
    let mut wrong = report.clone();
    wrong[0]["severity"] = "error".into();
    assert!(!schema.is_valid(&wrong));

    let json: Value = crate::common::contract(check_in(dir.path(), "json", &[])).expect("json");
    let issues = report.as_array().expect("array");
    let mut expected: Vec<(String, u64, String)> = json["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f.get("suppressed").is_none())
        .chain(json["errors"].as_array().expect("errors"))
        .map(|f| {
            let sev = match f["severity"].as_str() {
                Some("error") => "critical",
                Some("warning") => "minor",
                _ => "info",
            };
            (
                f["rule"].as_str().unwrap_or("").to_owned(),
                f["line"].as_u64().unwrap_or(0),
                sev.to_owned(),
            )
        })
        .collect();
    let mut got: Vec<(String, u64, String)> = issues
        .iter()
        .map(|i| {
            (
                i["check_name"].as_str().unwrap_or("").to_owned(),
                i["location"]["lines"]["begin"].as_u64().unwrap_or(0),
                i["severity"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    expected.sort();
    got.sort();
    assert_eq!(got, expected);
    assert!(json["findings"]
        .as_array()
        .expect("f")
        .iter()
        .any(|f| f.get("suppressed").is_some()));
    let mut fps: Vec<_> = issues
        .iter()
        .map(|i| i["fingerprint"].as_str().unwrap_or(""))
        .collect();
    fps.sort();
    fps.dedup();
    assert_eq!(
        fps.len(),
        issues.len(),
        "GitLab tells issues apart by fingerprint"
    );
    assert!(issues
        .iter()
        .any(|i| i["location"]["path"] == "bad<&\"'>.toml"));
}
