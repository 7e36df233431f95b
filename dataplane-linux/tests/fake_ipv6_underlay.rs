//! A node whose underlay is IPv6 only (no IPv4 address, no IPv4 default route) carrying IPv4
//! pod traffic over VXLAN: encapsulation towards the peers' IPv6 underlay addresses with a UDP
//! checksum, endpoint host routes through the IPv6 underlay's own next hop, tunnel MACs hashed
//! from IPv6 identity addresses, and underlay detection in the IPv6 `main` table.

mod common;

use common::{device_mac, ip, main_route, neighbour_mac, route, vx};
use dataplane_linux::model::{Encap, Family, Hop, LinkKind, Route, Rule};
use dataplane_linux::{
    Dataplane, DesiredState, FakeKernel, HopProtocol, NextHop, Op, Phase, Settings, TunnelKind,
    detect_underlay, plan, tunnel_mac,
};

/// Node fd00:10::1: its same-segment peer fd00:10::2 (pods 10.160.2.0/24) and a peer behind the
/// IPv6 router, fd00:20::5 (pods 10.170.5.0/24); links at 1400 − 70.
fn desired() -> DesiredState {
    common::vxlan_state(
        "fd00:10::1",
        1330,
        vec![
            route("10.160.2.0/24", 1330, vec![vx("fd00:10::2", "10.160.2.1")]),
            route("10.170.5.0/24", 1330, vec![vx("fd00:20::5", "10.170.5.1")]),
        ],
    )
}

/// `eth0` (MTU 1400) holds fd00:10::1/64; the IPv6 default route goes via the router's
/// link-local address. No IPv4 route at all.
fn ipv6_only_node() -> FakeKernel {
    let mut k = FakeKernel::new();
    k.add_link("eth0", LinkKind::Other(String::new()), 1400);
    k.state
        .main_routes
        .push(main_route("fd00:10::/64", "eth0", None));
    k.state
        .main_routes
        .push(main_route("::/0", "eth0", Some("fe80::1")));
    k
}

fn held(dp: &Dataplane<FakeKernel>, dst: &str) -> Route {
    common::held(dp, dst)
        .unwrap_or_else(|| panic!("no route {dst} in {:?}", dp.kernel().state.routes))
}

fn converge(k: FakeKernel) -> Dataplane<FakeKernel> {
    common::converge(k, &desired()).0
}

#[test]
fn vxlan_over_an_ipv6_underlay_encapsulates_with_a_udp_checksum() {
    let dp = converge(ipv6_only_node());
    for (dst, peer) in [
        ("10.160.2.0/24", "fd00:10::2"),
        ("10.170.5.0/24", "fd00:20::5"),
    ] {
        let r = held(&dp, dst);
        assert_eq!(r.mtu, Some(1330), "{r:?}");
        assert!(!r.mtu_locked, "an IPv4 destination is not locked: {r:?}");
        assert_eq!(
            r.hops[0].encap,
            Some(Encap {
                id: 1,
                dst: ip(peer),
                csum: true,
                df: false,
                ttl: 64,
            }),
            "{dst}"
        );
    }
    // The inner packets are IPv4: one IPv4 rule, no IPv6 one.
    assert_eq!(
        dp.kernel().state.rules,
        vec![Rule {
            family: Family::V4,
            priority: 100,
            table: 100,
        }]
    );
    let op = Op::ReplaceRoute(held(&dp, "10.160.2.0/24"));
    assert!(
        op.to_string().contains(
            "[encap ip6 id 1 dst fd00:10::2 ttl 64 csum via 10.160.2.1 dev vxlan0 onlink]"
        ),
        "{op}"
    );
}

/// Over IPv4 the UDP tunnels keep a zero checksum, and their outer header stays fragmentable
/// (`Encap::df`), with an explicit TTL.
#[test]
fn udp_tunnels_over_ipv4_keep_a_zero_checksum() {
    let mut d = desired();
    d.identity_addr = ip("192.168.0.1");
    d.routes = vec![route(
        "10.2.0.0/24",
        1450,
        vec![vx("192.168.0.2", "10.2.0.1")],
    )];
    let r = plan::kernel_route(&d.routes[0], &Settings::default()).expect("a route");
    assert_eq!(
        r.hops[0].encap,
        Some(Encap {
            id: 1,
            dst: ip("192.168.0.2"),
            csum: false,
            df: false,
            ttl: 64,
        })
    );
}

#[test]
fn endpoint_routes_to_ipv6_underlay_addresses_take_the_underlays_own_next_hop() {
    let dp = converge(ipv6_only_node());
    let on_link = held(&dp, "fd00:10::2/128");
    assert_eq!(
        on_link.hops,
        vec![Hop {
            device: "eth0".into(),
            gateway: None,
            onlink: false,
            encap: None,
        }]
    );
    assert_eq!(on_link.mtu, None);
    let routed = held(&dp, "fd00:20::5/128");
    assert_eq!(
        routed.hops,
        vec![Hop {
            device: "eth0".into(),
            gateway: Some(ip("fe80::1")),
            onlink: false,
            encap: None,
        }]
    );
}

