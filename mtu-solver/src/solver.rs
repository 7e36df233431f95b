//! The resolver (`mtu.md` §3–7): link, route, device, fabric and published MTUs of any node,
//! each with an interned explanation. Pure: the topology and the settings are the only inputs.

use crate::explain::{ExplId, Explanations, Leaf, Minus, UnderlaySource};
use crate::overhead::overhead;
use crate::plan::*;
use ipnet::IpNet;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::collections::BTreeMap;
use std::net::IpAddr;
use topology_core::diag::{Code, Diagnostic};
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::{ObjRef, Topology};
use topology_core::mtu::{MIN_MTU, Mtu, UnderlayMtu};
use topology_core::net::{
    Dest, Learned, Link, LinkKind, LinkSettings, Net, Origin, ProtocolSource, RouteType, cut,
    prefix_order,
};
use topology_core::vocab::Protocol;

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

/// Inputs beyond the topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// Underlay MTU of nodes without annotations (`--underlay-mtu`, or the agent's own value).
    pub default_underlay: u32,
    /// The agent's configured `mtu` on every node (0 = none).
    pub cfg_mtu: u32,
    /// Per-node configured `mtu` overriding `cfg_mtu` (0 = none).
    pub cfg_overrides: BTreeMap<String, u32>,
    /// What `Auto` resolves to, and the tunnel IP family.
    pub link: LinkSettings,
    /// Underlay MTUs given for nodes (detected by the agent, or a what-if), replacing the
    /// `underlay-mtu` annotation; `underlay-mtu-max` still caps them.
    pub underlay_overrides: BTreeMap<String, u32>,
    /// Device names.
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

/// `reach` memo key: gateway class (pool, Site), prefix, and the origins the route leads to.
type ReachKey = (PoolId, SiteId, IpNet, SmallVec<[Origin; 1]>);
/// `pubPath` memo key: gateway, prefix, origins.
type PubKey = (NodeId, IpNet, SmallVec<[Origin; 1]>);

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
    learned: std::sync::Arc<[Learned]>,
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

