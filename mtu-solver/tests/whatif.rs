//! What-if against its oracle: the diff of two full resolves (the mutated input resolved from
//! scratch). Every mutation kind on every shipped example topology.

#![allow(clippy::disallowed_methods)] // tests read the shipped examples

use mtu_solver::Explanations::{Bound, Full};
use mtu_solver::Solver;
use mtu_solver::whatif::{Base, Input, Mutation, Strategy, WhatIf, compare, what_if, what_if_on};
use proptest::prelude::*;
use test_utils::testkit::{TopoSpec, arb_spec, proptest_config};
use topology_core::decode::{RawObject, decode};
use topology_core::vocab::Kind;

fn examples() -> Vec<(String, Input)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples");
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        let file = p.join("cluster.yaml");
        if !file.exists() {
            continue;
        }
        let bytes = std::fs::read(&file).unwrap();
        let name = file.display().to_string();
        let d = decode([(name.as_str(), bytes.as_slice())]);
        out.push((
            name,
            Input {
                objects: d.objects,
                diagnostics: d.diagnostics,
                settings: Default::default(),
            },
        ));
    }
    assert!(out.len() >= 4, "examples missing");
    out
}

fn key(w: &WhatIf) -> Vec<(String, String, Option<u32>, Option<u32>)> {
    let mut v: Vec<_> = w
        .changes
        .iter()
        .map(|c| {
            (
                c.node.to_string(),
                format!("{:?}", c.item),
                c.before,
                c.after,
            )
        })
        .collect();
    v.sort();
    v
}

/// Every change with the terms of its explanation after (`--explain full`), order-free: the
/// binding term may differ between two equal-valued terms (ties), the terms may not.
/// A term as compared: name, value, source.
type Term = (String, u32, String);

fn terms(w: &WhatIf) -> Vec<(String, String, Vec<Term>)> {
    let mut v: Vec<_> = w
        .changes
        .iter()
        .map(|c| {
            let mut t: Vec<Term> = c
                .explanation
                .iter()
                .flat_map(|e| e.terms.iter().flatten())
                // A device's link term names the link's binding term, which may differ on ties.
                .map(|t| {
                    let source = match t.source.find(" (bound by ") {
                        Some(i) if t.term.starts_with("link to ") => t.source[..i].to_string(),
                        _ => t.source.clone(),
                    };
                    (t.term.clone(), t.value, source)
                })
                .collect();
            t.sort();
            (c.node.to_string(), format!("{:?}", c.item), t)
        })
        .collect();
    v.sort();
    v
}

fn check(name: &str, base: &Input, muts: &[Mutation]) {
    let fast = what_if(base, muts, Bound).unwrap();
    let mut after = base.clone();
    for m in muts {
        mtu_solver::whatif::apply(&mut after, m).unwrap();
    }
    let oracle = compare(base, &after, Bound);
    // With every term, and on a solver that already resolved every node (warm memos), which
    // is left on the base caps afterwards.
    let resolved = Base::new(base.clone());
    let mut solver = Solver::new(resolved.topology(), base.settings.clone());
    let plans = solver.plan_all();
    let warm = what_if_on(&mut solver, &resolved, muts, Full).unwrap();
    let oracle_full = compare(base, &after, Full);
    assert_eq!(
        key(&warm),
        key(&oracle),
        "{name}: {muts:?} on a resolved solver"
    );
    let (tw, to) = (terms(&warm), terms(&oracle_full));
    let only_warm: Vec<_> = tw.iter().filter(|x| !to.contains(x)).collect();
    let only_oracle: Vec<_> = to.iter().filter(|x| !tw.contains(x)).collect();
    assert!(
        only_warm.is_empty() && only_oracle.is_empty(),
        "{name}: {muts:?}: terms after differ:\n what-if: {only_warm:?}\n oracle: {only_oracle:?}"
    );
    let again = solver.plan_all();
    let vals = |p: &[mtu_solver::NodePlan]| -> Vec<Vec<(u32, u32)>> {
        p.iter()
            .map(|x| {
                x.links
                    .iter()
                    .map(|l| (l.peer.0, l.mtu.mtu.get()))
                    .chain(x.routes.iter().map(|r| (r.kind as u32, r.mtu.mtu.get())))
                    .collect()
            })
            .collect()
    };
    assert_eq!(
        vals(&plans),
        vals(&again),
        "{name}: {muts:?}: base caps not restored"
    );
    assert_eq!(
        key(&fast),
        key(&oracle),
        "{name}: {muts:?} ({} strategy) differs from the diff of two full resolves",
        fast.strategy
    );
    // Every change carries the explanation after, whose bound value is the value after.
    for c in &fast.changes {
        match (c.after, &c.explanation) {
            (Some(v), Some(e)) => assert_eq!(e.bound.value, v, "{name}: {c:?}"),
            (None, None) => {}
            _ => panic!("{name}: explanation presence does not match the value after: {c:?}"),
        }
    }
}

