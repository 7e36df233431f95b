//! Planner decisions on the in-memory kernel: tunnel MACs derive from identity addresses on both
//! sides, a default route is refused before anything is written, and a next hop whose tunnel
//! endpoint is the route's own destination is left out.

mod common;

use common::{converge, device_mac, held, ip, main_route, neighbour_mac, route, vx_to};
use dataplane_linux::model::{Encap, Hop, LinkKind, Neighbour, Route};
use dataplane_linux::{
    Dataplane, DesiredState, Error, FakeKernel, HopProtocol, Kernel, NextHop, Op, Phase, RouteSpec,
    Settings, TunnelKind, tunnel_mac,
};

/// A route to `dst` at `mtu` through one VXLAN next hop: tunnel endpoint `underlay`, identity
/// `identity`, pod gateway `gw`.
fn via(dst: &str, mtu: u32, underlay: &str, identity: &str, gw: &str) -> RouteSpec {
    route(dst, mtu, vec![vx_to(underlay, identity, gw)])
}

/// The node with identity address `identity`: `vxlan0` at 1450 and `routes`.
fn state(identity: &str, routes: Vec<RouteSpec>) -> DesiredState {
    common::vxlan_state(identity, 1450, routes)
}

/// A node whose underlay is `eth0` with a default route via `gw`.
fn node(gw: &str) -> FakeKernel {
    let mut k = FakeKernel::new();
    k.add_link("eth0", LinkKind::Other(String::new()), 1500);
    k.state
        .main_routes
        .push(main_route("0.0.0.0/0", "eth0", Some(gw)));
    k
}

/// Gateway hg1 (identity 10.10.0.1): the same-Site worker hw1 at its InternalIP, the NAT'd
/// worker n1 (identity 10.20.0.4) at n1's ExternalIP 203.0.113.4.
fn hg1() -> DesiredState {
    state(
        "10.10.0.1",
        vec![
            via(
                "10.110.11.0/24",
                1450,
                "10.10.0.11",
                "10.10.0.11",
                "10.110.11.1",
            ),
            via(
                "10.120.4.0/24",
                1380,
                "203.0.113.4",
                "10.20.0.4",
                "10.120.4.1",
            ),
        ],
    )
}

/// Worker hw1 (identity 10.10.0.11): hg1 at its InternalIP.
fn hw1() -> DesiredState {
    state(
        "10.10.0.11",
        vec![via(
            "10.110.1.0/24",
            1450,
            "10.10.0.1",
            "10.10.0.1",
            "10.110.1.1",
        )],
    )
}

/// The NAT'd worker n1 (identity 10.20.0.4): hg1 at its ExternalIP 198.51.100.1.
fn n1() -> DesiredState {
    state(
        "10.20.0.4",
        vec![via(
            "10.110.1.0/24",
            1380,
            "198.51.100.1",
            "10.10.0.1",
            "10.110.1.1",
        )],
    )
}

/// Gateway hg1 (identity 10.10.0.1, ExternalIP 198.51.100.1) is reached at its InternalIP by the
/// same-Site worker hw1 and at its ExternalIP by the NAT'd worker n1 (identity 10.20.0.4,
/// reached at 203.0.113.4). Every node's device MAC equals the MAC each peer holds for it, and
/// the encapsulation still goes to the address the link uses.
#[test]
fn a_peer_reached_at_another_address_gets_its_identity_mac() {
    let (hg1k, _) = converge(node("198.51.100.254"), &hg1());
    let (hw1k, _) = converge(node("10.10.255.254"), &hw1());
    let (n1k, _) = converge(node("203.0.113.254"), &n1());

    assert_eq!(device_mac(&hg1k), tunnel_mac(ip("10.10.0.1")));
    assert_eq!(device_mac(&n1k), tunnel_mac(ip("10.20.0.4")));
    // Both of hg1's peers hold its one MAC, whichever address they reach it at.
    assert_eq!(neighbour_mac(&hw1k, "10.110.1.1"), Some(device_mac(&hg1k)));
    assert_eq!(neighbour_mac(&n1k, "10.110.1.1"), Some(device_mac(&hg1k)));
    assert_ne!(
        neighbour_mac(&n1k, "10.110.1.1"),
        Some(tunnel_mac(ip("198.51.100.1")))
    );
    // hg1 holds n1's identity MAC although it reaches n1 at its ExternalIP.
    assert_eq!(neighbour_mac(&hg1k, "10.120.4.1"), Some(device_mac(&n1k)));
    assert_eq!(
        neighbour_mac(&hw1k, "10.110.1.1"),
        neighbour_mac(&n1k, "10.110.1.1")
    );

    // The encapsulation and the endpoint route use the address the link reaches n1 at.
    let r = held(&hg1k, "10.120.4.0/24").expect("route to n1's pods");
    assert_eq!(
        r.hops[0].encap,
        Some(Encap {
            id: 1,
            dst: ip("203.0.113.4"),
            csum: false,
            df: false,
            ttl: 64,
        })
    );
    let e = held(&hg1k, "203.0.113.4/32").expect("endpoint route to n1's ExternalIP");
    assert_eq!(e.hops[0].encap, None);
    assert_eq!(e.hops[0].gateway, Some(ip("198.51.100.254")));
    assert!(held(&hg1k, "10.20.0.4/32").is_none());
}

