//! `Resolver::apply`: the resolver of the changed cluster. On every shipped example and every
//! mutation kind, its plans are a fresh resolver's of the changed input, its values the ones
//! `what_if` reports as after (and every value that moved is among them); a refused mutation
//! changes nothing (and writes no manifests); two applies in a row equal one of both lists.

#![allow(clippy::disallowed_methods)] // the test lists the shipped examples' directory

use mtu_solver::report::{NodeOut, ResolveOut};
use mtu_solver::whatif::{Input, apply_all};
use mtu_solver::{Decoded, Kind, Mutation, MutationError, Resolver, Settings, load};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Every example's decoded input.
fn examples() -> Vec<(String, Decoded)> {
    let dir = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../examples"));
    let mut out: Vec<(String, Decoded)> = (1..=7)
        .filter_map(|i| {
            let prefix = format!("{i:02}-");
            let entry = std::fs::read_dir(&dir)
                .ok()?
                .filter_map(Result::ok)
                .find(|e| e.file_name().to_string_lossy().starts_with(&prefix))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            Some((name, load::load(&[entry.path()]).expect("example")))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(out.len() >= 7, "examples missing: {}", out.len());
    out
}

/// Mutations of every kind over `resolver`'s cluster: caps set and cleared, relations
/// disabled and their members changed, gateways demoted and nodes promoted, underlays, the
/// agent's mtu and path MTUs.
fn mutations(resolver: &Resolver, decoded: &Decoded) -> Vec<Mutation> {
    let mut out = Vec::new();
    let objects = |kinds: &[Kind]| -> Vec<(Kind, String)> {
        decoded
            .objects
            .iter()
            .filter(|o| kinds.contains(&o.kind()))
            .map(|o| (o.kind(), o.name().to_string()))
            .collect()
    };
    let relations = [
        Kind::SitePeering,
        Kind::SiteGatewayPoolAssignment,
        Kind::GatewayPoolPeering,
    ];
    let capped = [
        Kind::Site,
        Kind::GatewayPool,
        Kind::SitePeering,
        Kind::SiteGatewayPoolAssignment,
        Kind::GatewayPoolPeering,
    ];
    for (kind, name) in objects(&capped) {
        out.push(Mutation::SetCap {
            kind,
            name: name.clone(),
            mtu: 1300,
        });
        out.push(Mutation::ClearCap { kind, name });
    }
    let sites = objects(&[Kind::Site]);
    for (kind, name) in objects(&relations) {
        out.push(Mutation::SetEnabled {
            kind,
            name: name.clone(),
            enabled: false,
        });
        if kind != Kind::GatewayPoolPeering
            && let Some((_, site)) = sites.first()
        {
            for add in [true, false] {
                out.push(Mutation::Member {
                    kind,
                    name: name.clone(),
                    member_kind: Kind::Site,
                    member: site.clone(),
                    add,
                });
            }
        }
    }
    let topo = resolver.topology();
    let with_object: Vec<String> = objects(&[Kind::Node]).into_iter().map(|(_, n)| n).collect();
    for n in &topo.nodes {
        if n.is_gateway() {
            out.push(Mutation::Demote {
                node: n.name.to_string(),
            });
        }
    }
    if let (Some(node), Some(pool)) = (
        topo.nodes
            .iter()
            .find(|n| !n.is_gateway() && with_object.contains(&n.name.to_string())),
        topo.pools.first(),
    ) {
        out.push(Mutation::Promote {
            node: node.name.to_string(),
            pool: pool.name.to_string(),
        });
    }
    if let Some(n) = topo.nodes.first() {
        out.push(Mutation::Underlay {
            node: n.name.to_string(),
            mtu: 1400,
        });
    }
    out.push(Mutation::AgentMtu(1400));
    if let [a, b, ..] = with_object.as_slice()
        && topo.find_node(a).is_ok()
        && topo.find_node(b).is_ok()
    {
        out.push(Mutation::PathMtu {
            node: a.clone(),
            peer: b.clone(),
            mtu: Some(1350),
        });
    }
    out
}

/// Every value of a resolve by node and by value, named as `what_if` names them
/// (`link b1`, `route 10.1.0.0/16 (gateway)`, `device wg0`, `fabric`, `published ...`).
fn values(r: &ResolveOut) -> BTreeMap<(String, String), u32> {
    let mut out = BTreeMap::new();
    for n in &r.nodes {
        for (item, mtu) in items(n) {
            out.insert((n.name.to_string(), item), mtu);
        }
    }
    out
}

fn items(n: &NodeOut) -> Vec<(String, u32)> {
    let mut v: Vec<(String, u32)> = Vec::new();
    v.extend(n.links.iter().map(|l| (format!("link {}", l.peer), l.mtu)));
    v.extend(
        n.routes
            .iter()
            .map(|r| (format!("route {} ({})", r.destination, r.kind), r.mtu)),
    );
    v.extend(n.devices.iter().map(|d| {
        let item = match (&d.name, &d.peer) {
            (Some(name), _) => format!("device {name}"),
            (None, Some(peer)) => format!("device (wg for {peer})"),
            (None, None) => "device ?".to_string(),
        };
        (item, d.mtu)
    }));
    v.push(("fabric".to_string(), n.fabric_mtu));
    v.extend(
        n.published
            .iter()
            .flatten()
            .map(|p| (format!("published {}", p.destination), p.mtu)),
    );
    v
}

/// The input `decoded` holds, under `settings`.
fn input_of(decoded: &Decoded, settings: Settings) -> Input {
    Input {
        objects: decoded.objects.clone(),
        diagnostics: decoded.diagnostics.clone(),
        settings,
    }
}

/// A resolver of `input` built from scratch.
fn fresh(input: Input) -> Resolver {
    let mut decoded = Decoded::default();
    decoded.objects = input.objects;
    decoded.diagnostics = input.diagnostics;
    Resolver::new(decoded, input.settings)
}

#[test]
fn apply_resolves_as_a_fresh_resolver_and_as_what_if_says() {
    let mut checked = 0;
    for (name, decoded) in examples() {
        let resolver = Resolver::new(decoded.clone(), Settings::default());
        let before = values(&resolver.plan_all());
        for m in mutations(&resolver, &decoded) {
            let muts = [m];
            let changed = resolver.apply(&muts).expect("the mutation applies");
            let after = changed.plan_all();
            // A fresh resolver of the changed input, every explanation included.
            let input = apply_all(&input_of(&decoded, Settings::default()), &muts).unwrap();
            assert_eq!(after, fresh(input).plan_all(), "{name}: {muts:?}");
            assert_eq!(
                changed.settings(),
                &settings_after(&muts),
                "{name}: {muts:?}"
            );
            // What moved is exactly what what-if reports, before and after.
            let after = values(&after);
            let moved: BTreeMap<(String, String), (Option<u32>, Option<u32>)> = before
                .keys()
                .chain(after.keys())
                .filter(|k| before.get(*k) != after.get(*k))
                .map(|k| (k.clone(), (before.get(k).copied(), after.get(k).copied())))
                .collect();
            let reported: BTreeMap<(String, String), (Option<u32>, Option<u32>)> = resolver
                .what_if(&muts)
                .unwrap()
                .changes
                .iter()
                .map(|c| {
                    (
                        (c.node.to_string(), c.item.to_string()),
                        (c.before, c.after),
                    )
                })
                .collect();
            assert_eq!(moved, reported, "{name}: {muts:?}");
            checked += 1;
        }
    }
    assert!(checked > 50, "only {checked} mutations checked");
}

/// The settings a resolver of the default ones has after `muts`: an underlay given, the
/// agent's mtu.
fn settings_after(muts: &[Mutation]) -> Settings {
    let mut s = Settings::default();
    for m in muts {
        match m {
            Mutation::Underlay { node, mtu } => {
                s.underlay_overrides.insert(node.clone(), *mtu);
            }
            Mutation::AgentMtu(v) => s.cfg_mtu = *v,
            _ => {}
        }
    }
    s
}

#[test]
fn the_level_of_explanation_is_kept() {
    let (_, decoded) = examples().remove(1);
    let resolver = Resolver::new(decoded, Settings::default())
        .with_explanations(mtu_solver::Explanations::Full);
    let changed = resolver.apply(&[Mutation::AgentMtu(1400)]).unwrap();
    assert_eq!(changed.explanations(), mtu_solver::Explanations::Full);
}

#[test]
fn a_refused_mutation_is_an_error_and_changes_nothing() {
    let (name, decoded) = examples()
        .into_iter()
        .find(|(n, _)| n.starts_with("02-"))
        .unwrap();
    let resolver = Resolver::new(decoded.clone(), Settings::default());
    let before = resolver.plan_all();
    let node = resolver.node_names().next().unwrap().to_string();
    let site = decoded
        .objects
        .iter()
        .find(|o| o.kind() == Kind::Site)
        .unwrap()
        .name()
        .to_string();
    let good = Mutation::AgentMtu(1400);
    let refused = [
        Mutation::SetCap {
            kind: Kind::Site,
            name: format!("{site}x"),
            mtu: 1400,
        },
        Mutation::SetCap {
            kind: Kind::Site,
            name: site.clone(),
            mtu: 10_000,
        },
        Mutation::SetCap {
            kind: Kind::Node,
            name: node.clone(),
            mtu: 1400,
        },
        Mutation::Demote {
            node: format!("{node}x"),
        },
    ];
    for bad in refused {
        // Alone, and after a mutation that applies: nothing of either is kept.
        for muts in [vec![bad.clone()], vec![good.clone(), bad.clone()]] {
            let err = resolver.apply(&muts).unwrap_err();
            assert_eq!(resolver.what_if(&muts).err().as_ref(), Some(&err), "{name}");
            assert_eq!(
                resolver.manifests(&muts).err().as_ref(),
                Some(&err),
                "{name}"
            );
        }
    }
    assert!(matches!(
        resolver.apply(&[Mutation::SetCap {
            kind: Kind::Node,
            name: node,
            mtu: 1400
        }]),
        Err(MutationError::NoCap { .. })
    ));
    assert_eq!(resolver.plan_all(), before, "{name}: the resolver changed");
    assert_eq!(resolver.settings(), &Settings::default());
}

#[test]
fn applying_twice_equals_applying_both_lists_once() {
    let mut promoted_then_demoted = 0;
    for (name, decoded) in examples() {
        let resolver = Resolver::new(decoded.clone(), Settings::default());
        let muts = mutations(&resolver, &decoded);
        // Neighbouring mutations, so every kind meets another, and a promotion then the
        // demotion of the node promoted (refused alone: it is not a gateway before).
        let mut pairs: Vec<Vec<Mutation>> = muts.windows(2).map(<[Mutation]>::to_vec).collect();
        for m in &muts {
            if let Mutation::Promote { node, .. } = m {
                pairs.push(vec![m.clone(), Mutation::Demote { node: node.clone() }]);
                promoted_then_demoted += 1;
            }
        }
        for pair in &pairs {
            let (a, b) = pair.split_at(1);
            let Ok(once) = resolver.apply(pair) else {
                // Refused as one list, refused in two steps.
                assert!(resolver.apply(a).and_then(|r| r.apply(b)).is_err());
                continue;
            };
            let twice = resolver.apply(a).unwrap().apply(b).unwrap();
            assert_eq!(twice.plan_all(), once.plan_all(), "{name}: {pair:?}");
            assert_eq!(twice.settings(), once.settings(), "{name}: {pair:?}");
        }
    }
    assert!(promoted_then_demoted > 0);
}
