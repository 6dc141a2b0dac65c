//! What stops a command: each layer's own error, a flag that cannot be used, or a refusal.
//! Commands return it; `crate::run` prints it and turns it into the exit code, once.

use crate::catalog::CatalogError;
use crate::core::exit;
use crate::diag::baseline::BaselineError;
use crate::diag::Diag;
use crate::engine::diff::GuardError;
use crate::render::write_plan::WritePlanError;
use crate::render::RenderError;
use crate::review::ReviewError;

#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub(crate) enum CmdError {
    /// Located problems in the input: printed with file, line and column.
    #[error("{} problem(s) in the input", .0.len())]
    #[diagnostic(code(gpuplan::input))]
    Located(Vec<Diag>),
    /// A flag or argument, or a combination of them, that cannot be used.
    #[error("{0}")]
    #[diagnostic(code(gpuplan::usage))]
    Usage(String),
    /// A file the command was asked to write.
    #[error("cannot write `{path}`: {source}")]
    #[diagnostic(code(gpuplan::write))]
    Write {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A directory a read-only command reads (the refresh cache) could not be used.
    #[error("cannot read `{path}`: {source}")]
    #[diagnostic(code(gpuplan::read))]
    Read {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// Standard output could not be written (a full disk).
    #[error("cannot write to standard output: {0}")]
    #[diagnostic(code(gpuplan::stdout))]
    Stdout(String),
    /// Valid input whose answer is no: declared pools that fail `check`, rendered files that
    /// drifted, a cost past its guard, a plan that cannot be met. Exit 1, like a finding.
    #[error("{0}")]
    #[diagnostic(code(gpuplan::refused))]
    Refused(String),
    /// `catalog refresh` and `--live` in a build without the provider clients.
    #[error("this gpuplan was built without the `live` feature, so it has no provider clients; rebuild with default features (`cargo install gpuplan`) to refresh, or run without `--live` on the embedded catalog and any existing refresh cache")]
    #[diagnostic(code(gpuplan::no_live))]
    #[cfg_attr(feature = "live", allow(dead_code))]
    NoLive,
    #[error(transparent)]
    #[diagnostic(transparent)]
    Catalog(#[from] CatalogError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Baseline(#[from] BaselineError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Guard(#[from] GuardError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Render(#[from] RenderError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    WritePlan(#[from] WritePlanError),
    #[error(transparent)]
    #[diagnostic(transparent)]
    Review(#[from] ReviewError),
    /// A forge's API did not keep the comment.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Comment(#[from] crate::comment::CommentError),
    #[cfg(feature = "live")]
    #[error(transparent)]
    #[diagnostic(transparent)]
    Live(#[from] crate::live::LiveError),
}

impl From<crate::fsio::FileError> for CmdError {
    fn from(e: crate::fsio::FileError) -> CmdError {
        CmdError::Write {
            path: crate::core::shown(&e.path),
            source: e.source,
        }
    }
}

impl CmdError {
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            CmdError::Refused(_) => exit::FINDINGS,
            _ => exit::INPUT,
        }
    }

    /// The text for standard error: located problems as the findings report, the rest on
    /// one `error:` line with no credentials and no control characters.
    pub(crate) fn report(&self, color: bool) -> String {
        match self {
            CmdError::Located(ds) | CmdError::Catalog(CatalogError::Invalid(ds)) => {
                crate::report::findings::human(ds, color)
            }
            e => format!(
                "error: {}\n",
                crate::core::printable_lines(&crate::core::format::redact_short(&e.to_string()))
            ),
        }
    }
}

pub(crate) type CmdResult<T = u8> = Result<T, CmdError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_exit_1_and_everything_else_2() {
        assert_eq!(CmdError::Refused("no".into()).exit_code(), exit::FINDINGS);
        assert_eq!(CmdError::Usage("bad".into()).exit_code(), exit::INPUT);
        assert_eq!(CmdError::Located(Vec::new()).exit_code(), exit::INPUT);
    }

    #[test]
    fn a_message_reaches_the_terminal_without_credentials_or_control_characters() {
        let e = CmdError::Usage("fetch https://user:secret@example.test/x\u{1b}[2J".into());
        let text = e.report(false);
        assert!(!text.contains("secret"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(text.starts_with("error: "), "{text}");
    }
}
