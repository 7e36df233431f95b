//! Broken input never yields a believable higher MTU, through the binary as an operator runs it:
//! the exit status says when part of the input was not read as written, an unreadable cap fails
//! closed, a document that does not parse is named and located with its fix, a file named twice
//! is read once, unknown kinds and versions of the project's own group are errors, and the
//! upstream selector label is no warning. Where a broken part is read (a cap that fails closed, a
//! copy that counts once, the documents beside a broken one), the values are compared with those
//! of the same cluster written correctly: none may be higher.

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const API: &str = "apiVersion: net.unbounded-cloud.io/v1alpha1";

/// Two Sites peered with a cap of 1390 (written as `cap`), two workers in `a`, one in `b`.
fn cluster(cap: &str) -> String {
    format!(
        "{API}
kind: Site
metadata: {{name: a}}
spec: {{nodeCidrs: [10.1.0.0/16], podCidrAssignments: [{{cidrBlocks: [10.101.0.0/16]}}]}}
---
{API}
kind: Site
metadata: {{name: b}}
spec: {{nodeCidrs: [10.2.0.0/16], podCidrAssignments: [{{cidrBlocks: [10.102.0.0/16]}}]}}
---
{API}
kind: SitePeering
metadata: {{name: ab}}
spec:
  sites: [a, b]
  tunnelMTU: {cap}
---
apiVersion: v1
kind: Node
metadata: {{name: a1}}
spec: {{podCIDRs: [10.101.1.0/24]}}
status: {{addresses: [{{type: InternalIP, address: 10.1.0.1}}]}}
---
apiVersion: v1
kind: Node
metadata: {{name: a2}}
spec: {{podCIDRs: [10.101.2.0/24]}}
status: {{addresses: [{{type: InternalIP, address: 10.1.0.2}}]}}
---
apiVersion: v1
kind: Node
metadata: {{name: b1}}
spec: {{podCIDRs: [10.102.1.0/24]}}
status: {{addresses: [{{type: InternalIP, address: 10.2.0.1}}]}}
"
    )
}

/// A folder of its own for one test's files.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("fail-closed-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir");
    d
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.display().to_string()
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(args: &[&str]) -> Run {
    let o = Command::new(env!("CARGO_BIN_EXE_unbounded-mtu"))
        .args(args)
        .env_remove("KUBECONFIG")
        .output()
        .expect("run the binary");
    let r = Run {
        code: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    };
    assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    r
}

/// `resolve -o json` of `files` (plus `extra` arguments): the exit status and the document.
fn resolve(files: &[&str], extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec!["resolve", "-o", "json"];
    for f in files {
        args.extend(["-f", f]);
    }
    args.extend(extra);
    let r = run(&args);
    assert!(
        r.code == 0 || r.code == 1,
        "{args:?}: exit {}: {}",
        r.code,
        r.stderr
    );
    let doc = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    (r.code, doc, r.stderr)
}

/// Every value of a `resolve` document by what it is: `node link peer`, `node route dest kind`,
/// `node fabric`, `node device name`, `node published dest`.
fn values(doc: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for n in doc["nodes"].as_array().expect("nodes") {
        let name = n["name"].as_str().unwrap_or("?");
        out.insert(
            format!("{name} fabric"),
            n["fabricMTU"].as_u64().unwrap_or(0),
        );
        let mut put = |list: &str, key: &dyn Fn(&Value) -> String| {
            for v in n[list].as_array().into_iter().flatten() {
                out.insert(format!("{name} {}", key(v)), v["mtu"].as_u64().unwrap_or(0));
            }
        };
        put("links", &|l| format!("link {}", l["peer"]));
        put("routes", &|r| {
            format!("route {} {}", r["destination"], r["kind"])
        });
        put("devices", &|d| {
            format!("device {} {}", d["name"], d["peer"])
        });
        put("published", &|p| format!("published {}", p["destination"]));
    }
    out
}

/// No value of `broken` is higher than the same value of `good`.
fn none_higher(good: &Value, broken: &Value) {
    let good = values(good);
    for (k, v) in values(broken) {
        if let Some(g) = good.get(&k) {
            assert!(
                v <= *g,
                "{k}: {v} with the broken input, {g} as written correctly"
            );
        }
    }
}

