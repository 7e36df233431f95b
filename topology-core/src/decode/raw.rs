//! The decoder's output: one raw object per recognised document, fields as written (CIDRs
//! canonical, invalid MTUs failed closed to 576) with where they were written.

use crate::diag::{Diagnostic, SourceLoc};
use crate::vocab::{Kind, Protocol, SITE_LABEL_KEY};
use ipnet::IpNet;
use smallvec::SmallVec;
use std::net::IpAddr;
use std::sync::Arc;

/// A node's addresses: one in most clusters (two when dual-stack), held inline: a cluster holds
/// tens of thousands of nodes, and an allocation per list would cost more than the address.
pub type Addrs = SmallVec<[IpAddr; 1]>;
/// A node's pod CIDRs: one in most clusters (two when dual-stack), held inline.
pub type Cidrs = SmallVec<[IpNet; 1]>;

/// A `tunnelMTU` as read: valid, or invalid (fails closed to 576).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawCap {
    /// The effective value (576 when invalid).
    pub mtu: u32,
    /// The value as written, when it was invalid.
    pub invalid: Option<String>,
    /// Where it was written.
    pub loc: Option<SourceLoc>,
}

/// An underlay annotation as read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawUnderlay {
    /// The effective value (576 when invalid).
    pub mtu: u32,
    /// The value as written, when it was invalid.
    pub invalid: Option<String>,
}

/// A node's `path-mtu` annotation as read: its entries, each peer once at its lowest value, in
/// the order first written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawPathMtus {
    /// The entries.
    pub entries: Vec<RawPathEntry>,
    /// The annotation's line (0 when read from an API server).
    pub line: u32,
}

/// One `PEER=MTU` entry of a `path-mtu` annotation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawPathEntry {
    /// The peer's node name.
    pub peer: Arc<str>,
    /// The effective value (576 when the written one was invalid).
    pub mtu: u32,
    /// The value as written, when it was invalid.
    pub invalid: Option<String>,
}

/// Metadata every raw object has.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Meta {
    /// `metadata.name`.
    pub name: String,
    /// Where the object starts.
    pub loc: Option<SourceLoc>,
    /// Findings about this object's own fields (they come and go with the object).
    pub diags: Vec<Diagnostic>,
}

/// A Site.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawSite {
    /// Metadata.
    pub meta: Meta,
    /// `spec.nodeCidrs`, canonical.
    pub node_cidrs: Vec<IpNet>,
    /// `spec.podCidrAssignments[].cidrBlocks`, canonical.
    pub pod_blocks: Vec<IpNet>,
    /// `spec.manageCniPlugin` (default true).
    pub manage_cni: bool,
    /// `spec.localCidrs`, canonical.
    pub local_cidrs: Vec<IpNet>,
    /// `spec.tunnelProtocol` (`None` = Auto).
    pub protocol: Option<Protocol>,
    /// `spec.tunnelMTU`.
    pub cap: Option<RawCap>,
}

/// `GatewayPool.status.nodes[]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawStatusNode {
    /// `name`.
    pub name: String,
    /// `siteName`.
    pub site_name: Option<String>,
    /// `internalIPs`.
    pub internal_ips: Vec<IpAddr>,
    /// `externalIPs`.
    pub external_ips: Vec<IpAddr>,
    /// `podCIDRs`.
    pub pod_cidrs: Vec<IpNet>,
    /// `gatewayWireguardPort`.
    pub wg_port: Option<u16>,
    /// Where the entry starts.
    pub loc: Option<SourceLoc>,
}

/// A GatewayPool.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawPool {
    /// Metadata.
    pub meta: Meta,
    /// `spec.type` is `Internal`.
    pub internal: bool,
    /// `spec.nodeSelector` pairs.
    pub node_selector: Vec<(String, String)>,
    /// `spec.routedCidrs`, canonical.
    pub routed_cidrs: Vec<IpNet>,
    /// `spec.tunnelProtocol` (`None` = Auto).
    pub protocol: Option<Protocol>,
    /// `spec.tunnelMTU`.
    pub cap: Option<RawCap>,
    /// `status.nodes`.
    pub status_nodes: Vec<RawStatusNode>,
}

