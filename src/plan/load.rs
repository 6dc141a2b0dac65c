//! Reading a plan file into [`RawPlan`]: size, encoding, nesting, TOML syntax, types and
//! unknown keys. Each failure is a diagnostic at the offending text.

use std::ops::Range;
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
pub fn from_bytes(name: String, bytes: Vec<u8>) -> Result<Arc<SourceFile>, Box<Diag>> {
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

/// At most this many problems are reported for one plan file: past them, the rest are noise.
pub(crate) const MAX_LOAD_ERRORS: usize = 50;

/// A plan as far as it could be read, with every problem reading it found: read only by
/// `Plan::from_parsed`, and outside `plan` only for the provider whose catalog validates it.
pub struct Partial {
    pub(super) raw: RawPlan,
    /// Problems of syntax, types and keys, each at its place.
    pub errors: Vec<Diag>,
    /// Byte ranges of the text set aside to read on past a problem; a later finding there is
    /// an echo of one already reported.
    pub patched: Vec<Range<usize>>,
}

impl Partial {
    /// The provider the plan names (`[plan] provider`): its catalog is the one the plan
    /// validates against.
    pub fn provider(&self) -> crate::core::Provider {
        *self.raw.plan.provider.get()
    }
}

/// Parse TOML into the raw plan, reporting every type, key and value problem with its
/// location, not only the first: each problem's entry is set aside (blanked, so every offset
/// still points into the file as written; a required key's value stood in for by one of its
/// type) and the parse runs again, up to [`MAX_LOAD_ERRORS`]. A syntax error ends the
/// reading; what was found before it is reported with it.
pub(crate) fn parse(file: &Arc<SourceFile>) -> Result<Partial, Vec<Diag>> {
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
    let mut text = file.text.clone();
    let mut errors: Vec<Diag> = Vec::new();
    let mut patched: Vec<Range<usize>> = Vec::new();
    // The entry blanked last, to stand a value in for it if its key turns out required.
    let mut last: Option<Blanked> = None;
    loop {
        let e = match toml::from_str::<RawPlan>(&text) {
            Ok(raw) => {
                return Ok(Partial {
                    raw,
                    errors,
                    patched,
                })
            }
            Err(e) => e,
        };
        let msg = e.message().trim().to_owned();
        let span = e.span().unwrap_or(0..0);
        // A required key just blanked: the problem is the one reported; put a value of its
        // type back in its place instead.
        if let (Some(field), Some(b)) = (missing_field(&msg), &last) {
            if field == b.key
                && span.start <= b.blank.start
                && b.blank.end <= span.end.max(b.blank.end)
            {
                let restored = restore(&file.text, &text, &b.blank);
                match stand_in(&b.expected, b.value.len()) {
                    Some(v) => {
                        text = restored;
                        text.replace_range(b.value.clone(), &v);
                        last = None;
                        continue;
                    }
                    None => return Err(errors),
                }
            }
        }
        // `{ min = 1, maxx = 2 }`: once `maxx` is reported (did you mean `max`?), the missing
        // `max` is the same mistake.
        let echo = missing_field(&msg).is_some_and(|f| {
            last.as_ref().is_some_and(|b| {
                span.start <= b.blank.start
                    && b.blank.end <= span.end
                    && did_you_mean(&b.key, std::slice::from_ref(&f)).is_some()
            })
        });
        if !echo {
            errors.push(toml_error(file, &e));
        }
        if errors.len() >= MAX_LOAD_ERRORS || span.is_empty() && span.start == 0 {
            return Err(errors);
        }
        let Some(entry) = entry_at(&text, span.start) else {
            return Err(errors);
        };
        blank(&mut text, entry.blank.clone());
        patched.push(entry.blank.clone());
        last = Some(Blanked {
            expected: expected_of(&msg),
            key: entry.key,
            value: entry.value,
            blank: entry.blank,
        });
    }
}

/// An entry set aside, and what its value must be if its key is required.
struct Blanked {
    key: String,
    value: Range<usize>,
    blank: Range<usize>,
    expected: Vec<String>,
}

/// An entry of the document: its key, its value, and the bytes to blank to set it aside (an
/// inline table's entry takes a comma with it, so the table stays valid TOML).
struct Entry {
    key: String,
    value: Range<usize>,
    blank: Range<usize>,
}

/// The innermost `key = value` entry whose key or value holds `at`.
fn entry_at(text: &str, at: usize) -> Option<Entry> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    find(text, doc.as_table(), at, false)
}

