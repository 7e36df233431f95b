//! The seeded scale generator (`test_utils::testkit::scale`) produces the standard cluster of
//! the performance budgets, valid and deterministic.

use test_utils::testkit::scale::{ScaleSpec, mesh_peering, pool_peering};
use topology_core::diag::Severity;
use topology_core::model::{Role, Topology};

fn build(text: &str) -> Topology {
    let d = topology_core::decode::decode([("scale.yaml", text.as_bytes())]);
    Topology::build(&d.objects, d.diagnostics)
}

fn errors(t: &Topology) -> Vec<String> {
    t.diagnostics
        .iter()
        .filter(|d| d.severity == Severity::Error)
        .map(|d| d.to_string())
        .collect()
}

fn check_cluster(spec: &ScaleSpec, nodes: usize, sites: usize, pools: usize, comps: usize) {
    let text = spec.generate();
    let t = build(&text);
    assert_eq!(errors(&t), Vec::<String>::new());
    assert_eq!(
        t.diagnostics.len(),
        0,
        "{:#?}",
        t.diagnostics.iter().take(5).collect::<Vec<_>>()
    );
    assert_eq!(t.nodes.len(), nodes);
    assert_eq!(spec.node_count(), nodes);
    assert_eq!(t.sites.len(), sites);
    assert_eq!(t.pools.len(), pools);
    assert_eq!(t.components.len(), comps);
    assert_eq!(spec.component_count(), comps);
    assert!(
        t.components
            .iter()
            .all(|c| c.sites.len() == spec.mesh_group)
    );

    // Every pool has its gateways, all in one Site, a different Site per pool, one per component.
    let mut pool_sites = Vec::new();
    for p in &t.pools {
        assert_eq!(p.gateways.len(), spec.gateways_per_pool, "pool {}", p.name);
        assert!(!p.internal);
        let s = t.node(p.gateways[0]).site;
        assert!(p.gateways.iter().all(|g| t.node(*g).site == s));
        assert!(
            p.gateways
                .iter()
                .all(|g| !t.node(*g).external_ips.is_empty())
        );
        pool_sites.push(s);
    }
    let mut comps_with_pool: Vec<_> = pool_sites.iter().map(|s| t.comp(*s)).collect();
    pool_sites.sort();
    pool_sites.dedup();
    assert_eq!(pool_sites.len(), pools);
    comps_with_pool.sort();
    comps_with_pool.dedup();
    assert_eq!(comps_with_pool.len(), pools.min(comps));
    let gateways = t
        .nodes
        .iter()
        .filter(|n| matches!(n.role, Role::Gateway(_)))
        .count();
    assert_eq!(gateways, pools * spec.gateways_per_pool);

    // Every Site has one counting assignment naming it and 2 distinct pools.
    assert_eq!(t.assignments.len(), sites);
    for s in 0..sites {
        let sid = topology_core::ids::SiteId::from_idx(s);
        let a = t.assignments_of(sid);
        assert_eq!(a.len(), 1);
        let r = t.assignment(a[0]);
        assert!(r.relates);
        assert_eq!(r.sites, [sid]);
        assert_eq!(r.pools.len(), 2);
    }

    // Ring plus chords, every one counting.
    assert_eq!(t.pool_peerings.len(), pools + spec.chords);
    assert!(
        t.pool_peerings
            .iter()
            .all(|r| r.relates && r.pools.len() == 2)
    );
    for p in 0..pools {
        let pid = topology_core::ids::PoolId::from_idx(p);
        assert!(
            t.pool_peerings_of(pid).len() >= 2,
            "pool {p} is on the ring"
        );
    }

    // Exactly 20% capped, every cap in 1300..=1450.
    let pct = |n: usize| (n * spec.capped_percent as usize + 50) / 100;
    let capped = |caps: Vec<Option<u32>>| -> usize {
        assert!(caps.iter().flatten().all(|c| (1300..=1450).contains(c)));
        caps.iter().flatten().count()
    };
    let site_caps = capped(
        t.sites
            .iter()
            .map(|s| s.cap.as_ref().map(|c| c.mtu.get()))
            .collect(),
    );
    assert_eq!(site_caps, pct(sites));
    let pool_caps = capped(
        t.pools
            .iter()
            .map(|s| s.cap.as_ref().map(|c| c.mtu.get()))
            .collect(),
    );
    assert_eq!(pool_caps, pct(pools));
    let peering_caps = capped(
        t.site_peerings
            .iter()
            .map(|s| s.cap.as_ref().map(|c| c.mtu.get()))
            .collect(),
    );
    assert_eq!(peering_caps, pct(t.site_peerings.len()));
    let asg_caps = capped(
        t.assignments
            .iter()
            .map(|s| s.cap.as_ref().map(|c| c.mtu.get()))
            .collect(),
    );
    assert_eq!(asg_caps, pct(sites));
    let pp_caps = capped(
        t.pool_peerings
            .iter()
            .map(|s| s.cap.as_ref().map(|c| c.mtu.get()))
            .collect(),
    );
    assert_eq!(pp_caps, pct(pools + spec.chords));

    // Exactly 10% of nodes with a 9000 underlay.
    let jumbo = t
        .nodes
        .iter()
        .filter(|n| {
            n.underlay
                .as_ref()
                .is_some_and(|u| u.mtu == 9000 && u.invalid.is_none())
        })
        .count();
    assert_eq!(jumbo, (nodes * spec.jumbo_percent as usize + 50) / 100);
    assert!(
        t.nodes
            .iter()
            .all(|n| n.underlay.as_ref().is_none_or(|u| u.mtu == 9000))
    );
}

