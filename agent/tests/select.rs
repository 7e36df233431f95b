//! Node selection, the same on `resolve`, `explain`, `what-if` and `graph`: `--site`, `--pool`,
//! `-l/--selector` (kubectl's label selectors) and `--node`, each repeatable (or comma-separated,
//! but for `-l`), the values of one flag alternatives, flags of different kinds combined with
//! AND. Each test runs the real binary on the shipped examples.

mod cli;

use cli::{json, run};

use serde_json::Value;

/// Workers wa (Site A) and wc (C); gateways ga (Site SA, pool PA, label pool=pa), gb (SB, PB,
/// pool=pb) and gc (SC, PC, pool=pc).
const CHAIN: &str = "examples/04-transit-chain";
/// Gateways edge-1 and edge-2 carry `net.unbounded-cloud.io/gateway-pool: "true"`.
const NAT: &str = "examples/07-nat-and-unmanaged-cni";

fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    base.iter().chain(extra).copied().collect()
}

/// The `name` of each entry of `list`.
fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("a list: {list}"))
        .iter()
        .map(|n| n["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// Input, selection flags, the nodes `resolve` resolves (in name order).
const RESOLVED: &[(&str, &[&str], &[&str])] = &[
    (CHAIN, &[], &["ga", "gb", "gc", "wa", "wc"]),
    (CHAIN, &["--site", "A"], &["wa"]),
    (CHAIN, &["--site", "A", "--site", "C"], &["wa", "wc"]),
    (CHAIN, &["--site", "C,A"], &["wa", "wc"]),
    (CHAIN, &["--pool", "PA,PB"], &["ga", "gb"]),
    (CHAIN, &["--pool", "PC", "--pool", "PA"], &["ga", "gc"]),
    (CHAIN, &["--site", "SA,SB", "--pool", "PB"], &["gb"]),
    (CHAIN, &["-l", "pool=pa"], &["ga"]),
    (CHAIN, &["--selector", "pool==pc"], &["gc"]),
    (CHAIN, &["-l", "pool!=pb"], &["ga", "gc", "wa", "wc"]),
    (CHAIN, &["-l", "pool in (pa, pc)"], &["ga", "gc"]),
    (CHAIN, &["-l", "pool notin (pa)"], &["gb", "gc", "wa", "wc"]),
    (CHAIN, &["-l", "pool"], &["ga", "gb", "gc"]),
    (CHAIN, &["-l", "!pool"], &["wa", "wc"]),
    (CHAIN, &["-l", "pool=pa", "-l", "pool=pb"], &["ga", "gb"]),
    (CHAIN, &["-l", "pool,pool!=pb"], &["ga", "gc"]),
    (CHAIN, &["--node", "wa", "--node", "gb"], &["gb", "wa"]),
    (CHAIN, &["--node", "wa,gb,wa"], &["gb", "wa"]),
    (CHAIN, &["--node", "wa,gb", "-l", "pool"], &["gb"]),
    (
        CHAIN,
        &["--site", "A,SA", "-l", "!pool", "--node", "wa,wc"],
        &["wa"],
    ),
    (
        NAT,
        &["-l", "net.unbounded-cloud.io/gateway-pool=true"],
        &["edge-1", "edge-2"],
    ),
];

#[test]
fn resolve_resolves_the_selected_nodes() {
    for (input, select, want) in RESOLVED {
        let base = ["resolve", "-f", input, "--fail-on", "none", "-o", "json"];
        let full = json(&with(&base, select));
        assert_eq!(names(&full["nodes"]), *want, "{select:?}");
        let summary = json(&with(&with(&base, &["--summary=nodes"]), select));
        assert_eq!(
            names(&summary["nodes"]),
            *want,
            "{select:?} --summary=nodes"
        );
        assert_eq!(
            summary["counts"]["nodes"],
            want.len(),
            "{select:?} --summary"
        );
    }
}

/// Selection changes which nodes are printed, never what is printed of a node.
#[test]
fn a_selected_node_reads_as_when_named() {
    let base = ["resolve", "-f", CHAIN, "-o", "json"];
    let named = json(&with(&base, &["--node", "gb"]));
    for select in [&["--pool", "PB"][..], &["-l", "pool=pb"], &["--site", "SB"]] {
        assert_eq!(json(&with(&base, select)), named, "{select:?}");
    }
}

#[test]
fn explain_takes_the_one_node_selected() {
    let base = ["explain", "-f", CHAIN, "-o", "json"];
    let named = json(&with(&base, &["--node", "gb"]));
    assert_eq!(named["node"], "gb");
    for select in [
        &["--pool", "PB"][..],
        &["-l", "pool=pb"],
        &["--site", "SB"],
        &["--site", "SA,SB", "-l", "pool notin (pa)"],
    ] {
        assert_eq!(json(&with(&base, select)), named, "{select:?}");
    }
    // --node still names the node alone, with --peer.
    let (code, out, err) = run(&[
        "explain", "-f", CHAIN, "-l", "!pool", "--site", "A", "--peer", "ga",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("wa in Site A"), "{out}");
}

#[test]
fn what_if_prints_the_changes_of_the_selected_nodes() {
    let base = [
        "what-if",
        "-f",
        CHAIN,
        "--set",
        "GatewayPoolPeering/pb-pc=1300",
        "-o",
        "json",
    ];
    let all = json(&base);
    let changes = |v: &Value| v["changes"].as_array().cloned().unwrap_or_default();
    for (select, nodes) in [
        (&["--pool", "PB"][..], &["gb"][..]),
        (&["-l", "!pool"], &["wa", "wc"]),
        (&["--node", "gc,wa"], &["gc", "wa"]),
    ] {
        let some = json(&with(&base, select));
        let want: Vec<Value> = changes(&all)
            .into_iter()
            .filter(|c| nodes.iter().any(|n| c["node"] == *n))
            .collect();
        assert!(
            !want.is_empty(),
            "{select:?}: the whole answer changes {nodes:?}"
        );
        assert_eq!(changes(&some), want, "{select:?}");
        assert_eq!(some["summary"]["nodesAffected"], nodes.len(), "{select:?}");
        assert_eq!(some["summary"]["valuesChanged"], want.len(), "{select:?}");
    }
}

/// Graph draws the Sites of the selected nodes, the pools assigned to them or running gateways
/// there (and the pools of selected gateways), and the relationships between what is drawn.
#[test]
fn graph_draws_the_sites_of_the_selected_nodes() {
    let ids = |v: &Value, key: &str, field: &str| -> Vec<String> {
        v[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|x| x[field].to_string().trim_matches('"').to_string())
            .collect()
    };
    let doc = json(&["graph", "-f", CHAIN, "--site", "SA,SB", "-o", "json"]);
    assert_eq!(
        ids(&doc, "nodes", "id"),
        ["Site/SA", "Site/SB", "GatewayPool/PA", "GatewayPool/PB"]
    );
    assert_eq!(ids(&doc, "edges", "name"), ["pa-pb", "null", "null"]);
    let doc = json(&["graph", "-f", CHAIN, "--node", "wa", "-o", "json"]);
    assert_eq!(ids(&doc, "nodes", "id"), ["Site/A", "GatewayPool/PA"]);
    assert_eq!(ids(&doc, "edges", "name"), ["a-pa"]);
    // The DOT form draws the same.
    let (code, dot, err) = run(&["graph", "-f", CHAIN, "-l", "!pool", "--site", "A"]);
    assert_eq!(code, 0, "{err}");
    for drawn in ["\"site:A\" [", "\"pool:PA\" [", "\"site:A\" -- \"pool:PA\""] {
        assert!(dot.contains(drawn), "{drawn} missing:\n{dot}");
    }
    for hidden in ["site:C", "site:SA", "pool:PB", "pa-pb"] {
        assert!(!dot.contains(hidden), "{hidden} drawn:\n{dot}");
    }
    // Routes between two drawn Sites only.
    let doc = json(&[
        "graph",
        "-f",
        "examples/02-mesh-peering-cap",
        "--node",
        "a1,b1",
        "-o",
        "json",
    ]);
    assert_eq!(ids(&doc, "nodes", "id"), ["Site/A", "Site/B"]);
    assert_eq!(ids(&doc, "routes", "from"), ["Site/A", "Site/B"]);
}

/// Exit 2 with one line on standard error that contains every one of `want`.
fn refused(args: &[&str], want: &[&str]) {
    let (code, out, err) = run(args);
    assert_eq!(code, 2, "{args:?}: stdout {out} stderr {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    for w in want {
        assert!(err.contains(w), "{args:?}: {err:?} lacks {w:?}");
    }
}

#[test]
fn unknown_names_and_empty_selections_exit_2_saying_what_exists() {
    let mutation = ["--agent-mtu", "1300"];
    for command in [
        vec!["resolve", "-f", CHAIN],
        vec!["explain", "-f", CHAIN],
        with(&["what-if", "-f", CHAIN], &mutation),
        vec!["graph", "-f", CHAIN],
    ] {
        for (select, want) in [
            (
                &["--site", "SX"][..],
                &["Site SX does not exist; did you mean SA, SB, SC?"][..],
            ),
            (
                &["--pool", "PA,PX"],
                &["GatewayPool PX does not exist; did you mean PA, PB, PC?"],
            ),
            (
                &["--node", "wx"],
                &["node wx does not exist", "did you mean wa, wc?"],
            ),
            (
                &["-l", "pool in pa"],
                &["--selector: label selector \"pool in pa\", column 9: expected \"(\""],
            ),
            (&["-l", "pool="], &["no node matches -l 'pool='"]),
            (
                &["--site", "A", "-l", "pool"],
                &["no node matches --site A -l 'pool'"],
            ),
        ] {
            refused(&with(&command, select), want);
        }
    }
    refused(
        &["explain", "-f", CHAIN, "-l", "pool"],
        &["-l 'pool' matches 3 nodes (ga, gb, gc); one node is needed"],
    );
    refused(
        &["explain", "-f", CHAIN],
        &["which node? Name it with --node NAME"],
    );
    refused(
        &["graph", "-f", CHAIN, "--around", "wa", "--site", "A"],
        &["--around draws one node's neighbourhood; it does not combine"],
    );
}

#[test]
fn help_says_how_selectors_combine() {
    for command in ["resolve", "explain", "what-if", "graph"] {
        let (code, out, err) = run(&[command, "--help"]);
        assert_eq!(code, 0, "{err}");
        for words in [
            "Node selection (flags of different kinds must all hold)",
            "--site <NAME>",
            "--pool <NAME>",
            "-l, --selector <SELECTOR>",
            "--node <NAME>",
            "any of them",
        ] {
            assert!(
                out.contains(words),
                "{command} --help lacks {words:?}:\n{out}"
            );
        }
        // The heading covers the four selection flags and nothing else.
        let (_, section) = out
            .split_once("Node selection")
            .unwrap_or_else(|| panic!("{command}: no selection heading"));
        let flags: Vec<&str> = section
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with('-'))
            .collect();
        assert_eq!(flags.len(), 4, "{command}: {flags:?}");
    }
}
