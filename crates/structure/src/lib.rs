//! The workspace's structure rules, checked from each crate's source so that it stays as
//! designed. Every crate's `tests/structure.rs` states its layers (lowest first, each a set
//! of files and folders of its `src/`) and asks [`Crate::check`] for:
//!
//! * no import cycle between its modules (`crate::x` references, and `super::x` from a
//!   top-level module; tests aside);
//! * each module importing only from its own layer and the ones before it;
//! * no function longer than [`MAX_FN_LINES`] lines (tests included);
//! * every file of `src/` in one of its layers (a new file goes into a layer's place).
//!
//! Between crates, Cargo's dependency graph already forbids cycles, and a crate cannot use
//! one it does not depend on: the crates are the outer layers (support → core → tokenizer
//! → renderers → the wasm skin).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The longest function a crate may have, in lines.
pub const MAX_FN_LINES: usize = 100;

/// A crate's layout: where its source is and its layers, lowest first.
pub struct Crate {
    /// The crate's `src/` folder.
    pub src: PathBuf,
    /// Each layer's name and places: files (`platform.rs`) or folders (`wire`) of `src/`.
    /// A module's layer is where its file is; a folder inside a layer's folder is one
    /// module (`wire/types/`); a layer's `mod.rs` only declares its modules.
    pub layers: Vec<(&'static str, Vec<&'static str>)>,
    /// Folders whose modules the crate root re-exports, so `crate::wire::config` is
    /// `crate::config`.
    pub reexported: Vec<&'static str>,
    /// Files of `src/` outside every layer: `lib.rs` (only declarations and the crate's
    /// facade) and the test modules.
    pub outside: Vec<&'static str>,
}

impl Crate {
    /// A crate at `manifest_dir` (its `CARGO_MANIFEST_DIR`) with these layers.
    pub fn new(manifest_dir: &str, layers: &[(&'static str, &[&'static str])]) -> Self {
        Crate {
            src: Path::new(manifest_dir).join("src"),
            layers: layers.iter().map(|(n, p)| (*n, p.to_vec())).collect(),
            reexported: Vec::new(),
            outside: vec!["lib.rs"],
        }
    }

    /// Each module: its layer (an index into `layers`) and its source without comments,
    /// strings and its test module.
    pub fn modules(&self) -> BTreeMap<String, (usize, String)> {
        let mut out = BTreeMap::new();
        for (layer, (_, places)) in self.layers.iter().enumerate() {
            for place in places {
                let path = self.src.join(place);
                if path.is_file() {
                    let name = path.file_stem().unwrap().to_string_lossy().into_owned();
                    out.insert(name, (layer, module_code(&path, true)));
                    continue;
                }
                for f in rust_files(&path) {
                    let name = f.file_stem().unwrap().to_string_lossy().into_owned();
                    if name != "mod" {
                        out.insert(name, (layer, module_code(&f, true)));
                    }
                }
                for d in subfolders(&path) {
                    let name = d.file_name().unwrap().to_string_lossy().into_owned();
                    let text: String = rust_files(&d)
                        .iter()
                        .map(|f| module_code(f, false))
                        .collect();
                    out.insert(name, (layer, text));
                }
            }
        }
        out
    }

    /// Every `.rs` file of the layers (nested folders included).
    pub fn layer_sources(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for place in self.layers.iter().flat_map(|(_, p)| p) {
            let path = self.src.join(place);
            if path.is_file() {
                out.push(path);
            } else {
                walk(&path, &mut out);
            }
        }
        out
    }

    /// The module graph: each module and the modules of this crate it imports.
    pub fn graph(&self) -> BTreeMap<String, Vec<String>> {
        let modules = self.modules();
        modules
            .iter()
            .map(|(name, (_, code))| {
                (
                    name.clone(),
                    imports(name, code, &modules, &self.reexported),
                )
            })
            .collect()
    }

    /// Imports of a later layer, as messages.
    pub fn layer_violations(&self) -> Vec<String> {
        let modules = self.modules();
        let mut wrong = Vec::new();
        for (m, deps) in self.graph() {
            let own = modules[&m].0;
            for d in deps {
                let theirs = modules[&d].0;
                if theirs > own {
                    let (ml, dl) = (self.layers[own].0, self.layers[theirs].0);
                    wrong.push(format!("{m} ({ml}) imports {d} ({dl})"));
                }
            }
        }
        wrong
    }

    /// Functions over [`MAX_FN_LINES`] lines in any file of `src/`, tests included.
    pub fn long_functions(&self) -> Vec<String> {
        let mut files = Vec::new();
        walk(&self.src, &mut files);
        let mut long = Vec::new();
        for f in files {
            for (name, line, lines) in functions(&code(&read(&f))) {
                if lines > MAX_FN_LINES {
                    let file = f.strip_prefix(&self.src).unwrap().display();
                    long.push(format!("src/{file}:{line} {name}: {lines} lines"));
                }
            }
        }
        long
    }

    /// Files and folders of `src/` in no layer and not declared outside them.
    pub fn unplaced(&self) -> Vec<String> {
        let placed: Vec<&str> = self
            .layers
            .iter()
            .flat_map(|(_, p)| p.iter().copied())
            .collect();
        let mut top: Vec<String> = std::fs::read_dir(&self.src)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !placed.contains(&n.as_str()) && !self.outside.contains(&n.as_str()))
            .collect();
        top.sort();
        top
    }

    /// Every rule at once: panics with what is wrong.
    pub fn check(&self) {
        let problems = self.problems();
        assert!(problems.is_empty(), "{}: {problems:#?}", self.src.display());
    }

    /// What breaks the rules, one line each (empty when nothing does).
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.modules().is_empty() {
            out.push("the scan found no module".to_string());
        }
        if let Some(cycle) = find_cycle(&self.graph()) {
            out.push(format!("an import cycle: {}", cycle.join(" -> ")));
        }
        out.extend(self.layer_violations());
        let long = self.long_functions();
        out.extend(
            long.into_iter()
                .map(|l| format!("over {MAX_FN_LINES} lines: {l}")),
        );
        out.extend(
            self.unplaced()
                .into_iter()
                .map(|f| format!("in no layer: src/{f}")),
        );
        out
    }
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

