//! The validated topology: arenas sorted by name, typed IDs, membership and linear indexes.
//! Built from raw objects in any order; the result depends only on the set of objects.

pub use crate::decode::{Addrs, Cidrs};
use crate::decode::{
    Member, RawCap, RawGatewayPoolNode, RawNode, RawObject, RawPool, RawRelation, RawSite,
    RawSlice, RawUnderlay,
};
use crate::diag::{Code, Diagnostic, SourceLoc, sort_diagnostics};
use crate::ids::*;
use crate::mtu::Mtu;
use crate::vocab::{Kind, Protocol};
use ipnet::IpNet;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::sync::Arc;

mod caps;
mod nodes;
pub use nodes::NoneResolved;

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
    /// The learned prefixes and their origins, built on first use (gateway paths only).
    pub(crate) prefixes: std::sync::OnceLock<crate::net::PrefixTable>,
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
        Builder::default().build(objects, decode_diags)
    }
}

#[derive(Default)]
struct Builder {
    diags: Vec<Diagnostic>,
    /// The names of Node objects given twice with different content (ignored), sorted.
    duplicate_nodes: Vec<String>,
    /// The distinct label sets of the nodes, each held once: the workers of one Site carry the
    /// same labels, so a node's labels cost a pointer.
    label_sets: FxHashSet<NodeLabels>,
}

fn warn(code: Code, object: &str, field: &str, msg: String, loc: Option<SourceLoc>) -> Diagnostic {
    Diagnostic::new(code, object, field, msg, loc)
}

/// The objects that count, by kind, each kind sorted by name and each name once.
#[derive(Default)]
struct Grouped<'a> {
    sites: Vec<&'a RawSite>,
    pools: Vec<&'a RawPool>,
    nodes: Vec<&'a RawNode>,
    slices: Vec<&'a RawSlice>,
    gpn: Vec<&'a RawGatewayPoolNode>,
    peerings: Vec<&'a RawRelation>,
    assignments: Vec<&'a RawRelation>,
    pool_peerings: Vec<&'a RawRelation>,
}

impl<'a> Grouped<'a> {
    /// Adds the only object of its kind and name (objects come in (kind, name) order).
    fn push(&mut self, o: &'a RawObject) {
        match o {
            RawObject::Site(x) => self.sites.push(x),
            RawObject::Pool(x) => self.pools.push(x),
            RawObject::Node(x) => self.nodes.push(x),
            RawObject::Slice(x) => self.slices.push(x),
            RawObject::GatewayPoolNode(x) => self.gpn.push(x),
            RawObject::SitePeering(x) => self.peerings.push(x),
            RawObject::Assignment(x) => self.assignments.push(x),
            RawObject::PoolPeering(x) => self.pool_peerings.push(x),
        }
    }
}

