//! The client core's shape (tinker-structure's rules), over the support crate: the
//! transport seam, then the wire protocol, then the client's behaviour; and every
//! `/api/v1/` path written in `src/wire/endpoints.rs` only.

use tinker_structure::{code_with_strings, read, without_tests, Crate};

fn core() -> Crate {
    let mut c = Crate::new(
        env!("CARGO_MANIFEST_DIR"),
        &[
            ("transport seam", &["platform.rs"]),
            ("wire protocol", &["wire"]),
            ("client behaviour", &["client"]),
        ],
    );
    c.reexported = vec!["wire", "client"];
    c.outside.push("tests");
    c
}

#[test]
fn the_core_keeps_its_layers() {
    let core = core();
    assert!(core.modules().len() > 20, "the scan found the core");
    core.check();
}

#[test]
fn a_deliberate_upward_import_is_seen() {
    let mut core = core();
    // The wire layer importing the client layer, as a copy of the tree would show it.
    let dir = std::env::temp_dir().join(format!("tinker-structure-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src/wire")).unwrap();
    std::fs::create_dir_all(dir.join("src/client")).unwrap();
    std::fs::write(dir.join("src/platform.rs"), "").unwrap();
    std::fs::write(dir.join("src/wire/paths.rs"), "use crate::training::X;\n").unwrap();
    std::fs::write(dir.join("src/client/training.rs"), "use crate::paths::P;\n").unwrap();
    core.src = dir.join("src");
    assert_eq!(
        core.layer_violations(),
        ["paths (wire protocol) imports training (client behaviour)"]
    );
    assert!(tinker_structure::find_cycle(&core.graph()).is_some());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn api_paths_are_written_in_the_endpoint_table_only() {
    let mut found = Vec::new();
    for f in core().layer_sources() {
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