#[test]
fn tunnel_macs_hash_ipv6_identity_addresses() {
    let dp = converge(ipv6_only_node());
    let own = device_mac(&dp);
    assert_eq!(own, tunnel_mac(ip("fd00:10::1")));
    assert_eq!(&own[..2], &[0x0a, 0x58]);
    let peer = neighbour_mac(&dp, "10.160.2.1");
    assert_eq!(peer, Some(tunnel_mac(ip("fd00:10::2"))));
    assert_ne!(peer, Some(own));
}

/// A route written without the checksum flag (zero-checksum VXLAN over IPv6, dropped by the
/// receiver) is rewritten with it at the same MTU.
#[test]
fn a_held_route_without_the_checksum_is_rewritten() {
    let mut k = ipv6_only_node();
    k.add_link("vxlan0", LinkKind::Tunnel(TunnelKind::Vxlan), 1330);
    let mut stale = plan::kernel_route(&desired().routes[0], &Settings::default()).expect("route");
    for h in &mut stale.hops {
        if let Some(e) = &mut h.encap {
            e.csum = false;
        }
    }
    k.state.routes.push(stale);
    let mut dp = Dataplane::new(k, Settings::default());
    let p = dp.plan(&desired()).expect("plan");
    let rewrite = p
        .steps
        .iter()
        .find(|s| {
            matches!(&s.op, Op::ReplaceRoute(r) if r.destination == "10.160.2.0/24".parse().unwrap())
        })
        .expect("the route is rewritten");
    assert_eq!(
        rewrite.phase,
        Phase::RoutesUp,
        "same MTU: no lowering first"
    );
    let dp = converge(dp.kernel().clone());
    assert_eq!(
        held(&dp, "10.160.2.0/24").hops[0].encap.map(|e| e.csum),
        Some(true)
    );
}

#[test]
fn underlay_detection_in_the_ipv6_main_table() {
    let k = ipv6_only_node();
    let own = plan::own_devices(&desired(), &Settings::default());
    let on_link = detect_underlay(&k.state, Some(ip("fd00:10::2")), &own, 250).expect("peer");
    assert_eq!((on_link.device.as_str(), on_link.mtu), ("eth0", 1400));
    assert_eq!(on_link.gateway, None);
    let routed = detect_underlay(&k.state, Some(ip("fd00:20::5")), &own, 250).expect("default");
    assert_eq!(routed.gateway, Some(ip("fe80::1")));
    // Without a peer, a node without an IPv4 default route falls back to the IPv6 one.
    let any = detect_underlay(&k.state, None, &own, 250).expect("the IPv6 default route");
    assert_eq!((any.device.as_str(), any.mtu), ("eth0", 1400));
    // An IPv4 peer has no route here: nothing is detected towards it.
    assert_eq!(
        detect_underlay(&k.state, Some(ip("192.0.2.7")), &own, 250),
        None
    );
}

/// With both default routes, no peer still means the IPv4 one.
#[test]
fn without_a_peer_the_ipv4_default_route_comes_first() {
    let mut k = ipv6_only_node();
    k.add_link("eth1", LinkKind::Other(String::new()), 9000);
    k.state
        .main_routes
        .push(main_route("0.0.0.0/0", "eth1", Some("192.0.2.254")));
    let own = plan::own_devices(&desired(), &Settings::default());
    let any = detect_underlay(&k.state, None, &own, 250).expect("a default route");
    assert_eq!((any.device.as_str(), any.mtu), ("eth1", 9000));
}

/// IPIP sets Don't Fragment on its IPv4 outer header (the device tells the pod the tunnel's path
/// MTU when a hop is narrower than planned); over IPv6 it leaves through an `ip6tnl` device,
/// without such a bit. Every encapsulation carries an explicit TTL.
#[test]
fn ipip_sets_dont_fragment_over_ipv4() {
    let hop = |dev: &str, kind: TunnelKind, underlay: &str| NextHop {
        device: dev.into(),
        protocol: HopProtocol::Tunnel(kind),
        peer_underlay: ip(underlay),
        peer_identity: ip(underlay),
        pod_gateway: ip("10.2.0.1"),
    };
    for (h, df) in [
        (hop("ipip0", TunnelKind::Ipip, "192.168.0.2"), true),
        (hop("ip6ip0", TunnelKind::Ip6Ip, "fd00:10::2"), false),
    ] {
        let spec = route("10.2.0.0/24", 1400, vec![h]);
        let r = plan::kernel_route(&spec, &Settings::default()).expect("a route");
        let e = r.hops[0].encap.expect("an encapsulation");
        assert_eq!((e.df, e.csum, e.ttl), (df, false, 64), "{e:?}");
    }
}
