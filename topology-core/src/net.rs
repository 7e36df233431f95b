//! Relations, links and forwarding: who links to whom over which protocol, and which paths
//! traffic takes: breadth-first searches over the pool graph (`search.rs`; next hops towards an
//! origin pool: `toward.rs`), where each gateway pool advertises what its Sites originate to the
//! pools it peers with.
//!
//! [`Net`] is a lazily memoizing view over an immutable [`Topology`]. Pair lookups of two Sites
//! and of two pools are computed on first use and memoized with `(x, y)` and `(y, x)` as one key,
//! so the memo holds only pairs actually queried; a Site and a pool are looked up in the pool's
//! sorted assignments each time (cheaper than a memo entry). Everything that only gateway paths
//! need (the prefix table, the pool-graph searches, learned routes) is built on
//! first use, so a worker whose Site has no assignment pays nothing for it; the prefix table, a
//! function of the topology alone, is kept with the [`Topology`] and shared by every `Net`.

use crate::ids::*;
use crate::model::{ObjRef, Role, Topology};
use crate::mtu::Mtu;
use crate::vocab::Protocol;
use ipnet::IpNet;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::cell::{OnceCell, RefCell};
use std::net::IpAddr;
use std::sync::Arc;

mod search;
mod toward;

/// Settings that shape links: what `Auto` resolves to and the tunnel IP family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinkSettings {
    /// `Auto` on links that cross public addresses (default WireGuard).
    pub public_encap: Protocol,
    /// `Auto` elsewhere (default GENEVE).
    pub private_encap: Protocol,
    /// The outer (tunnel) IP family is IPv6 (default false: IPv4).
    pub ipv6_outer: bool,
}

impl Default for LinkSettings {
    fn default() -> Self {
        LinkSettings {
            public_encap: Protocol::WireGuard,
            private_encap: Protocol::Geneve,
            ipv6_outer: false,
        }
    }
}

/// Kind of a link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LinkKind {
    /// Worker to worker.
    Mesh,
    /// Worker to a gateway of an assigned pool.
    Uplink,
    /// Gateway to a worker of a served Site.
    Delivery,
    /// Gateway to another gateway of its pool.
    PoolMesh,
    /// Gateway to a gateway of a peered pool.
    Transit,
}

impl LinkKind {
    /// The output name.
    pub fn as_str(self) -> &'static str {
        match self {
            LinkKind::Mesh => "mesh",
            LinkKind::Uplink => "uplink",
            LinkKind::Delivery => "delivery",
            LinkKind::PoolMesh => "pool-mesh",
            LinkKind::Transit => "transit",
        }
    }
}

/// Who decided a link's protocol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProtocolSource {
    /// An object's explicit `tunnelProtocol`.
    Object(ObjRef),
    /// `Auto` on a link that crosses public addresses.
    AutoPublic,
    /// `Auto` elsewhere.
    AutoPrivate,
}

/// A tunnel adjacency seen from one end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// The other end.
    pub peer: NodeId,
    /// Kind.
    pub kind: LinkKind,
    /// Protocol.
    pub protocol: Protocol,
    /// Who decided the protocol.
    pub protocol_source: ProtocolSource,
    /// The link crosses public addresses.
    pub public: bool,
    /// This end's address on the link ([`Net::endpoint_addr`]).
    pub local_addr: Option<IpAddr>,
    /// The peer's address on the link: where its tunnel packets are sent.
    pub peer_addr: Option<IpAddr>,
    /// The overhead of this link is the IPv6-outer column ([`Net::link_ipv6_outer`]).
    pub ipv6_outer: bool,
}

/// A node's addresses on one link: its underlay address (where it is reached across
/// the underlay; see [`Net::underlay_addr`]) and where its tunnel
/// packets are sent ([`Net::endpoint_addr`]).
struct LinkAddrs {
    underlay: Option<IpAddr>,
    endpoint: Option<IpAddr>,
}

/// Route types, as `resolve` reports them (`NodePod`, `NodeAddress`, `NodeCidr`, `PodCidr`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RouteType {
    /// A Site's pod block.
    PodCidr,
    /// A Site's node CIDR.
    NodeCidr,
    /// A pool's routed CIDR.
    RoutedCidr,
    /// A linked peer's own pod CIDR.
    NodePod,
    /// A host route to an InternalIP of a delivery peer reached across public addresses (the
    /// underlay cannot route a NAT'd worker's private address).
    NodeAddress,
}

impl RouteType {
    /// The output name.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteType::PodCidr => "PodCidr",
            RouteType::NodeCidr => "NodeCidr",
            RouteType::RoutedCidr => "RoutedCidr",
            RouteType::NodePod => "NodePod",
            RouteType::NodeAddress => "NodeAddress",
        }
    }
}

/// Where a learned prefix leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Dest {
    /// A Site's prefixes.
    Site(SiteId),
    /// A pool's routed CIDRs.
    Pool(PoolId),
}

/// One origin of a learned prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Origin {
    /// Route type.
    pub ty: RouteType,
    /// Destination.
    pub dest: Dest,
}

impl Origin {
    /// The receive-filter class: `NodeCidr` routes are also dropped by network-peered Sites.
    fn class(self) -> (Dest, bool) {
        (self.dest, self.ty == RouteType::NodeCidr)
    }
}

/// A learned (gateway or transit) route before `localCidrs` are cut out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Learned {
    /// The advertised prefix (uncut).
    pub prefix: IpNet,
    /// The origin selected (first of those at the minimum distance).
    pub origin: Origin,
    /// Every origin at the minimum distance (identical prefixes of several Sites merge).
    pub origins: SmallVec<[Origin; 1]>,
    /// Pools on the accepted hop list.
    pub distance: u32,
    /// Selected equal-cost next hops (gateways), sorted.
    pub via: SmallVec<[NodeId; 4]>,
}

/// Pair facts between two Sites.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SitePair {
    /// A mesh SitePeering lists both.
    pub mesh: bool,
    /// Any SitePeering lists both.
    pub network: bool,
    /// Caps of the SitePeerings listing both (every one: the lowest binds).
    pub caps: SmallVec<[(Mtu, ObjRef); 1]>,
    /// First explicit protocol of the mesh SitePeerings listing both (by name).
    pub mesh_protocol: Option<(Protocol, ObjRef)>,
}

/// Caps and protocol of the objects relating a pair (Site and pool, or two pools).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PairCaps {
    /// Caps of the relating objects.
    pub caps: SmallVec<[(Mtu, ObjRef); 1]>,
    /// First explicit protocol among them (by name).
    pub protocol: Option<(Protocol, ObjRef)>,
}

/// A learned prefix that only one Site or pool advertises, by its place in the prefix table:
/// dense (below [`Net::prefix_count`]), so memos per prefix can be rows indexed by it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SolePrefix(u32);

