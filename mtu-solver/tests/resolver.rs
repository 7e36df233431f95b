//! The embedding API: a loaded directory resolved through [`Resolver`], results that cross
//! threads, names that do not exist answered with the nearest ones, and what-ifs checked.
#![allow(
    clippy::disallowed_methods,
    reason = "the test reads an example's files itself to compare with the loader"
)]

use mtu_solver::load;
use mtu_solver::resolver::{Destination, QueryError, Resolver};
use mtu_solver::whatif::{Mutation, MutationError};
use mtu_solver::{HopEnd, Kind, ObjectRef, Question, Settings, Subject, report};
use std::path::{Path, PathBuf};
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
    let mut examples: Vec<PathBuf> = std::fs::read_dir(example(""))
        .expect("examples")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    examples.sort();
    assert!(examples.len() >= 7, "examples: {examples:?}");
    for ex in &examples {
        nested += carrying_routes_of(ex);
    }
    assert!(
        nested > 0,
        "no destination carried by two routes: the test shows nothing"
    );
}

/// Checks `explain` for every route's first address on every node of example `ex`; returns how
/// many answers held more than one route.
fn carrying_routes_of(ex: &Path) -> usize {
    let decoded = load::load(&[ex.to_path_buf()]).expect("example");
    let resolver = Resolver::new(decoded, Settings::default());
    let mut nested = 0;
    for node in resolver
        .node_names()
        .map(str::to_string)
        .collect::<Vec<_>>()
    {
        let plan = resolver.plan(&node).unwrap();
        for r in &plan.routes {
            let net = r.destination;
            let addr = net.network();
            let routes = routes_of(&resolver.explain(&node, Destination::Addr(addr)).unwrap());
            let want = plan
                .routes
                .iter()
                .filter(|x| x.destination.contains(&addr))
                .count();
            assert_eq!(routes.len(), want, "{node} -> {addr}");
            let lens: Vec<u8> = routes.iter().map(|x| x.prefix_len()).collect();
            assert!(
                lens.windows(2).all(|w| w[0] >= w[1]),
                "{node} -> {addr}: {lens:?}"
            );
            nested += usize::from(routes.len() > 1);
            let exact = routes_of(&resolver.explain(&node, Destination::Prefix(net)).unwrap());
            assert!(
                exact.iter().all(|x| *x == net),
                "{node} -> {net}: {exact:?}"
            );
        }
    }
    nested
}

