//! `docs/ARCHITECTURE.md` names every module of every crate's `src/`: a file by its name, a
//! module folder by its name and `/` (crate roots are named by their crate's section). A module
//! added without its place in the map fails here.

#![allow(clippy::disallowed_methods)] // tests may read files

use std::path::Path;

use tidy::{CRATES, source_paths, workspace_root};

/// How the map names the module of `file` under `src`: `None` for a crate root.
fn named_as(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let name = rel.file_name()?.to_str()?;
    match (name, rel.parent().and_then(Path::file_name)) {
        ("lib.rs" | "main.rs", None) => None,
        ("mod.rs", Some(dir)) => Some(format!("{}/", dir.to_str()?)),
        _ => Some(name.to_string()),
    }
}

#[test]
fn the_architecture_map_names_every_module() {
    let root = workspace_root();
    let map = std::fs::read_to_string(root.join("docs/ARCHITECTURE.md")).expect("the map");
    let mut missing = Vec::new();
    let mut seen = 0;
    for krate in CRATES {
        let src = root.join(krate).join("src");
        let files = source_paths(krate);
        assert!(!files.is_empty(), "{krate} has no src/");
        for f in files {
            if let Some(name) = named_as(&src, &f) {
                seen += 1;
                if !map.contains(&name) {
                    missing.push(format!(
                        "{krate}/src/{}",
                        f.strip_prefix(&src).unwrap_or(&f).display()
                    ));
                }
            }
        }
    }
    assert!(seen > 100, "only {seen} modules found");
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md does not name these modules: {missing:#?}"
    );
}
