//! Kernel-side model: what the kernel holds ([`KernelState`]) and the writes the planner emits
//! ([`Op`]). Pure data shared by the planner, the netlink executor and the fake.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;

use ipnet::IpNet;

use crate::types::{Settings, TunnelKind, format_mac};

/// Kind of a link as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// A shared tunnel device.
    Tunnel(TunnelKind),
    /// A bridge.
    Bridge,
    /// A veth.
    Veth,
    /// A WireGuard device.
    Wireguard,
    /// Anything else (physical devices have no kind: `Other("")`).
    Other(String),
}

/// A network interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Name.
    pub name: String,
    /// Interface index.
    pub index: u32,
    /// Kind.
    pub kind: LinkKind,
    /// MTU.
    pub mtu: u32,
    /// Hardware address, when Ethernet-like.
    pub mac: Option<[u8; 6]>,
    /// Name of its master (bridge), if any.
    pub master: Option<String>,
}

/// Address family of rules and routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Family {
    /// IPv4.
    V4,
    /// IPv6.
    V6,
}

impl Family {
    /// Family of an address.
    pub fn of(addr: IpAddr) -> Family {
        match addr {
            IpAddr::V4(_) => Family::V4,
            IpAddr::V6(_) => Family::V6,
        }
    }
}

/// Lightweight-tunnel IP encapsulation of a next hop (`encap ip|ip6 id <id> dst <dst> ttl <ttl>
/// [csum] [df]`; `ip6` when the outer destination is an IPv6 address, its TTL the hop limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Encap {
    /// Tunnel id (VNI).
    pub id: u64,
    /// Outer destination (the peer's underlay address).
    pub dst: IpAddr,
    /// The outer UDP header carries a checksum (`csum`, the tunnel key's `TUNNEL_CSUM` flag).
    /// Without it a flow-based VXLAN or GENEVE device sends UDP with a zero checksum, which its
    /// peer drops over IPv6 (RFC 8200 §8.1 requires the checksum; the devices' IPv6 sockets
    /// accept a zero one only with `udp6zerocsumrx`, which the adapter does not set), so it is
    /// set for UDP tunnels over IPv6 and left off over IPv4.
    pub csum: bool,
    /// The outer IPv4 header carries Don't Fragment (the tunnel key's `TUNNEL_DONT_FRAGMENT`
    /// flag, which flow-based devices read; their own `df` setting is not used in flow mode).
    /// Set for IPIP over IPv4: an outer packet too big for a hop of the underlay is dropped with
    /// an ICMP "fragmentation needed" that the node's path-MTU cache takes, and the IPIP device
    /// tells the inner sender (the pod) the tunnel's path MTU on its next packet. Left off for
    /// VXLAN and GENEVE: they tell only a sender behind a bridge port, and the node forwards
    /// the pods' packets without its learned path MTUs (`ip_forward_use_pmtu` is off), so with
    /// DF a hop narrower than the plan would lose every pod packet above it; without DF the
    /// underlay fragments them and they arrive (the probes still find the hop: they send DF
    /// packets on the underlay itself). IPv6 has no such bit: its routers never fragment.
    pub df: bool,
    /// The outer header's TTL (hop limit over IPv6). Written explicitly: a flow-based GENEVE
    /// device takes the tunnel key's TTL as it is, so the kernel's default of 0 sends outer
    /// packets that the first router of a routed underlay drops (VXLAN and IPIP put the route's
    /// hop limit in place of a 0, GENEVE does not).
    pub ttl: u8,
}

/// The outer TTL the adapter writes: the usual default hop limit of IP.
pub const ENCAP_TTL: u8 = 64;

/// One next hop of a kernel route.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Hop {
    /// Output device name.
    pub device: String,
    /// Gateway (`via`), if any.
    pub gateway: Option<IpAddr>,
    /// `onlink` flag.
    pub onlink: bool,
    /// Encapsulation, if any.
    pub encap: Option<Encap>,
}

/// A kernel route (unicast), as far as the adapter cares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Routing table.
    pub table: u32,
    /// Destination prefix.
    pub destination: IpNet,
    /// Route protocol number.
    pub protocol: u8,
    /// MTU metric, if set.
    pub mtu: Option<u32>,
    /// Whether the MTU metric is locked.
    pub mtu_locked: bool,
    /// Next hops, sorted (more than one: multipath).
    pub hops: Vec<Hop>,
}

