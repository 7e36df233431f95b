//! The loader: manifests from files, directories, standard input or `(name, bytes)` pairs, with
//! the command line's rules, so a tool and `unbounded-mtu` decode the same directory the same
//! way. A directory is walked in path order; hidden entries (a name starting with `.`) are
//! skipped without a word; only files ending `.yaml`, `.yml` or `.json` (in any letter case) are
//! read, and the others are reported as one `N-SKIPPED-FILE` note per directory. `-` names
//! standard input, which can be read once per load.
//!
//! This module is the one place where the library reads files (feature `fs`, on by default);
//! decoding and resolving stay I/O-free, and [`from_sources`] (`(name, bytes)` pairs) and
//! [`is_manifest_name`] need no feature at all.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the loader is the library's one reader of files; resolution stays I/O-free"
)]

#[cfg(feature = "fs")]
use std::io::Read;
#[cfg(feature = "fs")]
use std::path::{Path, PathBuf};
use topology_core::decode::Decoded;
#[cfg(feature = "fs")]
use topology_core::diag::{Code, Diagnostic, SourceLoc};

#[cfg(feature = "fs")]
/// Why manifests could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// A path could not be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The path (`-` for standard input).
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A directory could not be walked.
    #[error("cannot walk {}", path.display())]
    Walk {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: walkdir::Error,
    },
    /// A directory holds no manifest.
    #[error("{}: the directory holds no .yaml, .yml or .json files", path.display())]
    EmptyDirectory {
        /// The directory.
        path: PathBuf,
    },
    /// Standard input was named more than once: the second read would find it empty.
    #[error("standard input (-) is named {count} times; it can be read once")]
    StdinTwice {
        /// How often.
        count: usize,
    },
}

/// Whether a file name is a manifest's: `.yaml`, `.yml` or `.json`, any letter case. Costs a
/// lowercase copy of the name.
///
/// ```
/// use mtu_solver::load::is_manifest_name;
/// assert!(is_manifest_name("sites/a.YAML") && is_manifest_name("nodes.json"));
/// assert!(!is_manifest_name("README.md"));
/// ```
pub fn is_manifest_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    [".yaml", ".yml", ".json"]
        .iter()
        .any(|ext| lower.ends_with(ext))
}

#[cfg(feature = "fs")]
/// Fails when standard input (`-`) is named more than once across `lists` (one command's
/// inputs, e.g. a base and an `--after` set). Free.
///
/// ```
/// use mtu_solver::load::{LoadError, stdin_once};
/// assert!(stdin_once(&[&["-"][..], &["after/"][..]]).is_ok());
/// let twice = stdin_once(&[&["-"][..], &["-"][..]]);
/// assert!(matches!(twice, Err(LoadError::StdinTwice { count: 2 })));
/// ```
pub fn stdin_once<P: AsRef<Path>>(lists: &[&[P]]) -> Result<(), LoadError> {
    let count = lists
        .iter()
        .flat_map(|l| l.iter())
        .filter(|p| p.as_ref() == Path::new("-"))
        .count();
    if count > 1 {
        return Err(LoadError::StdinTwice { count });
    }
    Ok(())
}

/// Decodes `(name, bytes)` pairs, in order: what [`load`] does after reading. Costs a decode
/// of each source; reads nothing.
///
/// ```
/// use mtu_solver::load;
/// let cluster = mtu_solver::doc_cluster::TWO_SITES;
/// let decoded = load::from_sources([("cluster.yaml", cluster), ("notes.yaml", "kind: [")]);
/// assert_eq!(decoded.objects.len(), 5);
/// let found = decoded.diagnostics.iter().map(|d| d.to_string()).collect::<Vec<_>>();
/// assert!(found.len() == 1 && found[0].starts_with("notes.yaml:2:1: error E-DECODE"), "{found:?}");
/// ```
pub fn from_sources<N: AsRef<str>, B: AsRef<[u8]>>(
    sources: impl IntoIterator<Item = (N, B)>,
) -> Decoded {
    let mut decoded = Decoded::default();
    for (name, bytes) in sources {
        decoded.add_source(name.as_ref(), bytes.as_ref());
    }
    decoded
}

#[cfg(feature = "fs")]
/// Reads and decodes every path: files, directories and `-` (standard input, once). A file is
/// read once however often it is named, directly or inside a named directory (by its canonical
/// path), so naming it twice does not make its objects duplicates of themselves. Costs reading
/// and decoding each file once.
///
/// ```
/// use mtu_solver::load;
/// let dir = std::env::temp_dir().join(format!("mtu-solver-doc-load-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("cluster.yaml"), mtu_solver::doc_cluster::TWO_SITES)?;
/// std::fs::write(dir.join("README.md"), "not a manifest")?;
/// let decoded = load::load(&[&dir])?;
/// assert_eq!(decoded.objects.len(), 5);
/// assert_eq!(decoded.diagnostics[0].code.as_str(), "N-SKIPPED-FILE");
/// // The file named again, beside its directory, is read once.
/// assert_eq!(load::load(&[dir.join("cluster.yaml"), dir.clone()])?.objects.len(), 5);
/// std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn load<P: AsRef<Path>>(paths: &[P]) -> Result<Decoded, LoadError> {
    stdin_once(&[paths])?;
    let mut decoded = Decoded::default();
    let mut seen = Seen::default();
    for p in paths {
        let path = p.as_ref();
        if path == Path::new("-") {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|source| LoadError::Read {
                    path: path.into(),
                    source,
                })?;
            decoded.add_source("-", &buf);
            continue;
        }
        let meta = std::fs::metadata(path).map_err(|source| LoadError::Read {
            path: path.into(),
            source,
        })?;
        if meta.is_dir() {
            load_directory(path, &mut decoded, &mut seen)?;
        } else if seen.first_time(path) {
            let bytes = std::fs::read(path).map_err(|source| LoadError::Read {
                path: path.into(),
                source,
            })?;
            decoded.add_source(&path.display().to_string(), &bytes);
        }
    }
    Ok(decoded)
}

