//! Reading a plan file into [`RawPlan`]: size, encoding, nesting, TOML syntax, types and
//! unknown keys. Each failure is a diagnostic at the offending text.

use std::path::Path;

use super::PlanCode;
use std::sync::Arc;

use super::raw::RawPlan;
use crate::diag::Diag;
use crate::source::SourceFile;

/// Plans are hand-written; anything this large is a mistake, not a plan.
pub(crate) const MAX_PLAN_BYTES: usize = 8 << 20;
/// Deeper nesting than any plan needs; refusing it keeps the parser's recursion bounded.
pub(crate) const MAX_NESTING: usize = 32;

/// Read a plan file from disk (or `-` for standard input).
pub(crate) fn read(path: &Path) -> Result<Arc<SourceFile>, Box<Diag>> {
    let name = path.display().to_string();
    let bytes = crate::fsio::read_as(
        path,
        MAX_PLAN_BYTES as u64,
        crate::fsio::Input::RegularOrPipe,
    );
    if matches!(&bytes, Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge) {
        return Err(too_large(name));
    }
    let bytes = bytes.map_err(|e| {
        Box::new(
            Diag::error(
                PlanCode::Unreadable,
                &SourceFile::new(name.clone(), ""),
                0..0,
                format!("cannot read `{}`: {e}", crate::core::printable(&name)),
            )
            .help("check the path and its permissions"),
        )
    })?;
    from_bytes(name, bytes)
}

fn too_large(name: String) -> Box<Diag> {
    let file = SourceFile::new(name.clone(), "");
    Box::new(
        Diag::error(
            PlanCode::TooLarge,
            &file,
            0..0,
            format!(
                "`{}` is larger than {} MiB, the limit for a plan file",
                crate::core::printable(&name),
                MAX_PLAN_BYTES >> 20
            ),
        )
        .help("a plan lists workloads and pools; split generated data out of it"),
    )
}

/// Check size and encoding; the text that comes back is what every later span points into.
pub(crate) fn from_bytes(name: String, bytes: Vec<u8>) -> Result<Arc<SourceFile>, Box<Diag>> {
    if bytes.len() > MAX_PLAN_BYTES {
        return Err(too_large(name));
    }
    match String::from_utf8(bytes) {
        Ok(text) => Ok(SourceFile::new(name, text)),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let text = String::from_utf8_lossy(e.as_bytes()).into_owned();
            // The lossy text keeps the valid prefix byte for byte, so `at` still points there.
            let file = SourceFile::new(name, text);
            Err(Box::new(
                Diag::error(
                    PlanCode::NotUtf8,
                    &file,
                    at..at + 1,
                    "the plan file is not valid UTF-8",
                )
                .label("this byte is not UTF-8")
                .help("TOML files must be UTF-8; re-save the file as UTF-8"),
            ))
        }
    }
}

/// Parse TOML into the raw plan, reporting the first syntax or type problem with its location.
pub(crate) fn parse(file: &Arc<SourceFile>) -> Result<RawPlan, Vec<Diag>> {
    if let Some(at) = too_deep(&file.text) {
        return Err(vec![Diag::error(
            PlanCode::TooDeep,
            file,
            at..at + 1,
            format!("arrays or tables nested deeper than {MAX_NESTING} levels"),
        )
        .label("nesting limit reached here")
        .help(
            "no key of a plan file nests this deep; check for a runaway generated value",
        )]);
    }
    toml::from_str::<RawPlan>(&file.text).map_err(|e| vec![toml_error(file, &e)])
}

