//! The baseline: today's findings, recorded so that only new ones fail a pull request while
//! a team works through an existing estate (`check --write-baseline FILE`, `--baseline FILE`).
//!
//! A finding is identified by its rule, the plan file, the workload or pool it concerns and
//! its message with every number taken out, plus a counter for identical ones. Line numbers
//! are not part of it, so reformatting or reordering the plan keeps every fingerprint; a
//! price or size that changes does not make an old finding look new.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{Diag, Suppression};

pub(crate) const SCHEMA: &str = "gpuplan.baseline/v1";

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Baseline {
    pub schema: String,
    pub findings: Vec<Entry>,
}

#[derive(
    Debug, Clone, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub(crate) struct Entry {
    pub fingerprint: String,
    pub rule: String,
    pub file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// For people reading the file; not part of the match.
    pub message: String,
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn file_key(name: &str) -> String {
    crate::source::stable_name(name)
}

/// Digits carry prices, sizes and positions; the kind of problem is in the words.
fn shape(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut in_number = false;
    for c in message.chars() {
        if c.is_ascii_digit() || (in_number && c == '.') {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            in_number = false;
            out.push(c);
        }
    }
    out
}

/// One fingerprint per finding, in the findings' order.
pub(crate) fn fingerprints(findings: &[Diag]) -> Vec<String> {
    let keys: Vec<String> = findings
        .iter()
        .map(|d| {
            format!(
                "{}\u{1f}{}\u{1f}{}\u{1f}{}\u{1f}{}",
                d.code,
                file_key(&d.file.name),
                d.workload.as_deref().unwrap_or(""),
                d.pool.as_deref().unwrap_or(""),
                shape(&d.message)
            )
        })
        .collect();
    // Identical keys are numbered in a stable order of the keys themselves, so the numbering
    // does not depend on where in the file the findings sit.
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| {
        keys[a]
            .cmp(&keys[b])
            .then(findings[a].message.cmp(&findings[b].message))
    });
    let mut out = vec![String::new(); keys.len()];
    let mut prev: Option<&str> = None;
    let mut n = 0u32;
    for i in order {
        if prev == Some(keys[i].as_str()) {
            n += 1;
        } else {
            n = 0;
        }
        prev = Some(&keys[i]);
        out[i] = format!("{:016x}", fnv1a(format!("{}\u{1f}{n}", keys[i]).as_bytes()));
    }
    out
}

/// The baseline of these findings: everything not already suppressed by an `[[allow]]`.
pub(crate) fn build(findings: &[Diag]) -> Baseline {
    let fps = fingerprints(findings);
    let mut entries: Vec<Entry> = findings
        .iter()
        .zip(fps)
        .filter(|(d, _)| d.suppressed.is_none())
        .map(|(d, fingerprint)| Entry {
            fingerprint,
            rule: d.code.as_str().to_owned(),
            file: file_key(&d.file.name).to_owned(),
            workload: d.workload.clone(),
            pool: d.pool.clone(),
            message: d.message.clone(),
        })
        .collect();
    entries.sort();
    Baseline {
        schema: SCHEMA.to_owned(),
        findings: entries,
    }
}

pub(crate) fn to_json(b: &Baseline) -> String {
    serde_json::to_string_pretty(b).unwrap_or_default() + "\n"
}

/// Why a baseline file cannot be used.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub(crate) enum BaselineError {
    #[error("cannot read the baseline `{path}`: {source}")]
    #[diagnostic(code(gpuplan::baseline::read))]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: not a gpuplan baseline: {message}")]
    #[diagnostic(code(gpuplan::baseline::parse))]
    Parse {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: schema `{found}`, expected `{SCHEMA}`")]
    #[diagnostic(code(gpuplan::baseline::schema))]
    Schema { path: String, found: String },
}

pub(crate) fn read(path: &Path) -> Result<Baseline, BaselineError> {
    let shown = path.display().to_string();
    // A baseline holds a fingerprint per accepted finding: 64 MiB is millions of them.
    let text = crate::fsio::read_text(path, 64 << 20).map_err(|source| BaselineError::Read {
        path: shown.clone(),
        source,
    })?;
    // A BOM, which some Windows editors write, is accepted as it is in a plan (RFC 8259
    // lets a parser ignore it).
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let b: Baseline = serde_json::from_str(text).map_err(|e| BaselineError::Parse {
        path: shown.clone(),
        line: e.line(),
        column: e.column(),
        message: e.to_string(),
    })?;
    if b.schema != SCHEMA {
        return Err(BaselineError::Schema {
            path: shown,
            found: b.schema,
        });
    }
    Ok(b)
}

/// Mark findings the baseline already records as suppressed; returns how many.
pub(crate) fn apply(findings: &mut [Diag], b: &Baseline, path: &Path) -> usize {
    let known: std::collections::BTreeSet<&str> =
        b.findings.iter().map(|e| e.fingerprint.as_str()).collect();
    let fps = fingerprints(findings);
    let mut n = 0;
    for (d, fp) in findings.iter_mut().zip(fps) {
        if d.suppressed.is_none() && known.contains(fp.as_str()) {
            d.suppressed = Some(Suppression {
                kind: super::SuppressionKind::Baseline,
                justification: format!(
                    "recorded in the baseline `{}`",
                    crate::core::printable(&path.display().to_string())
                ),
                approved_by: String::new(),
                expires: None,
            });
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_do_not_change_the_shape() {
        assert_eq!(
            shape("pool `a` costs $1,234.56 at 3 nodes"),
            "pool `a` costs $#,# at # nodes"
        );
    }
}
