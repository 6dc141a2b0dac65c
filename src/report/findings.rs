//! Printing findings: human (miette graphical, grouped by file) and `gpuplan.findings/v1` JSON.

use std::fmt::Write as _;

use miette::{GraphicalReportHandler, GraphicalTheme};
use serde::Serialize;

use crate::diag::{Diag, Severity, Suppression};

/// Render diagnostics the way a person reads them. `color` follows NO_COLOR and the terminal.
pub fn human(diags: &[Diag], color: bool) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme).with_width(100);
    let mut out = String::new();
    for d in diags {
        let mut one = String::new();
        // A snippet prints whole source lines: a line of megabytes is located, not quoted.
        if d.quotes_long_line() || handler.render_report(&mut one, d).is_err() {
            // A report that cannot be drawn still has to reach the user.
            let (line, col) = d.line_col();
            one = format!(
                "{}: {} [{}] {}:{line}:{col}\n",
                d.severity,
                d.message,
                d.code,
                crate::core::printable(&d.file.name)
            );
            if let Some(h) = &d.help {
                let _ = writeln!(one, "  help: {h}");
            }
        }
        if let Some(s) = &d.suppressed {
            let by = if s.approved_by.is_empty() {
                String::new()
            } else {
                format!(" — approved by {}", s.approved_by)
            };
            let _ = writeln!(one, "  (suppressed by {}: {}{by})", s.kind, s.justification);
        }
        out.push_str(&one);
    }
    out
}

/// One-line summary: counts by severity, suppressed findings apart.
pub(crate) fn summary(diags: &[Diag], files: usize) -> String {
    let count = |sev| {
        diags
            .iter()
            .filter(|d| d.suppressed.is_none() && d.severity == sev)
            .count()
    };
    let suppressed = diags.iter().filter(|d| d.suppressed.is_some()).count();
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let failing: std::collections::BTreeSet<&str> = diags
        .iter()
        .filter(|d| d.is_blocking())
        .map(|d| d.file.name.as_str())
        .collect();
    // "failed in 1 of 4 files", never "failed in 4 files" when one did.
    let verdict = match (failing.len(), files) {
        (0, n) => format!("passed in {}", plural(n, "file")),
        (f, n) if f >= n => format!("failed in {}", plural(n, "file")),
        (f, n) => format!("failed in {f} of {n} files"),
    };
    let mut s = format!(
        "{verdict}: {}, {}, {}",
        plural(count(Severity::Error), "error"),
        plural(count(Severity::Warning), "warning"),
        plural(count(Severity::Note), "note"),
    );
    if suppressed > 0 {
        let _ = write!(s, ", {suppressed} suppressed");
    }
    s
}

/// The summary when some input could not be read or validated: never "passed", since the
/// files with input errors were not checked at all.
pub(crate) fn summary_with_errors(findings: &[Diag], errors: &[Diag], files: usize) -> String {
    if errors.is_empty() {
        return summary(findings, files);
    }
    let unread: std::collections::BTreeSet<&str> =
        errors.iter().map(|d| d.file.name.as_str()).collect();
    let checked = files.saturating_sub(unread.len());
    let mut s = format!(
        "failed: {} input error(s) in {} of {} file(s), which were not checked",
        errors.len(),
        unread.len(),
        files
    );
    if checked > 0 {
        // What the files that were read say, too.
        let of_checked = summary(findings, checked);
        let _ = write!(
            s,
            "; the other {checked}: {}",
            of_checked
                .split_once(": ")
                .map_or(of_checked.as_str(), |(_, c)| c)
        );
    }
    s
}

#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct JsonFinding<'a> {
    pub rule: &'a str,
    pub severity: Severity,
    pub message: &'a str,
    pub file: &'a str,
    pub line: usize,
    pub column: usize,
    pub end_line: usize,
    pub end_column: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<&'a str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<&'a str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<&'a str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suppressed: Option<&'a Suppression>,
}

impl<'a> From<&'a Diag> for JsonFinding<'a> {
    fn from(d: &'a Diag) -> Self {
        let (line, column) = d.line_col();
        let (end_line, end_column) = d.file.line_col(d.span.end);
        Self {
            rule: d.code.as_str(),
            severity: d.severity,
            message: &d.message,
            file: &d.file.name,
            line,
            column,
            end_line,
            end_column,
            workload: d.workload.as_deref(),
            pool: d.pool.as_deref(),
            help: d.help.as_deref(),
            suppressed: d.suppressed.as_ref(),
        }
    }
}

pub(crate) const SCHEMA: &str = "gpuplan.findings/v1";

/// What `check --format json` prints.
#[derive(Serialize, schemars::JsonSchema)]
pub(crate) struct Findings<'a> {
    schema: &'static str,
    findings: Vec<JsonFinding<'a>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    errors: Vec<JsonFinding<'a>>,
}

/// `{"schema": "gpuplan.findings/v1", "findings": [...], "errors": [...]}`: load errors are
/// kept apart from rule findings so a pipeline can tell "bad plan file" from "plan has problems".
pub(crate) fn json(findings: &[Diag], errors: &[Diag]) -> String {
    let doc = Findings {
        schema: SCHEMA,
        findings: findings.iter().map(JsonFinding::from).collect(),
        errors: errors.iter().map(JsonFinding::from).collect(),
    };
    // Serializing plain data into a String cannot fail.
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}