impl SolePrefix {
    /// The index, below [`Net::prefix_count`].
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// The learned prefixes and their origins, in output order. A function of the topology alone,
/// built on first use and kept with it ([`Topology`]), so fresh solvers share it.
#[derive(Debug)]
pub(crate) struct PrefixTable {
    entries: Vec<(IpNet, SmallVec<[Origin; 1]>)>,
    /// Entry by prefix, truncated: prefixes equal in `prefix_order` are those whose
    /// truncations are equal (the entries' prefixes are canonical: decoding truncates them).
    index: FxHashMap<IpNet, u32>,
}

impl PrefixTable {
    fn origins(&self, prefix: &IpNet) -> &[Origin] {
        self.index
            .get(&prefix.trunc())
            .and_then(|i| self.entries.get(usize::try_from(*i).ok()?))
            .map_or(&[], |(_, o)| o.as_slice())
    }
}

type LearnedMemo = FxHashMap<(PoolId, SiteId), LearnedRoutes>;

/// A class of nodes' learned routes, in prefix order, shared by the nodes of the class. A
/// `Vec` sized once from the prefix table: made into an `Arc<[_]>` it would be copied.
pub type LearnedRoutes = Arc<Vec<Learned>>;

/// Gateways of one pool located in one Site: they advertise the same hop lists, so a route
/// asks each class once, not each gateway.
#[derive(Debug)]
struct GatewayClass {
    pool: PoolId,
    site: SiteId,
    /// Sorted.
    gateways: SmallVec<[NodeId; 4]>,
}

/// The gateways of `pools`, by class, in the order of the pools (then of their Sites' first
/// gateways).
fn gateway_classes(topo: &Topology, pools: &[PoolId]) -> Vec<GatewayClass> {
    let mut out: Vec<GatewayClass> = Vec::new();
    for p in pools {
        let first = out.len();
        for g in &topo.pool(*p).gateways {
            let site = topo.node(*g).site;
            match out
                .get_mut(first..)
                .and_then(|cs| cs.iter_mut().find(|c| c.site == site))
            {
                Some(c) => c.gateways.push(*g),
                None => out.push(GatewayClass {
                    pool: *p,
                    site,
                    gateways: smallvec::smallvec![*g],
                }),
            }
        }
    }
    out
}

/// Per pool, the gateways of its peered pools by class, each made on first use: a dense table
/// read by index and borrowed (a walk asks once per gateway class it passes).
type TransitPeers = Box<[OnceCell<Box<[GatewayClass]>>]>;

/// The lazily memoizing view over a topology.
pub struct Net<'t> {
    /// The topology.
    pub topo: &'t Topology,
    /// Link settings.
    pub settings: LinkSettings,
    /// Pair facts held by value: a one-node resolve queries thousands of pairs, and most hold no
    /// cap, so an entry allocates nothing.
    site_pairs: RefCell<FxHashMap<(SiteId, SiteId), SitePair>>,
    gpp: RefCell<FxHashMap<(PoolId, PoolId), PairCaps>>,
    served: OnceCell<Vec<SmallVec<[SiteId; 4]>>>,
    gateway_sites: OnceCell<Vec<SmallVec<[SiteId; 2]>>>,
    /// Per Site, the distinct pools with a gateway located in it, sorted (the inverse of
    /// `gateway_sites`: a destination's searches ask it without reading the gateways' nodes).
    site_gateway_pools: OnceCell<Vec<SmallVec<[PoolId; 2]>>>,
    transit: OnceCell<TransitPeers>,
    /// Member Sites of each SitePeering that host gateways (gateway-only index, built lazily).
    peering_gw_sites: OnceCell<Vec<SmallVec<[SiteId; 2]>>>,
    classes: OnceCell<search::Classes>,
    searches: RefCell<search::Searches>,
    site_routes: RefCell<FxHashMap<SiteId, LearnedRoutes>>,
    gw_routes: RefCell<LearnedMemo>,
    one_route: RefCell<FxHashMap<(NodeKey, IpNet), Option<Learned>>>,
}

/// Nodes sharing learned routes: workers of one Site, gateways of one pool in one Site.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum NodeKey {
    Worker(SiteId),
    Gateway(PoolId, SiteId),
}

fn sorted_pair<T: Ord>(a: T, b: T) -> (T, T) {
    if a <= b { (a, b) } else { (b, a) }
}

fn intersect<T: Ord + Copy>(a: &[T], b: &[T]) -> SmallVec<[T; 2]> {
    let mut out = SmallVec::new();
    let (mut i, mut j) = (0usize, 0usize);
    while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
        match x.cmp(y) {
            std::cmp::Ordering::Less => i = i.saturating_add(1),
            std::cmp::Ordering::Greater => j = j.saturating_add(1),
            std::cmp::Ordering::Equal => {
                out.push(*x);
                i = i.saturating_add(1);
                j = j.saturating_add(1);
            }
        }
    }
    out
}

impl<'t> Net<'t> {
    /// A fresh view (empty memos).
    pub fn new(topo: &'t Topology, settings: LinkSettings) -> Self {
        Net {
            topo,
            settings,
            site_pairs: RefCell::default(),
            gpp: RefCell::default(),
            served: OnceCell::new(),
            gateway_sites: OnceCell::new(),
            site_gateway_pools: OnceCell::new(),
            transit: OnceCell::new(),
            peering_gw_sites: OnceCell::new(),
            classes: OnceCell::new(),
            searches: RefCell::default(),
            site_routes: RefCell::default(),
            gw_routes: RefCell::default(),
            one_route: RefCell::default(),
        }
    }

    /// Entries held by the pair memos (for the complexity tests).
    pub fn pair_memo_len(&self) -> usize {
        self.site_pairs
            .borrow()
            .len()
            .saturating_add(self.gpp.borrow().len())
    }

    /// Whether any gateway-only index has been built (for the complexity tests).
    pub fn gateway_indexes_built(&self) -> bool {
        self.topo.prefixes.get().is_some()
            || self.served.get().is_some()
            || self.gateway_sites.get().is_some()
            || self.site_gateway_pools.get().is_some()
            || self.transit.get().is_some()
            || self.peering_gw_sites.get().is_some()
            || self.classes.get().is_some()
    }

    /// Facts about two Sites (`s ≠ t`), memoized symmetrically.
    pub fn site_pair(&self, s: SiteId, t: SiteId) -> SitePair {
        let key = sorted_pair(s, t);
        if let Some(p) = self.site_pairs.borrow().get(&key) {
            return p.clone();
        }
        let topo = self.topo;
        let mut pair = SitePair::default();
        for pid in intersect(topo.peerings_of(key.0), topo.peerings_of(key.1)) {
            let r = topo.site_peering(pid);
            pair.network = true;
            if r.mesh {
                pair.mesh = true;
                if pair.mesh_protocol.is_none()
                    && let Some(p) = r.protocol
                {
                    pair.mesh_protocol = Some((p, ObjRef::SitePeering(pid)));
                }
            }
            if let Some(c) = &r.cap {
                pair.caps.push((c.mtu, ObjRef::SitePeering(pid)));
            }
        }
        self.site_pairs.borrow_mut().insert(key, pair.clone());
        pair
    }

    /// `meshPeered(s, t)`.
    pub fn mesh_peered(&self, s: SiteId, t: SiteId) -> bool {
        s == t || self.site_pair(s, t).mesh
    }

    /// `networkPeered(s, t)`.
    pub fn network_peered(&self, s: SiteId, t: SiteId) -> bool {
        s == t || self.site_pair(s, t).network
    }

    /// Assignments listing Site `s` and pool `p`: caps and protocol. Not memoized: a Site lists
    /// few assignments, each looked up in the pool's sorted list, which costs less than a memo
    /// entry (a one-node resolve asks once per Site it delivers to).
    pub fn sgpa(&self, s: SiteId, p: PoolId) -> PairCaps {
        let topo = self.topo;
        let of_pool = topo.assignments_of_pool(p);
        let mut out = PairCaps::default();
        for a in topo.assignments_of(s) {
            if of_pool.binary_search(a).is_err() {
                continue;
            }
            let r = topo.assignment(*a);
            if let Some(c) = &r.cap {
                out.caps.push((c.mtu, ObjRef::Assignment(*a)));
            }
            if out.protocol.is_none()
                && let Some(pr) = r.protocol
            {
                out.protocol = Some((pr, ObjRef::Assignment(*a)));
            }
        }
        out
    }

