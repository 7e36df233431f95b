//! The golden scenarios in `tests/scenarios/`, through the release-shaped binary as an operator
//! runs it: `unbounded-mtu resolve -f input.yaml -o json`, each expectation of `expect.json`
//! checked against the printed document.
//!
//! A scenario folder holds `input.yaml` (the manifests), `expect.json` and, where the cluster needs
//! words, a README. `expect.json` is an object:
//!
//! - `args`: extra `resolve` arguments; `nodes`: names passed as `--node`;
//! - `expect`: a list, each item one of
//!   - `{"node": N, "fabricMTU": M}` / `{"node": N, "role": R}`;
//!   - `{"node": N, "link": P, "mtu": M}`, the lowest MTU of N's links to P, or `"absent": true`;
//!   - `{"node": N, "route": CIDR, "mtu": M}`, or `"absent": true`. Among several routes to one
//!     destination, those through gateways or transit pools are preferred over direct ones, then
//!     the lowest MTU counts: the value a packet towards CIDR meets;
//!   - `{"diagnostic": {FIELD: VALUE, ...}}`, a diagnostic whose fields all match, or
//!     `"absent": true` for none.
//!
//! The command may exit 0, or 1 when its diagnostics met the failing severity (the document is
//! printed in full either way); any other status fails the scenario. Every failed expectation of
//! every scenario is listed before the test fails.

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios")
}

/// The scenario folders, in name order.
fn scenarios() -> Vec<PathBuf> {
    let dir = scenarios_dir();
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

/// One scenario's `expect.json`, its keys checked: a misspelt key fails rather than being ignored.
struct Spec {
    args: Vec<String>,
    nodes: Vec<String>,
    expect: Vec<Map<String, Value>>,
}

fn strings(v: Option<&Value>, what: &str) -> Vec<String> {
    v.map(|v| {
        v.as_array()
            .unwrap_or_else(|| panic!("{what} is not a list"))
            .iter()
            .map(|s| {
                s.as_str()
                    .unwrap_or_else(|| panic!("{what}: {s} is not a string"))
                    .to_string()
            })
            .collect()
    })
    .unwrap_or_default()
}

fn read_spec(dir: &Path) -> Spec {
    let path = dir.join("expect.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{}: not an object", path.display()));
    for k in obj.keys() {
        assert!(
            ["args", "nodes", "expect"].contains(&k.as_str()),
            "{}: unknown key {k:?}",
            path.display()
        );
    }
    let expect = obj
        .get("expect")
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("{}: no expect list", path.display()))
        .iter()
        .map(|e| {
            e.as_object()
                .cloned()
                .unwrap_or_else(|| panic!("{}: {e} is not an object", path.display()))
        })
        .collect();
    Spec {
        args: strings(obj.get("args"), "args"),
        nodes: strings(obj.get("nodes"), "nodes"),
        expect,
    }
}

/// The document `resolve` printed for a scenario, or why there is none.
fn resolve(dir: &Path, spec: &Spec) -> Result<Value, String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_unbounded-mtu"));
    cmd.arg("resolve")
        .arg("-f")
        .arg(dir.join("input.yaml"))
        .args(["-o", "json"])
        .args(&spec.args)
        .env_remove("KUBECONFIG");
    for n in &spec.nodes {
        cmd.args(["--node", n]);
    }
    let out = cmd.output().map_err(|e| format!("spawn: {e}"))?;
    match out.status.code() {
        Some(0 | 1) => {}
        other => {
            return Err(format!(
                "exit {other:?}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("output is not JSON: {e}"))
}

fn node<'a>(doc: &'a Value, name: &str) -> Option<&'a Value> {
    doc["nodes"]
        .as_array()?
        .iter()
        .find(|n| n["name"].as_str() == Some(name))
}

fn absent(exp: &Map<String, Value>) -> bool {
    exp.get("absent").and_then(Value::as_bool) == Some(true)
}

/// The MTU a packet from `n` towards `dest` meets: routes through gateways or transit pools
/// first, then the lowest.
fn route_mtu(n: &Value, dest: &str) -> Option<u64> {
    let routes: Vec<&Value> = n["routes"]
        .as_array()?
        .iter()
        .filter(|r| r["destination"].as_str() == Some(dest))
        .collect();
    let via_gateway: Vec<&Value> = routes
        .iter()
        .copied()
        .filter(|r| matches!(r["kind"].as_str(), Some("gateway" | "transit")))
        .collect();
    let chosen = if via_gateway.is_empty() {
        routes
    } else {
        via_gateway
    };
    chosen.iter().filter_map(|r| r["mtu"].as_u64()).min()
}

fn link_mtu(n: &Value, peer: &str) -> Option<u64> {
    n["links"]
        .as_array()?
        .iter()
        .filter(|l| l["peer"].as_str() == Some(peer))
        .filter_map(|l| l["mtu"].as_u64())
        .min()
}

/// An expected value against the one found: `absent` wants none.
fn compare(what: &str, exp: &Map<String, Value>, got: Option<u64>) -> Result<(), String> {
    if absent(exp) {
        return match got {
            None => Ok(()),
            Some(m) => Err(format!("{what} exists (MTU {m}), want none")),
        };
    }
    let want = exp
        .get("mtu")
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("{what}: the expectation has no \"mtu\" and is not \"absent\""))?;
    match got {
        None => Err(format!("{what} missing, want MTU {want}")),
        Some(m) if m == want => Ok(()),
        Some(m) => Err(format!("{what} MTU {m}, want {want}")),
    }
}

