//! The wasm skin's shape (issue 20): one file per JS class, no file of `src/wasm/` (Rust or
//! JS, its folders included) over 600 lines; `src/lib.rs` only re-exports the workspace's
//! crates. The skin does not yet meet tinker-structure's whole set of rules (an import cycle
//! convert -> client_options -> common -> convert, and two functions over 100 lines):
//! `skin_problems_left` shows them, and the issue of the structure step tracks them.

use std::path::{Path, PathBuf};

use tinker_structure::Crate;

fn skin() -> Crate {
    let mut c = Crate::new(env!("CARGO_MANIFEST_DIR"), &[("skin", &["wasm"])]);
    c.reexported = vec!["wasm"];
    c
}

/// Prints what the skin still breaks of the crates' rules (see the module's doc); it
/// fails only if the scan stops finding the skin.
#[test]
fn skin_problems_left() {
    let skin = skin();
    assert!(skin.modules().len() > 20, "the scan found the skin");
    for p in skin.problems() {
        eprintln!("skin: {p}");
    }
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