/// The destinations of the routes an explanation lists, in its order.
fn routes_of(e: &mtu_solver::Explanation) -> Vec<ipnet::IpNet> {
    e.values
        .iter()
        .map(|v| match &v.subject {
            Subject::Route { destination } => *destination,
            other => panic!("not a route: {other:?}"),
        })
        .collect()
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

/// The library answers `explain` as the binary does: the transit chain's route to C is
/// bound at the ga → gb hop, by pa-pb's cap, located in its file, with its forwarding path; a
/// direct route has no hops.
#[test]
fn explain_names_the_binding_hop_and_where_it_was_written() {
    let decoded = load::load(&[example("04-transit-chain")]).expect("example");
    let resolver = Resolver::new(decoded, Settings::default());
    let to_c: Destination = "10.103.1.5".parse().expect("address");
    let why = resolver.explain("wa", to_c).expect("a route");
    let route = &why.values[0];
    let hops = route.hops.as_ref().expect("a learned route has hops");
    let ends: Vec<(&str, &HopEnd, bool)> =
        hops.iter().map(|h| (&*h.from, &h.to, h.binds)).collect();
    let (ga, gb, gc) = (
        HopEnd::Node("ga".into()),
        HopEnd::Node("gb".into()),
        HopEnd::Node("gc".into()),
    );
    let site_c = HopEnd::Site("C".into());
    assert_eq!(
        ends,
        [
            ("wa", &ga, false),
            ("ga", &gb, true),
            ("gb", &gc, false),
            ("gc", &site_c, false)
        ]
    );
    assert_eq!(site_c.to_string(), "Site/C");
    let bound = hops[1].bound.as_ref().expect("the hop adds a term");
    let pa_pb = ObjectRef::new(Kind::GatewayPoolPeering, "pa-pb");
    assert_eq!(bound.object, Some(pa_pb.clone()));
    assert_eq!(route.bound.object, Some(pa_pb));
    let at = route.bound.location.as_deref().expect("read from a file");
    assert!(at.contains("04-transit-chain") && at.contains(':'), "{at}");
    let paths = route.paths.as_ref().expect("paths");
    assert_eq!(paths.total, 1);
    assert!(paths.shown[0].ends_with("-> Site C"), "{:?}", paths.shown);
    assert!(
        why.diagnostics
            .iter()
            .all(|d| d.code.as_str() != "W-PUBLISHED-STALE"),
        "{:?}",
        why.diagnostics
    );
    let to_ga: Destination = "10.111.0.0/24".parse().expect("prefix");
    let direct = resolver.explain("wa", to_ga).expect("a direct route");
    assert_eq!(direct.values.len(), 1);
    assert!(direct.values[0].hops.is_none());
    let nowhere: Destination = "192.0.2.1".parse().expect("address");
    assert!(matches!(
        resolver.explain("wa", nowhere),
        Err(QueryError::NoRoute { .. })
    ));
}

/// A question about a peer answers its link (and the direct routes over it); a peer without a
/// link names the peers there are.
#[test]
fn explain_of_a_peer_answers_its_link() {
    let decoded = load::load(&[example("04-transit-chain")]).expect("example");
    let resolver = Resolver::new(decoded, Settings::default());
    let why = resolver
        .explain("wa", Question::Peer("ga".into()))
        .expect("wa links to ga");
    assert!(matches!(&why.values[0].subject, Subject::Link { peer } if peer == "ga"));
    match resolver.explain("wa", Question::Peer("gc".into())) {
        Err(QueryError::NoLink { peers, .. }) => assert!(peers.contains(&"ga".to_string())),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        resolver.explain("wa", Question::Peer("nobody".into())),
        Err(QueryError::NoSuchNode { .. })
    ));
    let all = resolver.explain("wa", Question::Everything).expect("wa");
    assert!(all.values.iter().any(|v| v.subject == Subject::Fabric));
}

/// `plan(n)` is `plan_all()`'s entry for `n`, at either level of explanation, and a question
/// asked twice of the same (warm) resolver answers the same.
#[test]
fn a_node_s_plan_is_its_entry_of_the_whole_resolve() {
    use mtu_solver::resolver::Explanations;
    for ex in ["01-single-site", "03-hub-and-spoke", "04-transit-chain"] {
        for level in [Explanations::None, Explanations::Bound, Explanations::Full] {
            let decoded = load::load(&[example(ex)]).expect("example");
            let r = Resolver::new(decoded, Settings::default()).with_explanations(level);
            let names: Vec<String> = r.node_names().map(str::to_string).collect();
            let first: Vec<report::NodeOut> = names.iter().map(|n| r.plan(n).unwrap()).collect();
            let all = r.plan_all();
            assert_eq!(first, all.nodes, "{ex} {level:?}");
            let again: Vec<report::NodeOut> = names.iter().map(|n| r.plan(n).unwrap()).collect();
            assert_eq!(first, again, "{ex} {level:?}: asked twice");
        }
    }
}

