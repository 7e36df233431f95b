//! The resolver: link, route, device, fabric and published MTUs of any node,
//! each with an interned explanation. Pure: the topology and the settings are the only inputs.

use crate::explain::{ExplId, Explanations};
use crate::plan::*;
use ipnet::IpNet;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::net::IpAddr;
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::{ObjRef, Topology};
use topology_core::mtu::Mtu;
use topology_core::net::{Dest, Learned, LinkSettings, Net, ProtocolSource, SolePrefix};

mod caps;
pub mod hops;
mod links;
mod node_plan;
pub mod published;
mod reach;
mod tables;

pub use node_plan::may_find;
use reach::{Known, PubKey, ReachMemo};
use tables::{ClassRows, Sparse};

/// Default device names (agent settings).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeviceNames {
    /// Shared GENEVE device.
    pub geneve: String,
    /// Shared VXLAN device.
    pub vxlan: String,
    /// Shared IPIP device.
    pub ipip: String,
    /// Shared WireGuard mesh device.
    pub wireguard_mesh: String,
}

impl Default for DeviceNames {
    fn default() -> Self {
        DeviceNames {
            geneve: "geneve0".into(),
            vxlan: "vxlan0".into(),
            ipip: "ipip0".into(),
            wireguard_mesh: "wg51820".into(),
        }
    }
}

/// Inputs beyond the topology. Values outside their range fail closed to 576 when used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Underlay MTU of nodes without the `mtu.unbounded-cloud.io/underlay-mtu` annotation
    /// (`--underlay-mtu`, or the agent's own value). Default 1500; valid 576..65535.
    pub default_underlay: u32,
    /// The agent's configured `mtu` on every node: a cap on every link. Default 0 (none); valid
    /// 576..9000.
    pub cfg_mtu: u32,
    /// Per-node configured `mtu` overriding `cfg_mtu` (0 = none). Default empty.
    pub cfg_overrides: BTreeMap<String, u32>,
    /// What `Auto` resolves to, and the tunnel IP family. Default: WireGuard across public
    /// addresses, GENEVE elsewhere, IPv4 tunnels.
    pub link: LinkSettings,
    /// Underlay MTUs given for nodes (detected by the agent, or a what-if), replacing the
    /// `underlay-mtu` annotation; `underlay-mtu-max` still caps them. Default empty.
    pub underlay_overrides: BTreeMap<String, u32>,
    /// Device names. Default `geneve0`, `vxlan0`, `ipip0` and `wg51820` (the WireGuard mesh).
    pub devices: DeviceNames,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            default_underlay: 1500,
            cfg_mtu: 0,
            cfg_overrides: BTreeMap::new(),
            link: LinkSettings::default(),
            underlay_overrides: BTreeMap::new(),
            devices: DeviceNames::default(),
        }
    }
}

/// Nodes that share their learned routes: the workers of a Site, the gateways of a pool in a Site.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum ClassKey {
    Worker(SiteId),
    Gateway(PoolId, SiteId),
}

/// The learned routes of a class of nodes, with the part of each route's MTU that does not depend
/// on which node of the class asks: `rest = min over next hops g of (reach(g), pubPath(g))`. A
/// node's route MTU is then `min(its links to the next hops, rest)`, the same minimum as the flat
/// one (minimums bind by (value, term), whatever the nesting), computed once per class instead of
/// once per node.
struct RouteClass {
    learned: topology_core::net::LearnedRoutes,
    /// Per learned route: index into `via_sets`, and `rest`.
    rest: Vec<(u32, Option<ExplId>)>,
    /// The distinct next-hop sets of the class's routes.
    via_sets: Vec<SmallVec<[NodeId; 4]>>,
}

/// The explanation nodes a plan of a node made that are its own: route pairs and device link
/// terms.
#[derive(Default)]
struct Replan {
    pairs: FxHashMap<(ExplId, ExplId), ExplId>,
    links: FxHashMap<(NodeId, ExplId), ExplId>,
}

