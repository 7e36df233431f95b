//! The message of each write: rtnetlink messages for links, routes, rules and neighbours (device
//! indexes looked up as needed), and the writes that go elsewhere (a pod's namespace, a CNI
//! file).

use std::net::IpAddr;
use std::path::Path;

use ipnet::IpNet;
use netlink_packet_core::{NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST};
use netlink_packet_route::link::{
    InfoData, InfoGeneve, InfoIpTunnel, InfoKind, InfoVxlan, LinkAttribute, LinkFlags, LinkInfo,
    LinkMessage,
};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteIp6Tunnel, RouteIp6TunnelFlags, RouteIpTunnel,
    RouteIpTunnelFlags, RouteLwEnCapType, RouteLwTunnelEncap, RouteMessage, RouteMetric,
    RouteNextHop, RouteNextHopFlags, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use crate::error::{Error, Result};
use crate::model::{Encap, Family, Op, Route, Rule};
use crate::types::TunnelKind;

use super::NetlinkKernel;
use super::cni_file::write_cni;
use super::netns::set_pod_link_mtu;

const RTAX_MTU_LOCK: u32 = 1 << 2;

/// How one write reaches the kernel.
pub(super) enum Write<'a> {
    /// A netlink message with its flags, on the kernel's socket.
    Message(RouteNetlinkMessage, u16),
    /// A write performed elsewhere.
    Elsewhere(Elsewhere<'a>),
}

/// A write that is not a message on the kernel's socket.
pub(super) enum Elsewhere<'a> {
    /// A pod interface's MTU, set from inside the pod's namespace.
    PodMtu(&'a Path, &'a str, u32),
    /// The `mtu` of a CNI configuration file.
    CniMtu(&'a Path, u32),
}

/// Performs a write that is not a message on the kernel's socket.
pub(super) fn perform_elsewhere(write: Elsewhere<'_>) -> Result<()> {
    match write {
        Elsewhere::PodMtu(netns, ifname, mtu) => set_pod_link_mtu(netns, ifname, mtu),
        Elsewhere::CniMtu(path, mtu) => write_cni(path, mtu),
    }
}

fn family_of_net(net: &IpNet) -> AddressFamily {
    match net {
        IpNet::V4(_) => AddressFamily::Inet,
        IpNet::V6(_) => AddressFamily::Inet6,
    }
}

fn route_addr(a: IpAddr) -> RouteAddress {
    match a {
        IpAddr::V4(v) => RouteAddress::Inet(v),
        IpAddr::V6(v) => RouteAddress::Inet6(v),
    }
}

/// The tunnel key flags of an encapsulation (`TUNNEL_*` in the kernel's numbering, which
/// netlink carries big-endian).
fn tunnel_flags(e: &Encap) -> u16 {
    let mut flags = 0;
    if e.csum {
        flags |= crate::route_dump::TUNNEL_CSUM;
    }
    if e.df {
        flags |= crate::route_dump::TUNNEL_DONT_FRAGMENT;
    }
    flags
}

fn encap_attrs(e: &Encap) -> Vec<RouteAttribute> {
    match e.dst {
        IpAddr::V4(d) => {
            let mut list = vec![
                RouteLwTunnelEncap::Ip(RouteIpTunnel::Id(e.id)),
                RouteLwTunnelEncap::Ip(RouteIpTunnel::Destination(d)),
                RouteLwTunnelEncap::Ip(RouteIpTunnel::Ttl(e.ttl)),
            ];
            let flags = tunnel_flags(e);
            if flags != 0 {
                list.push(RouteLwTunnelEncap::Ip(RouteIpTunnel::Flags(
                    RouteIpTunnelFlags::from_bits_retain(flags),
                )));
            }
            vec![
                RouteAttribute::EncapType(RouteLwEnCapType::Ip),
                RouteAttribute::Encap(list),
            ]
        }
        IpAddr::V6(d) => {
            let mut list = vec![
                RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Id(e.id)),
                RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Destination(d)),
                RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Hoplimit(e.ttl)),
            ];
            let flags = tunnel_flags(e);
            if flags != 0 {
                list.push(RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Flags(
                    RouteIp6TunnelFlags::from_bits_retain(flags),
                )));
            }
            vec![
                RouteAttribute::EncapType(RouteLwEnCapType::Ip6),
                RouteAttribute::Encap(list),
            ]
        }
    }
}