/// A device left with the MAC of another address (an earlier identity) is readdressed in
/// phase 1, and only then is the plan converged.
#[test]
fn a_device_with_another_mac_is_readdressed() {
    let desired = n1();
    let mut k = node("203.0.113.254");
    k.add_link("vxlan0", LinkKind::Tunnel(TunnelKind::Vxlan), 1450);
    if let Some(l) = k.state.links.iter_mut().find(|l| l.name == "vxlan0") {
        l.mac = Some(tunnel_mac(ip("203.0.113.4")));
    }
    // One neighbour already right, one stale: the readdressing flushes both (as the kernel
    // does), so the right one is written again in the same pass and the stale one is not
    // deleted a second time.
    for (address, mac) in [("10.110.1.1", "10.10.0.1"), ("10.99.0.1", "10.99.0.9")] {
        k.state.neighbours.push(Neighbour {
            device: "vxlan0".into(),
            address: ip(address),
            mac: tunnel_mac(ip(mac)),
        });
    }
    let mut dp = Dataplane::new(k, Settings::default());
    let plan = dp.plan(&desired).expect("plan");
    let set = plan
        .steps
        .iter()
        .find(|s| matches!(&s.op, Op::SetMac { link, .. } if link == "vxlan0"))
        .expect("a SetMac for vxlan0");
    assert_eq!(set.phase, Phase::Create);
    assert_eq!(
        set.op,
        Op::SetMac {
            link: "vxlan0".into(),
            mac: tunnel_mac(ip("10.20.0.4"))
        }
    );
    let set_at = plan.steps.iter().position(|s| s.op == set.op);
    let neighbour_at = plan
        .steps
        .iter()
        .position(|s| matches!(&s.op, Op::ReplaceNeighbour(n) if n.address == ip("10.110.1.1")));
    assert!(
        set_at < neighbour_at && neighbour_at.is_some(),
        "{:?}",
        plan.steps
    );
    assert!(
        !plan
            .steps
            .iter()
            .any(|s| matches!(s.op, Op::DeleteNeighbour { .. })),
        "{:?}",
        plan.steps
    );
    let (dp, _) = converge(dp.kernel().clone(), &desired);
    assert_eq!(device_mac(&dp), tunnel_mac(ip("10.20.0.4")));
    assert_eq!(
        neighbour_mac(&dp, "10.110.1.1"),
        Some(tunnel_mac(ip("10.10.0.1")))
    );
    assert_eq!(neighbour_mac(&dp, "10.99.0.1"), None);
}

/// A route of prefix length 0 (IPv4 or IPv6) is refused with a typed error before any write.
#[test]
fn a_default_route_is_refused_and_nothing_is_applied() {
    for dst in ["0.0.0.0/0", "::/0"] {
        let desired = state(
            "10.10.0.1",
            ["10.120.4.0/24", dst]
                .map(|d| via(d, 1380, "203.0.113.4", "10.20.0.4", "10.120.4.1"))
                .into(),
        );
        let mut dp = Dataplane::new(node("198.51.100.254"), Settings::default());
        let before = dp.kernel().state.clone();
        match dp.plan(&desired) {
            Err(Error::DefaultRoute { destination }) => {
                assert_eq!(destination, dst.parse().unwrap())
            }
            other => panic!("{dst}: plan must refuse, got {other:?}"),
        }
        let err = dp.reconcile(&desired).expect_err("reconcile must refuse");
        assert!(
            matches!(err, Error::DefaultRoute { destination } if destination == dst.parse().unwrap()),
            "{err:?}"
        );
        assert!(err.to_string().contains("default route"), "{err}");
        assert_eq!(dp.kernel().attempts(), 0, "{dst}: nothing written");
        assert_eq!(dp.kernel().state, before);
    }
}