fn capped_objects(input: &Input) -> Vec<(Kind, String)> {
    input
        .objects
        .iter()
        .filter(|o| {
            matches!(
                o,
                RawObject::Site(_)
                    | RawObject::Pool(_)
                    | RawObject::SitePeering(_)
                    | RawObject::Assignment(_)
                    | RawObject::PoolPeering(_)
            )
        })
        .map(|o| (o.kind(), o.name().to_string()))
        .collect()
}

#[test]
fn cap_mutations_equal_two_full_resolves() {
    for (name, base) in examples() {
        for (kind, obj) in capped_objects(&base) {
            for mtu in [1280u32, 600, 9000] {
                check(
                    &name,
                    &base,
                    &[Mutation::SetCap {
                        kind,
                        name: obj.clone(),
                        mtu,
                    }],
                );
            }
            // A cap outside 576..9000 is not a question: refused, not failed closed to 576.
            for mtu in [100_000u32, 575, 9001] {
                let m = Mutation::SetCap {
                    kind,
                    name: obj.clone(),
                    mtu,
                };
                assert_eq!(
                    what_if(&base, std::slice::from_ref(&m), Bound).err(),
                    Some(mtu_solver::whatif::MutationError::CapOutOfRange { mtu }),
                    "{name}: {m:?}"
                );
            }
            check(
                &name,
                &base,
                &[Mutation::ClearCap {
                    kind,
                    name: obj.clone(),
                }],
            );
        }
    }
}

#[test]
fn relationship_mutations_equal_two_full_resolves() {
    for (name, base) in examples() {
        let rels: Vec<(Kind, String)> = capped_objects(&base)
            .into_iter()
            .filter(|(k, _)| {
                matches!(
                    k,
                    Kind::SitePeering | Kind::SiteGatewayPoolAssignment | Kind::GatewayPoolPeering
                )
            })
            .collect();
        let sites: Vec<String> = base
            .objects
            .iter()
            .filter(|o| o.kind() == Kind::Site)
            .map(|o| o.name().to_string())
            .collect();
        let pools: Vec<String> = base
            .objects
            .iter()
            .filter(|o| o.kind() == Kind::GatewayPool)
            .map(|o| o.name().to_string())
            .collect();
        for (kind, obj) in rels {
            check(
                &name,
                &base,
                &[Mutation::SetEnabled {
                    kind,
                    name: obj.clone(),
                    enabled: false,
                }],
            );
            check(
                &name,
                &base,
                &[Mutation::SetEnabled {
                    kind,
                    name: obj.clone(),
                    enabled: true,
                }],
            );
            let (mk, members) = if kind == Kind::GatewayPoolPeering {
                (Kind::GatewayPool, &pools)
            } else {
                (Kind::Site, &sites)
            };
            for m in members {
                for add in [true, false] {
                    check(
                        &name,
                        &base,
                        &[Mutation::Member {
                            kind,
                            name: obj.clone(),
                            member_kind: mk,
                            member: m.clone(),
                            add,
                        }],
                    );
                }
            }
        }
    }
}

#[test]
fn node_mutations_equal_two_full_resolves() {
    for (name, base) in examples() {
        let topo = base.build_topology();
        let pools: Vec<String> = topo.pools.iter().map(|p| p.name.to_string()).collect();
        for n in &topo.nodes {
            let node = n.name.to_string();
            for mtu in [9000u32, 1280, 576] {
                check(
                    &name,
                    &base,
                    &[Mutation::Underlay {
                        node: node.clone(),
                        mtu,
                    }],
                );
            }
            if n.is_gateway() {
                check(&name, &base, &[Mutation::Demote { node: node.clone() }]);
            }
            for p in &pools {
                check(
                    &name,
                    &base,
                    &[Mutation::Promote {
                        node: node.clone(),
                        pool: p.clone(),
                    }],
                );
            }
        }
        check(&name, &base, &[Mutation::AgentMtu(1400)]);
        check(
            &name,
            &base,
            &[Mutation::AgentMtu(1400), Mutation::AgentMtu(0)],
        );
    }
}

