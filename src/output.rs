//! Where text goes: stdout for results, stderr for diagnostics and progress; colour and
//! quietness decided once from the flags and NO_COLOR. The only module that prints.

use std::io::{IsTerminal, Write};

use crate::cli::{ColorChoice, Global};

pub(crate) struct Out {
    pub color: bool,
    pub quiet: bool,
    pub verbose: bool,
    /// The first failure to write standard output (a full disk, a closed pipe): the command
    /// then ends with exit 2 instead of claiming success for output nobody got.
    stdout_failed: std::sync::Mutex<Option<String>>,
}

/// `TERM=dumb`: a terminal that obeys no escape sequence.
fn dumb_terminal() -> bool {
    std::env::var_os("TERM").is_some_and(|t| t == "dumb")
}

/// Whether to colour: as asked, else only on a terminal that is not `TERM=dumb` (which
/// understands no escape sequence) and where NO_COLOR is unset.
fn colour(choice: ColorChoice, no_color: bool, dumb: bool, terminal: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => !no_color && !dumb && terminal,
    }
}

impl Out {
    pub(crate) fn new(g: &Global) -> Self {
        let color = colour(
            g.color,
            std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
            dumb_terminal(),
            std::io::stderr().is_terminal(),
        );
        Self {
            color,
            quiet: g.quiet,
            verbose: g.verbose,
            stdout_failed: std::sync::Mutex::new(None),
        }
    }

    /// Why standard output could not be written, if it could not.
    pub(crate) fn stdout_failure(&self) -> Option<String> {
        self.stdout_failed.lock().ok().and_then(|f| f.clone())
    }

    pub(crate) fn stdout(&self, s: &str) {
        self.write_stdout(s, false);
    }

    /// [`Out::stdout`] for gpuplan's own GitHub workflow commands (`::error file=…::…`),
    /// whose data the workflow-command rules escaped: their leading `::` stays.
    pub(crate) fn stdout_commands(&self, s: &str) {
        self.write_stdout(s, true);
    }

    fn write_stdout(&self, s: &str, commands: bool) {
        // The last line of defence: whatever a command prints, no credential it was handed,
        // no URL's user info, no raw control character and no CI command from data reaches
        // the terminal or a pipe.
        let s = &crate::core::redact(s);
        let s = &*crate::core::format::terminal_safe(s, commands);
        if !s.is_empty() && stdout_closed() {
            // Rust's standard output treats a closed descriptor as a sink that takes every
            // write: what was asked for would be lost with exit 0.
            if let Ok(mut f) = self.stdout_failed.lock() {
                f.get_or_insert_with(|| "standard output is closed".to_owned());
            }
            return;
        }
        let mut o = std::io::stdout().lock();
        // A reader that stopped reading (`gpuplan ... | head`) took what it wanted: the rest
        // goes nowhere, quietly, whatever the output's size (the pipe's buffer would hide a
        // small one). Any other failure (a full disk) is output nobody got: no success.
        if let Err(e) = o.write_all(s.as_bytes()).and_then(|()| o.flush()) {
            if e.kind() != std::io::ErrorKind::BrokenPipe {
                if let Ok(mut f) = self.stdout_failed.lock() {
                    f.get_or_insert_with(|| e.to_string());
                }
            }
        }
    }

    pub(crate) fn stderr(&self, s: &str) {
        let s = &crate::core::redact(s);
        let s = &*crate::core::format::terminal_safe(s, false);
        let mut e = std::io::stderr().lock();
        let _ = e.write_all(s.as_bytes());
        let _ = e.flush();
    }

    /// Informational line on stderr, unless `--quiet`.
    pub(crate) fn info(&self, s: &str) {
        if !self.quiet {
            self.stderr(&format!("{s}\n"));
        }
    }

