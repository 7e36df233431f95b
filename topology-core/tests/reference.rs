//! Production links and forwarding (`net.rs`) against the naive reference oracle
//! (`test_utils::reference`, a path-vector simulation of `spec/forwarding.md`), plus one unit
//! test per "consequence worth a test" of `forwarding.md`.

use ipnet::IpNet;
use proptest::prelude::*;
use test_utils::reference::{self, RefRouteKind, RefSettings, topology_of};
use test_utils::testkit::{arb_spec, proptest_config};
use topology_core::ids::NodeId;
use topology_core::model::Topology;
use topology_core::net::{KEPT_PATHS, LinkKind, LinkSettings, Net, RouteType, cut, prefix_order};
use topology_core::vocab::Protocol;

type LinkRow = (String, LinkKind, Protocol);
type RouteRow = (String, RouteType, RefRouteKind, u32, Vec<String>);

fn name(t: &Topology, n: NodeId) -> String {
    t.node(n).name.to_string()
}

/// Production links of a node: (peer, kind, protocol).
fn prod_links(net: &Net<'_>, n: NodeId) -> Vec<LinkRow> {
    let t = net.topo;
    net.links(n)
        .into_iter()
        .map(|l| (name(t, l.peer), l.kind, l.protocol))
        .collect()
}

/// Production installed routes of a node: the direct routes its links carry
/// ([`Net::direct_routes`]: peers' pod CIDRs, NAT'd workers' addresses; one route per destination,
/// a `NodePod` route when a link carries it as a pod CIDR), and the learned routes with the Site's
/// `localCidrs` cut out (rule 7).
fn prod_routes(net: &Net<'_>, n: NodeId) -> Vec<RouteRow> {
    let t = net.topo;
    let node = t.node(n);
    let mut direct: std::collections::BTreeMap<String, (RouteType, Vec<NodeId>)> =
        Default::default();
    let mut direct_nets = Vec::new();
    for l in net.links(n) {
        for (c, ty) in net.direct_routes(n, &l) {
            if !direct.contains_key(&c.to_string()) {
                direct_nets.push(c);
            }
            let e = direct.entry(c.to_string()).or_insert((ty, Vec::new()));
            e.0 = e.0.min(ty);
            e.1.push(l.peer);
        }
    }
    let mut rows: Vec<(ipnet::IpNet, RouteRow)> = Vec::new();
    for c in direct_nets {
        let (ty, mut via) = direct[&c.to_string()].clone();
        via.sort();
        via.dedup();
        rows.push((
            c,
            (
                c.to_string(),
                ty,
                RefRouteKind::Direct,
                0,
                via.iter().map(|v| name(t, *v)).collect(),
            ),
        ));
    }
    let kind = if node.is_gateway() {
        RefRouteKind::Transit
    } else {
        RefRouteKind::Gateway
    };
    for l in net.learned(n).iter() {
        for piece in cut(l.prefix, &t.site(node.site).local_cidrs) {
            rows.push((
                piece,
                (
                    piece.to_string(),
                    l.origin.ty,
                    kind,
                    l.distance,
                    l.via.iter().map(|v| name(t, *v)).collect(),
                ),
            ));
        }
    }
    rows.sort_by(|a, b| prefix_order(&a.0, &b.0).then(a.1.2.cmp(&b.1.2)));
    rows.into_iter().map(|r| r.1).collect()
}

fn ref_links(t: &Topology, r: &reference::RefNode) -> Vec<LinkRow> {
    r.links
        .iter()
        .map(|l| (name(t, l.peer), l.kind, l.protocol))
        .collect()
}

fn ref_routes(t: &Topology, r: &reference::RefNode) -> Vec<RouteRow> {
    r.routes
        .iter()
        .map(|x| {
            (
                x.destination.to_string(),
                x.ty,
                x.kind,
                x.distance,
                x.via.iter().map(|v| name(t, *v)).collect(),
            )
        })
        .collect()
}

/// The first paths a `Net` puts together from each next hop's kept ones are the first of the
/// whole walk, in its order, with its count, asked cold and again from what was kept.
fn first_paths_are_the_walk(net: &Net<'_>, n: NodeId, prefix: &IpNet) -> Result<(), String> {
    let fp = net.forwarding_paths(n, prefix);
    for limit in [0, 1, 4, KEPT_PATHS, KEPT_PATHS + 1] {
        let want: Vec<Vec<NodeId>> = fp.iter().take(limit).collect();
        for ask in ["cold", "kept"] {
            let first = net.first_paths(n, prefix, limit);
            let got = (&first.paths, first.total, first.saturated);
            if got != (&want, fp.total(), fp.saturated()) {
                return Err(format!(
                    "first {limit} paths for {prefix} ({ask}): {got:?}, the walk gives {want:?} of {}",
                    fp.total()
                ));
            }
        }
    }
    Ok(())
}

