//! Escaping for the languages gpuplan writes, and the layout `terraform fmt` gives HCL.
//! Names reaching templates are DNS-1123 labels already; these helpers are the second line:
//! whatever a value holds, it comes out as one literal string of the target language.

/// An HCL quoted string: backslash, quote and control characters escaped, and the template
/// sequences `${` and `%{` doubled so they stay literal text.
pub(crate) fn hcl_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '$' | '%' if chars.peek() == Some(&'{') => {
                out.push(c);
                out.push(c);
            }
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Text as it may stand in HCL outside a string helper, in a `#` comment or between quotes a
/// template wrote itself: what [`hcl_string`] puts between its quotes. No value can end the
/// comment line (a newline, CR), close a string, or open an interpolation.
pub(crate) fn hcl_text(s: &str) -> String {
    let q = hcl_string(s);
    q[1..q.len() - 1].to_owned()
}

/// Text as it may stand in YAML outside the `yaml` helper (a comment, a value the template
/// did not quote): control characters written as escapes, so no value starts a new line, a
/// new key or a new document.
pub(crate) fn yaml_text(s: &str) -> String {
    crate::core::printable(s)
}

/// Text as it may stand in the rendered README: [`crate::core::format::md`], so a name can
/// add no table row, link or HTML.
pub(crate) fn md_text(s: &str) -> String {
    crate::core::format::md(s)
}

/// A YAML double-quoted scalar (the JSON string syntax, which YAML 1.2 accepts as is).
pub(crate) fn yaml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned())
}

/// An HCL identifier from a name: letters, digits, `_` and `-`, starting with a letter.
pub(crate) fn hcl_ident(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if !out.starts_with(|c: char| c.is_ascii_alphabetic()) {
        out.insert(0, 'p');
    }
    out
}

/// Lay HCL out the way `terraform fmt` does: two spaces per nesting level, and the `=` of
/// consecutive single-line attributes in one block aligned.
pub(crate) fn hcl_fmt(text: &str) -> String {
    // Re-indent from bracket depth.
    let mut lines: Vec<(usize, String)> = Vec::new();
    let mut depth: usize = 0;
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() {
            lines.push((0, String::new()));
            continue;
        }
        let closes = line.starts_with('}') || line.starts_with(']') || line.starts_with(')');
        let level = if closes {
            depth.saturating_sub(1)
        } else {
            depth
        };
        lines.push((level, line.to_owned()));
        if !line.starts_with('#') {
            for c in strip_strings(line).chars() {
                match c {
                    '{' | '[' | '(' => depth += 1,
                    '}' | ']' | ')' => depth = depth.saturating_sub(1),
                    _ => {}
                }
            }
        }
    }
    // Align `=` in runs of attribute lines at the same level.
    let mut out = String::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(name_len) = attr_name_len(&lines[i].1) else {
            push_line(&mut out, &lines[i]);
            i += 1;
            continue;
        };
        let level = lines[i].0;
        let mut j = i;
        let mut width = name_len;
        // A value that opens a multi-line object or list stands alone, with one space before
        // its `=`, and ends the run before it (hclwrite's format: such a line is never
        // aligned with its neighbours).
        if opens(&lines[i].1) {
            let (name, value) = lines[i].1.split_once('=').unwrap_or((&lines[i].1, ""));
            let alone = format!("{} = {}", name.trim_end(), value.trim_start());
            push_line(&mut out, &(level, alone));
            i += 1;
            continue;
        }
        while j < lines.len() && lines[j].0 == level {
            let Some(n) = attr_name_len(&lines[j].1) else {
                break;
            };
            if opens(&lines[j].1) {
                break;
            }
            width = width.max(n);
            j += 1;
        }
        for (lvl, line) in &lines[i..j] {
            let (name, value) = line.split_once('=').unwrap_or((line, ""));
            let name = name.trim_end();
            let aligned = format!("{name:<width$} = {}", value.trim_start());
            push_line(&mut out, &(*lvl, aligned));
        }
        i = j;
    }
    out
}

fn push_line(out: &mut String, (level, line): &(usize, String)) {
    if !line.is_empty() {
        for _ in 0..*level {
            out.push_str("  ");
        }
        out.push_str(line);
    }
    out.push('\n');
}

fn opens(line: &str) -> bool {
    let s = strip_strings(line);
    let s = s.trim_end();
    s.ends_with('{') || s.ends_with('[') || s.ends_with('(')
}

