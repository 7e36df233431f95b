//! Fault injection on the in-memory kernel: for desired states that lower, raise and mix MTUs,
//! fail every write in turn; the inequalities hold after every write, and the next reconcile
//! converges (also when the desired state reverted meanwhile).

mod common;

use common::{fabric_node as node, ip, node_state as state};
use dataplane_linux::fake::OpKind;
use dataplane_linux::{Dataplane, DesiredState, FakeKernel, Op, Phase, Settings};

fn base() -> DesiredState {
    state(1450, 1420, [1450, 1400, 1420, 1450], 1400, false)
}
fn lowered() -> DesiredState {
    state(1350, 1380, [1350, 1300, 1380, 1340], 1300, false)
}
fn raised() -> DesiredState {
    state(1500, 1440, [1500, 1480, 1440, 1500], 1440, false)
}
/// Device up, WireGuard down, some routes up, some down, a new route, fabric down.
fn mixed() -> DesiredState {
    state(1480, 1380, [1480, 1350, 1380, 1400], 1350, true)
}
/// Fewer routes than base (a route to delete).
fn shrunk() -> DesiredState {
    let mut s = base();
    s.routes
        .retain(|r| r.destination.to_string() != "10.3.0.0/24");
    s
}

fn converged_node(desired: &DesiredState) -> Dataplane<FakeKernel> {
    let mut dp = Dataplane::new(node(), Settings::default());
    // The initial pods at 1500 exceed the WireGuard device (1420): that starting state is
    // already unsafe; only count violations from here on.
    dp.reconcile(desired).expect("initial reconcile");
    let again = dp.reconcile(desired).expect("second reconcile");
    assert!(
        again.writes.is_empty(),
        "second apply wrote {:?}",
        again.writes
    );
    dp
}

fn assert_converged(dp: &mut Dataplane<FakeKernel>, desired: &DesiredState) {
    let r = dp.reconcile(desired).expect("converging reconcile");
    let _ = r;
    let again = dp.reconcile(desired).expect("idempotent reconcile");
    assert!(again.writes.is_empty(), "not converged: {:?}", again.writes);
    let scope = dataplane_linux::plan::read_scope(desired, dp.settings());
    let st = dataplane_linux::Kernel::read(dp.kernel_mut(), &scope).unwrap();
    dataplane_linux::verify(desired, dp.settings(), &st).expect("verify");
}

fn pod_side(op: &Op, bridge: &str) -> bool {
    match op {
        Op::SetPodMtu { .. } | Op::SetCniMtu { .. } => true,
        Op::SetMtu { link, .. } => link == bridge || link.starts_with("veth-"),
        _ => false,
    }
}

fn transition(from: &DesiredState, to: &DesiredState, label: &str) {
    let reference = converged_node(from);
    let planned = {
        let mut dp = Dataplane::new(reference.kernel().clone(), Settings::default());
        dp.plan(to).unwrap()
    };
    let n = planned.steps.len();
    assert!(n > 0, "{label}: nothing to do");

    // Without failures: safe order, pod raises only after every device/route write.
    {
        let mut dp = Dataplane::new(reference.kernel().clone(), Settings::default());
        let start = dp.kernel().violations().len();
        dp.kernel_mut().clear_log();
        dp.reconcile(to).unwrap();
        assert_eq!(
            &dp.kernel().violations()[start..],
            &[] as &[String],
            "{label}"
        );
        let log: Vec<Op> = dp.kernel().log().iter().map(|e| e.op.clone()).collect();
        let ops: Vec<Op> = planned.steps.iter().map(|s| s.op.clone()).collect();
        assert_eq!(log, ops, "{label}: the log follows the plan");
        // Every pod-side raise comes after every write of phases 1-6.
        let last_net = planned
            .steps
            .iter()
            .rposition(|s| s.phase <= Phase::RoutesUp);
        let first_up = planned.steps.iter().position(|s| s.phase == Phase::PodUp);
        if let (Some(l), Some(f)) = (last_net, first_up) {
            assert!(l < f, "{label}");
            assert!(
                planned.steps[f..]
                    .iter()
                    .take_while(|s| s.phase == Phase::PodUp)
                    .all(|s| pod_side(&s.op, "cni0"))
            );
        }
        assert_converged(&mut dp, to);
    }

    for k in 0..n {
        for revert in [false, true] {
            let mut dp = Dataplane::new(reference.kernel().clone(), Settings::default());
            let start = dp.kernel().violations().len();
            let at = dp.kernel().attempts() + k;
            dp.kernel_mut().fail_attempt(at, 16);
            let err = dp.reconcile(to).expect_err("injected failure must surface");
            assert_eq!(err.errno(), Some(16), "{label} k={k}");
            assert_eq!(
                err.kind(),
                Some(dataplane_linux::ErrorKind::Transient),
                "{label} k={k}"
            );
            dp.kernel_mut().clear_failures();
            let target = if revert { from } else { to };
            assert_converged(&mut dp, target);
            assert_eq!(
                &dp.kernel().violations()[start..],
                &[] as &[String],
                "{label}: failure at write {k} (revert {revert})"
            );
        }
    }
}

