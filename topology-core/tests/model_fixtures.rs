//! Data-driven tests of `spec/model.md`: a small fixture in, the validated topology and its
//! diagnostics out as a compact text table, compared with `NAME.expect` beside the fixture.
//!
//! Each fixture in `tests/fixtures/model/` is one YAML (or JSON) stream; its comments say which
//! sentence of the spec it checks. `UPDATE_EXPECT=1 cargo test -p topology-core --test
//! model_fixtures` rewrites the expectations (check every change against the spec by hand).
//!
//! The table lists, in order:
//! - `node NAME site=SITE worker|gateway pool=POOL|- [underlay=..] [underlay-max=..]`, every node
//!   that has a Site (nodes without one are left out, spec "Membership");
//! - `site NAME nodeCidrs=.. pods=.. [manageCniPlugin=false] [protocol=..] [cap=..]`;
//! - `pool NAME External|Internal [routed=[..]] [protocol=..] [cap=..] gateways=[..]`;
//! - `KIND NAME relates|relates-nothing sites=[..] pools=[..] [mesh|no-mesh] [protocol=..]
//!   [cap=..]`, for every enabled SitePeering, assignment and pool peering;
//! - `component [SITES] cap=MTU by OBJECT objects=[..]`;
//! - `SEVERITY CODE OBJECT FIELD FILE:LINE`, the diagnostics in output order (`-` for an empty
//!   field or a missing source).
//!
//! A cap shows `576 (invalid 100)` when the written value failed closed.

// The I/O ban of clippy.toml is for the library; this harness reads (and with UPDATE_EXPECT=1
// writes) its fixture files.
#![allow(clippy::disallowed_methods)]

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use topology_core::decode::decode;
use topology_core::diag::Code;
use topology_core::model::{Cap, ObjRef, Relation, Role, Topology};

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/model")
}

fn cap_text(cap: Option<&Cap>) -> String {
    match cap {
        None => String::new(),
        Some(c) => match &c.invalid {
            None => format!(" cap={}", c.mtu.get()),
            Some(w) => format!(" cap={} (invalid {w})", c.mtu.get()),
        },
    }
}

fn bracket<T: ToString>(items: impl IntoIterator<Item = T>) -> String {
    let v: Vec<String> = items.into_iter().map(|x| x.to_string()).collect();
    format!("[{}]", v.join(","))
}

fn relation(t: &Topology, out: &mut String, kind: &str, r: &Relation, mesh: bool) {
    let _ = write!(
        out,
        "{kind} {} {} sites={} pools={}",
        r.name,
        if r.relates {
            "relates"
        } else {
            "relates-nothing"
        },
        bracket(r.sites.iter().map(|s| t.site(*s).name.clone())),
        bracket(r.pools.iter().map(|p| t.pool(*p).name.clone())),
    );
    if mesh {
        out.push_str(if r.mesh { " mesh" } else { " no-mesh" });
    }
    if let Some(p) = r.protocol {
        let _ = write!(out, " protocol={p}");
    }
    out.push_str(&cap_text(r.cap.as_ref()));
    out.push('\n');
}

