//! A pull-request comment: a summary line, findings grouped by severity with links to the
//! plan's lines, and (when a base plan is given) the cost delta.

use std::fmt::Write as _;

use crate::diag::{Diag, Severity};

pub(crate) use crate::core::format::md;
use crate::core::format::url_path;

/// `link_base`: a URL prefix for file links, such as
/// `https://github.com/OWNER/REPO/blob/SHA/`; without it links are relative paths.
/// A plan compared with its base, for the comment: the cost line, what changed, and each
/// limit the rise broke.
pub(crate) struct Compared<'a> {
    pub(crate) delta: String,
    pub(crate) changes: String,
    pub(crate) failed: &'a [String],
}

pub(crate) fn comment(
    findings: &[Diag],
    errors: &[Diag],
    files: usize,
    link_base: Option<&str>,
    compared: Option<Compared<'_>>,
    notes: &[String],
) -> String {
    let mut o = String::new();
    let summary = super::findings::summary_with_errors(findings, errors, files);
    let failed = compared.as_ref().map_or(&[][..], |c| c.failed);
    // The headline is the job's verdict: the findings and every limit the change broke.
    let icon = if errors.is_empty() && !findings.iter().any(Diag::is_blocking) && failed.is_empty()
    {
        ":white_check_mark:"
    } else {
        ":x:"
    };
    let limits = if failed.is_empty() {
        String::new()
    } else {
        format!("; failed: {}", md(&failed.join("; ")))
    };
    let _ = writeln!(o, "### {icon} gpuplan check: {summary}{limits}");
    let _ = writeln!(o);
    for n in notes {
        let _ = writeln!(o, "> {}", md(n));
        let _ = writeln!(o);
    }
    if let Some(c) = &compared {
        let _ = writeln!(o, "{}", c.delta);
        let _ = writeln!(o);
        if !c.changes.is_empty() {
            let _ = write!(o, "{}", c.changes);
        }
    }
    let link = |d: &Diag| {
        let (line, col) = d.line_col();
        // A hostile file name can neither close the code span nor the link, nor forge a line.
        let label = crate::core::format::md_code(&format!("{}:{line}:{col}", d.file.name));
        let target = format!(
            "{}{}#L{line}",
            link_base.map(md).unwrap_or_default(),
            url_path(d.file.name.trim_start_matches("./"))
        );
        format!("[{label}]({target})")
    };
    if !errors.is_empty() {
        let _ = writeln!(o, "#### Input errors");
        for d in errors {
            let _ = writeln!(o, "- {} `{}`: {}", link(d), d.code, md(&d.message));
        }
        let _ = writeln!(o);
    }
    for (sev, title) in [
        (Severity::Error, "Errors"),
        (Severity::Warning, "Warnings"),
        (Severity::Note, "Notes"),
    ] {
        let these: Vec<&Diag> = findings
            .iter()
            .filter(|d| d.severity == sev && d.suppressed.is_none())
            .collect();
        if these.is_empty() {
            continue;
        }
        let _ = writeln!(o, "#### {title} ({})", these.len());
        for d in these {
            let name = d.code.rule().map_or("", |r| crate::rules::rule(r).name());
            let _ = writeln!(
                o,
                "- {} **{}** `{name}`: {}",
                link(d),
                d.code,
                md(&d.message)
            );
        }
        let _ = writeln!(o);
    }
    let suppressed: Vec<&Diag> = findings.iter().filter(|d| d.suppressed.is_some()).collect();
    if !suppressed.is_empty() {
        let _ = writeln!(
            o,
            "<details><summary>{} suppressed finding(s)</summary>\n",
            suppressed.len()
        );
        for d in suppressed {
            if let Some(s) = &d.suppressed {
                let _ = writeln!(
                    o,
                    "- {} **{}** ({}: {}): {}",
                    link(d),
                    d.code,
                    s.kind,
                    md(&s.justification),
                    md(&d.message)
                );
            }
        }
        let _ = writeln!(o, "\n</details>");
    }
    o
}