fn subfolders(dir: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Every `.rs` file under `dir`, nested folders included.
pub fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    out.extend(rust_files(dir));
    for d in subfolders(dir) {
        walk(&d, out);
    }
}

/// A file read as text.
pub fn read(f: &Path) -> String {
    std::fs::read_to_string(f).unwrap()
}

/// A module's code for the import scan: no comments, literals or tests. In a file that is
/// a layer's place or sits directly in a layer's folder, `super::x` names a sibling
/// module (or the crate root), which the scan reads as `crate::x` (modules are known by
/// name; the layers' folders re-export theirs).
fn module_code(f: &Path, sibling_super: bool) -> String {
    let text = code(without_tests(&read(f)));
    if sibling_super {
        text.replace("super::", "crate::")
    } else {
        text
    }
}

/// The source up to its `#[cfg(test)] mod …` (the test module ends each file).
pub fn without_tests(s: &str) -> &str {
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
pub fn code(s: &str) -> String {
    blank(s, false)
}

/// [`code`], with string literals kept (for the path check).
pub fn code_with_strings(s: &str) -> String {
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

/// The modules of `modules` that `code` refers to (`crate::x`, `crate::{x, y}`), itself
/// aside; `reexported` folders are looked through (`crate::wire::config` is `config`).
pub fn imports<V>(
    name: &str,
    code: &str,
    modules: &BTreeMap<String, V>,
    reexported: &[&str],
) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut add = |m: &str| {
        if m != name && !out.iter().any(|x| x == m) && modules.contains_key(m) {
            out.push(m.to_string());
        }
    };
    for (i, _) in code.match_indices("crate::") {
        let mut rest = &code[i + "crate::".len()..];
        for folder in reexported {
            rest = rest
                .strip_prefix(folder)
                .and_then(|r| r.strip_prefix("::"))
                .unwrap_or(rest);
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

/// A cycle through the graph, if there is one (depth-first search).
pub fn find_cycle(g: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
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

/// Every function of `code` (comments and literals blanked): name, first line, lines.
pub fn functions(code: &str) -> Vec<(String, usize, usize)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cycle_check_finds_cycles() {
        let g: BTreeMap<String, Vec<String>> =
            [("a", vec!["b"]), ("b", vec!["c"]), ("c", vec!["a"])]
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
        assert_eq!(imports("config", &src, &core, &[]), vec!["http"]);
        assert_eq!(
            imports("x", "use crate::{config, http::Req};", &core, &[]),
            ["config", "http"]
        );
        // A re-exported folder is looked through: `crate::wire::http` is `http`.
        assert_eq!(
            imports("x", "use crate::wire::http::Req;", &core, &["wire"]),
            ["http"]
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
}
