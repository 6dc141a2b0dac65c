//! GitHub Actions workflow commands: `::error file=…,line=…,col=…,title=…::message`, so
//! findings show inline on the pull request's diff.

use crate::diag::{Diag, Severity};

/// Data (the message) escapes `%`, CR and LF as the runner reads them back, and every other
/// control character too (an escape sequence in a file name would reach the log raw);
/// property values also `:` and `,`.
pub(crate) fn escape_data(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            c if c.is_control() && (c as u32) < 0x100 => {
                out.push_str(&format!("%{:02X}", c as u32));
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

pub(crate) fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

pub(crate) fn annotations(findings: &[Diag], errors: &[Diag]) -> String {
    let mut out = String::new();
    for d in errors
        .iter()
        .chain(findings.iter().filter(|d| d.suppressed.is_none()))
    {
        let cmd = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "notice",
        };
        let (line, col) = d.line_col();
        let (end_line, end_col) = d.file.line_col(d.span.end);
        let title = match d.code.rule() {
            Some(r) => format!("{r} {}", crate::rules::rule(r).name()),
            None => d.code.to_string(),
        };
        let mut msg = d.message.clone();
        if let Some(h) = &d.help {
            msg.push_str("\nhelp: ");
            msg.push_str(h);
        }
        out.push_str(&format!(
            "::{cmd} file={},line={line},col={col},endLine={},endColumn={end_col},title={}::{}\n",
            escape_property(&d.file.name),
            end_line.max(line),
            escape_property(&title),
            escape_data(&msg)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workflow_command_escaping() {
        assert_eq!(escape_data("50% of a\r\nGPU"), "50%25 of a%0D%0AGPU");
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
    }
}
