//! Public input types: what the node should look like ([`DesiredState`]) and how the adapter
//! names and numbers what it owns ([`Settings`]). Plain data, no I/O, no serde.

use std::net::IpAddr;
use std::path::PathBuf;

use ipnet::IpNet;

/// Kind of a shared (flow-based) tunnel device owned by the adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TunnelKind {
    /// `vxlan external dstport <Settings::vxlan_port>`; carries Ethernet (needs neighbours).
    Vxlan,
    /// `geneve external dstport <Settings::geneve_port>`; carries Ethernet (needs neighbours).
    Geneve,
    /// `ipip external`; carries IP directly (no neighbours, no MAC), over IPv4 underlays only.
    Ipip,
    /// `ip6tnl external` (mode any): IP in IP over IPv6 underlays, IPv4 or IPv6 inside; carries
    /// IP directly. An `ipip` device cannot send an IPv6 outer header: its routes to IPv6 peers
    /// would lose every packet.
    Ip6Ip,
}

impl TunnelKind {
    /// Whether the tunnel carries Ethernet frames (so next hops need neighbour entries).
    pub fn carries_ethernet(self) -> bool {
        matches!(self, TunnelKind::Vxlan | TunnelKind::Geneve)
    }

    /// Whether the device can send to a tunnel endpoint at `underlay`: UDP tunnels over either
    /// family, IPIP devices over theirs only.
    pub fn reaches(self, underlay: IpAddr) -> bool {
        match self {
            TunnelKind::Vxlan | TunnelKind::Geneve => true,
            TunnelKind::Ipip => underlay.is_ipv4(),
            TunnelKind::Ip6Ip => underlay.is_ipv6(),
        }
    }
}

/// How a route's next hop leaves the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HopProtocol {
    /// Over the shared tunnel device of that kind, with an encapsulation next hop.
    Tunnel(TunnelKind),
    /// Over a per-peer WireGuard device (configured elsewhere): a plain `dev wgX` route.
    WireGuard,
}

/// One shared tunnel device the node needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunnelDevice {
    /// Interface name, e.g. `vxlan0`.
    pub name: String,
    /// Tunnel kind.
    pub kind: TunnelKind,
    /// Device MTU: the largest link MTU among the links it carries (`mtu.md` §5).
    pub mtu: u32,
}

/// One equal-cost next hop of a route.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NextHop {
    /// Device the route leaves through (a [`TunnelDevice`] name or a WireGuard device name).
    pub device: String,
    /// Tunnel protocol of this hop.
    pub protocol: HopProtocol,
    /// Underlay address of the tunnel endpoint: the address this link reaches the peer node at
    /// (a NAT'd node's ExternalIP across public addresses). The encapsulation destination and
    /// the endpoint host route's destination. For WireGuard hops, the peer's endpoint as the
    /// WireGuard device is configured with it: used only to recognise a route to that endpoint
    /// itself (see [`RouteSpec`]).
    pub peer_underlay: IpAddr,
    /// The peer's identity address: the one address every peer derives the node's tunnel MAC
    /// from ([`tunnel_mac`]), whichever address its link reaches it at. The neighbour entry for
    /// [`NextHop::pod_gateway`] carries `tunnel_mac(peer_identity)`, so it must equal the
    /// peer's own [`DesiredState::identity_addr`]; it differs from
    /// [`NextHop::peer_underlay`] for a node reached at another address on this link. Ignored
    /// for WireGuard and IPIP hops (no Ethernet, no neighbours).
    pub peer_identity: IpAddr,
    /// The peer's pod gateway address (first address of its pod CIDR): the `via` of the route
    /// and the neighbour entry's address. Ignored for WireGuard and IPIP hops.
    pub pod_gateway: IpAddr,
}

/// One route of the node plan.
///
/// A next hop whose tunnel endpoint ([`NextHop::peer_underlay`]) is exactly this route's
/// destination (its host prefix) is left out, with a note: the encapsulated packets would match
/// the route again and the tunnel would carry itself. A route left without next hops is not
/// installed; the endpoint host route through the underlay takes its place. A destination of
/// prefix length 0 is refused ([`crate::Error::DefaultRoute`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteSpec {
    /// Destination prefix.
    pub destination: IpNet,
    /// Route MTU (written as the route's MTU metric; locked for IPv6).
    pub mtu: u32,
    /// Equal-cost next hops (more than one becomes a multipath route).
    pub next_hops: Vec<NextHop>,
}

