//! Batched writes on the real kernel, in private network namespaces (root only; skipped with a
//! printed reason otherwise): thousands of routes land exactly and are removed exactly, a write
//! the kernel refuses inside a batch is named with its errno while the rest of the batch lands,
//! and a deletion that finds its route gone inside a batch is noted while the rest is removed.
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

#[test]
fn thousands_of_routes_are_removed_exactly_in_batches() {
    require_root!("thousands_of_routes_are_removed_exactly_in_batches");
    let ns = node("remove-many");
    let (removed, again) = ns.dp(Settings::default(), |dp| {
        dp.reconcile(&many(1400)).expect("install");
        let removed = dp.remove_owned().expect("remove");
        let again = dp.remove_owned().expect("nothing left");
        (removed, again.writes)
    });
    // The rule, the routes, the endpoint route and the device.
    assert_eq!(removed.writes.len(), ROUTES + 3, "{:?}", removed.notes);
    assert!(
        !removed.notes.iter().any(|n| n.contains("already absent")),
        "{:?}",
        removed.notes
    );
    assert!(again.is_empty(), "{} writes", again.len());
    assert_eq!(ns.sh("ip route show table 100").trim(), "");
    assert!(!ns.sh("ip rule show").contains("lookup 100"));
    assert!(!ns.sh("ip -o link show").contains("vxlan0"));
}

#[test]
fn an_absent_deletion_inside_a_batch_is_reported_and_the_rest_is_removed() {
    require_root!("an_absent_deletion_inside_a_batch_is_reported_and_the_rest_is_removed");
    let ns = node("absent");
    let delete = |dst: &str| Op::DeleteRoute {
        table: 100,
        destination: dst.parse().expect("prefix"),
        protocol: 250,
    };
    let (absent, held) = ns.dp(Settings::default(), move |dp| {
        dp.reconcile(&many(1400)).expect("install");
        let mut ops: Vec<Op> = (0..300).map(|i| delete(&prefix(i))).collect();
        // A route the table never held, in the middle of the second batch.
        ops.insert(200, delete("10.3.0.0/24"));
        let absent = dp
            .kernel_mut()
            .remove_phase(&ops)
            .expect("absence is no failure");
        let held = dp.kernel_mut().routes(&[100]).expect("read routes");
        (absent, held)
    });
    let absent: Vec<(usize, String)> = absent
        .into_iter()
        .map(|(i, e)| (i, format!("{e}")))
        .collect();
    assert_eq!(absent.len(), 1, "{absent:?}");
    assert_eq!(absent[0].0, 200, "{absent:?}");
    assert!(absent[0].1.contains("10.3.0.0/24"), "{absent:?}");
    let held: Vec<String> = held.iter().map(|r| r.destination.to_string()).collect();
    assert!(
        (0..300).all(|i| !held.contains(&prefix(i))),
        "a deletion after the absent one did not land"
    );
    assert!(
        held.contains(&prefix(300)),
        "a route not in the step was deleted"
    );
}
