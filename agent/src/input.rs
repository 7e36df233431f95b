//! Reading manifests: files, directories (walked in path order, hidden entries skipped, only
//! files ending `.yaml`, `.yml` or `.json` in any letter case), and `-` for standard input, which
//! can be read once per command. The core decodes the bytes.

use anyhow::{Context, Result, bail};
use std::io::Read;
use std::path::Path;
use topology_core::decode::Decoded;
use topology_core::diag::{Code, Diagnostic, SourceLoc};

/// `N-SKIPPED-FILE`: the files of directory `dir` that were not read (hidden entries are skipped
/// without a word, as every tool does).
fn skipped_note(dir: &str, skipped: &[String]) -> Diagnostic {
    let shown: Vec<&str> = skipped.iter().take(5).map(String::as_str).collect();
    let more = skipped.len().saturating_sub(shown.len());
    Diagnostic::new(
        Code::SkippedFile,
        "-",
        "",
        format!(
            "skipped {} not ending .yaml, .yml or .json: {}{}",
            crate::common::counted(skipped.len(), "file", "files"),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ),
        Some(SourceLoc {
            source: dir.into(),
            line: 0,
        }),
    )
}

/// Whether a directory entry is a manifest by its name: `.yaml`, `.yml` or `.json`, any case.
pub fn is_manifest_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".yaml", ".yml", ".json"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

/// Fails when standard input (`-`) is named more than once across `lists` (one command's
/// inputs): the second read would silently find it empty.
pub fn stdin_once(lists: &[&[String]]) -> Result<()> {
    let n = lists
        .iter()
        .flat_map(|l| l.iter())
        .filter(|p| *p == "-")
        .count();
    if n > 1 {
        bail!("standard input (-) is named {n} times; it can be read once per command");
    }
    Ok(())
}

/// Reads every `-f` argument into a decoded set. Fails (exit 2) only when a path cannot be read
/// or standard input is named twice.
pub fn load(paths: &[String]) -> Result<Decoded> {
    stdin_once(&[paths])?;
    let mut decoded = Decoded::default();
    for p in paths {
        if p == "-" {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .context("cannot read standard input")?;
            decoded.add_source("-", &buf);
            continue;
        }
        let path = Path::new(p);
        let meta = std::fs::metadata(path).with_context(|| format!("cannot read {p}"))?;
        if meta.is_dir() {
            let mut found = 0usize;
            let mut skipped: Vec<String> = Vec::new();
            let walker = walkdir::WalkDir::new(path)
                .sort_by_file_name()
                .into_iter()
                .filter_entry(|e| {
                    e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.')
                });
            for entry in walker {
                let entry = entry.with_context(|| format!("cannot walk {p}"))?;
                if !entry.file_type().is_file() {
                    continue;
                }
                if !is_manifest_name(&entry.file_name().to_string_lossy()) {
                    skipped.push(
                        entry
                            .path()
                            .strip_prefix(path)
                            .unwrap_or(entry.path())
                            .display()
                            .to_string(),
                    );
                    continue;
                }
                let bytes = std::fs::read(entry.path())
                    .with_context(|| format!("cannot read {}", entry.path().display()))?;
                decoded.add_source(&entry.path().display().to_string(), &bytes);
                found += 1;
            }
            if found == 0 {
                bail!("{p}: the directory holds no .yaml, .yml or .json files");
            }
            if !skipped.is_empty() {
                decoded.diagnostics.push(skipped_note(p, &skipped));
            }
        } else {
            let bytes = std::fs::read(path).with_context(|| format!("cannot read {p}"))?;
            decoded.add_source(p, &bytes);
        }
    }
    Ok(decoded)
}