/// Every level of explanation resolves the same values; without explanations no result carries
/// one, what-if changes included.
#[test]
fn the_level_of_explanation_changes_no_value() {
    use mtu_solver::resolver::Explanations;
    let values = |level| {
        let decoded = load::load(&[example("04-transit-chain")]).expect("example");
        let r = Resolver::new(decoded, Settings::default()).with_explanations(level);
        let mut doc = r.plan_all();
        for n in &mut doc.nodes {
            n.fabric_explanation = None;
            n.links.iter_mut().for_each(|l| l.explanation = None);
            n.routes.iter_mut().for_each(|x| x.explanation = None);
            n.devices.iter_mut().for_each(|d| d.explanation = None);
        }
        let cap = "set GatewayPoolPeering/pb-pc=1300"
            .parse::<Mutation>()
            .unwrap();
        (doc, r.what_if(&[cap]).unwrap())
    };
    let (bare, bare_change) = values(Explanations::None);
    for level in [Explanations::Bound, Explanations::Full] {
        let (doc, change) = values(level);
        assert_eq!(bare, doc, "{level:?}");
        assert!(
            change
                .changes
                .iter()
                .all(|c| c.after.is_none() || c.explanation.is_some())
        );
        let moved = |w: &mtu_solver::WhatIf| -> Vec<_> {
            w.changes
                .iter()
                .map(|c| (c.node.clone(), c.item.clone(), c.before, c.after))
                .collect()
        };
        assert_eq!(moved(&bare_change), moved(&change), "{level:?}");
    }
    assert!(!bare_change.changes.is_empty());
    assert!(bare_change.changes.iter().all(|c| c.explanation.is_none()));
    let json = serde_json::to_string(&bare).unwrap();
    assert!(!json.contains("xplanation"), "{json:.200}");
}

/// A small cluster with IPv6 pod CIDRs whose Site cap is `cap`; `extra` is appended as is.
fn dual_stack(cap: u32, extra: &str) -> topology_core::decode::Decoded {
    let yaml = format!(
        "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata: {{name: a}}\nspec:\n  nodeCidrs: [10.0.0.0/16]\n  podCidrAssignments: [{{cidrBlocks: [10.9.0.0/16, 'fd00:9::/48']}}]\n  tunnelMTU: {cap}\n---\napiVersion: v1\nkind: Node\nmetadata: {{name: n1, labels: {{net.unbounded-cloud.io/site: a}}}}\nstatus: {{addresses: [{{type: InternalIP, address: 10.0.0.1}}]}}\nspec: {{podCIDRs: [10.9.1.0/24, 'fd00:9:0:1::/64']}}\n---\napiVersion: v1\nkind: Node\nmetadata: {{name: n2, labels: {{net.unbounded-cloud.io/site: a}}}}\nstatus: {{addresses: [{{type: InternalIP, address: 10.0.0.2}}]}}\nspec: {{podCIDRs: [10.9.2.0/24, 'fd00:9:0:2::/64']}}\n{extra}"
    );
    load::from_sources([("cluster.yaml", yaml)])
}

/// Every diagnostic the binary prints, the resolver's own included: a cap below IPv6's 1280
/// on nodes with IPv6 pods is `W-IPV6-BELOW-1280`, a warning the binary exits 0 on.
#[test]
fn diagnostics_include_the_resolver_s_findings() {
    let r = Resolver::new(dual_stack(1200, ""), Settings::default());
    let codes: Vec<&str> = r.diagnostics().iter().map(|d| d.code.as_str()).collect();
    assert!(codes.contains(&"W-IPV6-BELOW-1280"), "{codes:?}");
    assert_eq!(
        r.plan_all().diagnostics.len(),
        r.diagnostics().len(),
        "what resolve -o json lists"
    );
    assert!(!r.has_errors());
    assert!(Resolver::strict(dual_stack(1200, ""), Settings::default()).is_ok());
    let fine = Resolver::new(dual_stack(1400, ""), Settings::default());
    assert!(fine.diagnostics().is_empty(), "{:?}", fine.diagnostics());
}