fn check_diagnostic(doc: &Value, exp: &Map<String, Value>) -> Result<(), String> {
    let want = exp
        .get("diagnostic")
        .and_then(Value::as_object)
        .ok_or("a diagnostic expectation is not an object")?;
    let hit = doc["diagnostics"].as_array().is_some_and(|ds| {
        ds.iter()
            .any(|d| want.iter().all(|(k, v)| d.get(k) == Some(v)))
    });
    match (hit, absent(exp)) {
        (true, false) | (false, true) => Ok(()),
        (true, true) => Err(format!("a diagnostic matching {want:?} exists, want none")),
        (false, false) => Err(format!("no diagnostic matching {want:?}")),
    }
}

fn check_node(doc: &Value, name: &str, exp: &Map<String, Value>) -> Result<(), String> {
    let n = node(doc, name).ok_or_else(|| format!("node {name} missing from the output"))?;
    let field = |k: &str| exp.get(k).and_then(Value::as_str);
    if let Some(want) = exp.get("fabricMTU") {
        let got = &n["fabricMTU"];
        return (got == want)
            .then_some(())
            .ok_or_else(|| format!("{name} fabricMTU {got}, want {want}"));
    }
    if let Some(want) = exp.get("role") {
        let got = &n["role"];
        return (got == want)
            .then_some(())
            .ok_or_else(|| format!("{name} role {got}, want {want}"));
    }
    if let Some(peer) = field("link") {
        return compare(&format!("{name}'s link to {peer}"), exp, link_mtu(n, peer));
    }
    if let Some(dest) = field("route") {
        return compare(
            &format!("{name}'s route to {dest}"),
            exp,
            route_mtu(n, dest),
        );
    }
    Err(format!("unknown expectation {exp:?}"))
}

/// One expectation against the printed document.
fn check(doc: &Value, exp: &Map<String, Value>) -> Result<(), String> {
    if exp.contains_key("diagnostic") {
        return check_diagnostic(doc, exp);
    }
    match exp.get("node").and_then(Value::as_str) {
        Some(name) => check_node(doc, name, exp),
        None => Err(format!("unknown expectation {exp:?}")),
    }
}

#[test]
fn golden_scenarios() {
    let dirs = scenarios();
    assert!(
        !dirs.is_empty(),
        "no scenarios under {}",
        scenarios_dir().display()
    );
    let mut passed = 0;
    let mut failures = Vec::new();
    for dir in &dirs {
        let label = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        let label = label.unwrap_or_default();
        let spec = read_spec(dir);
        let doc = match resolve(dir, &spec) {
            Ok(doc) => doc,
            Err(e) => {
                failures.push(format!("{label}: {e}"));
                continue;
            }
        };
        for exp in &spec.expect {
            match check(&doc, exp) {
                Ok(()) => passed += 1,
                Err(e) => failures.push(format!("{label}: {e}")),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{passed} expectations passed, {} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The checker can fail: a document that contradicts each kind of expectation is refused.
#[test]
fn each_kind_of_expectation_can_fail() {
    let doc: Value = serde_json::json!({
        "nodes": [{
            "name": "w1", "role": "worker", "fabricMTU": 1442,
            "links": [{"peer": "w2", "mtu": 1442}],
            "routes": [
                {"destination": "10.2.0.0/16", "kind": "direct", "mtu": 1442},
                {"destination": "10.2.0.0/16", "kind": "gateway", "mtu": 1380}
            ]
        }],
        "diagnostics": [{"severity": "warning", "code": "W-NO-SITE", "object": "Node/x"}]
    });
    let exp = |v: Value| v.as_object().cloned().expect("object");
    let holds = [
        serde_json::json!({"node": "w1", "fabricMTU": 1442}),
        serde_json::json!({"node": "w1", "role": "worker"}),
        serde_json::json!({"node": "w1", "link": "w2", "mtu": 1442}),
        serde_json::json!({"node": "w1", "link": "w3", "absent": true}),
        serde_json::json!({"node": "w1", "route": "10.2.0.0/16", "mtu": 1380}),
        serde_json::json!({"node": "w1", "route": "10.9.0.0/16", "absent": true}),
        serde_json::json!({"diagnostic": {"code": "W-NO-SITE"}}),
        serde_json::json!({"diagnostic": {"code": "W-MISSING-POOL"}, "absent": true}),
    ];
    let fails = [
        serde_json::json!({"node": "w1", "fabricMTU": 1500}),
        serde_json::json!({"node": "w1", "role": "gateway"}),
        serde_json::json!({"node": "w1", "link": "w2", "mtu": 1500}),
        serde_json::json!({"node": "w1", "link": "w2", "absent": true}),
        serde_json::json!({"node": "w1", "route": "10.2.0.0/16", "mtu": 1442}),
        serde_json::json!({"node": "w1", "route": "10.2.0.0/16", "absent": true}),
        serde_json::json!({"node": "w9", "role": "worker"}),
        serde_json::json!({"diagnostic": {"code": "W-NO-SITE"}, "absent": true}),
        serde_json::json!({"diagnostic": {"code": "W-NO-SITE", "object": "Node/y"}}),
        serde_json::json!({"node": "w1", "colour": "blue"}),
    ];
    for e in holds {
        assert_eq!(check(&doc, &exp(e.clone())), Ok(()), "{e}");
    }
    for e in fails {
        assert!(check(&doc, &exp(e.clone())).is_err(), "{e} held");
    }
}
