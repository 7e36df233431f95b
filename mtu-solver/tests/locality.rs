//! The node agent's state across turns (`mtu_solver::locality`): a node's plan kept while the
//! input's fingerprint says a change cannot reach it, and re-resolved otherwise, equals a fresh
//! full resolve after every event of a random stream (invariant 6 of `mtu.md` §10 for the
//! agent, resting on invariant 4); regressions persist in the root `proptest-regressions/`.

use mtu_solver::Solver;
use mtu_solver::locality::{Delta, Difference, Fingerprint, Footprint, Nodes, Part, Tracker};
use mtu_solver::snapshot::{Item, items};
use mtu_solver::whatif::{Input, Mutation, apply};
use proptest::prelude::*;
use test_utils::testkit::{TopoSpec, arb_spec, proptest_config};
use topology_core::decode::{RawObject, decode};
use topology_core::vocab::Kind;

fn objects(spec: &TopoSpec) -> Vec<RawObject> {
    let mut out = Vec::new();
    for (i, doc) in spec.documents().iter().enumerate() {
        let name = format!("doc{i}.yaml");
        out.extend(decode([(name.as_str(), doc.as_bytes())]).objects);
    }
    out
}

/// What the agent keeps of the last turn that resolved: the input's fingerprint and settings,
/// the plan's footprint and its values.
struct Kept {
    fingerprint: Fingerprint,
    settings: mtu_solver::Settings,
    footprint: Footprint,
    values: Option<Vec<(Item, u32)>>,
}

/// Resolves `node` on `input`: its values (`None` when the node is gone) and the footprint.
fn resolve(input: &Input, node: &str) -> (Option<Vec<(Item, u32)>>, Footprint) {
    let topo = input.build_topology();
    let Some(id) = topo.node_id(node) else {
        return (None, Footprint::default());
    };
    let mut solver = Solver::new(&topo, input.settings.clone());
    let plan = solver.plan(id);
    let values = items(&topo, &plan)
        .into_iter()
        .map(|(k, v, _)| (k, v))
        .collect();
    let footprint = Footprint::of(&solver, &plan);
    (Some(values), footprint)
}

fn keep(input: &Input, node: &str) -> Kept {
    let (values, footprint) = resolve(input, node);
    Kept {
        fingerprint: Fingerprint::of(&input.objects, &input.diagnostics),
        settings: input.settings.clone(),
        footprint,
        values,
    }
}

/// Objects of the kinds that carry a cap, and the relationships among them.
fn named(objs: &[RawObject], kinds: &[Kind]) -> Vec<(Kind, String)> {
    objs.iter()
        .filter(|o| kinds.contains(&o.kind()))
        .map(|o| (o.kind(), o.name().to_string()))
        .collect()
}

const CAPPED: [Kind; 5] = [
    Kind::Site,
    Kind::GatewayPool,
    Kind::SitePeering,
    Kind::SiteGatewayPoolAssignment,
    Kind::GatewayPoolPeering,
];
const RELATIONS: [Kind; 3] = [
    Kind::SitePeering,
    Kind::SiteGatewayPoolAssignment,
    Kind::GatewayPoolPeering,
];

/// One random event: mostly cap changes, sometimes a relationship toggled, a member removed,
/// an underlay changed (as the agent's setting, or a Node's annotation) or an object deleted.
#[derive(Clone, Debug)]
struct Ev {
    what: u8,
    pick: prop::sample::Index,
    mtu: u32,
}

fn arb_ev() -> impl Strategy<Value = Ev> {
    (0u8..11, any::<prop::sample::Index>(), 576u32..9000).prop_map(|(what, pick, mtu)| Ev {
        what,
        pick,
        mtu,
    })
}

