//! `resolve --summary`: the rollup of a whole cluster. Snapshots of example 04 and of a generated
//! cluster, and an oracle: every figure of the rollup recounted from the full `resolve -o json`
//! document of the same cluster.

mod cli;

use cli::{ok, root};

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use test_utils::testkit::scale::ScaleSpec;

/// `resolve ARGS --fail-on none`: its standard output (exit 0).
fn resolve(args: &[&str]) -> String {
    let all: Vec<&str> = std::iter::once("resolve")
        .chain(args.iter().copied())
        .chain(["--fail-on", "none"])
        .collect();
    ok(&all)
}

fn json(args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["-o", "json"]);
    serde_json::from_str(&resolve(&a)).unwrap()
}

const TRANSIT: &str = "examples/04-transit-chain";

#[test]
fn transit_chain_rollup() {
    insta::assert_snapshot!(
        "summary-04-transit-chain",
        resolve(&["-f", TRANSIT, "--summary"])
    );
    insta::assert_snapshot!(
        "summary-04-transit-chain-json",
        resolve(&["-f", TRANSIT, "--summary", "-o", "json"])
    );
}

/// A generated cluster: the screen stays short whatever the cluster's size, and its figures are
/// the full document's.
#[test]
fn generated_cluster_rollup() {
    let file = std::env::temp_dir().join(format!("umtu-summary-{}.yaml", std::process::id()));
    std::fs::write(&file, ScaleSpec::small().generate()).unwrap();
    let path = file.to_str().unwrap();
    let screen = resolve(&["-f", path, "--summary"]);
    insta::assert_snapshot!("summary-generated-small", screen);
    let lines = screen.lines().count();
    assert!(lines <= 60, "{lines} lines: {screen}");
    let rollup = json(&["-f", path, "--summary"]);
    let full = json(&["-f", path]);
    check_rollup(&rollup, &full);
    let _ = std::fs::remove_file(&file);
}

/// The same check on every example.
#[test]
fn every_example_rollup_matches_its_document() {
    for entry in std::fs::read_dir(root().join("examples")).unwrap() {
        let dir = entry.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let path = format!("examples/{}", dir.file_name().unwrap().to_str().unwrap());
        check_rollup(&json(&["-f", &path, "--summary"]), &json(&["-f", &path]));
    }
}

/// Recounts the rollup's figures from the full document.
fn check_rollup(rollup: &Value, full: &Value) {
    let nodes = full["nodes"].as_array().unwrap();
    let count = |key: &str| {
        nodes
            .iter()
            .map(|n| n[key].as_array().map_or(0, Vec::len))
            .sum::<usize>()
    };
    let c = &rollup["counts"];
    assert_eq!(c["nodes"], nodes.len());
    assert_eq!(
        c["gateways"],
        nodes.iter().filter(|n| n["role"] == "gateway").count()
    );
    let distinct = |key: &str| {
        nodes
            .iter()
            .filter_map(|n| n[key].as_str())
            .collect::<BTreeSet<_>>()
            .len()
    };
    assert_eq!(c["sites"], distinct("site"));
    assert_eq!(c["pools"], distinct("pool"));
    assert_eq!(c["links"], count("links"));
    assert_eq!(c["routes"], count("routes"));
    assert_eq!(c["devices"], count("devices"));

    // Every distinct MTU: fabric nodes, link and route values, nodes with such a route.
    let mut mtus: BTreeMap<u64, [usize; 4]> = BTreeMap::new();
    for n in nodes {
        mtus.entry(n["fabricMTU"].as_u64().unwrap()).or_default()[0] += 1;
        for l in n["links"].as_array().unwrap() {
            mtus.entry(l["mtu"].as_u64().unwrap()).or_default()[1] += 1;
        }
        let mut here = BTreeSet::new();
        for r in n["routes"].as_array().unwrap() {
            let m = r["mtu"].as_u64().unwrap();
            mtus.entry(m).or_default()[2] += 1;
            here.insert(m);
        }
        for m in here {
            mtus.entry(m).or_default()[3] += 1;
        }
    }
    let rows: BTreeMap<u64, [usize; 4]> = rollup["mtus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let f = |k: &str| r[k].as_u64().unwrap() as usize;
            (
                r["mtu"].as_u64().unwrap(),
                [
                    f("fabricNodes"),
                    f("linkValues"),
                    f("routeValues"),
                    f("routeNodes"),
                ],
            )
        })
        .collect();
    assert_eq!(rows, mtus);

    // The lowest fabric and route.
    let low_fabric = nodes.iter().map(|n| n["fabricMTU"].as_u64().unwrap()).min();
    assert_eq!(rollup["lowestFabric"]["mtu"].as_u64(), low_fabric);
    let low_route = nodes
        .iter()
        .flat_map(|n| n["routes"].as_array().unwrap())
        .map(|r| r["mtu"].as_u64().unwrap())
        .min();
    assert_eq!(rollup["lowestRoute"]["mtu"].as_u64(), low_route);
    let floor = nodes
        .iter()
        .filter(|n| n["fabricMTU"].as_u64().unwrap() <= 1280)
        .count();
    assert_eq!(rollup["ipv6Floor"]["nodes"], floor);

    // Each binding object: the values whose binding term reads it.
    let mut binders: BTreeMap<(String, String), [usize; 5]> = BTreeMap::new();
    for n in nodes {
        let mut touched = BTreeSet::new();
        let mut add = |e: &Value, slot: usize| {
            let b = &e["bound"];
            if let Some(obj) = b["object"].as_str() {
                let key = (
                    obj.to_string(),
                    b["field"].as_str().unwrap_or("").to_string(),
                );
                binders.entry(key.clone()).or_default()[slot] += 1;
                touched.insert(key);
            }
        };
        add(&n["fabricExplanation"], 0);
        for (list, slot) in [("links", 1), ("routes", 2), ("devices", 3)] {
            for v in n[list].as_array().unwrap() {
                add(&v["explanation"], slot);
            }
        }
        for key in touched {
            binders.entry(key).or_default()[4] += 1;
        }
    }
    let got: BTreeMap<(String, String), [usize; 5]> = rollup["binders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let f = |k: &str| b[k].as_u64().unwrap() as usize;
            (
                (
                    b["object"].as_str().unwrap().to_string(),
                    b["field"].as_str().unwrap_or("").to_string(),
                ),
                [
                    f("fabricNodes"),
                    f("linkValues"),
                    f("routeValues"),
                    f("deviceValues"),
                    f("nodes"),
                ],
            )
        })
        .collect();
    assert_eq!(got, binders);

    // Diagnostics by severity.
    let diags = full["diagnostics"].as_array().unwrap();
    for sev in ["error", "warning", "note"] {
        let n = diags.iter().filter(|d| d["severity"] == sev).count();
        assert_eq!(rollup["diagnosticCounts"][sev], n, "{sev}");
    }
}
