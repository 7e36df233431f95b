//! Reading manifests: files, directories (walked in path order, hidden entries skipped, only
//! `.yaml`, `.yml`, `.json`), and `-` for standard input. The core decodes the bytes.

use anyhow::{Context, Result, bail};
use std::io::Read;
use std::path::Path;
use topology_core::decode::Decoded;

/// Reads every `-f` argument into a decoded set. Fails (exit 2) only when a path cannot be read.
pub fn load(paths: &[String]) -> Result<Decoded> {
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
                let name = entry.file_name().to_string_lossy();
                if !(name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".json")) {
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
        } else {
            let bytes = std::fs::read(path).with_context(|| format!("cannot read {p}"))?;
            decoded.add_source(p, &bytes);
        }
    }
    Ok(decoded)
}