#[test]
fn standard_cluster_has_the_budgeted_shape() {
    let spec = ScaleSpec::standard();
    check_cluster(&spec, 5_000, 200, 50, 50);
}

#[test]
fn double_cluster_has_the_budgeted_shape() {
    let spec = ScaleSpec::double();
    check_cluster(&spec, 10_000, 400, 100, 100);
}

#[test]
fn generator_is_deterministic() {
    let a = ScaleSpec::standard().generate();
    let b = ScaleSpec::standard().generate();
    assert_eq!(a, b);
    assert_eq!(
        ScaleSpec::standard().objects(),
        ScaleSpec::standard().objects()
    );
    let other = ScaleSpec {
        seed: 7,
        ..ScaleSpec::standard()
    };
    assert_ne!(a, other.generate(), "the seed drives the choices");
    // A different seed keeps the shape.
    check_cluster(&other, 5_000, 200, 50, 50);
}

#[test]
fn small_shapes_stay_valid() {
    for (sites, mesh, pools, chords) in [(1, 4, 1, 0), (3, 4, 2, 3), (7, 3, 5, 2), (9, 1, 9, 4)] {
        let spec = ScaleSpec {
            sites,
            nodes_per_site: 3,
            mesh_group: mesh,
            pools,
            gateways_per_pool: 2,
            chords,
            capped_percent: 50,
            jumbo_percent: 30,
            seed: 3,
        };
        let t = build(&spec.generate());
        assert_eq!(errors(&t), Vec::<String>::new(), "{spec:?}");
        assert_eq!(t.nodes.len(), sites * 3);
        assert_eq!(t.pools.len(), pools);
        assert_eq!(t.components.len(), spec.component_count(), "{spec:?}");
    }
}

#[test]
fn mesh_peering_is_one_component() {
    for n in [2, 3, 50] {
        let t = build(&mesh_peering(n));
        assert_eq!(t.diagnostics.len(), 0, "{:#?}", t.diagnostics);
        assert_eq!(t.sites.len(), n);
        assert_eq!(t.nodes.len(), n);
        assert_eq!(t.site_peerings.len(), 1);
        assert!(t.site_peerings[0].relates);
        assert_eq!(t.components.len(), 1);
    }
}

#[test]
fn pool_peering_relates_every_pool() {
    for n in [2, 3, 40] {
        let t = build(&pool_peering(n));
        assert_eq!(t.diagnostics.len(), 0, "{:#?}", t.diagnostics);
        assert_eq!(t.sites.len(), 1);
        assert_eq!(t.pools.len(), n);
        assert!(t.pools.iter().all(|p| p.gateways.len() == 1));
        assert_eq!(t.pool_peerings.len(), 1);
        assert_eq!(t.pool_peerings[0].pools.len(), n);
        assert!(t.pool_peerings[0].relates);
    }
}