#[cfg(feature = "fs")]
/// The files read so far, by canonical path.
#[derive(Default)]
struct Seen(std::collections::HashSet<PathBuf>);

#[cfg(feature = "fs")]
impl Seen {
    /// Whether the file at `path` has not been read yet (and is now counted as read). A path
    /// that cannot be made canonical counts as new: reading it reports why.
    fn first_time(&mut self, path: &Path) -> bool {
        match std::fs::canonicalize(path) {
            Ok(c) => self.0.insert(c),
            Err(_) => true,
        }
    }
}

#[cfg(feature = "fs")]
/// Decodes the manifests of one directory into `decoded`; files already read are not read
/// again (they still count as manifests the directory holds).
fn load_directory(dir: &Path, decoded: &mut Decoded, seen: &mut Seen) -> Result<(), LoadError> {
    let mut found = 0usize;
    let mut skipped: Vec<String> = Vec::new();
    let walker = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walker {
        let entry = entry.map_err(|source| LoadError::Walk {
            path: dir.into(),
            source,
        })?;
        if !entry.file_type().is_file() {
            continue;
        }
        if !is_manifest_name(&entry.file_name().to_string_lossy()) {
            let shown = entry.path().strip_prefix(dir).unwrap_or(entry.path());
            skipped.push(shown.display().to_string());
            continue;
        }
        found = found.saturating_add(1);
        if !seen.first_time(entry.path()) {
            continue;
        }
        let bytes = std::fs::read(entry.path()).map_err(|source| LoadError::Read {
            path: entry.path().into(),
            source,
        })?;
        decoded.add_source(&entry.path().display().to_string(), &bytes);
    }
    if found == 0 {
        return Err(LoadError::EmptyDirectory { path: dir.into() });
    }
    if !skipped.is_empty() {
        decoded
            .diagnostics
            .push(skipped_note(&dir.display().to_string(), &skipped));
    }
    Ok(())
}

#[cfg(feature = "fs")]
/// `N-SKIPPED-FILE`: the files of directory `dir` that were not read, the first five by name.
fn skipped_note(dir: &str, skipped: &[String]) -> Diagnostic {
    let shown: Vec<&str> = skipped.iter().take(5).map(String::as_str).collect();
    let more = skipped.len().saturating_sub(shown.len());
    let files = if skipped.len() == 1 { "file" } else { "files" };
    Diagnostic::new(
        Code::SkippedFile,
        "-",
        "",
        format!(
            "skipped {} {files} not ending .yaml, .yml or .json: {}{}",
            skipped.len(),
            shown.join(", "),
            if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            }
        ),
        Some(SourceLoc::at_line(dir.into(), 0)),
    )
}

#[cfg(all(test, feature = "fs"))]
mod tests {
    use super::*;

    #[test]
    fn manifest_names_and_stdin_once() {
        assert!(is_manifest_name("a.YAML"));
        assert!(is_manifest_name("b.Json"));
        assert!(!is_manifest_name("c.txt"));
        assert!(stdin_once(&[&["-"], &["x"]]).is_ok());
        assert!(matches!(
            stdin_once(&[&["-"], &["-"]]),
            Err(LoadError::StdinTwice { count: 2 })
        ));
    }

    #[test]
    fn a_file_named_twice_is_read_once() {
        let dir =
            std::env::temp_dir().join(format!("mtu-solver-load-twice-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        let site = "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata: {name: a}\n";
        std::fs::write(dir.join("sub/a.yaml"), site).unwrap();
        let file = dir.join("sub/a.yaml");
        let dotted = dir.join("sub/../sub/a.yaml");
        // The file twice, by two spellings, and inside its directory.
        let d = load(&[&file, &dotted, &dir]).unwrap();
        assert_eq!(d.objects.len(), 1);
        // Its directory, then the file: still once.
        let d = load(&[&dir, &file]).unwrap();
        assert_eq!(d.objects.len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn directories_skip_hidden_entries_and_report_other_files() {
        let dir = std::env::temp_dir().join(format!("mtu-solver-load-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(".hidden")).unwrap();
        std::fs::write(
            dir.join("a.yaml"),
            "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata: {name: a}\n",
        )
        .unwrap();
        std::fs::write(dir.join(".hidden/b.yaml"), "kind: Site\n").unwrap();
        std::fs::write(dir.join("notes.txt"), "x").unwrap();
        let d = load(&[&dir]).unwrap();
        assert_eq!(d.objects.len(), 1);
        let notes: Vec<String> = d.diagnostics.iter().map(|x| x.to_string()).collect();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("notes.txt"), "{notes:?}");
        let empty = dir.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        std::fs::write(empty.join("x.txt"), "x").unwrap();
        assert!(matches!(
            load(&[&empty]),
            Err(LoadError::EmptyDirectory { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
