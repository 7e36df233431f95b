//! Helpers for the tests: builders of desired states and of the kernel's `main` routes, a
//! converging reconcile on the in-memory kernel and what to read back from it, and, for the
//! real-kernel tests, a dataplane inside a private network namespace.
#![allow(dead_code)]

use std::net::IpAddr;
use std::path::PathBuf;

use dataplane_linux::model::{Hop, LinkKind, PodLink, Route};
use dataplane_linux::netlink::in_netns;
use dataplane_linux::{
    Dataplane, DesiredState, Fabric, FakeKernel, HopProtocol, NetlinkKernel, NextHop, PodSpec,
    RouteSpec, Settings, TunnelDevice, TunnelKind, WireguardMtu,
};

pub fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// A VXLAN next hop to a peer reached and identified at `peer`, pod gateway `gw`.
pub fn vx(peer: &str, gw: &str) -> NextHop {
    vx_to(peer, peer, gw)
}

/// A VXLAN next hop: tunnel endpoint `underlay`, identity `identity`, pod gateway `gw`.
pub fn vx_to(underlay: &str, identity: &str, gw: &str) -> NextHop {
    NextHop {
        device: "vxlan0".into(),
        protocol: HopProtocol::Tunnel(TunnelKind::Vxlan),
        peer_underlay: ip(underlay),
        peer_identity: ip(identity),
        pod_gateway: ip(gw),
    }
}

pub fn route(dst: &str, mtu: u32, hops: Vec<NextHop>) -> RouteSpec {
    RouteSpec {
        destination: dst.parse().unwrap(),
        mtu,
        next_hops: hops,
    }
}

/// A desired state of the node with identity address `identity`: the VXLAN device `vxlan0` at
/// `mtu` and `routes`; no WireGuard device, no fabric.
pub fn vxlan_state(identity: &str, mtu: u32, routes: Vec<RouteSpec>) -> DesiredState {
    DesiredState {
        identity_addr: ip(identity),
        devices: vec![TunnelDevice {
            name: "vxlan0".into(),
            kind: TunnelKind::Vxlan,
            mtu,
        }],
        wireguard_mtus: vec![],
        routes,
        fabric: None,
    }
}

/// A route of the `main` table over `device`: on-link as the kernel adds it for an address
/// (protocol `kernel`), or via `gateway` as configured at boot (protocol `boot`).
pub fn main_route(dst: &str, device: &str, gateway: Option<&str>) -> Route {
    Route {
        table: 254,
        destination: dst.parse().unwrap(),
        protocol: if gateway.is_some() { 3 } else { 2 },
        mtu: None,
        mtu_locked: false,
        hops: vec![Hop {
            device: device.into(),
            gateway: gateway.map(ip),
            onlink: false,
            encap: None,
        }],
    }
}

/// A WireGuard next hop over `dev` (addresses unused for WireGuard).
pub fn wg(dev: &str) -> NextHop {
    NextHop {
        device: dev.into(),
        protocol: HopProtocol::WireGuard,
        peer_underlay: ip("0.0.0.0"),
        peer_identity: ip("0.0.0.0"),
        pod_gateway: ip("0.0.0.0"),
    }
}

/// A node state with a VXLAN device, a WireGuard device, routes (one ECMP, one IPv6) and a
/// fabric with two pods and a CNI file.
/// Identity 192.168.0.1; `vxlan0` at `vxlan`, `wg51820` at `wgm`, the four routes at `r`, the
/// fabric `cni0` at `fabric`; `extra` adds a fifth route (10.5.0.0/24 via 192.168.0.5).
pub fn node_state(vxlan: u32, wgm: u32, r: [u32; 4], fabric: u32, extra: bool) -> DesiredState {
    let mut routes = vec![
        route("10.2.0.0/24", r[0], vec![vx("192.168.0.2", "10.2.0.1")]),
        route(
            "10.3.0.0/24",
            r[1],
            vec![vx("192.168.0.3", "10.3.0.1"), vx("192.168.0.4", "10.3.1.1")],
        ),
        route("10.9.0.0/16", r[2], vec![wg("wg51820")]),
        route("fd00:2::/64", r[3], vec![vx("192.168.0.2", "fd00:2::1")]),
    ];
    if extra {
        routes.push(route(
            "10.5.0.0/24",
            r[0].min(vxlan),
            vec![vx("192.168.0.5", "10.5.0.1")],
        ));
    }
    DesiredState {
        wireguard_mtus: vec![WireguardMtu {
            name: "wg51820".into(),
            mtu: wgm,
        }],
        fabric: Some(Fabric {
            bridge: "cni0".into(),
            mtu: fabric,
            cni_config: Some(PathBuf::from("/etc/cni/net.d/10-pods.conflist")),
            pods: vec![pod("a"), pod("b")],
        }),
        ..vxlan_state("192.168.0.1", vxlan, routes)
    }
}

