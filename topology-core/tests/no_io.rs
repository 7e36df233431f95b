//! Architecture invariant 1: `topology-core` and `mtu-solver` do no I/O. This test reads
//! `cargo metadata` and fails if either crate's normal dependency tree (an over-approximation:
//! features are unified across the workspace) contains an async runtime, a Kubernetes client,
//! netlink, or an HTTP stack. Filesystem, environment and clock calls are kept out by
//! `clippy.toml` (`disallowed-methods`) in both crates.

#![allow(clippy::disallowed_methods)] // tests may read files

use std::collections::{BTreeSet, HashMap};
use std::process::Command;

const FORBIDDEN: &[&str] = &[
    "tokio",
    "mio",
    "async-std",
    "smol",
    "kube",
    "kube-client",
    "kube-runtime",
    "k8s-openapi",
    "rtnetlink",
    "netlink-sys",
    "netlink-proto",
    "netlink-packet-route",
    "hyper",
    "reqwest",
    "tower",
    "rustls",
    "openssl",
    "nix",
    "socket2",
    "notify",
    "walkdir",
];

fn closure(meta: &serde_json::Value, root: &str) -> BTreeSet<String> {
    let packages = meta["packages"].as_array().unwrap();
    let name_of: HashMap<&str, &str> = packages
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let root_id = packages
        .iter()
        .find(|p| p["name"] == root)
        .map(|p| p["id"].as_str().unwrap())
        .unwrap();
    let nodes: HashMap<&str, &serde_json::Value> = meta["resolve"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap(), n))
        .collect();
    let mut seen = BTreeSet::new();
    let mut stack = vec![root_id];
    while let Some(id) = stack.pop() {
        for d in nodes[id]["deps"].as_array().unwrap() {
            let normal = d["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null());
            let pkg = d["pkg"].as_str().unwrap();
            if normal && seen.insert(name_of[pkg].to_string()) {
                stack.push(pkg);
            }
        }
    }
    seen
}

#[test]
fn the_core_has_no_io_dependencies() {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--filter-platform",
            "x86_64-unknown-linux-gnu",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for krate in ["topology-core", "mtu-solver"] {
        let deps = closure(&meta, krate);
        let bad: Vec<&String> = deps
            .iter()
            .filter(|d| FORBIDDEN.contains(&d.as_str()))
            .collect();
        assert!(
            bad.is_empty(),
            "{krate} depends on I/O crates {bad:?} (its tree: {deps:?})"
        );
        assert!(
            deps.contains("ipnet") || krate == "mtu-solver",
            "the closure looks wrong: {deps:?}"
        );
    }
}

#[test]
fn clippy_bans_io_calls_in_the_core() {
    for krate in ["topology-core", "mtu-solver"] {
        let path = format!("{}/../{krate}/clippy.toml", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap();
        for banned in [
            "std::fs::read",
            "std::env::var",
            "std::time::Instant::now",
            "std::time::SystemTime::now",
        ] {
            assert!(text.contains(banned), "{path} does not ban {banned}");
        }
    }
}