#[test]
fn lower_every_failure_converges() {
    transition(&base(), &lowered(), "lower");
}

#[test]
fn raise_every_failure_converges() {
    transition(&base(), &raised(), "raise");
}

#[test]
fn mixed_every_failure_converges() {
    transition(&base(), &mixed(), "mixed");
    transition(&mixed(), &base(), "mixed back");
}

#[test]
fn delete_and_lower_every_failure_converges() {
    transition(&lowered(), &shrunk(), "shrink+raise");
    transition(&raised(), &shrunk(), "shrink+lower");
}

#[test]
fn per_kind_failure_flags() {
    use OpKind::*;
    for kind in [
        CreateTunnel,
        CreateBridge,
        SetMtu,
        SetMaster,
        AddRule,
        ReplaceRoute,
        DeleteRoute,
        ReplaceNeighbour,
        DeleteNeighbour,
        SetPodMtu,
        SetCniMtu,
    ] {
        for (from, to) in [
            (None, base()),
            (Some(base()), lowered()),
            (Some(base()), mixed()),
            (Some(mixed()), shrunk()),
        ] {
            let mut dp = match &from {
                Some(f) => converged_node(f),
                None => Dataplane::new(node(), Settings::default()),
            };
            let start = dp.kernel().violations().len();
            dp.kernel_mut().fail_kind(kind, 1);
            if let Err(e) = dp.reconcile(&to) {
                assert_eq!(e.kind(), Some(dataplane_linux::ErrorKind::Permission));
            }
            dp.kernel_mut().clear_failures();
            assert_converged(&mut dp, &to);
            if from.is_some() {
                assert_eq!(
                    &dp.kernel().violations()[start..],
                    &[] as &[String],
                    "{kind:?}"
                );
            }
        }
    }
}

#[test]
fn write_order_of_a_mixed_change() {
    let dp = converged_node(&base());
    let mut dp = Dataplane::new(dp.kernel().clone(), Settings::default());
    let plan = dp.plan(&mixed()).unwrap();
    let phases: Vec<Phase> = plan.steps.iter().map(|s| s.phase).collect();
    let mut sorted = phases.clone();
    sorted.sort();
    assert_eq!(phases, sorted);
    let pos = |pred: &dyn Fn(&Op) -> bool| plan.steps.iter().position(|s| pred(&s.op)).unwrap();
    let wg_down = pos(&|o| matches!(o, Op::SetMtu { link, mtu: 1380 } if link == "wg51820"));
    let vx_up = pos(&|o| matches!(o, Op::SetMtu { link, mtu: 1480 } if link == "vxlan0"));
    let r_wg_down =
        pos(&|o| matches!(o, Op::ReplaceRoute(r) if r.destination.to_string() == "10.9.0.0/16"));
    let r_vx_up =
        pos(&|o| matches!(o, Op::ReplaceRoute(r) if r.destination.to_string() == "10.2.0.0/24"));
    let bridge_down = pos(&|o| matches!(o, Op::SetMtu { link, .. } if link == "cni0"));
    assert!(bridge_down < r_wg_down, "pod side goes down first");
    assert!(r_wg_down < vx_up && vx_up < wg_down && wg_down < r_vx_up);
    // The new route's endpoint and neighbour come first.
    let ep =
        pos(&|o| matches!(o, Op::ReplaceRoute(r) if r.destination.to_string() == "192.168.0.5/32"));
    assert_eq!(plan.steps[ep].phase, Phase::Create);
}