/// A cap [`Solver::set_caps`] refuses: a Site's or a SitePeering's cap enters a direct-mesh
/// component, whose cap the topology computes from all of them (set it on the topology with
/// [`Topology::set_caps`] and plan on a new solver).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the cap of {0:?} enters a direct-mesh component: set it on the topology")]
pub struct ComponentCap(pub ObjRef);

/// The resolver over one topology. Memoizes what nodes share (pair caps, edge caps, reach along
/// gateway paths, learned routes), so resolving every node costs little more than the output.
pub struct Solver<'t> {
    /// The lazily memoizing view of the topology.
    pub(crate) net: Net<'t>,
    /// Settings.
    pub(crate) settings: Settings,
    /// The explanation arena.
    pub(crate) expl: Explanations,
    /// Per node (by index): `U(n)` and its source once computed, packed (`pack_underlay`).
    underlays: Sparse<Option<std::num::NonZeroU64>, 64>,
    cap_leaves: FxHashMap<ObjRef, Option<ExplId>>,
    /// Per direct-mesh component (by index): its term once computed, packed (`pack_term`).
    comp_leaves: Sparse<u32, 256>,
    edges: FxHashMap<caps::EdgeKey, Option<ExplId>>,
    reach_memo: ReachMemo,
    /// `reach` along the paths towards one origin pool, without the delivery into the
    /// destination: shared by every destination forwarded towards that pool alone. Per gateway
    /// class, by origin pool.
    toward_memo: ClassRows<16>,
    /// The caps of the delivery into a destination on every gateway of an origin pool: every
    /// route to the destination asks, once per class of its next hops and per class of nodes.
    deliveries: FxHashMap<(Dest, PoolId), Option<ExplId>>,
    /// `reach` shares the walk towards an origin pool between destinations (off only in the
    /// test that compares it with the walk per destination).
    shared_walks: bool,
    pub_memo: FxHashMap<PubKey, Option<ExplId>>,
    /// Per gateway, what its plan publishes and the stale finding of its annotation, made once
    /// for the hops of every route that reads its published values ([`Solver::route_hops`]).
    would_publish: FxHashMap<NodeId, hops::WouldPublish>,
    link_memo: FxHashMap<(NodeId, NodeId), Option<ExplId>>,
    /// A route's first hop from a node to a next hop, and each gateway's step for a prefix
    /// ([`Solver::route_hops`]): shared by every route that takes them.
    first_hops: FxHashMap<(NodeId, NodeId), hops::Hop>,
    /// The link of a hop between two gateways, shared by the steps of every prefix.
    hop_links: FxHashMap<(NodeId, NodeId), hops::HopLink>,
    steps: FxHashMap<hops::StepKey, std::sync::Arc<hops::Step>>,
    /// Per node (by index), protocol and outer family: the auto term naming that node, as its
    /// ID + 1 (`None`: none yet).
    auto_leaves: Sparse<[Option<std::num::NonZeroU32>; 10], 64>,
    /// Per-plan scratch maps, kept to reuse their capacity.
    scratch_combos: FxHashMap<(ExplId, Option<ExplId>), ExplId>,
    scratch_pairs: FxHashMap<(ExplId, ExplId), ExplId>,
    classes: FxHashMap<ClassKey, std::sync::Arc<RouteClass>>,
    /// Caps replaced by a what-if ([`Solver::set_caps`]).
    cap_overrides: FxHashMap<ObjRef, Option<Mtu>>,
    /// Per node (by index): planned at least once by this solver.
    planned: Sparse<bool, 64>,
    /// What re-planned nodes made, reused when they are planned again (a what-if re-plans the
    /// same nodes query after query).
    replans: FxHashMap<NodeId, Replan>,
    /// geneve, vxlan, ipip, WireGuard mesh device names, shared by every plan.
    shared_names: [std::sync::Arc<str>; 4],
    published_prefixes: FxHashSet<IpNet>,
}