/// A pod on this node: its host-side veth (a port of the pod bridge) and its namespace side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodSpec {
    /// Path of the pod's network namespace, e.g. `/run/netns/cni-1234` or `/proc/<pid>/ns/net`.
    pub netns: PathBuf,
    /// Interface name inside the pod, e.g. `eth0`.
    pub ifname: String,
    /// Host-side veth name (a port of the bridge), if known.
    pub host_veth: Option<String>,
}

/// The pod-facing part of the node (`mtu.md` §5 "Fabric").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fabric {
    /// Pod bridge name (created when missing), e.g. `cni0`.
    pub bridge: String,
    /// The fabric MTU: bridge, ports, pod veths and CNI configuration.
    pub mtu: u32,
    /// CNI configuration file whose `mtu` the adapter manages (`None`: Site does not manage CNI).
    pub cni_config: Option<PathBuf>,
    /// Pods on this node.
    pub pods: Vec<PodSpec>,
}

/// A WireGuard device whose MTU the adapter sets when it exists (never created).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WireguardMtu {
    /// Device name, e.g. `wg51820`.
    pub name: String,
    /// Its MTU.
    pub mtu: u32,
}

/// Everything the kernel should hold for this node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DesiredState {
    /// The node's identity address: its tunnel devices' MAC is `tunnel_mac(identity_addr)`.
    /// One address for all of the node's links (its private underlay address, else its first
    /// external one), so that peers reaching it at different addresses still agree on its MAC
    /// (each peer's [`NextHop::peer_identity`] for this node is this address).
    pub identity_addr: IpAddr,
    /// Shared tunnel devices.
    pub devices: Vec<TunnelDevice>,
    /// WireGuard devices' MTUs.
    pub wireguard_mtus: Vec<WireguardMtu>,
    /// Routes of the plan (all in the adapter's table).
    pub routes: Vec<RouteSpec>,
    /// Pod-facing elements; `None` leaves them alone.
    pub fabric: Option<Fabric>,
}

/// Names and numbers the adapter uses for what it owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The adapter's routing table.
    pub table: u32,
    /// Priority of the policy rule consulting [`Settings::table`] (must sort before `main`, 32766).
    pub rule_priority: u32,
    /// Route protocol number stamped on every route it writes; only these are swept.
    pub route_protocol: u8,
    /// VNI put in the encapsulation of VXLAN/GENEVE next hops.
    pub vxlan_vni: u32,
    /// UDP destination port of the flow-based VXLAN device.
    pub vxlan_port: u16,
    /// UDP destination port of the flow-based GENEVE device.
    pub geneve_port: u16,
    /// Shared-device names the adapter owns: present but not desired means "delete".
    pub managed_devices: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            table: 100,
            rule_priority: 100,
            route_protocol: 250,
            vxlan_vni: 1,
            vxlan_port: 4789,
            geneve_port: 6081,
            managed_devices: vec!["vxlan0".into(), "geneve0".into(), "ipip0".into()],
        }
    }
}

/// Deterministic tunnel MAC of a node from its identity address: `0a:58:` + the four IPv4
/// bytes, or for IPv6 `0a:58:` + four bytes of an FNV-1a hash of the 16 address bytes. `0a` is
/// locally administered, unicast.
pub fn tunnel_mac(identity: IpAddr) -> [u8; 6] {
    let tail = match identity {
        IpAddr::V4(v4) => v4.octets(),
        IpAddr::V6(v6) => {
            let mut h: u32 = 0x811c_9dc5;
            for b in v6.octets() {
                h ^= u32::from(b);
                h = h.wrapping_mul(0x0100_0193);
            }
            h.to_be_bytes()
        }
    };
    [0x0a, 0x58, tail[0], tail[1], tail[2], tail[3]]
}

/// Formats a MAC as `aa:bb:cc:dd:ee:ff`.
pub fn format_mac(mac: &[u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_from_ipv4() {
        let mac = tunnel_mac("192.168.0.2".parse().unwrap());
        assert_eq!(format_mac(&mac), "0a:58:c0:a8:00:02");
    }

    #[test]
    fn mac_from_ipv6_is_stable_and_local() {
        let a = tunnel_mac("fd00::1".parse().unwrap());
        let b = tunnel_mac("fd00::1".parse().unwrap());
        let c = tunnel_mac("fd00::2".parse().unwrap());
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a[0], 0x0a);
    }
}
