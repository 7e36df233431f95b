//! The workspace read as source: each crate's files parsed with `syn`, with what the tidy checks
//! in `tests/` measure (product lines of a file, functions and their lengths, the module paths a
//! file refers to). The checks themselves live in `tests/`, one concern per file, as
//! rust-analyzer keeps its tidy checks apart from the product.

use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

mod circles;
mod examples;

pub use circles::{Circle, module_circles};
pub use examples::{hidden_modules, public_functions};

/// The crates that ship in the binary: the size rules hold for them.
pub const PRODUCT: [&str; 5] = [
    "topology-core",
    "mtu-solver",
    "dataplane-linux",
    "probe-linux",
    "agent",
];

/// Every crate of the workspace whose `src/` the checks read (the fuzz package aside: it is
/// not a workspace member and its targets are listed in `fuzz/README.md`).
pub const CRATES: [&str; 8] = [
    "topology-core",
    "mtu-solver",
    "dataplane-linux",
    "probe-linux",
    "agent",
    "test-utils",
    "benches",
    "tidy",
];

/// Why a source file could not be read as Rust.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid Rust.
    #[error("{path}:{line}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// Where the parser stopped.
        line: usize,
        /// The cause.
        source: syn::Error,
    },
}

/// The workspace root (the parent of this crate).
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// One `.rs` file under a crate's `src/`.
pub struct SourceFile {
    /// The crate's directory name.
    pub krate: String,
    /// The file, relative to the workspace root.
    pub path: PathBuf,
    /// The crate root the file belongs to: `lib`, `main`, or `bin/NAME`.
    pub root: String,
    /// The module path inside that root (`["net", "links"]`); empty for the root itself.
    pub module: Vec<String>,
    /// The parsed file.
    pub syntax: syn::File,
    /// How many lines the file has.
    pub lines: usize,
}

/// Every `.rs` file of `krate`'s `src/`, in path order.
pub fn source_paths(krate: &str) -> Vec<PathBuf> {
    let mut paths = Vec::new();
    rust_files(&workspace_root().join(krate).join("src"), &mut paths);
    paths.sort();
    paths
}

/// Every source file of `krate`'s `src/`, parsed, in path order.
pub fn crate_sources(krate: &str) -> Result<Vec<SourceFile>, ReadError> {
    let root = workspace_root();
    let src = root.join(krate).join("src");
    source_paths(krate)
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).map_err(|source| ReadError::Io {
                path: p.clone(),
                source,
            })?;
            let syntax = syn::parse_file(&text).map_err(|source| ReadError::Parse {
                path: p.clone(),
                line: source.span().start().line,
                source,
            })?;
            let rel = p.strip_prefix(&src).unwrap_or(&p);
            let (root_name, module) = module_of(rel);
            Ok(SourceFile {
                krate: krate.to_string(),
                path: p.strip_prefix(&root).unwrap_or(&p).to_path_buf(),
                root: root_name,
                module,
                lines: text.lines().count(),
                syntax,
            })
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The crate root and module path of a file at `rel` under `src/`.
fn module_of(rel: &Path) -> (String, Vec<String>) {
    let parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    match parts.as_slice() {
        [one] if one == "lib" => ("lib".into(), Vec::new()),
        [one] if one == "main" => ("main".into(), Vec::new()),
        [bin, name] if bin == "bin" => (format!("bin/{name}"), Vec::new()),
        [bin, name, rest @ ..] if bin == "bin" => (format!("bin/{name}"), without_mod(rest)),
        rest => ("lib".into(), without_mod(rest)),
    }
}

fn without_mod(parts: &[String]) -> Vec<String> {
    let mut v = parts.to_vec();
    if v.last().is_some_and(|l| l == "mod") {
        v.pop();
    }
    v
}

/// Whether an item's attributes include `#[cfg(test)]`.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
    })
}

/// The lines of `file` outside items marked `#[cfg(test)]` (unit tests aside).
pub fn product_lines(file: &SourceFile) -> usize {
    let test_lines: usize = file
        .syntax
        .items
        .iter()
        .filter(|i| is_test_only(item_attrs(i)))
        .map(|i| {
            let s = i.span();
            s.end().line + 1 - s.start().line
        })
        .sum();
    file.lines.saturating_sub(test_lines)
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// A function with a body, outside test-only items.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Its name (`Type::name` for methods).
    pub name: String,
    /// The line of its `fn` keyword.
    pub line: usize,
    /// Lines from `fn` to the closing brace.
    pub length: usize,
    /// It is `pub` (trait items and trait impls' methods never are).
    pub public: bool,
    /// Its documentation holds a code block (a doctest).
    pub example: bool,
}

