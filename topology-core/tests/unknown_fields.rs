//! `W-UNKNOWN-FIELD` and the nearest-kind hint of `E-UNKNOWN-KIND` / `N-UNKNOWN-KIND`
//! (`spec/model.md`, "Accepted input" and "Validation"): the messages of the fixtures in
//! `tests/fixtures/model/unknown-*` (their `.expect` tables hold no messages), the upstream
//! documentation examples staying quiet about their fields and reporting what is really wrong
//! in them, and an unknown key changing nothing but the diagnostics.

// The I/O ban of clippy.toml is for the library; these tests read fixture files, the upstream
// documentation examples among them.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
use topology_core::decode::{RawObject, decode};
use topology_core::diag::{Code, Diagnostic};
use topology_core::model::Topology;
use topology_core::vocab::Kind;

fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/model")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `(object, field, message)` of every diagnostic of `code`, in output order.
fn messages(name: &str, code: Code) -> Vec<(String, String, String)> {
    let bytes = fixture(name);
    let d = decode([(name, bytes.as_slice())]);
    let t = Topology::build(&d.objects, d.diagnostics);
    t.diagnostics
        .iter()
        .filter(|d| d.code == code)
        .map(|d| (d.object.clone(), d.field.clone(), d.message.clone()))
        .collect()
}

fn triples(rows: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    rows.iter()
        .map(|(o, f, m)| (o.to_string(), f.to_string(), m.to_string()))
        .collect()
}

#[test]
fn misspelled_cap_suggests_the_upstream_name() {
    assert_eq!(
        messages("unknown-field.yaml", Code::UnknownField),
        triples(&[
            (
                "GatewayPoolPeering/pp",
                "spec.tunnelMtu",
                "GatewayPoolPeering has no field `spec.tunnelMtu`; it is ignored (did you mean `tunnelMTU`?)",
            ),
            (
                "SitePeering/ab",
                "spec.colour",
                "SitePeering has no field `spec.colour`; it is ignored",
            ),
            (
                "SitePeering/ab",
                "spec.enable",
                "SitePeering has no field `spec.enable`; it is ignored (did you mean `enabled`?)",
            ),
        ])
    );
}

#[test]
fn nested_and_top_level_fields_have_full_paths() {
    assert_eq!(
        messages("unknown-field-nested.yaml", Code::UnknownField),
        triples(&[
            (
                "GatewayPool/p",
                "status.conditions",
                "GatewayPool has no field `status.conditions`; it is ignored",
            ),
            (
                "GatewayPool/p",
                "status.nodes[0].podCidrs",
                "GatewayPool has no field `status.nodes[0].podCidrs`; it is ignored (did you mean `podCIDRs`?)",
            ),
            (
                "Site/a",
                "spec.healthCheckSettings.interval",
                "Site has no field `spec.healthCheckSettings.interval`; it is ignored",
            ),
            (
                "Site/a",
                "spec.podCidrAssignments[0].nodeBlockSizes.ipv5",
                "Site has no field `spec.podCidrAssignments[0].nodeBlockSizes.ipv5`; it is ignored (did you mean `ipv4`?)",
            ),
            (
                "Site/a",
                "spec.podCidrAssignments[1].cidrBlock",
                "Site has no field `spec.podCidrAssignments[1].cidrBlock`; it is ignored (did you mean `cidrBlocks`?)",
            ),
            (
                "Site/b",
                "spce",
                "Site has no field `spce`; it is ignored (did you mean `spec`?)",
            ),
            (
                "SiteNodeSlice/a-0",
                "nodes[1].internalIps",
                "SiteNodeSlice has no field `nodes[1].internalIps`; it is ignored (did you mean `internalIPs`?)",
            ),
            (
                "SiteNodeSlice/a-1",
                "sitename",
                "SiteNodeSlice has no field `sitename`; it is ignored (did you mean `siteName`?)",
            ),
        ])
    );
}