/// Compares every node; returns the first mismatch as text.
fn compare(yaml: &str) -> Result<(), String> {
    let t = topology_of(yaml);
    let net = Net::new(&t, LinkSettings::default());
    let r = reference::compute(&t, &RefSettings::default());
    for (i, rn) in r.nodes.iter().enumerate() {
        let n = NodeId::from_idx(i);
        let (pl, rl) = (prod_links(&net, n), ref_links(&t, rn));
        if pl != rl {
            return Err(format!(
                "node {}: links differ\nproduction: {pl:?}\nreference:  {rl:?}",
                name(&t, n)
            ));
        }
        let (pr, rr) = (prod_routes(&net, n), ref_routes(&t, rn));
        if pr != rr {
            return Err(format!(
                "node {}: routes differ\nproduction: {pr:#?}\nreference:  {rr:#?}",
                name(&t, n)
            ));
        }
        // Forwarding paths (every ECMP branch, each gateway following its own selection).
        for route in rn.routes.iter().filter(|x| x.kind != RefRouteKind::Direct) {
            let (mut got, total) = net.paths(n, &route.advertised, usize::MAX);
            let mut want = route.paths.clone();
            got.sort();
            want.sort();
            if got != want || total != want.len() as u64 {
                return Err(format!(
                    "node {}: paths for {} differ\nproduction: {got:?} ({total} in all)\nreference:  {want:?}",
                    name(&t, n),
                    route.advertised
                ));
            }
            first_paths_are_the_walk(&net, n, &route.advertised)
                .map_err(|e| format!("node {}: {e}", name(&t, n)))?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(proptest_config(
        1000,
        concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/topology-core-reference.txt")
    ))]

    /// Links (peer, kind, protocol), installed prefixes (cut), route types, kinds, distances,
    /// next hops and forwarding paths of every node equal the reference.
    #[test]
    fn production_forwarding_equals_reference(spec in arb_spec()) {
        let yaml = spec.to_yaml();
        if let Err(e) = compare(&yaml) {
            prop_assert!(false, "{e}\n--- input ---\n{yaml}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Unit tests: the consequences of `forwarding.md`, each checked on production and reference.

fn site(name: &str, i: u8, extra: &str) -> String {
    format!(
        "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata:\n  name: {name}\nspec:\n  nodeCidrs: [10.{i}.0.0/16]\n  podCidrAssignments:\n    - cidrBlocks: [10.{}.0.0/16]\n{extra}",
        100 + u32::from(i)
    )
}

fn pool(name: &str, extra: &str) -> String {
    format!(
        "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: GatewayPool\nmetadata:\n  name: {name}\nspec:\n  type: External\n  nodeSelector:\n    pool: {name}\n{extra}"
    )
}

fn assign(name: &str, sites: &[&str], pools: &[&str], enabled: bool) -> String {
    format!(
        "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: SiteGatewayPoolAssignment\nmetadata:\n  name: {name}\nspec:\n  enabled: {enabled}\n  sites: [{}]\n  gatewayPools: [{}]\n",
        sites.join(", "),
        pools.join(", ")
    )
}

fn pool_peering(name: &str, pools: &[&str], enabled: bool) -> String {
    format!(
        "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: GatewayPoolPeering\nmetadata:\n  name: {name}\nspec:\n  enabled: {enabled}\n  gatewayPools: [{}]\n",
        pools.join(", ")
    )
}

fn site_peering(name: &str, sites: &[&str], mesh: bool) -> String {
    format!(
        "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: SitePeering\nmetadata:\n  name: {name}\nspec:\n  meshNodes: {mesh}\n  sites: [{}]\n",
        sites.join(", ")
    )
}

/// A node in Site number `site` (index `j`), optionally labelled into a pool.
fn node(name: &str, site: u8, j: u8, pool: Option<&str>) -> String {
    let labels = pool
        .map(|p| format!("  labels:\n    pool: {p}\n"))
        .unwrap_or_default();
    let ext = if pool.is_some() {
        format!(
            "    - type: ExternalIP\n      address: 198.51.100.{}\n",
            10 * u32::from(site) + u32::from(j) + 1
        )
    } else {
        String::new()
    };
    format!(
        "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n{labels}spec:\n  podCIDRs: [10.{}.{j}.0/24]\nstatus:\n  addresses:\n    - type: InternalIP\n      address: 10.{site}.0.{}\n{ext}",
        100 + u32::from(site),
        u32::from(j) + 1
    )
}

/// Learned routes (uncut) of a node from production: prefix → (distance, via names).
fn learned(yaml: &str, n: &str) -> Vec<(String, u32, Vec<String>)> {
    let t = topology_of(yaml);
    let net = Net::new(&t, LinkSettings::default());
    let id = t.node_id(n).expect("node exists");
    net.learned(id)
        .iter()
        .map(|l| {
            (
                l.prefix.to_string(),
                l.distance,
                l.via.iter().map(|v| name(&t, *v)).collect(),
            )
        })
        .collect()
}

/// The same from the reference (uncut advertised prefixes of learned routes).
fn ref_learned(yaml: &str, n: &str) -> Vec<(String, u32, Vec<String>)> {
    let t = topology_of(yaml);
    let r = reference::compute(&t, &RefSettings::default());
    let id = t.node_id(n).expect("node exists");
    let mut out: Vec<(String, u32, Vec<String>)> = Vec::new();
    for x in &r.nodes[id.idx()].routes {
        if x.kind == RefRouteKind::Direct {
            continue;
        }
        let row = (
            x.advertised.to_string(),
            x.distance,
            x.via.iter().map(|v| name(&t, *v)).collect(),
        );
        if !out.contains(&row) {
            out.push(row);
        }
    }
    out
}

fn has(routes: &[(String, u32, Vec<String>)], prefix: &str) -> bool {
    routes.iter().any(|r| r.0 == prefix)
}

/// Both implementations agree on this input (and the caller's expectations then hold for both).
fn agree(yaml: &str) {
    if let Err(e) = compare(yaml) {
        panic!("{e}\n--- input ---\n{yaml}");
    }
}

/// Site A (pool PA located in A), Site C (pool PC located in C), transit pool PT whose only
/// gateway sits in Site A. PA–PT and PT–PC are peered. A reaches C through PT, but C cannot
/// reach A: every path from C to A passes PT, whose gateway sits in A and drops A's hop lists.
#[test]
fn transit_through_pool_in_destination_site_is_impossible() {
    let yaml = [
        site("A", 1, ""),
        site("C", 3, ""),
        pool("PA", ""),
        pool("PC", ""),
        pool("PT", ""),
        assign("a-pa", &["A"], &["PA"], true),
        assign("c-pc", &["C"], &["PC"], true),
        pool_peering("pa-pt", &["PA", "PT"], true),
        pool_peering("pt-pc", &["PT", "PC"], true),
        node("wa", 1, 0, None),
        node("ga", 1, 1, Some("PA")),
        node("gt", 1, 2, Some("PT")),
        node("wc", 3, 0, None),
        node("gc", 3, 1, Some("PC")),
    ]
    .concat();
    agree(&yaml);
    for f in [learned, ref_learned] {
        let wa = f(&yaml, "wa");
        assert!(has(&wa, "10.103.0.0/16"), "A reaches C's pods: {wa:?}");
        let row = wa.iter().find(|r| r.0 == "10.103.0.0/16").unwrap();
        assert_eq!(row.1, 3, "through PA, PT, PC");
        let wc = f(&yaml, "wc");
        assert!(
            !has(&wc, "10.101.0.0/16"),
            "C cannot reach A's pods: {wc:?}"
        );
        assert!(!has(&wc, "10.1.0.0/16"), "nor A's nodes: {wc:?}");
        let gt = f(&yaml, "gt");
        assert!(
            !has(&gt, "10.101.0.0/16"),
            "the transit gateway in A drops A: {gt:?}"
        );
        assert!(has(&gt, "10.103.0.0/16"), "but forwards towards C: {gt:?}");
    }
}

/// Pool PX is assigned to Site X (where gateway gy of pool PY sits) and serves Site D too.
/// gy's pool is not peered with PX, so gy learns nothing about D: pools merely assigned to its
/// own Site do not route for it (it is no worker). The worker wx of X does reach D through PX.
#[test]
fn gateway_cannot_use_pools_assigned_to_its_own_site() {
    let yaml = [
        site("D", 4, ""),
        site("X", 5, ""),
        site("Y", 6, ""),
        pool("PX", ""),
        pool("PY", ""),
        assign("x-px", &["X", "D"], &["PX"], true),
        assign("y-py", &["Y"], &["PY"], true),
        node("wd", 4, 0, None),
        node("gx", 4, 1, Some("PX")),
        node("wx", 5, 0, None),
        node("gy", 5, 1, Some("PY")),
        node("wy", 6, 0, None),
    ]
    .concat();
    agree(&yaml);
    for f in [learned, ref_learned] {
        assert!(
            has(&f(&yaml, "wx"), "10.104.0.0/16"),
            "the worker of X reaches D"
        );
        let gy = f(&yaml, "gy");
        assert!(gy.is_empty(), "gy learns nothing: {gy:?}");
    }
}

fn chain(pp_enabled: bool, assignment_enabled: bool) -> String {
    [
        site("A", 1, ""),
        site("B", 2, ""),
        site("C", 3, ""),
        pool("PA", "  routedCidrs: [172.16.0.0/16]\n"),
        pool("PB", ""),
        pool("PC", ""),
        assign("a-pa", &["A"], &["PA"], true),
        assign("b-pb", &["B"], &["PB"], assignment_enabled),
        assign("c-pc", &["C"], &["PC"], true),
        pool_peering("pa-pb", &["PA", "PB"], true),
        pool_peering("pb-pc", &["PB", "PC"], pp_enabled),
        node("wa", 1, 0, None),
        node("ga", 1, 1, Some("PA")),
        node("wb", 2, 0, None),
        node("gb", 2, 1, Some("PB")),
        node("wc", 3, 0, None),
        node("gc", 3, 1, Some("PC")),
    ]
    .concat()
}

fn all_routes(yaml: &str) -> Vec<(String, String, u32, Vec<String>)> {
    let t = topology_of(yaml);
    let mut out = Vec::new();
    for n in &t.nodes {
        for r in learned(yaml, &n.name) {
            out.push((n.name.to_string(), r.0, r.1, r.2));
        }
    }
    out
}

/// Disabling the pool peering PB–PC removes exactly the routes that crossed it; disabling the
/// assignment of B removes exactly the routes to B (and worker B's own learned routes).
#[test]
fn disabling_removes_exactly_the_dependent_routes() {
    let full = chain(true, true);
    agree(&full);
    let all = all_routes(&full);
    // Routes that crossed PB–PC: between {A, B, routed 172.16} and C, in both directions.
    let crosses = |n: &str, p: &str| {
        let c_side = n == "wc" || n == "gc";
        let to_c = p == "10.103.0.0/16" || p == "10.3.0.0/16";
        c_side != to_c
    };
    let without_pp = chain(false, true);
    agree(&without_pp);
    let expected: Vec<_> = all
        .iter()
        .filter(|r| !crosses(&r.0, &r.1))
        .cloned()
        .collect();
    assert_eq!(all_routes(&without_pp), expected);

    // Routes that depended on assignment b-pb: every route to B's prefixes, worker B's learned
    // routes (its uplinks are gone) and nothing else.
    let without_sgpa = chain(true, false);
    agree(&without_sgpa);
    let to_b = |p: &str| p == "10.102.0.0/16" || p == "10.2.0.0/16";
    let expected: Vec<_> = all
        .iter()
        .filter(|r| !to_b(&r.1) && r.0 != "wb")
        .cloned()
        .collect();
    assert_eq!(all_routes(&without_sgpa), expected);
}

/// A network-only peering of A and C keeps C's node CIDRs off A's gateway (and worker) routes,
/// while pod blocks are still learned through gateways; no links are created by it.
#[test]
fn network_only_peering_keeps_node_cidrs_off_gateway_routes() {
    let base = [
        site("A", 1, ""),
        site("C", 3, ""),
        pool("PA", ""),
        pool("PC", ""),
        assign("a-pa", &["A"], &["PA"], true),
        assign("c-pc", &["C"], &["PC"], true),
        pool_peering("pa-pc", &["PA", "PC"], true),
        node("wa", 1, 0, None),
        node("ga", 1, 1, Some("PA")),
        node("wc", 3, 0, None),
        node("gc", 3, 1, Some("PC")),
    ]
    .concat();
    let peered = format!("{base}{}", site_peering("ac-net", &["A", "C"], false));
    agree(&base);
    agree(&peered);
    for f in [learned, ref_learned] {
        for n in ["wa", "ga"] {
            assert!(
                has(&f(&base, n), "10.3.0.0/16"),
                "{n} learns C's nodes without the peering"
            );
            let r = f(&peered, n);
            assert!(
                !has(&r, "10.3.0.0/16"),
                "{n} keeps C's node CIDR off: {r:?}"
            );
            assert!(has(&r, "10.103.0.0/16"), "{n} still learns C's pods: {r:?}");
        }
    }
    // No mesh link between wa and wc from a network-only peering.
    let t = topology_of(&peered);
    let net = Net::new(&t, LinkSettings::default());
    let wa = t.node_id("wa").unwrap();
    let wc = t.node_id("wc").unwrap();
    assert!(net.link(wa, wc).is_none());
}

/// The generator reaches the shapes the oracle tests need (guards against a strategy change
/// that silently makes the property tests trivial): multi-hop transit paths, ECMP, cut routes,
/// merged prefixes, and pools whose gateways sit in several Sites.
#[test]
fn generator_covers_interesting_shapes() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let samples = 500;
    let mut counts = [0u32; 6];
    for _ in 0..samples {
        let spec = arb_spec().new_tree(&mut runner).unwrap().current();
        let t = topology_of(&spec.to_yaml());
        let r = reference::compute(&t, &RefSettings::default());
        let mut has = [false; 6];
        for n in &r.nodes {
            for x in &n.routes {
                has[0] |= x.distance >= 2;
                has[1] |= x.kind == RefRouteKind::Transit;
                has[2] |= x.destination != x.advertised;
                has[3] |= x.paths.len() > 1;
                has[4] |= x.advertised.to_string() == test_utils::testkit::SHARED_BLOCK;
            }
        }
        has[5] = t.pools.iter().any(|p| {
            let mut s: Vec<_> = p.gateways.iter().map(|g| t.node(*g).site).collect();
            s.sort();
            s.dedup();
            s.len() > 1
        });
        for (c, h) in counts.iter_mut().zip(has) {
            *c += u32::from(h);
        }
    }
    let names = [
        "distance>=2",
        "transit",
        "cut",
        "multipath",
        "merged",
        "multi-site pool",
    ];
    let minimum = [25, 75, 10, 75, 5, 100];
    for ((n, c), m) in names.iter().zip(counts).zip(minimum) {
        assert!(
            c >= m,
            "{n}: only {c} of {samples} samples (want {m}): {counts:?}"
        );
    }
}

/// Sites A and C share the pod block 10.200.0.0/16 (identical prefixes merge). PA (gateway in
/// A) serves A, PC (gateway in C) serves C, PA–PC are peered. Worker wa of A drops [A, PA] and
/// accepts [C, PC, PA] from ga, so it routes 10.200.0.0/16 via ga at distance 2; ga's pool
/// originates the prefix (for A), so by rule 6 ga installs no route for it and delivers: the
/// one forwarding branch of wa's route ends at ga. Every installed learned route has at least
/// one forwarding path.
#[test]
fn merged_prefix_route_has_its_forwarding_path() {
    let shared = "    - cidrBlocks: [10.200.0.0/16]\n";
    let yaml = [
        site("A", 1, shared),
        site("C", 3, shared),
        pool("PA", ""),
        pool("PC", ""),
        assign("a-pa", &["A"], &["PA"], true),
        assign("c-pc", &["C"], &["PC"], true),
        pool_peering("pa-pc", &["PA", "PC"], true),
        node("wa", 1, 0, None),
        node("ga", 1, 1, Some("PA")),
        node("gc", 3, 1, Some("PC")),
    ]
    .concat();
    let t = topology_of(&yaml);
    let net = Net::new(&t, LinkSettings::default());
    let wa = t.node_id("wa").unwrap();
    let ga = t.node_id("ga").unwrap();
    let prefix: ipnet::IpNet = "10.200.0.0/16".parse().unwrap();
    let l = net
        .learned_for(wa, &prefix)
        .expect("wa routes the shared block");
    assert_eq!((l.distance, l.via.to_vec()), (2, vec![ga]));
    let r = reference::compute(&t, &RefSettings::default());
    let want: Vec<Vec<NodeId>> = vec![vec![ga]];
    let rr = r.nodes[wa.idx()]
        .routes
        .iter()
        .find(|x| x.advertised == prefix)
        .unwrap();
    assert_eq!(rr.paths, want, "reference");
    let (got, total) = net.paths(wa, &prefix, 8);
    assert_eq!((got, total), (want, 1), "production");
}
