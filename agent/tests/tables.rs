//! Output an operator reads on a terminal: the default tables fit 120 columns on every shipped
//! example (ECMP next hops counted, long sources left to `-o wide`), `-o wide` shows every long
//! column, `--no-headers` drops the header lines, and `graph` has one format option, with a JSON
//! form of the picture.

mod cli;

use cli::{ok, root, run};

use serde_json::Value;

fn examples() -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(root().join("examples"))
        .expect("examples")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .map(|p| {
            format!(
                "examples/{}",
                p.file_name().unwrap_or_default().to_string_lossy()
            )
        })
        .collect();
    v.sort();
    v
}

fn widest(text: &str) -> (usize, String) {
    text.lines()
        .map(|l| (l.chars().count(), l.to_string()))
        .max()
        .unwrap_or_default()
}

const NAT: &str = "examples/07-nat-and-unmanaged-cni";

#[test]
fn default_tables_fit_120_columns_on_every_example() {
    for ex in examples() {
        for args in [
            vec!["resolve", "-f", &ex, "--fail-on", "none"],
            vec!["resolve", "-f", &ex, "--fail-on", "none", "--summary"],
            vec![
                "what-if",
                "-f",
                &ex,
                "--fail-on",
                "none",
                "--agent-mtu",
                "1300",
            ],
        ] {
            let (w, line) = widest(&ok(&args));
            assert!(w <= 120, "{args:?}: {w} columns:\n{line}");
        }
    }
}

#[test]
fn wide_tables_show_the_long_columns() {
    let narrow = ok(&[
        "resolve",
        "-f",
        NAT,
        "--node",
        "factory-gw-1",
        "--fail-on",
        "none",
    ]);
    let wide = ok(&[
        "resolve",
        "-f",
        NAT,
        "--node",
        "factory-gw-1",
        "--fail-on",
        "none",
        "-o",
        "wide",
    ]);
    // ECMP next hops: counted in the narrow table, every one in the wide table.
    assert!(narrow.contains("edge-1 +1"), "{narrow}");
    assert!(
        wide.contains("edge-1,edge-2") && !wide.contains("edge-1 +1"),
        "{wide}"
    );
    // The fabric's bound: on its own line, or on the node's line.
    assert!(
        narrow.contains("\n  fabric bound by GatewayPoolPeering/factory-edge spec.tunnelMTU\n"),
        "{narrow}"
    );
    assert!(
        wide.contains("fabric 1360 (bound by GatewayPoolPeering/factory-edge spec.tunnelMTU)  mss"),
        "{wide}"
    );
    // Diagnostics: one line each with the message (wide), the message below (narrow).
    let row = wide
        .lines()
        .find(|l| l.starts_with("warning   W-DEFAULT-ROUTE"))
        .expect("the warning");
    assert!(
        row.ends_with("capture the host's own traffic)") && row.contains("cluster.yaml:72"),
        "{row}"
    );
    assert!(
        narrow.contains("\n          examples/07-nat-and-unmanaged-cni/cluster.yaml:72: 0.0.0.0/0 is a default route"),
        "{narrow}"
    );
    let summary = ok(&[
        "resolve",
        "-f",
        NAT,
        "--summary",
        "--fail-on",
        "none",
        "-o",
        "wide",
    ]);
    // The rollup, then a line per node under its header.
    let node_header = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("NODE "))
            .unwrap_or("")
            .to_string()
    };
    assert!(summary.starts_with("NODES "), "{summary}");
    let header = node_header(&summary);
    assert!(header.contains("POOL") && header.contains("TO"), "{header}");
    let narrow_summary = ok(&["resolve", "-f", NAT, "--summary=nodes", "--fail-on", "none"]);
    let header = node_header(&narrow_summary);
    assert!(
        !header.contains("POOL") && header.contains("BOUND BY"),
        "{header}"
    );
    // The rollup alone has no line per node.
    let rollup = ok(&["resolve", "-f", NAT, "--summary", "--fail-on", "none"]);
    assert_eq!(node_header(&rollup), "", "{rollup}");
}

