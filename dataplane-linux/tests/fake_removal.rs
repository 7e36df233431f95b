//! Removal of the owned dataplane state on the in-memory kernel (the node agent leaving the
//! cluster): after a realistic reconcile, `remove_owned` deletes the rules, then the routes of
//! the adapter's table and protocol, then the shared tunnel devices, and nothing else; a second
//! call writes nothing; a failure at any write leaves a state from which the next call finishes.

mod common;

use common::{fabric_node, main_route, node_state};
use dataplane_linux::fake::OpKind;
use dataplane_linux::model::{Family, KernelState, LinkKind, Route, Rule};
use dataplane_linux::{
    Dataplane, DesiredState, Error, ErrorKind, FakeKernel, Kernel, Op, Phase, ReadScope, Settings,
    removal,
};

fn desired() -> DesiredState {
    // Every kind of owned state: VXLAN device, ECMP and IPv6 routes (so an IPv6 rule too), a
    // WireGuard route, endpoint routes, neighbours, and a fabric.
    node_state(1450, 1420, [1450, 1400, 1420, 1450], 1400, true)
}

/// A route of another owner: `table`, protocol `protocol`, through `eth0`.
fn foreign_route(dst: &str, table: u32, protocol: u8) -> Route {
    Route {
        table,
        protocol,
        ..main_route(dst, "eth0", None)
    }
}

/// The fixture node plus state of other owners: a route in the adapter's table with another
/// protocol, a route with the adapter's protocol in another table, a rule at the adapter's
/// priority looking up another table, another rule, and a VXLAN device the adapter does not
/// manage.
fn node_with_neighbours() -> FakeKernel {
    let mut k = fabric_node();
    k.state.routes.push(foreign_route("10.99.0.0/16", 100, 4));
    k.state.routes.push(foreign_route("10.98.0.0/16", 200, 250));
    k.state.rules.push(Rule {
        family: Family::V4,
        priority: 100,
        table: 200,
    });
    k.state.rules.push(Rule {
        family: Family::V6,
        priority: 500,
        table: 200,
    });
    k.add_link(
        "vxlan-other",
        LinkKind::Tunnel(dataplane_linux::TunnelKind::Vxlan),
        1450,
    );
    k
}

/// The node reconciled to [`desired`] (and converged).
fn reconciled() -> Dataplane<FakeKernel> {
    let mut dp = Dataplane::new(node_with_neighbours(), Settings::default());
    dp.reconcile(&desired()).expect("reconcile");
    let again = dp.reconcile(&desired()).expect("second reconcile");
    assert!(again.writes.is_empty(), "not converged: {:?}", again.writes);
    dp
}

/// Nothing the adapter owns is left in the in-memory kernel.
fn assert_nothing_owned(k: &FakeKernel) {
    let s = Settings::default();
    let st = &k.state;
    assert!(
        !st.rules.iter().any(|r| r.table == s.table),
        "{:?}",
        st.rules
    );
    assert!(
        !st.routes
            .iter()
            .any(|r| r.table == s.table && r.protocol == s.route_protocol),
        "{:?}",
        st.routes
    );
    for d in &s.managed_devices {
        assert!(st.link(d).is_none(), "{d} still there");
        assert!(!st.neighbours.iter().any(|n| &n.device == d));
    }
}

/// What other owners hold, and what the adapter configures without owning (WireGuard, the pod
/// side): equal before and after a removal.
fn untouched(k: &FakeKernel) -> KernelState {
    let s = Settings::default();
    let mut st = k.state.clone();
    st.links.retain(|l| !s.managed_devices.contains(&l.name));
    st.routes
        .retain(|r| !(r.table == s.table && r.protocol == s.route_protocol));
    st.rules.retain(|r| r.table != s.table);
    st.neighbours
        .retain(|n| !s.managed_devices.contains(&n.device));
    st
}

