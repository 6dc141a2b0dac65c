//! Findings and load errors, and how they are printed (human via miette, JSON).

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use miette::{Diagnostic, LabeledSpan, SourceCode};
use serde::Serialize;

use crate::source::SourceFile;

pub(crate) mod baseline;
mod codes;

pub use codes::{CatalogCode, Code, PlanCode, RuleId};

/// How serious a finding is. Ordered so that `max()` gives the worst.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    #[default]
    Note,
    Warning,
    Error,
}

impl Severity {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

crate::core::named_enum! {
    /// What suppressed a finding.
    pub enum SuppressionKind {
        /// An `[[allow]]` entry in the plan.
        Allow => "allow",
        /// An entry of the `--baseline` file.
        Baseline => "baseline",
    }
}

/// Why a finding is not counted: an `[[allow]]` entry or a baseline.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Suppression {
    #[schemars(with = "String")]
    pub kind: SuppressionKind,
    pub justification: String,
    pub approved_by: String,
    pub expires: Option<String>,
}

/// One problem in one file: a rule finding (`code` = `GP001`…) or a load error
/// (`code` = `plan::…`, `catalog::…`).
#[derive(Debug, Clone)]
pub struct Diag {
    pub code: Code,
    pub severity: Severity,
    pub message: String,
    pub file: Arc<SourceFile>,
    pub span: Range<usize>,
    pub label: String,
    pub extra: Vec<(Range<usize>, String)>,
    pub help: Option<String>,
    pub workload: Option<String>,
    pub pool: Option<String>,
    pub suppressed: Option<Suppression>,
    /// The rule's name beside its id where a person reads the finding (`GP022
    /// stale-provider-data`); machine formats keep the id alone.
    pub title: Option<&'static str>,
}

impl Diag {
    pub(crate) fn new(
        code: impl Into<Code>,
        severity: Severity,
        file: &Arc<SourceFile>,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        Self {
            code: code.into(),
            severity,
            message: printable(message.into()),
            span: file.clamp(span),
            file: Arc::clone(file),
            label: String::new(),
            extra: Vec::new(),
            help: None,
            workload: None,
            pool: None,
            suppressed: None,
            title: None,
        }
    }

    pub(crate) fn error(
        code: impl Into<Code>,
        file: &Arc<SourceFile>,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        Self::new(code, Severity::Error, file, span, message)
    }

    pub(crate) fn label(mut self, label: impl Into<String>) -> Self {
        self.label = printable(label.into());
        self
    }

    pub(crate) fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(printable(help.into()));
        self
    }

    pub(crate) fn also(mut self, span: Range<usize>, label: impl Into<String>) -> Self {
        let span = self.file.clamp(span);
        self.extra.push((span, printable(label.into())));
        self
    }

    pub(crate) fn workload(mut self, name: &str) -> Self {
        self.workload = Some(name.to_owned());
        self
    }

    pub(crate) fn pool(mut self, name: &str) -> Self {
        self.pool = Some(name.to_owned());
        self
    }

    /// Whether a source line one of its labels sits on is longer than a snippet shows
    /// (1,000 bytes): such a finding is located by file:line:column instead of quoted.
    pub(crate) fn quotes_long_line(&self) -> bool {
        let text = self.file.text.as_bytes();
        std::iter::once(&self.span)
            .chain(self.extra.iter().map(|(s, _)| s))
            .any(|s| {
                let (a, b) = (s.start.min(text.len()), s.end.min(text.len()));
                let start = text[..a]
                    .iter()
                    .rposition(|&c| c == b'\n')
                    .map_or(0, |i| i + 1);
                let end = text[b..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(text.len(), |i| b + i);
                end.saturating_sub(start) > 1_000
            })
    }

    pub fn line_col(&self) -> (usize, usize) {
        self.file.line_col(self.span.start)
    }

    /// Counts towards the exit code: not suppressed and at error severity.
    pub(crate) fn is_blocking(&self) -> bool {
        self.suppressed.is_none() && self.severity == Severity::Error
    }
}

impl fmt::Display for Diag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Diag {}

impl Diagnostic for Diag {
    fn code<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        match self.title {
            Some(t) => Some(Box::new(format!("{} {t}", self.code))),
            None => Some(Box::new(&self.code)),
        }
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Note => miette::Severity::Advice,
        })
    }

    fn help<'a>(&'a self) -> Option<Box<dyn fmt::Display + 'a>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(self.file.as_ref())
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let main = LabeledSpan::new_primary_with_span(
            (!self.label.is_empty()).then(|| self.label.clone()),
            self.span.clone(),
        );
        let extra = self
            .extra
            .iter()
            .map(|(s, l)| LabeledSpan::new_with_span(Some(l.clone()), s.clone()));
        Some(Box::new(std::iter::once(main).chain(extra)))
    }
}

/// The longest message a finding carries, in characters; past it, an excerpt.
const MESSAGE_MAX: usize = 2_000;

/// Text of a finding as printed anywhere: a name, reason or server answer quoted in a
/// message may hold control characters that a terminal, a CI log or a Markdown comment
/// would obey, so they are written as escapes once, here. Line breaks stay: parsers'
/// messages have two lines.
fn printable(text: String) -> String {
    let text = match crate::core::excerpt(&text, MESSAGE_MAX) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(cut) => cut,
    };
    if text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        crate::core::printable_lines(&text)
    } else {
        text
    }
}

/// Sort key that makes output order independent of rule evaluation order.
pub(crate) fn sort(diags: &mut [Diag]) {
    diags.sort_by(|a, b| {
        (
            a.file.name.as_str(),
            a.span.start,
            a.code.as_str(),
            &a.message,
        )
            .cmp(&(
                b.file.name.as_str(),
                b.span.start,
                b.code.as_str(),
                &b.message,
            ))
    });
}
