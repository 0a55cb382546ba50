//! The wasm skin's shape (issues 20 and 32): one file per JS class, no file of `src/wasm/`
//! (Rust or JS, its folders included) over 600 lines; `src/lib.rs` only re-exports the
//! workspace's crates; tinker-structure's rules as every crate has them (no import cycle,
//! no function over 100 lines); each options object declared once.

use std::path::{Path, PathBuf};

use tinker_structure::Crate;

fn skin() -> Crate {
    let mut c = Crate::new(env!("CARGO_MANIFEST_DIR"), &[("skin", &["wasm"])]);
    c.reexported = vec!["wasm"];
    c
}

/// The crates' rules: no import cycle among the skin's modules, no function over 100 lines.
#[test]
fn the_skin_keeps_the_crates_rules() {
    let skin = skin();
    assert!(skin.modules().len() > 20, "the scan found the skin");
    skin.check();
}

#[test]
fn no_skin_file_is_longer_than_600_lines() {
    fn files(dir: &Path) -> Vec<PathBuf> {
        let entries = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path());
        let (dirs, mut found): (Vec<_>, Vec<_>) = entries.partition(|p| p.is_dir());
        found.extend(dirs.iter().flat_map(|d| files(d)));
        found
    }
    let all = files(&skin().src.join("wasm"));
    assert!(all.len() > 20, "the scan found the skin");
    let long: Vec<String> = all
        .into_iter()
        .map(|f| (std::fs::read_to_string(&f).unwrap().lines().count(), f))
        .filter(|(n, _)| *n > 600)
        .map(|(n, f)| format!("{}: {n} lines", f.display()))
        .collect();
    assert!(long.is_empty(), "src/wasm files over 600 lines: {long:#?}");
}

#[test]
fn the_crate_root_holds_no_code_of_its_own() {
    let lib = tinker_structure::code(&tinker_structure::read(&skin().src.join("lib.rs")));
    let fns = tinker_structure::functions(&lib);
    assert!(fns.is_empty(), "src/lib.rs only re-exports: {fns:?}");
}

/// Issue 32, part 3: each options or parameter object of the skin is declared once (a
/// `declare_params!` entry, or the handle options' macro), which gives its reader, its
/// TypeScript and its doc text. Fails on an allow-list reader written by hand
/// (`Opts::new(v, what, &[...])` outside the declaring macros) and on a hand-written
/// TypeScript interface of an options or parameter object.
#[test]
fn options_objects_are_declared_once() {
    let wasm = skin().src.join("wasm");
    let mut files = Vec::new();
    tinker_structure::walk(&wasm, &mut files);
    let declaring = ["convert/declare.rs", "client_options.rs", "convert/opts.rs"];
    // Optimizer parameters other than AdamW go to the core as JSON, whose reader
    // (tinker_core's dimuon_params) checks them: their TypeScript is their one declaration.
    let read_by_the_core = ["DimuonParams", "OptimizerParams"];
    // The data shapes of the hot path, declared with declare_shapes! (their names are the
    // blocks of convert/shapes.rs): no second TypeScript of them anywhere in the skin.
    let shapes_rs = std::fs::read_to_string(wasm.join("convert/shapes.rs")).unwrap();
    let shapes: Vec<&str> = shapes_rs
        .lines()
        .filter_map(|l| l.strip_prefix("    ")?.strip_suffix(" {"))
        .filter(|n| n.chars().all(char::is_alphanumeric))
        .collect();
    assert!(shapes.contains(&"Datum") && shapes.len() >= 8, "{shapes:?}");
    let mut found = Vec::new();
    for f in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
    {
        let rel = f
            .strip_prefix(&wasm)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(f).unwrap();
        let code = tinker_structure::code(&text);
        if !declaring.contains(&rel.as_str()) && code.contains("Opts::new(") {
            found.push(format!(
                "{rel}: an options reader written by hand (Opts::new)"
            ));
        }
        for line in text.lines() {
            let decl = line.trim_start();
            let name = decl
                .strip_prefix("export interface ")
                .or_else(|| decl.strip_prefix("export type "))
                .map(|r| r.split(|c: char| !c.is_alphanumeric()).next().unwrap_or(""));
            if let Some(name) = name {
                let shape = ["Options", "Params", "Config"]
                    .iter()
                    .any(|s| name.ends_with(s));
                if (shape && !read_by_the_core.contains(&name)) || shapes.contains(&name) {
                    found.push(format!("{rel}: TypeScript of {name} written by hand"));
                }
            }
        }
    }
    // The package's own declarations (pkg/**/*.d.ts, beside the generated ones) refer to
    // them: no interface of that kind written there, and no parameter typed by an object
    // literal (a shape declared inline). The package's JS declares its own objects with
    // pkg/declare.js, whose TypeScript is generated into pkg/gen.
    let pkg = skin().src.parent().unwrap().join("pkg");
    for dir in [pkg.clone(), pkg.join("lite"), pkg.join("cookbook")] {
        for f in std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()) {
            if f.to_string_lossy().ends_with(".d.ts") {
                let text = std::fs::read_to_string(&f).unwrap();
                found.extend(
                    hand_written_shapes(&text)
                        .into_iter()
                        .map(|m| format!("{}: {m}", f.display())),
                );
            }
        }
    }
    assert!(files.len() > 20, "the scan found the skin");
    assert!(
        found.is_empty(),
        "declare these with declare_params! (the module's) or pkg/declare.js (the package's JS): {found:#?}"
    );
    // The check itself.
    let seen = hand_written_shapes(
        "export interface FooOptions {\n  f(params?: { a?: number }): void;\n  constructor(params: {\n}",
    );
    assert_eq!(seen.len(), 3, "{seen:?}");
}

/// What a declaration file writes by hand: an interface named as a parameter object, and
/// each parameter typed by an object literal.
fn hand_written_shapes(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines().map(str::trim_start) {
        if let Some(r) = line.strip_prefix("export interface ") {
            let name = r.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("");
            if ["Options", "Params", "Config"]
                .iter()
                .any(|s| name.ends_with(s))
            {
                found.push(format!("TypeScript of {name} written by hand"));
            }
        }
        // `(name: {` or `, name?: {`: a parameter whose type is an object literal.
        for (i, _) in line.match_indices(": {") {
            let before = line[..i].trim_end_matches('?');
            let name_start = before
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(0, |j| j + 1);
            let prev = before[..name_start].trim_end();
            if name_start < before.len() && (prev.ends_with('(') || prev.ends_with(',')) {
                found.push(format!("a parameter shape written inline: {line}"));
            }
        }
    }
    found
}
