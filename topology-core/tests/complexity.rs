//! The complexity requirement of `forwarding.md`: a peering of N members costs index memory
//! linear in N (at most 4N entries), pair lookups memoize only the pairs queried, and a worker
//! without gateway paths builds no gateway-only index.

use test_utils::testkit::scale::{mesh_peering, pool_peering};
use topology_core::decode::decode;
use topology_core::ids::NodeId;
use topology_core::model::Topology;
use topology_core::net::{LinkSettings, Net};

fn build(yaml: &str) -> Topology {
    let d = decode([("gen.yaml", yaml.as_bytes())]);
    Topology::build(d.objects.iter(), d.diagnostics)
}

#[test]
fn site_peering_index_is_linear() {
    for n in [1_000usize, 2_000] {
        let t = build(&mesh_peering(n));
        assert_eq!(t.sites.len(), n);
        assert_eq!(t.site_peerings.len(), 1);
        let entries = t.index_entries();
        assert!(
            entries <= 4 * n,
            "{n}-member SitePeering: {entries} index entries > 4N"
        );
        // One node resolved: its links touch N−1 Site pairs, and the memo holds exactly those.
        let net = Net::new(&t, LinkSettings::default());
        let links = net.links(NodeId::from_idx(0));
        assert_eq!(links.len(), n - 1);
        assert!(
            net.memo_stats().pair_entries < n,
            "memo {} > pairs queried {}",
            net.memo_stats().pair_entries,
            n - 1
        );
        // Symmetric: asking the reverse pairs adds nothing.
        let s0 = t.node(NodeId::from_idx(0)).site;
        let before = net.memo_stats().pair_entries;
        for l in &links {
            let s = t.node(l.peer).site;
            assert!(net.mesh_peered(s, s0));
        }
        assert_eq!(net.memo_stats().pair_entries, before);
        // A worker whose Site has no assignment pays nothing for gateway paths.
        assert!(net.learned(NodeId::from_idx(0)).is_empty());
        assert!(
            !net.memo_stats().gateway_indexes,
            "a worker without assignments built gateway indexes"
        );
    }
}

#[test]
fn pool_peering_index_is_linear() {
    for n in [1_000usize, 2_000] {
        let t = build(&pool_peering(n));
        assert_eq!(t.pools.len(), n);
        assert_eq!(t.pool_peerings.len(), 1);
        let entries = t.index_entries();
        assert!(
            entries <= 4 * n,
            "{n}-member GatewayPoolPeering: {entries} index entries > 4N"
        );
        let net = Net::new(&t, LinkSettings::default());
        let g = t.pools[0].gateways[0];
        let links = net.links(g);
        assert!(links.len() >= n - 1);
        // Transit pairs memoized: at most the pool pairs this gateway's links queried.
        assert!(
            net.memo_stats().pair_entries <= 2 * n,
            "memo {} for one gateway",
            net.memo_stats().pair_entries
        );
    }
}
