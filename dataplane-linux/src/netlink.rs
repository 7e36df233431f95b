//! The rtnetlink executor: reads what the kernel holds, builds the message of each write, and
//! sends the writes of one phase in batches.
//!
//! [`NetlinkKernel`] owns one blocking netlink socket, bound to the network namespace of the
//! thread that created it. Its methods block: from async code, call them through
//! `spawn_blocking` or from a dedicated thread. Pod-side interfaces are reached through a
//! short-lived thread that `setns`es into the pod's namespace ([`in_netns`]).

use std::collections::HashMap;
use std::fs::File;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ipnet::IpNet;
use netlink_packet_core::{
    NLM_F_ACK, NLM_F_CREATE, NLM_F_DUMP, NLM_F_EXCL, NLM_F_REPLACE, NLM_F_REQUEST,
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
use crate::error::{Error, ErrorKind, Result};
use crate::model::{
    CniState, Encap, Family, KernelState, Link, LinkKind, Neighbour, Op, PodLink, ReadScope, Route,
    Rule,
};
use crate::route_dump;
use crate::socket::{Batch, Socket};
use crate::types::TunnelKind;

const RT_TABLE_MAIN: u32 = 254;
pub(crate) const RTM_NEWROUTE: u16 = 24;
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
    /// Flow-based IPIP over IPv4.
    pub ipip: bool,
    /// Flow-based IPIP over IPv6 (`ip6tnl`).
    pub ip6tnl: bool,
    /// WireGuard devices (the adapter never creates them; reported for information).
    pub wireguard: bool,
    /// Why each missing kind failed (with errno and its class).
    pub missing: Vec<String>,
}

/// Writes sent to the kernel in one `sendmsg` at most: enough to make the per-message system
/// call cost vanish, few enough that the error answers of a batch in which every write fails
/// fit the socket's receive buffer.
const BATCH_WRITES: usize = 128;

/// rtnetlink implementation of [`Kernel`].
#[derive(Debug)]
pub struct NetlinkKernel {
    socket: Socket,
    index: HashMap<String, u32>,
}

/// How one write reaches the kernel.
enum Write<'a> {
    /// A netlink message with its flags, on the kernel's socket.
    Message(RouteNetlinkMessage, u16),
    /// A write performed elsewhere.
    Elsewhere(Elsewhere<'a>),
}

