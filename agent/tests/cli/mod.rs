//! The binary run as a user runs it, for the command-level tests: from the repository's root
//! (the paths the tests name are the repository's), without a `KUBECONFIG` from the
//! environment. Each test file takes what it needs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Runs `unbounded-mtu ARGS`: exit status (-1 when killed), standard output, standard error.
pub fn run(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_unbounded-mtu"))
        .current_dir(root())
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .expect("run the binary");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Standard output of a run that must exit 0.
pub fn ok(args: &[&str]) -> String {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    out
}

/// The JSON document of a run that must exit 0.
pub fn json(args: &[&str]) -> serde_json::Value {
    let out = ok(args);
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}"))
}