impl Route {
    /// Same next hops, MTU and lock (protocol and table aside).
    pub fn same_forwarding(&self, other: &Route) -> bool {
        self.hops == other.hops && self.mtu == other.mtu && self.mtu_locked == other.mtu_locked
    }
}

/// A policy rule `priority P lookup T` (no selectors).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rule {
    /// Family.
    pub family: Family,
    /// Priority.
    pub priority: u32,
    /// Table looked up.
    pub table: u32,
}

/// A permanent neighbour entry.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Neighbour {
    /// Device.
    pub device: String,
    /// Protocol address.
    pub address: IpAddr,
    /// Link-layer address.
    pub mac: [u8; 6],
}

/// An interface inside a pod's network namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodLink {
    /// The pod's network namespace path.
    pub netns: PathBuf,
    /// Interface name inside the pod.
    pub ifname: String,
    /// Its MTU; `None` when the namespace or interface is not there.
    pub mtu: Option<u32>,
}

/// What the CNI configuration file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CniState {
    /// The file does not exist (the adapter edits it, never creates it).
    Missing,
    /// The common `mtu` of the plugins that carry one; `None` when they disagree or lack it.
    Mtu(Option<u32>),
}

/// Everything the adapter reads from the kernel for one reconcile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KernelState {
    /// All links of the node's namespace.
    pub links: Vec<Link>,
    /// Routes of the adapter's table (any protocol).
    pub routes: Vec<Route>,
    /// Routes of the `main` table (underlay lookups).
    pub main_routes: Vec<Route>,
    /// Rules looking up the adapter's table.
    pub rules: Vec<Rule>,
    /// Permanent neighbours on the devices in scope.
    pub neighbours: Vec<Neighbour>,
    /// Pod-side interfaces in scope.
    pub pod_links: Vec<PodLink>,
    /// The CNI configuration in scope.
    pub cni: Option<(PathBuf, CniState)>,
}

impl KernelState {
    /// Link by name.
    pub fn link(&self, name: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.name == name)
    }
}

/// What [`crate::Kernel::read`] must cover.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadScope {
    /// The adapter's table.
    pub table: u32,
    /// Devices whose permanent neighbours are read.
    pub neighbour_devices: Vec<String>,
    /// Pod interfaces to read: (netns path, ifname).
    pub pods: Vec<(PathBuf, String)>,
    /// CNI configuration to read.
    pub cni: Option<PathBuf>,
}

impl ReadScope {
    /// What must be read to find everything the adapter owns without a desired state (for
    /// [`crate::plan::removal`]): its table (routes and the rules looking it up; `main` comes
    /// with every read) and the neighbours of its shared devices ([`Settings::managed_devices`]).
    /// Pod-side interfaces and the CNI configuration are left out: removal never touches them.
    pub fn owned(settings: &Settings) -> ReadScope {
        ReadScope {
            table: settings.table,
            neighbour_devices: settings.managed_devices.clone(),
            pods: Vec::new(),
            cni: None,
        }
    }
}