    /// [`Out::info`] for another thread to call: what a long wait is waiting for.
    pub(crate) fn notices(&self) -> Box<dyn Fn(&str) + Send + Sync> {
        let quiet = self.quiet;
        Box::new(move |s: &str| {
            if !quiet {
                let s = crate::core::redact(&format!("note: {s}\n"));
                let s = crate::core::format::terminal_safe(&s, false);
                let mut e = std::io::stderr().lock();
                let _ = e.write_all(s.as_bytes());
                let _ = e.flush();
            }
        })
    }

    /// Detail on stderr with `--verbose`.
    pub(crate) fn detail(&self, s: &str) {
        if self.verbose {
            self.stderr(&format!("{s}\n"));
        }
    }
}

/// Progress on standard error while long work runs: shown only where a person watches (a
/// terminal, not `--quiet`), and only once the work has taken about a second
/// (`GPUPLAN_PROGRESS_DELAY_MS` sets the wait), so quick commands print nothing extra. It
/// clears itself when dropped.
pub(crate) struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Out {
    /// Whether a progress bar may be drawn: not `--quiet`, on a terminal that can redraw a
    /// line (a dumb one cannot).
    pub(crate) fn draws_progress(&self) -> bool {
        !self.quiet && !dumb_terminal() && std::io::stderr().is_terminal()
    }

    /// Progress of `what`: a spinner, or a bar of `total` steps.
    pub(crate) fn progress(&self, what: &str, total: Option<u64>) -> Progress {
        if !self.draws_progress() {
            return Progress { bar: None };
        }
        let bar = match total {
            Some(n) => indicatif::ProgressBar::with_draw_target(
                Some(n),
                indicatif::ProgressDrawTarget::hidden(),
            )
            .with_style(
                indicatif::ProgressStyle::with_template("{msg} {bar:30} {pos}/{len}, {elapsed}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            ),
            None => indicatif::ProgressBar::hidden().with_style(
                indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            ),
        };
        bar.set_message(crate::core::printable(what));
        let delay = std::env::var("GPUPLAN_PROGRESS_DELAY_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000);
        let shown = bar.clone();
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(delay));
            if !shown.is_finished() {
                shown.set_draw_target(indicatif::ProgressDrawTarget::stderr());
                shown.enable_steady_tick(std::time::Duration::from_millis(120));
            }
        });
        Progress { bar: Some(bar) }
    }
}

impl Progress {
    /// `done` of the steps finished, and a word on what is left.
    pub(crate) fn set(&self, done: usize, total: usize) {
        if let Some(b) = &self.bar {
            b.set_length(total as u64);
            b.set_position(done as u64);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

/// Whether descriptor 1 was closed when gpuplan started (`gpuplan ... >&-`). Rust's runtime
/// reopens a closed standard descriptor on `/dev/null` read-write before `main` (std's
/// `sanitize_standard_fds`), where a shell's `>/dev/null` opens it write-only: the first is
/// output nobody asked to throw away.
#[cfg(unix)]
fn stdout_closed() -> bool {
    use rustix::fs::{fcntl_getfl, fstat, major, minor, FileType, OFlags};
    use std::os::fd::AsFd;
    let out = std::io::stdout();
    let fd = out.as_fd();
    let Ok(flags) = fcntl_getfl(fd) else {
        return true;
    };
    if flags & OFlags::ACCMODE != OFlags::RDWR {
        return false;
    }
    fstat(fd).is_ok_and(|st| {
        FileType::from_raw_mode(st.st_mode) == FileType::CharacterDevice
            && major(st.st_rdev) == 1
            && minor(st.st_rdev) == 3
    })
}

#[cfg(not(unix))]
fn stdout_closed() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dumb_terminal_and_no_color_get_no_colour_unless_asked() {
        assert!(colour(ColorChoice::Auto, false, false, true));
        assert!(!colour(ColorChoice::Auto, false, true, true));
        assert!(!colour(ColorChoice::Auto, true, false, true));
        assert!(!colour(ColorChoice::Auto, false, false, false));
        assert!(colour(ColorChoice::Always, true, true, false));
        assert!(!colour(ColorChoice::Never, false, false, true));
    }
}
