//! The shape rules of the product crates: no function over 100 lines, no file over 800 lines
//! (unit tests in the file aside; `tests/`, benches and the test kit are not product), and no
//! module circle in any crate of the workspace.

use tidy::{CRATES, PRODUCT, crate_sources, functions, module_circles, product_lines};

const FUNCTION_LINES: usize = 100;
const FILE_LINES: usize = 800;

#[test]
fn no_product_function_is_longer_than_a_hundred_lines() {
    let mut long = Vec::new();
    let mut seen = 0;
    for krate in PRODUCT {
        for file in crate_sources(krate).unwrap() {
            for f in functions(&file) {
                seen += 1;
                if f.length > FUNCTION_LINES {
                    long.push(format!(
                        "{}:{} {} ({} lines)",
                        file.path.display(),
                        f.line,
                        f.name,
                        f.length
                    ));
                }
            }
        }
    }
    assert!(seen > 1000, "only {seen} functions found");
    assert!(
        long.is_empty(),
        "functions over {FUNCTION_LINES} lines; split them into named steps: {long:#?}"
    );
}

#[test]
fn no_product_file_is_longer_than_eight_hundred_lines() {
    let mut long = Vec::new();
    for krate in PRODUCT {
        for file in crate_sources(krate).unwrap() {
            let n = product_lines(&file);
            if n > FILE_LINES {
                long.push(format!("{} ({n} lines)", file.path.display()));
            }
        }
    }
    assert!(
        long.is_empty(),
        "files over {FILE_LINES} lines outside their unit tests; split them by what changes together: {long:#?}"
    );
}

#[test]
fn no_crate_has_a_module_circle() {
    let mut files = Vec::new();
    for krate in CRATES {
        files.extend(crate_sources(krate).unwrap());
    }
    let circles = module_circles(&files);
    assert!(circles.is_empty(), "module circles: {circles:#?}");
}
