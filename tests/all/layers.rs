//! The crate's modules depend in one direction:
//! core → diag/cloud → catalog → mig → plan → engine → rules → review/render → report → live →
//! cli/cmd. This test reads `src/` and fails on any `crate::…` path that points the wrong way,
//! and on any cycle between top-level modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each top-level module's layer. A module may use its own layer and those below it.
const LAYERS: &[(&str, u32)] = &[
    ("core", 0),
    ("source", 0),
    ("http", 0),
    ("fsio", 0),
    ("diag", 1),
    ("cloud", 1),
    ("catalog", 2),
    ("mig", 3),
    ("plan", 4),
    ("engine", 5),
    ("rules", 6),
    ("review", 7),
    ("render", 7),
    ("report", 8),
    ("live", 9),
    ("comment", 9),
    ("output", 10),
    ("cli", 10),
    ("cmd", 10),
    ("lib", 11),
    ("main", 11),
];

fn layer(module: &str) -> Option<u32> {
    LAYERS.iter().find(|(m, _)| *m == module).map(|(_, l)| *l)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src/ is readable")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The code of a line without its `//` comment (doc links name modules without using them).
fn code(line: &str) -> &str {
    let mut in_str = false;
    let b = line.as_bytes();
    for i in 0..b.len() {
        match b[i] {
            b'"' if i == 0 || b[i - 1] != b'\\' => in_str = !in_str,
            b'/' if !in_str && b.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
    }
    line
}

/// The top-level modules a source text names through `crate::`.
fn uses(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let line = code(line);
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            let before = rest[..i].chars().last();
            let after = &rest[i + "crate::".len()..];
            rest = after;
            // `$crate::` (macros) and `gpuplan_crate::` are not this crate's paths.
            if before.is_some_and(|c| c == '$' || c.is_alphanumeric() || c == '_') {
                continue;
            }
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if name.is_empty() {
                // `crate::{a, b}`: every name in the braces.
                if let Some(group) = after.strip_prefix('{') {
                    for part in group.split('}').next().unwrap_or("").split(',') {
                        let n: String = part
                            .trim()
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        if !n.is_empty() {
                            out.insert(n);
                        }
                    }
                }
                continue;
            }
            out.insert(name);
        }
    }
    out
}

fn graph() -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut g: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).expect("under src");
        let top = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("a name")
            .trim_end_matches(".rs")
            .to_owned();
        let text = std::fs::read_to_string(&f).expect("readable");
        for used in uses(&text) {
            if used == top {
                continue;
            }
            g.entry(top.clone())
                .or_default()
                .entry(used)
                .or_default()
                .push(rel.display().to_string());
        }
    }
    g
}

#[test]
fn every_module_has_a_layer() {
    for (from, to) in graph() {
        assert!(
            layer(&from).is_some(),
            "src/{from} has no layer in tests/layers.rs"
        );
        for used in to.keys() {
            assert!(
                layer(used).is_some(),
                "`crate::{used}` (used by {from}) has no layer in tests/layers.rs"
            );
        }
    }
}

