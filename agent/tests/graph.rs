//! `graph` beyond the shipped examples' goldens: parallel relationships merged into one edge,
//! `--around NODE`, and a generated cluster of many Sites laid out by `fdp` with its pools as
//! clusters. (How fast the standard cluster renders is a `perf-budget` figure, not a test.)

mod cli;

use cli::{ok, run};

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;
use test_utils::testkit::scale::ScaleSpec;

/// The node statements of a DOT text: their ids (`site:A`, `pool:PA`, `peering:ab`).
fn nodes(dot: &str) -> BTreeSet<String> {
    dot.lines()
        .filter(|l| l.contains(" [shape="))
        .filter_map(|l| l.trim().strip_prefix('"')?.split('"').next())
        .map(str::to_string)
        .collect()
}

/// The edge statements of a DOT text: their two ends, in the order drawn.
fn edges(dot: &str) -> Vec<(String, String)> {
    dot.lines()
        .filter_map(|l| {
            let (a, rest) = l.trim().strip_prefix('"')?.split_once("\" -- \"")?;
            Some((a.to_string(), rest.split('"').next()?.to_string()))
        })
        .collect()
}

const PARALLEL: &str = "agent/tests/fixtures/parallel-peerings.yaml";

#[test]
fn parallel_relationships_are_one_edge_with_the_lowest_link_and_its_binding_object() {
    let dot = ok(&["graph", "-f", PARALLEL, "--fail-on", "none"]);
    let ab: Vec<&str> = dot
        .lines()
        .filter(|l| l.starts_with("  \"site:A\" -- \"site:B\""))
        .collect();
    assert_eq!(ab.len(), 1, "one edge between A and B:\n{dot}");
    assert_eq!(edges(&dot).len(), 1, "{dot}");
    let edge = ab[0];
    for text in [
        "2 relationships",
        "SitePeering ab: cap 1400",
        "SitePeering ab-narrow: cap 1300",
        "lowest link 1300",
        "bound by SitePeering/ab-narrow cap",
    ] {
        assert!(edge.contains(text), "{text:?} missing from {edge}");
    }
    // The binding object's cap binds: the merged edge is red.
    assert!(edge.contains("penwidth=2.5"), "{edge}");
    // The document keeps the relationships apart: it lists objects, not drawn edges.
    let json: serde_json::Value = serde_json::from_str(&ok(&[
        "graph",
        "-f",
        PARALLEL,
        "-o",
        "json",
        "--fail-on",
        "none",
    ]))
    .unwrap();
    let names: Vec<&str> = json["edges"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "SitePeering")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ab", "ab-narrow"]);
}

/// An `--around` case: example, node, the nodes drawn, the edges drawn.
type AroundCase = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

#[test]
fn around_draws_one_hop_of_sites_and_pools() {
    let cases: [AroundCase; 3] = [
        (
            "04-transit-chain",
            "ga",
            &["pool:PA", "pool:PB", "site:A", "site:SA", "site:SB"],
            &[
                ("pool:PA", "site:SA"),
                ("pool:PB", "site:SB"),
                ("site:A", "pool:PA"),
                ("pool:PA", "pool:PB"),
            ],
        ),
        (
            "04-transit-chain",
            "wa",
            &["pool:PA", "site:A", "site:SA"],
            &[("pool:PA", "site:SA"), ("site:A", "pool:PA")],
        ),
        (
            "02-mesh-peering-cap",
            "a1",
            &["site:A", "site:B"],
            &[("site:A", "site:B")],
        ),
    ];
    for (example, node, want_nodes, want_edges) in cases {
        let file = format!("examples/{example}");
        let dot = ok(&["graph", "-f", &file, "--around", node]);
        let want: BTreeSet<String> = want_nodes.iter().map(|s| s.to_string()).collect();
        assert_eq!(nodes(&dot), want, "{example} around {node}:\n{dot}");
        let want: Vec<(String, String)> = want_edges
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(edges(&dot), want, "{example} around {node}:\n{dot}");
        // The document draws the same Sites and pools.
        let json: serde_json::Value =
            serde_json::from_str(&ok(&["graph", "-f", &file, "--around", node, "-o", "json"]))
                .unwrap();
        let ids: BTreeSet<String> = json["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                let id = n["id"].as_str().unwrap();
                id.replace("GatewayPool/", "pool:")
                    .replace("Site/", "site:")
            })
            .collect();
        assert_eq!(nodes(&dot), ids, "{example} around {node}");
    }
}

#[test]
fn around_an_unknown_node_names_it() {
    let (code, out, err) = run(&["graph", "-f", "examples/04-transit-chain", "--around", "gz"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("--around gz"), "{err}");
}

/// A generated cluster of the standard shape, written to a temporary file.
fn generated(spec: &ScaleSpec, tag: &str) -> PathBuf {
    let file = std::env::temp_dir().join(format!("graph-{tag}-{}.yaml", std::process::id()));
    std::fs::write(&file, spec.generate()).unwrap();
    file
}

#[test]
fn a_generated_cluster_is_laid_out_by_fdp_with_pools_as_clusters() {
    // The standard cluster's 200 Sites, 50 pools and 10 chords, with 4 nodes a Site (800, not
    // 5,000: the picture is the same, the resolve shorter).
    let spec = ScaleSpec {
        sites: 200,
        pools: 50,
        chords: 10,
        ..ScaleSpec::small()
    };
    let file = generated(&spec, "200-sites");
    let path = file.to_str().unwrap();
    let dot = ok(&["graph", "-f", path, "--fail-on", "none"]);
    assert!(dot.lines().nth(1).unwrap().contains("layout=fdp"), "{dot}");
    let drawn = nodes(&dot);
    let count = |prefix: &str| drawn.iter().filter(|n| n.starts_with(prefix)).count();
    assert_eq!(count("site:"), spec.sites);
    assert_eq!(count("pool:"), spec.pools);
    let clusters = dot
        .lines()
        .filter(|l| l.starts_with("  subgraph \"cluster_pool:"))
        .count();
    assert_eq!(clusters, spec.pools, "one cluster per pool");
    // A pool delivering to every Site says so in one line, not one per Site.
    let pool = dot.lines().find(|l| l.starts_with("  \"pool:")).unwrap();
    assert!(pool.contains(" Sites</FONT>"), "{pool}");
    assert_eq!(pool.matches("publishes").count(), 1, "{pool}");
    // The shipped examples stay with `dot`, whose layered picture keeps labels off edges.
    let small = ok(&["graph", "-f", "examples/04-transit-chain"]);
    assert!(!small.contains("layout="), "{small}");

    if Command::new("fdp").arg("-V").output().is_err() {
        eprintln!("skipped the SVG of the generated cluster: Graphviz is not installed");
        let _ = std::fs::remove_file(&file);
        return;
    }
    let (code, svg, err) = run(&["graph", "-f", path, "--fail-on", "none", "-o", "svg"]);
    let _ = std::fs::remove_file(&file);
    assert_eq!(code, 0, "{err}");
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    let doc = roxmltree::Document::parse_with_options(&svg, opts).unwrap();
    let titles: BTreeSet<String> = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("node"))
        .filter_map(|n| n.children().find(|c| c.has_tag_name("title"))?.text())
        .map(str::to_string)
        .collect();
    assert_eq!(titles, drawn, "every node of the DOT text is drawn");
    let boxes = doc
        .descendants()
        .filter(|n| n.attribute("class") == Some("cluster"))
        .count();
    assert_eq!(boxes, spec.pools, "each pool is drawn as a cluster");
}