/// The compact text table of a validated topology.
pub fn render(t: &Topology) -> String {
    let mut out = String::new();
    for n in &t.nodes {
        let (role, pool) = match n.role {
            Role::Worker => ("worker", "-".to_string()),
            Role::Gateway(p) => ("gateway", t.pool(p).name.to_string()),
        };
        let _ = write!(
            out,
            "node {} site={} {role} pool={pool}",
            n.name,
            t.site(n.site).name
        );
        for (label, u) in [("underlay", &n.underlay), ("underlay-max", &n.underlay_max)] {
            if let Some(u) = u {
                let _ = write!(out, " {label}={}", u.mtu);
                if let Some(w) = &u.invalid {
                    let _ = write!(out, " (invalid {w:?})");
                }
            }
        }
        let id = t.node_id(&n.name).expect("a node of the topology");
        if !t.path_mtus_of(id).is_empty() {
            let entries: Vec<String> = t
                .path_mtus_of(id)
                .iter()
                .map(|(p, e)| {
                    let invalid = if e.invalid { " (invalid)" } else { "" };
                    format!("{}={}{invalid}", t.node(*p).name, e.mtu)
                })
                .collect();
            let _ = write!(out, " path-mtu=[{}]", entries.join(", "));
        }
        out.push('\n');
    }
    for s in &t.sites {
        let _ = write!(
            out,
            "site {} nodeCidrs={} pods={}",
            s.name,
            bracket(&s.node_cidrs),
            bracket(&s.pod_blocks)
        );
        if !s.manage_cni {
            out.push_str(" manageCniPlugin=false");
        }
        if let Some(p) = s.protocol {
            let _ = write!(out, " protocol={p}");
        }
        out.push_str(&cap_text(s.cap.as_ref()));
        out.push('\n');
    }
    for p in &t.pools {
        let _ = write!(
            out,
            "pool {} {}",
            p.name,
            if p.internal { "Internal" } else { "External" }
        );
        if !p.routed_cidrs.is_empty() {
            let _ = write!(out, " routed={}", bracket(&p.routed_cidrs));
        }
        if let Some(pr) = p.protocol {
            let _ = write!(out, " protocol={pr}");
        }
        out.push_str(&cap_text(p.cap.as_ref()));
        let _ = writeln!(
            out,
            " gateways={}",
            bracket(p.gateways.iter().map(|g| t.node(*g).name.clone()))
        );
    }
    for r in &t.site_peerings {
        relation(t, &mut out, "SitePeering", r, true);
    }
    for r in &t.assignments {
        relation(t, &mut out, "SiteGatewayPoolAssignment", r, false);
    }
    for r in &t.pool_peerings {
        relation(t, &mut out, "GatewayPoolPeering", r, false);
    }
    for c in &t.components {
        let _ = write!(
            out,
            "component {}",
            bracket(c.sites.iter().map(|s| t.site(*s).name.clone()))
        );
        match c.cap {
            Some((m, o)) => {
                let _ = write!(out, " cap={} by {}", m.get(), t.label(o));
            }
            None => out.push_str(" cap=-"),
        }
        let objs: Vec<String> = c.cap_objects.iter().map(|o: &ObjRef| t.label(*o)).collect();
        if !objs.is_empty() {
            let _ = write!(out, " objects={}", bracket(objs));
        }
        out.push('\n');
    }
    for d in &t.diagnostics {
        let _ = writeln!(
            out,
            "{} {} {} {} {}",
            d.severity,
            d.code,
            d.object,
            if d.field.is_empty() { "-" } else { &d.field },
            d.source
                .as_ref()
                .map(|s| s.to_string())
                .unwrap_or_else(|| "-".to_string())
        );
    }
    out
}

/// Decodes and validates a fixture, checks that the result does not depend on object order,
/// and compares the table with `NAME.expect` (or rewrites it with `UPDATE_EXPECT=1`).
fn check(fixture: &str) {
    let path = fixture_dir().join(fixture);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let d = decode([(fixture, bytes.as_slice())]);
    let t = Topology::build(&d.objects, d.diagnostics.clone());
    let got = render(&t);

    // spec/README.md invariant 4: the same objects in any order give the same output.
    let reversed = Topology::build(d.objects.iter().rev(), d.diagnostics.clone());
    assert_eq!(
        render(&reversed),
        got,
        "{fixture}: building the objects in reverse order changed the result"
    );

    let stem = fixture.rsplit_once('.').map(|(s, _)| s).unwrap_or(fixture);
    let expect_path = fixture_dir().join(format!("{stem}.expect"));
    if std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1") {
        std::fs::write(&expect_path, &got).expect("write the expectation");
        return;
    }
    let want = std::fs::read_to_string(&expect_path).unwrap_or_default();
    if want != got {
        let mut msg = format!(
            "\n{fixture}: the validated topology differs from {}\n(run with UPDATE_EXPECT=1 to rewrite, then check it against spec/model.md)\n",
            expect_path.display()
        );
        let w: Vec<&str> = want.lines().collect();
        let g: Vec<&str> = got.lines().collect();
        for line in &w {
            if !g.contains(line) {
                let _ = writeln!(msg, "- {line}");
            }
        }
        for line in &g {
            if !w.contains(line) {
                let _ = writeln!(msg, "+ {line}");
            }
        }
        let _ = write!(msg, "--- expected\n{want}--- got\n{got}");
        panic!("{msg}");
    }
}

macro_rules! fixtures {
    ($($test:ident => $file:literal,)*) => {
        $(
            #[test]
            fn $test() {
                check($file);
            }
        )*
        const FIXTURES: &[&str] = &[$($file,)*];
    };
}