fn diagnostic<'a>(doc: &'a Value, code: &str, object: &str) -> &'a Value {
    doc["diagnostics"]
        .as_array()
        .and_then(|ds| {
            ds.iter()
                .find(|d| d["code"] == code && d["object"] == object)
        })
        .unwrap_or_else(|| panic!("no {code} on {object}: {:#}", doc["diagnostics"]))
}

fn link(doc: &Value, node: &str, peer: &str) -> Option<u64> {
    doc["nodes"]
        .as_array()?
        .iter()
        .find(|n| n["name"] == node)?["links"]
        .as_array()?
        .iter()
        .find(|l| l["peer"] == peer)?["mtu"]
        .as_u64()
}

/// Item 1: an error fails every offline command (exit 1, the result printed in full);
/// `--fail-on none` prints the same and exits 0.
#[test]
fn errors_fail_every_command_and_the_result_is_still_printed() {
    let d = dir("exit");
    let f = write(&d, "c.yaml", &cluster("100"));
    let (code, doc, err) = resolve(&[&f], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("at or above --fail-on error"), "{err}");
    assert_eq!(doc["nodes"].as_array().map(Vec::len), Some(3));
    let (code, same, _) = resolve(&[&f], &["--fail-on", "none"]);
    assert_eq!(code, 0);
    assert_eq!(doc, same);
    for args in [
        &["explain", "-f", &f, "--node", "a1"][..],
        &["what-if", "-f", &f, "--set", "SitePeering/ab=1300"][..],
        &["graph", "-f", &f][..],
    ] {
        let r = run(args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        assert!(!r.stdout.is_empty(), "{args:?} printed nothing");
        let mut quiet = args.to_vec();
        quiet.extend(["--fail-on", "none"]);
        let q = run(&quiet);
        assert_eq!((q.code, &q.stdout), (0, &r.stdout), "{quiet:?}");
    }
}

/// Item 1: an input that names nodes of which none resolves is refused (exit 2) with how many
/// and why, not printed as a healthy empty cluster.
#[test]
fn nodes_of_which_none_resolves_are_refused_with_the_reason() {
    let d = dir("none");
    let text = cluster("1390")
        .replace("address: 10.1.0.", "address: 10.9.0.")
        .replace("address: 10.2.0.", "address: 10.8.0.");
    let f = write(&d, "c.yaml", &text);
    for cmd in ["resolve", "graph"] {
        let r = run(&[cmd, "-f", &f]);
        assert_eq!(r.code, 2, "{cmd}: {}", r.stderr);
        assert!(r.stdout.is_empty(), "{cmd}: {}", r.stdout);
        assert!(
            r.stderr
                .contains("3 Nodes, none in a Site (the first: Node/a1 at ")
                && r.stderr.trim_end().ends_with(": see W-NO-SITE"),
            "{cmd}: {}",
            r.stderr
        );
    }
    // No Site at all.
    let only_nodes: String = text
        .split("---\n")
        .filter(|doc| doc.contains("kind: Node"))
        .collect::<Vec<_>>()
        .join("---\n");
    let f = write(&d, "nodes.yaml", &only_nodes);
    let r = run(&["resolve", "-f", &f]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("3 Nodes and no Site"), "{}", r.stderr);
}

/// Item 2: a `tunnelMTU` of the wrong type is E-FIELD-TYPE and fails closed (576), with a
/// message that says an API server would refuse it and how to write it.
#[test]
fn a_cap_of_the_wrong_type_fails_closed() {
    let d = dir("cap");
    let good = write(&d, "good.yaml", &cluster("1390"));
    let (code, good_doc, _) = resolve(&[&good], &[]);
    assert_eq!(code, 0);
    assert_eq!(link(&good_doc, "a1", "b1"), Some(1390));
    for (written, fix) in [
        ("\"1390\"", "write it unquoted: tunnelMTU: 1390"),
        ("[1390]", "e.g. tunnelMTU: 1400"),
        ("{value: 1390}", "e.g. tunnelMTU: 1400"),
        ("1390.5", "e.g. tunnelMTU: 1400"),
    ] {
        let f = write(&d, "broken.yaml", &cluster(written));
        let (code, doc, _) = resolve(&[&f], &[]);
        assert_eq!(code, 1, "{written}");
        let diag = diagnostic(&doc, "E-FIELD-TYPE", "SitePeering/ab");
        assert_eq!(diag["field"], "spec.tunnelMTU");
        let msg = diag["message"].as_str().unwrap_or("");
        assert!(
            msg.contains("an API server would refuse this object")
                && msg.contains(fix)
                && msg.contains("counts as 576"),
            "{written}: {msg}"
        );
        assert_eq!(link(&doc, "a1", "b1"), Some(576), "{written}");
        none_higher(&good_doc, &doc);
    }
}

/// Item 3: a document that does not parse is named (a lenient scan finds its kind and name),
/// located at the exact line and column of the problem, and given the fix.
#[test]
fn a_broken_document_is_named_located_and_explained() {
    let d = dir("tab");
    // Enough objects and comments before it that the tab sits on line 113 of the file.
    let mut text = cluster("1390");
    let mut i = 0;
    while text.lines().count() + 5 <= 105 {
        i += 1;
        text.push_str(&format!(
            "---\n{API}\nkind: Site\nmetadata: {{name: pad{i}}}\nspec: {{nodeCidrs: [10.200.{i}.0/24]}}\n"
        ));
    }
    while text.lines().count() < 105 {
        text.push_str("# a comment\n");
    }
    let before = text.lines().count();
    text.push_str("---\napiVersion: v1\nkind: Node\nmetadata:\n  name: a9\n  labels:\n    x: y\n");
    let tab_line = text.lines().count() + 1;
    text.push_str("\tnet.unbounded-cloud.io/site: a\nstatus: {addresses: [{type: InternalIP, address: 10.1.0.9}]}\n");
    assert!(
        before < 113 && tab_line == 113,
        "the tab is on line {tab_line}"
    );
    let f = write(&d, "c.yaml", &text);
    let (code, doc, _) = resolve(&[&f], &[]);
    assert_eq!(code, 1);
    let diag = diagnostic(&doc, "E-DECODE", "Node/a9");
    assert_eq!(diag["source"], format!("{f}:113:1"));
    assert!(
        diag["message"].as_str().is_some_and(
            |m| m.ends_with("YAML does not allow tabs for indentation: indent with spaces")
        ),
        "{diag}"
    );
    // The other documents still count, as written.
    let (_, good, _) = resolve(&[&write(&d, "good.yaml", &cluster("1390"))], &[]);
    none_higher(&good, &doc);
    assert_eq!(link(&doc, "a1", "b1"), Some(1390));
}

/// Item 4: a file named twice, or inside a directory also named, is read once; identical copies
/// of an object in two files are one object with a note; copies that differ are E-DUPLICATE and
/// no value rises.
#[test]
fn duplicates_are_read_once_or_refused() {
    let d = dir("dup");
    let f = write(&d, "c.yaml", &cluster("1390"));
    let dir_arg = d.display().to_string();
    let (code, once, _) = resolve(&[&f], &["--fail-on", "warning"]);
    assert_eq!(code, 0);
    for twice in [
        &[&f[..], &f[..]][..],
        &[&dir_arg[..], &f[..]][..],
        &[&f[..], &dir_arg[..]][..],
    ] {
        let (code, doc, err) = resolve(twice, &["--fail-on", "warning"]);
        assert_eq!(code, 0, "{twice:?}: {err}");
        assert_eq!(doc, once, "{twice:?}");
    }
    // The peering exported again in a second file, as a List item: one object and a note.
    let other = dir("dup-other");
    let copy = write(
        &other,
        "peering.yaml",
        &format!(
            "apiVersion: v1\nkind: List\nitems:\n- {API}\n  kind: SitePeering\n  metadata:\n    name: ab\n  spec:\n    sites:\n    - a\n    - b\n    tunnelMTU: 1390\n"
        ),
    );
    let (code, doc, _) = resolve(&[&f, &copy], &[]);
    assert_eq!(code, 0);
    let note = diagnostic(&doc, "N-DUPLICATE-IDENTICAL", "SitePeering/ab");
    assert_eq!(note["severity"], "note");
    assert_eq!(values(&doc), values(&once));
    // A copy that says something else: every copy is ignored (the result must not depend on
    // which file came first) and the error fails the command.
    let differs = write(
        &other,
        "peering.yaml",
        &std::fs::read_to_string(&copy)
            .expect("read")
            .replace("1390", "1300"),
    );
    let (code, doc, err) = resolve(&[&f, &differs], &[]);
    assert_eq!(code, 1, "{err}");
    let dup = diagnostic(&doc, "E-DUPLICATE", "SitePeering/ab");
    assert!(
        dup["message"]
            .as_str()
            .is_some_and(|m| m.contains("every copy is ignored")),
        "{dup}"
    );
    let (_, backwards, _) = resolve(&[&differs, &f], &[]);
    assert_eq!(values(&doc), values(&backwards));
}

/// Item 5: an unknown kind or version of the project's own API group is an error naming the
/// nearest kind; the object is skipped. Other groups' kinds stay notes.
#[test]
fn unknown_kinds_and_versions_of_the_own_group_are_errors() {
    let d = dir("kinds");
    let f = write(&d, "c.yaml", &cluster("1390"));
    let extra = write(
        &d,
        "extra.yaml",
        &format!(
            "{API}\nkind: GatewayPoolPeerin\nmetadata: {{name: pp}}\nspec: {{gatewayPools: [x, y]}}\n---\napiVersion: net.unbounded-cloud.io/v1beta1\nkind: SitePeering\nmetadata: {{name: ab2}}\nspec: {{sites: [a, b], tunnelMTU: 1300}}\n"
        ),
    );
    let (code, doc, _) = resolve(&[&f, &extra], &[]);
    assert_eq!(code, 1);
    let kind = diagnostic(&doc, "E-UNKNOWN-KIND", "GatewayPoolPeerin/pp");
    assert_eq!(kind["severity"], "error");
    assert!(
        kind["message"]
            .as_str()
            .is_some_and(|m| m.contains("did you mean GatewayPoolPeering?")),
        "{kind}"
    );
    let version = diagnostic(&doc, "E-UNKNOWN-VERSION", "SitePeering/ab2");
    assert_eq!(version["field"], "apiVersion");
    assert!(
        version["message"]
            .as_str()
            .is_some_and(|m| m.contains("v1beta1") && m.contains("net.unbounded-cloud.io/v1alpha1")),
        "{version}"
    );
    // Skipped: its cap of 1300 bounds nothing.
    assert_eq!(link(&doc, "a1", "b1"), Some(1390));
    let foreign = write(
        &d,
        "extra.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
    );
    let (code, doc, _) = resolve(&[&f, &foreign], &[]);
    assert_eq!(code, 0);
    assert_eq!(
        diagnostic(&doc, "N-UNKNOWN-KIND", "Widget/w")["severity"],
        "note"
    );
}

/// Item 6: upstream's gateways carry `gateway-pool: "true"`, the label their pool's
/// `nodeSelector` asks for: a selector label, no warning, so `--fail-on warning` can be used on
/// a healthy upstream cluster; a value no selector asks for still warns.
#[test]
fn the_upstream_selector_label_raises_no_warning() {
    let d = dir("label");
    let text = format!(
        "{}---\n{API}\nkind: GatewayPool\nmetadata: {{name: gw}}\nspec:\n  type: External\n  nodeSelector:\n    net.unbounded-cloud.io/gateway-pool: \"true\"\nstatus:\n  nodes: [{{name: g1, siteName: a}}]\n---\n{API}\nkind: SiteGatewayPoolAssignment\nmetadata: {{name: a-gw}}\nspec: {{sites: [a], gatewayPools: [gw]}}\n---\napiVersion: v1\nkind: Node\nmetadata:\n  name: g1\n  labels: {{net.unbounded-cloud.io/site: a, net.unbounded-cloud.io/gateway-pool: \"true\"}}\nstatus: {{addresses: [{{type: InternalIP, address: 10.1.0.50}}, {{type: ExternalIP, address: 203.0.113.50}}]}}\n",
        cluster("1390")
    );
    let f = write(&d, "c.yaml", &text);
    let (code, doc, err) = resolve(&[&f], &["--fail-on", "warning"]);
    assert_eq!(code, 0, "{err}: {:#}", doc["diagnostics"]);
    let g1 = doc["nodes"]
        .as_array()
        .and_then(|ns| ns.iter().find(|n| n["name"] == "g1"))
        .expect("g1");
    assert_eq!(
        (&g1["role"], &g1["pool"]),
        (&Value::from("gateway"), &Value::from("gw"))
    );
    let misspelt = write(
        &d,
        "c.yaml",
        &text.replace("gateway-pool: \"true\"}", "gateway-pool: \"yes\"}"),
    );
    let (code, doc, _) = resolve(&[&misspelt], &["--fail-on", "warning"]);
    assert_eq!(code, 1);
    diagnostic(&doc, "W-MISSING-POOL", "Node/g1");
}
