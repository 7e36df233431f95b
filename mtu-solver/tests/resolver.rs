//! The embedding API: a loaded directory resolved through [`Resolver`], results that cross
//! threads, names that do not exist answered with the nearest ones, and what-ifs checked.
#![allow(
    clippy::disallowed_methods,
    reason = "the test reads an example's files itself to compare with the loader"
)]

use mtu_solver::load;
use mtu_solver::resolver::{Destination, QueryError, Resolver};
use mtu_solver::whatif::{Mutation, MutationError};
use mtu_solver::{Settings, report};
use std::path::PathBuf;
use std::sync::Arc;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../examples")
        .join(name)
}

fn send_sync<T: Send + Sync>() {}

#[test]
fn results_and_the_resolver_are_send_and_sync() {
    send_sync::<Resolver>();
    send_sync::<report::NodeOut>();
    send_sync::<report::ResolveOut>();
    send_sync::<report::RouteOut>();
    send_sync::<mtu_solver::whatif::WhatIf>();
    send_sync::<QueryError>();
    send_sync::<MutationError>();
    send_sync::<mtu_solver::probe::Target>();
    send_sync::<mtu_solver::probe::ProbeReport>();
}

#[test]
fn results_cross_threads() {
    let decoded = load::load(&[example("04-transit-chain")]).expect("example");
    let resolver = Arc::new(Resolver::new(decoded, Settings::default()));
    let names: Vec<String> = resolver.node_names().map(str::to_string).collect();
    assert!(names.len() > 2);
    let handles: Vec<_> = names
        .iter()
        .cloned()
        .map(|n| {
            let r = resolver.clone();
            std::thread::spawn(move || r.plan(&n).expect("node"))
        })
        .collect();
    let plans: Vec<report::NodeOut> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    // The same values as one resolve of every node, whichever thread made them.
    let all = resolver.plan_all();
    for (p, q) in plans.iter().zip(&all.nodes) {
        assert_eq!(p.name, q.name);
        let mtus = |n: &report::NodeOut| -> Vec<u32> {
            n.links
                .iter()
                .map(|l| l.mtu)
                .chain(n.routes.iter().map(|r| r.mtu))
                .collect()
        };
        assert_eq!(mtus(p), mtus(q), "{}", p.name);
    }
}

#[test]
fn the_loader_decodes_a_directory_as_the_command_line_does() {
    let decoded = load::load(&[example("04-transit-chain")]).expect("example");
    let from_pairs = load::from_sources(
        std::fs::read_dir(example("04-transit-chain"))
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| load::is_manifest_name(&e.file_name().to_string_lossy()))
            .map(|e| {
                (
                    e.path().display().to_string(),
                    std::fs::read(e.path()).unwrap(),
                )
            }),
    );
    assert_eq!(decoded.objects.len(), from_pairs.objects.len());
}

#[test]
fn unknown_nodes_and_destinations_are_errors_naming_what_exists() {
    let decoded = load::load(&[example("04-transit-chain")]).expect("example");
    let resolver = Resolver::new(decoded, Settings::default());
    let first = resolver.node_names().next().unwrap().to_string();
    let typo = format!("{first}x");
    match resolver.plan(&typo) {
        Err(QueryError::NoSuchNode { nearest, .. }) => assert!(nearest.contains(&first)),
        other => panic!("{other:?}"),
    }
    let nowhere: Destination = "203.0.113.9".parse().unwrap();
    assert!(matches!(
        resolver.explain(&first, nowhere),
        Err(QueryError::NoRoute { .. })
    ));
}

/// `explain` for a destination answers every route that carries it, longest match first: for
/// every node and every route's first address, the routes containing that address, no other.
#[test]
fn explain_lists_every_carrying_route_longest_match_first() {
    let mut nested = 0;
    for ex in [
        "01-single-site",
        "02-mesh-peering-cap",
        "03-hub-and-spoke",
        "04-transit-chain",
        "05-network-only-peering",
        "06-routed-local-published",
        "07-nat-and-unmanaged-cni",
    ] {
        nested += carrying_routes_of(ex);
    }
    assert!(
        nested > 0,
        "no destination carried by two routes: the test shows nothing"
    );
}

/// Checks `explain` for every route's first address on every node of example `ex`; returns how
/// many answers held more than one route.
fn carrying_routes_of(ex: &str) -> usize {
    let decoded = load::load(&[example(ex)]).expect("example");
    let resolver = Resolver::new(decoded, Settings::default());
    let mut nested = 0;
    for node in resolver
        .node_names()
        .map(str::to_string)
        .collect::<Vec<_>>()
    {
        let plan = resolver.plan(&node).unwrap();
        for r in &plan.routes {
            let net: ipnet::IpNet = r.destination.parse().unwrap();
            let addr = net.network();
            let routes = resolver.explain(&node, Destination::Addr(addr)).unwrap();
            let want = plan
                .routes
                .iter()
                .filter(|x| {
                    x.destination
                        .parse::<ipnet::IpNet>()
                        .unwrap()
                        .contains(&addr)
                })
                .count();
            assert_eq!(routes.len(), want, "{node} -> {addr}");
            let lens: Vec<u8> = routes
                .iter()
                .map(|x| x.destination.parse::<ipnet::IpNet>().unwrap().prefix_len())
                .collect();
            assert!(
                lens.windows(2).all(|w| w[0] >= w[1]),
                "{node} -> {addr}: {lens:?}"
            );
            nested += usize::from(routes.len() > 1);
            let exact = resolver.explain(&node, Destination::Prefix(net)).unwrap();
            assert!(exact.iter().all(|x| x.destination == r.destination));
        }
    }
    nested
}

#[test]
fn what_ifs_are_checked_against_the_resolver_s_own_cluster() {
    let decoded = load::load(&[example("04-transit-chain")]).expect("example");
    let resolver = Resolver::new(decoded, Settings::default());
    let missing = Mutation::Demote {
        node: "no-such-node".into(),
    };
    assert!(resolver.what_if(&[missing]).is_err());
}

/// The library answers `explain`'s hops as the binary does: the transit chain's route to C is
/// bound at the ga → gb hop, by pa-pb's cap; a direct route has no hops.
#[test]
fn explain_hops_names_the_binding_hop() {
    let decoded = load::load(&[example("04-transit-chain")]).expect("example");
    let resolver = Resolver::new(decoded, Settings::default());
    let to_c: Destination = "10.103.1.5".parse().expect("address");
    let (hops, diags) = resolver.explain_hops("wa", to_c).expect("a route");
    let ends: Vec<(&str, &str, bool)> = hops
        .iter()
        .map(|h| (&*h.from, h.to.as_str(), h.binds))
        .collect();
    assert_eq!(
        ends,
        [
            ("wa", "ga", false),
            ("ga", "gb", true),
            ("gb", "gc", false),
            ("gc", "Site/C", false)
        ]
    );
    let bound = hops[1].bound.as_ref().expect("the hop adds a term");
    assert_eq!(bound.object.as_deref(), Some("GatewayPoolPeering/pa-pb"));
    assert!(diags.is_empty());
    let to_ga: Destination = "10.111.0.0/24".parse().expect("prefix");
    assert_eq!(resolver.explain_hops("wa", to_ga).map(|h| h.0.len()), Ok(0));
    let nowhere: Destination = "192.0.2.1".parse().expect("address");
    assert!(matches!(
        resolver.explain_hops("wa", nowhere),
        Err(QueryError::NoRoute { .. })
    ));
}
