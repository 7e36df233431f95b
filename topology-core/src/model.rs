//! The validated topology: arenas sorted by name, typed IDs, membership and linear indexes.
//! Built from raw objects in any order; the result depends only on the set of objects.

pub use crate::decode::{Addrs, Cidrs};
use crate::decode::{
    Member, RawCap, RawGatewayPoolNode, RawNode, RawObject, RawPool, RawRelation, RawSite,
    RawSlice, RawUnderlay,
};
use crate::diag::{Diagnostic, SourceLoc};
use crate::ids::*;
use crate::mtu::Mtu;
use crate::vocab::Protocol;
use ipnet::IpNet;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::sync::Arc;

mod build;
mod caps;
mod nodes;
mod paths;
pub(crate) mod prefixes;
pub use nodes::NoneResolved;
pub use paths::{PairPath, PathMtu, PathMtus};

/// A name that names nothing (a node, or an object of a kind), with the closest names that do
/// exist: the error every command and library call gives for it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{what} {name} does not exist{}{}", if what == "node" { " (or belongs to no Site)" } else { "" }, crate::schema::did_you_mean(nearest))]
pub struct NoSuchName {
    /// `node`, or a kind (`SitePeering`, ...).
    pub what: String,
    /// The name asked for.
    pub name: String,
    /// The closest existing names (at most three, nearest first).
    pub nearest: Vec<String>,
}

impl NoSuchName {
    /// `name` of `what` is missing; the closest of `candidates` are offered.
    pub fn new<'a>(
        what: impl Into<String>,
        name: &str,
        candidates: impl IntoIterator<Item = &'a str>,
    ) -> NoSuchName {
        NoSuchName {
            what: what.into(),
            name: name.to_string(),
            nearest: crate::schema::nearest_all(name, candidates, 3)
                .into_iter()
                .map(str::to_string)
                .collect(),
        }
    }
}

/// A configured cap (`tunnelMTU`) that counts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cap {
    /// Effective value (576 when the written value was invalid).
    pub mtu: Mtu,
    /// The written value when it was invalid (fail closed).
    pub invalid: Option<String>,
    /// Where it was written.
    pub loc: Option<SourceLoc>,
}

impl From<&RawCap> for Cap {
    fn from(r: &RawCap) -> Self {
        Cap {
            mtu: Mtu::cap_or_min(r.mtu),
            invalid: r.invalid.clone(),
            loc: r.loc.clone(),
        }
    }
}

/// A reference to an object that can carry a cap or a protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjRef {
    /// A Site.
    Site(SiteId),
    /// A GatewayPool.
    Pool(PoolId),
    /// A SitePeering.
    SitePeering(PeeringId),
    /// A SiteGatewayPoolAssignment.
    Assignment(AssignmentId),
    /// A GatewayPoolPeering.
    PoolPeering(PoolPeeringId),
}

/// A Site.
#[derive(Clone, Debug)]
pub struct Site {
    /// Name.
    pub name: Arc<str>,
    /// Node CIDRs.
    pub node_cidrs: Vec<IpNet>,
    /// Pod blocks.
    pub pod_blocks: Vec<IpNet>,
    /// Local CIDRs (cut out of learned routes).
    pub local_cidrs: Vec<IpNet>,
    /// `manageCniPlugin`.
    pub manage_cni: bool,
    /// Explicit protocol (`None` = Auto).
    pub protocol: Option<Protocol>,
    /// `tunnelMTU`.
    pub cap: Option<Cap>,
    /// Where the object starts.
    pub loc: Option<SourceLoc>,
}

/// A GatewayPool.
#[derive(Clone, Debug)]
pub struct Pool {
    /// Name.
    pub name: Arc<str>,
    /// `Internal` pool.
    pub internal: bool,
    /// Routed CIDRs.
    pub routed_cidrs: Vec<IpNet>,
    /// Explicit protocol (`None` = Auto).
    pub protocol: Option<Protocol>,
    /// `tunnelMTU`.
    pub cap: Option<Cap>,
    /// Member gateways, sorted.
    pub gateways: Vec<NodeId>,
    /// Where the object starts.
    pub loc: Option<SourceLoc>,
}

/// A node's role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// A worker.
    Worker,
    /// A gateway of a pool.
    Gateway(PoolId),
}

/// A node's labels: key and value pairs as its Node object writes them.
pub type NodeLabels = Arc<[(Arc<str>, Arc<str>)]>;

