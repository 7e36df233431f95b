//! The repository is self-contained: no file under version control (source, test, script,
//! manifest, `Cargo.toml`) refers to a path above the repository root, so a clone with nothing
//! beside it builds and passes its tests. The one exception is `.ci/beside-clone`, CI's optional
//! checks against material laid out beside the clone, which skip when it is absent.
//!
//! A relative path is read from the directory it is naturally resolved against: a crate's
//! directory for the files of a crate (`CARGO_MANIFEST_DIR` and the working directory of its
//! tests), the repository root for every other file (scripts run from the root). A run of `../`
//! longer than that directory's depth leaves the repository. Documentation (Markdown) may name
//! the specification beside the clone; it is not read by any build or test.

// The I/O ban of clippy.toml is for the libraries; this test reads the repository's files.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// CI's optional checks against material beside the clone: the one file allowed to name it.
const BESIDE_CLONE: &str = ".ci/beside-clone";

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The files under version control, and those not yet added that git would not ignore (what the
/// next commit may hold), relative to the root, with `/` separators.
fn tracked_files(root: &Path) -> Vec<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .output()
        .unwrap_or_else(|e| panic!("git ls-files in {}: {e}", root.display()));
    assert!(
        out.status.success(),
        "git ls-files in {}: {}",
        root.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
        .split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

/// The depth below the root of the directory relative paths in `file` are resolved against: the
/// nearest enclosing crate (a directory with a `Cargo.toml`) for a file inside one, else the root.
fn base_depth(file: &str, is_crate_dir: impl Fn(&str) -> bool) -> usize {
    let parts: Vec<&str> = file.split('/').collect();
    let dirs = parts.len().saturating_sub(1);
    (1..=dirs)
        .rev()
        .find(|&d| is_crate_dir(&parts[..d].join("/")))
        .unwrap_or(0)
}

/// Each line of `text` (1-based) with a run of `../` longer than `depth`, and that run's length.
fn escapes(text: &str, depth: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let bytes = line.as_bytes();
        let mut at = 0;
        while at + 3 <= bytes.len() {
            let starts_run = &bytes[at..at + 3] == b"../" && (at == 0 || bytes[at - 1] != b'.');
            if !starts_run {
                at += 1;
                continue;
            }
            let mut run = 0;
            while bytes.get(at..at + 3) == Some(b"../".as_slice()) {
                run += 1;
                at += 3;
            }
            if run > depth {
                out.push((i + 1, run));
            }
        }
    }
    out
}

/// Every reference above the root in the tracked files: `file:line` and the line.
fn references_above_root(root: &Path, files: &[String]) -> Vec<String> {
    let is_crate_dir = |dir: &str| files.iter().any(|f| *f == format!("{dir}/Cargo.toml"));
    let mut found = Vec::new();
    for file in files {
        if file == BESIDE_CLONE || file.ends_with(".md") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(root.join(file)) else {
            // Binary files (fuzz seeds, images) name no paths; a deleted file names nothing.
            continue;
        };
        let depth = base_depth(file, is_crate_dir);
        for (line, run) in escapes(&text, depth) {
            let shown = text.lines().nth(line - 1).unwrap_or("").trim();
            found.push(format!(
                "{file}:{line}: {run} × ../ from depth {depth}: {shown}"
            ));
        }
    }
    found
}

#[test]
fn no_tracked_file_refers_above_the_repository_root() {
    let root = repo_root();
    let files = tracked_files(&root);
    assert!(
        files.iter().any(|f| f == "Cargo.toml"),
        "{} is not the repository root",
        root.display()
    );
    let found = references_above_root(&root, &files);
    assert!(
        found.is_empty(),
        "files that reach outside the repository (a clone with nothing beside it fails):\n{}",
        found.join("\n")
    );
}

/// `n` steps up, as a relative path.
fn up(n: usize) -> String {
    "../".repeat(n)
}

/// The guard fails on what it guards against: a test that reads `../shared` from its crate, a
/// script at the root that reads `../shared`, and passes paths that stay inside.
#[test]
fn the_guard_finds_reads_beside_the_clone() {
    let crates = |d: &str| ["topology-core", "agent", "fuzz"].contains(&d);
    assert_eq!(
        base_depth("topology-core/tests/unknown_fields.rs", crates),
        1
    );
    assert_eq!(base_depth(".ci/run", crates), 0);
    assert_eq!(base_depth("README.md", crates), 0);

    // The paths are built so that this file itself names nothing above the root.
    let test = format!(
        r#"let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("{}shared/external");"#,
        up(2)
    );
    assert_eq!(escapes(&test, 1), vec![(1, 2)]);
    let script = "true\npython3 ../shared/scenarios/check.py target/release/unbounded-mtu\n";
    assert_eq!(escapes(script, 0), vec![(2, 1)]);

    let inside = r#"concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/x.txt")"#;
    assert_eq!(escapes(inside, 1), vec![]);
    assert_eq!(escapes(r#"path = "../topology-core""#, 1), vec![]);
    assert_eq!(escapes("let r = &v[..]; for i in 0..n {}", 0), vec![]);
    assert_eq!(escapes(r#"cd "$(dirname "$0")/..""#, 0), vec![]);
}

/// The whole check, on a repository laid out in a temporary folder: a test that reads
/// `../shared` is reported, with its file and line.
#[test]
fn a_test_reading_beside_the_clone_is_reported() {
    let dir = std::env::temp_dir().join(format!("self-contained-{}", std::process::id()));
    let write = |rel: &str, text: &str| {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap_or(&dir)).expect("mkdir");
        std::fs::write(p, text).expect("write");
    };
    write("Cargo.toml", "[workspace]\n");
    write("core/Cargo.toml", "[package]\n");
    write(
        "core/tests/t.rs",
        &format!(
            "#[test]\nfn t() {{\n    std::fs::read(\"{}shared/x.yaml\").unwrap();\n}}\n",
            up(2)
        ),
    );
    write(
        "core/tests/ok.rs",
        "const F: &str = \"../core/tests/t.rs\";\n",
    );
    write(".ci/beside-clone", "python3 ../shared/scenarios/check.py\n");
    let files: Vec<String> = [
        "Cargo.toml",
        "core/Cargo.toml",
        "core/tests/t.rs",
        "core/tests/ok.rs",
        ".ci/beside-clone",
    ]
    .map(String::from)
    .to_vec();
    let found = references_above_root(&dir, &files);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("core/tests/t.rs:3:"), "{found:?}");
}
