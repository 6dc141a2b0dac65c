//! GitLab Code Quality JSON (`artifacts:reports:codequality`): the findings a merge request's
//! widget and diff show, in the subset of the Code Climate issue format GitLab reads
//! (`description`, `check_name`, `fingerprint`, `severity`, `location.path`,
//! `location.lines.begin`). Suppressed findings are left out: GitLab has no place for them,
//! and it marks as fixed what disappears from one pipeline to the next.

use serde_json::{json, Value};

use crate::diag::{baseline, Diag, Severity};

/// GitLab's scale is info, minor, major, critical, blocker. An error finding fails `check`,
/// so it ranks above anything a linter only advises.
fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Error => "critical",
        Severity::Warning => "minor",
        Severity::Note => "info",
    }
}

/// Load errors are issues too (`check_name` is their `plan::…` code), so a plan that cannot be
/// read shows in the widget instead of an empty report.
pub(crate) fn codequality(findings: &[Diag], errors: &[Diag]) -> String {
    let fingerprints = baseline::fingerprints(findings);
    let mut issues: Vec<Value> = findings
        .iter()
        .zip(&fingerprints)
        .filter(|(d, _)| d.suppressed.is_none())
        .map(|(d, fp)| issue(d, fp.clone()))
        .collect();
    let error_fps = baseline::fingerprints(errors);
    issues.extend(errors.iter().zip(error_fps).map(|(d, fp)| issue(d, fp)));
    serde_json::to_string_pretty(&issues).unwrap_or_default() + "\n"
}

fn issue(d: &Diag, fingerprint: String) -> Value {
    let (line, _) = d.line_col();
    let title = d.title.map(|t| format!(" {t}")).unwrap_or_default();
    json!({
        "type": "issue",
        "description": format!("{}{title}: {}", d.code, d.message),
        "check_name": d.code,
        "fingerprint": fingerprint,
        "severity": severity(d.severity),
        "location": {
            "path": d.file.stable_name(),
            "lines": { "begin": line },
        },
    })
}