/// A node with a Site.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    /// Name.
    pub name: Arc<str>,
    /// Its Site.
    pub site: SiteId,
    /// Worker or gateway.
    pub role: Role,
    /// InternalIPs.
    pub internal_ips: Addrs,
    /// ExternalIPs.
    pub external_ips: Addrs,
    /// Pod CIDRs.
    pub pod_cidrs: Cidrs,
    /// The Node object's labels as written (none for a node only a SiteNodeSlice or a pool's
    /// status names), for label selectors; nodes with equal labels share one set, whose strings
    /// are the decode's.
    pub labels: NodeLabels,
    /// `underlay-mtu` annotation.
    pub underlay: Option<RawUnderlay>,
    /// `underlay-mtu-max` annotation.
    pub underlay_max: Option<RawUnderlay>,
    /// WireGuard port of the gateway (pool status).
    pub wg_port: Option<u16>,
    /// What this gateway published (GatewayPoolNode annotation), sorted by prefix.
    pub published: Vec<(IpNet, Mtu)>,
    /// The GatewayPoolNode whose annotation `published` comes from.
    pub published_by: Option<Arc<str>>,
    /// Where that annotation was written (`file:line`, when read from a file).
    pub published_loc: Option<SourceLoc>,
    /// Where the node was defined.
    pub loc: Option<SourceLoc>,
}

impl NodeInfo {
    /// The pool of a gateway.
    pub fn pool(&self) -> Option<PoolId> {
        match self.role {
            Role::Gateway(p) => Some(p),
            Role::Worker => None,
        }
    }
    /// Whether the node is a gateway.
    pub fn is_gateway(&self) -> bool {
        matches!(self.role, Role::Gateway(_))
    }
    /// The value of label `key`, if the node carries it.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| &**k == key)
            .map(|(_, v)| &**v)
    }
    /// Whether any pod CIDR is IPv6.
    pub fn has_ipv6_pods(&self) -> bool {
        self.pod_cidrs.iter().any(|n| matches!(n, IpNet::V6(_)))
    }
    /// What this gateway published for `prefix`.
    pub fn published_for(&self, prefix: &IpNet) -> Option<Mtu> {
        self.published
            .binary_search_by(|(p, _)| p.cmp(prefix))
            .ok()
            .and_then(|i| self.published.get(i))
            .map(|(_, m)| *m)
    }
}

/// A SitePeering, SiteGatewayPoolAssignment or GatewayPoolPeering that counts.
#[derive(Clone, Debug)]
pub struct Relation {
    /// Name.
    pub name: Arc<str>,
    /// Existing member Sites, sorted, each once.
    pub sites: Vec<SiteId>,
    /// Existing member pools, sorted, each once.
    pub pools: Vec<PoolId>,
    /// `meshNodes` (SitePeering only).
    pub mesh: bool,
    /// Explicit protocol (`None` = Auto).
    pub protocol: Option<Protocol>,
    /// `tunnelMTU`.
    pub cap: Option<Cap>,
    /// Relates its members (enough existing members).
    pub relates: bool,
    /// Where the object starts.
    pub loc: Option<SourceLoc>,
}

/// A direct-mesh component of Sites.
#[derive(Clone, Debug)]
pub struct Component {
    /// Its Sites, sorted.
    pub sites: Vec<SiteId>,
    /// Every object whose cap enters `comp` (Sites and mesh SitePeerings), sorted.
    pub cap_objects: Vec<ObjRef>,
    /// The binding cap: lowest value, first object on ties.
    pub cap: Option<(Mtu, ObjRef)>,
}