/// The resolver over one topology. Memoizes what nodes share (pair caps, edge caps, reach along
/// gateway paths, learned routes), so resolving every node costs little more than the output.
pub struct Solver<'t> {
    /// The lazily memoizing view of the topology.
    pub net: Net<'t>,
    /// Settings.
    pub settings: Settings,
    /// The explanation arena.
    pub expl: Explanations,
    /// Per node (by index): `U(n)` and its source, once computed.
    underlays: Vec<Option<(u32, UnderlaySource)>>,
    cap_leaves: FxHashMap<ObjRef, Option<ExplId>>,
    comp_leaves: FxHashMap<SiteId, Option<ExplId>>,
    edges: FxHashMap<EdgeKey, Option<ExplId>>,
    reach_memo: FxHashMap<ReachKey, Option<ExplId>>,
    pub_memo: FxHashMap<PubKey, Option<ExplId>>,
    link_memo: FxHashMap<(NodeId, NodeId), Option<ExplId>>,
    /// Per node (by index), protocol and outer family: the auto term naming that node.
    auto_leaves: Vec<[Option<ExplId>; 10]>,
    /// Per-plan scratch maps, kept to reuse their capacity.
    scratch_combos: FxHashMap<(ExplId, Option<ExplId>), ExplId>,
    scratch_pairs: FxHashMap<(ExplId, ExplId), ExplId>,
    classes: FxHashMap<ClassKey, std::sync::Arc<RouteClass>>,
    /// Caps replaced by a what-if ([`Solver::set_caps`]).
    cap_overrides: FxHashMap<ObjRef, Option<Mtu>>,
    /// Per node (by index): planned at least once by this solver.
    planned: Vec<bool>,
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
        let published_prefixes = topo
            .nodes
            .iter()
            .flat_map(|n| n.published.iter().map(|(p, _)| *p))
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
            underlays: vec![None; topo.nodes.len()],
            cap_leaves: FxHashMap::default(),
            comp_leaves: FxHashMap::default(),
            edges: FxHashMap::default(),
            reach_memo: FxHashMap::default(),
            pub_memo: FxHashMap::default(),
            link_memo: FxHashMap::default(),
            auto_leaves: vec![[None; 10]; topo.nodes.len()],
            scratch_combos: FxHashMap::default(),
            scratch_pairs: FxHashMap::default(),
            classes: FxHashMap::default(),
            cap_overrides: FxHashMap::default(),
            planned: vec![false; topo.nodes.len()],
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
        if let Some(Some((u, s))) = self.underlays.get(n.idx()) {
            return (UnderlayMtu(*u), *s);
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
        if let Some(slot) = self.underlays.get_mut(n.idx()) {
            *slot = Some(v);
        }
        (UnderlayMtu(v.0), v.1)
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
        (v > 0).then(|| self.expl.leaf(Leaf::Cfg { node: n }, Mtu(v)))
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
        let comp = topo.component(topo.comp(s));
        let first = comp.sites.first().copied().unwrap_or(s);
        if let Some(x) = self.comp_leaves.get(&first) {
            return *x;
        }
        let r = match comp.cap {
            None => None,
            Some((_, obj)) if comp.sites.len() == 1 => self.cap_leaf(obj),
            Some((m, obj)) => Some(self.expl.leaf(Leaf::Comp { site: first, obj }, m)),
        };
        self.comp_leaves.insert(first, r);
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
    /// `Err(())` (nothing changed) when the list names a Site or SitePeering: their caps enter
    /// direct-mesh components, which the topology computes.
    #[allow(clippy::result_unit_err)]
    pub fn set_caps(
        &mut self,
        caps: &[(ObjRef, Option<Mtu>)],
    ) -> Result<Vec<(ObjRef, Option<Mtu>)>, ()> {
        if caps
            .iter()
            .any(|(o, _)| matches!(o, ObjRef::Site(_) | ObjRef::SitePeering(_)))
        {
            return Err(());
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
        self.link_memo.clear();
        self.classes.clear();
        // `reach` meets an assignment's cap only on the delivery into its Sites.
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
            self.reach_memo
                .retain(|k, _| !k.3.iter().any(|o| dests.contains(&o.dest)));
        } else {
            self.reach_memo.clear();
        }
        Ok(old)
    }

    /// The configured caps of a link (`mtu.md` §3), symmetric: both ends get the same set.
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
        if let Some(Some(x)) = self.auto_leaves.get(node.idx()).and_then(|a| a.get(slot)) {
            return *x;
        }
        let o = overhead(protocol, ipv6_outer);
        let x = self.expl.leaf(
            Leaf::Auto {
                node,
                underlay: u.0,
                source: src,
                protocol,
                overhead: o,
                ipv6_outer,
            },
            u.minus_overhead(o),
        );
        if let Some(a) = self
            .auto_leaves
            .get_mut(node.idx())
            .and_then(|a| a.get_mut(slot))
        {
            *a = Some(x);
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

    /// `reach(g, X)`: the smallest configured cap along `g`'s selected paths to `X`'s destination.
    pub fn reach(&mut self, g: NodeId, prefix: IpNet, origins: &[Origin]) -> Option<ExplId> {
        let topo = self.topo();
        let gn = topo.node(g);
        let pool = gn.pool()?;
        // `reach` depends on the destination the caller's route leads to: with identical
        // prefixes of several Sites, the origins are part of the key.
        let key = (pool, gn.site, prefix, origins.iter().copied().collect());
        if let Some(x) = self.reach_memo.get(&key) {
            return *x;
        }
        let mut kids: SmallVec<[ExplId; 8]> = SmallVec::new();
        let originated: SmallVec<[Origin; 1]> = origins
            .iter()
            .copied()
            .filter(|o| self.net.originates(g, o.dest))
            .collect();
        if !originated.is_empty() {
            for o in originated {
                match o.dest {
                    Dest::Site(d) => {
                        if let Some(c) =
                            self.edge_caps(LinkKind::Delivery, d, gn.site, Some(pool), None)
                        {
                            kids.push(c);
                        }
                    }
                    Dest::Pool(o) => {
                        if let Some(c) = self.cap_leaf(ObjRef::Pool(o)) {
                            kids.push(c);
                        }
                        if let Some(c) = self.comp_leaf(gn.site) {
                            kids.push(c);
                        }
                    }
                }
            }
        } else if let Some(l) = self.net.learned_for(g, &prefix) {
            for h in &l.via {
                let hn = topo.node(*h);
                if let Some(c) =
                    self.edge_caps(LinkKind::Transit, gn.site, hn.site, Some(pool), hn.pool())
                {
                    kids.push(c);
                }
                if let Some(c) = self.reach(*h, prefix, &l.origins) {
                    kids.push(c);
                }
            }
        }
        let r = self.expl.min(&kids);
        self.reach_memo.insert(key, r);
        r
    }

    /// `pubPath(g, X)`: the published values of every gateway on every selected path.
    pub fn pub_path(&mut self, g: NodeId, prefix: IpNet, origins: &[Origin]) -> Option<ExplId> {
        if !self.published_prefixes.contains(&prefix) {
            return None;
        }
        let key = (
            g,
            prefix,
            origins.iter().copied().collect::<SmallVec<[Origin; 1]>>(),
        );
        if let Some(x) = self.pub_memo.get(&key) {
            return *x;
        }
        let topo = self.topo();
        let mut kids: SmallVec<[ExplId; 8]> = SmallVec::new();
        if let Some(m) = topo.node(g).published_for(&prefix) {
            kids.push(self.expl.leaf(Leaf::Published { gateway: g, prefix }, m));
        }
        let originated = origins.iter().any(|o| self.net.originates(g, o.dest));
        if !originated && let Some(l) = self.net.learned_for(g, &prefix) {
            for h in &l.via {
                if let Some(c) = self.pub_path(*h, prefix, &l.origins) {
                    kids.push(c);
                }
            }
        }
        let r = self.expl.min(&kids);
        self.pub_memo.insert(key, r);
        r
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
        let rest = self.route_rest(l, worker);
        let links = self.via_links(n, &l.via, None);
        self.min2(links, rest)
    }

    /// `min over g in via of (reach(g), pubPath(g) for workers)`.
    pub(crate) fn route_rest(&mut self, l: &Learned, worker: bool) -> Option<ExplId> {
        let mut kids: SmallVec<[ExplId; 8]> = SmallVec::new();
        for g in &l.via {
            if let Some(r) = self.reach(*g, l.prefix, &l.origins) {
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
        let mut via_index: FxHashMap<SmallVec<[NodeId; 4]>, u32> = FxHashMap::default();
        let mut via_sets: Vec<SmallVec<[NodeId; 4]>> = Vec::new();
        let mut rest = Vec::with_capacity(learned.len());
        for l in learned.iter() {
            let next = u32::try_from(via_sets.len()).unwrap_or(u32::MAX);
            let v = *via_index.entry(l.via.clone()).or_insert_with(|| {
                via_sets.push(l.via.clone());
                next
            });
            rest.push((v, self.route_rest(l, worker)));
        }
        let c = std::sync::Arc::new(RouteClass {
            learned,
            rest,
            via_sets,
        });
        self.classes.insert(key, c.clone());
        c
    }

    fn pod_gateway(&self, peer: NodeId, v6: bool) -> Option<IpAddr> {
        let node = self.topo().node(peer);
        let net = node
            .pod_cidrs
            .iter()
            .find(|c| matches!(c, IpNet::V6(_)) == v6)
            .or_else(|| node.pod_cidrs.first())?;
        Some(first_address(net))
    }

    fn next_hop(&self, link: &LinkPlan, v6: bool) -> NextHop {
        NextHop {
            peer: link.peer,
            underlay_addr: link.peer_addr,
            identity_addr: self.net.identity_addr(link.peer),
            pod_gateway: self.pod_gateway(link.peer, v6),
            protocol: link.protocol,
            device: link.device.clone(),
        }
    }

    /// Resolves every value of node `n`.
    pub fn plan(&mut self, n: NodeId) -> NodePlan {
        let topo = self.topo();
        let node = topo.node(n);
        // Whether this solver plans `n` for the first time (see the route pairs below).
        let first = match self.planned.get_mut(n.idx()) {
            Some(p) => !std::mem::replace(p, true),
            None => false,
        };
        // Links.
        let links_raw = self.net.links(n);
        let mut links: Vec<LinkPlan> = Vec::with_capacity(links_raw.len());
        // Most links of a node share their terms (its own auto term, the caps of one edge):
        // combine each distinct set once.
        let mut combos = std::mem::take(&mut self.scratch_combos);
        combos.clear();
        // Peers come grouped by Site: the caps of the previous link's edge usually apply.
        type EdgeOf = (LinkKind, SiteId, Option<PoolId>);
        let mut last_edge: Option<(EdgeOf, Option<ExplId>)> = None;
        let mut last_combo: Option<((ExplId, Option<ExplId>), ExplId)> = None;
        // Direct routes over the links: (destination, type, index of the link). `Net::links` is
        // sorted by peer (node IDs order like names), so the links keep their indexes.
        let mut direct: Vec<(IpNet, RouteType, usize)> = Vec::with_capacity(links_raw.len());
        for link in links_raw {
            let at = links.len();
            self.net
                .for_each_direct_route(n, &link, |dest, ty| direct.push((dest, ty, at)));
            let auto = self.auto_leaf(n, link.peer, link.protocol, link.ipv6_outer);
            let pn = topo.node(link.peer);
            let edge = (link.kind, pn.site, pn.pool());
            let caps = match last_edge {
                Some((k, c)) if k == edge => c,
                _ => {
                    let c = self.link_caps(n, link.peer, link.kind);
                    last_edge = Some((edge, c));
                    c
                }
            };
            let cached = match last_combo {
                Some((k, e)) if k == (auto, caps) => Some(e),
                _ => combos.get(&(auto, caps)).copied(),
            };
            let e = match cached {
                Some(e) => e,
                None => {
                    let e = self.link_min(n, auto, caps);
                    combos.insert((auto, caps), e);
                    e
                }
            };
            last_combo = Some(((auto, caps), e));
            links.push(LinkPlan {
                peer: link.peer,
                kind: link.kind,
                protocol: link.protocol,
                mtu: Value {
                    mtu: self.expl.value(e),
                    expl: e,
                },
                local_addr: link.local_addr,
                peer_addr: link.peer_addr,
                device: self.device_of(&link),
            });
        }
        self.scratch_combos = combos;
        // Routes: direct routes over the links (peers' pod CIDRs, NAT'd workers' addresses). One
        // route per destination: the links that carry it are its equal-cost next hops, and a
        // destination carried as a pod CIDR by one link and as an address by another (which
        // only overlapping input makes) is a `NodePod` route.
        let mut routes: Vec<RoutePlan> = Vec::new();
        direct.sort_by(|a, b| {
            prefix_order(&a.0, &b.0)
                .then(a.1.cmp(&b.1))
                .then(a.2.cmp(&b.2))
        });
        for group in direct.chunk_by(|a, b| prefix_order(&a.0, &b.0).is_eq()) {
            let Some((dest, ty, _)) = group.first() else {
                continue;
            };
            let (dest, ty) = (IpNetKey(*dest), *ty);
            let mut idxs: SmallVec<[usize; 2]> = group.iter().map(|(_, _, i)| *i).collect();
            idxs.dedup();
            let v6 = matches!(dest.0, IpNet::V6(_));
            let kids: SmallVec<[ExplId; 4]> = idxs
                .iter()
                .filter_map(|i| links.get(*i).map(|l| l.mtu.expl))
                .collect();
            let Some(e) = self.expl.min(&kids) else {
                continue;
            };
            let mut via: SmallVec<[NodeId; 4]> = idxs
                .iter()
                .filter_map(|i| links.get(*i).map(|l| l.peer))
                .collect();
            via.sort_unstable();
            let next_hops: std::sync::Arc<[NextHop]> = idxs
                .iter()
                .filter_map(|i| links.get(*i))
                .map(|l| self.next_hop(l, v6))
                .collect();
            routes.push(RoutePlan {
                destination: dest.0,
                advertised: dest.0,
                ty,
                kind: RouteKind::Direct,
                mtu: Value {
                    mtu: self.expl.value(e),
                    expl: e,
                },
                via,
                distance: 0,
                next_hops,
            });
        }
        // Learned routes: `min(links to the next hops, rest)`, the rest shared by the class.
        let worker = !node.is_gateway();
        let class = self.route_class(n);
        let locals = &topo.site(node.site).local_cidrs;
        // Per next-hop set: the minimum of the links to it, and the next hops per family.
        let mut via_min: Vec<Option<Option<ExplId>>> = vec![None; class.via_sets.len()];
        let mut via_hops: Vec<[Option<std::sync::Arc<[NextHop]>>; 2]> =
            vec![[None, None]; class.via_sets.len()];
        // Distinct (links, rest) pairs of this node: most routes share a few.
        // A node planned before starts from what its last plan made.
        let mut kept = if first {
            None
        } else {
            Some(self.replans.remove(&n).unwrap_or_default())
        };
        let mut pairs = match kept.as_mut() {
            Some(k) => std::mem::take(&mut k.pairs),
            None => {
                let mut p = std::mem::take(&mut self.scratch_pairs);
                p.clear();
                p
            }
        };
        let mut learned_values: Vec<Option<ExplId>> = Vec::with_capacity(class.learned.len());
        routes.reserve(class.learned.len());
        for (l, (v, rest)) in class.learned.iter().zip(class.rest.iter()) {
            let vi = *v as usize;
            let links_e = match via_min.get(vi).copied().flatten() {
                Some(x) => x,
                None => {
                    let via = class.via_sets.get(vi).map(|x| x.as_slice()).unwrap_or(&[]);
                    let x = self.via_links(n, via, Some(&links));
                    if let Some(slot) = via_min.get_mut(vi) {
                        *slot = Some(x);
                    }
                    x
                }
            };
            let e = match (links_e, *rest) {
                (Some(a), Some(b)) => Some(match pairs.get(&(a, b)) {
                    Some(x) => *x,
                    None => {
                        // A node's links usually name the node itself (its own auto term), so
                        // its pairs are its own: made without a global lookup (a few percent
                        // of duplicates across nodes, against a hash probe per route). A
                        // re-planned node keeps its pairs (below), so planning it again does
                        // not grow the arena.
                        let x = self.expl.min_pair(a, b);
                        pairs.insert((a, b), x);
                        x
                    }
                }),
                (a, b) => a.or(b),
            };
            learned_values.push(e);
            let Some(e) = e else {
                continue;
            };
            let mtu = Value {
                mtu: self.expl.value(e),
                expl: e,
            };
            let v6 = matches!(l.prefix, IpNet::V6(_));
            let next_hops = match via_hops
                .get(vi)
                .and_then(|h| h.get(usize::from(v6)))
                .cloned()
                .flatten()
            {
                Some(h) => h,
                None => {
                    let h: std::sync::Arc<[NextHop]> = l
                        .via
                        .iter()
                        .filter_map(|g| link_of(&links, *g))
                        .map(|lp| self.next_hop(lp, v6))
                        .collect();
                    if let Some(slot) = via_hops
                        .get_mut(vi)
                        .and_then(|h| h.get_mut(usize::from(v6)))
                    {
                        *slot = Some(h.clone());
                    }
                    h
                }
            };
            let kind = if worker {
                RouteKind::Gateway
            } else {
                RouteKind::Transit
            };
            let mut push = |destination: IpNet| {
                routes.push(RoutePlan {
                    destination,
                    advertised: l.prefix,
                    ty: l.origin.ty,
                    kind,
                    mtu,
                    // Node IDs order like names: `via` is already in output order.
                    via: l.via.clone(),
                    distance: l.distance,
                    next_hops: next_hops.clone(),
                })
            };
            if locals.is_empty() {
                push(l.prefix);
            } else {
                for piece in cut(l.prefix, locals) {
                    push(piece);
                }
            }
        }
        routes
            .sort_by(|a, b| prefix_order(&a.destination, &b.destination).then(a.kind.cmp(&b.kind)));
        match kept.as_mut() {
            Some(k) => k.pairs = pairs,
            None => self.scratch_pairs = pairs,
        }
        // Devices.
        let mut dev_links: BTreeMap<DeviceRef, (Protocol, SmallVec<[ExplId; 4]>)> = BTreeMap::new();
        for l in &links {
            if l.device == DeviceRef::Underlay {
                continue;
            }
            let leaf = match kept.as_mut() {
                Some(k) => *k
                    .links
                    .entry((l.peer, l.mtu.expl))
                    .or_insert_with(|| self.expl.link(n, l.peer, l.mtu.expl)),
                None => self.expl.link(n, l.peer, l.mtu.expl),
            };
            dev_links
                .entry(l.device.clone())
                .or_insert_with(|| (l.protocol, SmallVec::new()))
                .1
                .push(leaf);
        }
        if let Some(k) = kept {
            self.replans.insert(n, k);
        }
        let mut devices: Vec<DevicePlan> = Vec::new();
        for (device, (protocol, kids)) in dev_links {
            if let Some(e) = self.expl.max(&kids) {
                devices.push(DevicePlan {
                    device,
                    protocol,
                    mtu: Value {
                        mtu: self.expl.value(e),
                        expl: e,
                    },
                });
            }
        }
        devices.sort_by(|a, b| device_order(topo, &a.device, &b.device));
        // Fabric.
        let mut kids: SmallVec<[ExplId; 8]> = SmallVec::new();
        if let Some(c) = self.cfg_leaf(n) {
            kids.push(c);
        }
        if let Some(c) = self.comp_leaf(node.site) {
            kids.push(c);
        }
        if let Some(p) = node.pool()
            && let Some(c) = self.cap_leaf(ObjRef::Pool(p))
        {
            kids.push(c);
        }
        for l in &links {
            kids.push(l.mtu.expl);
        }
        let base = match links.first() {
            Some(l) => l.mtu.expl,
            None => {
                // No link yet: the family of the node's own (private) underlay address.
                let ipv6_outer = self.net.outer_ipv6(self.net.underlay_addr(n, false), None);
                self.underlay_minus(n, Protocol::WireGuard, ipv6_outer)
            }
        };
        let fabric_e = self.expl.min_with(base, &kids);
        let fabric = Value {
            mtu: self.expl.value(fabric_e),
            expl: fabric_e,
        };
        // Published values (gateways).
        let published = node
            .pool()
            .map(|p| self.published(n, p, &links, &class.learned, &learned_values));
        let mut diagnostics = Vec::new();
        if node.has_ipv6_pods() {
            let mut low: Vec<String> = Vec::new();
            if fabric.mtu.0 < 1280 {
                low.push(format!("fabric {}", fabric.mtu));
            }
            for l in &links {
                if l.mtu.mtu.0 < 1280 {
                    low.push(format!("link to {} {}", topo.node(l.peer).name, l.mtu.mtu));
                }
            }
            for r in &routes {
                if r.mtu.mtu.0 < 1280 {
                    low.push(format!("route {} {}", r.destination, r.mtu.mtu));
                }
            }
            for d in &devices {
                if d.mtu.mtu.0 < 1280 {
                    low.push(format!(
                        "device {} {}",
                        device_label(topo, &d.device),
                        d.mtu.mtu
                    ));
                }
            }
            for p in published.iter().flatten() {
                if p.mtu.mtu.0 < 1280 {
                    low.push(format!("published {} {}", p.destination, p.mtu.mtu));
                }
            }
            if !low.is_empty() {
                let n_low = low.len();
                low.truncate(3);
                diagnostics.push(Diagnostic::new(
                    Code::Ipv6Below1280,
                    format!("Node/{}", node.name),
                    "",
                    format!(
                        "the node has IPv6 pod CIDRs but {n_low} value(s) are below 1280 (IPv6 needs 1280): {}",
                        low.join(", ")
                    ),
                    node.loc.clone(),
                ));
            }
        }
        NodePlan {
            node: n,
            identity_addr: self.net.identity_addr(n),
            site: node.site,
            pool: node.pool(),
            mss_ipv4: fabric.mtu.0.saturating_sub(40),
            mss_ipv6: fabric.mtu.0.saturating_sub(60),
            fabric,
            links,
            routes,
            devices,
            published,
            diagnostics,
        }
    }

    fn published(
        &mut self,
        g: NodeId,
        pool: PoolId,
        links: &[LinkPlan],
        learned: &[Learned],
        learned_values: &[Option<ExplId>],
    ) -> Vec<Published> {
        let topo = self.topo();
        let gn = topo.node(g);
        // (prefix, term) pairs, grouped by prefix below. The learned ones come in prefix order.
        let mut by_prefix: Vec<(IpNet, ExplId)> = Vec::with_capacity(learned.len());
        // Learned prefixes: the transit route MTU, by the uncut prefix (also when `localCidrs`
        // cut the installed route away entirely).
        for (l, e) in learned.iter().zip(learned_values) {
            if let Some(e) = e {
                by_prefix.push((l.prefix, *e));
            }
        }
        // Served Sites' prefixes: the smallest delivery link MTU into the Site.
        let served: Vec<SiteId> = self.net.served_sites(pool).to_vec();
        for d in served {
            let site = topo.site(d);
            let mut kids: SmallVec<[ExplId; 8]> = links
                .iter()
                .filter(|l| l.kind == LinkKind::Delivery && topo.node(l.peer).site == d)
                .map(|l| l.mtu.expl)
                .collect();
            if kids.is_empty() {
                let (protocol, ipv6_outer) = self.hypothetical_delivery(g, d);
                kids.push(self.underlay_minus(g, protocol, ipv6_outer));
                if let Some(c) = self.cfg_leaf(g) {
                    kids.push(c);
                }
                if let Some(c) = self.edge_caps(LinkKind::Delivery, d, gn.site, Some(pool), None) {
                    kids.push(c);
                }
            }
            let Some(e) = self.expl.min(&kids) else {
                continue;
            };
            for p in site.pod_blocks.iter().chain(site.node_cidrs.iter()) {
                by_prefix.push((*p, e));
            }
        }
        // Own routed prefixes.
        let routed = topo.pool(pool).routed_cidrs.clone();
        if !routed.is_empty() {
            let mut kids: SmallVec<[ExplId; 8]> = SmallVec::new();
            let (u, src) = self.underlay(g);
            kids.push(self.expl.leaf(
                Leaf::Underlay {
                    node: g,
                    underlay: u.0,
                    source: src,
                    minus: None,
                },
                u.unencapsulated(),
            ));
            if let Some(c) = self.cfg_leaf(g) {
                kids.push(c);
            }
            if let Some(c) = self.cap_leaf(ObjRef::Pool(pool)) {
                kids.push(c);
            }
            if let Some(c) = self.comp_leaf(gn.site) {
                kids.push(c);
            }
            if let Some(e) = self.expl.min(&kids) {
                for p in routed {
                    by_prefix.push((p, e));
                }
            }
        }
        // Stable: a long sorted run and a short tail.
        by_prefix.sort_by(|a, b| prefix_order(&a.0, &b.0));
        let mut out = Vec::with_capacity(by_prefix.len());
        for group in by_prefix.chunk_by(|a, b| prefix_order(&a.0, &b.0).is_eq()) {
            let Some((p, _)) = group.first() else {
                continue;
            };
            let kids: SmallVec<[ExplId; 4]> = group.iter().map(|(_, e)| *e).collect();
            if let Some(e) = self.expl.min(&kids) {
                out.push(Published {
                    destination: *p,
                    mtu: Value {
                        mtu: self.expl.value(e),
                        expl: e,
                    },
                });
            }
        }
        out
    }

    /// `U(n) − O(protocol, family)` as a term naming node `n`.
    fn underlay_minus(&mut self, n: NodeId, protocol: Protocol, ipv6_outer: bool) -> ExplId {
        let (u, src) = self.underlay(n);
        let o = overhead(protocol, ipv6_outer);
        self.expl.leaf(
            Leaf::Underlay {
                node: n,
                underlay: u.0,
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

/// Sort key wrapper giving prefixes the output order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IpNetKey(IpNet);
impl PartialOrd for IpNetKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for IpNetKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        prefix_order(&self.0, &other.0)
    }
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

fn device_label(topo: &Topology, d: &DeviceRef) -> String {
    match d {
        DeviceRef::Shared(n) => n.to_string(),
        DeviceRef::PerPeer { name: Some(n), .. } => n.clone(),
        DeviceRef::PerPeer { name: None, peer } => {
            format!("(WireGuard for {})", topo.node(*peer).name)
        }
        DeviceRef::Underlay => "underlay".to_string(),
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