/// One kernel (or file) write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Create a flow-based tunnel device, up, with its MTU and MAC (ignored for IPIP).
    CreateTunnel {
        /// Name.
        name: String,
        /// Kind.
        kind: TunnelKind,
        /// MTU.
        mtu: u32,
        /// MAC (VXLAN/GENEVE).
        mac: [u8; 6],
        /// UDP destination port (VXLAN/GENEVE).
        port: u16,
    },
    /// Create a bridge, up, with its MTU.
    CreateBridge {
        /// Name.
        name: String,
        /// MTU.
        mtu: u32,
    },
    /// Set a link's MTU.
    SetMtu {
        /// Link name.
        link: String,
        /// MTU.
        mtu: u32,
    },
    /// Set a link's hardware address (a shared Ethernet tunnel device whose MAC is not the one
    /// derived from the node's identity address).
    SetMac {
        /// Link name.
        link: String,
        /// MAC.
        mac: [u8; 6],
    },
    /// Attach a link to a bridge.
    SetMaster {
        /// Link name.
        link: String,
        /// Bridge name.
        master: String,
    },
    /// Delete a link.
    DeleteLink {
        /// Link name.
        link: String,
    },
    /// Add a policy rule.
    AddRule(Rule),
    /// Delete a policy rule.
    DeleteRule(Rule),
    /// Create or replace a route.
    ReplaceRoute(Route),
    /// Delete a route.
    DeleteRoute {
        /// Table.
        table: u32,
        /// Destination.
        destination: IpNet,
        /// Protocol.
        protocol: u8,
    },
    /// Create or replace a permanent neighbour.
    ReplaceNeighbour(Neighbour),
    /// Delete a neighbour.
    DeleteNeighbour {
        /// Device.
        device: String,
        /// Protocol address.
        address: IpAddr,
    },
    /// Set the MTU of an interface inside a pod's namespace.
    SetPodMtu {
        /// Namespace path.
        netns: PathBuf,
        /// Interface name.
        ifname: String,
        /// MTU.
        mtu: u32,
    },
    /// Set `mtu` in the CNI configuration.
    SetCniMtu {
        /// File.
        path: PathBuf,
        /// MTU.
        mtu: u32,
    },
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::CreateTunnel {
                name,
                kind,
                mtu,
                mac,
                port,
            } => match kind {
                TunnelKind::Ipip => write!(f, "link add {name} type ipip external mtu {mtu}"),
                TunnelKind::Ip6Ip => {
                    write!(f, "link add {name} type ip6tnl external mode any mtu {mtu}")
                }
                _ => write!(
                    f,
                    "link add {name} type {} external dstport {port} mtu {mtu} address {}",
                    format!("{kind:?}").to_lowercase(),
                    format_mac(mac)
                ),
            },
            Op::CreateBridge { name, mtu } => write!(f, "link add {name} type bridge mtu {mtu}"),
            Op::SetMtu { link, mtu } => write!(f, "link set {link} mtu {mtu}"),
            Op::SetMac { link, mac } => write!(f, "link set {link} address {}", format_mac(mac)),
            Op::SetMaster { link, master } => write!(f, "link set {link} master {master}"),
            Op::DeleteLink { link } => write!(f, "link del {link}"),
            Op::AddRule(r) => write!(
                f,
                "rule add {:?} priority {} lookup {}",
                r.family, r.priority, r.table
            ),
            Op::DeleteRule(r) => write!(
                f,
                "rule del {:?} priority {} lookup {}",
                r.family, r.priority, r.table
            ),
            Op::ReplaceRoute(r) => {
                write!(f, "route replace {} table {}", r.destination, r.table)?;
                for h in &r.hops {
                    if let Some(e) = h.encap {
                        let family = if e.dst.is_ipv6() { "ip6" } else { "ip" };
                        write!(
                            f,
                            " [encap {family} id {} dst {} ttl {}",
                            e.id, e.dst, e.ttl
                        )?;
                        if e.csum {
                            write!(f, " csum")?;
                        }
                        if e.df {
                            write!(f, " df")?;
                        }
                    } else {
                        write!(f, " [")?;
                    }
                    if let Some(g) = h.gateway {
                        write!(f, " via {g}")?;
                    }
                    write!(
                        f,
                        " dev {}{}]",
                        h.device,
                        if h.onlink { " onlink" } else { "" }
                    )?;
                }
                if let Some(m) = r.mtu {
                    write!(f, " mtu {}{m}", if r.mtu_locked { "lock " } else { "" })?;
                }
                write!(f, " proto {}", r.protocol)
            }
            Op::DeleteRoute {
                table,
                destination,
                protocol,
            } => write!(f, "route del {destination} table {table} proto {protocol}"),
            Op::ReplaceNeighbour(n) => write!(
                f,
                "neigh replace {} lladdr {} dev {} nud permanent",
                n.address,
                format_mac(&n.mac),
                n.device
            ),
            Op::DeleteNeighbour { device, address } => {
                write!(f, "neigh del {address} dev {device}")
            }
            Op::SetPodMtu { netns, ifname, mtu } => {
                write!(f, "netns {}: link set {ifname} mtu {mtu}", netns.display())
            }
            Op::SetCniMtu { path, mtu } => write!(f, "cni {}: mtu {mtu}", path.display()),
        }
    }
}