impl Builder {
    fn build<'a>(
        mut self,
        objects: impl IntoIterator<Item = &'a RawObject>,
        decode_diags: impl IntoIterator<Item = Diagnostic>,
    ) -> Topology {
        self.diags.extend(decode_diags);
        let g = self.group(objects);
        let mut t = Topology::default();
        for s in &g.sites {
            let name: Arc<str> = Arc::from(s.meta.name.as_str());
            t.site_by_name
                .insert(name.clone(), SiteId::from_idx(t.sites.len()));
            t.sites.push(Site {
                name,
                node_cidrs: s.node_cidrs.clone(),
                pod_blocks: s.pod_blocks.clone(),
                local_cidrs: s.local_cidrs.clone(),
                manage_cni: s.manage_cni,
                protocol: s.protocol,
                cap: s.cap.as_ref().map(Cap::from),
                loc: s.meta.loc.clone(),
            });
        }
        for p in &g.pools {
            let name: Arc<str> = Arc::from(p.meta.name.as_str());
            t.pool_by_name
                .insert(name.clone(), PoolId::from_idx(t.pools.len()));
            t.pools.push(Pool {
                name,
                internal: p.internal,
                routed_cidrs: p.routed_cidrs.clone(),
                protocol: p.protocol,
                cap: p.cap.as_ref().map(Cap::from),
                gateways: Vec::new(),
                loc: p.meta.loc.clone(),
            });
        }
        t.site_peerings = self.relations(&t, "SitePeering", &g.peerings, true, false);
        t.assignments = self.relations(&t, "SiteGatewayPoolAssignment", &g.assignments, true, true);
        t.pool_peerings = self.relations(&t, "GatewayPoolPeering", &g.pool_peerings, false, true);
        self.nodes(&mut t, &g.pools, &g.nodes, &g.slices, &g.gpn);
        self.indexes(&mut t);
        self.overlaps(&t);
        self.protocol_conflicts(&t);
        let mut diags = self.diags;
        sort_diagnostics(&mut diags);
        t.diagnostics = diags;
        t
    }

    /// Step 1 of the build: groups the objects by kind and name. A name given twice within a
    /// kind is reported and ignored entirely; an object with `enabled: false` is absent
    /// everywhere, silently.
    fn group<'a>(&mut self, objects: impl IntoIterator<Item = &'a RawObject>) -> Grouped<'a> {
        let mut kinds = Kind::ALL;
        kinds.sort();
        // Each kind's objects in input order, the kinds in their order.
        let mut by_kind: [Vec<(&str, &RawObject)>; Kind::ALL.len()] = Default::default();
        for o in objects {
            if let RawObject::SitePeering(r) | RawObject::Assignment(r) | RawObject::PoolPeering(r) =
                o
                && !r.enabled
            {
                continue;
            }
            let kind = o.kind();
            if let Some(v) = kinds
                .iter()
                .position(|k| *k == kind)
                .and_then(|i| by_kind.get_mut(i))
            {
                v.push((o.name(), o));
            }
        }
        let mut g = Grouped::default();
        for (kind, mut objects) in kinds.into_iter().zip(by_kind) {
            // Generated files and API lists come sorted by name within each kind, each name once:
            // one pass over the names confirms it, and the objects are taken as they are.
            if objects.is_sorted_by(|a, b| a.0 < b.0) {
                for (_, o) in objects {
                    self.take(&mut g, o);
                }
                continue;
            }
            // Otherwise a stable sort brings the copies of a name together, in input order.
            objects.sort_by(|a, b| a.0.cmp(b.0));
            for copies in objects.chunk_by(|a, b| a.0 == b.0) {
                match copies {
                    [(_, o)] => self.take(&mut g, o),
                    [(name, first), rest @ ..]
                        if rest.iter().all(|(_, o)| o.same_content(first)) =>
                    {
                        self.identical(kind, name, copies);
                        // The copy written first (by source, then line) stands for them all,
                        // whatever the order of the sources.
                        let earliest = copies
                            .iter()
                            .map(|(_, o)| *o)
                            .min_by(|a, b| a.meta().loc.cmp(&b.meta().loc))
                            .unwrap_or(first);
                        self.take(&mut g, earliest);
                    }
                    [(name, _), ..] => {
                        if kind == Kind::Node {
                            self.duplicate_nodes.push((*name).to_string());
                        }
                        self.duplicate(kind, name, copies);
                        for (_, o) in copies {
                            self.diags.extend(o.meta().diags.iter().cloned());
                        }
                    }
                    [] => {}
                }
            }
        }
        g
    }

    /// Takes object `o` into the topology, with the findings about its own fields.
    fn take<'a>(&mut self, g: &mut Grouped<'a>, o: &'a RawObject) {
        self.diags.extend(o.meta().diags.iter().cloned());
        g.push(o);
    }

    /// Notes the `copies` of `kind/name` that say the same (more than one): they count once,
    /// as the copy written first.
    fn identical(&mut self, kind: Kind, name: &str, copies: &[(&str, &RawObject)]) {
        let (first, listed) = copies_at(copies);
        self.diags.push(Diagnostic::new(
            Code::DuplicateIdentical,
            format!("{kind}/{name}"),
            "metadata.name",
            format!(
                "{} identical copies of {kind} {name:?}{listed}; they count as one",
                copies.len()
            ),
            first,
        ));
    }

    /// Reports the `copies` of `kind/name` (more than one, not all the same): every copy is
    /// ignored.
    fn duplicate(&mut self, kind: Kind, name: &str, copies: &[(&str, &RawObject)]) {
        let (first, listed) = copies_at(copies);
        self.diags.push(Diagnostic::new(
            Code::Duplicate,
            format!("{kind}/{name}"),
            "metadata.name",
            format!(
                "{} objects of kind {kind} are named {name:?}{listed}; every copy is ignored",
                copies.len()
            ),
            first,
        ));
    }

    fn relations(
        &mut self,
        t: &Topology,
        kind: &str,
        raw: &[&RawRelation],
        has_sites: bool,
        has_pools: bool,
    ) -> Vec<Relation> {
        let mut out = Vec::new();
        for r in raw {
            if !r.enabled {
                continue;
            }
            let object = format!("{kind}/{}", r.meta.name);
            let sites = self.members(&object, "Site", &r.sites, Code::MissingSite, |n| {
                t.site_id(n)
            });
            let pools = self.members(&object, "GatewayPool", &r.pools, Code::MissingPool, |n| {
                t.pool_id(n)
            });
            let relates = match (has_sites, has_pools) {
                (true, false) => sites.len() >= 2,
                (false, true) => pools.len() >= 2,
                _ => !sites.is_empty() && !pools.is_empty(),
            };
            if !relates {
                self.too_few_members(&object, r, has_sites, has_pools, sites.is_empty());
            }
            out.push(Relation {
                name: Arc::from(r.meta.name.as_str()),
                sites,
                pools,
                mesh: r.mesh_nodes,
                protocol: r.protocol,
                cap: r.cap.as_ref().map(Cap::from),
                relates,
                loc: r.meta.loc.clone(),
            });
        }
        out
    }

    /// The members a relation lists (`what`: "Site" or "GatewayPool") that exist, each once,
    /// sorted; one listed twice, or naming nothing (`missing`), is warned about. A set of the
    /// names seen, not a list: a relationship of N members is read in O(N).
    fn members<Id: Ord>(
        &mut self,
        object: &str,
        what: &str,
        listed: &[Member],
        missing: Code,
        find: impl Fn(&str) -> Option<Id>,
    ) -> Vec<Id> {
        let mut ids = Vec::with_capacity(listed.len());
        let mut seen: FxHashSet<&str> = FxHashSet::default();
        for m in listed {
            if !seen.insert(m.name.as_str()) {
                self.diags.push(warn(
                    Code::DuplicateMember,
                    object,
                    &m.field,
                    format!("{what} {} is listed more than once; it counts once", m.name),
                    m.loc.clone(),
                ));
                continue;
            }
            match find(&m.name) {
                Some(id) => ids.push(id),
                None => self.diags.push(warn(
                    missing,
                    object,
                    &m.field,
                    format!("{what} {} does not exist; this member is ignored", m.name),
                    m.loc.clone(),
                )),
            }
        }
        ids.sort();
        ids
    }

    /// Notes that relation `r` relates nothing: fewer than two existing Sites or pools, or no
    /// existing Site or pool where it needs both.
    fn too_few_members(
        &mut self,
        object: &str,
        r: &RawRelation,
        has_sites: bool,
        has_pools: bool,
        no_sites: bool,
    ) {
        let (what, field) = match (has_sites, has_pools) {
            (true, false) => ("fewer than two existing Sites", "spec.sites"),
            (false, true) => ("fewer than two existing pools", "spec.gatewayPools"),
            _ if no_sites => ("no existing Site or no existing pool", "spec.sites"),
            _ => ("no existing Site or no existing pool", "spec.gatewayPools"),
        };
        self.diags.push(warn(
            Code::TooFewMembers,
            object,
            field,
            format!("it is left with {what}, so it relates nothing"),
            r.meta.loc.clone(),
        ));
    }

    fn indexes(&mut self, t: &mut Topology) {
        let ns = t.sites.len();
        let np = t.pools.len();
        t.site_workers = vec![Vec::new(); ns];
        t.site_gateways = vec![Vec::new(); ns];
        for (i, n) in t.nodes.iter().enumerate() {
            let id = NodeId::from_idx(i);
            match n.role {
                Role::Worker => {
                    if let Some(v) = t.site_workers.get_mut(n.site.idx()) {
                        v.push(id);
                    }
                }
                Role::Gateway(p) => {
                    if let Some(v) = t.site_gateways.get_mut(n.site.idx()) {
                        v.push(id);
                    }
                    if let Some(pool) = t.pools.get_mut(p.idx()) {
                        pool.gateways.push(id);
                    }
                }
            }
        }
        t.peerings_of_site = vec![SmallVec::new(); ns];
        for (i, r) in t.site_peerings.iter().enumerate() {
            if !r.relates {
                continue;
            }
            for s in &r.sites {
                if let Some(v) = t.peerings_of_site.get_mut(s.idx()) {
                    v.push(PeeringId::from_idx(i));
                }
            }
        }
        t.assignments_of_site = vec![SmallVec::new(); ns];
        t.assignments_of_pool = vec![SmallVec::new(); np];
        for (i, r) in t.assignments.iter().enumerate() {
            if !r.relates {
                continue;
            }
            for s in &r.sites {
                if let Some(v) = t.assignments_of_site.get_mut(s.idx()) {
                    v.push(AssignmentId::from_idx(i));
                }
            }
            for p in &r.pools {
                if let Some(v) = t.assignments_of_pool.get_mut(p.idx()) {
                    v.push(AssignmentId::from_idx(i));
                }
            }
        }
        t.pool_peerings_of_pool = vec![SmallVec::new(); np];
        for (i, r) in t.pool_peerings.iter().enumerate() {
            if !r.relates {
                continue;
            }
            for p in &r.pools {
                if let Some(v) = t.pool_peerings_of_pool.get_mut(p.idx()) {
                    v.push(PoolPeeringId::from_idx(i));
                }
            }
        }
        // Direct-mesh components: union-find over counting mesh SitePeerings.
        let mut uf = petgraph::unionfind::UnionFind::<usize>::new(ns);
        for r in &t.site_peerings {
            if !(r.relates && r.mesh) {
                continue;
            }
            if let Some(first) = r.sites.first() {
                for s in r.sites.iter().skip(1) {
                    uf.union(first.idx(), s.idx());
                }
            }
        }
        let mut root_to_comp: FxHashMap<usize, CompId> = FxHashMap::default();
        t.comp_of = Vec::with_capacity(ns);
        for s in 0..ns {
            let root = uf.find(s);
            let next = CompId::from_idx(root_to_comp.len());
            let c = *root_to_comp.entry(root).or_insert(next);
            if c == next {
                t.components.push(Component {
                    sites: Vec::new(),
                    cap_objects: Vec::new(),
                    cap: None,
                });
            }
            t.comp_of.push(c);
            if let Some(comp) = t.components.get_mut(c.idx()) {
                comp.sites.push(SiteId::from_idx(s));
            }
        }
        caps::component_caps(t);
    }

    fn overlaps(&mut self, t: &Topology) {
        for (field, pick) in [
            ("spec.nodeCidrs", 0usize),
            ("spec.podCidrAssignments", 1usize),
        ] {
            let mut all: Vec<(IpNet, SiteId)> = Vec::new();
            for (i, s) in t.sites.iter().enumerate() {
                let list = if pick == 0 {
                    &s.node_cidrs
                } else {
                    &s.pod_blocks
                };
                for c in list {
                    all.push((*c, SiteId::from_idx(i)));
                }
            }
            // Prefixes are nested or disjoint: sort by family, address, length and sweep.
            all.sort_by(|a, b| {
                (a.0.network(), a.0.prefix_len(), a.1).cmp(&(b.0.network(), b.0.prefix_len(), b.1))
            });
            let mut open: Vec<(IpNet, SiteId)> = Vec::new();
            let mut pairs: std::collections::BTreeSet<(SiteId, SiteId, IpNet, IpNet)> =
                std::collections::BTreeSet::new();
            for (net, site) in all {
                while let Some((top, _)) = open.last() {
                    if top.contains(&net.network()) && top.prefix_len() <= net.prefix_len() {
                        break;
                    }
                    open.pop();
                }
                for (outer, osite) in &open {
                    if *osite != site {
                        let (a, b, na, nb) = if *osite < site {
                            (*osite, site, *outer, net)
                        } else {
                            (site, *osite, net, *outer)
                        };
                        pairs.insert((a, b, na, nb));
                    }
                }
                open.push((net, site));
            }
            let mut reported: std::collections::BTreeSet<(SiteId, SiteId)> = Default::default();
            for (a, b, na, nb) in pairs {
                if !reported.insert((a, b)) {
                    continue;
                }
                let sb = t.site(b);
                self.diags.push(warn(
                    Code::CidrOverlap,
                    &format!("Site/{}", sb.name),
                    field,
                    format!(
                        "{nb} overlaps {na} of Site/{}; both still count (identical prefixes merge into one route)",
                        t.site(a).name
                    ),
                    sb.loc.clone(),
                ));
            }
        }
    }

    fn protocol_conflicts(&mut self, t: &Topology) {
        // Mesh SitePeerings sharing two Sites, assignments sharing a (Site, pool), pool peerings
        // sharing two pools, that name different explicit protocols.
        let conflict = |a: &Relation, b: &Relation, mesh: bool, sites: bool, pools: bool| -> bool {
            if a.protocol.is_none() || b.protocol.is_none() || a.protocol == b.protocol {
                return false;
            }
            if mesh && !(a.mesh && b.mesh) {
                return false;
            }
            let shared_sites = a.sites.iter().filter(|s| b.sites.contains(s)).count();
            let shared_pools = a.pools.iter().filter(|p| b.pools.contains(p)).count();
            match (sites, pools) {
                (true, false) => shared_sites >= 2,
                (false, true) => shared_pools >= 2,
                _ => shared_sites >= 1 && shared_pools >= 1,
            }
        };
        for (kind, list, sites, pools) in [
            ("SitePeering", &t.site_peerings, true, false),
            ("SiteGatewayPoolAssignment", &t.assignments, true, true),
            ("GatewayPoolPeering", &t.pool_peerings, false, true),
        ] {
            let explicit: Vec<&Relation> = list
                .iter()
                .filter(|r| r.relates && r.protocol.is_some())
                .collect();
            for (i, a) in explicit.iter().enumerate() {
                for b in explicit.iter().skip(i.saturating_add(1)) {
                    if conflict(a, b, kind == "SitePeering", sites, pools) {
                        self.diags.push(warn(
                            Code::ProtocolConflict,
                            &format!("{kind}/{}", b.name),
                            "spec.tunnelProtocol",
                            format!(
                                "{} disagrees with {kind}/{} ({}) on the protocol of links they both govern; {kind}/{} wins (first by name)",
                                b.protocol.map(|p| p.as_str()).unwrap_or("Auto"),
                                a.name,
                                a.protocol.map(|p| p.as_str()).unwrap_or("Auto"),
                                a.name
                            ),
                            b.loc.clone(),
                        ));
                    }
                }
            }
        }
    }
}

/// Where the copies of one name were written: the first (by source, then line), and all of them
/// in that order as ` (a.yaml:3, b.yaml:1)` (empty when none was read from a file).
fn copies_at(copies: &[(&str, &RawObject)]) -> (Option<SourceLoc>, String) {
    let mut at: Vec<&SourceLoc> = copies
        .iter()
        .filter_map(|(_, o)| o.meta().loc.as_ref())
        .collect();
    at.sort();
    let listed = if at.is_empty() {
        String::new()
    } else {
        let all: Vec<String> = at.iter().map(|l| l.to_string()).collect();
        format!(" ({})", all.join(", "))
    };
    (at.first().map(|l| (*l).clone()), listed)
}