#[test]
fn removes_everything_owned_and_nothing_else() {
    let mut dp = reconciled();
    let before = dp.kernel().clone();
    // The reconcile did create every kind of owned state.
    assert!(before.state.link("vxlan0").is_some());
    assert_eq!(
        before.state.rules.iter().filter(|r| r.table == 100).count(),
        2
    );
    assert!(!before.state.neighbours.is_empty());
    assert!(
        before
            .state
            .routes
            .iter()
            .any(|r| r.destination.to_string() == "192.168.0.2/32")
    );

    // The fixture's pods start above the WireGuard device: count violations from here on.
    let start = dp.kernel().violations().len();
    let report = dp.remove_owned().expect("removal");
    assert_nothing_owned(dp.kernel());
    assert_eq!(untouched(dp.kernel()), untouched(&before));
    let after = &dp.kernel().state;
    // Spelled out: the foreign route of the adapter's table, the other table's route of the
    // adapter's protocol, the other rules and device, WireGuard and the pod side at their MTU.
    assert!(
        after
            .routes
            .iter()
            .any(|r| r.destination.to_string() == "10.99.0.0/16")
    );
    assert!(
        after
            .routes
            .iter()
            .any(|r| r.destination.to_string() == "10.98.0.0/16")
    );
    assert_eq!(after.rules.len(), 2);
    assert!(after.link("vxlan-other").is_some());
    assert_eq!(after.link("wg51820").map(|l| l.mtu), Some(1420));
    assert_eq!(after.link("cni0").map(|l| l.mtu), Some(1400));
    assert_eq!(
        after
            .link("veth-a")
            .and_then(|l| l.master.clone())
            .as_deref(),
        Some("cni0")
    );
    assert!(after.pod_links.iter().all(|p| p.mtu == Some(1400)));
    assert_eq!(dp.kernel().cni_files.values().next(), Some(&Some(1400)));
    // Only deletions, and the foreign route of the table is noted as left alone.
    assert!(report.writes.iter().all(|o| matches!(
        o,
        Op::DeleteRule(_) | Op::DeleteRoute { .. } | Op::DeleteLink { .. }
    )));
    assert!(
        report.notes.iter().any(|n| n.contains("10.99.0.0/16")),
        "{:?}",
        report.notes
    );
    // The neighbours went with their device: no write of its own.
    assert!(
        !report
            .writes
            .iter()
            .any(|o| matches!(o, Op::DeleteNeighbour { .. }))
    );
    assert_eq!(&dp.kernel().violations()[start..], &[] as &[String]);
}

#[test]
fn order_is_rules_then_routes_then_devices() {
    let mut dp = reconciled();
    dp.kernel_mut().clear_log();
    let planned = {
        let st = dp
            .kernel_mut()
            .read(&ReadScope::owned(&Settings::default()))
            .expect("read");
        removal(&Settings::default(), &st).expect("plan")
    };
    assert!(planned.steps.iter().all(|s| s.phase == Phase::Remove));
    let report = dp.remove_owned().expect("removal");
    let ops: Vec<Op> = planned.steps.iter().map(|s| s.op.clone()).collect();
    assert_eq!(report.writes, ops, "the writes follow the plan");
    let log: Vec<Op> = dp.kernel().log().iter().map(|e| e.op.clone()).collect();
    assert_eq!(log, ops, "and so does the kernel's log");

    let rank = |o: &Op| match o {
        Op::DeleteRule(_) => 0,
        Op::DeleteRoute { .. } => 1,
        Op::DeleteLink { .. } => 2,
        other => panic!("unexpected write {other}"),
    };
    let ranks: Vec<u8> = ops.iter().map(rank).collect();
    let mut sorted = ranks.clone();
    sorted.sort();
    assert_eq!(ranks, sorted, "{ops:?}");
    assert_eq!(
        ranks.iter().filter(|r| **r == 0).count(),
        2,
        "IPv4 and IPv6 rules"
    );
    assert_eq!(
        ops.iter()
            .filter(|o| matches!(o, Op::DeleteLink { .. }))
            .count(),
        1,
        "vxlan0 only"
    );
    // Within the routes: those of the plan before the endpoint host routes.
    let is_endpoint = |o: &Op| {
        matches!(o, Op::DeleteRoute { destination, .. }
            if destination.prefix_len() == destination.max_prefix_len())
    };
    let first_endpoint = ops.iter().position(is_endpoint).expect("endpoint routes");
    let last_plan_route = ops
        .iter()
        .rposition(|o| matches!(o, Op::DeleteRoute { .. }) && !is_endpoint(o))
        .expect("plan routes");
    assert!(last_plan_route < first_endpoint, "{ops:?}");
}

#[test]
fn a_second_removal_writes_nothing() {
    let mut dp = reconciled();
    dp.remove_owned().expect("first");
    let attempts = dp.kernel().attempts();
    let again = dp.remove_owned().expect("second");
    assert!(again.writes.is_empty(), "{:?}", again.writes);
    assert_eq!(dp.kernel().attempts(), attempts, "no write attempted");
    // Also on a node that never held anything.
    let mut fresh = Dataplane::new(fabric_node(), Settings::default());
    let rep = fresh.remove_owned().expect("nothing to remove");
    assert!(rep.writes.is_empty() && rep.notes.is_empty());
}