/// Applies `ev` to `input` (a mutation that does not fit is no event).
fn happen(input: &mut Input, ev: &Ev) {
    let caps = named(&input.objects, &CAPPED);
    let relations = named(&input.objects, &RELATIONS);
    let nodes = named(&input.objects, &[Kind::Node]);
    let pick = |v: &[(Kind, String)]| v.get(ev.pick.index(v.len().max(1))).cloned();
    let m = match ev.what {
        0..=4 => pick(&caps).map(|(kind, name)| Mutation::SetCap {
            kind,
            name,
            mtu: ev.mtu,
        }),
        5 => pick(&caps).map(|(kind, name)| Mutation::ClearCap { kind, name }),
        6 => pick(&relations).map(|(kind, name)| Mutation::SetEnabled {
            kind,
            name,
            enabled: ev.mtu % 2 == 0,
        }),
        7 => pick(&nodes).map(|(_, node)| Mutation::Underlay {
            node,
            mtu: ev.mtu.min(1500),
        }),
        10 => {
            // A Node's underlay annotation edited.
            let n = nodes.len();
            if let Some(RawObject::Node(node)) = input
                .objects
                .iter_mut()
                .filter(|o| o.kind() == Kind::Node)
                .nth(ev.pick.index(n.max(1)))
            {
                node.underlay = Some(topology_core::decode::RawUnderlay {
                    mtu: ev.mtu.min(1500),
                    invalid: None,
                });
            }
            None
        }
        8 => {
            // A relationship deleted.
            if let Some((kind, name)) = pick(&relations) {
                input
                    .objects
                    .retain(|o| !(o.kind() == kind && o.name() == name));
            }
            None
        }
        _ => pick(&caps).map(|(kind, name)| Mutation::SetCap { kind, name, mtu: 0 }),
    };
    if let Some(m) = m {
        let _ = apply(input, &m);
    }
}