#[test]
fn dependencies_point_down() {
    let mut wrong = Vec::new();
    for (from, to) in graph() {
        let Some(lf) = layer(&from) else { continue };
        for (used, files) in to {
            if layer(&used).is_some_and(|lu| lu > lf) {
                wrong.push(format!(
                    "{} use crate::{used} (above {from})",
                    files.join(", ")
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "dependencies that point up:\n{}",
        wrong.join("\n")
    );
}

/// A cycle in `g`, if it has one (depth-first search with colours; a grey node reached again
/// closes a cycle).
fn find_cycle(g: &BTreeMap<String, BTreeMap<String, Vec<String>>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeMap<String, Vec<String>>>,
        colour: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        colour.insert(n.to_owned(), 1);
        path.push(n.to_owned());
        for m in g
            .get(n)
            .map(|t| t.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default()
        {
            match colour.get(&m).copied().unwrap_or(0) {
                1 => {
                    let start = path.iter().position(|p| *p == m).unwrap_or(0);
                    let mut cycle = path[start..].to_vec();
                    cycle.push(m);
                    return Some(cycle);
                }
                0 => {
                    if let Some(c) = visit(&m, g, colour, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        colour.insert(n.to_owned(), 2);
        None
    }
    let mut colour = BTreeMap::new();
    for n in g.keys() {
        if colour.get(n).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(n, g, &mut colour, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_cycles_between_modules() {
    if let Some(c) = find_cycle(&graph()) {
        panic!("module cycle: {}", c.join(" → "));
    }
}

/// The files directly under `src/<top>/` and the siblings each names (`super::x`,
/// `crate::<top>::x`).
fn sibling_graph(top: &str) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(top);
    // `review/assemble` is the module `review::assemble`.
    let top = top.replace('/', "::");
    let mut g: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    // A module is a file (`x.rs`), a folder (`x/mod.rs`), or both (`x.rs` and `x/`): its
    // text is every file of it.
    let mut names = Vec::new();
    for e in std::fs::read_dir(&dir).expect("dir").flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "rs") || p.join("mod.rs").is_file() {
            names.push(p.file_stem().expect("stem").to_string_lossy().into_owned());
        }
    }
    names.sort();
    names.dedup();
    for n in &names {
        let mut files = Vec::new();
        let file = dir.join(format!("{n}.rs"));
        if file.is_file() {
            files.push(file);
        }
        if dir.join(n).is_dir() {
            rust_files(&dir.join(n), &mut files);
        }
        let text: String = files
            .iter()
            .map(|f| std::fs::read_to_string(f).expect("readable"))
            .collect::<Vec<_>>()
            .join("\n");
        for line in text.lines().map(code) {
            for other in &names {
                if other == n {
                    continue;
                }
                let named = [
                    format!("super::{other}::"),
                    format!("crate::{top}::{other}::"),
                    format!("super::{other};"),
                    format!("crate::{top}::{other};"),
                ]
                .iter()
                .any(|p| line.contains(p.as_str()))
                    || (line.contains(&format!("crate::{top}::{{")) || line.contains("super::{"))
                        && line
                            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                            .any(|w| w == other);
                if named {
                    g.entry(n.clone())
                        .or_default()
                        .entry(other.clone())
                        .or_default()
                        .push(format!("src/{top}/{n}.rs"));
                }
            }
        }
    }
    g
}

#[test]
fn the_live_clients_never_import_each_other() {
    // `refresh` runs the providers' plans; `aws` (and every other client) shares only what
    // `scope` holds, so no provider module and the refresh reach each other in a loop.
    let g = sibling_graph("live");
    if let Some(c) = find_cycle(&g) {
        panic!("cycle between live modules: {}", c.join(" → "));
    }
    assert!(
        !g.get("aws").is_some_and(|t| t.contains_key("refresh")),
        "live/aws.rs uses live::refresh: {g:?}"
    );
}

/// No folder's modules import each other in a circle (issue 39 broke those of the engine,
/// report, render and review rooms), each module counted with all its files.
#[test]
fn no_folder_has_an_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut rooms: Vec<String> = files
        .iter()
        .filter_map(|f| f.parent()?.strip_prefix(&src).ok())
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.to_string_lossy().replace('\\', "/"))
        .collect();
    rooms.sort();
    rooms.dedup();
    assert!(rooms.iter().any(|r| r == "review/assemble"), "{rooms:?}");
    let engine = sibling_graph("engine");
    assert!(engine.contains_key("recommend"), "{engine:?}");
    for room in &rooms {
        if let Some(c) = find_cycle(&sibling_graph(room)) {
            panic!("cycle between {room} modules: {}", c.join(" → "));
        }
    }
}

/// Every import outside a test module names what it brings (issue 59): a glob hides which
/// sibling a module leans on, and so hid a circle from the test above.
/// Each non-test source file under `src`, relative to it, with its code up to its test module
/// (comments stripped).
fn non_test_code() -> Vec<(String, Vec<String>)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut out = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&src)
            .expect("under src")
            .display()
            .to_string();
        if rel.ends_with("tests.rs") || rel.contains("/tests/") {
            continue;
        }
        let text = std::fs::read_to_string(f).expect("readable");
        // A test module's imports are indented under its `mod tests`.
        let lines = text
            .lines()
            .take_while(|l| !l.starts_with("#[cfg(test)]"))
            .map(|l| code(l).trim_end().to_owned())
            .collect();
        out.push((rel, lines));
    }
    out
}

#[test]
fn no_glob_import_outside_tests() {
    let mut globs = Vec::new();
    for (rel, lines) in non_test_code() {
        for (i, l) in lines.iter().enumerate() {
            let import = ["use ", "pub use ", "pub(crate) use "]
                .iter()
                .any(|p| l.starts_with(p));
            if import && l.ends_with("::*;") {
                globs.push(format!("src/{rel}:{}: {l}", i + 1));
            }
        }
    }
    assert!(
        globs.is_empty(),
        "glob imports outside tests:\n{}",
        globs.join("\n")
    );
}

/// The places in `code` (one file, lines joined) that test a value against a variant of one of
/// `enums` with `==`, `!=` or `matches!`.
fn variant_tests(code: &str, enums: &[&str]) -> Vec<String> {
    let squeezed: String = code.split_whitespace().collect();
    let mut found = Vec::new();
    for e in enums {
        for op in ["==", "!="] {
            let needle = format!("{op}{e}::");
            found.extend(squeezed.match_indices(&needle).map(|(i, _)| {
                squeezed[i.saturating_sub(30)..(i + needle.len() + 12).min(squeezed.len())]
                    .to_owned()
            }));
        }
    }
    for (i, _) in squeezed.match_indices("matches!(") {
        let rest = &squeezed[i..];
        let mut depth = 0;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                depth += match c {
                    '(' => 1,
                    ')' => -1,
                    _ => 0,
                };
                c == ')' && depth == 0
            })
            .map_or(rest.len(), |(j, _)| j + 1);
        let call = &rest[..end];
        if enums.iter().any(|e| call.contains(&format!("{e}::"))) {
            found.push(call.to_owned());
        }
    }
    found
}

/// A new sharing mode or capacity type is decided in `src/core`, where every question about
/// one is an exhaustive match: a comparison elsewhere would treat it as "none of the above".
#[test]
fn sharing_and_capacity_are_asked_not_compared() {
    let mut found = Vec::new();
    for (rel, lines) in non_test_code() {
        if rel == "core.rs" || rel.starts_with("core/") {
            continue;
        }
        for hit in variant_tests(&lines.join("\n"), &["Sharing", "Capacity"]) {
            found.push(format!("src/{rel}: {hit}"));
        }
    }
    assert!(
        found.is_empty(),
        "variant comparisons outside src/core (ask the type instead):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_comparison_finder_sees_what_it_should() {
    let hits = variant_tests(
        "if p.sharing == Sharing::Mig {}\nmatches!(\n  c,\n  Capacity::Spot | Capacity::OnDemand\n)\nlet x = Sharing::Mig;\nmatches!(k, Kind::Batch)",
        &["Sharing", "Capacity"],
    );
    assert_eq!(hits.len(), 2, "{hits:?}");
}

#[test]
fn the_reader_sees_paths_not_comments() {
    let text = "use crate::plan::Plan;\n// crate::cmd in a comment\nlet x = \"crate::cli\";\nuse crate::{diag, rules::Cx};\n$crate::rules::X\n";
    let u = uses(text);
    assert!(u.contains("plan") && u.contains("diag") && u.contains("rules"));
    assert!(!u.contains("cmd"), "{u:?}");
}
