//! Invariants 3 (monotonicity), 4 (locality) and 6 (incremental = full) of `mtu.md` §10 as
//! property tests over random topologies; regressions persist in the root
//! `proptest-regressions/`.

use mtu_solver::Solver;
use mtu_solver::incremental::{Event, Incremental, State};
use mtu_solver::snapshot::{Item, items};
use mtu_solver::whatif::{Input, Mutation, apply, diff};
use proptest::prelude::*;
use std::collections::BTreeMap;
use test_utils::testkit::{TopoSpec, arb_spec, proptest_config};
use topology_core::decode::{RawObject, decode};
use topology_core::ids::NodeId;
use topology_core::model::Topology;
use topology_core::vocab::Kind;

fn objects(spec: &TopoSpec) -> Vec<RawObject> {
    let mut out = Vec::new();
    for (i, doc) in spec.documents().iter().enumerate() {
        let name = format!("doc{i}.yaml");
        let d = decode([(name.as_str(), doc.as_bytes())]);
        assert!(
            d.diagnostics.is_empty(),
            "generator produced a broken document: {:?}",
            d.diagnostics
        );
        out.extend(d.objects);
    }
    out
}

fn input(objs: Vec<RawObject>) -> Input {
    Input {
        objects: objs,
        diagnostics: Vec::new(),
        settings: Default::default(),
    }
}