fixtures! {
    site_label => "site-label.yaml",
    node_cidrs => "node-cidrs.yaml",
    multi_site => "multi-site.yaml",
    no_site => "no-site.yaml",
    site_node_slice => "site-node-slice.yaml",
    pool_status => "pool-status.yaml",
    pool_label => "pool-label.yaml",
    pool_selector => "pool-selector.yaml",
    pool_selector_label => "pool-selector-label.yaml",
    multi_pool => "multi-pool.yaml",
    gateway_site => "gateway-site.yaml",
    disabled => "disabled.yaml",
    missing_members => "missing-members.yaml",
    duplicate_member => "duplicate-member.yaml",
    cap_range => "cap-range.yaml",
    cap_zero => "cap-zero.yaml",
    duplicate_names => "duplicate-names.yaml",
    unknown_kind => "unknown-kind.yaml",
    field_type => "field-type.yaml",
    cidr => "cidr.yaml",
    cidr_overlap => "cidr-overlap.yaml",
    protocol => "protocol.yaml",
    underlay => "underlay.yaml",
    path_mtu => "path-mtu.yaml",
    components => "components.yaml",
    list => "list.yaml",
    json_input => "json-input.json",
    bom => "bom.yaml",
    decode_errors => "decode-errors.yaml",
    pod_blocks => "pod-blocks.yaml",
    routed_cidrs => "routed-cidrs.yaml",
    unknown_field => "unknown-field.yaml",
    unknown_field_nested => "unknown-field-nested.yaml",
    unknown_field_json => "unknown-field-json.json",
    unknown_kind_nearest => "unknown-kind-nearest.yaml",
}

/// Every fixture in the directory has a test, and every one has an expectation.
#[test]
fn every_fixture_is_checked() {
    let mut on_disk: Vec<String> = std::fs::read_dir(fixture_dir())
        .expect("fixture directory")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") || n.ends_with(".json"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = FIXTURES.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "fixtures on disk vs the fixtures! list");
}

/// Every diagnostic code this crate emits appears in some expectation. `W-IPV6-BELOW-1280` and
/// `W-PUBLISHED-STALE` are the resolver's (mtu-solver), `N-SKIPPED-FILE` the binary's directory walk and `E-NOT-SERVED` the
/// binary's live source (a LIST answered 404; `agent/tests/cluster_errors.rs`), not the model's.
#[test]
fn every_code_is_covered() {
    let mut all = String::new();
    for f in FIXTURES {
        let stem = f.rsplit_once('.').map(|(s, _)| s).unwrap_or(f);
        all.push_str(
            &std::fs::read_to_string(fixture_dir().join(format!("{stem}.expect")))
                .unwrap_or_default(),
        );
    }
    let missing: Vec<&str> = Code::ALL
        .iter()
        .filter(|c| {
            !matches!(
                c,
                Code::Ipv6Below1280 | Code::PublishedStale | Code::SkippedFile | Code::NotServed
            )
        })
        .map(|c| c.as_str())
        .filter(|c| !all.lines().any(|l| l.split(' ').nth(1) == Some(c)))
        .collect();
    assert!(missing.is_empty(), "codes without a fixture: {missing:?}");
}

/// The core decodes `(source name, bytes)` pairs; two objects of one kind and name in two
/// sources are one E-DUPLICATE at the first location (by source, then line), listing both, and
/// the result does not depend on the order of the sources.
#[test]
fn duplicates_across_sources() {
    let one = "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata: {name: a}\nspec: {nodeCidrs: [10.0.0.0/24]}\n";
    let two = "# a comment\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata: {name: a}\n---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata: {name: b}\n";
    let build = |sources: [(&'static str, &'static str); 2]| {
        let d = decode(sources.map(|(n, t)| (n, t.as_bytes())));
        render(&Topology::build(&d.objects, d.diagnostics))
    };
    let forward = build([("dir/one.yaml", one), ("dir/two.yaml", two)]);
    let backward = build([("dir/two.yaml", two), ("dir/one.yaml", one)]);
    assert_eq!(forward, backward);
    assert_eq!(
        forward,
        "site b nodeCidrs=[] pods=[]\ncomponent [b] cap=-\nerror E-DUPLICATE Site/a metadata.name dir/one.yaml:1\n"
    );
}