fn find(text: &str, t: &dyn toml_edit::TableLike, at: usize, inline: bool) -> Option<Entry> {
    for (name, _) in t.iter() {
        let (key, item) = t.get_key_value(name)?;
        let (Some(ks), Some(vs)) = (key.span(), item.span().or_else(|| table_span(item))) else {
            continue;
        };
        // Deeper first: the entry inside a table or an inline table.
        let inner = match item {
            toml_edit::Item::Table(sub) => find(text, sub, at, false),
            toml_edit::Item::ArrayOfTables(a) => {
                a.iter().find_map(|sub| find(text, sub, at, false))
            }
            toml_edit::Item::Value(toml_edit::Value::InlineTable(it)) => find(text, it, at, true),
            toml_edit::Item::Value(toml_edit::Value::Array(arr)) => {
                arr.iter().find_map(|v| match v {
                    toml_edit::Value::InlineTable(it) => find(text, it, at, true),
                    _ => None,
                })
            }
            _ => None,
        };
        if inner.is_some() {
            return inner;
        }
        let whole = ks.start..vs.end.max(ks.end);
        if !(whole.start <= at && at < whole.end.max(whole.start + 1)) {
            continue;
        }
        if matches!(
            item,
            toml_edit::Item::Table(_) | toml_edit::Item::ArrayOfTables(_)
        ) {
            return None;
        }
        let mut blank = whole.clone();
        if inline {
            // `{ a = 1, b = 2 }`: take the comma after the entry, else the one before it.
            let after = &text[blank.end..];
            let gap = after.len() - after.trim_start().len();
            if after[gap..].starts_with(',') {
                blank.end += gap + 1;
            } else {
                let before = &text[..blank.start];
                let trimmed = before.trim_end();
                if trimmed.ends_with(',') {
                    blank.start = trimmed.len() - 1;
                }
            }
        }
        return Some(Entry {
            key: name.to_owned(),
            value: vs,
            blank,
        });
    }
    None
}

/// The span of a `[table]` item (its header to its last entry), which `Item::span` lacks.
fn table_span(item: &toml_edit::Item) -> Option<Range<usize>> {
    match item {
        toml_edit::Item::Table(t) => t.span(),
        _ => None,
    }
}

/// `text` with `r` replaced by spaces (line ends kept), byte for byte.
fn blank(text: &mut String, r: Range<usize>) {
    let r = r.start.min(text.len())..r.end.min(text.len());
    let spaced: String = text[r.clone()]
        .chars()
        .map(|c| {
            if c == '\n' {
                "\n".to_owned()
            } else {
                " ".repeat(c.len_utf8())
            }
        })
        .collect();
    text.replace_range(r, &spaced);
}

/// `now` with the bytes of `r` as they are in `original`.
fn restore(original: &str, now: &str, r: &Range<usize>) -> String {
    let mut out = now.to_owned();
    out.replace_range(r.clone(), &original[r.clone()]);
    out
}

/// `missing field `x``: the field.
fn missing_field(msg: &str) -> Option<String> {
    msg.strip_prefix("missing field `")
        .and_then(|s| s.split_once('`'))
        .map(|(f, _)| f.to_owned())
}

/// What an error says was expected: the allowed variants, or a type (`a string`, `u32`).
fn expected_of(msg: &str) -> Vec<String> {
    if let Some((_, expected)) = unknown_variant(msg) {
        return expected.into_iter().map(|v| format!("\"{v}\"")).collect();
    }
    let Some((_, want)) = msg.split_once(", expected ") else {
        return Vec::new();
    };
    let want = want.trim();
    let v = if want.contains("string") || want.contains("name") {
        "\"\""
    } else if want.contains("bool") {
        "true"
    } else if want.contains("f64") || want.contains("float") || want.contains("number") {
        "1.0"
    } else if want.contains("integer")
        || want.contains("u32")
        || want.contains("i64")
        || want.contains("u8")
        || want.contains("u64")
    {
        "1"
    } else if want.contains("sequence") || want.contains("array") {
        "[]"
    } else {
        return Vec::new();
    };
    vec![v.to_owned()]
}

/// A stand-in from `expected` that fits in `len` bytes, padded with spaces.
fn stand_in(expected: &[String], len: usize) -> Option<String> {
    expected
        .iter()
        .filter(|v| v.len() <= len)
        .min_by_key(|v| v.len())
        .map(|v| format!("{v}{}", " ".repeat(len - v.len())))
}

fn toml_error(file: &Arc<SourceFile>, e: &toml::de::Error) -> Diag {
    let msg = e.message().trim().to_owned();
    let span = e.span().unwrap_or(0..0);
    if let Some((unknown, expected)) = unknown_field(&msg) {
        let help = match did_you_mean(&unknown, &expected) {
            Some(best) => format!("did you mean `{best}`?"),
            None if expected.is_empty() => "this table takes no keys".to_owned(),
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
