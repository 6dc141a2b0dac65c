//! SARIF 2.1.0 for code scanning (GitHub, GitLab, Azure DevOps): one rule per GP id with its
//! documentation, results at the plan file's line and column, stable fingerprints, and
//! findings suppressed by an `[[allow]]` or the baseline under `suppressions`.

use serde_json::{json, Value};

use crate::diag::{baseline, Diag, RuleId, Severity, SuppressionKind};
use crate::rules::{self, RULES};

const SCHEMA: &str =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Note => "note",
    }
}

/// `docs_url`: where the rule documentation lives (`docs/rules.md` of the repository); each
/// rule links to its section there, `{docs_url}#gp001-timeslice-memory-oversubscribed`.
/// Without it rules carry their full help text only.
pub(crate) fn sarif(findings: &[Diag], errors: &[Diag], docs_url: Option<&str>) -> String {
    let rules: Vec<Value> = RULES
        .iter()
        .map(|r| {
            let mut rule = json!({
                "id": r.id(),
                "name": r.name(),
                "shortDescription": { "text": rules::summary_line(*r) },
                "fullDescription": { "text": rules::docs_section(*r, "What it does").replace('\n', " ") },
                "help": {
                    "text": rules::docs_text(*r),
                    "markdown": rules::docs_text(*r),
                },
                "defaultConfiguration": { "level": level(r.default_severity()) },
                "properties": { "tags": ["gpu", "capacity"] },
            });
            if let Some(base) = docs_url {
                rule["helpUri"] = json!(format!("{base}#{}", crate::rules::docs_anchor(*r)));
            }
            rule
        })
        .collect();
    let fingerprints = baseline::fingerprints(findings);
    let results: Vec<Value> = findings
        .iter()
        .zip(&fingerprints)
        .map(|(d, fp)| {
            let mut r = json!({
                "ruleId": d.code,
                "level": level(d.severity),
                "message": { "text": d.message },
                "locations": [location(d)],
                "partialFingerprints": { "gpuplan/v1": fp },
            });
            if let Some(i) = d.code.rule().map(RuleId::index) {
                r["ruleIndex"] = json!(i);
            }
            if let Some(s) = &d.suppressed {
                let mut just = s.justification.clone();
                if !s.approved_by.is_empty() {
                    just.push_str(&format!(" (approved by {})", s.approved_by));
                }
                r["suppressions"] = json!([{
                    // An [[allow]] lives in the plan file itself; a baseline outside it.
                    "kind": match s.kind {
                        SuppressionKind::Allow => "inSource",
                        SuppressionKind::Baseline => "external",
                    },
                    "status": "accepted",
                    "justification": just,
                }]);
            }
            r
        })
        .collect();
    let notifications: Vec<Value> = errors
        .iter()
        .map(|d| {
            json!({
                "level": "error",
                "message": { "text": d.message },
                "descriptor": { "id": d.code },
                "locations": [location(d)],
            })
        })
        .collect();
    let doc = json!({
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "gpuplan",
                "version": env!("CARGO_PKG_VERSION"),
                "semanticVersion": env!("CARGO_PKG_VERSION"),
                "rules": rules,
            }},
            "invocations": [{
                "executionSuccessful": errors.is_empty(),
                "toolExecutionNotifications": notifications,
            }],
            "originalUriBaseIds": { "%SRCROOT%": { "description": { "text": "the directory gpuplan ran in" } } },
            "results": results,
            "columnKind": "unicodeCodePoints",
        }],
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n"
}

fn location(d: &Diag) -> Value {
    let (line, col) = d.line_col();
    let (end_line, end_col) = d.file.line_col(d.span.end);
    // Same-line spans of zero width still need an end column past the start.
    let end_col = if end_line == line {
        end_col.max(col + 1)
    } else {
        end_col
    };
    json!({
        "physicalLocation": {
            "artifactLocation": { "uri": uri(&d.file.stable_name()), "uriBaseId": "%SRCROOT%" },
            "region": {
                "startLine": line,
                "startColumn": col,
                "endLine": end_line.max(line),
                "endColumn": end_col,
            },
        }
    })
}

/// A relative path as a URI reference: forward slashes, no `./`, percent-encoded
/// ([`crate::core::format::url_path`]).
fn uri(path: &str) -> String {
    let p = path.replace('\\', "/");
    crate::core::format::url_path(p.strip_prefix("./").unwrap_or(&p))
}
