//! Architecture invariant 1: `topology-core` and `mtu-solver` do no I/O. This test reads
//! `cargo metadata` and fails if either crate's normal dependency tree (an over-approximation:
//! features are unified across the workspace) contains an async runtime, a Kubernetes client,
//! netlink, or an HTTP stack. Filesystem, environment and clock calls are kept out by
//! `clippy.toml` (`disallowed-methods`) in both crates.
//!
//! It also checks the arrows between workspace crates (normal dependencies; dev-dependencies
//! aside): `topology-core` depends on no workspace crate, `mtu-solver` only on `topology-core`,
//! and the adapters `dataplane-linux` and `probe-linux` on neither core crate nor the agent.
//! It also checks the test layout: the reference oracle and the test kit live in the
//! `publish = false` crate `test-utils`, which no product crate depends on outside its
//! dev-dependencies, and the core crates have no test-only features and do not list themselves
//! as dev-dependencies.

#![allow(clippy::disallowed_methods)] // tests may read files

use std::collections::{BTreeMap, BTreeSet, HashMap};
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

/// The product crates: what ships in the binary (`benches`, `test-utils` and `fuzz` do not).
const PRODUCT: &[&str] = &[
    "topology-core",
    "mtu-solver",
    "dataplane-linux",
    "probe-linux",
    "agent",
];

/// Names of the packages `root` depends on, transitively, through normal dependencies.
fn closure(meta: &serde_json::Value, root: &str) -> BTreeSet<String> {
    closure_of(meta, root, |kind| kind.is_none())
}

/// Names of the packages `root` depends on, transitively, through normal and build
/// dependencies (everything but dev-dependencies).
fn non_dev_closure(meta: &serde_json::Value, root: &str) -> BTreeSet<String> {
    closure_of(meta, root, |kind| kind != Some("dev"))
}

fn closure_of(
    meta: &serde_json::Value,
    root: &str,
    follow: impl Fn(Option<&str>) -> bool,
) -> BTreeSet<String> {
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
                .any(|k| follow(k["kind"].as_str()));
            let pkg = d["pkg"].as_str().unwrap();
            if normal && seen.insert(name_of[pkg].to_string()) {
                stack.push(pkg);
            }
        }
    }
    seen
}