/// Copies that say the same in two sources (overlapping exports; one written as a `List` item,
/// indented, with a comment) are one object with one N-DUPLICATE-IDENTICAL note at the first
/// location, whatever the order of the sources.
#[test]
fn identical_copies_across_sources_count_once() {
    let one = "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata: {name: a}\nspec: {nodeCidrs: [10.0.0.0/24], tunnelMTU: \"1400\"}\n";
    let two = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: net.unbounded-cloud.io/v1alpha1\n  kind: Site\n  # the same Site\n  metadata:\n    name: a\n  spec:\n    nodeCidrs:\n    - 10.0.0.0/24\n    tunnelMTU: \"1400\"\n";
    let build = |sources: [(&'static str, &'static str); 2]| {
        let d = decode(sources.map(|(n, t)| (n, t.as_bytes())));
        render(&Topology::build(&d.objects, d.diagnostics))
    };
    let forward = build([("one.yaml", one), ("two.yaml", two)]);
    let backward = build([("two.yaml", two), ("one.yaml", one)]);
    assert_eq!(forward, backward);
    // The copy's own findings (its unreadable cap) are reported once.
    assert_eq!(
        forward,
        "site a nodeCidrs=[10.0.0.0/24] pods=[] cap=576 (invalid \"1400\")\ncomponent [a] cap=576 by Site/a objects=[Site/a]\nerror E-FIELD-TYPE Site/a spec.tunnelMTU one.yaml:4\nnote N-DUPLICATE-IDENTICAL Site/a metadata.name one.yaml:1\n"
    );
}

/// Production behaviour that differs from `spec/model.md`. Each test is a minimal input, the spec
/// sentence, and the expected result; they fail until `decode.rs` / `model.rs` are fixed.
mod known_issues {
    use topology_core::decode::decode;
    use topology_core::diag::{Code, Diagnostic};
    use topology_core::model::{Role, Topology};

    fn build(text: &str) -> Topology {
        let d = decode([("x.yaml", text.as_bytes())]);
        Topology::build(&d.objects, d.diagnostics)
    }

    fn find(t: &Topology, code: Code) -> Vec<&Diagnostic> {
        t.diagnostics.iter().filter(|d| d.code == code).collect()
    }

    /// Spec "Validation": each diagnostic has "the `source` (`file:line` when decoded from a
    /// file)". A gateway known only from two pools' `status.nodes` gets W-MULTI-POOL without a
    /// source; expected: the line of the status entry of the pool it joins (line 10 here).
    #[test]
    fn status_only_gateway_in_two_pools_has_a_source() {
        let t = build(
            "apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: a}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPool
metadata: {name: beta}
status:
  nodes:
    - {name: s1, siteName: a}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPool
metadata: {name: gamma}
status:
  nodes:
    - {name: s1, siteName: a}
",
        );
        // Membership is right: the first pool by name.
        let s1 = t.node_id("s1").expect("s1 is a node");
        assert_eq!(t.node(s1).role, Role::Gateway(t.pool_id("beta").unwrap()));
        let multi = find(&t, Code::MultiPool);
        assert_eq!(multi.len(), 1, "{:#?}", t.diagnostics);
        assert_eq!(
            multi[0].source.as_ref().map(|s| s.to_string()),
            Some("x.yaml:10".to_string()),
            "W-MULTI-POOL of a status-only gateway has no file:line"
        );
    }

