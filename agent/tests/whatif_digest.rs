//! `what-if` digests on the shipped examples: the table shows totals and the digest by default,
//! every value with `--details` and the totals alone with `--summary`; a probed path MTU
//! (`--path`) lowers one link and the routes over it, on both ends, and nothing else
//! (`tests/whatif-digest/*.txt`: the command on the first line after `$ `, the expected standard
//! output below it); the JSON document keeps `changes` and `summary`, adds `digest`, whose
//! groups are the changes counted, and leaves `changes` out with `--summary`.

mod cli;

use cli::{ok, run};
use std::path::{Path, PathBuf};

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

fn json(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&ok(&all)).expect("a JSON document")
}

#[test]
fn tables_match_their_fixtures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/whatif-digest");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/whatif-digest")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 4, "{cases:?}");
    for case in cases {
        let text = std::fs::read_to_string(&case).expect("read the case");
        let (command, want) = text.split_once('\n').expect("a command line");
        let args: Vec<&str> = command
            .strip_prefix("$ ")
            .expect("the command after `$ `")
            .split_whitespace()
            .collect();
        let got = ok(&args);
        assert_eq!(got, want, "{}: {command}\n{got}", case.display());
    }
}

const TRANSIT: [&str; 5] = [
    "what-if",
    "-f",
    "examples/04-transit-chain",
    "--set",
    "Site/SB=1300",
];

/// The groups of a `WhatIf` document's changes, counted here: (type, before, after, binding
/// term) → (nodes, values).
fn counted(changes: &[Value]) -> BTreeMap<(String, String, String, String), (usize, usize)> {
    let mut nodes: BTreeMap<(String, String, String, String), BTreeSet<String>> = BTreeMap::new();
    let mut values: BTreeMap<(String, String, String, String), usize> = BTreeMap::new();
    for c in changes {
        let key = (
            c["item"]["type"].to_string(),
            c["before"].to_string(),
            c["after"].to_string(),
            c["explanation"]["bound"]["term"].to_string(),
        );
        let key = match c["after"] {
            Value::Null => (key.0, key.1, key.2, Value::Null.to_string()),
            _ => key,
        };
        nodes
            .entry(key.clone())
            .or_default()
            .insert(c["node"].to_string());
        *values.entry(key).or_default() += 1;
    }
    values
        .into_iter()
        .map(|(k, v)| {
            let n = nodes.get(&k).map(BTreeSet::len).unwrap_or(0);
            (k, (n, v))
        })
        .collect()
}

/// The digest's groups in the same form.
fn digested(digest: &Value) -> BTreeMap<(String, String, String, String), (usize, usize)> {
    let mut out = BTreeMap::new();
    for k in digest.as_array().expect("digest is a list") {
        for g in k["groups"].as_array().expect("groups") {
            let key = (
                k["type"].to_string(),
                g["before"].to_string(),
                g["after"].to_string(),
                g["boundBy"].to_string(),
            );
            let count = (
                g["nodesAffected"].as_u64().unwrap_or(0) as usize,
                g["valuesChanged"].as_u64().unwrap_or(0) as usize,
            );
            assert!(out.insert(key, count).is_none(), "a group twice: {g}");
        }
    }
    out
}

#[test]
fn json_digest_groups_the_changes_it_lists() {
    let questions: [&[&str]; 3] = [
        &TRANSIT,
        &[
            "what-if",
            "-f",
            "examples/03-hub-and-spoke",
            "--disable",
            "SiteGatewayPoolAssignment/spokes",
        ],
        &[
            "what-if",
            "-f",
            "examples/02-mesh-peering-cap",
            "--agent-mtu",
            "1300",
        ],
    ];
    for q in questions {
        let doc = json(q);
        let changes = doc["changes"].as_array().expect("changes listed");
        assert!(changes.len() > 1, "{q:?}: too small a question");
        assert_eq!(counted(changes), digested(&doc["digest"]), "{q:?}");
        let nodes: BTreeSet<&str> = changes.iter().filter_map(|c| c["node"].as_str()).collect();
        assert_eq!(doc["summary"]["valuesChanged"], changes.len(), "{q:?}");
        assert_eq!(doc["summary"]["nodesAffected"], nodes.len(), "{q:?}");
        // Per kind: its values are its groups' values; its kinds in digest order.
        let kinds: Vec<&str> = doc["digest"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|k| {
                let of_kind: Vec<&Value> = changes
                    .iter()
                    .filter(|c| c["item"]["type"] == k["type"])
                    .collect();
                assert_eq!(k["valuesChanged"], of_kind.len(), "{q:?} {k}");
                let nodes: BTreeSet<&str> =
                    of_kind.iter().filter_map(|c| c["node"].as_str()).collect();
                assert_eq!(k["nodesAffected"], nodes.len(), "{q:?} {k}");
                k["type"].as_str().unwrap_or("")
            })
            .collect();
        let order = ["fabric", "link", "route", "device", "published"];
        let mut sorted = kinds.clone();
        sorted.sort_by_key(|k| order.iter().position(|o| o == k));
        assert_eq!(kinds, sorted, "{q:?}");
    }
}

#[test]
fn json_summary_leaves_the_changes_out_and_keeps_the_rest() {
    let full = json(&TRANSIT);
    let mut args = TRANSIT.to_vec();
    args.push("--summary");
    let summary = json(&args);
    assert!(summary.get("changes").is_none(), "{summary}");
    for key in ["apiVersion", "kind", "summary", "digest", "diagnostics"] {
        assert_eq!(summary[key], full[key], "{key}");
    }
    assert_eq!(summary["kind"], "WhatIf");
    assert_eq!(summary["summary"]["valuesChanged"], 35);
    assert_eq!(summary["summary"]["nodesAffected"], 5);
}

#[test]
fn details_and_summary_do_not_combine() {
    let mut args = TRANSIT.to_vec();
    args.extend(["--details", "--summary"]);
    let (code, _, err) = run(&args);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--details") && err.contains("--summary"),
        "{err}"
    );
}

#[test]
fn the_digest_comes_first_and_details_add_every_value() {
    let digest = ok(&TRANSIT);
    let mut args = TRANSIT.to_vec();
    args.push("--details");
    let details = ok(&args);
    let changes = json(&TRANSIT)["changes"]
        .as_array()
        .map(Vec::len)
        .unwrap_or(0);
    // Totals and digest, then the diagnostics block after the last blank line.
    let (head, _) = digest.rsplit_once("\n\n").expect("sections");
    assert!(details.starts_with(head), "{digest}\n{details}");
    assert!(!digest.contains("NODE "), "{digest}");
    // One line per value and a header per node on top of the digest.
    let nodes = details.lines().filter(|l| l.starts_with("NODE ")).count();
    assert_eq!(
        details.lines().count(),
        digest.lines().count() + changes + 2 * nodes + 1,
        "{details}"
    );
}
