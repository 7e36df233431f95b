//! From a node plan to the dataplane adapter's desired state.

use dataplane_linux::{
    DesiredState, Fabric, HopProtocol, NextHop, PodSpec, RouteSpec, TunnelDevice, TunnelKind,
    WireguardMtu,
};
use mtu_solver::{DeviceRef, NodePlan};
use std::net::IpAddr;
use std::path::PathBuf;
use topology_core::model::Topology;
use topology_core::vocab::Protocol;

/// Pod-side options of the agent.
#[derive(Clone, Debug, Default)]
pub struct FabricOptions {
    /// The pod bridge (None: the agent manages no fabric).
    pub bridge: Option<String>,
    /// The CNI configuration file whose `mtu` the agent owns (only where the Site manages CNI).
    pub cni_config: Option<PathBuf>,
    /// Pods to reach: network namespace path and interface name.
    pub pods: Vec<(PathBuf, String)>,
}

/// The device that carries IPIP links over IPv6 underlays: the plan's shared IPIP device is an
/// `ipip` device, which sends IPv4 outer headers only, so the hops of those links leave through
/// this `ip6tnl` device instead, at the shared device's MTU (the largest IPIP link MTU, which
/// bounds theirs). Not `ip6tnl0`: the kernel's `ip6_tunnel` driver makes a fallback device of
/// that name in every namespace.
pub const IPIP_OVER_IPV6_DEVICE: &str = "ip6ip0";

fn tunnel_kind(p: Protocol) -> Option<TunnelKind> {
    match p {
        Protocol::Vxlan => Some(TunnelKind::Vxlan),
        Protocol::Geneve => Some(TunnelKind::Geneve),
        Protocol::Ipip => Some(TunnelKind::Ipip),
        Protocol::WireGuard | Protocol::None => None,
    }
}

/// The node's identity address (its tunnel MAC derives from it, `mtu_solver::NodePlan`'s
/// `identity_addr`), else any address of its own; `None`: the node has no address at all.
pub fn identity_addr(topo: &Topology, plan: &NodePlan) -> Option<IpAddr> {
    plan.identity_addr
        .or_else(|| plan.links.iter().find_map(|l| l.local_addr))
        .or_else(|| topo.node(plan.node).internal_ips.first().copied())
}

/// Converts a node plan into the adapter's desired state. Next hops the adapter cannot program
/// (no underlay address, no device name, unencapsulated links) are left out; a route left
/// without next hops is not installed.
///
/// Tunnel MACs derive from identity addresses on both sides: the node's own from
/// [`NodePlan::identity_addr`] (`fallback_identity` only when the plan names none, i.e. the
/// node has no address of its own), each peer's from its next hop's `identity_addr` (else the
/// address the link reaches it at). A node reached at its InternalIP by some peers and at its
/// ExternalIP by others thus has one MAC for all of them.
pub fn desired_state(
    topo: &Topology,
    plan: &NodePlan,
    fallback_identity: IpAddr,
    fabric: &FabricOptions,
) -> DesiredState {
    let (mut devices, wireguard_mtus) = plan_devices(plan);
    let (routes, ip6tnl_mtu) = route_specs(plan, &devices);
    if let Some(mtu) = ip6tnl_mtu {
        devices.push(TunnelDevice {
            name: IPIP_OVER_IPV6_DEVICE.to_string(),
            kind: TunnelKind::Ip6Ip,
            mtu,
        });
    }
    DesiredState {
        identity_addr: plan.identity_addr.unwrap_or(fallback_identity),
        devices,
        wireguard_mtus,
        routes,
        fabric: fabric_state(topo, plan, fabric),
    }
}

/// The plan's devices the adapter programs: its shared tunnel devices, and the MTU of each named
/// WireGuard device.
fn plan_devices(plan: &NodePlan) -> (Vec<TunnelDevice>, Vec<WireguardMtu>) {
    let mut devices = Vec::new();
    let mut wireguard_mtus = Vec::new();
    for d in &plan.devices {
        let name: Option<String> = match &d.device {
            DeviceRef::Shared(n) => Some(n.to_string()),
            DeviceRef::PerPeer { name: Some(n), .. } => Some(n.clone()),
            _ => None,
        };
        let Some(name) = name else { continue };
        match tunnel_kind(d.protocol) {
            Some(kind) if matches!(d.device, DeviceRef::Shared(_)) => devices.push(TunnelDevice {
                name,
                kind,
                mtu: d.mtu.mtu.get(),
            }),
            None if d.protocol == Protocol::WireGuard => wireguard_mtus.push(WireguardMtu {
                name,
                mtu: d.mtu.mtu.get(),
            }),
            _ => {}
        }
    }
    (devices, wireguard_mtus)
}

