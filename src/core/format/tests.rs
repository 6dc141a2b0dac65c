use super::*;

#[test]
fn nothing_from_data_reaches_a_terminal_or_a_ci_log_as_a_command() {
    let hostile = "price\n::set-env name=PATH::/tmp\n  ::add-mask::x\nok ##[set-output name=a]b\0\u{202e}txt.exe\u{200b}\r";
    let shown = terminal_safe(hostile, false);
    for line in shown.lines() {
        assert!(!line.trim_start().starts_with("::"), "{line}");
        assert!(!line.contains("##["), "{line}");
        assert!(
            !line.chars().any(|c| c.is_control() || invisible(c)),
            "{line:?}"
        );
    }
    assert!(
        shown.contains("\\u003a:set-env") && shown.contains("\\u202e"),
        "{shown}"
    );
    // JSON reads the escapes back as the very characters: machine output keeps its data.
    let json = serde_json::to_string(&serde_json::json!({"s": "a\u{202e}\u{85}##[x"})).unwrap();
    let safe = terminal_safe(&json, false);
    let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
    assert_eq!(back["s"], "a\u{202e}\u{85}##[x");
    // Colours stay; other escape sequences do not; gpuplan's own annotations keep `::`.
    assert_eq!(
        terminal_safe("\u{1b}[1;31merror\u{1b}[0m", false),
        "\u{1b}[1;31merror\u{1b}[0m"
    );
    assert_eq!(terminal_safe("\u{1b}[2J", false), "\\u001b[2J");
    assert_eq!(
        terminal_safe("::error file=a::m\n", true),
        "::error file=a::m\n"
    );
    assert!(matches!(
        terminal_safe("plain text\n", false),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn a_windows_file_on_standard_output_keeps_its_bom_and_crlf() {
    assert_eq!(
        terminal_safe("\u{feff}a\r\nb\rc\r\n", false),
        "\u{feff}a\r\nb\\u000dc\r\n"
    );
}

#[test]
fn a_rewrite_keeps_the_files_bom_and_line_endings() {
    assert_eq!(
        as_written("\u{feff}a = 1\r\nb = 2\r\n", "a = 1\r\nb = 3\nc = 4\n"),
        "\u{feff}a = 1\r\nb = 3\r\nc = 4\r\n"
    );
    assert_eq!(as_written("a = 1\n", "a = 2\n"), "a = 2\n");
    assert_eq!(as_written("a = 1\n", "\u{feff}a = 2\r\n"), "a = 2\r\n");
}

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
fn user_info_never_survives_any_spelling_the_client_sends() {
    for spelled in [
        "http://admin:hunter2@host/x",
        "http:admin:hunter2@host/x",
        "http:/admin:hunter2@host/x",
        "http:\\\\admin:hunter2@host/x",
        "HTTP://admin:hunter2@host/x",
        "https:///admin:hunter2@host/x",
        "http://admin:hunter2@[::1/x",
    ] {
        let shown = redact(&format!("cannot reach `{spelled}`: refused"));
        assert!(!shown.contains("hunter2"), "{spelled} -> {shown}");
        assert!(!shown.contains("admin"), "{spelled} -> {shown}");
        // The client would send the password: the parser agrees there is one.
        if let Ok(u) = url::Url::parse(spelled) {
            assert_eq!(u.password(), Some("hunter2"), "{spelled}");
        }
    }
    assert_eq!(
        redact_short("GET http://h:9090/api/v1/query_range?query=up&start=1 failed."),
        "GET http://h:9090/api/v1/query_range?… failed."
    );
    assert_eq!(
        redact("see https://example.test/docs."),
        "see https://example.test/docs."
    );
}

#[test]
fn echoed_authorization_and_known_secrets_are_removed() {
    secret("s3cr3t-token-value");
    let body =
        "401: header was Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc and s3cr3t-token-value";
    let shown = redact(body);
    assert!(!shown.contains("eyJhbGci"), "{shown}");
    assert!(!shown.contains("s3cr3t"), "{shown}");
    assert_eq!(redact("basic auth is off"), "basic auth is off");
    assert_eq!(
        redact("a basic research question"),
        "a basic research question"
    );
    assert_eq!(basic_value("admin", "hunter2"), "YWRtaW46aHVudGVyMg==");
    // `admin:hunter2`, as a client sends it.
    assert_eq!(
        redact("got Basic YWRtaW46aHVudGVyMg=="),
        "got Basic [redacted]"
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
fn markdown_cells_hold_no_link_row_or_tag() {
    let s = md("[x](javascript:alert(1)) | <b>\nnext");
    assert!(!s.contains("[x]("), "{s}");
    assert!(
        !s.contains(" | ") && !s.contains('\n') && !s.contains("<b>"),
        "{s}"
    );
    assert_eq!(md_code("a`b|c[d]"), "<code>a\\`b\\|c\\[d\\]</code>");
    assert_eq!(
        md("see `[[workload]]` [x](y)"),
        "see `[[workload]]` \\[x\\](y)"
    );
    assert_eq!(md("odd ` [x](y)"), "odd ' \\[x\\](y)");
    // A right-to-left override from a price API's text reorders nothing in the README.
    assert_eq!(
        md("Azure \u{202e}ecirp\u{202c} API"),
        "Azure \\u{202e}ecirp\\u{202c} API"
    );
}

/// Issue 75: inside a backquoted span no entity is read, so `&lt;` showed as written; and a
/// backquote was shown as `'`. A value shows exactly, in a backquoted span where one can hold
/// it and as an escaped `<code>` element where a `<` could open a tag or a backquote would
/// close the span.
#[test]
fn a_code_span_shows_the_value_exactly() {
    assert_eq!(md_code("cpu<=8"), "`cpu<=8`");
    assert_eq!(md_code("a & b"), "`a & b`");
    assert_eq!(md_code("x|y"), "`x\\|y`");
    assert_eq!(md_code("<a title=\"x"), "<code>&lt;a title=\"x</code>");
    assert_eq!(md_code("@team_*x*"), "`@team_*x*`");
    assert_eq!(md_code(""), "<code></code>");
    assert_eq!(
        md("the pool `gpu<b>` is full"),
        "the pool <code>gpu&lt;b></code> is full"
    );
    assert_eq!(md("`a<2` and <b>"), "`a<2` and &lt;b>");
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
