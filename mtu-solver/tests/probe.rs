//! Probe targets read from real plans, searched over scripted paths and judged.

use mtu_solver::load;
use mtu_solver::probe::{Answer, Measured, Search, Verdict, judge};
use mtu_solver::resolver::Resolver;
use mtu_solver::{Settings, report};
use std::path::PathBuf;

fn resolver(example: &str, settings: Settings) -> Resolver {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(example);
    Resolver::new(load::load(&[dir]).expect("example"), settings)
}

/// The pod CIDRs of a node as the example's manifests give them.
fn pod_cidrs(r: &Resolver, node: &str) -> Vec<ipnet::IpNet> {
    let topo = r.topology();
    let id = topo.node_id(node).expect("node");
    topo.node(id).pod_cidrs.to_vec()
}

#[test]
fn targets_follow_the_plan_link_by_link() {
    for example in ["01-single-site", "03-hub-and-spoke", "04-transit-chain"] {
        let r = resolver(example, Settings::default());
        for name in r.node_names().map(str::to_string).collect::<Vec<_>>() {
            let plan: report::NodeOut = r.plan(&name).expect("plan");
            let targets = r.probe_targets(&name).expect("targets");
            let peers: Vec<&str> = targets.iter().map(|t| &*t.peer).collect();
            let plan_peers: Vec<&str> = plan.links.iter().map(|l| &*l.peer).collect();
            assert_eq!(peers, plan_peers, "{example} {name}");
            for (t, l) in targets.iter().zip(&plan.links) {
                assert_eq!(t.link_mtu, l.mtu, "{example} {name}→{}", t.peer);
                // The link never sends more than the underlay it assumed.
                assert!(t.planned_outer() <= t.planned_underlay, "{example} {t:?}");
                assert!(t.underlay_term.starts_with("underlay of "), "{t:?}");
                let explained = l.explanation.as_ref().expect("explained at the bound term");
                assert_eq!(t.link_term, explained.bound.source, "{example} {t:?}");
                if let Some(gw) = t.tunnel_address {
                    assert!(
                        pod_cidrs(&r, &t.peer).iter().any(|c| c.contains(&gw)),
                        "{example}: {gw} is not in {}'s pod CIDRs",
                        t.peer
                    );
                }
            }
        }
    }
}

#[test]
fn the_planned_underlay_is_the_lower_end() {
    let r = resolver("01-single-site", Settings::default());
    let first = r.node_names().next().expect("a node").to_string();
    let mut s2 = Settings::default();
    s2.underlay_overrides.insert(first.clone(), 1400);
    let lowered = resolver("01-single-site", s2);
    for t in lowered.probe_targets(&first).expect("targets") {
        assert_eq!(t.planned_underlay, 1400, "{t:?}");
        assert_eq!(t.underlay_term, format!("underlay of {first} 1400 (given)"));
    }
}

/// Searches every link of a node over paths carrying `path` bytes (local devices of 1500) and
/// judges them.
fn probe_all(r: &Resolver, node: &str, path: u32) -> Vec<(String, Verdict, Option<String>)> {
    r.probe_targets(node)
        .expect("targets")
        .iter()
        .map(|t| {
            let wire = |size: u32, limit: u32| {
                if size > 1500 {
                    Answer::TooBig
                } else if size <= limit {
                    Answer::Answered
                } else {
                    Answer::Lost
                }
            };
            let under = Search {
                min: 576,
                max: 1500,
                attempts: 2,
                expect: Some(t.planned_underlay),
            }
            .run(|s| wire(s, path));
            let link = t.tunnel_address.map(|_| {
                Search {
                    min: 576,
                    max: t.link_mtu + 1,
                    attempts: 2,
                    expect: Some(t.link_mtu),
                }
                .run(|s| wire(s + t.overhead, path))
            });
            let m = Measured {
                underlay: under.largest,
                link: link.and_then(|f| f.largest),
                probes: under.probes + link.map_or(0, |f| f.probes),
            };
            let p = judge(t, m);
            (p.peer.to_string(), p.verdict, p.contradicts)
        })
        .collect()
}

#[test]
fn a_path_narrower_than_the_default_underlay_is_a_black_hole_on_every_link() {
    let r = resolver("01-single-site", Settings::default());
    let node = r.node_names().next().expect("a node").to_string();
    let judged = probe_all(&r, &node, 1400);
    assert!(!judged.is_empty());
    for (peer, verdict, contradicts) in &judged {
        assert_eq!(*verdict, Verdict::BlackHole, "{node}→{peer}");
        let c = contradicts.as_deref().unwrap_or_default();
        assert!(
            c.starts_with("underlay of ") && c.contains("1500 (default)"),
            "{c}"
        );
    }
    // The same paths at full size: every link ok.
    assert!(
        probe_all(&r, &node, 1500)
            .iter()
            .all(|j| j.1 == Verdict::Ok)
    );
}

/// A pair's path MTU (D13) is what the plan assumes for that link alone: its target's planned
/// underlay and the term a probe would contradict name the path, so a probe finding exactly
/// the path is ok, while the node's other links keep the underlay.
#[test]
fn a_path_mtu_is_the_planned_underlay_of_its_link_only() {
    let mut y = String::from(
        "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata: {name: s}\nspec:\n  nodeCidrs: [10.0.0.0/16]\n  podCidrAssignments: [{cidrBlocks: [10.96.0.0/12]}]\n  tunnelProtocol: VXLAN\n",
    );
    for (i, n, note) in [(1, "a", "b=1400"), (2, "b", ""), (3, "c", "")] {
        y += &format!(
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {n}\n  labels: {{net.unbounded-cloud.io/site: s}}\n  annotations: {{mtu.unbounded-cloud.io/path-mtu: \"{note}\"}}\nspec: {{podCIDRs: [10.96.{i}.0/24]}}\nstatus: {{addresses: [{{type: InternalIP, address: 10.0.0.{i}}}]}}\n"
        );
    }
    let r = Resolver::new(
        load::from_sources([("t.yaml", y.as_bytes())]),
        Settings::default(),
    );
    for node in ["a", "b"] {
        let targets = r.probe_targets(node).expect("targets");
        let other = if node == "a" { "b" } else { "a" };
        let t = targets.iter().find(|t| &*t.peer == other).expect("link");
        assert_eq!((t.planned_underlay, t.link_mtu), (1400, 1350), "{t:?}");
        assert_eq!(t.underlay_term, "path a↔b 1400 (probed by a)");
        assert_eq!((t.node_underlay, t.peer_underlay), (1500, 1500));
        let c = targets.iter().find(|t| &*t.peer == "c").expect("link");
        assert_eq!((c.planned_underlay, c.link_mtu), (1500, 1450), "{c:?}");
    }
    let judged = |path| {
        probe_all(&r, "a", path)
            .into_iter()
            .find(|(p, ..)| p == "b")
            .expect("b")
    };
    assert_eq!(judged(1400).1, Verdict::Ok);
    let (_, verdict, contradicts) = judged(1300);
    assert_eq!(verdict, Verdict::BlackHole);
    assert_eq!(contradicts.as_deref(), Some("path a↔b 1400 (probed by a)"));
}