/// A `v1` Node.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawNode {
    /// Metadata.
    pub meta: Meta,
    /// `metadata.labels`; keys and values shared with the other objects of the decode that
    /// write them (the Site and pool labels repeat on every node). A boxed slice: a Node object
    /// stays within its allocator size class (Nodes are most of a cluster).
    pub labels: Box<[(Arc<str>, Arc<str>)]>,
    /// `mtu.unbounded-cloud.io/underlay-mtu`.
    pub underlay: Option<RawUnderlay>,
    /// `mtu.unbounded-cloud.io/underlay-mtu-max`.
    pub underlay_max: Option<RawUnderlay>,
    /// `mtu.unbounded-cloud.io/path-mtu` (boxed: most Nodes have none).
    pub path_mtu: Option<Box<RawPathMtus>>,
    /// `status.addresses` of type `InternalIP`.
    pub internal_ips: Addrs,
    /// `status.addresses` of type `ExternalIP`.
    pub external_ips: Addrs,
    /// `spec.podCIDRs` (or `spec.podCIDR`).
    pub pod_cidrs: Cidrs,
}

/// A SiteNodeSlice entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawSliceNode {
    /// `name`.
    pub name: String,
    /// `internalIPs` (held inline, as a Node's addresses are: a slice lists tens of thousands).
    pub internal_ips: Addrs,
    /// `podCIDRs`, held inline.
    pub pod_cidrs: Cidrs,
    /// Where the entry starts.
    pub loc: Option<SourceLoc>,
}

/// A SiteNodeSlice.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawSlice {
    /// Metadata.
    pub meta: Meta,
    /// `siteName`.
    pub site_name: Option<String>,
    /// `nodes`.
    pub nodes: Vec<RawSliceNode>,
}

/// A GatewayPoolNode.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawGatewayPoolNode {
    /// Metadata.
    pub meta: Meta,
    /// `spec.nodeName`, else `metadata.name`.
    pub node_name: String,
    /// The `mtu.unbounded-cloud.io/forwarding-mtus` annotation.
    pub published: Vec<(IpNet, u32)>,
    /// Where that annotation was written.
    pub published_loc: Option<SourceLoc>,
}

/// A member name with where it was written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Member {
    /// The name.
    pub name: String,
    /// The field path, e.g. `spec.sites[1]`.
    pub field: String,
    /// Where.
    pub loc: Option<SourceLoc>,
}

/// A SitePeering, SiteGatewayPoolAssignment or GatewayPoolPeering.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawRelation {
    /// Metadata.
    pub meta: Meta,
    /// `spec.enabled` (default true).
    pub enabled: bool,
    /// `spec.sites` (peerings, assignments).
    pub sites: Vec<Member>,
    /// `spec.gatewayPools` (assignments, pool peerings).
    pub pools: Vec<Member>,
    /// `spec.meshNodes` (SitePeering; default true).
    pub mesh_nodes: bool,
    /// `spec.tunnelProtocol` (`None` = Auto).
    pub protocol: Option<Protocol>,
    /// `spec.tunnelMTU`.
    pub cap: Option<RawCap>,
}

/// One decoded object.
///
/// Each kind is boxed: a cluster's objects are mostly Nodes, and an enum as large as its largest
/// kind would hold every Node in a Pool's or a peering's size.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RawObject {
    /// Site
    Site(Box<RawSite>),
    /// GatewayPool
    Pool(Box<RawPool>),
    /// Node
    Node(Box<RawNode>),
    /// SiteNodeSlice
    Slice(Box<RawSlice>),
    /// GatewayPoolNode
    GatewayPoolNode(Box<RawGatewayPoolNode>),
    /// SitePeering
    SitePeering(Box<RawRelation>),
    /// SiteGatewayPoolAssignment
    Assignment(Box<RawRelation>),
    /// GatewayPoolPeering
    PoolPeering(Box<RawRelation>),
}