fn toml_error(file: &Arc<SourceFile>, e: &toml::de::Error) -> Diag {
    let msg = e.message().trim().to_owned();
    let span = e.span().unwrap_or(0..0);
    if let Some((unknown, expected)) = unknown_field(&msg) {
        let help = match did_you_mean(&unknown, &expected) {
            Some(best) => format!("did you mean `{best}`?"),
            None => format!(
                "known keys here: {}",
                expected
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        return Diag::error(
            PlanCode::UnknownKey,
            file,
            span,
            format!("unknown key `{unknown}`"),
        )
        .label("not a key of this table")
        .help(help);
    }
    if let Some((value, expected)) = unknown_variant(&msg) {
        let allowed = expected
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let help = match did_you_mean(&value, &expected) {
            Some(best) => format!("did you mean `{best}`? allowed values: {allowed}"),
            None => format!("allowed values: {allowed}"),
        };
        return Diag::error(
            PlanCode::InvalidValue,
            file,
            span,
            format!("`{value}` is not an allowed value"),
        )
        .label("not allowed here")
        .help(help);
    }
    if let Some(field) = msg
        .strip_prefix("missing field `")
        .and_then(|s| s.strip_suffix('`'))
    {
        return Diag::error(
            PlanCode::MissingKey,
            file,
            span,
            format!("missing required key `{field}`"),
        )
        .label(format!("this table needs `{field}`"))
        .help(format!(
            "add `{field} = ...`; see `gpuplan schema` for the format"
        ));
    }
    let (code, label, help) = if msg.starts_with("invalid type") {
        (
            PlanCode::WrongType,
            "wrong type",
            "see `gpuplan schema` for the type each key takes",
        )
    } else if msg.starts_with("duplicate key") {
        (
            PlanCode::DuplicateKey,
            "defined twice",
            "remove one of the two definitions",
        )
    } else {
        (
            PlanCode::Syntax,
            "here",
            "see https://toml.io for TOML syntax",
        )
    };
    Diag::error(code, file, span, msg).label(label).help(help)
}

/// `unknown field `x`, expected one of `a`, `b`` (also "expected `a`" and "there are no fields").
fn unknown_field(msg: &str) -> Option<(String, Vec<String>)> {
    let rest = msg.strip_prefix("unknown field `")?;
    let (name, tail) = rest.split_once('`')?;
    Some((name.to_owned(), backticked(tail)))
}

fn unknown_variant(msg: &str) -> Option<(String, Vec<String>)> {
    let rest = msg.strip_prefix("unknown variant `")?;
    let (name, tail) = rest.split_once('`')?;
    Some((name.to_owned(), backticked(tail)))
}

fn backticked(s: &str) -> Vec<String> {
    s.split('`')
        .enumerate()
        .filter(|(i, _)| i % 2 == 1)
        .map(|(_, k)| k.to_owned())
        .collect()
}

/// The closest known name, if it is close enough to be a typo.
pub(crate) fn did_you_mean<'a>(word: &str, known: &'a [String]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| {
            (
                strsim::jaro_winkler(&word.to_lowercase(), &k.to_lowercase()),
                k,
            )
        })
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k.as_str())
}

/// Byte offset where `[`/`{` nesting first exceeds the limit, ignoring strings and comments.
fn too_deep(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            q @ (b'"' | b'\'') => {
                let triple = b.get(i..i + 3) == Some(&[q, q, q][..]);
                if triple {
                    i += 3;
                    while i < b.len() && b.get(i..i + 3) != Some(&[q, q, q][..]) {
                        i += if q == b'"' && b[i] == b'\\' { 2 } else { 1 };
                    }
                    i += 2;
                } else {
                    i += 1;
                    while i < b.len() && b[i] != q && b[i] != b'\n' {
                        i += if q == b'"' && b[i] == b'\\' { 2 } else { 1 };
                    }
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Some(i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_ignores_brackets_in_strings_and_comments() {
        let deep = "[".repeat(40);
        assert_eq!(
            too_deep(&format!("a = \"{deep}\"\n# {deep}\nb = '''{deep}'''")),
            None
        );
        assert_eq!(too_deep(&format!("a = {deep}")), Some(4 + MAX_NESTING));
    }

    #[test]
    fn suggests_close_keys_only() {
        let known: Vec<String> = ["gpu_memory_gib", "gpus", "memory_gib"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            did_you_mean("gpu_memry_gib", &known),
            Some("gpu_memory_gib")
        );
        assert_eq!(did_you_mean("colour", &known), None);
    }

    #[test]
    fn reports_invalid_utf8_at_the_byte() {
        let d = from_bytes("p.toml".into(), b"version = 1\nname = \"\xff\"".to_vec()).unwrap_err();
        assert_eq!(d.line_col(), (2, 9));
    }
}