#[test]
fn ipv6_routes_are_locked_and_ecmp_is_multipath() {
    let mut dp = converged_node(&base());
    let routes = dp.kernel_mut().state.routes.clone();
    let v6 = routes
        .iter()
        .find(|r| r.destination.to_string() == "fd00:2::/64")
        .unwrap();
    assert!(v6.mtu_locked);
    let ecmp = routes
        .iter()
        .find(|r| r.destination.to_string() == "10.3.0.0/24")
        .unwrap();
    assert_eq!(ecmp.hops.len(), 2);
    assert!(ecmp.hops.iter().all(|h| h.onlink && h.encap.is_some()));
    let ep = routes
        .iter()
        .find(|r| r.destination.to_string() == "192.168.0.3/32")
        .unwrap();
    assert_eq!(ep.hops[0].device, "eth0");
    assert_eq!(ep.hops[0].gateway, None, "directly connected underlay");
    let neigh = &dp.kernel().state.neighbours;
    assert!(neigh.iter().any(|n| n.address == ip("10.3.1.1")
        && dataplane_linux::types::format_mac(&n.mac) == "0a:58:c0:a8:00:04"));
}

#[test]
fn sweep_touches_only_own_protocol() {
    let mut dp = converged_node(&base());
    let mut foreign = dp.kernel().state.routes[0].clone();
    foreign.destination = "10.77.0.0/16".parse().unwrap();
    foreign.protocol = 4;
    let mut stale = foreign.clone();
    stale.destination = "10.78.0.0/16".parse().unwrap();
    stale.protocol = 250;
    dp.kernel_mut().state.routes.push(foreign);
    dp.kernel_mut().state.routes.push(stale);
    let rep = dp.reconcile(&base()).unwrap();
    assert_eq!(rep.writes.len(), 1, "{:?}", rep.writes);
    assert!(
        matches!(&rep.writes[0], Op::DeleteRoute { destination, .. } if destination.to_string() == "10.78.0.0/16")
    );
    assert!(
        dp.kernel()
            .state
            .routes
            .iter()
            .any(|r| r.destination.to_string() == "10.77.0.0/16")
    );
}

#[test]
fn inconsistent_desired_state_is_rejected() {
    let mut bad = base();
    bad.routes[0].mtu = 1460; // above vxlan0's 1450
    let mut dp = Dataplane::new(node(), Settings::default());
    assert!(matches!(
        dp.reconcile(&bad),
        Err(dataplane_linux::Error::Invalid(_))
    ));
    assert!(dp.kernel().log().is_empty());
}

#[test]
fn underlay_detection_skips_own_devices() {
    let mut dp = converged_node(&base());
    let u = dp
        .detect_underlay(&base(), Some(ip("192.168.0.9")))
        .unwrap()
        .unwrap();
    assert_eq!((u.device.as_str(), u.mtu), ("eth0", 1500));
    let u = dp
        .detect_underlay(&base(), Some(ip("10.2.0.5")))
        .unwrap()
        .unwrap();
    assert_eq!(
        u.gateway,
        Some(ip("192.168.0.254")),
        "falls back to the default route"
    );
    let u = dp.detect_underlay(&base(), None).unwrap().unwrap();
    assert_eq!(u.device, "eth0");
}

/// Deterministic pseudo-random states (route MTUs ≤ their devices, fabric ≤ every device):
/// every transition between consecutive states, with every write failing in turn.
#[test]
fn random_transitions_every_failure_converges() {
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |lo: u32, hi: u32| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        lo + ((seed >> 33) as u32) % (hi - lo + 1)
    };
    let mut states = Vec::new();
    for _ in 0..12 {
        let vx = next(1280, 1500);
        let w = next(1280, 1440);
        let r = [
            next(1280, vx),
            next(1280, vx),
            next(1280, w),
            next(1280, vx),
        ];
        let fabric = next(1280, vx.min(w));
        let extra = next(0, 1) == 1;
        states.push(state(vx, w, r, fabric, extra));
    }
    for pair in states.windows(2) {
        if pair[0] != pair[1] {
            transition(&pair[0], &pair[1], "random");
        }
    }
}

