//! Command-level snapshot tests of `resolve`, `explain`, `graph` and `what-if` on the shipped
//! examples (run the real binary; snapshots live in `tests/snapshots/`).

mod cli;

use cli::{ok, run};

/// `explain -f examples/EXAMPLE --node NODE REST...`: its standard output (exit 0).
fn explain(example: &str, node: &str, rest: &[&str]) -> String {
    let file = format!("examples/{example}");
    let mut args = vec!["explain", "-f", &file, "--node", node];
    args.extend_from_slice(rest);
    ok(&args)
}

const EXAMPLES: [&str; 7] = [
    "01-single-site",
    "02-mesh-peering-cap",
    "03-hub-and-spoke",
    "04-transit-chain",
    "05-network-only-peering",
    "06-routed-local-published",
    "07-nat-and-unmanaged-cni",
];

#[test]
fn resolve_tables() {
    for ex in EXAMPLES {
        let out = ok(&["resolve", "-f", &format!("examples/{ex}"), "-o", "table"]);
        insta::assert_snapshot!(format!("resolve-table-{ex}"), out);
    }
}

#[test]
fn resolve_json() {
    let out = ok(&[
        "resolve",
        "-f",
        "examples/04-transit-chain",
        "-o",
        "json",
        "--node",
        "wa",
        "--node",
        "gb",
    ]);
    insta::assert_snapshot!("resolve-json-transit-chain", out);
    let full = ok(&[
        "resolve",
        "-f",
        "examples/06-routed-local-published",
        "-o",
        "json",
        "--node",
        "wa",
        "--explain",
        "full",
    ]);
    insta::assert_snapshot!("resolve-json-full-routed", full);
}

/// `explain --destination <a NAT'd worker's InternalIP>` on a gateway answers with the
/// `NodeAddress` host route over the delivery link, explained by that link.
#[test]
fn explain_node_address() {
    let out = explain(
        "07-nat-and-unmanaged-cni",
        "edge-1",
        &["--destination", "192.168.12.11", "-o", "json"],
    );
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let values = v["values"].as_array().unwrap();
    assert_eq!(values.len(), 1, "{out}");
    assert_eq!(
        values[0]["item"],
        "route 192.168.12.11/32 (NodeAddress, direct, distance 0, via store-12-b)"
    );
    assert_eq!(values[0]["value"], 1320);
    assert_eq!(values[0]["bound"]["term"], "auto");
    let out = explain(
        "07-nat-and-unmanaged-cni",
        "edge-1",
        &["--destination", "192.168.12.10", "-o", "table"],
    );
    insta::assert_snapshot!("explain-node-address", out);
}