/// The validated topology.
#[derive(Debug, Default)]
pub struct Topology {
    /// Sites by name.
    pub sites: Vec<Site>,
    /// Pools by name.
    pub pools: Vec<Pool>,
    /// Nodes with a Site, by name.
    pub nodes: Vec<NodeInfo>,
    /// SitePeerings by name (enabled ones; `relates` says whether they count).
    pub site_peerings: Vec<Relation>,
    /// SiteGatewayPoolAssignments by name.
    pub assignments: Vec<Relation>,
    /// GatewayPoolPeerings by name.
    pub pool_peerings: Vec<Relation>,
    /// Direct-mesh components.
    pub components: Vec<Component>,
    /// Every finding, sorted.
    pub diagnostics: Vec<Diagnostic>,
    /// How many node names the input gave (Node objects, SiteNodeSlice and pool status
    /// entries, each name once), whether or not they resolved.
    pub(crate) named_nodes: usize,
    site_by_name: FxHashMap<Arc<str>, SiteId>,
    pool_by_name: FxHashMap<Arc<str>, PoolId>,
    /// Workers of each Site, sorted.
    pub(crate) site_workers: Vec<Vec<NodeId>>,
    /// Gateways located in each Site, sorted.
    pub(crate) site_gateways: Vec<Vec<NodeId>>,
    /// Counting SitePeerings of each Site (the membership index: one entry per membership).
    pub(crate) peerings_of_site: Vec<SmallVec<[PeeringId; 2]>>,
    /// Counting assignments of each Site.
    pub(crate) assignments_of_site: Vec<SmallVec<[AssignmentId; 2]>>,
    /// Counting assignments of each pool.
    pub(crate) assignments_of_pool: Vec<SmallVec<[AssignmentId; 2]>>,
    /// Counting pool peerings of each pool.
    pub(crate) pool_peerings_of_pool: Vec<SmallVec<[PoolPeeringId; 2]>>,
    /// Component of each Site.
    pub(crate) comp_of: Vec<CompId>,
    /// Per node with a `path-mtu` annotation (sorted by node), its entries about existing peers,
    /// sorted by peer: a side table, since most nodes have none.
    pub(crate) path_mtus: Vec<(NodeId, PathMtus)>,
    /// The learned prefixes and their origins, built on first use (gateway paths only).
    pub(crate) prefixes: std::sync::OnceLock<prefixes::PrefixTable>,
}

impl Topology {
    /// Looks a Site up by name.
    pub fn site_id(&self, name: &str) -> Option<SiteId> {
        self.site_by_name.get(name).copied()
    }
    /// Looks a pool up by name.
    pub fn pool_id(&self, name: &str) -> Option<PoolId> {
        self.pool_by_name.get(name).copied()
    }
    /// Looks a node up by name: a binary search of `nodes`, which are sorted by name, each name
    /// once (a map beside tens of thousands of nodes would cost more memory than their names,
    /// and time at every build).
    pub fn node_id(&self, name: &str) -> Option<NodeId> {
        self.nodes
            .binary_search_by(|n| (*n.name).cmp(name))
            .ok()
            .map(NodeId::from_idx)
    }
    /// Looks a node up by name; a missing one is an error naming the closest nodes.
    pub fn find_node(&self, name: &str) -> Result<NodeId, NoSuchName> {
        self.node_id(name)
            .ok_or_else(|| NoSuchName::new("node", name, self.nodes.iter().map(|n| &*n.name)))
    }
    /// A Site (IDs come from this topology; an out-of-range ID is a caller bug).
    #[allow(clippy::indexing_slicing)]
    pub fn site(&self, id: SiteId) -> &Site {
        &self.sites[id.idx()]
    }
    /// A pool.
    #[allow(clippy::indexing_slicing)]
    pub fn pool(&self, id: PoolId) -> &Pool {
        &self.pools[id.idx()]
    }
    /// A node.
    #[allow(clippy::indexing_slicing)]
    pub fn node(&self, id: NodeId) -> &NodeInfo {
        &self.nodes[id.idx()]
    }
    /// A SitePeering.
    #[allow(clippy::indexing_slicing)]
    pub fn site_peering(&self, id: PeeringId) -> &Relation {
        &self.site_peerings[id.idx()]
    }
    /// An assignment.
    #[allow(clippy::indexing_slicing)]
    pub fn assignment(&self, id: AssignmentId) -> &Relation {
        &self.assignments[id.idx()]
    }
    /// A pool peering.
    #[allow(clippy::indexing_slicing)]
    pub fn pool_peering(&self, id: PoolPeeringId) -> &Relation {
        &self.pool_peerings[id.idx()]
    }
    /// A component.
    #[allow(clippy::indexing_slicing)]
    pub fn component(&self, id: CompId) -> &Component {
        &self.components[id.idx()]
    }
    /// The component of a Site.
    #[allow(clippy::indexing_slicing)]
    pub fn comp(&self, s: SiteId) -> CompId {
        self.comp_of[s.idx()]
    }
    /// Workers of a Site.
    #[allow(clippy::indexing_slicing)]
    pub fn workers_of(&self, s: SiteId) -> &[NodeId] {
        &self.site_workers[s.idx()]
    }
    /// Gateways located in a Site.
    #[allow(clippy::indexing_slicing)]
    pub fn gateways_in(&self, s: SiteId) -> &[NodeId] {
        &self.site_gateways[s.idx()]
    }
    /// Counting SitePeerings listing a Site.
    #[allow(clippy::indexing_slicing)]
    pub fn peerings_of(&self, s: SiteId) -> &[PeeringId] {
        &self.peerings_of_site[s.idx()]
    }
    /// Counting assignments listing a Site.
    #[allow(clippy::indexing_slicing)]
    pub fn assignments_of(&self, s: SiteId) -> &[AssignmentId] {
        &self.assignments_of_site[s.idx()]
    }
    /// Counting assignments listing a pool.
    #[allow(clippy::indexing_slicing)]
    pub fn assignments_of_pool(&self, p: PoolId) -> &[AssignmentId] {
        &self.assignments_of_pool[p.idx()]
    }
    /// Counting pool peerings listing a pool.
    #[allow(clippy::indexing_slicing)]
    pub fn pool_peerings_of(&self, p: PoolId) -> &[PoolPeeringId] {
        &self.pool_peerings_of_pool[p.idx()]
    }