fn values(input: &Input) -> BTreeMap<(String, Item), u32> {
    let st = State::full(input);
    st.nodes
        .into_iter()
        .flat_map(|(n, items)| {
            items
                .iter()
                .map(|(i, v)| ((n.clone(), i.clone()), *v))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Objects that carry a cap, by kind and name.
fn cap_objects(objs: &[RawObject]) -> Vec<(Kind, String)> {
    objs.iter()
        .filter(|o| {
            matches!(
                o.kind(),
                Kind::Site
                    | Kind::GatewayPool
                    | Kind::SitePeering
                    | Kind::SiteGatewayPoolAssignment
                    | Kind::GatewayPoolPeering
            )
        })
        .map(|o| (o.kind(), o.name().to_string()))
        .collect()
}

fn current_cap(objs: &[RawObject], kind: Kind, name: &str) -> Option<u32> {
    objs.iter()
        .find(|o| o.kind() == kind && o.name() == name)
        .and_then(|o| match o {
            RawObject::Site(s) => s.cap.as_ref().map(|c| c.mtu),
            RawObject::Pool(p) => p.cap.as_ref().map(|c| c.mtu),
            RawObject::SitePeering(r) | RawObject::Assignment(r) | RawObject::PoolPeering(r) => {
                r.cap.as_ref().map(|c| c.mtu)
            }
            _ => None,
        })
}

proptest! {
    #![proptest_config(proptest_config(1000, concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/incremental.txt")))]

    /// Invariant 6: any event order, one at a time or squashed, equals a full resolve.
    #[test]
    fn incremental_equals_full(spec in arb_spec(), seed in any::<u64>(), pick in any::<prop::sample::Index>(), new_cap in 576u32..9000) {
        let objs = objects(&spec);
        let full = State::full(&input(objs.clone()));
        // Shuffled, one event at a time.
        let mut order: Vec<usize> = (0..objs.len()).collect();
        let mut x = seed | 1;
        for i in (1..order.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let mut inc = Incremental::new(Default::default());
        for i in &order {
            inc.apply([Event::Apply(objs[*i].clone())]);
        }
        prop_assert!(inc.state().same_values(&full), "shuffled stream differs from a full resolve");
        // Reversed.
        let mut rev = Incremental::new(Default::default());
        for o in objs.iter().rev() {
            rev.apply([Event::Apply(o.clone())]);
        }
        prop_assert!(rev.state().same_values(&full), "reversed stream differs");
        // Squashed into one batch.
        let mut sq = Incremental::new(Default::default());
        sq.apply(objs.iter().cloned().map(Event::Apply));
        prop_assert!(sq.state().same_values(&full), "squashed batch differs");
        // Updates and deletes: change one object's cap, delete one object, re-add it.
        let caps = cap_objects(&objs);
        if !caps.is_empty() {
            let (kind, name) = caps[pick.index(caps.len())].clone();
            let mut changed = input(objs.clone());
            apply(&mut changed, &Mutation::SetCap { kind, name: name.clone(), mtu: new_cap }).unwrap();
            let updated = changed.objects.iter().find(|o| o.kind() == kind && o.name() == name).unwrap().clone();
            inc.apply([Event::Apply(updated)]);
            prop_assert!(inc.state().same_values(&State::full(&changed)), "cap update differs");
            inc.apply([Event::Delete { kind, name: name.clone() }]);
            let mut deleted = changed.clone();
            deleted.objects.retain(|o| !(o.kind() == kind && o.name() == name));
            prop_assert!(inc.state().same_values(&State::full(&deleted)), "delete differs");
            let original = objs.iter().find(|o| o.kind() == kind && o.name() == name).unwrap().clone();
            inc.apply([Event::Apply(original)]);
            prop_assert!(inc.state().same_values(&full), "re-adding the original differs");
        }
    }

    /// Invariant 3: lowering a valid cap (or setting one) never raises a value; raising it back
    /// never lowers one.
    #[test]
    fn caps_are_monotone(spec in arb_spec(), pick in any::<prop::sample::Index>(), cut in 1u32..3000) {
        let objs = objects(&spec);
        let caps = cap_objects(&objs);
        prop_assume!(!caps.is_empty());
        let (kind, name) = caps[pick.index(caps.len())].clone();
        let base = input(objs.clone());
        let before = values(&base);
        let old = current_cap(&objs, kind, &name).unwrap_or(9000);
        let lower = old.saturating_sub(cut).max(576);
        let mut lowered = base.clone();
        apply(&mut lowered, &Mutation::SetCap { kind, name: name.clone(), mtu: lower }).unwrap();
        let after = values(&lowered);
        prop_assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>());
        for (k, v) in &after {
            prop_assert!(*v <= before[k], "{:?} rose from {} to {} when {}/{} went {} -> {}", k, before[k], v, kind, name, old, lower);
        }
        // Upward recovery: back to the original never lowers.
        let back = diff(&lowered, &base, mtu_solver::Explanations::Bound);
        for c in &back.changes {
            prop_assert!(c.after >= c.before, "{:?} fell when the cap was raised back", c);
        }
    }

    /// Invariant 3 for the other inputs: agent mtu, underlays and published values.
    #[test]
    fn other_inputs_are_monotone(spec in arb_spec(), pick in any::<prop::sample::Index>(), cfg in 576u32..9000, u in 576u32..9000) {
        let objs = objects(&spec);
        let base = input(objs.clone());
        let before = values(&base);
        let topo = base.build_topology();
        let mut lowered = base.clone();
        lowered.settings.cfg_mtu = cfg;
        if !topo.nodes.is_empty() {
            let n = &topo.nodes[pick.index(topo.nodes.len())];
            let cur = n.underlay.as_ref().map(|x| x.mtu).unwrap_or(1500);
            lowered.settings.underlay_overrides.insert(n.name.to_string(), u.min(cur));
        }
        // Lower every published value by 100.
        for o in lowered.objects.iter_mut() {
            if let RawObject::GatewayPoolNode(g) = o {
                for (_, m) in g.published.iter_mut() {
                    *m = m.saturating_sub(100).max(576);
                }
            }
        }
        let after = values(&lowered);
        prop_assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>());
        for (k, v) in &after {
            prop_assert!(*v <= before[k], "{:?} rose from {} to {}", k, before[k], v);
        }
    }

    /// Invariant 2 with probed path MTUs (D13): writing a lower `path-mtu` entry about a peer,
    /// and lowering every entry written, raises no value; and the fabric does not move, since a
    /// path MTU bounds the routes over its link, not pods.
    #[test]
    fn path_mtus_are_monotone_and_leave_the_fabric(
        spec in arb_spec(),
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
        p in 576u32..9000,
    ) {
        let objs = objects(&spec);
        let base = input(objs.clone());
        let before = values(&base);
        let topo = base.build_topology();
        let mut lowered = base.clone();
        for o in lowered.objects.iter_mut() {
            if let RawObject::Node(n) = o
                && let Some(paths) = n.path_mtu.as_mut()
            {
                for e in paths.entries.iter_mut() {
                    e.mtu = e.mtu.saturating_sub(100).max(576);
                }
            }
        }
        if topo.nodes.len() > 1 {
            let (x, y) = (a.index(topo.nodes.len()), b.index(topo.nodes.len()));
            let (na, nb) = (&topo.nodes[x], &topo.nodes[y]);
            let cur = topo.path_mtu(NodeId::from_idx(x), NodeId::from_idx(y)).map_or(u32::MAX, |c| c.mtu);
            let m = Mutation::PathMtu { node: na.name.to_string(), peer: nb.name.to_string(), mtu: Some(p.min(cur).max(576)) };
            // A node without a Node object (slice entries only) has nowhere to write it.
            let _ = apply(&mut lowered, &m);
        }
        let after = values(&lowered);
        prop_assert_eq!(before.keys().collect::<Vec<_>>(), after.keys().collect::<Vec<_>>());
        for (k, v) in &after {
            prop_assert!(*v <= before[k], "{:?} rose from {} to {}", k, before[k], v);
            if k.1 == Item::Fabric {
                prop_assert_eq!(*v, before[k], "{:?}: a path MTU moved the fabric", k);
            }
        }
    }

    /// Invariant 4: changing the cap of O changes only values whose explanation lists O (before
    /// or after), directly or inside a component cap.
    #[test]
    fn caps_are_local(spec in arb_spec(), pick in any::<prop::sample::Index>(), mtu in 576u32..9000, clear in any::<bool>()) {
        let objs = objects(&spec);
        let caps = cap_objects(&objs);
        prop_assume!(!caps.is_empty());
        let (kind, name) = caps[pick.index(caps.len())].clone();
        let base = input(objs.clone());
        let mut after = base.clone();
        let m = if clear { Mutation::ClearCap { kind, name: name.clone() } } else { Mutation::SetCap { kind, name: name.clone(), mtu } };
        apply(&mut after, &m).unwrap();
        let tb: Topology = base.build_topology();
        let ta: Topology = after.build_topology();
        let Some(o) = tb.obj_ref(kind, &name) else { return Ok(()) };
        let mut sb = Solver::new(&tb, base.settings.clone());
        let mut sa = Solver::new(&ta, after.settings.clone());
        for i in 0..tb.nodes.len() {
            let n = NodeId::from_idx(i);
            let pb = sb.plan(n);
            let pa = sa.plan(n);
            let ib = items(&tb, &pb);
            let ia = items(&ta, &pa);
            prop_assert_eq!(ib.len(), ia.len());
            for ((kb, vb, eb), (ka, va, ea)) in ib.iter().zip(ia.iter()) {
                prop_assert_eq!(kb, ka);
                if vb != va {
                    let listed = sb.explanations().objects(*eb, &tb).contains(&o) || sa.explanations().objects(*ea, &ta).contains(&o);
                    prop_assert!(listed, "{} {:?} changed {} -> {} but its explanation does not list {}/{}", tb.node(n).name, kb, vb, va, kind, name);
                }
            }
        }
    }
}

/// A Node update that removes its only IPv4 address (the outer family of its links becomes
/// IPv6, `mtu.md` §1), and the update that gives it back, as events: each state equals a full
/// resolve of the same objects.
#[test]
fn an_address_family_change_as_an_event_equals_a_full_resolve() {
    const BASE: &str = include_str!("fixtures/address-family.yaml");
    let decode_all = |yaml: &str| decode([("family.yaml", yaml.as_bytes())]).objects;
    let base = decode_all(BASE);
    let v6_only = decode_all(&BASE.replace(r#", {type: InternalIP, address: 10.1.0.3}"#, ""));
    let a3 = |objs: &[RawObject]| {
        objs.iter()
            .find(|o| o.kind() == Kind::Node && o.name() == "a3")
            .cloned()
            .expect("a3")
    };
    let mut inc = Incremental::new(Default::default());
    inc.apply(base.iter().cloned().map(Event::Apply));
    let link = |st: &State| {
        st.nodes
            .iter()
            .find(|(n, _)| &**n == "a3")
            .and_then(|(_, items)| {
                items
                    .iter()
                    .find(|(i, _)| matches!(i, Item::Link { .. }))
                    .map(|(_, v)| *v)
            })
    };
    assert_eq!(link(&inc.state()), Some(1342));
    inc.apply([Event::Apply(a3(&v6_only))]);
    assert!(
        inc.state()
            .same_values(&State::full(&input(v6_only.clone())))
    );
    assert_eq!(link(&inc.state()), Some(1322));
    inc.apply([Event::Apply(a3(&base))]);
    assert!(inc.state().same_values(&State::full(&input(base))));
    assert_eq!(link(&inc.state()), Some(1342));
}