/// A write that is not a message on the kernel's socket.
enum Elsewhere<'a> {
    /// A pod interface's MTU, set from inside the pod's namespace.
    PodMtu(&'a Path, &'a str, u32),
    /// The `mtu` of a CNI configuration file.
    CniMtu(&'a Path, u32),
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

fn link_kind(info: &[LinkInfo]) -> LinkKind {
    for i in info {
        if let LinkInfo::Kind(k) = i {
            return match k {
                InfoKind::Vxlan => LinkKind::Tunnel(TunnelKind::Vxlan),
                InfoKind::Geneve => LinkKind::Tunnel(TunnelKind::Geneve),
                InfoKind::IpIp => LinkKind::Tunnel(TunnelKind::Ipip),
                InfoKind::Ip6Tnl => LinkKind::Tunnel(TunnelKind::Ip6Ip),
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
pub(crate) fn parse_links(msgs: Vec<RouteNetlinkMessage>) -> Vec<Link> {
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

impl NetlinkKernel {
    /// Opens a netlink socket in the calling thread's network namespace.
    pub fn new() -> Result<Self> {
        Ok(NetlinkKernel {
            socket: Socket::open()?,
            index: HashMap::new(),
        })
    }

    fn request(
        &mut self,
        msg: RouteNetlinkMessage,
        flags: u16,
        what: &str,
    ) -> Result<Vec<RouteNetlinkMessage>> {
        self.socket.request(msg, flags, what)
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
        let links = self.links()?;
        self.routes_over(tables, &links)
    }

    /// All unicast routes of `tables`, their devices named after `links`.
    fn routes_over(&mut self, tables: &[u32], links: &[Link]) -> Result<Vec<Route>> {
        let names: HashMap<u32, String> = links.iter().map(|l| (l.index, l.name.clone())).collect();
        let mut out = Vec::new();
        for fam in [AddressFamily::Inet, AddressFamily::Inet6] {
            let mut m = RouteMessage::default();
            m.header.address_family = fam;
            let request = RouteNetlinkMessage::GetRoute(m);
            self.socket
                .dump_raw(request, "dump routes", |message_type, payload| {
                    if message_type != RTM_NEWROUTE {
                        return;
                    }
                    if let Some(route) = route_dump::parse_route(payload, &names) {
                        if tables.contains(&route.table) {
                            out.push(route);
                        }
                    }
                })?;
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
        let kinds: [(&str, &str, Option<TunnelKind>); 5] = [
            ("vxlan", "umtuprobevx", Some(TunnelKind::Vxlan)),
            ("geneve", "umtuprobege", Some(TunnelKind::Geneve)),
            ("ipip", "umtuprobeip", Some(TunnelKind::Ipip)),
            ("ip6tnl", "umtuprobe6", Some(TunnelKind::Ip6Ip)),
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
                "ip6tnl" => p.ip6tnl = ok,
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
        let all = self.routes_over(&[scope.table, RT_TABLE_MAIN], &links)?;
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
        match self.prepare(op)? {
            Write::Message(msg, flags) => self.request(msg, flags, &op.to_string()).map(drop),
            Write::Elsewhere(w) => perform_elsewhere(w),
        }
    }

    /// Sends the phase's netlink writes in batches of up to 128, in order. A write
    /// naming a device whose index is not known yet (one created or deleted earlier in the
    /// phase) and a write outside the socket (a pod's namespace, a CNI file) first wait for
    /// every earlier write of the phase. Stops after the batch holding the first failure.
    fn apply_phase(&mut self, ops: &[Op]) -> Result<()> {
        let describe = |i: usize| ops.get(i).map_or_else(String::new, Op::to_string);
        let mut batch = Batch::default();
        for (i, op) in ops.iter().enumerate() {
            if !self.devices_known(op) {
                self.socket.send_batch(&mut batch, describe)?;
            }
            let write = match self.prepare(op) {
                Ok(w) => w,
                Err(e) => {
                    self.socket.send_batch(&mut batch, describe)?;
                    return Err(e);
                }
            };
            match write {
                Write::Message(msg, flags) => {
                    self.socket.queue(&mut batch, msg, flags, i);
                    if batch.len() >= BATCH_WRITES {
                        self.socket.send_batch(&mut batch, describe)?;
                    }
                }
                Write::Elsewhere(w) => {
                    self.socket.send_batch(&mut batch, describe)?;
                    perform_elsewhere(w)?;
                }
            }
        }
        self.socket.send_batch(&mut batch, describe)
    }

    /// Sends the step's deletions in batches of up to 128, in order, as
    /// [`Kernel::apply_phase`] does; a deletion refused as absent is collected, any other
    /// refusal stops the step after its batch.
    fn remove_phase(&mut self, ops: &[Op]) -> Result<Vec<(usize, Error)>> {
        let mut removal = Removal {
            ops,
            batch: Batch::default(),
            absent: Vec::new(),
        };
        for (i, op) in ops.iter().enumerate() {
            if !self.devices_known(op) {
                removal.flush(self)?;
            }
            let write = match self.prepare(op) {
                Ok(w) => w,
                Err(e) => {
                    removal.flush(self)?;
                    removal.judge(i, e)?;
                    continue;
                }
            };
            match write {
                Write::Message(msg, flags) => {
                    self.socket.queue(&mut removal.batch, msg, flags, i);
                    if removal.batch.len() >= BATCH_WRITES {
                        removal.flush(self)?;
                    }
                }
                Write::Elsewhere(w) => {
                    removal.flush(self)?;
                    if let Err(e) = perform_elsewhere(w) {
                        removal.judge(i, e)?;
                    }
                }
            }
        }
        removal.flush(self)?;
        Ok(removal.absent)
    }
}

/// A removal step in flight: its deletions, the batch being filled, and those found absent.
struct Removal<'a> {
    ops: &'a [Op],
    batch: Batch,
    absent: Vec<(usize, Error)>,
}

impl Removal<'_> {
    /// Sends the batch; its refusals are judged in order.
    fn flush(&mut self, kernel: &mut NetlinkKernel) -> Result<()> {
        let ops = self.ops;
        let describe = |i: usize| ops.get(i).map_or_else(String::new, Op::to_string);
        let refused = kernel
            .socket
            .send_batch_refusals(&mut self.batch, describe)?;
        for (i, errno) in refused {
            self.judge(i, Error::kernel(describe(i), errno))?;
        }
        Ok(())
    }

    /// A failed deletion: absence is collected, anything else is the step's error.
    fn judge(&mut self, i: usize, e: Error) -> Result<()> {
        if e.kind() == Some(ErrorKind::Absent) {
            self.absent.push((i, e));
            Ok(())
        } else {
            Err(e)
        }
    }
}

/// Performs a write that is not a message on the kernel's socket.
fn perform_elsewhere(write: Elsewhere<'_>) -> Result<()> {
    match write {
        Elsewhere::PodMtu(netns, ifname, mtu) => set_pod_link_mtu(netns, ifname, mtu),
        Elsewhere::CniMtu(path, mtu) => write_cni(path, mtu),
    }
}

impl NetlinkKernel {
    /// Whether every device `op` names has a known index, so that its message can be built
    /// without asking the kernel.
    fn devices_known(&self, op: &Op) -> bool {
        let known = |name: &str| self.index.contains_key(name);
        match op {
            Op::SetMtu { link, .. } | Op::SetMac { link, .. } | Op::DeleteLink { link } => {
                known(link)
            }
            Op::SetMaster { link, master } => known(link) && known(master),
            Op::ReplaceRoute(r) => r.hops.iter().all(|h| known(&h.device)),
            Op::ReplaceNeighbour(n) => known(&n.device),
            Op::DeleteNeighbour { device, .. } => known(device),
            Op::CreateTunnel { .. }
            | Op::CreateBridge { .. }
            | Op::AddRule(_)
            | Op::DeleteRule(_)
            | Op::DeleteRoute { .. }
            | Op::SetPodMtu { .. }
            | Op::SetCniMtu { .. } => true,
        }
    }

    /// How `op` reaches the kernel: its netlink message and flags (looking up device indexes
    /// as needed), or the write to perform elsewhere.
    fn prepare<'a>(&mut self, op: &'a Op) -> Result<Write<'a>> {
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
}
