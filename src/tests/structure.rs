//! The client core's shape, checked from its source so that it stays as designed:
//!
//! * no import cycle between core modules (`crate::x` references, tests aside);
//! * each module in its layer (support → transport seam → wire protocol → client
//!   behaviour), importing only from its own layer and the ones before it;
//! * no function longer than 100 lines (tests included);
//! * every `/api/v1/` path written in `src/endpoints.rs` only.
//!
//! The core is every file of `src/` but `src/tokenizer/` and `src/wasm/`; `src/types/`
//! is one module.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers, lowest first, and their modules. A new core file must be placed here.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "support",
        &["base64", "float", "json", "map", "sync", "zstd"],
    ),
    ("transport seam", &["platform"]),
    (
        "wire protocol",
        &[
            "config",
            "endpoints",
            "error",
            "handle",
            "paths",
            "proto",
            "types",
        ],
    ),
    (
        "client behaviour",
        &[
            "admission",
            "call",
            "chunking",
            "future",
            "http",
            "metrics",
            "options",
            "poller",
            "rest",
            "retry",
            "sampling",
            "sampling_retry",
            "sequencer",
            "service",
            "session",
            "telemetry",
            "training",
        ],
    ),
];

/// Modules outside the core, which the core must not import.
const OUTSIDE: &[&str] = &["tokenizer", "wasm"];

/// The longest function the core may have, in lines.
const MAX_FN_LINES: usize = 100;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect();
    files.sort();
    files
}

/// Each core module's source without comments, strings and its test module: the
/// top-level files of `src/` (but `lib.rs`), and `src/types/` as one module.
fn modules() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for f in rust_files(&src()) {
        let name = f.file_stem().unwrap().to_string_lossy().into_owned();
        if name != "lib" {
            out.insert(name, code(without_tests(&read(&f))));
        }
    }
    let types: String = rust_files(&src().join("types"))
        .iter()
        .map(|f| code(without_tests(&read(f))))
        .collect();
    out.insert("types".into(), types);
    out
}

fn read(f: &Path) -> String {
    std::fs::read_to_string(f).unwrap()
}

/// The source up to its `#[cfg(test)] mod …` (the test module ends each file).
fn without_tests(s: &str) -> &str {
    let mut at = 0;
    for line in s.split_inclusive('\n') {
        let rest = &s[at + line.len()..];
        let next = rest.lines().next().unwrap_or("").trim_start();
        if line.trim() == "#[cfg(test)]" && (next.starts_with("mod ") || next.contains(" mod ")) {
            return &s[..at];
        }
        at += line.len();
    }
    s
}

/// The source with comments removed and every string and character literal emptied
/// (line breaks kept, so line numbers stay), for scanning code only.
fn code(s: &str) -> String {
    blank(s, false)
}

/// [`code`], with string literals kept (for the path check).
fn code_with_strings(s: &str) -> String {
    blank(s, true)
}

fn blank(s: &str, keep_strings: bool) -> String {
    let b: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    // Copies b[from..to] as literal content: kept, or reduced to its line breaks.
    let literal = |out: &mut String, from: usize, to: usize| {
        for &c in &b[from..to] {
            if keep_strings || c == '\n' {
                out.push(c);
            }
        }
    };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let start = i;
            i += 2;
            while i + 1 < b.len() && !(b[i] == '*' && b[i + 1] == '/') {
                i += 1;
            }
            i += 2;
            out.extend(b[start..i.min(b.len())].iter().filter(|&&c| c == '\n'));
        } else if let Some(end) = raw_string_end(&b, i) {
            out.push('"');
            literal(&mut out, i, end);
            out.push('"');
            i = end;
        } else if c == '"' {
            let start = i + 1;
            i += 1;
            while i < b.len() && b[i] != '"' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            out.push('"');
            literal(&mut out, start, i);
            out.push('"');
            i += 1;
        } else if c == '\'' && is_char_literal(&b, i) {
            i += 1;
            while b[i] != '\'' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            out.push_str("' '");
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Where the raw string literal (`r"…"`, `r#"…"#`, `br"…"`) starting at `i` ends, if one
/// does.
fn raw_string_end(b: &[char], i: usize) -> Option<usize> {
    let ident = |j: usize| j > 0 && (b[j - 1].is_alphanumeric() || b[j - 1] == '_');
    let mut j = i;
    if b[j] == 'b' {
        j += 1;
    }
    if b.get(j) != Some(&'r') || ident(i) {
        return None;
    }
    j += 1;
    let hashes = b[j..].iter().take_while(|&&c| c == '#').count();
    if b.get(j + hashes) != Some(&'"') {
        return None;
    }
    let mut k = j + hashes + 1;
    while k < b.len() {
        if b[k] == '"'
            && b[k + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == '#')
                .count()
                == hashes
        {
            return Some(k + 1 + hashes);
        }
        k += 1;
    }
    None
}

/// Whether the `'` at `i` opens a character literal (`'x'`, `'\n'`) rather than a
/// lifetime (`'a`).
fn is_char_literal(b: &[char], i: usize) -> bool {
    match b.get(i + 1) {
        Some('\\') => true,
        Some(_) => b.get(i + 2) == Some(&'\''),
        None => false,
    }
}

/// The core modules `code` refers to (`crate::x`, `crate::{x, y}`), itself aside.
fn imports(name: &str, code: &str, core: &BTreeMap<String, String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |m: &str| {
        if m != name
            && !out.iter().any(|x| x == m)
            && (core.contains_key(m) || OUTSIDE.contains(&m))
        {
            out.push(m.to_string());
        }
    };
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            for item in group[..group.find('}').unwrap_or(0)].split(',') {
                add(item.trim().split("::").next().unwrap_or("").trim());
            }
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            add(&rest[..end]);
        }
    }
    out.sort();
    out
}