/// Input with errors is refused by a strict resolver, naming the first error, as the binary
/// exits 1 on it; a lenient one answers for what it could read and says so.
#[test]
fn a_strict_resolver_refuses_input_with_errors() {
    // A tab where YAML wants spaces: the document does not decode.
    let broken = "---\napiVersion: v1\nkind: Node\nmetadata:\n\tname: n3\n";
    let lenient = Resolver::new(dual_stack(1400, broken), Settings::default());
    assert!(lenient.has_errors());
    assert_eq!(
        lenient.node_names().count(),
        2,
        "the broken document is not read"
    );
    let refused =
        Resolver::strict(dual_stack(1400, broken), Settings::default()).expect_err("refused");
    assert!(!refused.errors.is_empty());
    let text = refused.to_string();
    assert!(text.starts_with("the input has 1 error: "), "{text}");
    assert!(text.contains("cluster.yaml"), "names the file: {text}");
}

/// What an embedder holds prints with `{:?}`, briefly (counts, not the whole cluster).
#[test]
fn the_resolver_and_its_parts_are_debug() {
    let r = Resolver::new(dual_stack(1400, ""), Settings::default());
    let text = format!("{r:?}");
    assert!(text.starts_with("Resolver { nodes: 2"), "{text}");
    let topo = r.topology();
    let solver = mtu_solver::Solver::new(topo, Settings::default());
    assert!(format!("{solver:?}").starts_with("Solver { nodes: 2"));
    let inc = mtu_solver::incremental::Incremental::new(Settings::default());
    assert!(format!("{inc:?}").starts_with("Incremental { objects: 0"));
}

/// One error type at the crate root: every fallible call converts into it with `?`, its kind
/// says what went wrong, messages name the nearest names, and `source()` reaches the cause.
#[test]
fn every_error_is_one_type_with_a_kind() {
    use mtu_solver::{Error, ErrorKind, Mutation};
    let r = Resolver::new(dual_stack(1400, ""), Settings::default());
    let plan = |node: &str| -> Result<(), Error> {
        r.plan(node)?;
        Ok(())
    };
    let ask = |text: &str| -> Result<(), Error> {
        let m: Mutation = text.parse()?;
        r.what_if(&[m])?;
        Ok(())
    };
    let e = plan("n3").expect_err("no n3");
    assert_eq!(e.kind(), ErrorKind::UnknownNode);
    assert!(e.to_string().contains("did you mean n1, n2"), "{e}");
    let e = ask("underlay n9=1400").expect_err("no n9");
    assert_eq!(e.kind(), ErrorKind::UnknownNode, "{e}");
    let e = ask("set Site/b=1400").expect_err("no Site b");
    assert_eq!(e.kind(), ErrorKind::UnknownObject, "{e}");
    assert!(e.to_string().contains('a'), "{e}");
    let e = ask("set Node/n1=1400").expect_err("a Node has no cap");
    assert_eq!(e.kind(), ErrorKind::BadMutation);
    assert!(
        e.to_string().contains("Node/n1 has no tunnelMTU")
            && e.to_string().contains("underlay NODE=MTU"),
        "{e}"
    );
    let e = ask("sett Site/a=1400").expect_err("no verb sett");
    assert_eq!(e.kind(), ErrorKind::BadMutation);
    let e = ask("set Site/a=100").expect_err("out of range");
    assert_eq!(e.kind(), ErrorKind::BadMutation);
    let load = || -> Result<(), Error> {
        load::load(&["/nonexistent/cluster.yaml"])?;
        Ok(())
    };
    let e = load().expect_err("no such file");
    assert_eq!(e.kind(), ErrorKind::Load);
    let cause = std::error::Error::source(&e).expect("the I/O error");
    assert!(cause.downcast_ref::<std::io::Error>().is_some(), "{cause}");
    let broken = "---\napiVersion: v1\nkind: Node\nmetadata:\n\tname: n3\n";
    let strict = || -> Result<Resolver, Error> {
        Ok(Resolver::strict(
            dual_stack(1400, broken),
            Settings::default(),
        )?)
    };
    assert_eq!(
        strict().expect_err("refused").kind(),
        ErrorKind::InputRefused
    );
}