impl std::fmt::Debug for Solver<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Solver")
            .field("nodes", &self.topo().nodes.len())
            .field("settings", &self.settings)
            .field("explanation_terms", &self.expl.len())
            .finish_non_exhaustive()
    }
}

impl<'t> Solver<'t> {
    /// A solver over `topo`.
    /// Costs a read of what the pools' gateways published; nothing is resolved until asked.
    ///
    /// ```
    /// use mtu_solver::{Settings, Solver, load, topology_core::model::Topology};
    /// let decoded = load::from_sources([("cluster.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// let topology = Topology::build(&decoded.objects, decoded.diagnostics.clone());
    /// let settings = Settings { default_underlay: 1400, ..Settings::default() };
    /// let mut solver = Solver::new(&topology, settings);
    /// let wa = topology.find_node("wa").expect("wa");
    /// assert_eq!(solver.plan(wa).links[0].mtu.mtu.get(), 1342); // 1400 − GENEVE's 58
    /// ```
    pub fn new(topo: &'t Topology, settings: Settings) -> Self {
        // Only gateways are asked what they published (`pub_path` follows next hops), so the
        // pools' gateways are read, not every node of the cluster.
        let published_prefixes = topo
            .pools
            .iter()
            .flat_map(|p| p.gateways.iter())
            .flat_map(|g| topo.node(*g).published.iter().map(|(p, _)| *p))
            .collect();
        let shared_names = [
            settings.devices.geneve.as_str().into(),
            settings.devices.vxlan.as_str().into(),
            settings.devices.ipip.as_str().into(),
            settings.devices.wireguard_mesh.as_str().into(),
        ];
        Solver {
            net: Net::new(topo, settings.link),
            settings,
            expl: Explanations::default(),
            underlays: Sparse::default(),
            cap_leaves: FxHashMap::default(),
            comp_leaves: Sparse::default(),
            edges: FxHashMap::default(),
            reach_memo: ReachMemo::default(),
            toward_memo: ClassRows::default(),
            deliveries: FxHashMap::default(),
            shared_walks: true,
            pub_memo: FxHashMap::default(),
            would_publish: FxHashMap::default(),
            first_hops: FxHashMap::default(),
            hop_links: FxHashMap::default(),
            steps: FxHashMap::default(),
            link_memo: FxHashMap::default(),
            auto_leaves: Sparse::default(),
            scratch_combos: FxHashMap::default(),
            scratch_pairs: FxHashMap::default(),
            classes: FxHashMap::default(),
            cap_overrides: FxHashMap::default(),
            planned: Sparse::default(),
            replans: FxHashMap::default(),
            shared_names,
            published_prefixes,
        }
    }

