//! The client core's shape, checked from its source so that it stays as designed:
//!
//! * the core laid out by layer, one folder each: `src/support/` → `src/platform.rs`
//!   (the transport seam) → `src/wire/` → `src/client/`;
//! * no import cycle between core modules (`crate::x` references, tests aside);
//! * each module importing only from its own layer and the ones before it;
//! * no function longer than 100 lines (tests included);
//! * every `/api/v1/` path written in `src/wire/endpoints.rs` only.
//!
//! The core is every file of those folders (`src/wire/types/` is one module); the
//! tokenizer (`src/tokenizer/`) and the JS skin (`src/wasm/`) are outside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers, lowest first: a name and where its modules live (a folder of `src/`,
/// or one file of `src/`). A module's layer is where its file is.
const LAYERS: &[(&str, &str)] = &[
    ("support", "support"),
    ("transport seam", "platform.rs"),
    ("wire protocol", "wire"),
    ("client behaviour", "client"),
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

/// Each core module: its layer (an index into [`LAYERS`]) and its source without
/// comments, strings and its test module. A folder inside a layer (`wire/types/`) is
/// one module; a layer's `mod.rs` only declares its modules.
fn modules() -> BTreeMap<String, (usize, String)> {
    let mut out = BTreeMap::new();
    for (layer, (_, place)) in LAYERS.iter().enumerate() {
        let path = src().join(place);
        if path.is_file() {
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            out.insert(name, (layer, code(without_tests(&read(&path)))));
            continue;
        }
        for f in rust_files(&path) {
            let name = f.file_stem().unwrap().to_string_lossy().into_owned();
            if name != "mod" {
                out.insert(name, (layer, code(without_tests(&read(&f)))));
            }
        }
        for d in std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()) {
            if d.is_dir() {
                let name = d.file_name().unwrap().to_string_lossy().into_owned();
                let text: String = rust_files(&d)
                    .iter()
                    .map(|f| code(without_tests(&read(f))))
                    .collect();
                out.insert(name, (layer, text));
            }
        }
    }
    out
}

/// Every `.rs` file of the core (the layers' folders, nested ones included).
fn core_sources() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        out.extend(rust_files(dir));
        for d in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
            if d.is_dir() {
                walk(&d, out);
            }
        }
    }
    let mut out = Vec::new();
    for (_, place) in LAYERS {
        let path = src().join(place);
        if path.is_file() {
            out.push(path);
        } else {
            walk(&path, &mut out);
        }
    }
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
fn imports<V>(name: &str, code: &str, core: &BTreeMap<String, V>) -> Vec<String> {
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
        let mut rest = &code[i + "crate::".len()..];
        // `crate::wire::config` is `crate::config` (the layers re-export their modules).
        for folder in ["support::", "wire::", "client::"] {
            rest = rest.strip_prefix(folder).unwrap_or(rest);
        }
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
        .map(|(name, (_, code))| (name.clone(), imports(name, code, &core)))
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
    modules().get(module).map(|(layer, _)| *layer)
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
        let own = layer_of(m).expect("every scanned module has a layer");
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
    let mut files = core_sources();
    files.push(src().join("lib.rs"));
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

/// The JS skin stays thin: one file per class, no file in `src/wasm/` (Rust or JS, its
/// folders included) over 600 lines (issue 20).
#[test]
fn no_skin_file_is_longer_than_600_lines() {
    fn files(dir: &Path) -> Vec<PathBuf> {
        let entries = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path());
        let (dirs, mut found): (Vec<_>, Vec<_>) = entries.partition(|p| p.is_dir());
        found.extend(dirs.iter().flat_map(|d| files(d)));
        found
    }
    let long: Vec<String> = files(&src().join("wasm"))
        .into_iter()
        .map(|f| (read(&f).lines().count(), f))
        .filter(|(n, _)| *n > 600)
        .map(|(n, f)| format!("{}: {n} lines", f.display()))
        .collect();
    assert!(long.is_empty(), "src/wasm files over 600 lines: {long:#?}");
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
    for f in core_sources() {
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
        "paths outside src/wire/endpoints.rs: {found:#?}"
    );
}

#[test]
fn the_core_lives_in_its_layer_folders() {
    let mut top: Vec<String> = std::fs::read_dir(src())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(
        top,
        [
            "client",
            "lib.rs",
            "platform.rs",
            "support",
            "tests",
            "tokenizer",
            "wasm",
            "wire"
        ],
        "src/ holds the layers' folders, the seam, the tokenizer, the JS skin and the tests: a new core file goes into its layer's folder"
    );
    assert!(modules().len() > 25, "the scan found the core");
}
