//! Every finding goes through the rule registry: the recommender's own GP017 (its fleet over
//! the budget) is silenced by the same `[[allow]]` as `check`'s, returns when the allow
//! expires, and an allow naming nothing is refused for a rule that is not plan-wide.

use crate::common;

fn plan(allow: &str) -> String {
    format!(
        "version = 1\n\n[plan]\nname = \"budget\"\nowner = \"platform\"\nprovider = \"azure\"\nregions = [\"eastus\"]\nmonthly_budget = 100\n\n\
         [[workload]]\nname = \"chat\"\nteam = \"web\"\nkind = \"inference\"\ngpus = 1\nuser_facing = true\n\n\
         [[pool]]\nname = \"chat\"\nsku = \"Standard_NC24ads_A100_v4\"\nregion = \"eastus\"\nnodes = 1\nworkloads = [\"chat\"]\n\n{allow}"
    )
}

const ALLOW: &str = "[[allow]]\nrule = \"GP017\"\nreason = \"budget raise approved for Q1\"\napproved_by = \"cfo\"\nexpires = EXPIRES\n";

fn run(args: &[&str], text: &str) -> (i32, String, String) {
    let tmp = tempfile::tempdir().expect("tmp");
    let path = tmp.path().join("budget.toml");
    std::fs::write(&path, text).expect("plan");
    let out = common::gpuplan(&tmp.path().join("no-cache"))
        .args(args)
        .arg(&path)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn gp017_in_recommend(stdout: &str) -> serde_json::Value {
    let rec: serde_json::Value = crate::common::contract(stdout).expect("json");
    rec["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == "GP017")
        .cloned()
        .unwrap_or_else(|| panic!("the recommender reports GP017: {rec}"))
}

#[test]
fn an_allow_for_gp017_silences_it_in_recommend_as_in_check() {
    // Without an allow: an error in both.
    let (code, _, _) = run(&["check"], &plan(""));
    assert_eq!(code, 1);
    let (code, out, err) = run(&["recommend", "--format", "json"], &plan(""));
    assert_eq!(code, 1, "the fleet is over budget");
    assert!(gp017_in_recommend(&out)["suppressed"].is_null());
    assert!(err.contains("error[GP017]"), "{err}");

    // With an allow in force (GPUPLAN_TODAY is 2026-12-02): suppressed in both.
    let allowed = plan(&ALLOW.replace("EXPIRES", "2027-03-31"));
    let (code, out, _) = run(&["check", "--format", "json"], &allowed);
    assert_eq!(code, 0, "{out}");
    let findings: serde_json::Value = crate::common::contract(&out).expect("json");
    let f = findings["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == "GP017")
        .cloned()
        .expect("listed as suppressed");
    assert!(!f["suppressed"].is_null(), "{f}");
    let (code, out, err) = run(&["recommend", "--format", "json"], &allowed);
    assert_eq!(
        code, 0,
        "an accepted budget overrun does not fail recommend"
    );
    let f = gp017_in_recommend(&out);
    assert_eq!(
        f["suppressed"], "budget raise approved for Q1, approved by cfo",
        "{f}"
    );
    assert!(!err.contains("error[GP017]"), "{err}");

    // Expired: back in both.
    let expired = plan(&ALLOW.replace("EXPIRES", "2026-11-30"));
    let (code, _, _) = run(&["check"], &expired);
    assert_eq!(code, 1);
    let (code, out, err) = run(&["recommend", "--format", "json"], &expired);
    assert_eq!(code, 1);
    let f = gp017_in_recommend(&out);
    assert!(f["suppressed"].is_null(), "{f}");
    assert!(f["message"]
        .as_str()
        .unwrap_or("")
        .contains("expired on 2026-11-30"));
    assert!(err.contains("error[GP017]"), "{err}");
}

#[test]
fn an_allow_that_names_nothing_is_only_for_plan_wide_rules() {
    let allow = "[[allow]]\nrule = \"GP013\"\nreason = \"r\"\napproved_by = \"me\"\n";
    let (code, _, err) = run(&["check"], &plan(allow));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("an allow must name the `workload` or `pool`"),
        "{err}"
    );
    assert!(
        err.contains("budget.toml:25:8"),
        "located at the rule id: {err}"
    );
}

/// Every code a finding can carry, rule ids and load-error codes alike, names one thing.
#[test]
fn diagnostic_codes_are_unique_and_spelled_from_their_enums() {
    use gpuplan::catalog::CatalogCode;
    use gpuplan::plan::PlanCode;
    let mut all: Vec<String> = gpuplan::rules::RULES
        .iter()
        .flat_map(|r| [r.id().as_str().to_owned(), r.name().to_owned()])
        .collect();
    all.extend(PlanCode::ALL.iter().map(|c| c.as_str().to_owned()));
    all.extend(CatalogCode::ALL.iter().map(|c| c.as_str().to_owned()));
    let mut seen = std::collections::BTreeSet::new();
    for c in &all {
        assert!(seen.insert(c.clone()), "`{c}` names two things");
    }
    for c in PlanCode::ALL {
        assert!(c.as_str().starts_with("plan::"), "{c}");
    }
    // No code is spelled as a string literal outside its enum, so none can drift.
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![src];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("src") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if p.ends_with("diag/codes.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).expect("source");
            // Outside comments (a rule's documentation quotes `rule = "GP033"`).
            let code: String = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect();
            for needle in ["\"plan::", "\"catalog::", "\"GP0"] {
                assert!(
                    !code.contains(needle),
                    "{} spells a code as a literal ({needle}…): use PlanCode/CatalogCode/RuleId",
                    p.display()
                );
            }
        }
    }
}