    /// Spec "Validation": "the field path (dotted, with list indexes: `spec.sites[1]`)". Fields of
    /// SiteNodeSlice entries and GatewayPool status entries are reported without their entry's
    /// path (`internalIPs[0]`); expected `nodes[0].internalIPs[0]` and
    /// `status.nodes[0].internalIPs[0]`.
    #[test]
    fn entry_fields_have_full_paths() {
        let t = build(
            "apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SiteNodeSlice
metadata: {name: s}
siteName: a
nodes:
  - {name: w1, internalIPs: [bad]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPool
metadata: {name: p}
status:
  nodes:
    - {name: g1, internalIPs: [bad]}
",
        );
        let mut fields: Vec<(String, String)> = find(&t, Code::Cidr)
            .iter()
            .map(|d| (d.object.clone(), d.field.clone()))
            .collect();
        fields.sort();
        assert_eq!(
            fields,
            [
                (
                    "GatewayPool/p".to_string(),
                    "status.nodes[0].internalIPs[0]".to_string()
                ),
                (
                    "SiteNodeSlice/s".to_string(),
                    "nodes[0].internalIPs[0]".to_string()
                ),
            ]
        );
    }

    /// Spec "Validation": E-FIELD-TYPE when "a known field has the wrong type". A `spec` (or
    /// `status`) that is not an object is read as absent silently; expected one E-FIELD-TYPE with
    /// field `spec` at line 4 (and the peering relating nothing, which it does).
    #[test]
    fn spec_that_is_not_an_object_is_field_type() {
        let t = build(
            "apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SitePeering
metadata: {name: s4}
spec: [b, c]
",
        );
        let ft: Vec<(String, String)> = find(&t, Code::FieldType)
            .iter()
            .map(|d| {
                (
                    d.field.clone(),
                    d.source.as_ref().map(|s| s.to_string()).unwrap_or_default(),
                )
            })
            .collect();
        assert_eq!(ft, [("spec".to_string(), "x.yaml:4".to_string())]);
    }

    /// Spec "Accepted input" (`kind: List` with `items`) and "Validation" (E-FIELD-TYPE for a
    /// known field of the wrong type): a List whose `items` is not a list is dropped silently;
    /// expected E-FIELD-TYPE on field `items` (line 3).
    #[test]
    fn list_items_of_the_wrong_type_is_field_type() {
        let t = build("apiVersion: v1\nkind: List\nitems: 5\n");
        let ft: Vec<String> = find(&t, Code::FieldType)
            .iter()
            .map(|d| {
                format!(
                    "{} {}",
                    d.field,
                    d.source.as_ref().map(|s| s.to_string()).unwrap_or_default()
                )
            })
            .collect();
        assert_eq!(ft, ["items x.yaml:3"], "{:#?}", t.diagnostics);
    }

    /// Spec "Objects that do not count": "An object with `enabled: false` is treated as absent
    /// everywhere, silently"; E-DUPLICATE is for "two objects of one kind with one name". A
    /// disabled SitePeering sharing its name with an enabled one makes both ignored with
    /// E-DUPLICATE; expected: the disabled copy is absent, so the enabled one counts and there is
    /// no diagnostic.
    #[test]
    fn a_disabled_copy_is_not_a_duplicate() {
        let t = build(
            "apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SitePeering
metadata: {name: x}
spec: {enabled: false, sites: [a, b]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SitePeering
metadata: {name: x}
spec: {sites: [a, b]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: a}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: b}
",
        );
        assert_eq!(t.diagnostics, [], "a disabled object produced a diagnostic");
        assert_eq!(t.site_peerings.len(), 1);
        assert!(t.site_peerings[0].relates);
    }

    /// Spec: "`tunnelMTU` is an optional integer; valid values are 576..9000", E-CAP-RANGE is
    /// "`tunnelMTU` outside 576..9000". `tunnelMTU: 1400.0` (a float holding a value inside the
    /// range) is reported as E-CAP-RANGE "tunnelMTU 1400 is outside 576..9000" and fails closed to
    /// 576. Expected: not an out-of-range claim about an in-range value; as a value of the wrong
    /// type it is E-FIELD-TYPE (or, if integral floats are accepted, cap 1400 with no error).
    #[test]
    fn an_integral_float_cap_is_not_out_of_range() {
        let t = build(
            "apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: a}
spec: {tunnelMTU: 1400.0}
",
        );
        assert_eq!(find(&t, Code::CapRange), Vec::<&Diagnostic>::new());
        let cap = t.sites[0].cap.as_ref().map(|c| c.mtu.get());
        let ft = find(&t, Code::FieldType).len();
        assert!(
            (cap.is_none() && ft == 1) || (cap == Some(1400) && ft == 0),
            "cap {cap:?}, {ft} E-FIELD-TYPE"
        );
    }
}

/// `P(a,b)` is the lowest entry either node publishes about the other, the same from both ends,
/// with the node that published it; a pair neither end names has none (`model.md`, D13).
#[test]
fn a_pair_s_path_mtu_is_the_lowest_either_end_publishes() {
    let path = fixture_dir().join("path-mtu.yaml");
    let bytes = std::fs::read(&path).expect("fixture");
    let d = decode([("path-mtu.yaml", bytes.as_slice())]);
    let t = Topology::build(&d.objects, d.diagnostics);
    let id = |n: &str| t.node_id(n).expect(n);
    let p = |a: &str, b: &str| {
        let x = t.path_mtu(id(a), id(b));
        assert_eq!(x, t.path_mtu(id(b), id(a)), "{a}-{b} differs by direction");
        x.map(|x| (x.mtu, t.node(x.by).name.to_string(), x.invalid))
    };
    // n1 says 1380 (its lowest of two), n2 says 575: invalid, 576 counts.
    assert_eq!(p("n1", "n2"), Some((576, "n2".into(), true)));
    // n3's entry for n1 has no value and is dropped: n1's 1450 counts.
    assert_eq!(p("n1", "n3"), Some((1450, "n1".into(), false)));
    assert_eq!(p("n3", "n4"), Some((65535, "n3".into(), false)));
    assert_eq!(p("n1", "n4"), None);
}