/// `cargo metadata` of the workspace, resolved for Linux.
fn metadata() -> serde_json::Value {
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
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The normal dependency arrows between workspace crates, by crate name.
fn workspace_arrows(meta: &serde_json::Value) -> BTreeMap<String, BTreeSet<String>> {
    let members: BTreeSet<&str> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let name_of: HashMap<&str, &str> = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut arrows: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for node in meta["resolve"]["nodes"].as_array().unwrap() {
        let id = node["id"].as_str().unwrap();
        if !members.contains(id) {
            continue;
        }
        let out = arrows.entry(name_of[id].to_string()).or_default();
        for d in node["deps"].as_array().unwrap() {
            let pkg = d["pkg"].as_str().unwrap();
            let normal = d["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null());
            if normal && members.contains(pkg) && pkg != id {
                out.insert(name_of[pkg].to_string());
            }
        }
    }
    arrows
}

/// The workspace crates `from` reaches through normal dependencies, each with the chain of
/// arrows that reaches it (`a -> b -> c`).
fn reachable(arrows: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeMap<String, String> {
    let mut chains: BTreeMap<String, String> = BTreeMap::new();
    let mut stack = vec![(from.to_string(), from.to_string())];
    while let Some((krate, chain)) = stack.pop() {
        for next in arrows.get(&krate).into_iter().flatten() {
            if next != from && !chains.contains_key(next) {
                let chain = format!("{chain} -> {next}");
                chains.insert(next.clone(), chain.clone());
                stack.push((next.clone(), chain));
            }
        }
    }
    chains
}

/// Which workspace crates a crate may reach through normal dependencies.
struct Rule {
    krate: &'static str,
    /// Whether `krate` may reach this workspace crate.
    allows: fn(&str) -> bool,
    /// The rule in words, for the failure message.
    says: &'static str,
}

#[test]
fn workspace_crates_depend_only_along_the_allowed_arrows() {
    let meta = metadata();
    let arrows = workspace_arrows(&meta);
    for krate in [
        "topology-core",
        "mtu-solver",
        "dataplane-linux",
        "probe-linux",
        "agent",
    ] {
        assert!(
            arrows.contains_key(krate),
            "{krate} is not a workspace crate; the arrows read are {arrows:?}"
        );
    }
    let rules = [
        Rule {
            krate: "topology-core",
            allows: |_| false,
            says: "topology-core depends on no workspace crate",
        },
        Rule {
            krate: "mtu-solver",
            allows: |to| to == "topology-core",
            says: "mtu-solver depends only on topology-core",
        },
        Rule {
            krate: "dataplane-linux",
            allows: |to| !["topology-core", "mtu-solver", "agent"].contains(&to),
            says: "dataplane-linux depends on neither core crate nor the agent",
        },
        Rule {
            krate: "probe-linux",
            allows: |to| !["topology-core", "mtu-solver", "agent"].contains(&to),
            says: "probe-linux depends on neither core crate nor the agent",
        },
    ];
    for rule in rules {
        for (to, chain) in reachable(&arrows, rule.krate) {
            assert!(
                (rule.allows)(&to),
                "forbidden arrow {chain} (normal dependency): {}",
                rule.says
            );
        }
    }
}

/// The I/O dependencies a core crate may have behind its `fs` feature (mtu-solver's loader,
/// which walks directories), with that feature's definition.
fn fs_feature_deps(meta: &serde_json::Value, krate: &str) -> Vec<String> {
    let Some(p) = meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == krate)
    else {
        return Vec::new();
    };
    let gated: Vec<String> = p["features"]["fs"]
        .as_array()
        .map(|f| {
            f.iter()
                .filter_map(|x| x.as_str()?.strip_prefix("dep:").map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    for dep in &gated {
        let decl = p["dependencies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == dep.as_str())
            .unwrap();
        assert_eq!(
            decl["optional"], true,
            "{krate}: {dep} must be optional, enabled by the `fs` feature only"
        );
    }
    gated
}

fn package<'a>(meta: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    meta["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("no package {name} in cargo metadata"))
}

#[test]
fn the_core_has_no_io_dependencies() {
    let meta = metadata();
    assert!(
        fs_feature_deps(&meta, "topology-core").is_empty(),
        "topology-core has no loader: it reads no files"
    );
    assert_eq!(
        fs_feature_deps(&meta, "mtu-solver"),
        ["walkdir"],
        "mtu-solver's loader (feature `fs`) walks directories and nothing else"
    );
    for krate in ["topology-core", "mtu-solver"] {
        let deps = closure(&meta, krate);
        let allowed = fs_feature_deps(&meta, krate);
        let bad: Vec<&String> = deps
            .iter()
            .filter(|d| FORBIDDEN.contains(&d.as_str()) && !allowed.contains(d))
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

#[test]
fn test_utils_stays_out_of_the_product() {
    let meta = metadata();
    let tu = package(&meta, "test-utils");
    assert_eq!(
        tu["publish"],
        serde_json::json!([]),
        "test-utils must be publish = false"
    );
    assert!(
        closure(&meta, "test-utils").contains("topology-core"),
        "the closure looks wrong"
    );
    for krate in PRODUCT {
        let deps = non_dev_closure(&meta, krate);
        assert!(
            !deps.contains("test-utils"),
            "{krate} depends on test-utils outside dev-dependencies (its tree: {deps:?})"
        );
        let pkg = package(&meta, krate);
        for f in ["reference", "testkit"] {
            assert!(
                pkg["features"].get(f).is_none(),
                "{krate} has a test-only feature {f:?}: test code belongs in test-utils"
            );
        }
        for d in pkg["dependencies"].as_array().unwrap() {
            assert_ne!(
                d["name"].as_str(),
                Some(*krate),
                "{krate} lists itself as a dependency ({})",
                d["kind"]
            );
        }
    }
    for krate in ["topology-core", "mtu-solver"] {
        assert!(
            !closure(&meta, krate).contains("proptest"),
            "{krate} depends on proptest outside dev-dependencies"
        );
    }
}