/// The plan's routes with the next hops the adapter can program; a route left without any is
/// left out. Also the MTU of the IPIP-over-IPv6 device, when a next hop needs it.
fn route_specs(plan: &NodePlan, devices: &[TunnelDevice]) -> (Vec<RouteSpec>, Option<u32>) {
    let mut routes = Vec::new();
    let mut ip6tnl_mtu: Option<u32> = None;
    for r in &plan.routes {
        let route_mtu = r.mtu.mtu.get();
        let next_hops: Vec<NextHop> = r
            .next_hops
            .iter()
            .filter_map(|nh| next_hop(nh, route_mtu, devices, &mut ip6tnl_mtu))
            .collect();
        if !next_hops.is_empty() {
            routes.push(RouteSpec {
                destination: r.destination,
                mtu: route_mtu,
                next_hops,
            });
        }
    }
    (routes, ip6tnl_mtu)
}

/// One next hop as the adapter programs it; `None` without a device name, an underlay address
/// or a pod gateway, or over an unencapsulated link. An IPIP hop towards an IPv6 underlay leaves
/// through [`IPIP_OVER_IPV6_DEVICE`], whose MTU `ip6tnl_mtu` raises to the shared device's (else
/// the route's).
fn next_hop(
    nh: &mtu_solver::NextHop,
    route_mtu: u32,
    devices: &[TunnelDevice],
    ip6tnl_mtu: &mut Option<u32>,
) -> Option<NextHop> {
    let device = match &nh.device {
        DeviceRef::Shared(n) => n.to_string(),
        DeviceRef::PerPeer { name: Some(n), .. } => n.clone(),
        _ => return None,
    };
    let protocol = match tunnel_kind(nh.protocol) {
        Some(k) => HopProtocol::Tunnel(k),
        None if nh.protocol == Protocol::WireGuard => HopProtocol::WireGuard,
        None => return None,
    };
    let (Some(peer_underlay), Some(pod_gateway)) = (nh.underlay_addr, nh.pod_gateway) else {
        return None;
    };
    let (device, protocol) = match protocol {
        HopProtocol::Tunnel(TunnelKind::Ipip) if peer_underlay.is_ipv6() => {
            let mtu = devices
                .iter()
                .find(|d| d.name == device)
                .map(|d| d.mtu)
                .unwrap_or(route_mtu);
            *ip6tnl_mtu = Some(ip6tnl_mtu.map_or(mtu, |m: u32| m.max(mtu)));
            (
                IPIP_OVER_IPV6_DEVICE.to_string(),
                HopProtocol::Tunnel(TunnelKind::Ip6Ip),
            )
        }
        p => (device, p),
    };
    Some(NextHop {
        device,
        protocol,
        peer_underlay,
        peer_identity: nh.identity_addr.unwrap_or(peer_underlay),
        pod_gateway,
    })
}