    /// Index entries: every membership of a relationship (its member lists and the per-member
    /// indexes pointing back at it) plus one hub per relationship. A peering of N members costs
    /// 2N + 1 entries, never N².
    pub fn index_entries(&self) -> usize {
        let rel = |rs: &[Relation]| -> usize {
            rs.iter()
                .map(|r| {
                    r.sites
                        .len()
                        .saturating_add(r.pools.len())
                        .saturating_add(1)
                })
                .fold(0usize, usize::saturating_add)
        };
        let idx = |v: &[SmallVec<[PeeringId; 2]>]| {
            v.iter()
                .map(|x| x.len())
                .fold(0usize, usize::saturating_add)
        };
        let idx_a = |v: &[SmallVec<[AssignmentId; 2]>]| {
            v.iter()
                .map(|x| x.len())
                .fold(0usize, usize::saturating_add)
        };
        let idx_p = |v: &[SmallVec<[PoolPeeringId; 2]>]| {
            v.iter()
                .map(|x| x.len())
                .fold(0usize, usize::saturating_add)
        };
        [
            rel(&self.site_peerings),
            rel(&self.assignments),
            rel(&self.pool_peerings),
            idx(&self.peerings_of_site),
            idx_a(&self.assignments_of_site),
            idx_a(&self.assignments_of_pool),
            idx_p(&self.pool_peerings_of_pool),
        ]
        .into_iter()
        .fold(0usize, usize::saturating_add)
    }

    /// The cap an object carries.
    pub fn cap_of(&self, o: ObjRef) -> Option<&Cap> {
        match o {
            ObjRef::Site(s) => self.site(s).cap.as_ref(),
            ObjRef::Pool(p) => self.pool(p).cap.as_ref(),
            ObjRef::SitePeering(r) => self.site_peering(r).cap.as_ref(),
            ObjRef::Assignment(r) => self.assignment(r).cap.as_ref(),
            ObjRef::PoolPeering(r) => self.pool_peering(r).cap.as_ref(),
        }
    }

    /// `Kind/name` of an object.
    pub fn label(&self, o: ObjRef) -> String {
        match o {
            ObjRef::Site(s) => format!("Site/{}", self.site(s).name),
            ObjRef::Pool(p) => format!("GatewayPool/{}", self.pool(p).name),
            ObjRef::SitePeering(r) => format!("SitePeering/{}", self.site_peering(r).name),
            ObjRef::Assignment(r) => {
                format!("SiteGatewayPoolAssignment/{}", self.assignment(r).name)
            }
            ObjRef::PoolPeering(r) => format!("GatewayPoolPeering/{}", self.pool_peering(r).name),
        }
    }

    /// The node's Site name.
    pub fn site_name_of(&self, n: NodeId) -> &str {
        &self.site(self.node(n).site).name
    }

    /// Builds the validated topology from decoded objects (any order) and the decoder's own
    /// diagnostics. Never fails: problems become diagnostics.
    pub fn build<'a>(
        objects: impl IntoIterator<Item = &'a RawObject>,
        decode_diags: impl IntoIterator<Item = Diagnostic>,
    ) -> Topology {
        build::Builder::default().build(objects, decode_diags)
    }
}
