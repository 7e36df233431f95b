//! The prefix table a `Net` builds (sorted on plain keys, indexed by prefix) against one written
//! here: every Site's pod blocks and node CIDRs and every pool's routed CIDRs, grouped by prefix
//! in `prefix_order`, each with its origins sorted. `origins_of`, `sole_origin` and `sole_prefix`
//! answer from the index, also for a prefix written with host bits set (a sole prefix is its place
//! in the table), `sole_prefixes` agrees with them for a node's routes in any order, and
//! `sole_prefixes_leading_to` lists the sole prefixes of the destinations asked.

use ipnet::IpNet;
use proptest::prelude::*;
use std::collections::BTreeMap;
use test_utils::reference::topology_of;
use test_utils::testkit::scale::ScaleSpec;
use test_utils::testkit::{arb_spec, proptest_config};
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::Topology;
use topology_core::net::{Dest, LinkSettings, Net, Origin, RouteType, prefix_order};

/// Every advertised prefix with its origins, in output order.
fn expected(topo: &Topology) -> Vec<(IpNet, Vec<Origin>)> {
    let mut by_prefix: BTreeMap<(bool, u128, u8), (IpNet, Vec<Origin>)> = BTreeMap::new();
    let mut add = |p: IpNet, ty: RouteType, dest: Dest| {
        let key = match p {
            IpNet::V4(x) => (false, u128::from(u32::from(x.network())), x.prefix_len()),
            IpNet::V6(x) => (true, u128::from(x.network()), x.prefix_len()),
        };
        let entry = by_prefix.entry(key).or_insert_with(|| (p, Vec::new()));
        entry.1.push(Origin { ty, dest });
    };
    for (i, s) in topo.sites.iter().enumerate() {
        let dest = Dest::Site(SiteId::from_idx(i));
        for p in &s.pod_blocks {
            add(*p, RouteType::PodCidr, dest);
        }
        for p in &s.node_cidrs {
            add(*p, RouteType::NodeCidr, dest);
        }
    }
    for (i, p) in topo.pools.iter().enumerate() {
        for c in &p.routed_cidrs {
            add(*c, RouteType::RoutedCidr, Dest::Pool(PoolId::from_idx(i)));
        }
    }
    by_prefix
        .into_values()
        .map(|(p, mut o)| {
            o.sort();
            o.dedup();
            (p, o)
        })
        .collect()
}

/// `p` with its lowest host bit set (itself when it has no host bits).
fn with_host_bit(p: IpNet) -> IpNet {
    match p {
        IpNet::V4(x) if x.prefix_len() < 32 => {
            let a = u32::from(x.network()) | 1;
            IpNet::new(std::net::Ipv4Addr::from(a).into(), x.prefix_len()).unwrap_or(p)
        }
        IpNet::V6(x) if x.prefix_len() < 128 => {
            let a = u128::from(x.network()) | 1;
            IpNet::new(std::net::Ipv6Addr::from(a).into(), x.prefix_len()).unwrap_or(p)
        }
        _ => p,
    }
}

fn check(topo: &Topology) {
    let net = Net::new(topo, LinkSettings::default());
    let got: Vec<(IpNet, Vec<Origin>)> = net
        .advertised_prefixes()
        .map(|(p, o)| (*p, o.to_vec()))
        .collect();
    assert_eq!(got, expected(topo));
    assert!(
        got.windows(2)
            .all(|w| prefix_order(&w[0].0, &w[1].0).is_lt())
    );
    assert_eq!(net.prefix_count(), got.len());
    for (i, (p, origins)) in got.iter().enumerate() {
        for asked in [*p, with_host_bit(*p)] {
            assert_eq!(net.origins_of(&asked).as_slice(), origins.as_slice());
            let sole = match origins.as_slice() {
                [o] => Some(*o),
                _ => None,
            };
            assert_eq!(net.sole_origin(&asked), sole);
            assert_eq!(
                net.sole_prefix(&asked).map(|(at, o)| (at.idx(), o)),
                sole.map(|o| (i, o))
            );
        }
    }
    // The sole prefixes leading to every other Site's destination.
    let picked = |d: Dest| matches!(d, Dest::Site(s) if s.idx() % 2 == 0);
    let want: Vec<usize> = got
        .iter()
        .enumerate()
        .filter(|(_, (_, o))| matches!(o.as_slice(), [o] if picked(o.dest)))
        .map(|(i, _)| i)
        .collect();
    let leading: Vec<usize> = net
        .sole_prefixes_leading_to(picked)
        .iter()
        .map(|p| p.idx())
        .collect();
    assert_eq!(leading, want);
    // A node's learned routes, in their order and reversed: one walk, or look-ups.
    for i in 0..topo.nodes.len() {
        let mut learned = net.learned(NodeId::from_idx(i)).to_vec();
        for _ in 0..2 {
            let want: Vec<Option<usize>> = learned
                .iter()
                .map(|l| net.sole_prefix(&l.prefix).map(|(at, _)| at.idx()))
                .collect();
            let got: Vec<Option<usize>> = net
                .sole_prefixes(&learned)
                .iter()
                .map(|p| p.map(|p| p.idx()))
                .collect();
            assert_eq!(got, want);
            learned.reverse();
        }
    }
    let unknown: IpNet = "203.0.113.0/24".parse().unwrap();
    if !got.iter().any(|(p, _)| *p == unknown) {
        assert!(net.origins_of(&unknown).is_empty());
        assert_eq!(net.sole_origin(&unknown), None);
    }
}

#[test]
fn prefix_table_of_a_scale_cluster() {
    let spec = ScaleSpec {
        sites: 40,
        pools: 10,
        chords: 2,
        ..ScaleSpec::standard()
    };
    let d = spec.decode();
    check(&Topology::build(
        d.objects.iter(),
        d.diagnostics.iter().cloned(),
    ));
}

proptest! {
    #![proptest_config(proptest_config(
        128,
        concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/topology-core-prefix-table.txt")
    ))]

    /// On random topologies (identical prefixes of several Sites included), the table and its
    /// index agree with the one written here.
    #[test]
    fn prefix_table_matches_its_definition(spec in arb_spec()) {
        check(&topology_of(&spec.to_yaml()));
    }
}
