//! How gpuplan writes numbers: one spelling for plain figures, money and hourly rates, so
//! a figure reads the same in a finding, a recommendation, a diff and a review.

/// `a x b = c` with trimmed decimals, for messages that show their arithmetic.
pub fn num(x: f64) -> String {
    let s = format!("{x:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    // A value that rounds to nothing is written "0", never "-0".
    if s == "-0" {
        return "0".to_owned();
    }
    s.to_owned()
}

/// An hourly price: `$0.7866`, `$98.32` (up to 4 decimals, at least 2).
pub fn rate(x: f64) -> String {
    let s = format!("{x:.4}");
    let (whole, frac) = s.split_once('.').unwrap_or((&s, ""));
    let frac = frac.trim_end_matches('0');
    format!("${whole}.{frac:0<2}")
}

/// `$12,345.67`.
pub fn usd(x: f64) -> String {
    let cents = (x * 100.0).round() as i64;
    let (whole, frac) = (cents / 100, (cents % 100).abs());
    let digits = whole.abs().to_string();
    let mut grouped = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    format!(
        "{}${grouped}.{frac:02}",
        if whole < 0 || x < 0.0 && cents != 0 {
            "-"
        } else {
            ""
        }
    )
}

/// A dollar amount rounded to whole cents, as JSON reports carry it.
pub fn cents(x: f64) -> f64 {
    // `+ 0.0` turns -0.0 (a saving of nothing, rounded) into 0.0, so JSON never says "-0.0".
    (x * 100.0).round() / 100.0 + 0.0
}

/// `text` with every credential gpuplan knows of removed: the user info of every URL in it
/// (`http://admin:pw@host/x` becomes `http://host/x`), however it is spelled, a bearer or
/// basic `Authorization` value a server echoed back, and every secret the command was handed
/// ([`secret`]). Endpoint URLs may carry credentials; no report, error, dry run or cache file
/// repeats them.
///
/// A URL is found and read as the HTTP clients read it: the WHATWG URL parser (the `url`
/// crate, which ureq and reqwest parse with), so `http:admin:pw@host`, `http:/admin:pw@host`
/// and `http:\\admin:pw@host`, which they all send as Basic auth, are seen as the client sees
/// them.
pub fn redact(text: &str) -> String {
    urls(text, false)
}

/// [`redact`], and each URL cut to its scheme, host and path: for an error message, where a
/// thousand characters of query string bury the reason.
pub fn redact_short(text: &str) -> String {
    urls(text, true)
}

static SECRETS: std::sync::OnceLock<std::sync::Mutex<Vec<String>>> = std::sync::OnceLock::new();

/// Remember a secret this run was handed (a bearer token, a password), so that [`redact`]
/// removes it wherever it appears: a server that echoes it in an error body cannot make
/// gpuplan print it. Values under four characters are too common to remove safely.
pub fn secret(value: &str) {
    if value.chars().count() < 4 {
        return;
    }
    if let Ok(mut v) = SECRETS.get_or_init(Default::default).lock() {
        if !v.iter().any(|s| s == value) {
            v.push(value.to_owned());
            // Longest first, so a secret that contains another is removed whole.
            v.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }
}

const REDACTED: &str = "[redacted]";

/// The value of a Basic `Authorization` header for `user` and `password` (RFC 7617).
pub fn basic_value(user: &str, password: &str) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let raw = format!("{user}:{password}");
    let mut out = String::new();
    for chunk in raw.as_bytes().chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(A[(n >> (18 - 6 * k) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn urls(text: &str, short: bool) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let bytes = text.as_bytes();
    while i < text.len() {
        let at_boundary = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        let scheme = ["https:", "http:"].into_iter().find(|s| {
            text[i..]
                .get(..s.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(s))
        });
        match scheme {
            Some(_) if at_boundary => {
                let end = text[i..]
                    .find(|c: char| {
                        c.is_whitespace()
                            || c.is_control()
                            || matches!(c, '`' | '"' | '\'' | '<' | '>')
                    })
                    .map_or(text.len(), |n| i + n);
                out.push_str(&url_shown(&text[i..end], short));
                i = end;
            }
            _ => {
                let c = text[i..].chars().next().unwrap_or(' ');
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    let out = authorization(&out);
    match SECRETS.get().and_then(|s| s.lock().ok()) {
        Some(list) if !list.is_empty() => {
            let mut t = out;
            for s in list.iter() {
                if t.contains(s.as_str()) {
                    t = t.replace(s.as_str(), REDACTED);
                }
            }
            t
        }
        _ => out,
    }
}

/// One URL as it may be shown: without user info; cut to scheme, host and path if `short`.
fn url_shown(token: &str, short: bool) -> String {
    // Trailing punctuation of the sentence around it is not part of the URL.
    let body = token.trim_end_matches(['.', ',', ';', ':', ')', ']']);
    let tail = &token[body.len()..];
    match url::Url::parse(body) {
        Ok(mut u) => {
            let had_user = !u.username().is_empty() || u.password().is_some();
            let _ = u.set_username("");
            let _ = u.set_password(None);
            let cut = short && (u.query().is_some() || u.fragment().is_some());
            if cut {
                u.set_query(None);
                u.set_fragment(None);
            }
            if !had_user && !cut {
                return token.to_owned();
            }
            let mut shown = u.to_string();
            // The parser writes a bare host with a `/`; the text had none.
            if u.path() == "/" && shown.ends_with('/') && !body.ends_with(['/', '\\']) {
                shown.pop();
            }
            format!("{shown}{}{tail}", if cut { "?…" } else { "" })
        }
        // Not a URL the client would send; still never show what looks like user info.
        Err(_) => {
            let colon = body.find(':').map_or(0, |c| c + 1);
            let rest = body[colon..].trim_start_matches(['/', '\\']);
            let auth_end = rest.find(['/', '\\', '?', '#']).unwrap_or(rest.len());
            match rest[..auth_end].rfind('@') {
                Some(at) => format!("{}//{}{tail}", &body[..colon], &rest[at + 1..]),
                None => token.to_owned(),
            }
        }
    }
}

/// Whether `v` is base64 of `user:password`, as a Basic `Authorization` value is.
fn basic_credentials(v: &str) -> bool {
    let digit = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let body = v.trim_end_matches('=');
    if v.len() < 8 || !v.len().is_multiple_of(4) || v.len() - body.len() > 2 {
        return false;
    }
    let mut bits = 0u32;
    let mut n = 0;
    let mut decoded = Vec::new();
    for &c in body.as_bytes() {
        let Some(d) = digit(c) else {
            return false;
        };
        bits = (bits << 6) | d;
        n += 6;
        if n >= 8 {
            n -= 8;
            decoded.push((bits >> n) as u8);
        }
    }
    decoded.contains(&b':') && decoded.iter().all(|b| !b.is_ascii_control())
}

/// `Bearer <token>` and `Basic <credentials>` values, as a server echoing the request's
/// `Authorization` header would print them.
fn authorization(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    if !lower.contains("bearer ") && !lower.contains("basic ") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let word = ["bearer ", "basic "].into_iter().find(|w| {
            lower[i..].starts_with(w)
                && (i == 0 || !lower.as_bytes()[i - 1].is_ascii_alphanumeric())
        });
        if let Some(w) = word {
            let start = i + w.len();
            let len = text[start..]
                .find(|c: char| {
                    !(c.is_ascii_alphanumeric()
                        || matches!(c, '-' | '.' | '_' | '~' | '+' | '/' | '='))
                })
                .unwrap_or(text.len() - start);
            // A credential is a long opaque run, or base64 of `user:password`; a word after
            // "basic " in prose is neither.
            let value = &text[start..start + len];
            let credential = if w == "bearer " {
                len >= 16
            } else {
                basic_credentials(value)
            };
            if credential {
                out.push_str(&text[i..start]);
                out.push_str(REDACTED);
                i = start + len;
                continue;
            }
        }
        let c = text[i..].chars().next().unwrap_or(' ');
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// At most `max` characters of `text`, and how many more there were: a message quotes a
/// bounded excerpt of what it names (a 7 MiB name is refused in a line, not 41 MB). Every
/// credential is removed before the cut ([`redact`]).
pub fn excerpt(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    // Credentials go first: a cut through a token would leave a prefix no redaction can
    // recognise (41 of 43 characters of a token are as good as all of them).
    let clean = redact(text);
    if clean != text {
        return std::borrow::Cow::Owned(cut(&clean, max).into_owned());
    }
    cut(text, max)
}

fn cut(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        None => std::borrow::Cow::Borrowed(text),
        Some((cut, _)) => std::borrow::Cow::Owned(format!(
            "{}… ({} characters in all)",
            &text[..cut],
            text.chars().count()
        )),
    }
}

/// Characters that change how text around them is shown without being visible: bidi
/// embeddings, overrides and isolates (a right-to-left override makes `exe.txt` of
/// `txt.exe`), zero-width spaces and joiners, the byte-order mark, soft hyphen. Unicode's
/// format characters that a terminal or a review page would obey.
pub fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}'
            | '\u{061c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
    )
}

/// Text as it may reach a terminal or a CI log, whatever it holds: the last defence, applied
/// to everything gpuplan prints.
///
/// - A control character (NUL, a carriage return, a C1 control, an escape sequence other
///   than a colour) or an invisible one ([`invisible`]) is written `\uXXXX`, which JSON
///   reads back as the same character, so machine output keeps its meaning.
/// - A line a CI runner would take as a command is defused: GitHub Actions runs a line whose
///   first non-blank characters are `::` (`::set-env`, `::add-mask`) and, in its older
///   syntax, any line holding `##[`; such a `:` or `#` is written `\u003a` / `\u0023`.
///   With `commands` the caller's own workflow-command lines (`check --format github`) keep
///   their leading `::`; their data was escaped by the workflow-command rules.
pub fn terminal_safe(text: &str, commands: bool) -> std::borrow::Cow<'_, str> {
    let suspicious = |c: char| (c.is_control() && c != '\n' && c != '\t') || invisible(c);
    let clean = !text.chars().any(suspicious)
        && !text.contains("##[")
        && (commands || !text.split('\n').any(|l| l.trim_start().starts_with("::")));
    if clean {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    // A file written to standard output (`--write-plan -`) keeps its own BOM.
    let text = match text.strip_prefix('\u{feff}') {
        Some(rest) => {
            out.push('\u{feff}');
            rest
        }
        None => text,
    };
    for line in text.split_inclusive('\n') {
        let lead = line.len() - line.trim_start().len();
        let mut rest = line;
        if !commands && line.trim_start().starts_with("::") {
            out.push_str(&line[..lead]);
            out.push_str("\\u003a");
            rest = &line[lead + 1..];
        }
        push_safe(&mut out, rest);
    }
    std::borrow::Cow::Owned(out)
}

fn push_safe(out: &mut String, line: &str) {
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\u{1b}' {
            // A colour (SGR: `ESC [ digits ; m`) is the one escape sequence kept.
            let tail = &line[i + 1..];
            let sgr = tail.strip_prefix('[').and_then(|t| {
                let n = t
                    .bytes()
                    .take_while(|b| b.is_ascii_digit() || *b == b';')
                    .count();
                (t.as_bytes().get(n) == Some(&b'm')).then_some(n + 2)
            });
            if let Some(len) = sgr {
                out.push_str(&line[i..i + 1 + len]);
                for _ in 0..len {
                    chars.next();
                }
                continue;
            }
        }
        // A CRLF line ending (a Windows plan written to standard output) is a line ending.
        if c == '\r' && chars.peek().is_some_and(|(_, n)| *n == '\n') {
            out.push(c);
        } else if (c.is_control() && c != '\n' && c != '\t') || invisible(c) {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else if c == '#' && line[i..].starts_with("##[") {
            out.push_str("\\u0023");
        } else {
            out.push(c);
        }
    }
}

/// A path as a URI reference or link target (RFC 3986): every byte but an unreserved
/// character or `/` percent-encoded, so no space, parenthesis, `#`, `<`, `>` or control
/// character ends or breaks it (SARIF artifact URIs, Markdown links).
pub fn url_path(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for b in p.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'_' | b'-' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `new`, a rewrite of `original`, in the original's own conventions: its byte-order mark
/// and, when its lines end in CRLF, CRLF line endings, so `--write-plan` changes only what it
/// means to change (a Windows checkout stays a Windows file).
pub fn as_written(original: &str, new: &str) -> String {
    let bom = original.starts_with('\u{feff}');
    let body = new.strip_prefix('\u{feff}').unwrap_or(new);
    let crlf = original
        .find('\n')
        .is_some_and(|i| original[..i].ends_with('\r'));
    let body = if crlf {
        body.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        body.to_owned()
    };
    if bom {
        format!("\u{feff}{body}")
    } else {
        body
    }
}

pub fn printable(text: &str) -> String {
    escaped(text, |_| true)
}

/// A path as a message shows it: [`printable`], so a file name holding an escape sequence or
/// a newline moves no cursor and forges no line.
pub fn shown(path: &std::path::Path) -> String {
    printable(&path.display().to_string())
}

/// Text for HTML or XML (an element or a quoted attribute): the markup characters as
/// entities and control characters as visible escapes ([`printable`]; XML 1.0 allows none of
/// them), so a label from a plan or a server is shown, never obeyed.
pub fn markup(s: &str) -> String {
    entities(printable(s))
}

/// [`markup`] for element text of several lines: line feeds and tabs stay.
pub fn markup_lines(s: &str) -> String {
    entities(printable_lines(s))
}

/// Text for a quoted XML attribute of several lines: [`markup_lines`], with line feeds and
/// tabs as character references (an attribute's literal line break is read back as a space,
/// XML 1.0 §3.3.3), so a two-line message keeps its lines and never shows a literal `\n`.
pub fn markup_attribute(s: &str) -> String {
    markup_lines(s).replace('\n', "&#10;").replace('\t', "&#9;")
}

fn entities(s: String) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Text made safe for one Markdown table cell, list line or code span: `|` escaped, lines
/// joined, HTML (`<script>` in a namespace label, say: a `<` opens no tag) written as text,
/// `[` and `]` escaped so no link or image forms (`[x](javascript:…)` in a plan's reason stays
/// text), and control characters dropped: names from plans, catalogs and servers render as
/// what they are. Backquoted parts of a message (gpuplan's messages quote values in code
/// spans) are written as [`md_code`] writes a value.
pub fn md(s: &str) -> String {
    // With an odd number of backquotes no span can be trusted, so none is assumed and every
    // backquote is shown as `'`.
    let balanced = s.matches('`').count().is_multiple_of(2);
    let mut out = String::with_capacity(s.len());
    for (i, part) in s.split('`').enumerate() {
        if !balanced {
            if i > 0 {
                out.push('\'');
            }
            md_text(part, &mut out);
        } else if i % 2 == 1 {
            out.push_str(&md_code(part));
        } else {
            md_text(part, &mut out);
        }
    }
    out
}

/// Markdown text outside any code span: see [`md`].
fn md_text(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\n' | '\r' | '\t' => out.push(' '),
            '<' => out.push_str("&lt;"),
            '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            // `@name` would notify that person or team wherever the comment is posted; a
            // zero-width space between them (as an entity: no invisible character is
            // printed) keeps the text and drops the ping.
            '@' => out.push_str("@&#8203;"),
            c => md_other(c, out),
        }
    }
}

/// A character no Markdown rule needs: control characters dropped, a bidirectional override
/// or an invisible character (from a price API, a plan), which would reorder or hide what a
/// reviewer reads, shown as its escape.
fn md_other(c: char, out: &mut String) {
    match c {
        c if c.is_control() => {}
        c if invisible(c) => out.push_str(&c.escape_unicode().to_string()),
        c => out.push(c),
    }
}

/// A value as a Markdown code span, delimiters included, showing exactly the value. Inside
/// a backquoted span nothing is escaped but `|` (a table cell's edge; GFM takes `\|` there)
/// and no entity is read, so a `&lt;` put there would show as written (issue 75). Where the
/// value holds a backquote, or a `<` that could open an HTML tag or autolink (CommonMark
/// reads those before code spans, so `<a title="` could run past the closing backquote), it
/// is written as a `<code>` element instead, the punctuation Markdown reads escaped.
pub fn md_code(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let opens_tag = chars
        .windows(2)
        .any(|w| w[0] == '<' && (w[1].is_ascii_alphabetic() || matches!(w[1], '/' | '!' | '?')));
    let edge_space = s.starts_with(' ') && s.ends_with(' ');
    let mut out = String::with_capacity(s.len() + 2);
    if !s.is_empty() && !s.contains('`') && !opens_tag && !edge_space {
        out.push('`');
        for c in chars {
            match c {
                '|' => out.push_str("\\|"),
                '\n' | '\r' | '\t' => out.push(' '),
                c => md_other(c, &mut out),
            }
        }
        out.push('`');
        return out;
    }
    out.push_str("<code>");
    for c in chars {
        match c {
            '<' => out.push_str("&lt;"),
            '&' => out.push_str("&amp;"),
            '@' => out.push_str("@&#8203;"),
            '\n' | '\r' | '\t' => out.push(' '),
            // What Markdown reads inside an element's text: emphasis, links, escapes, the
            // cell edge, strikethrough.
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' => {
                out.push('\\');
                out.push(c);
            }
            c => md_other(c, &mut out),
        }
    }
    out.push_str("</code>");
    out
}

/// `text` as [`printable`] writes it, but keeping its line breaks and tabs: for messages
/// whose own lines are meant (a parser's two-line error), which may still quote a name or
/// a server answer holding an escape sequence or a carriage return.
pub fn printable_lines(text: &str) -> String {
    escaped(text, |c| c != '\n' && c != '\t')
}

fn escaped(text: &str, escape: impl Fn(char) -> bool) -> String {
    let bad = |c: char| c.is_control() && escape(c) || invisible(c);
    if !text.chars().any(bad) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if bad(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