impl NetlinkKernel {
    /// How `op` reaches the kernel: its netlink message and flags (looking up device indexes
    /// as needed), or the write to perform elsewhere.
    pub(super) fn prepare<'a>(&mut self, op: &'a Op) -> Result<Write<'a>> {
        let (msg, flags) = match op {
            Op::CreateTunnel {
                name,
                kind,
                mtu,
                mac,
                port,
            } => {
                self.index.remove(name);
                let m = Self::tunnel_link_message(name, *kind, *mtu, *mac, *port);
                (RouteNetlinkMessage::NewLink(m), NLM_F_CREATE | NLM_F_EXCL)
            }
            Op::CreateBridge { name, mtu } => {
                self.index.remove(name);
                (
                    RouteNetlinkMessage::NewLink(Self::bridge_link_message(name, *mtu)),
                    NLM_F_CREATE | NLM_F_EXCL,
                )
            }
            Op::SetMtu { link, mtu } => (self.set_link(link, LinkAttribute::Mtu(*mtu))?, 0),
            Op::SetMac { link, mac } => (
                self.set_link(link, LinkAttribute::Address(mac.to_vec()))?,
                0,
            ),
            Op::SetMaster { link, master } => {
                let idx = self.ifindex(master)?;
                (self.set_link(link, LinkAttribute::Controller(idx))?, 0)
            }
            Op::DeleteLink { link } => {
                let mut m = LinkMessage::default();
                m.header.index = self.ifindex(link)?;
                self.index.remove(link);
                (RouteNetlinkMessage::DelLink(m), 0)
            }
            Op::AddRule(r) => (
                RouteNetlinkMessage::NewRule(Self::rule_message(r)),
                NLM_F_CREATE | NLM_F_EXCL,
            ),
            Op::DeleteRule(r) => (RouteNetlinkMessage::DelRule(Self::rule_message(r)), 0),
            Op::ReplaceRoute(r) => (
                RouteNetlinkMessage::NewRoute(self.route_message(r)?),
                NLM_F_CREATE | NLM_F_REPLACE,
            ),
            Op::DeleteRoute {
                table,
                destination,
                protocol,
            } => (
                RouteNetlinkMessage::DelRoute(Self::route_delete_message(
                    *table,
                    destination,
                    *protocol,
                )),
                0,
            ),
            Op::ReplaceNeighbour(n) => {
                let mut m = self.neighbour_message(&n.device, n.address)?;
                m.attributes
                    .push(NeighbourAttribute::LinkLayerAddress(n.mac.to_vec()));
                (
                    RouteNetlinkMessage::NewNeighbour(m),
                    NLM_F_CREATE | NLM_F_REPLACE,
                )
            }
            Op::DeleteNeighbour { device, address } => (
                RouteNetlinkMessage::DelNeighbour(self.neighbour_message(device, *address)?),
                0,
            ),
            Op::SetPodMtu { netns, ifname, mtu } => {
                return Ok(Write::Elsewhere(Elsewhere::PodMtu(netns, ifname, *mtu)));
            }
            Op::SetCniMtu { path, mtu } => {
                return Ok(Write::Elsewhere(Elsewhere::CniMtu(path, *mtu)));
            }
        };
        Ok(Write::Message(msg, NLM_F_REQUEST | NLM_F_ACK | flags))
    }

    fn bridge_link_message(name: &str, mtu: u32) -> LinkMessage {
        let mut m = LinkMessage::default();
        m.header.flags = LinkFlags::Up;
        m.header.change_mask = LinkFlags::Up;
        m.attributes.push(LinkAttribute::IfName(name.to_string()));
        m.attributes.push(LinkAttribute::Mtu(mtu));
        m.attributes
            .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(
                InfoKind::Bridge,
            )]));
        m
    }

    fn route_delete_message(table: u32, destination: &IpNet, protocol: u8) -> RouteMessage {
        let mut m = RouteMessage::default();
        m.header.address_family = family_of_net(destination);
        m.header.destination_prefix_length = destination.prefix_len();
        m.header.table = u8::try_from(table).unwrap_or(0);
        m.header.protocol = RouteProtocol::from(protocol);
        m.header.scope = RouteScope::NoWhere;
        m.attributes.push(RouteAttribute::Table(table));
        m.attributes
            .push(RouteAttribute::Destination(route_addr(destination.addr())));
        m
    }

    fn route_message(&mut self, r: &Route) -> Result<RouteMessage> {
        let mut m = RouteMessage::default();
        m.header.address_family = family_of_net(&r.destination);
        m.header.destination_prefix_length = r.destination.prefix_len();
        m.header.table = u8::try_from(r.table).unwrap_or(0);
        m.header.protocol = RouteProtocol::from(r.protocol);
        m.header.kind = RouteType::Unicast;
        m.header.scope = if r.hops.iter().any(|h| h.gateway.is_some()) {
            RouteScope::Universe
        } else {
            RouteScope::Link
        };
        m.attributes.push(RouteAttribute::Table(r.table));
        m.attributes.push(RouteAttribute::Destination(route_addr(
            r.destination.addr(),
        )));
        if let Some(mtu) = r.mtu {
            let mut metrics = Vec::new();
            if r.mtu_locked {
                metrics.push(RouteMetric::Lock(RTAX_MTU_LOCK));
            }
            metrics.push(RouteMetric::Mtu(mtu));
            m.attributes.push(RouteAttribute::Metrics(metrics));
        }
        match r.hops.as_slice() {
            [] => {
                return Err(Error::Invalid(format!(
                    "route {} without next hop",
                    r.destination
                )));
            }
            [h] => {
                let oif = self.ifindex(&h.device)?;
                m.attributes.push(RouteAttribute::Oif(oif));
                if let Some(g) = h.gateway {
                    m.attributes.push(RouteAttribute::Gateway(route_addr(g)));
                }
                if let Some(e) = &h.encap {
                    m.attributes.extend(encap_attrs(e));
                }
                if h.onlink {
                    m.header.flags |= RouteFlags::Onlink;
                }
            }
            hops => {
                let mut nhs = Vec::with_capacity(hops.len());
                for h in hops {
                    let mut nh = RouteNextHop::default();
                    nh.interface_index = self.ifindex(&h.device)?;
                    if h.onlink {
                        nh.flags |= RouteNextHopFlags::Onlink;
                    }
                    if let Some(g) = h.gateway {
                        nh.attributes.push(RouteAttribute::Gateway(route_addr(g)));
                    }
                    if let Some(e) = &h.encap {
                        nh.attributes.extend(encap_attrs(e));
                    }
                    nhs.push(nh);
                }
                m.attributes.push(RouteAttribute::MultiPath(nhs));
            }
        }
        Ok(m)
    }

    fn tunnel_link_message(
        name: &str,
        kind: TunnelKind,
        mtu: u32,
        mac: [u8; 6],
        port: u16,
    ) -> LinkMessage {
        let mut m = LinkMessage::default();
        m.header.flags = LinkFlags::Up;
        m.header.change_mask = LinkFlags::Up;
        m.attributes.push(LinkAttribute::IfName(name.to_string()));
        m.attributes.push(LinkAttribute::Mtu(mtu));
        let info = match kind {
            TunnelKind::Vxlan => {
                m.attributes.push(LinkAttribute::Address(mac.to_vec()));
                vec![
                    LinkInfo::Kind(InfoKind::Vxlan),
                    LinkInfo::Data(InfoData::Vxlan(vec![
                        InfoVxlan::CollectMetadata(true),
                        InfoVxlan::Port(port),
                        InfoVxlan::Learning(false),
                    ])),
                ]
            }
            TunnelKind::Geneve => {
                m.attributes.push(LinkAttribute::Address(mac.to_vec()));
                vec![
                    LinkInfo::Kind(InfoKind::Geneve),
                    LinkInfo::Data(InfoData::Geneve(vec![
                        InfoGeneve::CollectMetadata,
                        InfoGeneve::Port(port),
                    ])),
                ]
            }
            TunnelKind::Ipip => vec![
                LinkInfo::Kind(InfoKind::IpIp),
                LinkInfo::Data(InfoData::IpTunnel(vec![InfoIpTunnel::CollectMetadata])),
            ],
            // Protocol 0 is mode any: IPv4 and IPv6 inside.
            TunnelKind::Ip6Ip => vec![
                LinkInfo::Kind(InfoKind::Ip6Tnl),
                LinkInfo::Data(InfoData::IpTunnel(vec![
                    InfoIpTunnel::CollectMetadata,
                    InfoIpTunnel::Protocol(netlink_packet_route::IpProtocol::from(0)),
                ])),
            ],
        };
        m.attributes.push(LinkAttribute::LinkInfo(info));
        m
    }

    fn set_link(&mut self, name: &str, attr: LinkAttribute) -> Result<RouteNetlinkMessage> {
        let mut m = LinkMessage::default();
        m.header.index = self.ifindex(name)?;
        m.attributes.push(attr);
        Ok(RouteNetlinkMessage::SetLink(m))
    }

    fn rule_message(r: &Rule) -> RuleMessage {
        let mut m = RuleMessage::default();
        m.header.family = match r.family {
            Family::V4 => AddressFamily::Inet,
            Family::V6 => AddressFamily::Inet6,
        };
        m.header.table = u8::try_from(r.table).unwrap_or(0);
        m.header.action = RuleAction::ToTable;
        m.attributes.push(RuleAttribute::Priority(r.priority));
        m.attributes.push(RuleAttribute::Table(r.table));
        m
    }

    fn neighbour_message(&mut self, device: &str, address: IpAddr) -> Result<NeighbourMessage> {
        let mut m = NeighbourMessage::default();
        m.header.family = match address {
            IpAddr::V4(_) => AddressFamily::Inet,
            IpAddr::V6(_) => AddressFamily::Inet6,
        };
        m.header.ifindex = self.ifindex(device)?;
        m.header.state = NeighbourState::Permanent;
        m.header.kind = RouteType::Unicast;
        m.attributes
            .push(NeighbourAttribute::Destination(match address {
                IpAddr::V4(v) => NeighbourAddress::Inet(v),
                IpAddr::V6(v) => NeighbourAddress::Inet6(v),
            }));
        Ok(m)
    }
}
