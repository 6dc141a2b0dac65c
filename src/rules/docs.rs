//! The rules' documentation as `explain`, the README's table and `docs/rules.md` print it.

use super::{Rule, RULES};

/// `explain --format json`: the documentation of the rules asked for.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleDocs {
    /// `gpuplan.rules/v1`.
    pub schema: &'static str,
    pub rules: Vec<RuleDoc>,
}

/// The value of [`RuleDocs`]' `schema` key.
pub const RULE_DOCS_SCHEMA: &str = "gpuplan.rules/v1";

/// One rule's documentation, as `explain` prints it.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct RuleDoc {
    /// The stable id, `GP001`…
    #[schemars(with = "String")]
    pub id: crate::diag::RuleId,
    pub name: &'static str,
    /// The default severity: `error`, `warning` or `note`.
    pub severity: &'static str,
    pub docs: String,
}

impl RuleDocs {
    pub fn of(rules: &[&dyn Rule]) -> Self {
        RuleDocs {
            schema: RULE_DOCS_SCHEMA,
            rules: rules
                .iter()
                .map(|r| RuleDoc {
                    id: r.id(),
                    name: r.name(),
                    severity: r.default_severity().as_str(),
                    docs: docs_text(*r),
                })
                .collect(),
        }
    }
}

/// The documentation as printed: the leading space rustdoc leaves on each line removed.
pub fn docs_text(rule: &dyn Rule) -> String {
    rule.docs()
        .lines()
        .map(|l| l.strip_prefix(' ').unwrap_or(l))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// One `## Heading` section of a rule's documentation, without the heading.
pub(crate) fn docs_section(rule: &dyn Rule, heading: &str) -> String {
    let text = docs_text(rule);
    let marker = format!("## {heading}");
    let Some(start) = text.find(&marker) else {
        return String::new();
    };
    let body = &text[start + marker.len()..];
    let end = body.find("\n## ").unwrap_or(body.len());
    body[..end].trim().to_owned()
}

/// The first sentence of what a rule does, on one line. A sentence ends at a full stop and a
/// space; an ellipsis (`{ min = 0, ... }`) does not end one.
pub(crate) fn summary_line(rule: &dyn Rule) -> String {
    let what = docs_section(rule, "What it does").replace('\n', " ");
    let b = what.as_bytes();
    let end = (1..b.len().saturating_sub(1))
        .find(|&i| b[i] == b'.' && b[i + 1] == b' ' && b[i - 1] != b'.');
    match end {
        Some(i) => what[..=i].to_owned(),
        None => what,
    }
}

/// The README's rule table, made from the rules' own documentation (a test holds the README
/// equal to it).
pub fn readme_table() -> String {
    let mut out = String::from("| id | name | severity | what it catches |\n|---|---|---|---|\n");
    for r in RULES {
        let what = summary_line(*r);
        let what = what.strip_suffix('.').unwrap_or(&what).replace('|', "\\|");
        out.push_str(&format!(
            "| {} | `{}` | {} | {what} |\n",
            r.id(),
            r.name(),
            r.default_severity()
        ));
    }
    out
}

/// The anchor a rule's section has in `docs/rules.md`, as GitHub and GitLab make it from the
/// heading `GP001 timeslice-memory-oversubscribed`: lower case, spaces as `-`.
pub fn docs_anchor(rule: &dyn Rule) -> String {
    format!(
        "{}-{}",
        rule.id().as_str().to_ascii_lowercase(),
        rule.name()
    )
}

/// `docs/rules.md`: every rule's documentation under a heading of its own, what SARIF's
/// `helpUri` (`--docs-url URL#anchor`) links to (a test holds the file equal to it).
pub fn docs_page() -> String {
    let mut out = String::from(
        "# gpuplan rules\n\nGenerated from the rules' own documentation (what `gpuplan explain RULE` prints); do not edit: `GPUPLAN_BLESS=1 cargo test --test all -- rules::` writes it.\n",
    );
    for r in RULES {
        out.push_str(&format!(
            "\n## {} {}\n\nSeverity: {}.\n",
            r.id(),
            r.name(),
            r.default_severity()
        ));
        // The rule's own `# GPnnn name` title is the heading above; its sections sit under it.
        for line in docs_text(*r).lines().skip_while(|l| l.starts_with("# ")) {
            match line.strip_prefix("## ") {
                Some(h) => out.push_str(&format!("### {h}\n")),
                None => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
    }
    out
}