fn graph() -> BTreeMap<String, Vec<String>> {
    let core = modules();
    core.iter()
        .map(|(name, code)| (name.clone(), imports(name, code, &core)))
        .collect()
}

/// A cycle through the graph, if there is one (depth-first search).
fn find_cycle(g: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, Vec<String>>,
        n: &str,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let from = path.iter().position(|x| x == n).unwrap();
                let mut cycle = path[from..].to_vec();
                cycle.push(n.to_string());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(g, m, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    g.keys()
        .find_map(|n| visit(g, n, &mut state, &mut Vec::new()))
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, ms)| ms.contains(&module))
}

#[test]
fn no_core_module_imports_its_way_back_to_itself() {
    let g = graph();
    assert!(g.len() > 20, "the scan found the core: {:?}", g.keys());
    assert_eq!(find_cycle(&g), None, "an import cycle");
}

#[test]
fn the_cycle_check_finds_cycles() {
    let g: BTreeMap<String, Vec<String>> = [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"])]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
        .collect();
    assert_eq!(
        find_cycle(&g),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    let core: BTreeMap<String, String> = [
        ("config".to_string(), String::new()),
        ("http".to_string(), String::new()),
    ]
    .into();
    let src = code("use crate::http::FromJson; // crate::nothing\nlet s = \"crate::config\";");
    assert_eq!(imports("config", &src, &core), vec!["http"]);
    assert_eq!(
        imports("x", "use crate::{config, http::Req};", &core),
        ["config", "http"]
    );
}

#[test]
fn every_module_imports_only_from_its_layer_and_the_ones_before() {
    let g = graph();
    let mut wrong = Vec::new();
    for (m, deps) in &g {
        let Some(own) = layer_of(m) else {
            wrong.push(format!("{m} is in no layer (add it to LAYERS)"));
            continue;
        };
        for d in deps {
            if OUTSIDE.contains(&d.as_str()) {
                wrong.push(format!("{m} imports {d}, which is outside the core"));
            } else if layer_of(d).is_some_and(|l| l > own) {
                let (ml, dl) = (LAYERS[own].0, LAYERS[layer_of(d).unwrap()].0);
                wrong.push(format!("{m} ({ml}) imports {d} ({dl})"));
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Every function of `code` (comments and literals blanked): name, first line, lines.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    for (i, _) in code.match_indices("fn ") {
        let word_start = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if !word_start {
            continue;
        }
        let name: String = code[i + 3..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        // The body opens at the first `{` before any `;` (a declaration has none).
        let Some(open) = code[i..].find(['{', ';']).map(|o| i + o) else {
            continue;
        };
        if name.is_empty() || b[open] == b';' {
            continue;
        }
        let mut depth = 0;
        let close = (open..b.len())
            .find(|&k| {
                match b[k] {
                    b'{' => depth += 1,
                    b'}' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .unwrap_or(b.len() - 1);
        let line = code[..i].matches('\n').count() + 1;
        let lines = code[i..=close].matches('\n').count() + 1;
        out.push((name, line, lines));
    }
    out
}

/// Every core file, tests included.
fn core_files() -> Vec<PathBuf> {
    let mut files = rust_files(&src());
    files.extend(rust_files(&src().join("types")));
    files.extend(rust_files(&src().join("tests")));
    files
}

#[test]
fn no_core_function_is_longer_than_100_lines() {
    let mut long = Vec::new();
    for f in core_files() {
        for (name, line, lines) in functions(&code(&read(&f))) {
            if lines > MAX_FN_LINES {
                let file = f.strip_prefix(src()).unwrap().display();
                long.push(format!("src/{file}:{line} {name}: {lines} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FN_LINES} lines: {long:#?}"
    );
}

#[test]
fn the_length_check_counts_whole_bodies() {
    let src = "fn a() {\n    let s = \"}\";\n    if x { y }\n}\ntrait T { fn d(&self); }\nfn b<'a>(c: &'a str) -> char { '}' }\n";
    let found = functions(&code(src));
    assert_eq!(
        found,
        vec![("a".into(), 1, 4), ("b".into(), 6, 1)],
        "{}",
        code(src)
    );
}

#[test]
fn api_paths_are_written_in_the_endpoint_table_only() {
    let mut found = Vec::new();
    for f in rust_files(&src())
        .into_iter()
        .chain(rust_files(&src().join("types")))
    {
        if f.ends_with("endpoints.rs") {
            continue;
        }
        let text = code_with_strings(without_tests(&read(&f)));
        for (n, line) in text.lines().enumerate() {
            if line.contains("/api/v1/") {
                found.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "paths outside src/endpoints.rs: {found:#?}"
    );
}