/// The length of the attribute name if the line is `name = value`.
fn attr_name_len(line: &str) -> Option<usize> {
    if line.starts_with('#') || line.starts_with("//") {
        return None;
    }
    let (name, _) = line.split_once('=')?;
    let name = name.trim_end();
    let ok = !name.is_empty()
        && (name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            || (name.starts_with('"') && name.ends_with('"') && name.len() >= 2));
    // `==` is a comparison, not an assignment.
    (ok && !line[name.len()..].trim_start().starts_with("==")).then(|| name.chars().count())
}

/// The line with string contents blanked, so brackets inside strings do not count.
fn strip_strings(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_str = false;
    let mut escaped = false;
    for c in line.chars() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
                out.push('"');
            }
            continue;
        }
        if c == '"' {
            in_str = true;
        }
        if c == '#' {
            break;
        }
        out.push(c);
    }
    out
}

/// A file path as it may appear in any rendered file's comments (HCL, YAML, Markdown):
/// letters, digits and `. _ - / +` kept, anything else (newlines, quotes, `#`, `{`, `$`,
/// backticks, control characters) replaced by `_`, so a path can never end a comment or
/// open code.
pub(crate) fn path_label(path: &str) -> String {
    path.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/' | '+') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bare_value_cannot_leave_its_line_in_any_language() {
        let payload = "T4\nresource \"null_resource\" \"pwned\" {}\r\n--- |${x}";
        for out in [hcl_text(payload), yaml_text(payload), md_text(payload)] {
            assert!(!out.contains('\n') && !out.contains('\r'), "{out}");
        }
        assert!(
            !hcl_text(payload).contains("\"pwned\""),
            "quotes stay inside a string"
        );
        assert!(hcl_text(payload).contains("$${x}"));
        assert!(md_text(payload).contains("\\|"));
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn hcl_strings_stay_literal() {
        assert_eq!(hcl_string("a\"b"), "\"a\\\"b\"");
        assert_eq!(hcl_string("${var.x}"), "\"$${var.x}\"");
        assert_eq!(hcl_string("%{if}"), "\"%%{if}\"");
        assert_eq!(hcl_string("a\nb\\"), "\"a\\nb\\\\\"");
        assert_eq!(hcl_string("50% $5"), "\"50% $5\"");
    }

    #[test]
    fn yaml_strings_stay_literal() {
        assert_eq!(yaml_string("a: b\n- c"), "\"a: b\\n- c\"");
        assert_eq!(yaml_string("\"x\""), "\"\\\"x\\\"\"");
    }

    #[test]
    fn fmt_aligns_and_indents() {
        let src = "resource \"x\" \"y\" {\nname = \"a\"\nvm_size = \"b\"\nnode_labels = {\n\"k\" = \"v\"\n}\n}\n";
        assert_eq!(
            hcl_fmt(src),
            "resource \"x\" \"y\" {\n  name    = \"a\"\n  vm_size = \"b\"\n  node_labels = {\n    \"k\" = \"v\"\n  }\n}\n"
        );
        // What `terraform fmt` (v1.11) makes of a lone attribute before a multi-line one: no
        // padding on either.
        let src = "r \"x\" \"y\" {\n# why\ngpu_driver = \"None\"\nnode_labels = {\n\"k\" = \"v\"\n}\nnode_taints = [\n\"a\",\n]\ntags = 1\n}\n";
        assert_eq!(
            hcl_fmt(src),
            "r \"x\" \"y\" {\n  # why\n  gpu_driver = \"None\"\n  node_labels = {\n    \"k\" = \"v\"\n  }\n  node_taints = [\n    \"a\",\n  ]\n  tags = 1\n}\n"
        );
    }

    proptest! {
        /// Whatever a name holds, the quoted result parses back to exactly that string.
        #[test]
        fn hcl_string_round_trips(s in "\\PC*") {
            let src = format!("a = {}\n", hcl_string(&s));
            let body: hcl_edit::structure::Body = src.parse().expect("parses");
            let attr = body.get_attribute("a").expect("attribute");
            let hcl_edit::expr::Expression::String(v) = &attr.value else {
                panic!("not a plain string: {src}");
            };
            prop_assert_eq!(v.value(), &s);
        }

        #[test]
        fn yaml_string_round_trips(s in "\\PC*") {
            let v: String = serde_yaml::from_str(&yaml_string(&s)).expect("parses");
            prop_assert_eq!(v, s);
        }
    }
}