#[test]
fn a_cap_on_an_unrelated_object_changes_nothing_on_a_node() {
    // Example 02: SitePeering ab relates A and B only; C's workers have no link, path or
    // component with them.
    let (_, base) = examples()
        .into_iter()
        .find(|(n, _)| n.contains("02-mesh-peering-cap"))
        .unwrap();
    for mtu in [576u32, 1000, 1280, 9000] {
        let w = what_if(
            &base,
            &[Mutation::SetCap {
                kind: Kind::SitePeering,
                name: "ab".into(),
                mtu,
            }],
            Bound,
        )
        .unwrap();
        assert!(
            w.changes
                .iter()
                .all(|c| &*c.node != "c1" && &*c.node != "c2"),
            "{:?}",
            w.changes
        );
        assert!(!w.changes.is_empty());
    }
    let w = what_if(
        &base,
        &[Mutation::ClearCap {
            kind: Kind::SitePeering,
            name: "ab".into(),
        }],
        Bound,
    )
    .unwrap();
    assert!(
        w.changes
            .iter()
            .all(|c| c.node.starts_with('a') || c.node.starts_with('b'))
    );
}

#[test]
fn unknown_objects_are_errors() {
    let (_, base) = examples().into_iter().next().unwrap();
    assert!(
        what_if(
            &base,
            &[Mutation::SetCap {
                kind: Kind::Site,
                name: "nope".into(),
                mtu: 1300
            }],
            Bound
        )
        .is_err()
    );
    assert!(
        what_if(
            &base,
            &[Mutation::Demote {
                node: "nope".into()
            }],
            Bound
        )
        .is_err()
    );
    assert!(
        what_if(
            &base,
            &[Mutation::Underlay {
                node: "nope".into(),
                mtu: 1500
            }],
            Bound
        )
        .is_err()
    );
}

/// The library checks a question before answering it, with errors that name what exists
/// (`examples/03-hub-and-spoke`: workers a1, b1; gateways h1, h2 of pool PH).
#[test]
fn questions_are_checked_with_errors_that_name_what_exists() {
    use mtu_solver::whatif::MutationError;
    let (_, base) = examples()
        .into_iter()
        .find(|(n, _)| n.contains("03-hub-and-spoke"))
        .unwrap();
    let err = |m: Mutation| what_if(&base, &[m], Bound).err().map(|e| e.to_string());
    assert_eq!(
        what_if(&base, &[Mutation::Demote { node: "a1".into() }], Bound).err(),
        Some(MutationError::NotAGateway("a1".into()))
    );
    assert_eq!(
        err(Mutation::Promote {
            node: "a1".into(),
            pool: "PX".into()
        })
        .as_deref(),
        Some("GatewayPool PX does not exist; did you mean PH?")
    );
    assert_eq!(
        err(Mutation::Underlay {
            node: "h3".into(),
            mtu: 1400
        })
        .as_deref(),
        Some("node h3 does not exist (or belongs to no Site); did you mean h1, h2?")
    );
    assert_eq!(
        err(Mutation::Member {
            kind: Kind::SiteGatewayPoolAssignment,
            name: "spokes".into(),
            member_kind: Kind::Site,
            member: "Z".into(),
            add: true
        })
        .as_deref(),
        Some("Site Z does not exist; did you mean A, B, H?")
    );
    // A path MTU names two nodes that exist, and a value an annotation could hold.
    assert_eq!(
        err(Mutation::PathMtu {
            node: "a1".into(),
            peer: "h9".into(),
            mtu: Some(1400)
        })
        .as_deref(),
        Some("node h9 does not exist (or belongs to no Site); did you mean h1, h2?")
    );
    assert_eq!(
        what_if(
            &base,
            &[Mutation::PathMtu {
                node: "a1".into(),
                peer: "h1".into(),
                mtu: Some(100)
            }],
            Bound
        )
        .err(),
        Some(MutationError::PathOutOfRange { mtu: 100 })
    );
    // A node promoted by an earlier mutation of the same question may be demoted.
    assert!(
        what_if(
            &base,
            &[
                Mutation::Promote {
                    node: "a1".into(),
                    pool: "PH".into()
                },
                Mutation::Demote { node: "a1".into() }
            ],
            Bound
        )
        .is_ok()
    );
}

