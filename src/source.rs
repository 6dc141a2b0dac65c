//! Source files and the conversion of byte offsets into the line and column users see.

use std::ops::Range;
use std::sync::Arc;

use miette::NamedSource;

/// A file as read, shared by every diagnostic that points into it.
#[derive(Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    /// How data read from it names it as a source (a price's provenance), where that is not
    /// its path: a file of the cache is `cache: azure/prices.csv` wherever the cache sits, so
    /// rendered files do not change with the machine.
    label: Option<String>,
    named: NamedSource<String>,
    line_starts: Vec<usize>,
    /// Per entry of `line_starts`, the line breaks miette counts before it (`\n`, `\r\n`
    /// and a lone `\r` each one), so a snippet read from a window of lines keeps the line
    /// numbers it would have had read from the whole file.
    breaks_before: Vec<usize>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Arc<Self> {
        Arc::new(Self::build(name.into(), text.into(), None))
    }

    fn build(name: String, text: String, label: Option<String>) -> Self {
        let line_starts: Vec<usize> = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        // The text as shown is what miette reads (a lone `\r` is `?` there).
        let shown = same_length_shown(&text);
        let bytes = shown.as_bytes();
        let mut breaks_before = Vec::with_capacity(line_starts.len());
        let mut breaks = 0;
        let mut from = 0;
        for &start in &line_starts {
            breaks += bytes[from..start]
                .iter()
                .enumerate()
                .filter(|(i, b)| {
                    **b == b'\n' || (**b == b'\r' && bytes.get(from + i + 1) != Some(&b'\n'))
                })
                .count();
            breaks_before.push(breaks);
            from = start;
        }
        // The name and text as shown: a path or a plan may hold control characters a
        // terminal would obey. The text keeps its length so every span still points right.
        let named = NamedSource::new(crate::core::printable(&name), shown).with_language("toml");
        Self {
            name,
            text,
            label,
            named,
            line_starts,
            breaks_before,
        }
    }

    /// A file whose data names it `label` as a source, while diagnostics name its path.
    pub fn labelled(
        name: impl Into<String>,
        label: impl Into<String>,
        text: impl Into<String>,
    ) -> Arc<Self> {
        Arc::new(Self::build(name.into(), text.into(), Some(label.into())))
    }

    /// The name data read from it gives as its source: its label, else its name.
    pub fn data_name(&self) -> &str {
        self.label.as_deref().unwrap_or(&self.name)
    }

    /// The file's path as every run names it, however the command line spelled it
    /// (`plans/a.toml`, `./plans/a.toml`, an absolute path, from another directory):
    /// relative to the repository root (the nearest directory above it with `.git`), else
    /// as given without a leading `./`. Standard input and embedded files keep their name.
    /// Rendered headers and baseline fingerprints use it, so neither drifts with the
    /// working directory.
    pub(crate) fn stable_name(&self) -> String {
        stable_name(&self.name)
    }

    /// 1-based line and column (in characters) of a byte offset; offsets past the end
    /// clamp to the end so a span from any parser is always printable.
    pub(crate) fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let col = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count());
        (line + 1, col + 1)
    }

    /// Clamp a span to the text and to char boundaries, so labels never split a character.
    pub(crate) fn clamp(&self, span: Range<usize>) -> Range<usize> {
        let mut start = span.start.min(self.text.len());
        let mut end = span.end.clamp(start, self.text.len());
        while !self.text.is_char_boundary(start) {
            start -= 1;
        }
        while !self.text.is_char_boundary(end) {
            end += 1;
        }
        start..end
    }
}