#[test]
fn reserved_settings_are_rejected() {
    for s in [
        Settings {
            table: 254,
            ..Settings::default()
        },
        Settings {
            rule_priority: 32766,
            ..Settings::default()
        },
        Settings {
            route_protocol: 4,
            ..Settings::default()
        },
    ] {
        let mut dp = Dataplane::new(node(), s);
        assert!(matches!(
            dp.reconcile(&base()),
            Err(dataplane_linux::Error::Invalid(_))
        ));
        assert!(dp.kernel().log().is_empty());
    }
}

#[test]
fn plan_is_deterministic_whatever_the_input_order() {
    let dp = converged_node(&base());
    let mut a = mixed();
    let mut b = mixed();
    b.routes.reverse();
    for r in &mut b.routes {
        r.next_hops.reverse();
    }
    let pa = Dataplane::new(dp.kernel().clone(), Settings::default())
        .plan(&a)
        .unwrap();
    let pb = Dataplane::new(dp.kernel().clone(), Settings::default())
        .plan(&b)
        .unwrap();
    assert_eq!(pa, pb);
    a.routes.clear();
    let pc = Dataplane::new(dp.kernel().clone(), Settings::default())
        .plan(&a)
        .unwrap();
    assert!(pc.steps.iter().all(|s| matches!(
        s.op,
        Op::DeleteRoute { .. }
            | Op::DeleteNeighbour { .. }
            | Op::DeleteRule(_)
            | Op::SetMtu { .. }
            | Op::SetPodMtu { .. }
            | Op::SetCniMtu { .. }
    )));
}

/// Pods named only by namespace and interface (as the agent names them): the bridge's ports
/// are found by master and follow the fabric down (phase 2) and up (phase 8).
#[test]
fn bridge_ports_found_by_master_follow_the_fabric() {
    let anonymous = |mut d: DesiredState| {
        if let Some(f) = d.fabric.as_mut() {
            for p in &mut f.pods {
                p.host_veth = None;
            }
        }
        d
    };
    let mut dp = converged_node(&base());
    // The initial pods at 1500 were already unsafe: count violations from here on.
    let initial = dp.kernel().violations().len();
    let held = |dp: &mut Dataplane<FakeKernel>, name: &str| {
        let st = dataplane_linux::Kernel::read(dp.kernel_mut(), &Default::default()).unwrap();
        st.link(name).map(|l| (l.mtu, l.master.clone()))
    };
    assert_eq!(held(&mut dp, "veth-a"), Some((1400, Some("cni0".into()))));
    let down = dp.reconcile(&anonymous(lowered())).expect("down");
    let port = down
        .writes
        .iter()
        .position(|o| matches!(o, Op::SetMtu { link, mtu: 1300 } if link == "veth-a"))
        .expect("port lowered");
    let route = down
        .writes
        .iter()
        .position(|o| matches!(o, Op::ReplaceRoute(_)))
        .expect("route lowered");
    assert!(port < route, "{:?}", down.writes);
    assert_eq!(held(&mut dp, "veth-b").map(|h| h.0), Some(1300));
    let up = dp.reconcile(&anonymous(raised())).expect("up");
    let port = up
        .writes
        .iter()
        .position(|o| matches!(o, Op::SetMtu { link, mtu: 1440 } if link == "veth-a"))
        .expect("port raised");
    let route = up
        .writes
        .iter()
        .rposition(|o| matches!(o, Op::ReplaceRoute(_)))
        .expect("route raised");
    assert!(route < port, "{:?}", up.writes);
    let later = &dp.kernel().violations()[initial..];
    assert!(later.is_empty(), "{later:?}");
    assert_converged(&mut dp, &anonymous(raised()));
}