fn spec_input(spec: &TopoSpec) -> Input {
    let mut objects = Vec::new();
    for (i, doc) in spec.documents().iter().enumerate() {
        let name = format!("doc{i}.yaml");
        objects.extend(decode([(name.as_str(), doc.as_bytes())]).objects);
    }
    Input {
        objects,
        diagnostics: Vec::new(),
        settings: Default::default(),
    }
}

proptest! {
    #![proptest_config(proptest_config(1000, concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/whatif-caps.txt")))]

    /// Cap changes of assignments, pools and pool peerings (answered on the base solver) equal
    /// the diff of two full resolves, terms included, on random topologies.
    #[test]
    fn cap_changes_on_random_topologies(
        spec in arb_spec(),
        pick in any::<prop::sample::Index>(),
        mtu in prop_oneof![Just(0u32), 576u32..9000, Just(1280u32)],
        second in prop::option::of((any::<prop::sample::Index>(), prop_oneof![Just(0u32), 576u32..9000])),
    ) {
        let base = spec_input(&spec);
        let objs: Vec<(Kind, String)> = capped_objects(&base)
            .into_iter()
            .filter(|(k, _)| matches!(
                k,
                Kind::GatewayPool | Kind::SiteGatewayPoolAssignment | Kind::GatewayPoolPeering
            ))
            .collect();
        prop_assume!(!objs.is_empty());
        let (kind, name) = objs[pick.index(objs.len())].clone();
        let mut muts = vec![Mutation::SetCap { kind, name, mtu }];
        // Sometimes a second object at once, set or cleared.
        if let Some((i, mtu)) = second {
            let (kind, name) = objs[i.index(objs.len())].clone();
            muts.push(Mutation::SetCap { kind, name, mtu });
        }
        check("random", &base, &muts);
    }
}

