//! The offline commands as an operator meets them (issue "The front door an operator expects"):
//! honest about their input, errors that name what exists, every JSON document typed, summaries,
//! version, completions and the manual page. Each test runs the real binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn run_with(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_unbounded-mtu"));
    cmd.current_dir(root())
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    if let Some(bytes) = stdin
        && let Some(mut i) = child.stdin.take()
    {
        // A command that refuses its arguments exits without reading its input.
        if let Err(e) = i.write_all(bytes) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "stdin: {e}");
        }
    }
    child.wait_with_output().expect("wait")
}

fn run(args: &[&str]) -> (i32, String, String) {
    let o = run_with(args, None);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
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

fn json(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = run(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}\n{out}"))
}

const NAT: &str = "examples/07-nat-and-unmanaged-cni";

#[test]
fn explain_and_what_if_show_their_diagnostics_and_honour_fail_on() {
    // Table: a block after the answer.
    let (code, out, _) = run(&["explain", "-f", NAT, "--node", "edge-1", "--peer", "hub-w1"]);
    assert_eq!(code, 0);
    assert!(out.contains("W-DEFAULT-ROUTE"), "{out}");
    // The upstream selector label (`gateway-pool: "true"`, asked for by the pool's selector) is
    // no missing pool.
    assert!(!out.contains("W-MISSING-POOL"), "{out}");
    let (code, out, _) = run(&[
        "what-if",
        "-f",
        NAT,
        "--set",
        "SiteGatewayPoolAssignment/stores=1300",
    ]);
    assert_eq!(code, 0);
    assert!(out.contains("W-DEFAULT-ROUTE"), "{out}");
    // JSON: a `diagnostics` list.
    for args in [
        &["explain", "-f", NAT, "--node", "edge-1", "-o", "json"][..],
        &["what-if", "-f", NAT, "--agent-mtu", "1300", "-o", "json"][..],
    ] {
        let v = json(args);
        let codes: Vec<&str> = v["diagnostics"]
            .as_array()
            .expect("diagnostics")
            .iter()
            .filter_map(|d| d["code"].as_str())
            .collect();
        assert_eq!(codes, ["W-DEFAULT-ROUTE", "N-SKIPPED-FILE"], "{args:?}");
    }
    // --fail-on warning: exit 1 on input with warnings, 0 where there are none.
    for args in [
        &[
            "explain",
            "-f",
            NAT,
            "--node",
            "edge-1",
            "--fail-on",
            "warning",
        ][..],
        &[
            "what-if",
            "-f",
            NAT,
            "--agent-mtu",
            "1300",
            "--fail-on",
            "warning",
        ][..],
        &["resolve", "-f", NAT, "--fail-on", "warning"][..],
    ] {
        let (code, _, err) = run(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains("1 diagnostic at or above --fail-on warning"),
            "{err}"
        );
    }
    let (code, _, _) = run(&[
        "what-if",
        "-f",
        "examples/03-hub-and-spoke",
        "--agent-mtu",
        "1300",
        "--fail-on",
        "warning",
    ]);
    assert_eq!(code, 0);
}

/// `graph` keeps standard output a DOT document: its input's diagnostics follow on standard
/// error, and `--fail-on` applies.
#[test]
fn graph_shows_its_diagnostics_and_honours_fail_on() {
    let (code, out, err) = run(&["graph", "-f", NAT]);
    assert_eq!(code, 0);
    assert!(
        out.trim_start().starts_with("graph") && !out.contains("W-DEFAULT-ROUTE"),
        "{out}"
    );
    assert!(err.contains("W-DEFAULT-ROUTE"), "{err}");
    let (code, _, err) = run(&["graph", "-f", NAT, "--fail-on", "warning"]);
    assert_eq!(code, 1, "{err}");
    let (code, _, _) = run(&[
        "graph",
        "-f",
        "examples/03-hub-and-spoke",
        "--fail-on",
        "warning",
    ]);
    assert_eq!(code, 0);
}

#[test]
fn what_if_validates_its_question() {
    let hub = "examples/03-hub-and-spoke";
    refused(
        &[
            "what-if",
            "-f",
            hub,
            "--set",
            "SiteGatewayPoolAssignment/spokes=99999",
        ],
        &[
            "--set SiteGatewayPoolAssignment/spokes=99999",
            "outside 576..9000",
        ],
    );
    refused(
        &["what-if", "-f", hub, "--demote", "a1"],
        &["--demote a1", "not a gateway"],
    );
    refused(
        &["what-if", "-f", hub, "--promote", "a1=PX"],
        &[
            "--promote a1=PX",
            "GatewayPool PX does not exist",
            "did you mean PH",
        ],
    );
    refused(
        &["what-if", "-f", hub, "--set", "SitePeering/nope=1300"],
        &[
            "--set SitePeering/nope=1300",
            "SitePeering nope does not exist",
        ],
    );
    refused(
        &[
            "what-if",
            "-f",
            hub,
            "--disable",
            "SiteGatewayPoolAssignment/spoke",
        ],
        &["--disable", "did you mean spokes"],
    );
    refused(
        &[
            "what-if",
            "-f",
            hub,
            "--add-member",
            "SiteGatewayPoolAssignment/spokes=Site/Q",
        ],
        &["--add-member", "Site Q does not exist"],
    );
    refused(
        &["what-if", "-f", hub, "--underlay", "h9=1400"],
        &["--underlay h9=1400", "node h9 does not exist"],
    );
}

#[test]
fn explain_refuses_a_peer_that_is_not_linked() {
    // What is asked of node wa, and what the refusal says.
    for (question, want) in [
        (
            ["--peer", "gc"],
            &["--peer gc", "no link", "its peers: ga"][..],
        ),
        (
            ["--destination", "192.0.2.1"],
            &["has no route to 192.0.2.1"][..],
        ),
    ] {
        let mut args = vec!["explain", "-f", "examples/04-transit-chain", "--node", "wa"];
        args.extend(question);
        refused(&args, want);
    }
}

#[test]
fn probe_refuses_what_it_cannot_probe_before_sending_anything() {
    let base = ["probe", "-f", "examples/04-transit-chain"];
    let with = |extra: &[&'static str]| {
        let mut a = base.to_vec();
        a.extend_from_slice(extra);
        a
    };
    refused(&with(&["--node", "wx"]), &["wx", "wa"]);
    refused(
        &with(&["--node", "wa", "--peer", "gc"]),
        &["--peer gc", "no link", "its peers: ga"],
    );
    let (code, _, err) = run(&with(&["--node", "wa", "--fail-on", "black-holes"]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("black-hole"),
        "the valid values are listed: {err}"
    );
    let (code, _, err) = run(&with(&["--node", "wa", "--probe-timeout", "300"]));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("has no unit"), "{err}");
    // This host holds none of wa's addresses (the example's 10.1.0.1), and no --netns says
    // where wa is: probing from here would measure another host's paths.
    refused(
        &with(&["--node", "wa"]),
        &["this host is not wa (no local address 10.1.0.1): run on wa, or pass --netns"],
    );
}

#[test]
fn errors_name_what_exists_once() {
    refused(
        &["resolve", "-f", "examples/04-transit-chain", "--node", "wx"],
        &["node wx does not exist", "did you mean wa, wc?"],
    );
    refused(
        &["explain", "-f", "examples/04-transit-chain", "--node", "gx"],
        &["node gx does not exist", "did you mean"],
    );
    // A missing file's cause, printed once.
    for missing in [
        ["-f", "no/such/file.yaml"],
        ["--kubeconfig", "/no/such/kubeconfig"],
    ] {
        let (code, _, err) = run(&["resolve", missing[0], missing[1]]);
        assert_eq!(code, 2, "{missing:?}: {err}");
        assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    }
    refused(
        &["resolve"],
        &["give -f PATH, --kubeconfig or --in-cluster"],
    );
}

#[test]
fn standard_input_is_read_once() {
    let yaml = std::fs::read(root().join("examples/01-single-site/cluster.yaml")).expect("yaml");
    let o = run_with(&["resolve", "-f", "-", "-f", "-"], Some(&yaml));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("standard input (-) is named 2 times"));
    let o = run_with(&["what-if", "-f", "-", "--after", "-"], Some(&yaml));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("can be read once"));
    let o = run_with(&["resolve", "-f", "-", "-o", "json"], Some(&yaml));
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn directory_extensions_in_any_letter_case_and_what_is_skipped() {
    let dir = std::env::temp_dir().join(format!("unbounded-mtu-case-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::copy(
        root().join("examples/01-single-site/cluster.yaml"),
        dir.join("CLUSTER.YAML"),
    )
    .expect("copy");
    std::fs::write(dir.join("notes.txt"), "not a manifest").expect("write");
    let v = json(&["resolve", "-f", &dir.display().to_string(), "-o", "json"]);
    assert_eq!(v["nodes"].as_array().map(Vec::len), Some(3), "{v}");
    // What the walk skipped is reported, as a note naming the files.
    let skipped: Vec<&serde_json::Value> = v["diagnostics"]
        .as_array()
        .expect("diagnostics")
        .iter()
        .filter(|d| d["code"] == "N-SKIPPED-FILE")
        .collect();
    assert_eq!(skipped.len(), 1, "{v}");
    assert_eq!(skipped[0]["severity"], "note");
    assert!(
        skipped[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("notes.txt"))
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn every_json_document_is_typed_and_its_bound_term_structured() {
    let hub = "examples/03-hub-and-spoke";
    for (args, kind) in [
        (&["resolve", "-f", hub, "-o", "json"][..], "Resolution"),
        (
            &["resolve", "-f", hub, "--summary", "-o", "json"][..],
            "ResolutionSummary",
        ),
        (
            &["explain", "-f", hub, "--node", "a1", "-o", "json"][..],
            "Explanation",
        ),
        (
            &[
                "what-if",
                "-f",
                hub,
                "--set",
                "SiteGatewayPoolAssignment/spokes=1300",
                "-o",
                "json",
            ][..],
            "WhatIf",
        ),
    ] {
        let v = json(args);
        assert_eq!(v["apiVersion"], "unbounded-mtu/v1alpha1", "{args:?}");
        assert_eq!(v["kind"], kind, "{args:?}");
    }
    // The assignment cap binds a1's uplinks: object, field, value and, in explain, where.
    let v = json(&["resolve", "-f", hub, "--node", "a1", "-o", "json"]);
    let bound = &v["nodes"][0]["links"][0]["explanation"]["bound"];
    assert_eq!(
        bound["object"], "SiteGatewayPoolAssignment/spokes",
        "{bound}"
    );
    assert_eq!(bound["field"], "spec.tunnelMTU");
    assert_eq!(bound["value"], 1380);
    assert!(
        bound.get("location").is_none(),
        "resolve output is location-free: {bound}"
    );
    let v = json(&[
        "explain", "-f", hub, "--node", "a1", "--peer", "h1", "-o", "json",
    ]);
    let bound = &v["values"][0]["bound"];
    assert_eq!(
        bound["object"], "SiteGatewayPoolAssignment/spokes",
        "{bound}"
    );
    let loc = bound["location"].as_str().expect("location");
    assert!(
        loc.starts_with("examples/03-hub-and-spoke/cluster.yaml:"),
        "{loc}"
    );
    // An underlay annotation names the Node and the annotation.
    let v = json(&["resolve", "-f", NAT, "--node", "edge-1", "-o", "json"]);
    let link = v["nodes"][0]["links"]
        .as_array()
        .expect("links")
        .iter()
        .find(|l| l["peer"] == "store-12-b")
        .expect("link");
    assert_eq!(link["explanation"]["bound"]["object"], "Node/store-12-b");
    assert_eq!(
        link["explanation"]["bound"]["field"],
        "metadata.annotations.mtu.unbounded-cloud.io/underlay-mtu"
    );
}

#[test]
fn resolve_summary_nodes_is_one_line_per_node() {
    // Wide: the rollup, then a line per node with the pool and the lowest route's destination.
    let (code, out, _) = run(&["resolve", "-f", NAT, "--summary", "-o", "wide"]);
    assert_eq!(code, 0);
    let lines: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("NODE "))
        .collect();
    assert!(!lines.is_empty(), "{out}");
    assert_eq!(
        lines.iter().filter(|l| l.starts_with("store-12-")).count(),
        2
    );
    let edge = lines
        .iter()
        .find(|l| l.starts_with("edge-1 "))
        .expect("edge-1");
    for w in [
        "hub",
        "gateway",
        "edge",
        "1320",
        "auto",
        "10.112.2.0/24",
        "5",
    ] {
        assert!(
            edge.split_whitespace().any(|c| c == w),
            "{edge:?} lacks {w}"
        );
    }
    let v = json(&["resolve", "-f", NAT, "--summary=nodes", "-o", "json"]);
    let n = &v["nodes"][0];
    assert_eq!(n["name"], "edge-1");
    assert_eq!(n["fabricMTU"], 1320);
    assert_eq!(n["fabricBound"], "auto");
    assert_eq!(n["lowestRouteMTU"], 1320);
    assert_eq!(n["lowestRouteDestination"], "10.112.2.0/24");
    assert_eq!(n["links"], 5);
}

#[test]
fn version_completions_and_manual_page() {
    let (code, out, _) = run(&["--version"]);
    assert_eq!(code, 0);
    assert!(out.contains(env!("CARGO_PKG_VERSION")), "{out}");
    assert!(out.contains("commit: ") && out.contains("built: "), "{out}");
    let (_, short, _) = run(&["-V"]);
    assert!(
        short.contains("(commit ") && short.contains(", built "),
        "{short}"
    );
    for shell in ["bash", "zsh", "fish"] {
        let (code, out, err) = run(&["completion", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        for word in ["resolve", "what-if", "fail-on"] {
            assert!(out.contains(word), "{shell} completion lacks {word}");
        }
    }
    let (code, out, _) = run(&["man"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with(".ie") || out.contains(".TH unbounded-mtu"),
        "{}",
        &out[..200.min(out.len())]
    );
    assert!(out.contains("what\\-if") || out.contains("what-if"));
}

/// What-if mutations apply in command-line order, whatever flags they use (clap records each
/// value's position): a cap set then cleared is gone, cleared then set is there.
#[test]
fn what_if_mutations_apply_in_command_line_order() {
    let hub = "examples/03-hub-and-spoke";
    let a = "SiteGatewayPoolAssignment/spokes";
    let set_then_clear = json(&[
        "what-if",
        "-f",
        hub,
        "--set",
        &format!("{a}=1300"),
        "--clear",
        a,
        "-o",
        "json",
    ]);
    let clear_then_set = json(&[
        "what-if",
        "-f",
        hub,
        "--clear",
        a,
        "--set",
        &format!("{a}=1300"),
        "-o",
        "json",
    ]);
    let after = |v: &serde_json::Value| v["changes"][0]["after"].as_u64();
    assert_eq!(after(&set_then_clear), Some(1420), "{set_then_clear}");
    assert_eq!(after(&clear_then_set), Some(1300), "{clear_then_set}");
}