#[test]
fn json_input_is_checked_alike() {
    assert_eq!(
        messages("unknown-field-json.json", Code::UnknownField),
        triples(&[
            (
                "Site/a",
                "spec.NodeCidrs",
                "Site has no field `spec.NodeCidrs`; it is ignored (did you mean `nodeCidrs`?)",
            ),
            (
                "SitePeering/ab",
                "spec.meshNode",
                "SitePeering has no field `spec.meshNode`; it is ignored (did you mean `meshNodes`?)",
            ),
            (
                "SitePeering/ab",
                "spec.tunnel_mtu",
                "SitePeering has no field `spec.tunnel_mtu`; it is ignored (did you mean `tunnelMTU`?)",
            ),
        ])
    );
}

/// Objects given as API JSON (no lines) are checked too; the source is the object's name.
#[test]
fn api_json_objects_are_checked() {
    let mut d = topology_core::decode::Decoded::default();
    d.add_json(
        "GatewayPoolPeering/pp",
        serde_json::json!({
            "apiVersion": "net.unbounded-cloud.io/v1alpha1",
            "kind": "GatewayPoolPeering",
            "metadata": {"name": "pp", "managedFields": []},
            "spec": {"gatewayPools": ["a", "b"], "tunnelMtu": 1390},
        }),
    );
    let diags = &d.objects[0].meta().diags;
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0].code, Code::UnknownField);
    assert_eq!(diags[0].field, "spec.tunnelMtu");
    assert_eq!(
        diags[0].source.as_ref().map(|s| s.to_string()).as_deref(),
        Some("GatewayPoolPeering/pp")
    );
}

#[test]
fn unknown_kind_names_the_nearest_kind() {
    assert_eq!(
        messages("unknown-kind-nearest.yaml", Code::UnknownKind),
        triples(&[
            (
                "GatewayPoolz/foreign",
                "",
                "kind GatewayPoolz of API group example.com is not one this tool reads; skipped",
            ),
            (
                "Nodes/n",
                "",
                "kind Nodes of API group core is not one this tool reads; skipped (did you mean Node?)",
            ),
        ])
    );
    assert_eq!(
        messages("unknown-kind-nearest.yaml", Code::UnknownOwnKind),
        triples(&[
            (
                "GatewayPoolz/p",
                "",
                "API group net.unbounded-cloud.io defines no kind GatewayPoolz; the object is skipped (did you mean GatewayPool?)",
            ),
            (
                "SitePeerings/ab",
                "",
                "API group net.unbounded-cloud.io defines no kind SitePeerings; the object is skipped (did you mean SitePeering?)",
            ),
            (
                "Widget/w",
                "",
                "API group net.unbounded-cloud.io defines no kind Widget; the object is skipped",
            ),
        ])
    );
}

/// The upstream documentation examples decoded together: every one parses (no E-DECODE), and
/// what is really wrong in them is reported where it is written: the pod block
/// `fdde:east::/48` that is no IPv6 prefix, the nodes no Site takes.
#[test]
fn upstream_documentation_examples_report_their_mistakes_where_written() {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upstream-docs");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    names.sort();
    let texts: Vec<(String, Vec<u8>)> = names
        .iter()
        .map(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            (name.unwrap_or_default(), std::fs::read(p).expect("read"))
        })
        .collect();
    let d = decode(texts.iter().map(|(n, b)| (n.as_str(), b.as_slice())));
    let t = Topology::build(&d.objects, d.diagnostics.clone());
    let found: Vec<String> = t
        .diagnostics
        .iter()
        .filter(|x| matches!(x.code, Code::Decode | Code::Cidr | Code::NoSite))
        .map(|x| {
            let at = x
                .source
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            format!("{} {} {} {at}", x.code, x.object, x.field)
        })
        .collect();
    assert_eq!(
        found,
        [
            "E-CIDR Site/aws-us-east-1 spec.podCidrAssignments[0].cidrBlocks[1] custom-resources-04.yaml:13",
            "W-NO-SITE Node/gateway-node-1  custom-resources-06.yaml:45",
            "W-NO-SITE Node/node-001  custom-resources-05.yaml:21",
            "W-NO-SITE Node/node-002  custom-resources-05.yaml:29",
        ]
    );
}

