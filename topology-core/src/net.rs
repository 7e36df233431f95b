//! Relations, links and forwarding: who links to whom over which protocol, and which paths
//! traffic takes, where each gateway pool advertises what its Sites originate to the pools it
//! peers with. The folder holds one concern per file: relations between Sites and pools
//! (`pairs.rs`), links (`links.rs`), the prefix table's queries (`prefixes.rs`), learned routes
//! (`learned.rs`), breadth-first searches over the pool graph (`search.rs`), next hops towards an
//! origin pool (`toward.rs`) and forwarding paths (`paths.rs`); the types they share and the
//! memoizing view itself stay here.
//!
//! [`Net`] is a lazily memoizing view over an immutable [`Topology`]. Pair lookups of two Sites
//! and of two pools are computed on first use and memoized with `(x, y)` and `(y, x)` as one key,
//! so the memo holds only pairs actually queried; a Site and a pool are looked up in the pool's
//! sorted assignments each time (cheaper than a memo entry). Everything that only gateway paths
//! need (the prefix table, the pool-graph searches, learned routes) is built on
//! first use, so a worker whose Site has no assignment pays nothing for it; the prefix table, a
//! function of the topology alone, is built and kept by the [`Topology`] and shared by every
//! `Net`.

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

mod learned;
mod links;
mod pairs;
mod paths;
mod prefixes;
mod search;
mod toward;

pub use crate::model::prefixes::{Dest, Origin, RouteType, prefix_order};
pub use paths::{FirstPaths, ForwardingPaths, KEPT_PATHS, PathIter};
pub use prefixes::cut;

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

/// Kind of a link. Serialized by its output name ([`LinkKind::as_str`]: `mesh`, `pool-mesh`...).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
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

impl std::fmt::Display for LinkKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
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

/// A learned (gateway or transit) route before `localCidrs` are cut out.
#[derive(Debug, PartialEq, Eq)]
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

impl Clone for Learned {
    /// A copy of the lists as slices (`SmallVec`'s own `clone` goes element by element).
    fn clone(&self) -> Learned {
        Learned {
            prefix: self.prefix,
            origin: self.origin,
            origins: SmallVec::from_slice(&self.origins),
            distance: self.distance,
            via: SmallVec::from_slice(&self.via),
        }
    }
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

/// Per pool, the gateways of its peered pools by class, each made on first use: a dense table
/// read by index and borrowed (a walk asks once per gateway class it passes).
type TransitPeers = Box<[OnceCell<Box<[GatewayClass]>>]>;

/// What a [`Net`] has memoized so far ([`Net::memo_stats`]): an embedder that keeps one view
/// for many queries reads here what it holds; the pair memos hold only the pairs queried, and
/// a worker whose Site has no assignment builds no gateway-only index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoStats {
    /// Entries of the pair memos (two Sites, two pools).
    pub pair_entries: usize,
    /// Whether any gateway-only index (the prefix table, served Sites, searches, …) was built.
    pub gateway_indexes: bool,
}

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
    /// Per gateway and prefix, where a forwarding path goes next ([`Net::forwarding_paths`]):
    /// every path through the gateway to the prefix asks.
    path_steps: RefCell<FxHashMap<(NodeId, IpNet), paths::PathStep>>,
    /// Per gateway and prefix, the first forwarding paths from the gateway as a route's next
    /// hop, and how many there are ([`Net::first_paths`]): every route through it asks.
    gateway_paths: RefCell<FxHashMap<(NodeId, IpNet), paths::KeptPaths>>,
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
            path_steps: RefCell::default(),
            gateway_paths: RefCell::default(),
        }
    }

    /// What the view holds so far: how much a caller's queries made it remember.
    pub fn memo_stats(&self) -> MemoStats {
        MemoStats {
            pair_entries: self
                .site_pairs
                .borrow()
                .len()
                .saturating_add(self.gpp.borrow().len()),
            gateway_indexes: self.gateway_indexes_built(),
        }
    }

    fn gateway_indexes_built(&self) -> bool {
        self.topo.prefix_table_built()
            || self.served.get().is_some()
            || self.gateway_sites.get().is_some()
            || self.site_gateway_pools.get().is_some()
            || self.transit.get().is_some()
            || self.peering_gw_sites.get().is_some()
            || self.classes.get().is_some()
    }
}