/// `text` with each control character other than a tab or a line end replaced by as many
/// `?` as it has bytes, so byte offsets into the original still point at the same place.
/// A lone carriage return (it would move the cursor back over the line) counts as control.
fn same_length_shown(text: &str) -> String {
    let bytes = text.as_bytes();
    let harmless = |i: usize, c: char| {
        c == '\t' || c == '\n' || (c == '\r' && bytes.get(i + 1) == Some(&b'\n'))
    };
    if !text
        .char_indices()
        .any(|(i, c)| c.is_control() && !harmless(i, c))
    {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for (i, c) in text.char_indices() {
        if c.is_control() && !harmless(i, c) {
            out.extend(std::iter::repeat_n('?', c.len_utf8()));
        } else {
            out.push(c);
        }
    }
    out
}

/// See [`SourceFile::stable_name`].
pub(crate) fn stable_name(name: &str) -> String {
    let plain = name.strip_prefix("./").unwrap_or(name).replace('\\', "/");
    if name == "-" || name.starts_with('<') {
        return plain;
    }
    let Ok(full) = std::fs::canonicalize(name) else {
        return plain;
    };
    let root = full.ancestors().skip(1).find(|d| d.join(".git").exists());
    match root.and_then(|r| full.strip_prefix(r).ok()) {
        Some(rel) => rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
        None => plain,
    }
}

/// A path a cache's `sources.toml` may name: relative, made only of plain names (no `..`,
/// no root, no drive), with no component that is a symlink inside `dir`. Anything else is
/// not a file gpuplan wrote, and is neither read, copied nor replaced.
pub(crate) fn safe_path(dir: &std::path::Path, path: &str) -> bool {
    let p = std::path::Path::new(path);
    if path.is_empty() || path.contains('\\') || p.is_absolute() {
        return false;
    }
    let mut at = dir.to_path_buf();
    for c in p.components() {
        match c {
            std::path::Component::Normal(n) => {
                at.push(n);
                if at
                    .symlink_metadata()
                    .is_ok_and(|m| m.file_type().is_symlink())
                {
                    return false;
                }
            }
            _ => return false,
        }
    }
    true
}

/// A snippet is read from the lines around its span, not by scanning the file from its
/// first byte (miette's `str` does): a check of thousands of findings in one large plan reads
/// each in time of its own lines, not of the file. The result is miette's own reading of
/// those lines, moved to where they sit in the file.
impl miette::SourceCode for SourceFile {
    fn read_span<'a>(
        &'a self,
        span: &miette::SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        let text: &'a str = self.named.inner();
        let (off, end) = (span.offset(), span.offset() + span.len());
        if end > text.len() {
            return self
                .named
                .read_span(span, context_lines_before, context_lines_after);
        }
        let line = |at: usize| self.line_starts.partition_point(|&s| s <= at) - 1;
        // Two spare lines either side: the window starts and ends on whole lines miette
        // would have read anyway.
        let first = line(off).saturating_sub(context_lines_before + 2);
        let last = line(end) + context_lines_after + 3;
        let w0 = self.line_starts[first];
        let w1 = self.line_starts.get(last).copied().unwrap_or(text.len());
        let window: &'a [u8] = &text.as_bytes()[w0..w1];
        let inner = window.read_span(
            &miette::SourceSpan::new((off - w0).into(), span.len()),
            context_lines_before,
            context_lines_after,
        )?;
        let lines = self.breaks_before[first];
        let data: &'a [u8] = inner.data();
        let contents = miette::MietteSpanContents::new_named(
            self.named.name().to_owned(),
            data,
            miette::SourceSpan::new((inner.span().offset() + w0).into(), inner.span().len()),
            inner.line() + lines,
            inner.column(),
            inner.line_count() + lines,
        )
        .with_language("toml");
        Ok(Box::new(contents))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use miette::SourceCode;
    use proptest::prelude::{prop_assert, prop_assert_eq, prop_oneof, proptest, Just};

    proptest! {
        /// A snippet read from the window of lines around a span is miette's reading of the
        /// whole file: the same bytes, span, line, column and line count, whatever the line
        /// breaks (`\n`, `\r\n`, a lone `\r`), the span and the context asked for.
        #[test]
        fn a_windowed_snippet_is_the_whole_files(
            parts in proptest::collection::vec(
                prop_oneof![Just("a"), Just("key = 1"), Just("\n"), Just("\r\n"), Just("\r"), Just("\u{e9}"), Just("")],
                0..60,
            ),
            at in 0usize..400,
            len in 0usize..40,
            before in 0usize..4,
            after in 0usize..4,
        ) {
            let text: String = parts.concat();
            let f = SourceFile::new("p.toml", text.clone());
            let at = at.min(text.len());
            let span = miette::SourceSpan::new(at.into(), len.min(text.len() - at));
            let whole = f.named.read_span(&span, before, after);
            let window = f.as_ref().read_span(&span, before, after);
            match (whole, window) {
                (Ok(a), Ok(b)) => {
                    prop_assert_eq!(a.data(), b.data());
                    prop_assert_eq!(a.span(), b.span());
                    prop_assert_eq!(a.line(), b.line());
                    prop_assert_eq!(a.column(), b.column());
                    prop_assert_eq!(a.line_count(), b.line_count());
                    prop_assert_eq!(a.name(), b.name());
                }
                (Err(_), Err(_)) => {}
                (a, b) => prop_assert!(false, "{:?} against {:?}", a.is_ok(), b.is_ok()),
            }
            prop_assert!(f.text.len() == text.len());
        }
    }

    #[test]
    fn line_col_counts_from_one_and_in_characters() {
        let f = SourceFile::new("p.toml", "a = 1\nbé = 2\n");
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(6), (2, 1));
        // `=` on line 2 comes after the two characters `bé` and a space (4 bytes)
        assert_eq!(f.line_col(10), (2, 4));
        assert_eq!(f.line_col(10_000), (3, 1));
    }

    #[test]
    fn clamp_keeps_char_boundaries() {
        let f = SourceFile::new("p.toml", "é");
        assert_eq!(f.clamp(1..1), 0..2);
        assert_eq!(f.clamp(0..1), 0..2);
    }
}