impl RawObject {
    /// The object's kind.
    pub fn kind(&self) -> Kind {
        match self {
            RawObject::Site(_) => Kind::Site,
            RawObject::Pool(_) => Kind::GatewayPool,
            RawObject::Node(_) => Kind::Node,
            RawObject::Slice(_) => Kind::SiteNodeSlice,
            RawObject::GatewayPoolNode(_) => Kind::GatewayPoolNode,
            RawObject::SitePeering(_) => Kind::SitePeering,
            RawObject::Assignment(_) => Kind::SiteGatewayPoolAssignment,
            RawObject::PoolPeering(_) => Kind::GatewayPoolPeering,
        }
    }

    /// The object's metadata.
    pub fn meta(&self) -> &Meta {
        match self {
            RawObject::Site(o) => &o.meta,
            RawObject::Pool(o) => &o.meta,
            RawObject::Node(o) => &o.meta,
            RawObject::Slice(o) => &o.meta,
            RawObject::GatewayPoolNode(o) => &o.meta,
            RawObject::SitePeering(o) | RawObject::Assignment(o) | RawObject::PoolPeering(o) => {
                &o.meta
            }
        }
    }

    /// Mutable metadata.
    pub fn meta_mut(&mut self) -> &mut Meta {
        match self {
            RawObject::Site(o) => &mut o.meta,
            RawObject::Pool(o) => &mut o.meta,
            RawObject::Node(o) => &mut o.meta,
            RawObject::Slice(o) => &mut o.meta,
            RawObject::GatewayPoolNode(o) => &mut o.meta,
            RawObject::SitePeering(o) | RawObject::Assignment(o) | RawObject::PoolPeering(o) => {
                &mut o.meta
            }
        }
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        &self.meta().name
    }

    /// `Kind/name`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.kind(), self.name())
    }
}

impl Meta {
    /// An empty `Meta` held by an object while its fields are read; the reader replaces it once
    /// every field is read, when the object's findings are known.
    pub(super) fn placeholder() -> Meta {
        Meta {
            name: String::new(),
            loc: None,
            diags: Vec::new(),
        }
    }
}

/// The Site label of a raw node, if any.
pub fn site_label(node: &RawNode) -> Option<&str> {
    node.labels
        .iter()
        .find(|(k, _)| &**k == SITE_LABEL_KEY)
        .map(|(_, v)| &**v)
}

impl RawObject {
    /// Whether two objects say the same, wherever they were written: equal once every source
    /// location is forgotten. Two copies of one manifest (a file given twice over, overlapping
    /// exports) are one object; copies that differ in anything read are not.
    pub fn same_content(&self, other: &RawObject) -> bool {
        self.kind() == other.kind() && self.unlocated() == other.unlocated()
    }

    /// A copy with every source location removed.
    fn unlocated(&self) -> RawObject {
        let mut o = self.clone();
        let meta = o.meta_mut();
        meta.loc = None;
        for d in &mut meta.diags {
            d.source = None;
        }
        let cap = |c: &mut Option<RawCap>| {
            if let Some(c) = c {
                c.loc = None;
            }
        };
        match &mut o {
            RawObject::Site(s) => cap(&mut s.cap),
            RawObject::Pool(p) => {
                cap(&mut p.cap);
                for n in &mut p.status_nodes {
                    n.loc = None;
                }
            }
            RawObject::Slice(s) => {
                for n in &mut s.nodes {
                    n.loc = None;
                }
            }
            RawObject::SitePeering(r) | RawObject::Assignment(r) | RawObject::PoolPeering(r) => {
                cap(&mut r.cap);
                for m in r.sites.iter_mut().chain(r.pools.iter_mut()) {
                    m.loc = None;
                }
            }
            RawObject::GatewayPoolNode(g) => g.published_loc = None,
            RawObject::Node(_) => {}
        }
        o
    }
}