/// Fails each write of the removal in turn: the error surfaces with its errno, the rules are
/// gone before any route of the table is, the rest of the failed write's step is still
/// attempted (a step goes to the kernel together) but no later step is, and the next call
/// removes what is left.
#[test]
fn a_failure_at_any_write_leaves_a_state_the_next_removal_finishes() {
    let reference = reconciled();
    let untouched_before = untouched(reference.kernel());
    let all = {
        let mut dp = Dataplane::new(reference.kernel().clone(), Settings::default());
        dp.remove_owned().expect("removal").writes
    };
    let n = all.len();
    assert!(n >= 10, "a realistic removal: {n} writes");
    // The end (exclusive) of the step holding write `k`: steps are runs of one kind of write.
    let kind = |op: &Op| std::mem::discriminant(op);
    let step_end = |k: usize| {
        (k..n)
            .find(|&i| kind(&all[i]) != kind(&all[k]))
            .unwrap_or(n)
    };
    for k in 0..n {
        let mut dp = Dataplane::new(reference.kernel().clone(), Settings::default());
        let at = dp.kernel().attempts() + k;
        dp.kernel_mut().fail_attempt(at, 16);
        let err = dp
            .remove_owned()
            .expect_err("injected failure must surface");
        assert_eq!(err.kind(), Some(ErrorKind::Transient), "k={k}");
        let st = &dp.kernel().state;
        let own_routes = |st: &KernelState| {
            st.routes
                .iter()
                .filter(|r| r.table == 100 && r.protocol == 250)
                .count()
        };
        if st.rules.iter().any(|r| r.table == 100) {
            assert_eq!(
                own_routes(st),
                own_routes(&reference.kernel().state),
                "k={k}: a route went while a rule still consults the table"
            );
        }
        dp.kernel_mut().clear_failures();
        let rest = dp.remove_owned().expect("the next removal finishes");
        assert_eq!(
            rest.writes,
            std::iter::once(all[k].clone())
                .chain(all[step_end(k)..].iter().cloned())
                .collect::<Vec<_>>(),
            "k={k}: it redoes the failed write and the steps after its own"
        );
        assert_nothing_owned(dp.kernel());
        assert_eq!(untouched(dp.kernel()), untouched_before, "k={k}");
        assert!(dp.remove_owned().expect("third").writes.is_empty());
    }
}

/// A delete the kernel answers with "absent" is not a failure, but the read-back still judges:
/// when the object is in fact still there, the typed error lists what is left.
#[test]
fn read_back_finds_what_is_left() {
    let mut dp = reconciled();
    // Every route delete "fails" with ESRCH without deleting anything.
    dp.kernel_mut().fail_kind(OpKind::DeleteRoute, 3);
    let err = dp.remove_owned().expect_err("routes left");
    let Error::NotRemoved { left } = err else {
        panic!("expected NotRemoved, got {err}");
    };
    // Deleting vxlan0 took its routes along; the WireGuard route and the endpoint routes
    // through eth0 are left.
    let dsts: Vec<String> = left
        .iter()
        .map(|o| match o {
            Op::DeleteRoute { destination, .. } => destination.to_string(),
            other => panic!("unexpected leftover {other}"),
        })
        .collect();
    assert_eq!(
        dsts,
        [
            "10.9.0.0/16",
            "192.168.0.2/32",
            "192.168.0.3/32",
            "192.168.0.4/32",
            "192.168.0.5/32"
        ],
        "plan routes first, then endpoint routes"
    );
    assert!(dp.kernel().state.link("vxlan0").is_none());
    assert!(!dp.kernel().state.rules.iter().any(|r| r.table == 100));
    dp.kernel_mut().clear_failures();
    let rest = dp.remove_owned().expect("finishes");
    assert_eq!(rest.writes, left);
    assert_nothing_owned(dp.kernel());
}

/// Settings that would name someone else's table are refused before any write.
#[test]
fn invalid_settings_remove_nothing() {
    let mut k = fabric_node();
    k.state.routes.push(Route {
        protocol: 250,
        ..main_route("10.1.0.0/16", "eth0", None)
    });
    let settings = Settings {
        table: 254,
        ..Settings::default()
    };
    let mut dp = Dataplane::new(k, settings);
    let err = dp.remove_owned().expect_err("table main refused");
    assert!(matches!(err, Error::Invalid(_)), "{err}");
    assert_eq!(dp.kernel().attempts(), 0);
}

/// A link under a managed name that is not a tunnel device was not created by the adapter:
/// left alone, with a note, and not counted as remaining.
#[test]
fn a_managed_name_on_another_kind_of_link_is_left_alone() {
    let mut dp = Dataplane::new(fabric_node(), Settings::default());
    dp.reconcile(&desired()).expect("reconcile");
    // Appeared after the last reconcile (which would have deleted it as an undesired managed
    // device).
    dp.kernel_mut()
        .add_link("ipip0", LinkKind::Other("dummy".into()), 1500);
    let rep = dp.remove_owned().expect("removal");
    assert!(dp.kernel().state.link("ipip0").is_some());
    assert!(
        rep.notes.iter().any(|n| n.contains("ipip0")),
        "{:?}",
        rep.notes
    );
    assert!(
        !rep.writes
            .iter()
            .any(|o| matches!(o, Op::DeleteLink { link } if link == "ipip0"))
    );
}
