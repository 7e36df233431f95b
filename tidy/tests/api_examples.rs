//! An embeddable crate shows every public function in use: each `pub fn` of `mtu-solver` (test
//! items, trait impls and doc-hidden modules aside) has an example in its documentation, which
//! `cargo test --doc` runs.

use tidy::{crate_sources, hidden_modules, public_functions};

#[test]
fn every_public_function_of_the_library_has_an_example() {
    let files = crate_sources("mtu-solver").unwrap();
    let hidden = hidden_modules(&files);
    assert!(
        !hidden.is_empty(),
        "the doctests' fixture module is doc-hidden"
    );
    let mut seen = 0;
    let mut bare = Vec::new();
    for file in files
        .iter()
        .filter(|f| f.module.first().is_none_or(|m| !hidden.contains(m)))
    {
        for f in public_functions(file) {
            seen += 1;
            if !f.example {
                bare.push(format!("{}:{} {}", file.path.display(), f.line, f.name));
            }
        }
    }
    assert!(seen > 100, "only {seen} public functions found");
    assert!(
        bare.is_empty(),
        "public functions without an example (add a doctest that asserts what it returns, with a \
         one-line cost note): {bare:#?}"
    );
}