    /// The lazily memoizing view of the topology it resolves over: links, learned routes,
    /// paths.
    /// Costs nothing: a borrow.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::topology_core::vocab::Protocol;
    /// resolver.with_solver(|solver| {
    ///     let wa = solver.topo().find_node("wa").expect("wa");
    ///     let links = solver.net().links(wa);
    ///     assert_eq!((links.len(), links[0].protocol), (1, Protocol::Geneve));
    ///     assert_eq!(&*solver.topo().node(links[0].peer).name, "wb");
    /// });
    /// ```
    pub fn net(&self) -> &Net<'t> {
        &self.net
    }

    /// The settings it resolves with.
    /// Costs nothing: a borrow.
    ///
    /// ```
    /// use mtu_solver::{Resolver, Settings, doc_cluster::TWO_SITES, load};
    /// let settings = Settings { cfg_mtu: 1300, ..Settings::default() };
    /// let resolver = Resolver::new(load::from_sources([("c.yaml", TWO_SITES)]), settings.clone());
    /// assert_eq!(resolver.with_solver(|solver| solver.settings().clone()), settings);
    /// ```
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The explanation arena: every value's explanation, by the ID its value carries.
    /// Costs nothing: a borrow.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// resolver.with_solver(|solver| {
    ///     let wa = solver.topo().find_node("wa").expect("wa");
    ///     let link = solver.plan(wa).links[0].mtu;
    ///     let arena = solver.explanations();
    ///     assert_eq!(arena.value(link.expl), link.mtu);
    ///     assert_eq!(arena.value(arena.get(link.expl).bound).get(), 1400); // the peering's cap
    /// });
    /// ```
    pub fn explanations(&self) -> &Explanations {
        &self.expl
    }

    /// The topology it resolves.
    /// Costs nothing: a borrow.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let names = resolver.with_solver(|solver| {
    ///     solver.topo().nodes.iter().map(|n| n.name.to_string()).collect::<Vec<_>>()
    /// });
    /// assert_eq!(names, ["wa", "wb"]);
    /// ```
    pub fn topo(&self) -> &'t Topology {
        self.net.topo
    }

    /// The route MTU of a learned route on node `n` (worker: gateway route; gateway: transit):
    /// the minimum over its next hops of the link, `reach` and (workers) `pubPath`, as
    /// `min(min of the links, rest)` (see `RouteClass`).
    pub(crate) fn learned_value(&mut self, n: NodeId, l: &Learned, worker: bool) -> Option<ExplId> {
        let rest = self.route_rest(l, worker, None);
        let links = self.via_links(n, &l.via, None);
        self.min2(links, rest)
    }

    /// `min over g in via of (reach(g), pubPath(g) for workers)`.
    pub(crate) fn route_rest(
        &mut self,
        l: &Learned,
        worker: bool,
        sole: Option<Option<SolePrefix>>,
    ) -> Option<ExplId> {
        let known = sole.map_or(Known::Nothing, Known::Prefix);
        let mut kids: SmallVec<[ExplId; 8]> = SmallVec::new();
        for g in &l.via {
            if let Some(r) = self.reach_known(*g, l.prefix, &l.origins, known) {
                kids.push(r);
            }
            if worker && let Some(p) = self.pub_path(*g, l.prefix, &l.origins) {
                kids.push(p);
            }
        }
        self.expl.min(&kids)
    }

    /// The minimum of `n`'s links to `via` (link explanations from `links` when given).
    pub(crate) fn via_links(
        &mut self,
        n: NodeId,
        via: &[NodeId],
        links: Option<&[LinkPlan]>,
    ) -> Option<ExplId> {
        let mut kids: SmallVec<[ExplId; 8]> = SmallVec::new();
        for g in via {
            let known = links.and_then(|plans| link_of(plans, *g).map(|lp| lp.mtu.expl));
            if let Some(e) = known.or_else(|| self.link_value(n, *g)) {
                kids.push(e);
            }
        }
        self.expl.min(&kids)
    }

    fn min2(&mut self, a: Option<ExplId>, b: Option<ExplId>) -> Option<ExplId> {
        match (a, b) {
            (Some(a), Some(b)) => self.expl.min(&[a, b]),
            (a, b) => a.or(b),
        }
    }

    /// The learned routes of `n`'s class, each with its `rest` (computed once per class).
    fn route_class(&mut self, n: NodeId) -> std::sync::Arc<RouteClass> {
        let node = self.topo().node(n);
        let (key, worker) = match node.pool() {
            None => (ClassKey::Worker(node.site), true),
            Some(p) => (ClassKey::Gateway(p, node.site), false),
        };
        if let Some(c) = self.classes.get(&key) {
            return c.clone();
        }
        let learned = self.net.learned(n);
        let sole = self.net.sole_prefixes(&learned);
        let mut via_index: FxHashMap<SmallVec<[NodeId; 4]>, u32> = FxHashMap::default();
        let mut via_sets: Vec<SmallVec<[NodeId; 4]>> = Vec::new();
        let mut rest = Vec::with_capacity(learned.len());
        for (i, l) in learned.iter().enumerate() {
            let next = u32::try_from(via_sets.len()).unwrap_or(u32::MAX);
            let v = *via_index.entry(l.via.clone()).or_insert_with(|| {
                via_sets.push(l.via.clone());
                next
            });
            rest.push((v, self.route_rest(l, worker, sole.get(i).copied())));
        }
        let c = std::sync::Arc::new(RouteClass {
            learned,
            rest,
            via_sets,
        });
        self.classes.insert(key, c.clone());
        c
    }

    /// Plans of every node, in name order.
    /// Costs a plan of every node (what nodes share is resolved once).
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let (names, fabrics) = resolver.with_solver(|solver| {
    ///     let plans = solver.plan_all();
    ///     let name = |p: &mtu_solver::NodePlan| solver.topo().node(p.node).name.to_string();
    ///     let names: Vec<String> = plans.iter().map(name).collect();
    ///     (names, plans.iter().map(|p| p.fabric.mtu.get()).collect::<Vec<_>>())
    /// });
    /// assert_eq!((names, fabrics), (vec!["wa".to_string(), "wb".into()], vec![1400, 1400]));
    /// ```
    pub fn plan_all(&mut self) -> Vec<NodePlan> {
        (0..self.topo().nodes.len())
            .map(NodeId::from_idx)
            .map(|n| self.plan(n))
            .collect()
    }
}

/// The link to `peer` in links sorted by peer.
fn link_of(links: &[LinkPlan], peer: NodeId) -> Option<&LinkPlan> {
    links
        .binary_search_by_key(&peer, |l| l.peer)
        .ok()
        .and_then(|i| links.get(i))
}

/// The first address of a prefix (its network address + 1 when there is room).
pub(crate) fn first_address(net: &IpNet) -> IpAddr {
    match net {
        IpNet::V4(n) => {
            let base = u32::from(n.network());
            let a = if n.prefix_len() < 32 {
                base.saturating_add(1)
            } else {
                base
            };
            IpAddr::V4(a.into())
        }
        IpNet::V6(n) => {
            let base = u128::from(n.network());
            let a = if n.prefix_len() < 128 {
                base.saturating_add(1)
            } else {
                base
            };
            IpAddr::V6(a.into())
        }
    }
}

/// Output order of devices: by name (unnamed last), then by peer name.
pub(crate) fn device_order(topo: &Topology, a: &DeviceRef, b: &DeviceRef) -> std::cmp::Ordering {
    fn key<'x>(topo: &'x Topology, d: &'x DeviceRef) -> (u8, &'x str, &'x str) {
        match d {
            DeviceRef::Shared(n) => (0, n, ""),
            DeviceRef::PerPeer {
                name: Some(n),
                peer,
            } => (0, n.as_str(), &topo.node(*peer).name),
            DeviceRef::PerPeer { name: None, peer } => (1, "", &topo.node(*peer).name),
            DeviceRef::Underlay => (2, "", ""),
        }
    }
    key(topo, a).cmp(&key(topo, b))
}

/// Whether a protocol source names an object (for explanations of link protocols).
/// Costs a match.
///
/// ```
/// use mtu_solver::{Resolver, Settings, doc_cluster::TWO_SITES, load, solver::protocol_object};
/// let chosen_by = |yaml: &str| {
///     let resolver = Resolver::new(load::from_sources([("c.yaml", yaml)]), Settings::default());
///     resolver.with_solver(|solver| {
///         let wa = solver.topo().find_node("wa").expect("wa");
///         let source = solver.net().links(wa)[0].protocol_source;
///         protocol_object(source).map(|o| solver.topo().label(o))
///     })
/// };
/// assert_eq!(chosen_by(TWO_SITES), None); // `Auto` chose GENEVE
/// let vxlan = TWO_SITES.replace("tunnelMTU: 1400", "tunnelMTU: 1400\n  tunnelProtocol: VXLAN");
/// assert_eq!(chosen_by(&vxlan).as_deref(), Some("SitePeering/ab"));
/// ```
pub fn protocol_object(src: ProtocolSource) -> Option<ObjRef> {
    match src {
        ProtocolSource::Object(o) => Some(o),
        _ => None,
    }
}