#[test]
fn no_headers_leaves_only_rows() {
    let headed = ok(&["resolve", "-f", NAT, "--fail-on", "none"]);
    let bare = ok(&["resolve", "-f", NAT, "--fail-on", "none", "--no-headers"]);
    let header_lines = |t: &str| {
        t.lines()
            .filter(|l| {
                let l = l.trim_start();
                ["LINK ", "ROUTE ", "DEVICE ", "PUBLISHES ", "SEVERITY "]
                    .iter()
                    .any(|h| l.starts_with(h))
            })
            .count()
    };
    assert!(header_lines(&headed) > 10);
    assert_eq!(header_lines(&bare), 0, "{bare}");
    // The same rows, fewer lines.
    assert_eq!(
        headed.lines().count() - header_lines(&headed),
        bare.lines().count()
    );
    let summary = ok(&[
        "resolve",
        "-f",
        NAT,
        "--summary=nodes",
        "--no-headers",
        "--fail-on",
        "none",
    ]);
    assert!(
        summary.lines().any(|l| l.starts_with("edge-1 "))
            && !summary.lines().any(|l| l.starts_with("NODE ")),
        "{summary}"
    );
    let whatif = ok(&[
        "what-if",
        "-f",
        NAT,
        "--agent-mtu",
        "1300",
        "--no-headers",
        "--fail-on",
        "none",
    ]);
    assert!(!whatif.contains("ITEM "), "{whatif}");
}

#[test]
fn graph_has_one_format_option_and_a_json_form() {
    let dot = ok(&["graph", "-f", NAT, "--fail-on", "none"]);
    assert!(dot.starts_with("graph unbounded {"));
    for spelling in [
        &["-o", "dot"][..],
        &["--output", "dot"][..],
        &["--format", "dot"][..],
    ] {
        let mut args = vec!["graph", "-f", NAT, "--fail-on", "none"];
        args.extend(spelling);
        assert_eq!(ok(&args), dot, "{spelling:?}");
    }
    // A table is not a picture: refused, not ignored.
    let (code, _, err) = run(&["graph", "-f", NAT, "-o", "table"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("dot") && err.contains("json"), "{err}");

    let v: Value = serde_json::from_str(&ok(&[
        "graph",
        "-f",
        NAT,
        "-o",
        "json",
        "--fail-on",
        "none",
    ]))
    .expect("JSON");
    assert_eq!(
        (&v["apiVersion"], &v["kind"]),
        (
            &Value::from("unbounded-mtu/v1alpha1"),
            &Value::from("Graph")
        )
    );
    let node = |id: &str| {
        v["nodes"]
            .as_array()
            .and_then(|ns| ns.iter().find(|n| n["id"] == id))
            .unwrap_or_else(|| panic!("no node {id}"))
            .clone()
    };
    let edge = |name: &str| {
        v["edges"]
            .as_array()
            .and_then(|es| es.iter().find(|e| e["name"] == name))
            .unwrap_or_else(|| panic!("no edge {name}"))
            .clone()
    };
    let edge_pool = node("GatewayPool/edge");
    assert_eq!(edge_pool["type"], "External");
    assert_eq!(
        edge_pool["members"],
        serde_json::json!(["edge-1", "edge-2"])
    );
    // The pool peering caps the transit links at 1360 and binds: the bottleneck.
    let pp = edge("factory-edge");
    assert_eq!(pp["kind"], "GatewayPoolPeering");
    assert_eq!(
        pp["members"],
        serde_json::json!(["GatewayPool/edge", "GatewayPool/factory-gw"])
    );
    assert_eq!(pp["cap"]["mtu"], 1360);
    assert_eq!(pp["lowestLink"]["mtu"], 1360);
    assert_eq!(
        pp["lowestLink"]["bindingObject"],
        "GatewayPoolPeering/factory-edge"
    );
    assert_eq!(pp["bottleneck"], true);
    let stores = edge("stores");
    assert_eq!(stores["kind"], "SiteGatewayPoolAssignment");
    assert_eq!(
        stores["members"],
        serde_json::json!(["Site/store-12", "GatewayPool/edge"])
    );
    // Routes between Sites with workers, and the diagnostics, as in every document.
    assert!(v["routes"].as_array().is_some_and(|r| !r.is_empty()));
    assert!(
        v["diagnostics"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x["code"] == "W-DEFAULT-ROUTE"))
    );
    let yaml = ok(&["graph", "-f", NAT, "-o", "yaml", "--fail-on", "none"]);
    assert!(yaml.contains("kind: Graph"), "{yaml}");
}
