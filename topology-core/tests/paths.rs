//! Forwarding paths are counted, not enumerated (`forwarding.md`, "Forwarding paths"): on a
//! transit chain of `P` pools with `k` gateways each a worker has `k^P` paths to the far end;
//! the count is exact up to `u64::MAX`, says when it saturates, and the paths shown come first in
//! forwarding order without the others being walked. (Every path of small random topologies is
//! compared with the reference oracle `test_utils::reference` in `tests/reference.rs`.)

use ipnet::IpNet;
use test_utils::testkit::scale::transit_chain;
use topology_core::decode::decode;
use topology_core::ids::NodeId;
use topology_core::model::Topology;
use topology_core::net::{LinkSettings, Net};

fn build(yaml: &str) -> Topology {
    let d = decode([("chain.yaml", yaml.as_bytes())]);
    Topology::build(d.objects.iter(), d.diagnostics)
}

/// The node CIDR of the chain's last Site (Site `pools + 1`).
fn far_end(pools: usize) -> IpNet {
    let i = pools + 1;
    format!("10.{}.{}.0/24", (i / 256) % 128, i % 256)
        .parse()
        .unwrap()
}

/// The first worker (Site 0).
fn near_worker(t: &Topology) -> NodeId {
    t.node_id("node-000-00").unwrap()
}

#[test]
fn chain_paths_are_counted_exactly_and_listed_in_forwarding_order() {
    let (pools, k) = (6usize, 3usize);
    let t = build(&transit_chain(pools, k));
    let net = Net::new(&t, LinkSettings::default());
    let w = near_worker(&t);
    let prefix = far_end(pools);
    let fp = net.forwarding_paths(w, &prefix);
    assert_eq!(fp.total(), 3u64.pow(6));
    assert!(!fp.saturated());
    let all: Vec<Vec<NodeId>> = fp.iter().collect();
    assert_eq!(all.len() as u64, fp.total());
    // Each path crosses every pool once, in chain order.
    for p in &all {
        assert_eq!(p.len(), pools, "{p:?}");
        for (j, g) in p.iter().enumerate() {
            let pool = t.node(*g).pool().map(|x| t.pool(x).name.to_string());
            assert_eq!(pool.as_deref(), Some(format!("pool-{j:02}").as_str()));
        }
    }
    // Forwarding order: next hops are taken in their (sorted) selection order, depth first,
    // so the list is sorted and has no duplicates.
    let mut sorted = all.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(all, sorted);
    // `paths` is the first `limit` of the same list, with the total.
    let (shown, total) = net.paths(w, &prefix, 4);
    assert_eq!(total, fp.total());
    assert_eq!(shown.as_slice(), &all[..4]);
    // One state per gateway on the chain: the count costs the gateways, not the paths.
    assert_eq!(fp.state_count(), pools * k);
}

#[test]
fn chain_count_saturates_and_says_so() {
    // 3^40 < 2^64 < 3^41.
    let t = build(&transit_chain(40, 3));
    let net = Net::new(&t, LinkSettings::default());
    let fp = net.forwarding_paths(near_worker(&t), &far_end(40));
    assert_eq!(fp.total(), 3u64.pow(40));
    assert!(!fp.saturated());

    let t = build(&transit_chain(100, 3));
    let net = Net::new(&t, LinkSettings::default());
    let w = near_worker(&t);
    let fp = net.forwarding_paths(w, &far_end(100));
    assert_eq!(fp.total(), u64::MAX);
    assert!(fp.saturated());
    assert_eq!(fp.state_count(), 300);
    let first: Vec<Vec<NodeId>> = fp.iter().take(3).collect();
    assert_eq!(first.len(), 3);
    assert!(first.iter().all(|p| p.len() == 100));
    // The first path takes every pool's first gateway; the next ones differ at the last hop.
    let names = |p: &Vec<NodeId>| -> Vec<String> {
        p.iter().map(|n| t.node(*n).name.to_string()).collect()
    };
    assert!(names(&first[0]).iter().all(|n| n.ends_with("-00")));
    assert_eq!(
        names(&first[1]).last().map(String::as_str),
        Some("node-100-01")
    );
    assert_eq!(
        names(&first[2]).last().map(String::as_str),
        Some("node-100-02")
    );
}

#[test]
fn no_route_no_paths() {
    let t = build(&transit_chain(3, 2));
    let net = Net::new(&t, LinkSettings::default());
    let fp = net.forwarding_paths(near_worker(&t), &"192.0.2.0/24".parse().unwrap());
    assert_eq!(
        (fp.total(), fp.saturated(), fp.iter().count()),
        (0, false, 0)
    );
}