    /// Pool peerings listing pools `p` and `q`: caps and protocol, memoized symmetrically.
    pub fn gpp(&self, p: PoolId, q: PoolId) -> PairCaps {
        let key = sorted_pair(p, q);
        if let Some(x) = self.gpp.borrow().get(&key) {
            return x.clone();
        }
        let topo = self.topo;
        let mut out = PairCaps::default();
        for r_id in intersect(topo.pool_peerings_of(key.0), topo.pool_peerings_of(key.1)) {
            let r = topo.pool_peering(r_id);
            if let Some(c) = &r.cap {
                out.caps.push((c.mtu, ObjRef::PoolPeering(r_id)));
            }
            if out.protocol.is_none()
                && let Some(pr) = r.protocol
            {
                out.protocol = Some((pr, ObjRef::PoolPeering(r_id)));
            }
        }
        self.gpp.borrow_mut().insert(key, out.clone());
        out
    }

    /// `assigned(s)`: pools assigned to Site `s`, sorted.
    pub fn assigned(&self, s: SiteId) -> SmallVec<[PoolId; 4]> {
        let mut out: SmallVec<[PoolId; 4]> = SmallVec::new();
        for a in self.topo.assignments_of(s) {
            out.extend(self.topo.assignment(*a).pools.iter().copied());
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// `assignedSites(p)`: Sites served by pool `p`, sorted (gateway-only index, built lazily).
    pub fn served_sites(&self, p: PoolId) -> &[SiteId] {
        let served = self.served.get_or_init(|| {
            let topo = self.topo;
            let mut v: Vec<SmallVec<[SiteId; 4]>> = vec![SmallVec::new(); topo.pools.len()];
            for (pi, slot) in v.iter_mut().enumerate() {
                for a in topo.assignments_of_pool(PoolId::from_idx(pi)) {
                    slot.extend(topo.assignment(*a).sites.iter().copied());
                }
                slot.sort_unstable();
                slot.dedup();
            }
            v
        });
        served.get(p.idx()).map(|s| s.as_slice()).unwrap_or(&[])
    }

    /// Whether pool `p` serves Site `s`.
    pub fn serves(&self, p: PoolId, s: SiteId) -> bool {
        self.served_sites(p).binary_search(&s).is_ok()
    }

    /// `peeredPools(p)`, sorted, without `p`.
    pub fn peered_pools(&self, p: PoolId) -> SmallVec<[PoolId; 4]> {
        let mut out: SmallVec<[PoolId; 4]> = SmallVec::new();
        for r in self.topo.pool_peerings_of(p) {
            out.extend(
                self.topo
                    .pool_peering(*r)
                    .pools
                    .iter()
                    .copied()
                    .filter(|q| *q != p),
            );
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Whether the link `a–b` crosses public addresses: its ends are in different Sites, those
    /// Sites are not `networkPeered`, and at least one end is a gateway of an External pool.
    pub fn crosses_public(&self, a: NodeId, b: NodeId) -> bool {
        let topo = self.topo;
        let (na, nb) = (topo.node(a), topo.node(b));
        if na.site == nb.site || self.network_peered(na.site, nb.site) {
            return false;
        }
        let external_gw = |n: &crate::model::NodeInfo| match n.role {
            Role::Gateway(p) => !topo.pool(p).internal,
            Role::Worker => false,
        };
        external_gw(na) || external_gw(nb)
    }

    /// The underlay address of node `n` on a link: its ExternalIP when the link
    /// crosses public addresses and the node is a gateway of an External pool, its InternalIP
    /// otherwise; of either list, the first address of the tunnel IP family, else the first.
    pub fn underlay_addr(&self, n: NodeId, public: bool) -> Option<IpAddr> {
        let topo = self.topo;
        let node = topo.node(n);
        if public
            && let Role::Gateway(p) = node.role
            && !topo.pool(p).internal
            && let Some(ext) = self.pick_family(&node.external_ips)
        {
            return Some(ext);
        }
        self.pick_family(&node.internal_ips)
    }

    /// Where the tunnel packets of a link to node `n` are sent: its underlay address, except a
    /// worker across public addresses that has an ExternalIP. Such a worker sits behind NAT, and
    /// its private address is not routable from the other Site (which is why gateways route it
    /// as `NodeAddress` host routes); its ExternalIP is where its packets arrive.
    pub fn endpoint_addr(&self, n: NodeId, public: bool) -> Option<IpAddr> {
        self.addrs(n, public).endpoint
    }

    /// Both addresses of node `n` on a link, each picked once.
    fn addrs(&self, n: NodeId, public: bool) -> LinkAddrs {
        let underlay = self.underlay_addr(n, public);
        let node = self.topo.node(n);
        let nat = if public && node.role == Role::Worker {
            self.pick_family(&node.external_ips)
        } else {
            None
        };
        LinkAddrs {
            underlay,
            endpoint: nat.or(underlay),
        }
    }

    /// The outer family of the link between `n` and `peer` ([`Net::outer_ipv6`] of their
    /// underlay addresses), also IPv6 when either end's endpoint address is: whichever header the
    /// packets carry, the overhead taken is never the smaller one.
    pub fn link_ipv6_outer(&self, n: NodeId, peer: NodeId, public: bool) -> bool {
        self.family_of(&self.addrs(n, public), &self.addrs(peer, public))
    }

    fn family_of(&self, a: &LinkAddrs, b: &LinkAddrs) -> bool {
        self.outer_ipv6(a.underlay, b.underlay) || self.outer_ipv6(a.endpoint, b.endpoint)
    }

    /// The address that identifies node `n` on every link, whatever address a link uses: its
    /// private underlay address (else its first external one). Tunnel MACs derive from it, so
    /// every peer computes the same MAC for a node that is reached at several addresses.
    pub fn identity_addr(&self, n: NodeId) -> Option<IpAddr> {
        self.underlay_addr(n, false)
            .or_else(|| self.pick_family(&self.topo.node(n).external_ips))
    }

    /// Whether the link from `n` to `peer` of this kind carries `NodePod` routes (the peer's own
    /// pod CIDRs): every link but one between a worker and a gateway located in the worker's own
    /// Site when that Site does not manage its CNI (its own network routes its pods).
    pub fn carries_node_pods(&self, n: NodeId, peer: NodeId, kind: LinkKind) -> bool {
        if !matches!(kind, LinkKind::Uplink | LinkKind::Delivery) {
            return true;
        }
        let topo = self.topo;
        let (a, b) = (topo.node(n), topo.node(peer));
        a.site != b.site || topo.site(a.site).manage_cni
    }

    /// The direct routes the link from `n` carries, in no particular order: the peer's own pod CIDRs (`NodePod`, unless
    /// [`Net::carries_node_pods`] says otherwise) and, on a gateway's delivery link across public
    /// addresses, a host route to each InternalIP of the worker (`NodeAddress`).
    pub fn direct_routes(&self, n: NodeId, link: &Link) -> SmallVec<[(IpNet, RouteType); 4]> {
        let mut out: SmallVec<[(IpNet, RouteType); 4]> = SmallVec::new();
        self.for_each_direct_route(n, link, |dest, ty| out.push((dest, ty)));
        out
    }

    /// [`Net::direct_routes`] without collecting them: `f` gets each destination and type (the
    /// resolver calls this for every link of every node).
    pub fn for_each_direct_route(
        &self,
        n: NodeId,
        link: &Link,
        mut f: impl FnMut(IpNet, RouteType),
    ) {
        let peer = self.topo.node(link.peer);
        if self.carries_node_pods(n, link.peer, link.kind) {
            for c in &peer.pod_cidrs {
                f(*c, RouteType::NodePod);
            }
        }
        if link.kind == LinkKind::Delivery && link.public {
            for ip in &peer.internal_ips {
                f(IpNet::from(*ip), RouteType::NodeAddress);
            }
        }
    }

    fn pick_family(&self, addrs: &[IpAddr]) -> Option<IpAddr> {
        addrs
            .iter()
            .find(|a| a.is_ipv6() == self.settings.ipv6_outer)
            .or_else(|| addrs.first())
            .copied()
    }

    /// The protocol of a link and who decided it: the first explicit (non-`Auto`) value among
    /// its governing objects (the Site of a mesh link inside one Site, the SitePeerings of a mesh
    /// link across Sites, the assignments of an uplink or delivery link, then the worker's Site
    /// when the gateway is in it, the GatewayPool of a pool-mesh link, the GatewayPoolPeerings of
    /// a transit link); `Auto` resolves to the public encapsulation across public addresses and
    /// to the private one elsewhere.
    pub fn link_protocol(
        &self,
        a: NodeId,
        b: NodeId,
        kind: LinkKind,
    ) -> (Protocol, ProtocolSource, bool) {
        let topo = self.topo;
        let (na, nb) = (topo.node(a), topo.node(b));
        let explicit: Option<(Protocol, ObjRef)> = match kind {
            LinkKind::Mesh => {
                if na.site == nb.site {
                    topo.site(na.site)
                        .protocol
                        .map(|p| (p, ObjRef::Site(na.site)))
                } else {
                    self.site_pair(na.site, nb.site).mesh_protocol
                }
            }
            LinkKind::Uplink | LinkKind::Delivery => {
                let (w, g) = if kind == LinkKind::Uplink {
                    (na, nb)
                } else {
                    (nb, na)
                };
                let pool = g.pool();
                let from_sgpa = pool.and_then(|p| self.sgpa(w.site, p).protocol);
                from_sgpa.or_else(|| {
                    if w.site == g.site {
                        topo.site(w.site)
                            .protocol
                            .map(|p| (p, ObjRef::Site(w.site)))
                    } else {
                        None
                    }
                })
            }
            LinkKind::PoolMesh => na
                .pool()
                .and_then(|p| topo.pool(p).protocol.map(|pr| (pr, ObjRef::Pool(p)))),
            LinkKind::Transit => match (na.pool(), nb.pool()) {
                (Some(p), Some(q)) => self.gpp(p, q).protocol,
                _ => None,
            },
        };
        let public = self.crosses_public(a, b);
        match explicit {
            Some((p, o)) => (p, ProtocolSource::Object(o), public),
            None if public => (
                self.settings.public_encap,
                ProtocolSource::AutoPublic,
                public,
            ),
            None => (
                self.settings.private_encap,
                ProtocolSource::AutoPrivate,
                public,
            ),
        }
    }

    fn make_link(&self, n: NodeId, peer: NodeId, kind: LinkKind) -> Link {
        let (protocol, protocol_source, public) = self.link_protocol(n, peer, kind);
        let (local, remote) = (self.addrs(n, public), self.addrs(peer, public));
        Link {
            peer,
            kind,
            protocol,
            protocol_source,
            public,
            local_addr: local.endpoint,
            peer_addr: remote.endpoint,
            ipv6_outer: self.family_of(&local, &remote),
        }
    }

    /// The outer family of a link between these underlay addresses: IPv6 when the
    /// tunnel family is IPv6, and also when either end's address is IPv6, which happens when that
    /// node has no address of the tunnel family: the overhead column is the one of the header the
    /// packets really carry, so an IPv6-only node never gets the smaller IPv4 overhead.
    pub fn outer_ipv6(&self, local: Option<IpAddr>, peer: Option<IpAddr>) -> bool {
        self.settings.ipv6_outer
            || local.is_some_and(|a| a.is_ipv6())
            || peer.is_some_and(|a| a.is_ipv6())
    }

    /// The peers of node `n` with the link kind, sorted by peer (cheap: no protocol work).
    pub fn link_peers(&self, n: NodeId) -> Vec<(NodeId, LinkKind)> {
        let topo = self.topo;
        let node = topo.node(n);
        // The peers come from a few member lists (a gateway's: thousands of workers): the lists
        // are gathered first, so the output is allocated once at its size. Lists that may name
        // `n` itself (its Site's workers, its pool's gateways) are of kinds `Mesh` and
        // `PoolMesh`.
        let mut lists: SmallVec<[(&[NodeId], LinkKind); 8]> = SmallVec::new();
        match node.role {
            Role::Worker => {
                let s = node.site;
                let mut sites: SmallVec<[SiteId; 8]> = SmallVec::new();
                if topo.site(s).manage_cni {
                    sites.push(s);
                }
                for pid in topo.peerings_of(s) {
                    let r = topo.site_peering(*pid);
                    if r.mesh {
                        sites.extend(r.sites.iter().copied().filter(|t| *t != s));
                    }
                }
                sites.sort_unstable();
                sites.dedup();
                for t in sites {
                    lists.push((topo.workers_of(t), LinkKind::Mesh));
                }
                for p in self.assigned(s) {
                    lists.push((&topo.pool(p).gateways, LinkKind::Uplink));
                }
            }
            Role::Gateway(p) => {
                for s in self.served_sites(p) {
                    lists.push((topo.workers_of(*s), LinkKind::Delivery));
                }
                lists.push((&topo.pool(p).gateways, LinkKind::PoolMesh));
                for q in self.peered_pools(p) {
                    lists.push((&topo.pool(q).gateways, LinkKind::Transit));
                }
            }
        }
        let len = lists
            .iter()
            .map(|(l, _)| l.len())
            .fold(0, usize::saturating_add);
        let mut out: Vec<(NodeId, LinkKind)> = Vec::with_capacity(len);
        for (list, kind) in lists {
            if matches!(kind, LinkKind::Mesh | LinkKind::PoolMesh) {
                out.extend(list.iter().filter(|m| **m != n).map(|m| (*m, kind)));
            } else {
                out.extend(list.iter().map(|m| (*m, kind)));
            }
        }
        out.sort_unstable();
        out.dedup_by_key(|x| x.0);
        out
    }

    /// The links of node `n`, sorted by peer.
    pub fn links(&self, n: NodeId) -> Vec<Link> {
        self.link_peers(n)
            .into_iter()
            .map(|(peer, kind)| self.make_link(n, peer, kind))
            .collect()
    }

    /// The link from `n` to `peer`, if they are linked.
    pub fn link(&self, n: NodeId, peer: NodeId) -> Option<Link> {
        self.link_kind(n, peer).map(|k| self.make_link(n, peer, k))
    }

    /// The kind of the link from `n` to `peer`, if they are linked (no enumeration).
    pub fn link_kind(&self, n: NodeId, peer: NodeId) -> Option<LinkKind> {
        let topo = self.topo;
        if n == peer {
            return None;
        }
        let (a, b) = (topo.node(n), topo.node(peer));
        match (a.role, b.role) {
            (Role::Worker, Role::Worker) => {
                let ok = if a.site == b.site {
                    topo.site(a.site).manage_cni
                } else {
                    self.site_pair(a.site, b.site).mesh
                };
                ok.then_some(LinkKind::Mesh)
            }
            (Role::Worker, Role::Gateway(p)) => self.serves(p, a.site).then_some(LinkKind::Uplink),
            (Role::Gateway(p), Role::Worker) => {
                self.serves(p, b.site).then_some(LinkKind::Delivery)
            }
            (Role::Gateway(p), Role::Gateway(q)) => {
                if p == q {
                    Some(LinkKind::PoolMesh)
                } else if self.peered_pools(p).contains(&q) {
                    Some(LinkKind::Transit)
                } else {
                    None
                }
            }
        }
    }

    fn prefix_table(&self) -> &'t PrefixTable {
        self.topo.prefixes.get_or_init(|| {
            let topo = self.topo;
            // Every Site's pod blocks, then every Site's node CIDRs: each list is usually
            // allocated in Site order, so the sort below meets a few long ascending runs.
            let mut all: Vec<(IpNet, Origin)> = Vec::new();
            let sites = || {
                (topo.sites.iter().enumerate()).map(|(i, s)| (Dest::Site(SiteId::from_idx(i)), s))
            };
            for (dest, s) in sites() {
                let ty = RouteType::PodCidr;
                all.extend(s.pod_blocks.iter().map(|b| (*b, Origin { ty, dest })));
            }
            for (dest, s) in sites() {
                let ty = RouteType::NodeCidr;
                all.extend(s.node_cidrs.iter().map(|c| (*c, Origin { ty, dest })));
            }
            for (i, p) in topo.pools.iter().enumerate() {
                let (ty, dest) = (RouteType::RoutedCidr, Dest::Pool(PoolId::from_idx(i)));
                all.extend(p.routed_cidrs.iter().map(|c| (*c, Origin { ty, dest })));
            }
            let mut entries: Vec<(IpNet, SmallVec<[Origin; 1]>)> = Vec::with_capacity(all.len());
            let mut last: Option<(IpNet, Origin)> = None;
            for i in table_order(&all) {
                let Some((p, o)) = all.get(i).copied() else {
                    continue;
                };
                if last == Some((p, o)) {
                    continue;
                }
                last = Some((p, o));
                match entries.last_mut() {
                    Some((lp, os)) if *lp == p => os.push(o),
                    _ => entries.push((p, smallvec::smallvec![o])),
                }
            }
            let mut index = FxHashMap::default();
            index.reserve(entries.len());
            for (i, (p, _)) in entries.iter().enumerate() {
                if let Ok(i) = u32::try_from(i) {
                    index.entry(p.trunc()).or_insert(i);
                }
            }
            PrefixTable { entries, index }
        })
    }

    /// The distinct Sites where each pool's gateways are located, sorted (gateway-only index,
    /// built lazily).
    fn pool_gateway_sites(&self) -> &[SmallVec<[SiteId; 2]>] {
        self.gateway_sites.get_or_init(|| {
            let topo = self.topo;
            topo.pools
                .iter()
                .map(|p| {
                    let mut v: SmallVec<[SiteId; 2]> =
                        p.gateways.iter().map(|g| topo.node(*g).site).collect();
                    v.sort_unstable();
                    v.dedup();
                    v
                })
                .collect()
        })
    }

    /// The distinct Sites where pool `p`'s gateways are located, sorted.
    pub fn gateway_sites_of(&self, p: PoolId) -> &[SiteId] {
        self.pool_gateway_sites()
            .get(p.idx())
            .map_or(&[], |v| v.as_slice())
    }

    /// The distinct pools with a gateway located in Site `s`, sorted: read from the pools'
    /// gateway Sites, so a destination's searches do not read the nodes of its gateways (tens
    /// of thousands of nodes at hyperscale, each on its own cache lines).
    pub(crate) fn gateway_pools_in(&self, s: SiteId) -> &[PoolId] {
        let all = self.site_gateway_pools.get_or_init(|| {
            let mut out: Vec<SmallVec<[PoolId; 2]>> = vec![SmallVec::new(); self.topo.sites.len()];
            for (pi, sites) in self.pool_gateway_sites().iter().enumerate() {
                for x in sites {
                    if let Some(v) = out.get_mut(x.idx()) {
                        v.push(PoolId::from_idx(pi));
                    }
                }
            }
            out
        });
        all.get(s.idx()).map_or(&[], |v| v.as_slice())
    }

    /// The member Sites of SitePeering `r` where gateways are located, sorted (gateway-only
    /// index, built lazily: the searches ask which pools a destination's network peers block).
    fn peering_gateway_sites(&self, r: PeeringId) -> &[SiteId] {
        let all = self.peering_gw_sites.get_or_init(|| {
            let topo = self.topo;
            topo.site_peerings
                .iter()
                .map(|p| {
                    p.sites
                        .iter()
                        .copied()
                        .filter(|s| !topo.gateways_in(*s).is_empty())
                        .collect()
                })
                .collect()
        });
        all.get(r.idx()).map(|v| v.as_slice()).unwrap_or(&[])
    }

    /// Whether a gateway located in Site `x` accepts hop lists of this origin class.
    fn allowed(&self, x: SiteId, class: (Dest, bool)) -> bool {
        match class.0 {
            Dest::Pool(_) => true,
            Dest::Site(d) => x != d && !(class.1 && self.shares_peering(x, d)),
        }
    }

    /// `networkPeered(s, t)` for `s ≠ t` straight from the membership index, without the pair
    /// memo: the searches ask it for every (gateway Site, destination Site) pair they meet, and
    /// a merge of two short sorted membership lists costs less than a memo entry.
    fn shares_peering(&self, s: SiteId, t: SiteId) -> bool {
        let (a, b) = (self.topo.peerings_of(s), self.topo.peerings_of(t));
        let (mut i, mut j) = (0usize, 0usize);
        while let (Some(x), Some(y)) = (a.get(i), b.get(j)) {
            match x.cmp(y) {
                std::cmp::Ordering::Less => i = i.saturating_add(1),
                std::cmp::Ordering::Greater => j = j.saturating_add(1),
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }

    /// Pools that originate a destination.
    pub fn origin_pools(&self, dest: Dest) -> SmallVec<[PoolId; 4]> {
        let topo = self.topo;
        match dest {
            Dest::Pool(o) => smallvec::smallvec![o],
            Dest::Site(d) => {
                let mut out: SmallVec<[PoolId; 4]> = SmallVec::new();
                for a in topo.assignments_of(d) {
                    out.extend(topo.assignment(*a).pools.iter().copied());
                }
                out.sort_unstable();
                out.dedup();
                out
            }
        }
    }

    fn uplink_gateways(&self, s: SiteId) -> Vec<GatewayClass> {
        gateway_classes(self.topo, &self.assigned(s))
    }

    /// The transit peers of pool `q`'s gateways (memoized per pool: every learned-route lookup
    /// of a gateway asks for them).
    fn transit_peers(&self, q: PoolId) -> &[GatewayClass] {
        let all = self.transit.get_or_init(|| {
            (0..self.topo.pools.len())
                .map(|_| OnceCell::new())
                .collect()
        });
        all.get(q.idx()).map_or(&[], |slot| {
            slot.get_or_init(|| gateway_classes(self.topo, &self.peered_pools(q)).into())
        })
    }

    fn worker_route(
        &self,
        s: SiteId,
        prefix: IpNet,
        origins: &[Origin],
        gws: &[GatewayClass],
    ) -> Option<Learned> {
        let mut best: Option<Learned> = None;
        for o in origins {
            if let Dest::Site(d) = o.dest {
                if d == s {
                    continue;
                }
                if o.ty == RouteType::NodeCidr && self.shares_peering(s, d) {
                    continue;
                }
            }
            if gws.is_empty() {
                continue;
            }
            let Some(bfs) = self.bfs(o.dest, o.ty == RouteType::NodeCidr) else {
                continue;
            };
            for c in gws {
                if let Some(d) = self.advertised(bfs, c.pool, c.site, *o) {
                    consider(&mut best, prefix, *o, d, &c.gateways);
                }
            }
        }
        best.map(finish)
    }

    fn gateway_route(
        &self,
        q: PoolId,
        x: SiteId,
        prefix: IpNet,
        origins: &[Origin],
        peers: &[GatewayClass],
    ) -> Option<Learned> {
        // Whether `q` is among `origin_pools(o.dest)` of some origin, without building the list.
        let topo = self.topo;
        let own = origins.iter().any(|o| match o.dest {
            Dest::Pool(x) => x == q,
            Dest::Site(d) => topo
                .assignments_of(d)
                .iter()
                .any(|a| topo.assignment(*a).pools.contains(&q)),
        });
        if own {
            // Rule 6: a serving gateway delivers; an owning pool hands it to its underlay.
            return None;
        }
        let mut best: Option<Learned> = None;
        for o in origins {
            if !self.allowed(x, o.class()) {
                continue;
            }
            if peers.is_empty() {
                continue;
            }
            let Some(bfs) = self.bfs(o.dest, o.ty == RouteType::NodeCidr) else {
                continue;
            };
            for c in peers {
                if let Some(d) = self.advertised(bfs, c.pool, c.site, *o) {
                    consider(&mut best, prefix, *o, d, &c.gateways);
                }
            }
        }
        best.map(finish)
    }

    /// Learned routes of the workers of Site `s` (shared by all of them), uncut.
    pub fn worker_learned(&self, s: SiteId) -> LearnedRoutes {
        if let Some(r) = self.site_routes.borrow().get(&s) {
            return r.clone();
        }
        let gws = self.uplink_gateways(s);
        let mut out: Vec<Learned> = Vec::new();
        if !gws.is_empty() {
            let entries = &self.prefix_table().entries;
            out.reserve_exact(entries.len());
            for (prefix, origins) in entries {
                if let Some(l) = self.worker_route(s, *prefix, origins, &gws) {
                    out.push(l);
                }
            }
        }
        let rc = Arc::new(out);
        self.site_routes.borrow_mut().insert(s, rc.clone());
        rc
    }

    /// Learned (transit) routes of a gateway of pool `q` located in Site `x`, uncut.
    pub fn gateway_learned(&self, q: PoolId, x: SiteId) -> LearnedRoutes {
        if let Some(r) = self.gw_routes.borrow().get(&(q, x)) {
            return r.clone();
        }
        let peers = self.transit_peers(q);
        let mut out: Vec<Learned> = Vec::new();
        if !peers.is_empty() {
            let entries = &self.prefix_table().entries;
            out.reserve_exact(entries.len());
            for (prefix, origins) in entries {
                if let Some(l) = self.gateway_route(q, x, *prefix, origins, peers) {
                    out.push(l);
                }
            }
        }
        let rc = Arc::new(out);
        self.gw_routes.borrow_mut().insert((q, x), rc.clone());
        rc
    }

    /// The origins of a learned prefix (empty when nothing advertises it).
    pub fn origins_of(&self, prefix: &IpNet) -> SmallVec<[Origin; 1]> {
        SmallVec::from_slice(self.prefix_table().origins(prefix))
    }

    /// Per learned route, its prefix when only one Site or pool advertises it: one walk beside
    /// the prefix table when the routes come in prefix order (a node's list does), instead of a
    /// look-up per route; a route out of that order is looked up.
    pub fn sole_prefixes(&self, learned: &[Learned]) -> Vec<Option<SolePrefix>> {
        let table = self.prefix_table();
        let mut at = 0usize;
        learned
            .iter()
            .map(|l| {
                while table
                    .entries
                    .get(at)
                    .is_some_and(|(p, _)| prefix_order(p, &l.prefix).is_lt())
                {
                    at = at.saturating_add(1);
                }
                match table.entries.get(at) {
                    Some((p, o)) if prefix_order(p, &l.prefix).is_eq() => {
                        (o.len() == 1).then(|| SolePrefix(u32::try_from(at).unwrap_or(u32::MAX)))
                    }
                    _ => self.sole_prefix(&l.prefix).map(|(i, _)| i),
                }
            })
            .collect()
    }

    /// A learned prefix that only one Site or pool advertises, with that origin (`None`: none
    /// or several do).
    pub fn sole_prefix(&self, prefix: &IpNet) -> Option<(SolePrefix, Origin)> {
        let table = self.prefix_table();
        let i = *table.index.get(&prefix.trunc())?;
        match table.entries.get(usize::try_from(i).ok()?)?.1.as_slice() {
            [o] => Some((SolePrefix(i), *o)),
            _ => None,
        }
    }

    /// The origin of a learned prefix that only one Site or pool advertises (`None`: none or
    /// several do).
    pub fn sole_origin(&self, prefix: &IpNet) -> Option<Origin> {
        self.sole_prefix(prefix).map(|(_, o)| o)
    }

    /// How many prefixes are advertised: every [`SolePrefix`] is below.
    pub fn prefix_count(&self) -> usize {
        self.prefix_table().entries.len()
    }

    /// The prefixes only one Site or pool advertises whose origin leads to a destination
    /// `to` accepts.
    pub fn sole_prefixes_leading_to(&self, to: impl Fn(Dest) -> bool) -> Vec<SolePrefix> {
        self.prefix_table()
            .entries
            .iter()
            .zip(0u32..)
            .filter(|((_, o), _)| matches!(o.as_slice(), [o] if to(o.dest)))
            .map(|(_, i)| SolePrefix(i))
            .collect()
    }

    /// Every advertised prefix with its origins, in output order (gateway-only index).
    pub fn advertised_prefixes(&self) -> impl Iterator<Item = (&IpNet, &[Origin])> {
        self.prefix_table()
            .entries
            .iter()
            .map(|(p, o)| (p, o.as_slice()))
    }

    /// Learned routes of any node, uncut.
    pub fn learned(&self, n: NodeId) -> LearnedRoutes {
        let node = self.topo.node(n);
        match node.role {
            Role::Worker => self.worker_learned(node.site),
            Role::Gateway(p) => self.gateway_learned(p, node.site),
        }
    }

    /// The learned route of node `n` for `prefix` (uncut), if any. Uses the node's full route
    /// list when it was already computed, else computes (and memoizes) this prefix alone.
    pub fn learned_for(&self, n: NodeId, prefix: &IpNet) -> Option<Learned> {
        let node = self.topo.node(n);
        let key = match node.role {
            Role::Worker => NodeKey::Worker(node.site),
            Role::Gateway(p) => NodeKey::Gateway(p, node.site),
        };
        self.learned_for_key(key, prefix)
    }

    /// [`Net::learned_for`] of the gateways of pool `q` located in Site `x`.
    pub fn gateway_learned_for(&self, q: PoolId, x: SiteId, prefix: &IpNet) -> Option<Learned> {
        self.learned_for_key(NodeKey::Gateway(q, x), prefix)
    }

    fn learned_for_key(&self, key: NodeKey, prefix: &IpNet) -> Option<Learned> {
        let full = match key {
            NodeKey::Worker(s) => self.site_routes.borrow().get(&s).cloned(),
            NodeKey::Gateway(p, x) => self.gw_routes.borrow().get(&(p, x)).cloned(),
        };
        if let Some(routes) = full {
            return routes
                .binary_search_by(|l| prefix_order(&l.prefix, prefix))
                .ok()
                .and_then(|i| routes.get(i))
                .cloned();
        }
        if let Some(r) = self.one_route.borrow().get(&(key, *prefix)) {
            return r.clone();
        }
        let origins = self.origins_of(prefix);
        let r = if origins.is_empty() {
            None
        } else {
            match key {
                NodeKey::Worker(s) => {
                    let gws = self.uplink_gateways(s);
                    self.worker_route(s, *prefix, &origins, &gws)
                }
                NodeKey::Gateway(q, x) => {
                    let peers = self.transit_peers(q);
                    self.gateway_route(q, x, *prefix, &origins, peers)
                }
            }
        };
        self.one_route
            .borrow_mut()
            .insert((key, *prefix), r.clone());
        r
    }

    /// Whether gateway `g`'s pool originates (serves or owns) the destination.
    pub fn originates(&self, g: NodeId, dest: Dest) -> bool {
        self.topo
            .node(g)
            .pool()
            .is_some_and(|p| self.pool_originates(p, dest))
    }

    /// Whether pool `p` originates (serves or owns) the destination.
    pub fn pool_originates(&self, p: PoolId, dest: Dest) -> bool {
        match dest {
            Dest::Pool(o) => o == p,
            Dest::Site(d) => self.serves(p, d),
        }
    }

    /// Forwarding paths of node `n` for a learned prefix: hop sequences (node IDs, first hop
    /// first), the first `limit` of them in forwarding order, and how many there are in all
    /// (saturating at `u64::MAX`; [`Net::forwarding_paths`] says whether it saturated).
    pub fn paths(&self, n: NodeId, prefix: &IpNet, limit: usize) -> (Vec<Vec<NodeId>>, u64) {
        let fp = self.forwarding_paths(n, prefix);
        (fp.iter().take(limit).collect(), fp.total())
    }

    /// The forwarding paths of node `n` for a learned prefix, counted without being enumerated.
    ///
    /// Every ECMP branch follows each gateway's own selection until a gateway whose pool
    /// originates the prefix delivers it (rule 6). The number of branches multiplies at every
    /// hop (a chain of pools with `k` gateways each has `k^length` of them), so they are counted
    /// by dynamic programming over (gateway, hop) states: each state's count is the sum of its
    /// next hops' counts, computed once. A branch longer than the number of pools (possible only
    /// if selections loop) ends where it is cut, so the state graph is finite and acyclic. Cost:
    /// one state per gateway and hop count reached, each expanded once; paths themselves are
    /// produced lazily by [`ForwardingPaths::iter`].
    pub fn forwarding_paths(&self, n: NodeId, prefix: &IpNet) -> ForwardingPaths {
        let mut fp = ForwardingPaths::default();
        let Some(l) = self.learned_for(n, prefix) else {
            return fp;
        };
        let origins = self.origins_of(prefix);
        let max_depth = self.topo.pools.len();
        // Per gateway: whether it delivers the prefix, else its selected next hops (none when it
        // has no route: a dead end that contributes no path).
        let mut hops: FxHashMap<NodeId, Option<SmallVec<[NodeId; 4]>>> = FxHashMap::default();
        let mut index: FxHashMap<(NodeId, usize), usize> = FxHashMap::default();
        // States layer by layer (layer `d`: the gateways reached after `d` earlier hops); every
        // edge goes from one layer to the next, so counting the layers backwards is a
        // topological order.
        let mut layers: Vec<Vec<usize>> = Vec::new();
        let mut current: Vec<usize> = Vec::new();
        for g in &l.via {
            let r = fp.state(&mut index, &mut current, *g, 0);
            fp.roots.push(r);
        }
        let mut depth = 0usize;
        while !current.is_empty() {
            let mut next: Vec<usize> = Vec::new();
            let child_depth = depth.saturating_add(1);
            for &i in &current {
                let Some(g) = fp.states.get(i).map(|s| s.node) else {
                    continue;
                };
                let via = hops.entry(g).or_insert_with(|| {
                    if origins.iter().any(|o| self.originates(g, o.dest)) {
                        None
                    } else {
                        Some(
                            self.learned_for(g, prefix)
                                .map(|x| x.via)
                                .unwrap_or_default(),
                        )
                    }
                });
                let children: SmallVec<[usize; 4]> = match via {
                    Some(via) if depth <= max_depth => via
                        .iter()
                        .map(|h| fp.state(&mut index, &mut next, *h, child_depth))
                        .collect(),
                    // Delivers, or cut: the branch ends here.
                    _ => {
                        if let Some(s) = fp.states.get_mut(i) {
                            s.terminal = true;
                        }
                        continue;
                    }
                };
                if let Some(s) = fp.states.get_mut(i) {
                    s.children = children;
                }
            }
            layers.push(std::mem::replace(&mut current, next));
            depth = child_depth;
        }
        for layer in layers.iter().rev() {
            for &i in layer {
                let (count, saturated) = fp.count_of(i);
                if let Some(s) = fp.states.get_mut(i) {
                    s.count = count;
                    fp.saturated |= saturated;
                }
            }
        }
        for &r in &fp.roots {
            let c = fp.states.get(r).map_or(0, |s| s.count);
            match fp.total.checked_add(c) {
                Some(t) => fp.total = t,
                None => {
                    fp.total = u64::MAX;
                    fp.saturated = true;
                }
            }
        }
        fp
    }
}

/// The forwarding paths of one learned route: how many there are, and each of them on demand
/// ([`Net::forwarding_paths`]).
#[derive(Clone, Debug, Default)]
pub struct ForwardingPaths {
    states: Vec<PathState>,
    /// The states of the route's own next hops, in order.
    roots: Vec<usize>,
    total: u64,
    saturated: bool,
}

/// A gateway reached after a given number of hops.
#[derive(Clone, Debug)]
struct PathState {
    node: NodeId,
    /// The branch ends here (the gateway delivers, or the branch is cut).
    terminal: bool,
    /// Next-hop states, in selection order (empty for a terminal state or a dead end).
    children: SmallVec<[usize; 4]>,
    /// Paths from here to a delivering gateway (1 for a terminal state, saturating).
    count: u64,
}

impl ForwardingPaths {
    /// How many forwarding paths there are in all (`u64::MAX` when [`Self::saturated`]).
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Whether there are more paths than a `u64` counts: [`Self::total`] is then a lower bound.
    pub fn saturated(&self) -> bool {
        self.saturated
    }

    /// How many (gateway, hop) states were counted: the work [`Net::forwarding_paths`] did,
    /// proportional to the gateways on the paths, not to the paths.
    pub fn state_count(&self) -> usize {
        self.states.len()
    }

    /// The paths in forwarding order (first next hop first, then each gateway's own selection
    /// in order), produced one at a time: taking the first few costs their length times the
    /// fan-out, whatever the total.
    pub fn iter(&self) -> PathIter<'_> {
        PathIter {
            fp: self,
            root: 0,
            stack: Vec::new(),
        }
    }

    /// The state for `(g, depth)`, created (and queued on `layer`) on first use.
    fn state(
        &mut self,
        index: &mut FxHashMap<(NodeId, usize), usize>,
        layer: &mut Vec<usize>,
        g: NodeId,
        depth: usize,
    ) -> usize {
        *index.entry((g, depth)).or_insert_with(|| {
            let i = self.states.len();
            self.states.push(PathState {
                node: g,
                terminal: false,
                children: SmallVec::new(),
                count: 0,
            });
            layer.push(i);
            i
        })
    }

    /// The count of state `i` from its children's (already computed) counts, and whether the
    /// sum saturated.
    fn count_of(&self, i: usize) -> (u64, bool) {
        let Some(s) = self.states.get(i) else {
            return (0, false);
        };
        if s.terminal {
            return (1, false);
        }
        let mut sum: u64 = 0;
        let mut saturated = false;
        for c in &s.children {
            let n = self.states.get(*c).map_or(0, |x| x.count);
            match sum.checked_add(n) {
                Some(x) => sum = x,
                None => {
                    sum = u64::MAX;
                    saturated = true;
                }
            }
        }
        (sum, saturated)
    }

    fn terminal(&self, i: usize) -> bool {
        self.states.get(i).is_some_and(|s| s.terminal)
    }

    fn leads_somewhere(&self, i: usize) -> bool {
        self.states.get(i).is_some_and(|s| s.count > 0)
    }
}

/// Forwarding paths one at a time, depth first; branches that reach no delivering gateway are
/// skipped without being walked ([`ForwardingPaths::iter`]).
#[derive(Clone, Debug)]
pub struct PathIter<'a> {
    fp: &'a ForwardingPaths,
    /// The next root to start from.
    root: usize,
    /// The current branch: each state with the position of its next child to try.
    stack: Vec<(usize, usize)>,
}

impl PathIter<'_> {
    fn current(&self) -> Vec<NodeId> {
        self.stack
            .iter()
            .filter_map(|(i, _)| self.fp.states.get(*i).map(|s| s.node))
            .collect()
    }
}

impl Iterator for PathIter<'_> {
    type Item = Vec<NodeId>;

    fn next(&mut self) -> Option<Vec<NodeId>> {
        // The path returned last ended at a terminal state: leave it.
        if self.stack.last().is_some_and(|(i, _)| self.fp.terminal(*i)) {
            self.stack.pop();
        }
        loop {
            let Some((top, pos)) = self.stack.last_mut() else {
                let r = *self.fp.roots.get(self.root)?;
                self.root = self.root.saturating_add(1);
                if self.fp.leads_somewhere(r) {
                    self.stack.push((r, 0));
                    if self.fp.terminal(r) {
                        return Some(self.current());
                    }
                }
                continue;
            };
            let children = self
                .fp
                .states
                .get(*top)
                .map(|s| s.children.as_slice())
                .unwrap_or_default();
            let next = children
                .iter()
                .enumerate()
                .skip(*pos)
                .find(|(_, c)| self.fp.leads_somewhere(**c));
            match next {
                Some((k, c)) => {
                    *pos = k.saturating_add(1);
                    let c = *c;
                    self.stack.push((c, 0));
                    if self.fp.terminal(c) {
                        return Some(self.current());
                    }
                }
                None => {
                    self.stack.pop();
                }
            }
        }
    }
}

fn consider(best: &mut Option<Learned>, prefix: IpNet, o: Origin, d: u32, gs: &[NodeId]) {
    match best {
        Some(b) if b.distance < d => {}
        Some(b) if b.distance == d => {
            b.via.extend_from_slice(gs);
            if !b.origins.contains(&o) {
                b.origins.push(o);
            }
        }
        _ => {
            *best = Some(Learned {
                prefix,
                origin: o,
                origins: smallvec::smallvec![o],
                distance: d,
                via: SmallVec::from_slice(gs),
            })
        }
    }
}

fn finish(mut l: Learned) -> Learned {
    l.via.sort_unstable();
    l.via.dedup();
    l.origins.sort_unstable();
    if let Some(o) = l.origins.first() {
        l.origin = *o;
    }
    l
}

/// The indexes of `all` in the prefix table's order: by [`prefix_order`], then origin, then as
/// listed. Sorted on plain keys, each family apart: an IPv4 prefix's network address and length
/// in one `u64`, so tens of thousands of prefixes sort by comparing integers. Equal prefixes
/// (only overlapping input makes them) are ordered by origin afterwards.
fn table_order(all: &[(IpNet, Origin)]) -> Vec<usize> {
    let mut v4: Vec<(u64, usize)> = Vec::with_capacity(all.len());
    let mut v6: Vec<((u128, u8), usize)> = Vec::new();
    for (i, (p, _)) in all.iter().enumerate() {
        match p {
            IpNet::V4(x) => v4.push((
                u64::from(u32::from(x.network())) << 8 | u64::from(x.prefix_len()),
                i,
            )),
            IpNet::V6(x) => v6.push(((u128::from(x.network()), x.prefix_len()), i)),
        }
    }
    // Stable sorts, which merge the ascending runs they find: equal keys stay as listed.
    v4.sort_by_key(|(k, _)| *k);
    v6.sort_by_key(|(k, _)| *k);
    let mut order: Vec<usize> = Vec::with_capacity(all.len());
    let origin = |i: &usize| all.get(*i).map(|(_, o)| *o);
    for run in v4.chunk_by(|a, b| a.0 == b.0) {
        push_by_origin(&mut order, run.iter().map(|(_, i)| *i), origin);
    }
    for run in v6.chunk_by(|a, b| a.0 == b.0) {
        push_by_origin(&mut order, run.iter().map(|(_, i)| *i), origin);
    }
    order
}

/// Appends the indexes of one prefix, listed in order, by origin (stable: as listed within one).
fn push_by_origin(
    order: &mut Vec<usize>,
    run: impl ExactSizeIterator<Item = usize>,
    origin: impl Fn(&usize) -> Option<Origin>,
) {
    let start = order.len();
    let many = run.len() > 1;
    order.extend(run);
    if many && let Some(tail) = order.get_mut(start..) {
        tail.sort_by_key(|i| origin(i));
    }
}

/// Output order of prefixes: IPv4 before IPv6, then network address, then prefix length.
/// Inlined into the sorts and searches that compare with it, in other crates too.
#[inline]
pub fn prefix_order(a: &IpNet, b: &IpNet) -> std::cmp::Ordering {
    // Same order as (family, network address, prefix length), without building `IpAddr`s.
    match (a, b) {
        (IpNet::V4(x), IpNet::V4(y)) => {
            (u32::from(x.network()), x.prefix_len()).cmp(&(u32::from(y.network()), y.prefix_len()))
        }
        (IpNet::V6(x), IpNet::V6(y)) => {
            (x.network(), x.prefix_len()).cmp(&(y.network(), y.prefix_len()))
        }
        (IpNet::V4(_), IpNet::V6(_)) => std::cmp::Ordering::Less,
        (IpNet::V6(_), IpNet::V4(_)) => std::cmp::Ordering::Greater,
    }
}

/// `prefix` with every one of `locals` cut out: the largest prefixes that remain, in order.
pub fn cut(prefix: IpNet, locals: &[IpNet]) -> Vec<IpNet> {
    let mut out = Vec::new();
    let mut stack = vec![prefix];
    while let Some(p) = stack.pop() {
        if locals.iter().any(|l| l.contains(&p)) {
            continue;
        }
        if !locals.iter().any(|l| p.contains(l)) {
            out.push(p);
            continue;
        }
        if let Ok(mut halves) = p.subnets(p.prefix_len().saturating_add(1)) {
            let a = halves.next();
            let b = halves.next();
            if let Some(b) = b {
                stack.push(b);
            }
            if let Some(a) = a {
                stack.push(a);
            }
        }
    }
    out.sort_by(prefix_order);
    out
}
