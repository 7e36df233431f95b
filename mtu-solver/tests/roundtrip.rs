//! Every result a [`Resolver`] hands out reads back from its JSON: serialized, deserialized and
//! serialized again, it equals the original and writes the same text. The cluster holds what
//! each field can carry (every route type and kind, every link kind, a routed hop, a published
//! value, caps, annotations, diagnostics with a source), so a field that is dropped on either
//! way fails here.

use mtu_solver::probe::{Measured, ProbeReport, Target, judge};
use mtu_solver::report::hops::{HopKind, HopOut};
use mtu_solver::report::{DiagOut, NodeRole, ResolveOut, TermOut};
use mtu_solver::whatif::{Digest, Strategy, WhatIf};
use mtu_solver::{
    Destination, Diagnostic, Explanation, Explanations, Kind, Mutation, ObjectRef, Question,
    Resolver, RouteKind, Settings, Subject, load,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;
use topology_core::net::{LinkKind, RouteType};
use topology_core::vocab::Protocol;

/// Spoke Sites A and B behind the hub pool PH (gateways h1, h2 in Site H, a routed CIDR), Site
/// C peered with A and behind pool PX (gateway x1 in Site X), PH and PX peered, caps on the
/// assignment and the peering, an underlay annotation on wb, what h1 published (stale), and a
/// misspelt field (a warning with a source).
const CLUSTER: &str = r#"
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: A}
spec: {nodeCidrs: [10.1.0.0/16], podCidrAssignments: [{cidrBlocks: [10.101.0.0/16]}]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: B}
spec: {nodeCidrs: [10.2.0.0/16], podCidrAssignments: [{cidrBlocks: [10.102.0.0/16]}]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: C}
spec: {nodeCidrs: [10.3.0.0/16], podCidrAssignments: [{cidrBlocks: [10.103.0.0/16]}], tunelMTU: 1}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: H}
spec: {nodeCidrs: [10.10.0.0/16], podCidrAssignments: [{cidrBlocks: [10.110.0.0/16]}]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPool
metadata: {name: PH}
spec: {type: External, nodeSelector: {pool: ph}, routedCidrs: [172.20.0.0/16]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SiteGatewayPoolAssignment
metadata: {name: spokes}
spec: {sites: [A, B], gatewayPools: [PH], tunnelMTU: 1340}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: X}
spec: {nodeCidrs: [10.20.0.0/16], podCidrAssignments: [{cidrBlocks: [10.120.0.0/16]}]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPool
metadata: {name: PX}
spec: {type: External, nodeSelector: {pool: px}}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SiteGatewayPoolAssignment
metadata: {name: c-px}
spec: {sites: [C], gatewayPools: [PX]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPoolPeering
metadata: {name: ph-px}
spec: {gatewayPools: [PH, PX]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SitePeering
metadata: {name: ac}
spec: {sites: [A, C], tunnelMTU: 1360}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPoolNode
metadata:
  name: h1
  annotations: {mtu.unbounded-cloud.io/forwarding-mtus: '{"10.102.0.0/16": 1300}'}
spec: {nodeName: h1, gatewayPool: PH}
---
apiVersion: v1
kind: Node
metadata: {name: wa}
spec: {podCIDRs: [10.101.0.0/24]}
status: {addresses: [{type: InternalIP, address: 10.1.0.1}]}
---
apiVersion: v1
kind: Node
metadata:
  name: wb
  annotations: {mtu.unbounded-cloud.io/underlay-mtu: "1450"}
spec: {podCIDRs: [10.102.0.0/24]}
status: {addresses: [{type: InternalIP, address: 10.2.0.1}]}
---
apiVersion: v1
kind: Node
metadata: {name: wc}
spec: {podCIDRs: [10.103.0.0/24]}
status: {addresses: [{type: InternalIP, address: 10.3.0.1}]}
---
apiVersion: v1
kind: Node
metadata: {name: h1, labels: {pool: ph}}
spec: {podCIDRs: [10.110.0.0/24]}
status:
  addresses: [{type: InternalIP, address: 10.10.0.1}, {type: ExternalIP, address: 198.51.100.1}]
---
apiVersion: v1
kind: Node
metadata: {name: h2, labels: {pool: ph}}
spec: {podCIDRs: [10.110.1.0/24]}
status:
  addresses: [{type: InternalIP, address: 10.10.0.2}, {type: ExternalIP, address: 198.51.100.2}]
---
apiVersion: v1
kind: Node
metadata: {name: x1, labels: {pool: px}}
spec: {podCIDRs: [10.120.0.0/24]}
status:
  addresses: [{type: InternalIP, address: 10.20.0.1}, {type: ExternalIP, address: 198.51.100.3}]
"#;

fn resolver(level: Explanations) -> Resolver {
    let decoded = load::from_sources([("cluster.yaml", CLUSTER)]);
    Resolver::new(decoded, Settings::default()).with_explanations(level)
}

/// `value` to JSON text and back, and through a `serde_json::Value` (owned strings) and back:
/// equal to the original each time, and written again as the same text.
#[track_caller]
fn round_trip<T: Serialize + DeserializeOwned + PartialEq + Debug>(what: &str, value: &T) {
    let text = serde_json::to_string_pretty(value).expect("serializes");
    let back: T = serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{what} does not read back: {e}\n{text}"));
    assert_eq!(&back, value, "{what} read back from its text");
    let again = serde_json::to_string_pretty(&back).expect("serializes");
    assert_eq!(again, text, "{what} written again");
    let tree = serde_json::to_value(value).expect("serializes");
    let from_tree: T = serde_json::from_value(tree)
        .unwrap_or_else(|e| panic!("{what} does not read back from a JSON value: {e}"));
    assert_eq!(&from_tree, value, "{what} read back from a JSON value");
}

fn to(destination: &str) -> Destination {
    destination.parse().expect("a destination")
}

/// Every term of a plan's explanations.
fn terms(doc: &ResolveOut) -> Vec<&TermOut> {
    let mut out = Vec::new();
    for n in &doc.nodes {
        let expls = std::iter::once(&n.fabric_explanation)
            .chain(n.links.iter().map(|l| &l.explanation))
            .chain(n.routes.iter().map(|r| &r.explanation))
            .chain(n.devices.iter().map(|d| &d.explanation));
        for e in expls {
            let e = e.as_ref().expect("explained");
            out.push(&*e.bound);
            out.extend(e.terms.iter().flatten().map(|t| &**t));
        }
    }
    out
}

#[test]
fn plans_read_back_at_both_levels() {
    for level in [Explanations::None, Explanations::Bound, Explanations::Full] {
        let r = resolver(level);
        let doc = r.plan_all();
        let explained = doc.nodes.iter().all(|n| n.fabric_explanation.is_some());
        assert_eq!(explained, level != Explanations::None, "{level:?}");
        round_trip(&format!("plan_all at {level:?}"), &doc);
        for n in &doc.nodes {
            round_trip(&format!("plan of {} at {level:?}", n.name), n);
        }
        // The cluster carries what the typed fields can hold.
        let roles: Vec<NodeRole> = doc.nodes.iter().map(|n| n.role).collect();
        assert!(roles.contains(&NodeRole::Worker) && roles.contains(&NodeRole::Gateway));
        let links: Vec<(LinkKind, Protocol)> = doc
            .nodes
            .iter()
            .flat_map(|n| n.links.iter().map(|l| (l.kind, l.protocol)))
            .collect();
        for kind in [
            LinkKind::Mesh,
            LinkKind::Uplink,
            LinkKind::Delivery,
            LinkKind::PoolMesh,
            LinkKind::Transit,
        ] {
            assert!(links.iter().any(|l| l.0 == kind), "{kind}");
        }
        for protocol in [Protocol::WireGuard, Protocol::Geneve] {
            assert!(links.iter().any(|l| l.1 == protocol), "{protocol}");
        }
        let routes: Vec<(RouteType, RouteKind)> = doc
            .nodes
            .iter()
            .flat_map(|n| n.routes.iter().map(|r| (r.ty, r.kind)))
            .collect();
        for ty in [
            RouteType::PodCidr,
            RouteType::NodeCidr,
            RouteType::RoutedCidr,
            RouteType::NodePod,
            RouteType::NodeAddress,
        ] {
            assert!(routes.iter().any(|r| r.0 == ty), "{ty}");
        }
        for kind in [RouteKind::Direct, RouteKind::Gateway, RouteKind::Transit] {
            assert!(routes.iter().any(|r| r.1 == kind), "{kind}");
        }
        assert!(doc.nodes.iter().any(|n| n.published.is_some()));
        assert!(doc.diagnostics.iter().any(|d| d.source.is_some()));
        if level == Explanations::None {
            continue;
        }
        let objects: Vec<&ObjectRef> = terms(&doc)
            .iter()
            .filter_map(|t| t.object.as_ref())
            .collect();
        assert!(objects.contains(&&ObjectRef::new(Kind::SiteGatewayPoolAssignment, "spokes")));
        assert!(objects.contains(&&ObjectRef::new(Kind::SitePeering, "ac")));
        if level == Explanations::Full {
            assert!(objects.contains(&&ObjectRef::new(Kind::Node, "wb")));
        }
    }
}

#[test]
fn object_references_keep_the_wire_text() {
    let r = resolver(Explanations::Bound);
    let wa = r.plan("wa").expect("wa");
    let link = wa.links.iter().find(|l| &*l.peer == "wc").expect("wa-wc");
    let explained = link.explanation.as_ref().expect("explained");
    let object = explained.bound.object.clone().expect("a cap binds");
    assert_eq!(object, ObjectRef::new(Kind::SitePeering, "ac"));
    let json = serde_json::to_value(&*explained.bound).expect("serializes");
    assert_eq!(json["object"], "SitePeering/ac");
    let route = &wa.routes[0];
    let json = serde_json::to_value(route).expect("serializes");
    assert_eq!(json["destination"], route.destination.to_string());
    assert_eq!(json["type"], route.ty.as_str());
    assert_eq!(json["kind"], route.kind.as_str());
    assert!("Nope/x".parse::<ObjectRef>().is_err());
    assert!("Site/".parse::<ObjectRef>().is_err());
    assert_eq!(
        "Node/a/b".parse::<ObjectRef>(),
        Ok(ObjectRef::new(Kind::Node, "a/b"))
    );
}

#[test]
fn what_ifs_read_back() {
    for level in [Explanations::Bound, Explanations::Full] {
        let r = resolver(level);
        let cases = [
            (
                Mutation::SetCap {
                    kind: Kind::SiteGatewayPoolAssignment,
                    name: "spokes".into(),
                    mtu: 1300,
                },
                Strategy::PerValue,
            ),
            (
                Mutation::Underlay {
                    node: "h1".into(),
                    mtu: 1400,
                },
                Strategy::NearNodes,
            ),
            (Mutation::Demote { node: "h2".into() }, Strategy::AllNodes),
        ];
        for (m, strategy) in cases {
            let w: WhatIf = r.what_if(std::slice::from_ref(&m)).expect("applies");
            assert_eq!(w.strategy, strategy, "{m}");
            assert!(!w.changes.is_empty(), "{m}");
            round_trip(&format!("what-if {m} at {level:?}"), &w);
            round_trip(&format!("digest of {m}"), &Digest::of(&w.changes));
            round_trip(&format!("mutation {m}"), &m);
        }
    }
}

/// The first value of an explanation: the route the kernel forwards by, with its hops.
fn first_hops(r: &Resolver, node: &str, dest: &str) -> (Vec<std::sync::Arc<HopOut>>, Explanation) {
    let why = r.explain(node, to(dest)).expect("a route");
    let hops = why.values[0].hops.clone().unwrap_or_default();
    (hops, why)
}

#[test]
fn explanations_and_hops_read_back() {
    let r = resolver(Explanations::Bound);
    for (node, dest) in [
        ("wa", "10.102.0.5"),
        ("wa", "172.20.1.1"),
        ("wa", "10.103.0.9"),
        ("h1", "10.1.0.1"),
        ("wb", "10.101.0.0/16"),
        ("wc", "10.102.0.1"),
    ] {
        let why = r.explain(node, to(dest)).expect("a route");
        assert!(why.values.iter().all(|v| !v.terms.is_empty()));
        round_trip(&format!("explain {node} {dest}"), &why);
    }
    for node in ["wa", "h1"] {
        let all = r.explain(node, Question::Everything).expect("a node");
        assert!(all.values.iter().any(|v| v.subject == Subject::Fabric));
        round_trip(&format!("explain {node}"), &all);
    }
    let peer = r
        .explain("wa", Question::Peer("h1".into()))
        .expect("a link");
    round_trip("explain wa --peer h1", &peer);
    let (routed, _) = first_hops(&r, "wa", "172.20.1.1");
    assert_eq!(routed.last().map(|h| h.kind), Some(HopKind::Routed));
    let (via_h1, why) = first_hops(&r, "wa", "10.102.0.5");
    assert!(
        via_h1
            .iter()
            .any(|h| h.kind == HopKind::Link(LinkKind::Uplink))
    );
    let published = via_h1.iter().find_map(|h| h.published.as_ref());
    let published = published.expect("h1 published for B's pods");
    assert_eq!(
        published.term.object,
        Some(ObjectRef::new(Kind::GatewayPoolNode, "h1"))
    );
    assert!(published.term.location.is_some());
    assert!(
        why.diagnostics
            .iter()
            .any(|d| d.code.as_str() == "W-PUBLISHED-STALE")
    );
}

#[test]
fn diagnostics_read_back() {
    let r = resolver(Explanations::Bound);
    let diags: Vec<Diagnostic> = r.diagnostics().to_vec();
    assert!(diags.iter().any(|d| d.source.is_some()));
    round_trip("diagnostics", &diags);
    let out: Vec<DiagOut> = diags.iter().map(DiagOut::from).collect();
    round_trip("diagnostics in output", &out);
    let json = serde_json::to_value(&out[0]).expect("serializes");
    assert_eq!(json["severity"], diags[0].severity.as_str());
    assert_eq!(json["code"], diags[0].code.as_str());
}

#[test]
fn probe_targets_and_reports_read_back() {
    let r = resolver(Explanations::Bound);
    for node in ["wa", "h1", "wb"] {
        let targets: Vec<Target> = r.probe_targets(node).expect("a node");
        assert!(!targets.is_empty());
        round_trip(&format!("probe targets of {node}"), &targets);
        let links = targets
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let underlay = (i % 2 == 0).then_some(t.planned_outer().saturating_sub(10));
                judge(
                    t,
                    Measured {
                        underlay,
                        link: Some(t.link_mtu),
                        probes: 3,
                    },
                )
            })
            .collect();
        let report = ProbeReport::new(node.into(), links, r.diagnostics());
        round_trip(&format!("probe report of {node}"), &report);
    }
}
