//! The random-topology strategy ([`arb_spec`]) really produces the shapes the property tests are
//! meant to cover, so a property test that passes is not passing because a shape never occurs.
//! Decision D12's shapes are counted over a fixed-seed sample.

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use test_utils::reference::topology_of;
use test_utils::testkit::{PoolLabel, arb_spec};
use topology_core::diag::Code;
use topology_core::model::Topology;
use topology_core::net::{LinkKind, LinkSettings, Net, RouteType};

#[derive(Default, Debug)]
struct Seen {
    node_address_routes: usize,
    unmanaged_same_site_uplinks: usize,
    default_route_diags: usize,
    missing_pool_label_gateways: usize,
    missing_pool_label_workers: usize,
    status_membership: usize,
    ipv6_outer_links_under_ipv4: usize,
    ipv4_outer_links: usize,
}

fn count(t: &Topology, spec: &test_utils::testkit::TopoSpec, seen: &mut Seen) {
    let net = Net::new(t, LinkSettings::default());
    let mut node_address = false;
    let mut unmanaged = false;
    let (mut v6_links, mut v4_links) = (false, false);
    for (i, node) in t.nodes.iter().enumerate() {
        let n = topology_core::ids::NodeId::from_idx(i);
        for l in net.links(n) {
            if net
                .direct_routes(n, &l)
                .iter()
                .any(|(_, ty)| *ty == RouteType::NodeAddress)
            {
                node_address = true;
            }
            if l.kind == LinkKind::Uplink && !net.carries_node_pods(n, l.peer, l.kind) {
                unmanaged = true;
            }
            // The tunnel family is IPv4 (the default): IPv6 outer only through IPv6 addresses.
            v6_links |= l.ipv6_outer;
            v4_links |= !l.ipv6_outer;
        }
        let label = spec
            .nodes
            .iter()
            .find(|s| s.name() == *node.name)
            .and_then(|s| s.pool_label);
        if label == Some(PoolLabel::True) {
            if node.is_gateway() {
                seen.missing_pool_label_gateways += 1;
            } else {
                seen.missing_pool_label_workers += 1;
            }
        }
    }
    seen.node_address_routes += usize::from(node_address);
    seen.unmanaged_same_site_uplinks += usize::from(unmanaged);
    seen.ipv6_outer_links_under_ipv4 += usize::from(v6_links);
    seen.ipv4_outer_links += usize::from(v4_links);
    seen.default_route_diags +=
        usize::from(t.diagnostics.iter().any(|d| d.code == Code::DefaultRoute));
    seen.status_membership += usize::from(spec.pools.iter().any(|p| p.status_nodes));
}

#[test]
fn random_topologies_cover_the_d12_shapes_and_address_families() {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let strategy = arb_spec();
    let mut seen = Seen::default();
    const SAMPLES: usize = 400;
    for _ in 0..SAMPLES {
        let spec = strategy.new_tree(&mut runner).expect("a value").current();
        let t = topology_of(&spec.to_yaml());
        count(&t, &spec, &mut seen);
    }
    println!("{seen:?} in {SAMPLES} topologies");
    // Each shape in at least 5 % of the topologies (a gateway found through a `"true"` label and
    // a worker left with one are counted per node).
    let floor = SAMPLES / 20;
    assert!(seen.node_address_routes >= floor, "{seen:?}");
    assert!(seen.unmanaged_same_site_uplinks >= floor, "{seen:?}");
    assert!(seen.default_route_diags >= floor, "{seen:?}");
    assert!(seen.missing_pool_label_gateways >= floor, "{seen:?}");
    assert!(seen.missing_pool_label_workers >= floor, "{seen:?}");
    assert!(seen.status_membership >= floor, "{seen:?}");
    assert!(seen.ipv6_outer_links_under_ipv4 >= floor, "{seen:?}");
    assert!(seen.ipv4_outer_links >= floor, "{seen:?}");
}
