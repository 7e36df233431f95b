//! The rtnetlink executor: reads what the kernel holds and sends single writes.
//!
//! [`NetlinkKernel`] owns a current-thread tokio runtime and one netlink connection, bound to
//! the network namespace of the thread that created it. Its methods block: from async code,
//! call them through `spawn_blocking` or from a dedicated thread. Pod-side interfaces are
//! reached through a short-lived thread that `setns`es into the pod's namespace
//! ([`in_netns`]).

use std::collections::HashMap;
use std::fs::File;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use futures::StreamExt;
use ipnet::IpNet;
use netlink_packet_core::{
    NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST, NetlinkMessage,
    NetlinkPayload, Nla,
};
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

use crate::Kernel;
use crate::cni;
use crate::error::{Error, Result};
use crate::model::{
    CniState, Encap, Family, Hop, KernelState, Link, LinkKind, Neighbour, Op, PodLink, ReadScope,
    Route, Rule,
};
use crate::types::TunnelKind;

const RT_TABLE_MAIN: u32 = 254;
const RTAX_MTU_LOCK: u32 = 1 << 2;
const ENODEV: i32 = 19;

/// Runs `f` on a new thread that first enters the network namespace at `netns` (a path such as
/// `/run/netns/NAME` or `/proc/PID/ns/net`). The calling thread's namespace is untouched.
pub fn in_netns<T, F>(netns: &Path, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let file = File::open(netns).map_err(|e| Error::Io {
        op: format!("open netns {}", netns.display()),
        source: e,
    })?;
    let what = format!("setns {}", netns.display());
    let handle = std::thread::spawn(move || -> Result<T> {
        nix::sched::setns(&file, nix::sched::CloneFlags::CLONE_NEWNET)
            .map_err(|e| Error::kernel(what, e as i32))?;
        Ok(f())
    });
    handle
        .join()
        .map_err(|_| Error::Netlink("namespace thread panicked".into()))?
}

/// What this kernel can create (probed by creating and deleting a throwaway device).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Probe {
    /// Flow-based VXLAN.
    pub vxlan: bool,
    /// Flow-based GENEVE.
    pub geneve: bool,
    /// Flow-based IPIP.
    pub ipip: bool,
    /// WireGuard devices (the adapter never creates them; reported for information).
    pub wireguard: bool,
    /// Why each missing kind failed (with errno and its class).
    pub missing: Vec<String>,
}

/// rtnetlink implementation of [`Kernel`].
#[derive(Debug)]
pub struct NetlinkKernel {
    rt: tokio::runtime::Runtime,
    handle: rtnetlink::Handle,
    index: HashMap<String, u32>,
}