fn values(p: &[mtu_solver::NodePlan]) -> Vec<u32> {
    p.iter()
        .flat_map(|x| {
            x.links
                .iter()
                .map(|l| l.mtu.mtu.get())
                .chain(x.routes.iter().map(|r| r.mtu.mtu.get()))
                .chain(x.devices.iter().map(|d| d.mtu.mtu.get()))
                .chain([x.fabric.mtu.get()])
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn set_caps_refuses_component_caps_and_restores() {
    for (name, base) in examples() {
        let topo = base.build_topology();
        let mut s = Solver::new(&topo, base.settings.clone());
        let before = values(&s.plan_all());
        // Planning again gives the same values and, once re-planned, no new explanation nodes.
        assert_eq!(values(&s.plan_all()), before, "{name}");
        let len = s.explanations().len();
        assert_eq!(values(&s.plan_all()), before, "{name}");
        assert_eq!(
            s.explanations().len(),
            len,
            "{name}: a re-plan grew the arena"
        );
        // Site and SitePeering caps enter direct-mesh components: refused, nothing changes.
        let site = topology_core::model::ObjRef::Site(topology_core::ids::SiteId(0));
        assert_eq!(
            s.set_caps(&[(site, topology_core::mtu::Mtu::cap(1300))]),
            Err(mtu_solver::ComponentCap(site)),
            "{name}: the refusal names the object"
        );
        assert_eq!(values(&s.plan_all()), before, "{name}");
        // A pool cap is taken, and undone by the list it returns.
        if topo.pools.is_empty() {
            continue;
        }
        let pool = topology_core::model::ObjRef::Pool(topology_core::ids::PoolId(0));
        let old = s
            .set_caps(&[(pool, topology_core::mtu::Mtu::cap(600))])
            .unwrap();
        assert!(old.is_empty());
        let capped = values(&s.plan_all());
        assert_ne!(capped, before, "{name}: a 600 pool cap changed nothing");
        assert!(capped.iter().zip(&before).all(|(c, b)| c <= b), "{name}");
        let undone = s.set_caps(&old).unwrap();
        assert_eq!(undone.len(), 1);
        assert_eq!(values(&s.plan_all()), before, "{name}");
    }
}

#[test]
fn repeated_what_ifs_on_one_solver_do_not_grow_it() {
    for (name, input) in examples() {
        let base = Base::new(input.clone());
        let mut s = Solver::new(base.topology(), input.settings.clone());
        let _ = s.plan_all();
        let Some((kind, obj)) = capped_objects(&input)
            .into_iter()
            .find(|(k, _)| matches!(k, Kind::SiteGatewayPoolAssignment | Kind::GatewayPool))
        else {
            continue;
        };
        let muts = [Mutation::SetCap {
            kind,
            name: obj,
            mtu: 1280,
        }];
        let first = key(&what_if_on(&mut s, &base, &muts, Full).unwrap());
        let _ = what_if_on(&mut s, &base, &muts, Full).unwrap();
        let len = s.explanations().len();
        let third = key(&what_if_on(&mut s, &base, &muts, Full).unwrap());
        assert_eq!(first, third, "{name}");
        assert_eq!(
            s.explanations().len(),
            len,
            "{name}: the same what-if grew the solver"
        );
    }
}

fn input_of(yaml: &str) -> Input {
    let d = decode([("family.yaml", yaml.as_bytes())]);
    Input {
        objects: d.objects,
        diagnostics: d.diagnostics,
        settings: Default::default(),
    }
}

/// Site A with a3 (an IPv6 and an IPv4 InternalIP) and a4 (IPv4 only), on a 1400 underlay.
const FAMILY_BASE: &str = include_str!("fixtures/address-family.yaml");

/// `mtu.md` §1: removing a node's only IPv4 address moves its links to the IPv6 column (GENEVE
/// 58 → 78 on a 1400 underlay: 1342 → 1322), and giving it back restores the IPv4 column; the
/// what-if of the two inputs says exactly that, on both ends, for every derived value.
#[test]
fn removing_a_nodes_only_ipv4_address_changes_the_column() {
    let base = input_of(FAMILY_BASE);
    let after = input_of(&FAMILY_BASE.replace(r#", {type: InternalIP, address: 10.1.0.3}"#, ""));
    let changed = |w: &WhatIf| -> Vec<(String, String, Option<u32>, Option<u32>)> {
        key(w)
            .into_iter()
            .map(|(n, i, b, a)| (n, i.split(' ').next().unwrap_or("").to_string(), b, a))
            .collect()
    };
    let down = mtu_solver::whatif::diff(&base, &after, Bound);
    assert_eq!(down.strategy, Strategy::AllNodes);
    let want_down: Vec<_> = [
        ("a3", "Device"),
        ("a3", "Fabric"),
        ("a3", "Link"),
        ("a3", "Route"),
        ("a4", "Device"),
        ("a4", "Fabric"),
        ("a4", "Link"),
        ("a4", "Route"),
    ]
    .iter()
    .map(|(n, i)| (n.to_string(), i.to_string(), Some(1342), Some(1322)))
    .collect();
    let mut got = changed(&down);
    got.sort();
    assert_eq!(got, want_down, "{:#?}", down.changes);
    let up = mtu_solver::whatif::diff(&after, &base, Bound);
    let mut got = changed(&up);
    got.sort();
    let want_up: Vec<_> = want_down
        .into_iter()
        .map(|(n, i, b, a)| (n, i, a, b))
        .collect();
    assert_eq!(got, want_up, "{:#?}", up.changes);
}

/// A solver made from another topology than the base's is refused, not answered for the wrong
/// cluster (here: example 04's solver with example 06's input).
#[test]
fn a_solver_of_another_topology_is_refused() {
    let ex = examples();
    let input = |n: &str| {
        ex.iter()
            .find(|(name, _)| name.contains(n))
            .map(|(_, i)| i.clone())
            .unwrap()
    };
    let (b04, b06) = (Base::new(input("04-")), Base::new(input("06-")));
    let mut s04 = Solver::new(b04.topology(), Default::default());
    let cap = Mutation::SetCap {
        kind: Kind::GatewayPoolPeering,
        name: "pa-pb".into(),
        mtu: 1300,
    };
    assert_eq!(
        what_if_on(&mut s04, &b06, std::slice::from_ref(&cap), Bound).err(),
        Some(mtu_solver::whatif::MutationError::OtherTopology)
    );
    // The same objects built twice are two topologies too: the solver must be made from the
    // base it is asked about.
    let again = Base::new(input("04-"));
    assert!(what_if_on(&mut s04, &again, std::slice::from_ref(&cap), Bound).is_err());
    assert!(what_if_on(&mut s04, &b04, &[cap], Bound).is_ok());
}
