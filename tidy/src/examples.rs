//! Public functions and whether their documentation shows an example: what
//! `tests/api_examples.rs` asks of an embeddable crate.

use crate::{Function, SourceFile, functions};

/// Every `pub fn` of `file` (free, or in an inherent `impl`), test-only items and trait impls
/// aside (a trait impl's methods are the trait's, documented there).
pub fn public_functions(file: &SourceFile) -> Vec<Function> {
    functions(file).into_iter().filter(|f| f.public).collect()
}

/// The modules the crate root of `files` marks `#[doc(hidden)]` (helpers for doctests, not
/// API), by name.
pub fn hidden_modules(files: &[SourceFile]) -> Vec<String> {
    files
        .iter()
        .filter(|f| f.module.is_empty() && f.root == "lib")
        .flat_map(|f| &f.syntax.items)
        .filter_map(|i| match i {
            syn::Item::Mod(m) if m.attrs.iter().any(is_doc_hidden) => Some(m.ident.to_string()),
            _ => None,
        })
        .collect()
}

fn is_doc_hidden(a: &syn::Attribute) -> bool {
    a.path().is_ident("doc") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "hidden")
}

/// Whether `attrs` hold documentation with a fenced code block.
pub(crate) fn has_example(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let syn::Meta::NameValue(nv) = &a.meta else {
            return false;
        };
        let syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(s),
            ..
        }) = &nv.value
        else {
            return false;
        };
        a.path().is_ident("doc") && s.value().trim_start().starts_with("```")
    })
}

#[cfg(test)]
mod tests {
    use super::{hidden_modules, public_functions};
    use crate::SourceFile;

    fn file(module: &[&str], text: &str) -> SourceFile {
        SourceFile {
            krate: "k".into(),
            path: "k/src/x.rs".into(),
            root: "lib".into(),
            module: module.iter().map(|m| m.to_string()).collect(),
            lines: text.lines().count(),
            syntax: syn::parse_file(text).expect("valid Rust"),
        }
    }

    #[test]
    fn finds_public_functions_and_their_examples() {
        let f = file(
            &["x"],
            "/// Shown.\n///\n/// ```\n/// assert!(true);\n/// ```\npub fn shown() {}\n\
             /// Told only.\npub fn told() {}\nfn private() {}\n\
             pub struct T;\nimpl T {\n    /// ```\n    /// ```\n    pub fn new() -> T { T }\n\
             pub(crate) fn inner(&self) {}\n    pub fn bare(&self) {}\n}\n\
             impl Clone for T { fn clone(&self) -> T { T } }\n\
             #[cfg(test)]\nmod tests { pub fn helper() {} }\n",
        );
        let got: Vec<(String, bool)> = public_functions(&f)
            .into_iter()
            .map(|p| (p.name, p.example))
            .collect();
        let want = [
            ("shown", true),
            ("told", false),
            ("T::new", true),
            ("T::bare", false),
        ];
        assert_eq!(
            got,
            want.map(|(n, e)| (n.to_string(), e)).to_vec(),
            "private, crate-visible, trait and test-only functions are not API"
        );
    }

    #[test]
    fn reads_hidden_modules_from_the_crate_root() {
        let root = file(
            &[],
            "#[doc(hidden)]\npub mod helpers;\npub mod api;\nmod inner;\n",
        );
        assert_eq!(hidden_modules(&[root]), vec!["helpers".to_string()]);
    }
}
