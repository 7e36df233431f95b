//! The resolver: link, route, device, fabric and published MTUs of any node,
//! each with an interned explanation. Pure: the topology and the settings are the only inputs.

use crate::explain::{ExplId, Explanations, Leaf, Minus, UnderlaySource};
use crate::overhead::overhead;
use crate::plan::*;
use ipnet::IpNet;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::net::IpAddr;
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::{ObjRef, Topology};
use topology_core::mtu::{MIN_MTU, Mtu, UnderlayMtu};
use topology_core::net::{
    Dest, Learned, Link, LinkKind, LinkSettings, Net, ProtocolSource, SolePrefix,
};
use topology_core::vocab::Protocol;

pub mod hops;
mod node_plan;
pub mod published;
mod reach;
mod tables;

pub use node_plan::may_find;
use reach::{Known, PubKey, ReachMemo};
use tables::{ClassRows, Sparse, pack_term, unpack_term};

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

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct EdgeKey {
    kind: u8,
    a: SiteId,
    b: SiteId,
    p: Option<PoolId>,
    q: Option<PoolId>,
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
    pub net: Net<'t>,
    /// Settings.
    pub settings: Settings,
    /// The explanation arena.
    pub expl: Explanations,
    /// Per node (by index): `U(n)` and its source once computed, packed (`pack_underlay`).
    underlays: Sparse<Option<std::num::NonZeroU64>, 64>,
    cap_leaves: FxHashMap<ObjRef, Option<ExplId>>,
    /// Per direct-mesh component (by index): its term once computed, packed (`pack_term`).
    comp_leaves: Sparse<u32, 256>,
    edges: FxHashMap<EdgeKey, Option<ExplId>>,
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

impl<'t> Solver<'t> {
    /// A solver over `topo`.
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

    /// The topology.
    pub fn topo(&self) -> &'t Topology {
        self.net.topo
    }

    /// `U(n)` and where it came from.
    pub fn underlay(&mut self, n: NodeId) -> (UnderlayMtu, UnderlaySource) {
        if let Some(x) = self.underlays.get(n.idx()) {
            let (u, s) = unpack_underlay(x);
            return (UnderlayMtu::or_min(u), s);
        }
        let node = self.topo().node(n);
        let given = self
            .settings
            .underlay_overrides
            .get(&*node.name)
            .map(|v| (*v, UnderlaySource::Override))
            .or_else(|| {
                node.underlay.as_ref().map(|u| {
                    let src = if u.invalid.is_some() {
                        UnderlaySource::Invalid
                    } else {
                        UnderlaySource::Annotation
                    };
                    (u.mtu, src)
                })
            });
        let max = node.underlay_max.as_ref().map(|u| {
            let src = if u.invalid.is_some() {
                UnderlaySource::Invalid
            } else {
                UnderlaySource::Max
            };
            (u.mtu, src)
        });
        let v = match (given, max) {
            (Some(g), Some(m)) => {
                if m.0 < g.0 {
                    m
                } else {
                    g
                }
            }
            (Some(g), None) => g,
            (None, Some(m)) => m,
            (None, None) => (
                self.settings.default_underlay.max(MIN_MTU),
                UnderlaySource::Default,
            ),
        };
        if let Some(slot) = self.underlays.slot(n.idx()) {
            *slot = Some(pack_underlay(v.0, v.1));
        }
        (UnderlayMtu::or_min(v.0), v.1)
    }

    pub(crate) fn cfg_of(&self, n: NodeId) -> u32 {
        let name = &*self.topo().node(n).name;
        self.settings
            .cfg_overrides
            .get(name)
            .copied()
            .unwrap_or(self.settings.cfg_mtu)
    }

    fn cfg_leaf(&mut self, n: NodeId) -> Option<ExplId> {
        let v = self.cfg_of(n);
        (v > 0).then(|| self.expl.leaf(Leaf::Cfg { node: n }, Mtu::cap_or_min(v)))
    }

    /// The term of an object's own cap.
    pub fn cap_leaf(&mut self, obj: ObjRef) -> Option<ExplId> {
        if let Some(x) = self.cap_leaves.get(&obj) {
            return *x;
        }
        let r = self
            .cap_value(obj)
            .map(|m| self.expl.leaf(Leaf::Cap { obj }, m));
        self.cap_leaves.insert(obj, r);
        r
    }

    /// The term of `comp(s)`.
    pub fn comp_leaf(&mut self, s: SiteId) -> Option<ExplId> {
        let topo = self.topo();
        let c = topo.comp(s);
        if let Some(x) = unpack_term(self.comp_leaves.get(c.idx())) {
            return x;
        }
        let comp = topo.component(c);
        let first = comp.sites.first().copied().unwrap_or(s);
        let r = match comp.cap {
            None => None,
            Some((_, obj)) if comp.sites.len() == 1 => self.cap_leaf(obj),
            Some((m, obj)) => Some(self.expl.leaf(Leaf::Comp { site: first, obj }, m)),
        };
        if let Some(slot) = self.comp_leaves.slot(c.idx()) {
            *slot = pack_term(r);
        }
        r
    }

    /// An object's cap in the current view (the topology's, or a what-if's replacement).
    fn cap_value(&self, obj: ObjRef) -> Option<Mtu> {
        match self.cap_overrides.get(&obj) {
            Some(v) => *v,
            None => self.topo().cap_of(obj).map(|c| c.mtu),
        }
    }

    fn pair_cap_leaves(&mut self, caps: &[(Mtu, ObjRef)], out: &mut SmallVec<[ExplId; 8]>) {
        for (_, o) in caps {
            if let Some(l) = self.cap_leaf(*o) {
                out.push(l);
            }
        }
    }

    /// Replaced caps of objects the topology lists without one (the pair memos list capped
    /// objects only) that relate the edge: assignments of `(site, pool)` (`Some(site)`) or pool
    /// peerings of `(p, q)` (`None`).
    fn added_cap_leaves(
        &mut self,
        site: Option<SiteId>,
        p: PoolId,
        q: Option<PoolId>,
        out: &mut SmallVec<[ExplId; 8]>,
    ) {
        if self.cap_overrides.is_empty() {
            return;
        }
        let topo = self.topo();
        let added: SmallVec<[ObjRef; 2]> = self
            .cap_overrides
            .iter()
            .filter(|(o, v)| v.is_some() && topo.cap_of(**o).is_none())
            .map(|(o, _)| *o)
            .filter(|o| match (*o, site, q) {
                (ObjRef::Assignment(a), Some(s), _) => {
                    topo.assignments_of(s).contains(&a) && topo.assignments_of_pool(p).contains(&a)
                }
                (ObjRef::PoolPeering(r), None, Some(q)) => {
                    topo.pool_peerings_of(p).contains(&r) && topo.pool_peerings_of(q).contains(&r)
                }
                _ => false,
            })
            .collect();
        for o in added {
            if let Some(l) = self.cap_leaf(o) {
                out.push(l);
            }
        }
    }

    /// Replaces the caps of assignments, pools and pool peerings (a what-if), or restores them
    /// (an empty list). Forwarding, links, underlays, published values and the explanation
    /// arena are kept; the memos that depend on caps are dropped, so values the change does not
    /// touch come out as the same explanation nodes. Returns the replacements it undid, or
    /// [`ComponentCap`] (nothing changed) when the list names a Site or SitePeering.
    pub fn set_caps(
        &mut self,
        caps: &[(ObjRef, Option<Mtu>)],
    ) -> Result<Vec<(ObjRef, Option<Mtu>)>, ComponentCap> {
        if let Some((o, _)) = caps
            .iter()
            .find(|(o, _)| matches!(o, ObjRef::Site(_) | ObjRef::SitePeering(_)))
        {
            return Err(ComponentCap(*o));
        }
        let old: Vec<(ObjRef, Option<Mtu>)> = self.cap_overrides.drain().collect();
        let mut changed: SmallVec<[ObjRef; 4]> = old.iter().map(|(o, _)| *o).collect();
        changed.extend(caps.iter().map(|(o, _)| *o));
        self.cap_overrides = caps.iter().copied().collect();
        let topo = self.topo();
        for o in &changed {
            self.cap_leaves.remove(o);
        }
        self.edges.clear();
        self.deliveries.clear();
        self.would_publish.clear();
        self.link_memo.clear();
        self.classes.clear();
        // `reach` meets an assignment's cap only on the delivery into its Sites (never on the
        // paths towards an origin pool: `toward_memo` stays).
        if changed.iter().all(|o| matches!(o, ObjRef::Assignment(_))) {
            let dests: FxHashSet<Dest> = changed
                .iter()
                .filter_map(|o| match o {
                    ObjRef::Assignment(a) => Some(topo.assignment(*a).sites.iter()),
                    _ => None,
                })
                .flatten()
                .map(|s| Dest::Site(*s))
                .collect();
            let sole = self.net.sole_prefixes_leading_to(|d| dests.contains(&d));
            self.reach_memo.forget_leading_to(&dests, &sole);
        } else {
            self.reach_memo.clear();
            self.toward_memo.clear();
        }
        Ok(old)
    }

    /// The configured caps of a link (the `tunnelMTU` of its Sites, pools, peerings and
    /// assignments, and the agent's `mtu`), symmetric: both ends get the same set.
    /// `worker_site` is the worker's Site for uplinks and deliveries.
    fn edge_caps(
        &mut self,
        kind: LinkKind,
        a: SiteId,
        b: SiteId,
        p: Option<PoolId>,
        q: Option<PoolId>,
    ) -> Option<ExplId> {
        let kind_code = match kind {
            LinkKind::Mesh => 0u8,
            LinkKind::Uplink | LinkKind::Delivery => 1,
            LinkKind::PoolMesh => 2,
            LinkKind::Transit => 3,
        };
        // Canonical orientation: uplink/delivery as (worker Site, gateway Site, pool).
        let (a, b, p, q) = match kind_code {
            1 => (a, b, p, None),
            _ => {
                if (a, p) <= (b, q) {
                    (a, b, p, q)
                } else {
                    (b, a, q, p)
                }
            }
        };
        let key = EdgeKey {
            kind: kind_code,
            a,
            b,
            p,
            q,
        };
        if let Some(x) = self.edges.get(&key) {
            return *x;
        }
        let mut kids: SmallVec<[ExplId; 8]> = SmallVec::new();
        if let Some(l) = self.comp_leaf(a) {
            kids.push(l);
        }
        if let Some(l) = self.comp_leaf(b) {
            kids.push(l);
        }
        if a != b {
            let pair = self.net.site_pair(a, b);
            self.pair_cap_leaves(&pair.caps, &mut kids);
        }
        match kind_code {
            1 => {
                if let Some(p) = p {
                    let s = self.net.sgpa(a, p);
                    self.pair_cap_leaves(&s.caps, &mut kids);
                    self.added_cap_leaves(Some(a), p, None, &mut kids);
                    if let Some(l) = self.cap_leaf(ObjRef::Pool(p)) {
                        kids.push(l);
                    }
                }
            }
            2 => {
                if let Some(l) = p.and_then(|p| self.cap_leaf(ObjRef::Pool(p))) {
                    kids.push(l);
                }
            }
            3 => {
                if let (Some(p), Some(q)) = (p, q) {
                    let g = self.net.gpp(p, q);
                    self.pair_cap_leaves(&g.caps, &mut kids);
                    self.added_cap_leaves(None, p, Some(q), &mut kids);
                    for x in [p, q] {
                        if let Some(l) = self.cap_leaf(ObjRef::Pool(x)) {
                            kids.push(l);
                        }
                    }
                }
            }
            _ => {}
        }
        let r = self.expl.min(&kids);
        self.edges.insert(key, r);
        r
    }

    /// Configured caps of the link `n–peer` of kind `kind`.
    pub(crate) fn link_caps(&mut self, n: NodeId, peer: NodeId, kind: LinkKind) -> Option<ExplId> {
        let topo = self.topo();
        let (a, b) = (topo.node(n), topo.node(peer));
        match kind {
            LinkKind::Uplink => self.edge_caps(kind, a.site, b.site, b.pool(), None),
            LinkKind::Delivery => self.edge_caps(kind, b.site, a.site, a.pool(), None),
            _ => self.edge_caps(kind, a.site, b.site, a.pool(), b.pool()),
        }
    }

    /// The auto term of a link: `min(U(a), U(b)) − O(P, outer family)`.
    fn auto_leaf(
        &mut self,
        n: NodeId,
        peer: NodeId,
        protocol: Protocol,
        ipv6_outer: bool,
    ) -> ExplId {
        let (ua, sa) = self.underlay(n);
        let (ub, sb) = self.underlay(peer);
        let (node, u, src) = if ua <= ub {
            (n, ua, sa)
        } else {
            (peer, ub, sb)
        };
        let slot = auto_slot(protocol, ipv6_outer);
        if let Some(Some(x)) = self.auto_leaves.get(node.idx()).get(slot) {
            return ExplId(x.get().saturating_sub(1));
        }
        let o = overhead(protocol, ipv6_outer);
        let x = self.expl.leaf(
            Leaf::Auto {
                node,
                underlay: u.get(),
                source: src,
                protocol,
                overhead: o,
                ipv6_outer,
            },
            u.minus_overhead(o),
        );
        if let Some(a) = self
            .auto_leaves
            .slot(node.idx())
            .and_then(|a| a.get_mut(slot))
        {
            *a = x.0.checked_add(1).and_then(std::num::NonZeroU32::new);
        }
        x
    }

    /// The MTU of the link from `n` to `peer` with its explanation (None when not linked).
    pub fn link_value(&mut self, n: NodeId, peer: NodeId) -> Option<ExplId> {
        if let Some(x) = self.link_memo.get(&(n, peer)) {
            return *x;
        }
        let r = self.net.link(n, peer).map(|link| self.link_expl(n, &link));
        self.link_memo.insert((n, peer), r);
        r
    }

    fn link_expl(&mut self, n: NodeId, link: &Link) -> ExplId {
        let auto = self.auto_leaf(n, link.peer, link.protocol, link.ipv6_outer);
        let caps = self.link_caps(n, link.peer, link.kind);
        self.link_min(n, auto, caps)
    }

    /// A link's MTU from its terms: `min(auto, cfg(n), configured caps)`.
    fn link_min(&mut self, n: NodeId, auto: ExplId, caps: Option<ExplId>) -> ExplId {
        let kids: SmallVec<[ExplId; 2]> = self.cfg_leaf(n).into_iter().chain(caps).collect();
        // The auto term is always present, so the minimum always exists.
        self.expl.min_with(auto, &kids)
    }

    fn device_of(&self, link: &Link) -> DeviceRef {
        let topo = self.topo();
        match link.protocol {
            Protocol::WireGuard => {
                let peer = topo.node(link.peer);
                if peer.is_gateway() {
                    DeviceRef::PerPeer {
                        name: peer.wg_port.map(|p| format!("wg{p}")),
                        peer: link.peer,
                    }
                } else {
                    DeviceRef::Shared(self.shared_names[3].clone())
                }
            }
            Protocol::Geneve => DeviceRef::Shared(self.shared_names[0].clone()),
            Protocol::Vxlan => DeviceRef::Shared(self.shared_names[1].clone()),
            Protocol::Ipip => DeviceRef::Shared(self.shared_names[2].clone()),
            Protocol::None => DeviceRef::Underlay,
        }
    }

    /// The route MTU of a learned route on node `n` (worker: gateway route; gateway: transit):
    /// the minimum over its next hops of the link, `reach` and (workers) `pubPath`, as
    /// `min(min of the links, rest)` (see `RouteClass`).
    pub fn learned_value(&mut self, n: NodeId, l: &Learned, worker: bool) -> Option<ExplId> {
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

    /// `U(n) − O(protocol, family)` as a term naming node `n`.
    fn underlay_minus(&mut self, n: NodeId, protocol: Protocol, ipv6_outer: bool) -> ExplId {
        let (u, src) = self.underlay(n);
        let o = overhead(protocol, ipv6_outer);
        self.expl.leaf(
            Leaf::Underlay {
                node: n,
                underlay: u.get(),
                source: src,
                minus: Some(Minus {
                    protocol,
                    overhead: o,
                    ipv6_outer,
                }),
            },
            u.minus_overhead(o),
        )
    }

    /// The protocol a delivery link from gateway `g` into Site `d` would take, and whether its
    /// outer family is IPv6 (by the gateway's own underlay address towards `d`: the worker end
    /// is unknown while `d` has no worker).
    fn hypothetical_delivery(&mut self, g: NodeId, d: SiteId) -> (Protocol, bool) {
        let topo = self.topo();
        let gn = topo.node(g);
        let explicit = gn
            .pool()
            .and_then(|p| self.net.sgpa(d, p).protocol)
            .map(|x| x.0)
            .or_else(|| {
                if gn.site == d {
                    topo.site(d).protocol
                } else {
                    None
                }
            });
        let external = gn.pool().is_some_and(|p| !topo.pool(p).internal);
        let public = gn.site != d && !self.net.network_peered(gn.site, d) && external;
        let ipv6_outer = self.net.outer_ipv6(self.net.underlay_addr(g, public), None);
        let protocol = match explicit {
            Some(p) => p,
            None if public => self.settings.link.public_encap,
            None => self.settings.link.private_encap,
        };
        (protocol, ipv6_outer)
    }

    /// Plans of every node, in name order.
    pub fn plan_all(&mut self) -> Vec<NodePlan> {
        (0..self.topo().nodes.len())
            .map(NodeId::from_idx)
            .map(|n| self.plan(n))
            .collect()
    }
}

/// The sources in packing order.
const UNDERLAY_SOURCES: [UnderlaySource; 5] = [
    UnderlaySource::Annotation,
    UnderlaySource::Max,
    UnderlaySource::Default,
    UnderlaySource::Override,
    UnderlaySource::Invalid,
];

/// An underlay and its source as one non-zero word: the value in the low 32 bits, the source's
/// index in `UNDERLAY_SOURCES` above it, and bit 63 set.
fn pack_underlay(u: u32, s: UnderlaySource) -> std::num::NonZeroU64 {
    let i = UNDERLAY_SOURCES.iter().position(|x| *x == s).unwrap_or(0) as u64;
    // Bit 63 makes the word non-zero whatever the value.
    std::num::NonZeroU64::new(1u64 << 63 | i << 32 | u64::from(u))
        .unwrap_or(std::num::NonZeroU64::MIN)
}

fn unpack_underlay(x: std::num::NonZeroU64) -> (u32, UnderlaySource) {
    let x = x.get();
    let i = usize::try_from((x >> 32) & 0xff).unwrap_or(0);
    let u = u32::try_from(x & u64::from(u32::MAX)).unwrap_or(0);
    (
        u,
        UNDERLAY_SOURCES
            .get(i)
            .copied()
            .unwrap_or(UnderlaySource::Default),
    )
}

/// The index of a protocol in per-protocol arrays.
fn protocol_slot(p: Protocol) -> usize {
    match p {
        Protocol::WireGuard => 0,
        Protocol::Geneve => 1,
        Protocol::Vxlan => 2,
        Protocol::Ipip => 3,
        Protocol::None => 4,
    }
}

/// The index of an auto term in a node's array: per protocol, the IPv4 then the IPv6 column.
fn auto_slot(p: Protocol, ipv6_outer: bool) -> usize {
    protocol_slot(p)
        .saturating_mul(2)
        .saturating_add(usize::from(ipv6_outer))
}

/// The link to `peer` in links sorted by peer.
fn link_of(links: &[LinkPlan], peer: NodeId) -> Option<&LinkPlan> {
    links
        .binary_search_by_key(&peer, |l| l.peer)
        .ok()
        .and_then(|i| links.get(i))
}

/// The first address of a prefix (its network address + 1 when there is room).
pub fn first_address(net: &IpNet) -> IpAddr {
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
pub fn device_order(topo: &Topology, a: &DeviceRef, b: &DeviceRef) -> std::cmp::Ordering {
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
pub fn protocol_object(src: ProtocolSource) -> Option<ObjRef> {
    match src {
        ProtocolSource::Object(o) => Some(o),
        _ => None,
    }
}