proptest! {
    #![proptest_config(proptest_config(300, concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/locality.txt")))]

    /// Every node's kept plan equals a fresh resolve after every event; a turn resolves only
    /// when the fingerprint or the settings say the change reaches the node.
    #[test]
    fn kept_plans_equal_full_resolves(spec in arb_spec(), events in prop::collection::vec(arb_ev(), 1..12)) {
        let base = Input { objects: objects(&spec), diagnostics: Vec::new(), settings: Default::default() };
        let names: Vec<String> = base.build_topology().nodes.iter().map(|n| n.name.to_string()).collect();
        let mut kept: Vec<Kept> = names.iter().map(|n| keep(&base, n)).collect();
        let mut input = base;
        for ev in &events {
            happen(&mut input, ev);
            let fingerprint = Fingerprint::of(&input.objects, &input.diagnostics);
            for (name, k) in names.iter().zip(kept.iter_mut()) {
                let reaches = k.settings != input.settings
                    || k.fingerprint.reaches(&fingerprint, &k.footprint);
                if reaches {
                    *k = keep(&input, name);
                }
                let (fresh, _) = resolve(&input, name);
                prop_assert_eq!(&k.values, &fresh, "{} after {:?} (reaches: {})", name, ev, reaches);
            }
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(64, concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/locality.txt")))]

    /// An input fingerprinted in parts (one per object, as a cache keeps them, or in any
    /// chunks), its findings in any order, is fingerprinted as the whole.
    #[test]
    fn parts_fingerprint_as_the_whole(
        spec in arb_spec(),
        chunk in 1usize..6,
        rotate in 0usize..4,
        together in any::<bool>(),
    ) {
        let nodes = if together { Nodes::Together } else { Nodes::Each };
        let objs = objects(&spec);
        let docs = spec.documents();
        let mut diags = decode(docs.iter().map(|d| ("all.yaml", d.as_bytes()))).diagnostics;
        let whole = Fingerprint::with(&objs, &diags, nodes);
        if !diags.is_empty() {
            let r = rotate % diags.len();
            diags.rotate_left(r);
        }
        let (first, rest) = diags.split_at(diags.len() / 2);
        let mut parts: Vec<Part> = objs.chunks(chunk).map(|c| Part::with(c, &[], nodes)).collect();
        parts.push(Part::of([], rest));
        parts.insert(0, Part::of([], first));
        prop_assert_eq!(Fingerprint::of_parts(&parts), whole);
    }
}

/// A difference with its object keys as a set (a delta lists them in no particular order).
fn unordered(
    d: Difference,
) -> (
    u8,
    std::collections::HashSet<mtu_solver::locality::ObjectKey>,
) {
    match d {
        Difference::Caps(k) => (0, k.into_iter().collect()),
        Difference::Underlays(k) => (1, k.into_iter().collect()),
        Difference::Structure => (2, Default::default()),
    }
}

/// The parts a cache keeps: one per object, by kind and name, Nodes held as `nodes` says. Each
/// part also carries the object's own findings as findings of no object, so that parts come and
/// go with findings.
fn parts_of(objs: &[RawObject], nodes: Nodes) -> std::collections::HashMap<(Kind, String), Part> {
    objs.iter()
        .map(|o| {
            let part = Part::with([o], &o.meta().diags, nodes);
            ((o.kind(), o.name().to_string()), part)
        })
        .collect()
}

/// The whole fingerprint of what [`parts_of`] splits.
fn whole_of(objs: &[RawObject], nodes: Nodes) -> Fingerprint {
    let diags: Vec<_> = objs.iter().flat_map(|o| o.meta().diags.clone()).collect();
    Fingerprint::with(objs, &diags, nodes)
}

proptest! {
    #![proptest_config(proptest_config(128, concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/locality.txt")))]

    /// A tracker fed only the parts that changed holds the fingerprint of the whole input, and
    /// its delta since the mark answers as the whole fingerprints compared: the same
    /// difference, and the same verdict for every node's footprint at the mark.
    #[test]
    fn a_tracker_answers_as_whole_fingerprints(
        spec in arb_spec(),
        events in prop::collection::vec((arb_ev(), any::<bool>()), 1..12),
        together in any::<bool>(),
    ) {
        let nodes = if together { Nodes::Together } else { Nodes::Each };
        let mut input = Input { objects: objects(&spec), diagnostics: Vec::new(), settings: Default::default() };
        let names: Vec<String> = input.build_topology().nodes.iter().map(|n| n.name.to_string()).collect();
        let mut parts = parts_of(&input.objects, nodes);
        let mut tracker = Tracker::default();
        tracker.reset(parts.values());
        prop_assert_eq!(tracker.delta(), Delta::structure(), "nothing marked yet");
        tracker.mark();
        let mut marked = keep_all(&input, &names, nodes);
        for (ev, mark) in &events {
            happen(&mut input, ev);
            let now = parts_of(&input.objects, nodes);
            let mut refused = false;
            for (key, old) in &parts {
                if now.get(key) != Some(old) {
                    refused |= tracker.replace(Some(old), None).is_err();
                }
            }
            for (key, new) in &now {
                if parts.get(key) != Some(new) {
                    refused |= tracker.replace(None, Some(new)).is_err();
                }
            }
            parts = now;
            let whole = whole_of(&input.objects, nodes);
            if refused {
                tracker.reset(parts.values());
                prop_assert_eq!(tracker.delta(), Delta::structure());
            } else {
                prop_assert_eq!(unordered(tracker.delta().difference()),
                    unordered(marked.0.difference(&whole)), "after {:?}", ev);
                for (name, fp) in names.iter().zip(&marked.1) {
                    prop_assert_eq!(tracker.delta().reaches(fp), marked.0.reaches(&whole, fp),
                        "{} after {:?}", name, ev);
                }
            }
            prop_assert_eq!(tracker.fingerprint(), &whole);
            if *mark || refused {
                tracker.mark();
                marked = keep_all(&input, &names, nodes);
            }
        }
    }
}

/// The whole fingerprint of `input` and the footprint of each of `names`' plans on it.
fn keep_all(input: &Input, names: &[String], nodes: Nodes) -> (Fingerprint, Vec<Footprint>) {
    (
        whole_of(&input.objects, nodes),
        names.iter().map(|n| resolve(input, n).1).collect(),
    )
}

/// Every node's plan on `topo`, rendered with every explanation term (values, binding terms and
/// their sources).
fn rendered(topo: &topology_core::model::Topology) -> serde_json::Value {
    let mut solver = Solver::new(topo, Default::default());
    let plans: Vec<_> = (0..topo.nodes.len())
        .map(|i| solver.plan(topology_core::ids::NodeId::from_idx(i)))
        .collect();
    let mut r = mtu_solver::report::Renderer::new(&solver, mtu_solver::Explanations::Full);
    let doc = mtu_solver::report::resolve_out(topo, &mut r, &plans, &topo.diagnostics);
    serde_json::to_value(doc).unwrap_or_default()
}

proptest! {
    #![proptest_config(proptest_config(96, concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/locality.txt")))]

    /// A topology kept across events that takes each change of caps alone in place
    /// (`Delta::take_caps`, as the node agent does) and is built again on any other change
    /// resolves every node as a topology built from the objects: the same values, binding terms
    /// and sources.
    #[test]
    fn caps_taken_in_place_resolve_as_a_build(
        spec in arb_spec(),
        events in prop::collection::vec(arb_ev(), 1..10),
    ) {
        let mut input = Input { objects: objects(&spec), diagnostics: Vec::new(), settings: Default::default() };
        let mut kept = input.build_topology();
        let mut marked = Fingerprint::of(&input.objects, &input.diagnostics);
        for ev in &events {
            happen(&mut input, ev);
            let now = Fingerprint::of(&input.objects, &input.diagnostics);
            let delta = marked.delta(&now);
            if !delta.take_caps(&mut kept, &input.objects) {
                kept = input.build_topology();
            }
            marked = now;
            prop_assert_eq!(rendered(&kept), rendered(&input.build_topology()), "after {:?}", ev);
        }
    }
}

/// Caps of Sites and SitePeerings (component caps) and of other kinds, set, lowered and cleared,
/// are taken in place and change values; a relationship toggled is not a change of caps.
#[test]
fn cap_events_take_caps_in_place() {
    let yaml = r#"
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: a}
spec: {nodeCidrs: ["10.0.0.0/16"], tunnelMTU: 1350}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: b}
spec: {nodeCidrs: ["10.1.0.0/16"]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SitePeering
metadata: {name: ab}
spec: {sites: [a, b], tunnelMTU: 1400}
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {net.unbounded-cloud.io/site: a}}
status: {addresses: [{type: InternalIP, address: 10.0.0.5}]}
---
apiVersion: v1
kind: Node
metadata: {name: nb, labels: {net.unbounded-cloud.io/site: b}}
status: {addresses: [{type: InternalIP, address: 10.1.0.5}]}
"#;
    let base = Input {
        objects: decode([("c.yaml", yaml.as_bytes())]).objects,
        diagnostics: Vec::new(),
        settings: Default::default(),
    };
    let fp = |i: &Input| Fingerprint::of(&i.objects, &i.diagnostics);
    for m in [
        Mutation::SetCap {
            kind: Kind::SitePeering,
            name: "ab".into(),
            mtu: 1300,
        },
        Mutation::SetCap {
            kind: Kind::Site,
            name: "a".into(),
            mtu: 1280,
        },
        Mutation::ClearCap {
            kind: Kind::Site,
            name: "a".into(),
        },
        Mutation::SetCap {
            kind: Kind::Site,
            name: "b".into(),
            mtu: 1300,
        },
    ] {
        let mut after = base.clone();
        apply(&mut after, &m).expect("applies");
        let delta = fp(&base).delta(&fp(&after));
        let mut kept = base.build_topology();
        assert!(delta.take_caps(&mut kept, &after.objects), "{m:?}");
        assert_eq!(rendered(&kept), rendered(&after.build_topology()), "{m:?}");
        assert_ne!(
            rendered(&kept),
            rendered(&base.build_topology()),
            "{m:?} changes a value"
        );
    }
    let mut toggled = base.clone();
    apply(
        &mut toggled,
        &Mutation::SetEnabled {
            kind: Kind::SitePeering,
            name: "ab".into(),
            enabled: false,
        },
    )
    .expect("applies");
    let mut kept = base.build_topology();
    assert!(
        !fp(&base)
            .delta(&fp(&toggled))
            .take_caps(&mut kept, &toggled.objects)
    );
}

/// The property is not vacuous: a cap on a peering of two other Sites does not reach a node,
/// one on its own Site's peering does, and so does a cap set where there was none.
#[test]
fn a_cap_elsewhere_does_not_reach_the_node_and_one_on_its_links_does() {
    let yaml = r#"
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: a}
spec: {nodeCidrs: ["10.0.0.0/16"]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: b}
spec: {nodeCidrs: ["10.1.0.0/16"]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: c}
spec: {nodeCidrs: ["10.2.0.0/16"]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: d}
spec: {nodeCidrs: ["10.3.0.0/16"]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SitePeering
metadata: {name: ab}
spec: {sites: [a, b], tunnelMTU: 1400}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SitePeering
metadata: {name: cd}
spec: {sites: [c, d], tunnelMTU: 1400}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SitePeering
metadata: {name: bd}
spec: {sites: [b, d], enabled: false}
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {net.unbounded-cloud.io/site: a}}
status: {addresses: [{type: InternalIP, address: 10.0.0.5}]}
---
apiVersion: v1
kind: Node
metadata: {name: nb, labels: {net.unbounded-cloud.io/site: b}}
status: {addresses: [{type: InternalIP, address: 10.1.0.5}]}
---
apiVersion: v1
kind: Node
metadata: {name: nc, labels: {net.unbounded-cloud.io/site: c}}
status: {addresses: [{type: InternalIP, address: 10.2.0.5}]}
---
apiVersion: v1
kind: Node
metadata: {name: nd, labels: {net.unbounded-cloud.io/site: d}}
status: {addresses: [{type: InternalIP, address: 10.3.0.5}]}
"#;
    let base = Input {
        objects: decode([("c.yaml", yaml.as_bytes())]).objects,
        diagnostics: Vec::new(),
        settings: Default::default(),
    };
    let k = keep(&base, "n1");
    assert!(k.footprint.contains(Kind::SitePeering, "ab"));
    assert!(!k.footprint.contains(Kind::SitePeering, "cd"));
    let after = |m: Mutation| {
        let mut i = base.clone();
        apply(&mut i, &m).expect("applies");
        Fingerprint::of(&i.objects, &i.diagnostics)
    };
    let cap = |name: &str, mtu: u32| Mutation::SetCap {
        kind: Kind::SitePeering,
        name: name.into(),
        mtu,
    };
    let reaches = |f: &Fingerprint| k.fingerprint.reaches(f, &k.footprint);
    assert!(!reaches(&k.fingerprint), "the same input");
    assert!(!reaches(&after(cap("cd", 1300))), "c–d is not n1's");
    assert!(
        !reaches(&after(Mutation::ClearCap {
            kind: Kind::SitePeering,
            name: "cd".into()
        })),
        "cleared elsewhere"
    );
    assert!(reaches(&after(cap("ab", 1300))), "a–b binds n1's link");
    assert!(
        reaches(&after(cap("bd", 1300))),
        "a cap set where there was none is not in any footprint before"
    );
    assert!(
        reaches(&after(Mutation::SetEnabled {
            kind: Kind::SitePeering,
            name: "cd".into(),
            enabled: false
        })),
        "a relationship toggled is structure"
    );
}
