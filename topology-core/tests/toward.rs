//! Next hops towards an origin pool (`Net::via_toward`, and as gateway classes
//! `Net::classes_toward`) are the peered pools' gateways one pool nearer to it, whichever search
//! they are read from: a trace rooted where the walk started, a trace rooted elsewhere, or the
//! origin pool's own search. Compared with a breadth-first search from the origin pool written
//! here, on random topologies and a small cluster of the scale shape, asking on fresh views
//! (every trace rooted at the asking pool) and on one view in two orders (traces reused, then
//! past a few roots the origin's own search).

use proptest::prelude::*;
use std::collections::VecDeque;
use test_utils::reference::topology_of;
use test_utils::testkit::scale::ScaleSpec;
use test_utils::testkit::{arb_spec, proptest_config};
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::Topology;
use topology_core::net::{LinkSettings, Net};

/// Hops from pool `a` to every pool over pools with gateways sharing a pool peering (`None`:
/// not reached; a pool without gateways is reached only from itself).
fn hops_from(topo: &Topology, a: usize) -> Vec<Option<usize>> {
    let has_gw = |p: usize| !topo.pools[p].gateways.is_empty();
    let mut hops = vec![None; topo.pools.len()];
    hops[a] = Some(0);
    let mut queue = VecDeque::from([a]);
    while let Some(x) = queue.pop_front() {
        let k = hops[x].unwrap_or(0);
        for r in &topo.pool_peerings {
            if !r.pools.iter().any(|p| p.idx() == x) {
                continue;
            }
            for q in &r.pools {
                if has_gw(q.idx()) && hops[q.idx()].is_none() {
                    hops[q.idx()] = Some(k + 1);
                    queue.push_back(q.idx());
                }
            }
        }
    }
    hops
}

/// The expected next hops of pool `p` towards `a`, by pool pair.
fn expected(topo: &Topology) -> Vec<Vec<Vec<NodeId>>> {
    let n = topo.pools.len();
    let hops: Vec<_> = (0..n).map(|a| hops_from(topo, a)).collect();
    let mut out = vec![vec![Vec::new(); n]; n];
    for a in 0..n {
        if topo.pools[a].gateways.is_empty() {
            continue;
        }
        for p in 0..n {
            let Some(k) = hops[a][p].filter(|k| *k > 0) else {
                continue;
            };
            if topo.pools[p].gateways.is_empty() {
                continue;
            }
            let mut via: Vec<NodeId> = topo
                .pool_peerings
                .iter()
                .filter(|r| r.pools.iter().any(|x| x.idx() == p))
                .flat_map(|r| r.pools.iter())
                .filter(|q| q.idx() != p && hops[a][q.idx()] == Some(k - 1))
                .flat_map(|q| topo.pools[q.idx()].gateways.iter().copied())
                .collect();
            via.sort_unstable();
            via.dedup();
            out[p][a] = via;
        }
    }
    out
}

/// The gateway classes (pool, Site) of `gateways`, each once, sorted.
fn classes_of(topo: &Topology, gateways: &[NodeId]) -> Vec<(PoolId, SiteId)> {
    let mut out: Vec<(PoolId, SiteId)> = gateways
        .iter()
        .filter_map(|g| topo.node(*g).pool().map(|p| (p, topo.node(*g).site)))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn check(topo: &Topology) -> Result<(), TestCaseError> {
    let want = expected(topo);
    let n = topo.pools.len();
    let pools = |i: usize| PoolId::from_idx(i);
    let origins: Vec<usize> = (0..n)
        .filter(|a| !topo.pools[*a].gateways.is_empty())
        .collect();
    for a in &origins {
        for (p, want_p) in want.iter().enumerate() {
            let fresh = Net::new(topo, LinkSettings::default());
            prop_assert_eq!(
                fresh.via_toward(pools(p), pools(*a)).to_vec(),
                want_p[*a].clone()
            );
            // The same next hops as classes, each class once (on another fresh view: the
            // trace is rooted by whichever asks first).
            let fresh = Net::new(topo, LinkSettings::default());
            let mut classes = fresh.classes_toward(pools(p), pools(*a)).to_vec();
            classes.sort_unstable();
            prop_assert_eq!(classes, classes_of(topo, &want_p[*a]));
        }
    }
    for reversed in [false, true] {
        let net = Net::new(topo, LinkSettings::default());
        let mut order: Vec<usize> = (0..n).collect();
        if reversed {
            order.reverse();
        }
        for a in &origins {
            for p in &order {
                prop_assert_eq!(
                    net.via_toward(pools(*p), pools(*a)).to_vec(),
                    want[*p][*a].clone()
                );
            }
        }
    }
    Ok(())
}

#[test]
fn next_hops_on_a_scale_cluster() -> Result<(), TestCaseError> {
    let spec = ScaleSpec {
        sites: 48,
        nodes_per_site: 2,
        pools: 12,
        chords: 3,
        ..ScaleSpec::standard()
    };
    let d = spec.decode();
    let topo = Topology::build(d.objects.iter(), d.diagnostics.iter().cloned());
    check(&topo)
}

proptest! {
    #![proptest_config(proptest_config(
        500,
        concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/topology-core-toward.txt")
    ))]

    #[test]
    fn next_hops_equal_a_search_from_the_origin(spec in arb_spec()) {
        check(&topology_of(&spec.to_yaml()))?;
    }
}
