//! JUnit XML for CI test reports (GitLab `artifacts:reports:junit`, Jenkins, Azure DevOps,
//! CircleCI): a test suite per plan, a test case per rule, a failure where the rule has error
//! findings. A plan that cannot be read is one test case in error. Valid against the JUnit
//! schema Jenkins' xUnit plugin publishes (`junit-10.xsd`), which the tests hold it to.

use std::fmt::Write as _;

use crate::core::format::{markup, markup_attribute, markup_lines};
use crate::diag::{Code, Diag, RuleId};
use crate::rules::{Levels, RULES};

/// What a rule did on one plan.
enum Outcome<'a> {
    /// Turned off on the command line (`-A RULE`).
    Skipped,
    /// Findings below error (and suppressed ones): the case passes and lists them.
    Passed(Vec<&'a Diag>),
    /// At least one error finding that no `[[allow]]` or baseline suppresses.
    Failed(Vec<&'a Diag>),
}

fn outcome<'a>(rule: RuleId, findings: &[&'a Diag], levels: &Levels) -> Outcome<'a> {
    if levels.is_off(rule) {
        return Outcome::Skipped;
    }
    let mine: Vec<&Diag> = findings
        .iter()
        .copied()
        .filter(|d| d.code == Code::Rule(rule))
        .collect();
    if mine.iter().any(|d| d.is_blocking()) {
        Outcome::Failed(mine)
    } else {
        Outcome::Passed(mine)
    }
}

/// One line per finding of `plan`: where, how serious, what; a suppressed one says by what.
fn lines(plan: &str, ds: &[&Diag]) -> String {
    let mut o = String::new();
    for d in ds {
        let (line, col) = d.line_col();
        let why = match &d.suppressed {
            Some(s) => format!(" (suppressed by {}: {})", s.kind, s.justification),
            None => String::new(),
        };
        let _ = writeln!(
            o,
            "{plan}:{line}:{col}: {} {}: {}{why}",
            d.severity, d.code, d.message
        );
    }
    o
}

fn case(o: &mut String, plan: &str, rule: &dyn crate::rules::Rule, outcome: &Outcome) {
    let _ = write!(
        o,
        "    <testcase name=\"{} {}\" classname=\"{}\"",
        rule.id(),
        rule.name(),
        markup(plan)
    );
    match outcome {
        Outcome::Passed(ds) if ds.is_empty() => o.push_str("/>\n"),
        Outcome::Passed(ds) => {
            let _ = write!(
                o,
                ">\n      <system-out>{}</system-out>\n    </testcase>\n",
                markup_lines(&lines(plan, ds))
            );
        }
        Outcome::Skipped => {
            o.push_str(
                ">\n      <skipped message=\"turned off on the command line\"/>\n    </testcase>\n",
            );
        }
        Outcome::Failed(ds) => {
            let errors = ds.iter().filter(|d| d.is_blocking()).count();
            let first = ds
                .iter()
                .find(|d| d.is_blocking())
                .map_or("", |d| d.message.as_str());
            let _ = write!(
                o,
                ">\n      <failure type=\"{}\" message=\"{} error finding(s): {}\">{}</failure>\n    </testcase>\n",
                rule.id(),
                errors,
                markup_attribute(first),
                markup_lines(&lines(plan, ds))
            );
        }
    }
}

/// A plan that could not be read or validated: one case in error holding every problem.
fn unreadable(o: &mut String, plan: &str, errors: &[&Diag]) {
    let _ = write!(
        o,
        "  <testsuite name=\"{p}\" tests=\"1\" failures=\"0\" errors=\"1\" skipped=\"0\">\n    \
         <testcase name=\"load\" classname=\"{p}\">\n      \
         <error type=\"{}\" message=\"{}\">{}</error>\n    </testcase>\n  </testsuite>\n",
        markup(errors[0].code.as_str()),
        markup_attribute(&errors[0].message),
        markup_lines(&lines(plan, errors)),
        p = markup(plan),
    );
}

/// Diagnostics by the plan they are in, each file's stable name worked out once (it resolves
/// the path against the repository on disk).
fn by_plan(ds: &[Diag]) -> std::collections::BTreeMap<String, Vec<&Diag>> {
    let mut out: std::collections::BTreeMap<String, Vec<&Diag>> = Default::default();
    for d in ds {
        out.entry(d.file.stable_name()).or_default().push(d);
    }
    out
}

/// `plans`: every plan named on the command line, in order, by the name findings carry.
pub(crate) fn junit(
    plans: &[String],
    findings: &[Diag],
    errors: &[Diag],
    levels: &Levels,
) -> String {
    let (mut tests, mut failures, mut in_error) = (0, 0, 0);
    let (error_of, found_in) = (by_plan(errors), by_plan(findings));
    let mut body = String::new();
    for plan in plans {
        let errs = error_of.get(plan).cloned().unwrap_or_default();
        if !errs.is_empty() {
            unreadable(&mut body, plan, &errs);
            tests += 1;
            in_error += 1;
            continue;
        }
        let mine = found_in.get(plan).cloned().unwrap_or_default();
        let outcomes: Vec<_> = RULES
            .iter()
            .map(|r| (*r, outcome(r.id(), &mine, levels)))
            .collect();
        let failed = outcomes
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Failed(_)))
            .count();
        let skipped = outcomes
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Skipped))
            .count();
        let _ = writeln!(
            body,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failed}\" errors=\"0\" skipped=\"{skipped}\">",
            markup(plan),
            outcomes.len()
        );
        for (rule, o) in &outcomes {
            case(&mut body, plan, *rule, o);
        }
        body.push_str("  </testsuite>\n");
        tests += outcomes.len();
        failures += failed;
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <testsuites name=\"gpuplan check\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{in_error}\">\n\
         {body}</testsuites>\n"
    )
}