/// The pod side, when the agent manages a bridge: the fabric MTU, the pods, and the CNI
/// configuration where the Site manages CNI.
fn fabric_state(topo: &Topology, plan: &NodePlan, fabric: &FabricOptions) -> Option<Fabric> {
    let manage_cni = topo.site(plan.site).manage_cni;
    fabric.bridge.as_ref().map(|bridge| Fabric {
        bridge: bridge.clone(),
        mtu: plan.fabric.mtu.get(),
        cni_config: if manage_cni {
            fabric.cni_config.clone()
        } else {
            None
        },
        pods: fabric
            .pods
            .iter()
            .map(|(netns, ifname)| PodSpec {
                netns: netns.clone(),
                ifname: ifname.clone(),
                host_veth: None,
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dataplane_linux::{Dataplane, Settings as DpSettings};
    use topology_core::decode::Decoded;

    /// Gateway hg1 (External pool PH, InternalIP 10.10.0.1, ExternalIP 198.51.100.1) serving
    /// its own Site H (worker hw1) and the unpeered Site N (worker n1, InternalIP 10.20.0.4,
    /// ExternalIP 203.0.113.4), all over VXLAN.
    const NAT: &str = r#"
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: H}
spec:
  nodeCidrs: [10.10.0.0/16]
  podCidrAssignments: [{cidrBlocks: [10.110.0.0/16]}]
  tunnelProtocol: VXLAN
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: N}
spec:
  nodeCidrs: [10.20.0.0/22]
  podCidrAssignments: [{cidrBlocks: [10.120.0.0/16]}]
  tunnelProtocol: VXLAN
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPool
metadata: {name: PH}
spec: {type: External, nodeSelector: {gw: ph}, tunnelProtocol: VXLAN}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SiteGatewayPoolAssignment
metadata: {name: hn}
spec: {sites: [H, N], gatewayPools: [PH], tunnelProtocol: VXLAN}
---
apiVersion: v1
kind: Node
metadata: {name: hg1, labels: {net.unbounded-cloud.io/site: H, gw: ph}}
spec: {podCIDRs: [10.110.1.0/24]}
status:
  addresses:
    - {type: InternalIP, address: 10.10.0.1}
    - {type: ExternalIP, address: 198.51.100.1}
---
apiVersion: v1
kind: Node
metadata: {name: hw1, labels: {net.unbounded-cloud.io/site: H}}
spec: {podCIDRs: [10.110.11.0/24]}
status:
  addresses: [{type: InternalIP, address: 10.10.0.11}]
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {net.unbounded-cloud.io/site: N}}
spec: {podCIDRs: [10.120.4.0/24]}
status:
  addresses:
    - {type: InternalIP, address: 10.20.0.4}
    - {type: ExternalIP, address: 203.0.113.4}
"#;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn desired(name: &str) -> DesiredState {
        desired_in(NAT, name)
    }

    fn desired_in(yaml: &str, name: &str) -> DesiredState {
        let mut decoded = Decoded::default();
        decoded.add_source("test.yaml", yaml.as_bytes());
        let topo = Topology::build(decoded.objects.iter(), decoded.diagnostics.iter().cloned());
        let node = topo.node_id(name).unwrap();
        let mut solver = mtu_solver::Solver::new(&topo, mtu_solver::Settings::default());
        let plan = solver.plan(node);
        // The fallback is for a plan without an identity address; these plans all have one.
        desired_state(&topo, &plan, ip("192.0.2.99"), &FabricOptions::default())
    }

    fn hop(d: &DesiredState, dst: &str) -> NextHop {
        let r = d
            .routes
            .iter()
            .find(|r| r.destination == dst.parse().unwrap())
            .unwrap_or_else(|| panic!("no route {dst} in {:?}", d.routes));
        assert_eq!(r.next_hops.len(), 1, "{r:?}");
        r.next_hops[0].clone()
    }

    #[test]
    fn macs_derive_from_identity_addresses_not_from_the_addresses_links_use() {
        let (hg1, hw1, n1) = (desired("hg1"), desired("hw1"), desired("n1"));
        assert_eq!(hg1.identity_addr, ip("10.10.0.1"));
        assert_eq!(hw1.identity_addr, ip("10.10.0.11"));
        assert_eq!(n1.identity_addr, ip("10.20.0.4"));
        // hg1 is reached at its InternalIP by hw1 and at its ExternalIP by n1: one identity.
        let from_hw1 = hop(&hw1, "10.110.1.0/24");
        let from_n1 = hop(&n1, "10.110.1.0/24");
        assert_eq!(from_hw1.peer_underlay, ip("10.10.0.1"));
        assert_eq!(from_n1.peer_underlay, ip("198.51.100.1"));
        assert_eq!(from_hw1.peer_identity, hg1.identity_addr);
        assert_eq!(from_n1.peer_identity, hg1.identity_addr);
        // hg1 reaches n1 at its ExternalIP, for its pods and for its InternalIP (NodeAddress).
        for dst in ["10.120.4.0/24", "10.20.0.4/32"] {
            let to_n1 = hop(&hg1, dst);
            assert_eq!(to_n1.peer_underlay, ip("203.0.113.4"), "{dst}");
            assert_eq!(to_n1.peer_identity, n1.identity_addr, "{dst}");
            assert_eq!(to_n1.pod_gateway, ip("10.120.4.1"), "{dst}");
        }
    }

    /// Two workers of one VXLAN Site with only IPv6 InternalIPs, IPv4 pod CIDRs, under the
    /// default (IPv4) tunnel family.
    const IPV6_ONLY: &str = r#"
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: S6}
spec:
  nodeCidrs: ["fd00:10::/64"]
  podCidrAssignments: [{cidrBlocks: [10.160.0.0/16]}]
  tunnelProtocol: VXLAN
---
apiVersion: v1
kind: Node
metadata: {name: v6a, labels: {net.unbounded-cloud.io/site: S6}}
spec: {podCIDRs: [10.160.1.0/24]}
status:
  addresses: [{type: InternalIP, address: "fd00:10::1"}]
---
apiVersion: v1
kind: Node
metadata: {name: v6b, labels: {net.unbounded-cloud.io/site: S6}}
spec: {podCIDRs: [10.160.2.0/24]}
status:
  addresses: [{type: InternalIP, address: "fd00:10::2"}]