/// Pod `n`: namespace `/run/netns/pod-<n>`, `eth0` inside, host veth `veth-<n>`.
pub fn pod(n: &str) -> PodSpec {
    PodSpec {
        netns: PathBuf::from(format!("/run/netns/pod-{n}")),
        ifname: "eth0".into(),
        host_veth: Some(format!("veth-{n}")),
    }
}

/// The in-memory node for [`node_state`]: underlay `eth0` (192.168.0.0/24, default route via
/// 192.168.0.254), `wg51820` at 1420, the pods' veths and interfaces at 1500, a CNI file
/// without `mtu`.
pub fn fabric_node() -> FakeKernel {
    let mut k = FakeKernel::new();
    k.add_link("eth0", LinkKind::Other(String::new()), 1500);
    k.add_link("wg51820", LinkKind::Wireguard, 1420);
    k.add_link("veth-a", LinkKind::Veth, 1500);
    k.add_link("veth-b", LinkKind::Veth, 1500);
    k.state
        .main_routes
        .push(main_route("0.0.0.0/0", "eth0", Some("192.168.0.254")));
    k.state
        .main_routes
        .push(main_route("192.168.0.0/24", "eth0", None));
    for n in ["a", "b"] {
        k.state.pod_links.push(PodLink {
            netns: PathBuf::from(format!("/run/netns/pod-{n}")),
            ifname: "eth0".into(),
            mtu: Some(1500),
        });
    }
    // Pods start at 1500 (CNI default) but no tunnel device yet: lower them first.
    k.cni_files
        .insert(PathBuf::from("/etc/cni/net.d/10-pods.conflist"), None);
    k
}

/// Reconciles `desired` on the in-memory kernel `k`: a second reconcile writes nothing and the
/// inequalities hold. Returns the dataplane and the first reconcile's notes.
pub fn converge(k: FakeKernel, desired: &DesiredState) -> (Dataplane<FakeKernel>, Vec<String>) {
    let mut dp = Dataplane::new(k, Settings::default());
    let first = dp.reconcile(desired).expect("reconcile");
    let again = dp.reconcile(desired).expect("second reconcile");
    assert!(again.writes.is_empty(), "not converged: {:?}", again.writes);
    assert!(dp.kernel().violations().is_empty());
    (dp, first.notes)
}

/// The MAC of the in-memory kernel's `vxlan0`.
pub fn device_mac(dp: &Dataplane<FakeKernel>) -> [u8; 6] {
    dp.kernel()
        .state
        .link("vxlan0")
        .and_then(|l| l.mac)
        .expect("vxlan0 with a MAC")
}

/// The MAC of the neighbour `address` on `vxlan0`.
pub fn neighbour_mac(dp: &Dataplane<FakeKernel>, address: &str) -> Option<[u8; 6]> {
    dp.kernel()
        .state
        .neighbours
        .iter()
        .find(|n| n.device == "vxlan0" && n.address == ip(address))
        .map(|n| n.mac)
}

/// The route to `dst` the in-memory kernel holds in the agent's table.
pub fn held(dp: &Dataplane<FakeKernel>, dst: &str) -> Option<Route> {
    dp.kernel()
        .state
        .routes
        .iter()
        .find(|r| r.destination == dst.parse().unwrap())
        .cloned()
}

pub use test_utils::netns::Ns;

/// A [`Dataplane`] over a netlink connection inside a namespace.
pub trait InNs {
    /// Runs `f` with a [`Dataplane`] over a netlink connection inside this namespace.
    fn dp<T, F>(&self, settings: Settings, f: F) -> T
    where
        T: Send + 'static,
        F: FnOnce(&mut Dataplane<NetlinkKernel>) -> T + Send + 'static;
}

impl InNs for Ns {
    fn dp<T, F>(&self, settings: Settings, f: F) -> T
    where
        T: Send + 'static,
        F: FnOnce(&mut Dataplane<NetlinkKernel>) -> T + Send + 'static,
    {
        in_netns(&self.path(), move || {
            let k = NetlinkKernel::new().expect("netlink connection");
            let mut dp = Dataplane::new(k, settings);
            f(&mut dp)
        })
        .expect("enter namespace")
    }
}

/// Whether real-kernel tests can run here (root, network namespaces, a flow-based VXLAN
/// device); prints the reason when not.
pub fn can_run(test: &str) -> bool {
    test_utils::netns::can_run(test, &[test_utils::netns::Need::FlowVxlan])
}

/// Skips the calling test with a reason when real-kernel tests cannot run.
#[macro_export]
macro_rules! require_root {
    ($name:expr) => {
        if !common::can_run($name) {
            return;
        }
    };
}
