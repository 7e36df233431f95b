//! Batched writes on the real kernel, in private network namespaces (root only; skipped with a
//! printed reason otherwise): thousands of routes land exactly, and a write the kernel refuses
//! inside a batch is named with its errno while the rest of the batch lands.
#![cfg(feature = "netns-tests")]

mod common;

use std::collections::BTreeMap;

use common::{InNs, Ns, route, vx, vxlan_state};
use dataplane_linux::model::{Hop, Op, Route};
use dataplane_linux::{DesiredState, Error, Kernel, Settings};

const ROUTES: usize = 3_000;

/// A node namespace with an underlay `eth0` (192.168.0.1/24).
fn node(tag: &str) -> Ns {
    let ns = Ns::new(tag);
    ns.sh(
        "ip link add eth0 type veth peer name eth0p && ip addr add 192.168.0.1/24 dev eth0 && \
         ip link set eth0 up && ip link set eth0p up",
    );
    ns
}

fn prefix(i: usize) -> String {
    format!("10.{}.{}.0/24", 100 + i / 256, i % 256)
}

/// `ROUTES` routes through `vxlan0`, the i-th at `mtu - i % 7` (so neighbours in a batch
/// differ).
fn many(mtu: u32) -> DesiredState {
    let routes = (0..ROUTES)
        .map(|i| {
            let offset = u32::try_from(i % 7).unwrap_or(0);
            route(
                &prefix(i),
                mtu - offset,
                vec![vx("192.168.0.2", "10.250.0.1")],
            )
        })
        .collect();
    vxlan_state("192.168.0.1", 1450, routes)
}

/// Destination -> MTU of every route of table 100 that has an MTU, as `ip` shows them.
fn held_mtus(ns: &Ns) -> BTreeMap<String, u32> {
    ns.sh("ip route show table 100")
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "mtu")?;
            let value = words[at + 1..].iter().find(|w| **w != "lock")?;
            Some((words.first()?.to_string(), value.parse().ok()?))
        })
        .collect()
}

fn expected(mtu: u32) -> BTreeMap<String, u32> {
    (0..ROUTES)
        .map(|i| (prefix(i), mtu - u32::try_from(i % 7).unwrap_or(0)))
        .collect()
}

#[test]
fn thousands_of_routes_land_exactly_in_batches() {
    require_root!("thousands_of_routes_land_exactly_in_batches");
    let ns = node("many");
    let (first, lowered, again) = ns.dp(Settings::default(), |dp| {
        let first = dp.reconcile(&many(1400)).expect("install");
        let lowered = dp.reconcile(&many(1300)).expect("lower every route");
        let again = dp.reconcile(&many(1300)).expect("converged");
        (first.writes.len(), lowered.writes, again.writes)
    });
    // Device, rule, endpoint route, neighbour, and the routes.
    assert_eq!(first, ROUTES + 4);
    assert_eq!(lowered.len(), ROUTES, "one replace per route");
    assert!(again.is_empty(), "{} writes", again.len());
    let held = held_mtus(&ns);
    let want = expected(1300);
    let wrong: Vec<_> = want
        .iter()
        .filter(|(dst, mtu)| held.get(*dst) != Some(mtu))
        .take(5)
        .collect();
    assert!(wrong.is_empty(), "not held as planned: {wrong:?}");
    assert_eq!(held.len(), ROUTES, "no other route carries an MTU");
}

#[test]
fn a_refused_write_inside_a_batch_is_named_and_the_rest_lands() {
    require_root!("a_refused_write_inside_a_batch_is_named_and_the_rest_lands");
    let ns = node("refused");
    let through = |dst: &str, gateway: &str| {
        Op::ReplaceRoute(Route {
            table: 100,
            destination: dst.parse().expect("prefix"),
            protocol: 250,
            mtu: Some(1400),
            mtu_locked: false,
            hops: vec![Hop {
                device: "eth0".into(),
                gateway: Some(gateway.parse().expect("address")),
                onlink: false,
                encap: None,
            }],
        })
    };
    let mut ops: Vec<Op> = (0..50)
        .map(|i| through(&format!("10.1.{i}.0/24"), "192.168.0.254"))
        .collect();
    // A gateway that is not on any link, without `onlink`: the kernel refuses the route.
    let refused = through("10.2.0.0/24", "10.99.0.1");
    ops.insert(20, refused.clone());
    let (result, held) = ns.dp(Settings::default(), move |dp| {
        let result = dp.kernel_mut().apply_phase(&ops);
        let held = dp.kernel_mut().routes(&[100]).expect("read routes");
        (result, held)
    });
    match result {
        Err(Error::Kernel { op, errno, .. }) => {
            assert_eq!(op, refused.to_string());
            assert!(errno > 0);
        }
        other => panic!("expected the refused route's error, got {other:?}"),
    }
    let held: Vec<String> = held.iter().map(|r| r.destination.to_string()).collect();
    assert_eq!(held.len(), 50, "{held:?}");
    assert!(!held.contains(&"10.2.0.0/24".to_string()));
}
