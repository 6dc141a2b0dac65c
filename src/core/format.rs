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

/// `text` with the user info of every URL in it removed: `http://admin:pw@host/x` becomes
/// `http://host/x`. Endpoint URLs may carry credentials; no report, error, dry run or cache
/// file repeats them.
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| {
                c == '/'
                    || c == '?'
                    || c == '#'
                    || c.is_whitespace()
                    || c == '`'
                    || c == '"'
                    || c == '\''
            })
            .unwrap_or(tail.len());
        let authority = &tail[..end];
        match authority.rfind('@') {
            Some(at) => out.push_str(&authority[at + 1..]),
            None => out.push_str(authority),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// `text` with every control character (an escape sequence, a carriage return, a newline)
/// written as its escape, `\u{1b}`: a name, path or server body printed to a terminal can
/// then move no cursor, recolour nothing and forge no line.
pub fn printable(text: &str) -> String {
    escaped(text, |_| true)
}

/// `text` as [`printable`] writes it, but keeping its line breaks and tabs: for messages
/// whose own lines are meant (a parser's two-line error), which may still quote a name or
/// a server answer holding an escape sequence or a carriage return.
pub fn printable_lines(text: &str) -> String {
    escaped(text, |c| c != '\n' && c != '\t')
}

fn escaped(text: &str, escape: impl Fn(char) -> bool) -> String {
    let bad = |c: char| c.is_control() && escape(c);
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
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_written_as_escapes() {
        assert_eq!(printable("a\u{1b}[2Jb\nc"), "a\\u{1b}[2Jb\\nc");
        assert_eq!(printable("plans/a.toml"), "plans/a.toml");
        assert_eq!(
            printable_lines("bad header\nexpected `.`\r\u{9b}"),
            "bad header\nexpected `.`\\r\\u{9b}"
        );
    }

    #[test]
    fn user_info_never_survives() {
        assert_eq!(
            redact("http://admin:s3cret@prom:9090/api"),
            "http://prom:9090/api"
        );
        assert_eq!(
            redact("cannot reach `https://u:p@a.example/` or https://b.example?x=1"),
            "cannot reach `https://a.example/` or https://b.example?x=1"
        );
        assert_eq!(redact("https://user@host"), "https://host");
        assert_eq!(redact("no url here"), "no url here");
    }

    #[test]
    fn usd_groups_thousands() {
        assert_eq!(usd(71773.6), "$71,773.60");
        assert_eq!(usd(0.5), "$0.50");
        assert_eq!(usd(-1234.5), "-$1,234.50");
        assert_eq!(rate(0.78660), "$0.7866");
        assert_eq!(rate(98.32), "$98.32");
        assert_eq!(rate(4.0), "$4.00");
    }

    #[test]
    fn nothing_is_never_negative() {
        assert_eq!(num(-0.001), "0");
        assert_eq!(num(2.5), "2.5");
        assert_eq!(cents(-0.001).to_string(), "0");
    }
}