/// A NodeAddress route to a NAT'd worker without an ExternalIP: the worker's tunnel endpoint is
/// its InternalIP, the very destination of the host route. That next hop is left out with a
/// note; the route, left without next hops, is not installed, and the endpoint route through
/// the underlay holds the destination instead. A held self-encapsulating route is replaced.
#[test]
fn a_hop_to_the_routes_own_endpoint_is_left_out() {
    let n1 = vx_to("10.20.0.4", "10.20.0.4", "10.120.4.1");
    let desired = state(
        "10.10.0.1",
        vec![
            route("10.20.0.4/32", 1380, vec![n1.clone()]),
            route("10.120.4.0/24", 1380, vec![n1.clone()]),
        ],
    );
    let mut k = node("198.51.100.254");
    // What a planner without the rule would have written: the route encapsulating into itself.
    k.add_link("vxlan0", LinkKind::Tunnel(TunnelKind::Vxlan), 1450);
    k.state.routes.push(Route {
        table: 100,
        destination: "10.20.0.4/32".parse().unwrap(),
        protocol: 250,
        mtu: Some(1380),
        mtu_locked: false,
        hops: vec![Hop {
            device: "vxlan0".into(),
            gateway: Some(ip("10.120.4.1")),
            onlink: true,
            encap: Some(Encap {
                id: 1,
                dst: ip("10.20.0.4"),
                csum: false,
                df: false,
                ttl: 64,
            }),
        }],
    });
    let (dp, notes) = converge(k, &desired);
    let e = held(&dp, "10.20.0.4/32").expect("a route for 10.20.0.4/32");
    assert_eq!(
        e.hops,
        vec![Hop {
            device: "eth0".into(),
            gateway: Some(ip("198.51.100.254")),
            onlink: false,
            encap: None,
        }],
        "the endpoint route through the underlay, not an encapsulation"
    );
    assert_eq!(e.mtu, None);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("10.20.0.4/32") && n.contains("left out")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("10.20.0.4/32") && n.contains("not installed")),
        "{notes:?}"
    );
    // The pod route still goes through the tunnel to that endpoint, with its neighbour.
    let p = held(&dp, "10.120.4.0/24").expect("pod route");
    assert_eq!(p.hops[0].encap.map(|e| e.dst), Some(ip("10.20.0.4")));
    assert_eq!(
        neighbour_mac(&dp, "10.120.4.1"),
        Some(tunnel_mac(ip("10.20.0.4")))
    );
    // No route of the table encapsulates towards its own destination.
    for r in &dp.kernel().state.routes {
        for h in &r.hops {
            if let Some(enc) = h.encap {
                assert!(!r.destination.contains(&enc.dst), "{r:?} loops");
            }
        }
    }
}

/// With equal-cost next hops, only the self-encapsulating one is left out (also over
/// WireGuard, whose endpoint the route would capture alike).
#[test]
fn only_the_self_encapsulating_hop_of_several_is_left_out() {
    let mut desired = state(
        "10.10.0.1",
        vec![route(
            "10.20.0.4/32",
            1380,
            vec![
                vx_to("10.20.0.4", "10.20.0.4", "10.120.4.1"),
                vx_to("10.10.0.2", "10.10.0.2", "10.110.2.1"),
                NextHop {
                    device: "wg0".into(),
                    protocol: HopProtocol::WireGuard,
                    peer_underlay: ip("10.20.0.4"),
                    peer_identity: ip("10.20.0.4"),
                    pod_gateway: ip("10.120.4.1"),
                },
            ],
        )],
    );
    desired.wireguard_mtus.push(dataplane_linux::WireguardMtu {
        name: "wg0".into(),
        mtu: 1420,
    });
    let mut k = node("198.51.100.254");
    k.add_link("wg0", LinkKind::Wireguard, 1420);
    let (dp, notes) = converge(k, &desired);
    let r = held(&dp, "10.20.0.4/32").expect("route");
    assert_eq!(r.mtu, Some(1380));
    assert_eq!(r.hops.len(), 1, "{r:?}");
    assert_eq!(r.hops[0].encap.map(|e| e.dst), Some(ip("10.10.0.2")));
    assert_eq!(
        notes.iter().filter(|n| n.contains("left out")).count(),
        2,
        "{notes:?}"
    );
    // Only the remaining hop's peer needs a neighbour and an endpoint route.
    assert_eq!(neighbour_mac(&dp, "10.120.4.1"), None);
    assert!(neighbour_mac(&dp, "10.110.2.1").is_some());
    assert!(held(&dp, "10.10.0.2/32").is_some());
    let scope = dataplane_linux::plan::read_scope(&desired, dp.settings());
    let mut k = dp.kernel().clone();
    let st = k.read(&scope).expect("read");
    dataplane_linux::verify(&desired, &Settings::default(), &st).expect("verify");
}