#[test]
fn explain_text() {
    for (snapshot, example, node, question) in [
        ("explain-transit-wa", "04-transit-chain", "wa", &[][..]),
        (
            "explain-routed-destination",
            "06-routed-local-published",
            "wa",
            &["--destination", "10.103.200.7"][..],
        ),
        (
            "explain-hub-peer",
            "03-hub-and-spoke",
            "a1",
            &["--peer", "h1"][..],
        ),
    ] {
        let mut rest = question.to_vec();
        rest.extend(["-o", "table"]);
        insta::assert_snapshot!(snapshot, explain(example, node, &rest));
    }
    let out = explain("03-hub-and-spoke", "a1", &["--peer", "h1", "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for val in v["values"].as_array().unwrap() {
        // The bound term's value is the value, and no term is below it.
        assert_eq!(val["bound"]["value"], val["value"]);
        for t in val["terms"].as_array().unwrap() {
            assert!(t["value"].as_u64() >= val["value"].as_u64(), "{val}");
        }
    }
}

#[test]
fn explain_errors_exit_2() {
    // An unknown node (named on standard error), a destination without a route, one that is
    // no address.
    for (question, named) in [
        (&["--node", "nobody"][..], Some("nobody")),
        (&["--node", "wa", "--destination", "192.0.2.1"][..], None),
        (&["--node", "wa", "--destination", "bogus"][..], None),
    ] {
        let mut args = vec!["explain", "-f", "examples/04-transit-chain"];
        args.extend(question);
        let (code, _, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        if let Some(name) = named {
            assert!(err.contains(name), "{err}");
        }
    }
}

#[test]
fn graph_dot() {
    for ex in EXAMPLES {
        let out = ok(&["graph", "-f", &format!("examples/{ex}")]);
        assert!(out.starts_with("graph unbounded {"), "{out}");
        insta::assert_snapshot!(format!("graph-dot-{ex}"), out);
    }
}

fn has_graphviz() -> bool {
    std::process::Command::new("dot").arg("-V").output().is_ok()
}

#[test]
fn graph_svg_parses() {
    if !has_graphviz() {
        // Without Graphviz the command must say so and exit 2.
        let (code, _, err) = run(&[
            "graph",
            "-f",
            "examples/04-transit-chain",
            "--format",
            "svg",
        ]);
        assert_eq!(code, 2);
        assert!(err.contains("Graphviz"), "{err}");
        eprintln!("skipped the SVG parse: Graphviz (dot) is not installed");
        return;
    }
    for ex in EXAMPLES {
        let out = ok(&["graph", "-f", &format!("examples/{ex}"), "--format", "svg"]);
        let doc = svg(&out);
        assert_eq!(doc.root_element().tag_name().name(), "svg");
        let text: String = doc.descendants().filter_map(|n| n.text()).collect();
        assert!(text.contains("Site"), "{ex}: the SVG names no Site");
    }
}

fn svg(text: &str) -> roxmltree::Document<'_> {
    let opts = roxmltree::ParsingOptions {
        allow_dtd: true,
        ..Default::default()
    };
    roxmltree::Document::parse_with_options(text, opts).unwrap()
}

/// Points along the cubic Bézier segments of an SVG path as Graphviz writes edges
/// (`M x,y C x,y x,y x,y ...`).
fn path_points(d: &str) -> Vec<(f64, f64)> {
    let nums: Vec<f64> = d
        .split(|c: char| c == ',' || c == ' ' || c.is_ascii_alphabetic() && c != 'e')
        .filter(|t| !t.is_empty())
        .map(|t| t.parse().unwrap())
        .collect();
    let pts: Vec<(f64, f64)> = nums.chunks(2).map(|c| (c[0], c[1])).collect();
    let mut out = vec![pts[0]];
    for seg in pts[1..].chunks(3) {
        let [p1, p2, p3] = [seg[0], seg[1], seg[2]];
        let p0 = *out.last().unwrap();
        for k in 1..=32 {
            let t = f64::from(k) / 32.0;
            let u = 1.0 - t;
            let f = |a: f64, b: f64, c: f64, d: f64| {
                u * u * u * a + 3.0 * u * u * t * b + 3.0 * u * t * t * c + t * t * t * d
            };
            out.push((f(p0.0, p1.0, p2.0, p3.0), f(p0.1, p1.1, p2.1, p3.1)));
        }
    }
    out
}

/// The box a text covers, from its anchor point, font size and length (Helvetica averages
/// about 0.55 em per character; the box is shrunk by half a point so touching is allowed).
fn text_box(n: roxmltree::Node<'_, '_>) -> Option<(f64, f64, f64, f64, String)> {
    let text = n.text()?.to_string();
    let x: f64 = n.attribute("x")?.parse().ok()?;
    let y: f64 = n.attribute("y")?.parse().ok()?;
    let size: f64 = n.attribute("font-size")?.parse().ok()?;
    let width = 0.55 * size * text.chars().count() as f64;
    let left = match n.attribute("text-anchor") {
        Some("middle") => x - width / 2.0,
        Some("end") => x - width,
        _ => x,
    };
    Some((
        left + 0.5,
        y - 0.75 * size + 0.5,
        left + width - 0.5,
        y + 0.2 * size - 0.5,
        text,
    ))
}

#[test]
fn graph_labels_do_not_cover_edges() {
    if !has_graphviz() {
        eprintln!("skipped: Graphviz (dot) is not installed");
        return;
    }
    for ex in EXAMPLES {
        let out = ok(&["graph", "-f", &format!("examples/{ex}"), "--format", "svg"]);
        let doc = svg(&out);
        let boxes: Vec<_> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(text_box)
            .collect();
        for edge in doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("edge"))
        {
            let title = edge
                .children()
                .find(|n| n.has_tag_name("title"))
                .and_then(|n| n.text())
                .unwrap_or_default()
                .to_string();
            for path in edge.descendants().filter(|n| n.has_tag_name("path")) {
                for (x, y) in path_points(path.attribute("d").unwrap()) {
                    for (l, t, r, b, text) in &boxes {
                        assert!(
                            !(x > *l && x < *r && y > *t && y < *b),
                            "{ex}: the label {text:?} covers the edge {title} at ({x:.1}, {y:.1})"
                        );
                    }
                }
            }
        }
    }
}

/// The DOT line of the edge between `a` and `b` (either order).
fn edge_line<'a>(dot: &'a str, a: &str, b: &str) -> &'a str {
    dot.lines()
        .find(|l| {
            l.starts_with(&format!("  \"{a}\" -- \"{b}\" "))
                || l.starts_with(&format!("  \"{b}\" -- \"{a}\" "))
        })
        .unwrap_or_else(|| panic!("no edge {a} -- {b} in\n{dot}"))
}