/// The upstream documentation examples (`tests/fixtures/upstream-docs/`, verbatim): every
/// manifest there decodes without a single W-UNKNOWN-FIELD, and together they hold every
/// unbounded kind (so the check is exercised on each).
#[test]
fn upstream_documentation_examples_have_no_unknown_field() {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upstream-docs");
    let mut files = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        for e in entries {
            let path = e.expect("directory entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path
                .extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| ["yaml", "yml", "json"].contains(&x.to_ascii_lowercase().as_str()))
            {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(!files.is_empty(), "no manifests under {}", dir.display());
    let mut kinds: Vec<Kind> = Vec::new();
    let mut unknown: Vec<String> = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let name = f.display().to_string();
        let d = decode([(name.as_str(), bytes.as_slice())]);
        let all: Vec<&Diagnostic> = d
            .diagnostics
            .iter()
            .chain(d.objects.iter().flat_map(|o| &o.meta().diags))
            .collect();
        unknown.extend(
            all.iter()
                .filter(|d| d.code == Code::UnknownField)
                .map(|d| d.to_string()),
        );
        kinds.extend(d.objects.iter().map(RawObject::kind));
    }
    assert_eq!(unknown, Vec::<String>::new(), "upstream examples warned");
    kinds.sort();
    kinds.dedup();
    let want: Vec<Kind> = Kind::ALL.into_iter().filter(|k| *k != Kind::Node).collect();
    assert_eq!(
        kinds, want,
        "the examples no longer cover every unbounded kind"
    );
}

/// The objects of a manifest, without their diagnostics.
fn objects_without_diags(text: &str) -> Vec<RawObject> {
    let mut objects = decode([("x.yaml", text.as_bytes())]).objects;
    for o in &mut objects {
        o.meta_mut().diags.clear();
    }
    objects
}

/// An unknown key counts as absent: the objects decode exactly as without it, and it adds exactly
/// one diagnostic; the correctly spelled key is read.
#[test]
fn an_unknown_key_changes_nothing_but_the_diagnostics() {
    let head = "apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPoolPeering
metadata: {name: pp}
spec:
  gatewayPools: [pa, pb]
";
    let with = format!("{head}  tunnelMtu: 1390\n");
    assert_eq!(objects_without_diags(&with), objects_without_diags(head));
    let d = decode([("x.yaml", with.as_bytes())]);
    let diags = &d.objects[0].meta().diags;
    assert_eq!(
        diags.iter().map(|d| d.to_string()).collect::<Vec<_>>(),
        [
            "x.yaml:6: warning W-UNKNOWN-FIELD GatewayPoolPeering/pp spec.tunnelMtu: GatewayPoolPeering has no field `spec.tunnelMtu`; it is ignored (did you mean `tunnelMTU`?)"
        ]
    );
    let RawObject::PoolPeering(r) = &d.objects[0] else {
        panic!("not a pool peering");
    };
    assert_eq!(r.cap, None);

    let right = decode([("x.yaml", format!("{head}  tunnelMTU: 1390\n").as_bytes())]);
    let RawObject::PoolPeering(r) = &right.objects[0] else {
        panic!("not a pool peering");
    };
    assert_eq!(r.cap.as_ref().map(|c| c.mtu), Some(1390));
    assert!(right.objects[0].meta().diags.is_empty());
}

/// One warning per unknown key, however many; keys too long to be a misspelling get no
/// suggestion and are shortened in the field path.
#[test]
fn many_and_long_unknown_keys() {
    let mut text = String::from(
        "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: SitePeering\nmetadata: {name: ab}\nspec:\n",
    );
    for i in 0..2_000 {
        text.push_str(&format!("  tunnelMtu{i}: 1\n"));
    }
    // An explicit key: YAML limits implicit keys to 1024 characters.
    let long = "x".repeat(100_000);
    text.push_str(&format!("  ? {long}\n  : 1\n"));
    let d = decode([("x.yaml", text.as_bytes())]);
    let diags = &d.objects[0].meta().diags;
    assert_eq!(diags.len(), 2_001);
    assert!(diags.iter().all(|d| d.code == Code::UnknownField));
    assert_eq!(
        diags[0].message,
        "SitePeering has no field `spec.tunnelMtu0`; it is ignored (did you mean `tunnelMTU`?)"
    );
    let last = &diags[2_000];
    assert_eq!(last.field, format!("spec.{}…", "x".repeat(80)));
    assert!(!last.message.contains("did you mean"), "{}", last.message);
}