/// Every function with a body in `file`, test-only items aside.
pub fn functions(file: &SourceFile) -> Vec<Function> {
    let mut v = Functions {
        owner: None,
        out: Vec::new(),
    };
    v.visit_file(&file.syntax);
    v.out
}

struct Functions {
    owner: Option<String>,
    out: Vec<Function>,
}

impl Functions {
    fn record(
        &mut self,
        vis: &syn::Visibility,
        attrs: &[syn::Attribute],
        sig: &syn::Signature,
        block: &syn::Block,
    ) {
        let line = sig.fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        let name = match &self.owner {
            Some(o) => format!("{o}::{}", sig.ident),
            None => sig.ident.to_string(),
        };
        self.out.push(Function {
            name,
            line,
            length: end + 1 - line,
            public: matches!(vis, syn::Visibility::Public(_)),
            example: examples::has_example(attrs),
        });
    }
}

impl<'ast> Visit<'ast> for Functions {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        if !is_test_only(item_attrs(i)) {
            syn::visit::visit_item(self, i);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.record(&f.vis, &f.attrs, &f.sig, &f.block);
        syn::visit::visit_item_fn(self, f);
    }
    fn visit_item_impl(&mut self, i: &'ast syn::ItemImpl) {
        let outer = self.owner.take();
        let ty = &i.self_ty;
        self.owner = Some(quote_type(ty));
        syn::visit::visit_item_impl(self, i);
        self.owner = outer;
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test_only(&f.attrs) {
            self.record(&f.vis, &f.attrs, &f.sig, &f.block);
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.record(&syn::Visibility::Inherited, &f.attrs, &f.sig, block);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

fn quote_type(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        _ => "impl".into(),
    }
}

/// The module paths (absolute inside the file's crate root) that `file` refers to through
/// `crate::`, `super::` and `self::` paths in `use` declarations, types and expressions,
/// test-only items aside. Each is the path as written; which module it names is decided
/// against the crate's module list by [`module_circles`].
pub fn references(file: &SourceFile) -> Vec<Vec<String>> {
    let mut v = References {
        here: file.module.clone(),
        out: Vec::new(),
    };
    v.visit_file(&file.syntax);
    v.out
}

struct References {
    here: Vec<String>,
    out: Vec<Vec<String>>,
}

impl References {
    /// Resolves a path written in this file to an absolute one, when it starts at `crate`,
    /// `super` or `self`.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let first = segments.first()?;
        let mut base = match first.as_str() {
            "crate" => Vec::new(),
            "self" => self.here.clone(),
            "super" => self.here.clone(),
            _ => return None,
        };
        let mut rest = &segments[1..];
        if first == "super" {
            base.pop();
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        base.extend(rest.iter().cloned());
        Some(base)
    }

    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                prefix.push(n.ident.to_string());
                self.push(prefix);
                prefix.pop();
            }
            syn::UseTree::Rename(r) => {
                prefix.push(r.ident.to_string());
                self.push(prefix);
                prefix.pop();
            }
            syn::UseTree::Glob(_) => self.push(prefix),
            syn::UseTree::Group(g) => {
                for t in &g.items {
                    self.use_tree(prefix, t);
                }
            }
        }
    }

    fn push(&mut self, segments: &[String]) {
        if let Some(abs) = self.absolute(segments) {
            self.out.push(abs);
        }
    }
}

impl<'ast> Visit<'ast> for References {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        if !is_test_only(item_attrs(i)) {
            syn::visit::visit_item(self, i);
        }
    }
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        // An inline module's paths are relative to it.
        self.here.push(m.ident.to_string());
        syn::visit::visit_item_mod(self, m);
        self.here.pop();
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &u.tree);
    }
    fn visit_path(&mut self, p: &'ast syn::Path) {
        let segments: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
        self.push(&segments);
        syn::visit::visit_path(self, p);
    }
}