#[test]
fn graph_connects_gateway_sites_and_names_what_binds() {
    let dot = ok(&["graph", "-f", "examples/04-transit-chain"]);
    // Each pool is joined to the Site its gateways run in, naming them.
    for (pool, site, gw) in [("PA", "SA", "ga"), ("PB", "SB", "gb"), ("PC", "SC", "gc")] {
        let l = edge_line(&dot, &format!("pool:{pool}"), &format!("site:{site}"));
        assert!(l.contains(&format!("gateway {gw}")), "{l}");
    }
    // Each relationship edge: its cap, its lowest link and the term that binds that link.
    for (a, b, want) in [
        (
            "site:A",
            "pool:PA",
            &[
                "assignment a-pa",
                "lowest link 1410",
                "bound by Site/SA cap",
            ][..],
        ),
        (
            "pool:PA",
            "pool:PB",
            &[
                "cap 1390",
                "lowest link 1390",
                "bound by GatewayPoolPeering/pa-pb cap",
            ][..],
        ),
        (
            "pool:PB",
            "pool:PC",
            &[
                "lowest link 1420",
                "bound by underlay of gb 1500 − WireGuard 80",
            ][..],
        ),
    ] {
        let l = edge_line(&dot, a, b);
        for w in want {
            assert!(l.contains(w), "{l} lacks {w:?}");
        }
    }
    // The end-to-end lowest route MTU between the Sites with workers, and its binding term.
    for pair in ["A → C", "C → A"] {
        assert!(
            dot.contains(&format!(
                "{pair}: <FONT COLOR=\"#c0392b\"><B>1390</B>, bound by GatewayPoolPeering/pa-pb cap"
            )),
            "{pair}: {dot}"
        );
    }
    // What the gateways publish for the Sites they deliver to (`resolve`'s `published`).
    assert!(dot.contains("publishes 1410 for Site A"), "{dot}");

    // Published values read from GatewayPoolNodes, and a route bound by one.
    let dot = ok(&["graph", "-f", "examples/06-routed-local-published"]);
    assert!(
        dot.contains("gb has published 1350 for 10.103.0.0/16"),
        "{dot}"
    );
    assert!(
        dot.contains("A → C: <B>1350</B>, bound by the value gb published"),
        "{dot}"
    );
}

#[test]
fn graph_counts_are_singular_or_plural() {
    for ex in EXAMPLES {
        let dot = ok(&["graph", "-f", &format!("examples/{ex}")]);
        for wrong in ["1 workers", "1 gateways", "0 workers", "0 gateways"] {
            assert!(!dot.contains(wrong), "{ex}: {wrong:?} in\n{dot}");
        }
    }
    let dot = ok(&["graph", "-f", "examples/03-hub-and-spoke"]);
    for right in ["1 worker,", "2 gateways,", "no workers,", "gateways h1, h2"] {
        assert!(dot.contains(right), "{right:?} in\n{dot}");
    }
}

#[test]
fn what_if_json_and_table() {
    let out = ok(&[
        "what-if",
        "-f",
        "examples/04-transit-chain",
        "--set",
        "GatewayPoolPeering/pa-pb=1300",
        "-o",
        "json",
    ]);
    insta::assert_snapshot!("whatif-json-transit", out);
    let out = ok(&[
        "what-if",
        "-f",
        "examples/03-hub-and-spoke",
        "--disable",
        "SiteGatewayPoolAssignment/spokes",
        "-o",
        "table",
        "--details",
    ]);
    insta::assert_snapshot!("whatif-table-disable", out);
    let (code, _, err) = run(&[
        "what-if",
        "-f",
        "examples/03-hub-and-spoke",
        "--set",
        "Site/nowhere=1300",
    ]);
    assert_eq!(code, 2, "{err}");
}

/// Without `-o`, every command prints a table, in a pipe too (`cli.md`: as kubectl does; scripts
/// ask for `-o json`).
#[test]
fn default_output_is_a_table_in_a_pipe() {
    for args in [
        &["resolve", "-f", "examples/01-single-site"][..],
        &["explain", "-f", "examples/01-single-site", "--node", "a1"][..],
        &[
            "what-if",
            "-f",
            "examples/02-mesh-peering-cap",
            "--agent-mtu",
            "1300",
        ][..],
    ] {
        let out = ok(args);
        assert!(
            !out.trim_start().starts_with('{'),
            "{args:?} printed JSON by default:\n{out}"
        );
        assert!(!out.trim().is_empty(), "{args:?} printed nothing");
    }
}