"#;

    /// IPIP between IPv6-only nodes leaves through the `ip6tnl` device at the shared IPIP
    /// device's MTU (an `ipip` device cannot send an IPv6 outer header), and the adapter
    /// applies it; the adapter refuses an `ipip` device towards an IPv6 peer.
    #[test]
    fn ipip_over_ipv6_underlays_leaves_through_the_ip6tnl_device() {
        use dataplane_linux::model::LinkKind;
        let text = IPV6_ONLY.replace("tunnelProtocol: VXLAN", "tunnelProtocol: IPIP");
        let a = desired_in(&text, "v6a");
        let to_b = hop(&a, "10.160.2.0/24");
        assert_eq!(to_b.protocol, HopProtocol::Tunnel(TunnelKind::Ip6Ip));
        assert_eq!(to_b.device, IPIP_OVER_IPV6_DEVICE);
        let kind_mtu = |k: TunnelKind| {
            a.devices
                .iter()
                .find(|d| d.kind == k)
                .map(|d| d.mtu)
                .unwrap_or_else(|| panic!("no {k:?} device in {:?}", a.devices))
        };
        // 1500 − IPIP's 40 bytes over IPv6.
        assert_eq!(kind_mtu(TunnelKind::Ip6Ip), 1460);
        assert_eq!(kind_mtu(TunnelKind::Ip6Ip), kind_mtu(TunnelKind::Ipip));
        let mut k = dataplane_linux::FakeKernel::new();
        k.add_link("eth0", LinkKind::Other(String::new()), 1500);
        let mut dp = dataplane_linux::Dataplane::new(k, dataplane_linux::Settings::default());
        dp.reconcile(&a)
            .expect("the adapter applies the ip6tnl hop");
        let mut wrong = a.clone();
        for r in &mut wrong.routes {
            for h in &mut r.next_hops {
                h.device = "ipip0".into();
                h.protocol = HopProtocol::Tunnel(TunnelKind::Ipip);
            }
        }
        let e = dp
            .reconcile(&wrong)
            .expect_err("an ipip device towards an IPv6 peer");
        assert!(e.to_string().contains("ip6tnl"), "{e}");
    }

    /// An IPv6-only node's plan becomes IPv4 routes encapsulated towards the peer's IPv6
    /// underlay address, with MACs from the IPv6 identities; applied to a kernel whose underlay
    /// is IPv6 only, the encapsulation carries a UDP checksum and the endpoint host route takes
    /// the IPv6 underlay.
    #[test]
    fn ipv6_only_nodes_encapsulate_ipv4_pods_towards_ipv6_underlay_addresses() {
        use dataplane_linux::model::{Hop, LinkKind, Route};
        let (a, b) = (desired_in(IPV6_ONLY, "v6a"), desired_in(IPV6_ONLY, "v6b"));
        assert_eq!(a.identity_addr, ip("fd00:10::1"));
        assert_eq!(b.identity_addr, ip("fd00:10::2"));
        let to_b = hop(&a, "10.160.2.0/24");
        assert_eq!(to_b.protocol, HopProtocol::Tunnel(TunnelKind::Vxlan));
        assert_eq!(to_b.peer_underlay, ip("fd00:10::2"));
        assert_eq!(to_b.peer_identity, b.identity_addr);
        assert_eq!(to_b.pod_gateway, ip("10.160.2.1"));
        assert_eq!(hop(&b, "10.160.1.0/24").peer_identity, a.identity_addr);

        let mut k = dataplane_linux::FakeKernel::new();
        k.add_link("eth0", LinkKind::Other(String::new()), 1400);
        k.state.main_routes.push(Route {
            table: 254,
            destination: "fd00:10::/64".parse().unwrap(),
            protocol: 2,
            mtu: None,
            mtu_locked: false,
            hops: vec![Hop {
                device: "eth0".into(),
                gateway: None,
                onlink: false,
                encap: None,
            }],
        });
        let mut dp = Dataplane::new(k, DpSettings::default());
        dp.reconcile(&a).expect("reconcile");
        let st = &dp.kernel().state;
        let route = st
            .routes
            .iter()
            .find(|r| r.destination == "10.160.2.0/24".parse().unwrap())
            .expect("route to v6b's pods");
        let encap = route.hops[0].encap.expect("encapsulated");
        assert_eq!((encap.dst, encap.csum), (ip("fd00:10::2"), true));
        let endpoint = st
            .routes
            .iter()
            .find(|r| r.destination == "fd00:10::2/128".parse().unwrap())
            .expect("endpoint route to v6b's underlay address");
        assert_eq!(endpoint.hops[0].device, "eth0");
        assert_eq!(
            st.link("vxlan0").and_then(|l| l.mac),
            Some(dataplane_linux::tunnel_mac(ip("fd00:10::1")))
        );
        assert!(st.neighbours.iter().any(|n| n.address == ip("10.160.2.1")
            && n.mac == dataplane_linux::tunnel_mac(ip("fd00:10::2"))));
    }
}