fn io_err(op: &str, e: std::io::Error) -> Error {
    match e.raw_os_error() {
        Some(errno) => Error::kernel(op, errno),
        None => Error::Netlink(format!("{op}: {e}")),
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

fn from_route_addr(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(v) => Some(IpAddr::V4(*v)),
        RouteAddress::Inet6(v) => Some(IpAddr::V6(*v)),
        _ => None,
    }
}

fn encap_attrs(e: &Encap) -> Vec<RouteAttribute> {
    match e.dst {
        IpAddr::V4(d) => {
            let mut list = vec![
                RouteLwTunnelEncap::Ip(RouteIpTunnel::Id(e.id)),
                RouteLwTunnelEncap::Ip(RouteIpTunnel::Destination(d)),
            ];
            if e.csum {
                list.push(RouteLwTunnelEncap::Ip(RouteIpTunnel::Flags(
                    RouteIpTunnelFlags::Checksum,
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
            ];
            if e.csum {
                list.push(RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Flags(
                    RouteIp6TunnelFlags::Checksum,
                )));
            }
            vec![
                RouteAttribute::EncapType(RouteLwEnCapType::Ip6),
                RouteAttribute::Encap(list),
            ]
        }
    }
}

/// `TUNNEL_CSUM` in the big-endian `LWTUNNEL_IP{,6}_FLAGS` attribute.
const TUNNEL_CSUM: u16 = 0x01;

fn parse_encap(attrs: &[RouteAttribute]) -> Option<Encap> {
    let list = attrs.iter().find_map(|a| match a {
        RouteAttribute::Encap(v) => Some(v),
        _ => None,
    })?;
    let mut id = 0u64;
    let mut dst = None;
    let mut csum = false;
    for e in list {
        match e {
            RouteLwTunnelEncap::Ip(RouteIpTunnel::Id(i)) => id = *i,
            RouteLwTunnelEncap::Ip(RouteIpTunnel::Destination(d)) => dst = Some(IpAddr::V4(*d)),
            RouteLwTunnelEncap::Ip(RouteIpTunnel::Flags(f)) => {
                csum = f.contains(RouteIpTunnelFlags::Checksum)
            }
            RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Id(i)) => id = *i,
            RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Destination(d)) => dst = Some(IpAddr::V6(*d)),
            RouteLwTunnelEncap::Ip6(RouteIp6Tunnel::Flags(f)) => {
                csum = f.contains(RouteIp6TunnelFlags::Checksum)
            }
            // Inside RTA_MULTIPATH the parser does not know the per-hop encap type and keeps
            // raw attributes: LWTUNNEL_IP{,6}_ID = 1 (be64), LWTUNNEL_IP{,6}_DST = 2,
            // LWTUNNEL_IP{,6}_FLAGS = 6 (be16).
            RouteLwTunnelEncap::Other(nla) => {
                let mut value = vec![0u8; nla.value_len()];
                nla.emit_value(&mut value);
                match (nla.kind() & 0x3fff, value.len()) {
                    (1, 8) => {
                        let mut b = [0u8; 8];
                        b.copy_from_slice(&value);
                        id = u64::from_be_bytes(b);
                    }
                    (2, 4) => {
                        let mut b = [0u8; 4];
                        b.copy_from_slice(&value);
                        dst = Some(IpAddr::from(b));
                    }
                    (2, 16) => {
                        let mut b = [0u8; 16];
                        b.copy_from_slice(&value);
                        dst = Some(IpAddr::from(b));
                    }
                    (6, 2) => {
                        csum = u16::from_be_bytes([value[0], value[1]]) & TUNNEL_CSUM != 0;
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
    dst.map(|dst| Encap { id, dst, csum })
}

fn parse_gateway(attrs: &[RouteAttribute]) -> Option<IpAddr> {
    attrs.iter().find_map(|a| match a {
        RouteAttribute::Gateway(g) => from_route_addr(g),
        _ => None,
    })
}

fn link_kind(info: &[LinkInfo]) -> LinkKind {
    for i in info {
        if let LinkInfo::Kind(k) = i {
            return match k {
                InfoKind::Vxlan => LinkKind::Tunnel(TunnelKind::Vxlan),
                InfoKind::Geneve => LinkKind::Tunnel(TunnelKind::Geneve),
                InfoKind::IpIp => LinkKind::Tunnel(TunnelKind::Ipip),
                InfoKind::Bridge => LinkKind::Bridge,
                InfoKind::Veth => LinkKind::Veth,
                InfoKind::Wireguard => LinkKind::Wireguard,
                other => LinkKind::Other(format!("{other:?}").to_lowercase()),
            };
        }
    }
    LinkKind::Other(String::new())
}

/// Parses links; masters are resolved to names.
fn parse_links(msgs: Vec<RouteNetlinkMessage>) -> Vec<Link> {
    let mut raw: Vec<(Link, Option<u32>)> = Vec::new();
    for m in msgs {
        if let RouteNetlinkMessage::NewLink(l) = m {
            let mut link = Link {
                name: String::new(),
                index: l.header.index,
                kind: LinkKind::Other(String::new()),
                mtu: 0,
                mac: None,
                master: None,
            };
            let mut master = None;
            for a in &l.attributes {
                match a {
                    LinkAttribute::IfName(n) => link.name = n.clone(),
                    LinkAttribute::Mtu(m) => link.mtu = *m,
                    LinkAttribute::Address(b) => {
                        if let Ok(mac) = <[u8; 6]>::try_from(b.as_slice()) {
                            link.mac = Some(mac);
                        }
                    }
                    LinkAttribute::Controller(i) => master = Some(*i),
                    LinkAttribute::LinkInfo(info) => link.kind = link_kind(info),
                    _ => {}
                }
            }
            raw.push((link, master));
        }
    }
    let names: HashMap<u32, String> = raw.iter().map(|(l, _)| (l.index, l.name.clone())).collect();
    raw.into_iter()
        .map(|(mut l, m)| {
            l.master = m.and_then(|i| names.get(&i).cloned());
            l
        })
        .collect()
}

fn parse_route(m: &RouteMessage, names: &HashMap<u32, String>) -> Option<Route> {
    if m.header.kind != RouteType::Unicast {
        return None;
    }
    let table = m
        .attributes
        .iter()
        .find_map(|a| match a {
            RouteAttribute::Table(t) => Some(*t),
            _ => None,
        })
        .unwrap_or(u32::from(m.header.table));
    let dst_addr = m.attributes.iter().find_map(|a| match a {
        RouteAttribute::Destination(d) => from_route_addr(d),
        _ => None,
    });
    let dst_addr = match (dst_addr, m.header.address_family) {
        (Some(a), _) => a,
        (None, AddressFamily::Inet) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        (None, AddressFamily::Inet6) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        _ => return None,
    };
    let destination = IpNet::new(dst_addr, m.header.destination_prefix_length).ok()?;
    let mut mtu = None;
    let mut locked = false;
    for a in &m.attributes {
        if let RouteAttribute::Metrics(ms) = a {
            for x in ms {
                match x {
                    RouteMetric::Mtu(v) => mtu = Some(*v),
                    RouteMetric::Lock(bits) => locked = bits & RTAX_MTU_LOCK != 0,
                    _ => {}
                }
            }
        }
    }
    let name = |i: u32| names.get(&i).cloned().unwrap_or_else(|| format!("if{i}"));
    let mut hops = Vec::new();
    let multipath = m.attributes.iter().find_map(|a| match a {
        RouteAttribute::MultiPath(v) => Some(v),
        _ => None,
    });
    if let Some(nhs) = multipath {
        for nh in nhs {
            hops.push(Hop {
                device: name(nh.interface_index),
                gateway: parse_gateway(&nh.attributes),
                onlink: nh.flags.contains(RouteNextHopFlags::Onlink),
                encap: parse_encap(&nh.attributes),
            });
        }
    } else if let Some(oif) = m.attributes.iter().find_map(|a| match a {
        RouteAttribute::Oif(i) => Some(*i),
        _ => None,
    }) {
        hops.push(Hop {
            device: name(oif),
            gateway: parse_gateway(&m.attributes),
            onlink: m.header.flags.contains(RouteFlags::Onlink),
            encap: parse_encap(&m.attributes),
        });
    }
    hops.sort();
    Some(Route {
        table,
        destination,
        protocol: u8::from(m.header.protocol),
        mtu,
        mtu_locked: locked && mtu.is_some(),
        hops,
    })
}

async fn exchange(
    handle: &mut rtnetlink::Handle,
    msg: RouteNetlinkMessage,
    flags: u16,
    what: &str,
) -> Result<Vec<RouteNetlinkMessage>> {
    let mut req = NetlinkMessage::from(msg);
    req.header.flags = flags;
    let mut stream = handle
        .request(req)
        .map_err(|e| Error::Netlink(format!("{what}: {e}")))?;
    let mut out = Vec::new();
    while let Some(m) = stream.next().await {
        match m.payload {
            NetlinkPayload::InnerMessage(x) => out.push(x),
            NetlinkPayload::Error(e) => {
                if let Some(code) = e.code {
                    return Err(Error::kernel(what, code.get().saturating_abs()));
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

impl NetlinkKernel {
    /// Opens a netlink connection in the calling thread's network namespace.
    pub fn new() -> Result<Self> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .map_err(|e| io_err("tokio runtime", e))?;
        let (conn, handle, _) = {
            let _guard = rt.enter();
            rtnetlink::new_connection().map_err(|e| io_err("netlink socket", e))?
        };
        rt.spawn(conn);
        Ok(NetlinkKernel {
            rt,
            handle,
            index: HashMap::new(),
        })
    }

    fn request(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
        what: &str,
    ) -> Result<Vec<RouteNetlinkMessage>> {
        let handle = &mut self.handle;
        self.rt.block_on(exchange(handle, msg, flags, what))
    }

    fn write(&mut self, msg: RouteNetlinkMessage, extra: u16, what: &str) -> Result<()> {
        self.request(msg, NLM_F_REQUEST | NLM_F_ACK | extra, what)
            .map(drop)
    }

    fn dump(&mut self, msg: RouteNetlinkMessage, what: &str) -> Result<Vec<RouteNetlinkMessage>> {
        self.request(msg, NLM_F_REQUEST | NLM_F_DUMP, what)
    }

    /// All links of the namespace.
    pub fn links(&mut self) -> Result<Vec<Link>> {
        let msgs = self.dump(
            RouteNetlinkMessage::GetLink(LinkMessage::default()),
            "dump links",
        )?;
        let links = parse_links(msgs);
        self.index = links.iter().map(|l| (l.name.clone(), l.index)).collect();
        Ok(links)
    }

    fn ifindex(&mut self, name: &str) -> Result<u32> {
        if let Some(i) = self.index.get(name) {
            return Ok(*i);
        }
        let mut m = LinkMessage::default();
        m.attributes.push(LinkAttribute::IfName(name.to_string()));
        let what = format!("get link {name}");
        let msgs = self.request(RouteNetlinkMessage::GetLink(m), NLM_F_REQUEST, &what)?;
        let idx = parse_links(msgs)
            .into_iter()
            .find(|l| l.name == name)
            .map(|l| l.index)
            .ok_or_else(|| Error::kernel(what, ENODEV))?;
        self.index.insert(name.to_string(), idx);
        Ok(idx)
    }

    /// All unicast routes of `tables` (both families).
    pub fn routes(&mut self, tables: &[u32]) -> Result<Vec<Route>> {
        let names: HashMap<u32, String> = self
            .links()?
            .into_iter()
            .map(|l| (l.index, l.name))
            .collect();
        let mut out = Vec::new();
        for fam in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut m = RouteMessage::default();
            m.header.address_family = fam;
            let msgs = self.dump(RouteNetlinkMessage::GetRoute(m), "dump routes")?;
            for msg in msgs {
                if let RouteNetlinkMessage::NewRoute(r) = msg {
                    if let Some(route) = parse_route(&r, &names) {
                        if tables.contains(&route.table) {
                            out.push(route);
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    fn rules(&mut self, table: u32) -> Result<Vec<Rule>> {
        let mut out = Vec::new();
        for (fam, f) in [
            (AddressFamily::Inet, Family::V4),
            (AddressFamily::Inet6, Family::V6),
        ] {
            let mut m = RuleMessage::default();
            m.header.family = fam;
            let msgs = self.dump(RouteNetlinkMessage::GetRule(m), "dump rules")?;
            for msg in msgs {
                if let RouteNetlinkMessage::NewRule(r) = msg {
                    let t = r
                        .attributes
                        .iter()
                        .find_map(|a| match a {
                            RuleAttribute::Table(t) => Some(*t),
                            _ => None,
                        })
                        .unwrap_or(u32::from(r.header.table));
                    let p = r
                        .attributes
                        .iter()
                        .find_map(|a| match a {
                            RuleAttribute::Priority(p) => Some(*p),
                            _ => None,
                        })
                        .unwrap_or(0);
                    if t == table {
                        out.push(Rule {
                            family: f,
                            priority: p,
                            table: t,
                        });
                    }
                }
            }
        }
        Ok(out)
    }

    fn neighbours(&mut self, devices: &[String], links: &[Link]) -> Result<Vec<Neighbour>> {
        let names: HashMap<u32, &str> = links
            .iter()
            .filter(|l| devices.contains(&l.name))
            .map(|l| (l.index, l.name.as_str()))
            .collect();
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for fam in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut m = NeighbourMessage::default();
            m.header.family = fam;
            let msgs = self.dump(RouteNetlinkMessage::GetNeighbour(m), "dump neighbours")?;
            for msg in msgs {
                if let RouteNetlinkMessage::NewNeighbour(n) = msg {
                    let Some(dev) = names.get(&n.header.ifindex) else {
                        continue;
                    };
                    if n.header.state != NeighbourState::Permanent {
                        continue;
                    }
                    let mut address = None;
                    let mut mac = None;
                    for a in &n.attributes {
                        match a {
                            NeighbourAttribute::Destination(NeighbourAddress::Inet(v)) => {
                                address = Some(IpAddr::V4(*v))
                            }
                            NeighbourAttribute::Destination(NeighbourAddress::Inet6(v)) => {
                                address = Some(IpAddr::V6(*v))
                            }
                            NeighbourAttribute::LinkLayerAddress(b) => {
                                mac = <[u8; 6]>::try_from(b.as_slice()).ok()
                            }
                            _ => {}
                        }
                    }
                    if let (Some(address), Some(mac)) = (address, mac) {
                        out.push(Neighbour {
                            device: dev.to_string(),
                            address,
                            mac,
                        });
                    }
                }
            }
        }
        out.sort();
        Ok(out)
    }

    /// Probes which flow-based tunnel kinds this kernel can create (creates and deletes
    /// `umtuprobe*` devices in the current namespace).
    pub fn probe(&mut self) -> Probe {
        let mut p = Probe::default();
        let kinds: [(&str, &str, Option<TunnelKind>); 4] = [
            ("vxlan", "umtuprobevx", Some(TunnelKind::Vxlan)),
            ("geneve", "umtuprobege", Some(TunnelKind::Geneve)),
            ("ipip", "umtuprobeip", Some(TunnelKind::Ipip)),
            ("wireguard", "umtuprobewg", None),
        ];
        for (label, name, kind) in kinds {
            let name = name.to_string();
            let res = match kind {
                Some(k) => self.apply(&Op::CreateTunnel {
                    name: name.clone(),
                    kind: k,
                    mtu: 1280,
                    mac: [0x0a, 0x58, 0, 0, 0, 1],
                    port: 47000,
                }),
                None => {
                    let mut m = LinkMessage::default();
                    m.attributes.push(LinkAttribute::IfName(name.clone()));
                    m.attributes
                        .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(
                            InfoKind::Wireguard,
                        )]));
                    self.write(
                        RouteNetlinkMessage::NewLink(m),
                        NLM_F_CREATE | NLM_F_EXCL,
                        "link add type wireguard",
                    )
                }
            };
            let ok = match res {
                Ok(()) => {
                    let _ = self.apply(&Op::DeleteLink { link: name });
                    true
                }
                Err(e) => {
                    p.missing.push(format!("{label}: {e}"));
                    false
                }
            };
            match label {
                "vxlan" => p.vxlan = ok,
                "geneve" => p.geneve = ok,
                "ipip" => p.ipip = ok,
                _ => p.wireguard = ok,
            }
        }
        p
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
        };
        m.attributes.push(LinkAttribute::LinkInfo(info));
        m
    }

    fn set_link(&mut self, name: &str, attr: LinkAttribute, what: &str) -> Result<()> {
        let mut m = LinkMessage::default();
        m.header.index = self.ifindex(name)?;
        m.attributes.push(attr);
        self.write(RouteNetlinkMessage::SetLink(m), 0, what)
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

/// Reads the MTU of `ifname` inside the namespace at `netns` (`None` when either is absent).
pub fn pod_link_mtu(netns: &Path, ifname: &str) -> Result<Option<u32>> {
    if !netns.exists() {
        return Ok(None);
    }
    let name = ifname.to_string();
    in_netns(netns, move || -> Result<Option<u32>> {
        let mut k = NetlinkKernel::new()?;
        Ok(k.links()?
            .into_iter()
            .find(|l| l.name == name)
            .map(|l| l.mtu))
    })?
}

/// Sets the MTU of `ifname` inside the namespace at `netns`.
pub fn set_pod_link_mtu(netns: &Path, ifname: &str, mtu: u32) -> Result<()> {
    let name = ifname.to_string();
    in_netns(netns, move || -> Result<()> {
        let mut k = NetlinkKernel::new()?;
        k.apply(&Op::SetMtu { link: name, mtu })
    })?
}

fn read_cni(path: &Path) -> Result<CniState> {
    match std::fs::read_to_string(path) {
        Ok(text) => cni::read_mtu(&text)
            .map(CniState::Mtu)
            .map_err(|reason| Error::Cni {
                path: path.display().to_string(),
                reason,
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(CniState::Missing),
        Err(e) => Err(Error::Io {
            op: format!("read {}", path.display()),
            source: e,
        }),
    }
}

fn write_cni(path: &Path, mtu: u32) -> Result<()> {
    let io = |op: &str, e| Error::Io {
        op: format!("{op} {}", path.display()),
        source: e,
    };
    let text = std::fs::read_to_string(path).map_err(|e| io("read", e))?;
    let out = cni::set_mtu(&text, mtu).map_err(|reason| Error::Cni {
        path: path.display().to_string(),
        reason,
    })?;
    let mut tmp: PathBuf = path.to_path_buf();
    let fname = path
        .file_name()
        .map(|f| format!(".{}.tmp", f.to_string_lossy()))
        .unwrap_or_else(|| ".cni.tmp".into());
    tmp.set_file_name(fname);
    std::fs::write(&tmp, out).map_err(|e| io("write", e))?;
    std::fs::rename(&tmp, path).map_err(|e| io("rename", e))
}

impl Kernel for NetlinkKernel {
    fn read(&mut self, scope: &ReadScope) -> Result<KernelState> {
        let links = self.links()?;
        let all = self.routes(&[scope.table, RT_TABLE_MAIN])?;
        let (routes, main_routes): (Vec<Route>, Vec<Route>) =
            all.into_iter().partition(|r| r.table == scope.table);
        let routes = if scope.table == RT_TABLE_MAIN {
            main_routes.clone()
        } else {
            routes
        };
        let rules = self.rules(scope.table)?;
        let neighbours = self.neighbours(&scope.neighbour_devices, &links)?;
        let mut pod_links = Vec::with_capacity(scope.pods.len());
        for (ns, ifname) in &scope.pods {
            pod_links.push(PodLink {
                netns: ns.clone(),
                ifname: ifname.clone(),
                mtu: pod_link_mtu(ns, ifname)?,
            });
        }
        let cni = match &scope.cni {
            Some(p) => Some((p.clone(), read_cni(p)?)),
            None => None,
        };
        Ok(KernelState {
            links,
            routes,
            main_routes,
            rules,
            neighbours,
            pod_links,
            cni,
        })
    }

    fn apply(&mut self, op: &Op) -> Result<()> {
        let what = op.to_string();
        match op {
            Op::CreateTunnel {
                name,
                kind,
                mtu,
                mac,
                port,
            } => {
                self.index.remove(name);
                let m = Self::tunnel_link_message(name, *kind, *mtu, *mac, *port);
                self.write(
                    RouteNetlinkMessage::NewLink(m),
                    NLM_F_CREATE | NLM_F_EXCL,
                    &what,
                )
            }
            Op::CreateBridge { name, mtu } => {
                self.index.remove(name);
                let mut m = LinkMessage::default();
                m.header.flags = LinkFlags::Up;
                m.header.change_mask = LinkFlags::Up;
                m.attributes.push(LinkAttribute::IfName(name.clone()));
                m.attributes.push(LinkAttribute::Mtu(*mtu));
                m.attributes
                    .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(
                        InfoKind::Bridge,
                    )]));
                self.write(
                    RouteNetlinkMessage::NewLink(m),
                    NLM_F_CREATE | NLM_F_EXCL,
                    &what,
                )
            }
            Op::SetMtu { link, mtu } => self.set_link(link, LinkAttribute::Mtu(*mtu), &what),
            Op::SetMac { link, mac } => {
                self.set_link(link, LinkAttribute::Address(mac.to_vec()), &what)
            }
            Op::SetMaster { link, master } => {
                let idx = self.ifindex(master)?;
                self.set_link(link, LinkAttribute::Controller(idx), &what)
            }
            Op::DeleteLink { link } => {
                let mut m = LinkMessage::default();
                m.header.index = self.ifindex(link)?;
                self.index.remove(link);
                self.write(RouteNetlinkMessage::DelLink(m), 0, &what)
            }
            Op::AddRule(r) => self.write(
                RouteNetlinkMessage::NewRule(Self::rule_message(r)),
                NLM_F_CREATE | NLM_F_EXCL,
                &what,
            ),
            Op::DeleteRule(r) => self.write(
                RouteNetlinkMessage::DelRule(Self::rule_message(r)),
                0,
                &what,
            ),
            Op::ReplaceRoute(r) => {
                let m = self.route_message(r)?;
                self.write(
                    RouteNetlinkMessage::NewRoute(m),
                    NLM_F_CREATE | NLM_F_REPLACE,
                    &what,
                )
            }
            Op::DeleteRoute {
                table,
                destination,
                protocol,
            } => {
                let mut m = RouteMessage::default();
                m.header.address_family = family_of_net(destination);
                m.header.destination_prefix_length = destination.prefix_len();
                m.header.table = u8::try_from(*table).unwrap_or(0);
                m.header.protocol = RouteProtocol::from(*protocol);
                m.header.scope = RouteScope::NoWhere;
                m.attributes.push(RouteAttribute::Table(*table));
                m.attributes
                    .push(RouteAttribute::Destination(route_addr(destination.addr())));
                self.write(RouteNetlinkMessage::DelRoute(m), 0, &what)
            }
            Op::ReplaceNeighbour(n) => {
                let mut m = self.neighbour_message(&n.device, n.address)?;
                m.attributes
                    .push(NeighbourAttribute::LinkLayerAddress(n.mac.to_vec()));
                self.write(
                    RouteNetlinkMessage::NewNeighbour(m),
                    NLM_F_CREATE | NLM_F_REPLACE,
                    &what,
                )
            }
            Op::DeleteNeighbour { device, address } => {
                let m = self.neighbour_message(device, *address)?;
                self.write(RouteNetlinkMessage::DelNeighbour(m), 0, &what)
            }
            Op::SetPodMtu { netns, ifname, mtu } => set_pod_link_mtu(netns, ifname, *mtu),
            Op::SetCniMtu { path, mtu } => write_cni(path, *mtu),
        }
    }
}
