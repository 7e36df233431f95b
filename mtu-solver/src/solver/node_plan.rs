//! Planning one node ([`Solver::plan`]): its links, the routes over them, its devices, its
//! fabric and, on a gateway, its published values, each a step below, and the findings over the
//! values they made (the IPv6 floor, a published annotation this input disagrees with).

use super::{Replan, RouteClass, Solver, device_order, first_address, link_of};
use crate::explain::{ExplId, Leaf};
use crate::plan::*;
use ipnet::IpNet;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use topology_core::diag::{Code, Diagnostic};
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::{NodeInfo, ObjRef, Topology};
use topology_core::mtu::Mtu;
use topology_core::net::{Learned, LinkKind, RouteType, cut, prefix_order};
use topology_core::vocab::Protocol;

/// A direct route over a link before routes are grouped: destination, type, index of the link.
type Direct = (IpNet, RouteType, usize);

/// IPv6 needs every link of a path to carry at least this many octets (RFC 8200 §5).
const IPV6_MIN_MTU: u32 = 1280;

/// What the learned routes of one node share while they are made.
struct LearnedMemo {
    /// Per next-hop set of the class: the minimum of the node's links to it, once made.
    via_min: Vec<Option<Option<ExplId>>>,
    /// Per next-hop set of the class: its next hops per family (IPv4, IPv6), once made.
    via_hops: Vec<[Option<Arc<[NextHop]>>; 2]>,
    /// The node's distinct (links, rest) pairs and their minimum.
    pairs: FxHashMap<(ExplId, ExplId), ExplId>,
}

/// Appends the routes of learned route `l` with its value and next hops: one for its prefix,
/// or one per piece left when the Site's `localCidrs` are cut out of it.
fn push_learned(
    routes: &mut Vec<RoutePlan>,
    l: &Learned,
    kind: RouteKind,
    mtu: Value,
    next_hops: &Arc<[NextHop]>,
    locals: &[IpNet],
) {
    let mut push = |destination: IpNet| {
        routes.push(RoutePlan {
            destination,
            advertised: l.prefix,
            ty: l.origin.ty,
            kind,
            mtu,
            // Node IDs order like names: `via` is already in output order.
            via: SmallVec::from_slice(&l.via),
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

impl Solver<'_> {
    /// Resolves every value of node `n`. The steps run in this order because each one adds to
    /// the explanation arena the next ones read: links, direct then learned routes, devices,
    /// fabric, published values.
    /// Costs a resolve of the node's values; what earlier plans memoized (pair caps, reach,
    /// its class's learned routes) is reused.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// resolver.with_solver(|solver| {
    ///     let wa = solver.topo().find_node("wa").expect("wa");
    ///     let plan = solver.plan(wa);
    ///     assert_eq!((plan.fabric.mtu.get(), plan.links[0].mtu.mtu.get()), (1400, 1400));
    ///     let again = solver.plan(wa); // planned again: the same values
    ///     assert_eq!((again.links, again.routes), (plan.links, plan.routes));
    /// });
    /// ```
    pub fn plan(&mut self, n: NodeId) -> NodePlan {
        let node = self.topo().node(n);
        let first = self.first_plan(n);
        let (links, direct, unpathed) = self.plan_links(n);
        let mut routes = self.direct_routes(&links, direct);
        // A node planned before starts from the explanation nodes its last plan made.
        let mut kept = if first {
            None
        } else {
            Some(self.replans.remove(&n).unwrap_or_default())
        };
        let (class, learned_values) = self.learned_routes(n, &links, kept.as_mut(), &mut routes);
        routes
            .sort_by(|a, b| prefix_order(&a.destination, &b.destination).then(a.kind.cmp(&b.kind)));
        let devices = self.plan_devices(n, &links, kept.as_mut());
        if let Some(k) = kept {
            self.replans.insert(n, k);
        }
        let fabric = self.plan_fabric(n, &links, &unpathed);
        let published = node
            .pool()
            .map(|p| self.published(n, p, &links, &class.learned, &learned_values));
        let stale = published
            .as_deref()
            .and_then(|p| super::published::stale_finding(self.topo(), n, p));
        let diagnostics = ipv6_floor(
            self.topo(),
            n,
            &fabric,
            &links,
            &routes,
            &devices,
            published.as_deref(),
        )
        .into_iter()
        .chain(stale)
        .collect();
        NodePlan {
            node: n,
            identity_addr: self.net.identity_addr(n),
            site: node.site,
            pool: node.pool(),
            mss_ipv4: fabric.mtu.get().saturating_sub(40),
            mss_ipv6: fabric.mtu.get().saturating_sub(60),
            fabric,
            links,
            routes,
            devices,
            published,
            diagnostics,
        }
    }

    /// Marks `n` planned: true when this solver plans it for the first time (a node planned
    /// before keeps the route pairs and device terms its last plan made).
    fn first_plan(&mut self, n: NodeId) -> bool {
        match self.planned.slot(n.idx()) {
            Some(p) => !std::mem::replace(p, true),
            None => false,
        }
    }

    /// The links of `n`, sorted by peer, the direct routes over them, and for each link bounded
    /// by a probed path MTU, its index and its value without that term (for the fabric).
    fn plan_links(&mut self, n: NodeId) -> (Vec<LinkPlan>, Vec<Direct>, Vec<(usize, ExplId)>) {
        let topo = self.topo();
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
        // `Net::links` is sorted by peer (node IDs order like names), so the links keep the
        // indexes the direct routes name.
        let mut direct: Vec<Direct> = Vec::with_capacity(links_raw.len());
        let mut unpathed: Vec<(usize, ExplId)> = Vec::new();
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
            let (e, without) = self.with_path(n, &link, e);
            if let Some(w) = without {
                unpathed.push((at, w));
            }
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
        (links, direct, unpathed)
    }

    /// Direct routes over the links (peers' pod CIDRs, NAT'd workers' addresses). One route
    /// per destination: the links that carry it are its equal-cost next hops, and a destination
    /// carried as a pod CIDR by one link and as an address by another (which only overlapping
    /// input makes) is a `NodePod` route.
    fn direct_routes(&mut self, links: &[LinkPlan], mut direct: Vec<Direct>) -> Vec<RoutePlan> {
        // At most one route per direct route (a gateway has thousands).
        let mut routes: Vec<RoutePlan> = Vec::with_capacity(direct.len());
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
            let carrying: SmallVec<[&LinkPlan; 2]> =
                idxs.iter().filter_map(|i| links.get(*i)).collect();
            let v6 = matches!(dest.0, IpNet::V6(_));
            let kids: SmallVec<[ExplId; 4]> = carrying.iter().map(|l| l.mtu.expl).collect();
            let Some(e) = self.expl.min(&kids) else {
                continue;
            };
            let mut via: SmallVec<[NodeId; 4]> = carrying.iter().map(|l| l.peer).collect();
            via.sort_unstable();
            // From an iterator of known length: the slice is allocated once, in place.
            let next_hops: std::sync::Arc<[NextHop]> =
                carrying.iter().map(|l| self.next_hop(l, v6)).collect();
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
        routes
    }

    /// Appends the learned routes of `n` to `routes`: `min(links to the next hops, rest)`, the
    /// rest shared by the class. Returns the class (its learned routes) and the value of each
    /// learned route, which published values reuse.
    fn learned_routes(
        &mut self,
        n: NodeId,
        links: &[LinkPlan],
        mut kept: Option<&mut Replan>,
        routes: &mut Vec<RoutePlan>,
    ) -> (Arc<RouteClass>, Vec<Option<ExplId>>) {
        let topo = self.topo();
        let node = topo.node(n);
        let kind = if node.is_gateway() {
            RouteKind::Transit
        } else {
            RouteKind::Gateway
        };
        let class = self.route_class(n);
        let locals = &topo.site(node.site).local_cidrs;
        let mut memo = LearnedMemo {
            via_min: vec![None; class.via_sets.len()],
            via_hops: vec![[None, None]; class.via_sets.len()],
            // Distinct (links, rest) pairs of this node: most routes share a few.
            pairs: match kept.as_mut() {
                Some(k) => std::mem::take(&mut k.pairs),
                None => {
                    let mut p = std::mem::take(&mut self.scratch_pairs);
                    p.clear();
                    p
                }
            },
        };
        let mut learned_values: Vec<Option<ExplId>> = Vec::with_capacity(class.learned.len());
        routes.reserve(class.learned.len());
        for (l, (v, rest)) in class.learned.iter().zip(class.rest.iter()) {
            let vi = *v as usize;
            let links_e = self.via_min(n, links, &class, &mut memo, vi);
            let e = self.route_pair(&mut memo.pairs, links_e, *rest);
            learned_values.push(e);
            let Some(e) = e else {
                continue;
            };
            let mtu = Value {
                mtu: self.expl.value(e),
                expl: e,
            };
            let next_hops = self.learned_next_hops(links, l, &mut memo, vi);
            push_learned(routes, l, kind, mtu, &next_hops, locals);
        }
        match kept.as_mut() {
            Some(k) => k.pairs = memo.pairs,
            None => self.scratch_pairs = memo.pairs,
        }
        (class, learned_values)
    }

    /// The minimum of `n`'s links to the next-hop set `vi` of `class`, made once per set.
    fn via_min(
        &mut self,
        n: NodeId,
        links: &[LinkPlan],
        class: &RouteClass,
        memo: &mut LearnedMemo,
        vi: usize,
    ) -> Option<ExplId> {
        if let Some(x) = memo.via_min.get(vi).copied().flatten() {
            return x;
        }
        let via = class.via_sets.get(vi).map(|x| x.as_slice()).unwrap_or(&[]);
        let x = self.via_links(n, via, Some(links));
        if let Some(slot) = memo.via_min.get_mut(vi) {
            *slot = Some(x);
        }
        x
    }

    /// A learned route's value, `min(links, rest)`, each distinct pair made once per node.
    fn route_pair(
        &mut self,
        pairs: &mut FxHashMap<(ExplId, ExplId), ExplId>,
        links: Option<ExplId>,
        rest: Option<ExplId>,
    ) -> Option<ExplId> {
        match (links, rest) {
            (Some(a), Some(b)) => Some(match pairs.get(&(a, b)) {
                Some(x) => *x,
                None => {
                    // A node's links usually name the node itself (its own auto term), so its
                    // pairs are its own: made without a global lookup (a few percent of
                    // duplicates across nodes, against a hash probe per route). A re-planned
                    // node keeps its pairs (`Replan`), so planning it again does not grow the
                    // arena.
                    let x = self.expl.min_pair(a, b);
                    pairs.insert((a, b), x);
                    x
                }
            }),
            (a, b) => a.or(b),
        }
    }

    /// The next hops of learned route `l` over the next-hop set `vi`, in the route's family:
    /// made once per set and family.
    fn learned_next_hops(
        &self,
        links: &[LinkPlan],
        l: &Learned,
        memo: &mut LearnedMemo,
        vi: usize,
    ) -> Arc<[NextHop]> {
        let v6 = matches!(l.prefix, IpNet::V6(_));
        let known = memo
            .via_hops
            .get(vi)
            .and_then(|h| h.get(usize::from(v6)))
            .cloned()
            .flatten();
        if let Some(h) = known {
            return h;
        }
        let h: Arc<[NextHop]> = l
            .via
            .iter()
            .filter_map(|g| link_of(links, *g))
            .map(|lp| self.next_hop(lp, v6))
            .collect();
        if let Some(slot) = memo
            .via_hops
            .get_mut(vi)
            .and_then(|h| h.get_mut(usize::from(v6)))
        {
            *slot = Some(h.clone());
        }
        h
    }

    /// Devices: the maximum of the links each carries.
    fn plan_devices(
        &mut self,
        n: NodeId,
        links: &[LinkPlan],
        mut kept: Option<&mut Replan>,
    ) -> Vec<DevicePlan> {
        let topo = self.topo();
        // The links each device carries, as (link, its term) grouped by device: one stable
        // sort of a vector sized once, rather than a map of growing lists (a gateway's shared
        // device carries thousands of links). Within a device the links keep their order.
        let mut carried: Vec<(&LinkPlan, ExplId)> = Vec::with_capacity(links.len());
        for l in links {
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
            carried.push((l, leaf));
        }
        carried.sort_by(|a, b| a.0.device.cmp(&b.0.device));
        let mut devices: Vec<DevicePlan> = Vec::new();
        for group in carried.chunk_by(|a, b| a.0.device == b.0.device) {
            let Some((first, _)) = group.first() else {
                continue;
            };
            let kids: SmallVec<[ExplId; 4]> = group.iter().map(|(_, leaf)| *leaf).collect();
            if let Some(e) = self.expl.max(&kids) {
                devices.push(DevicePlan {
                    device: first.device.clone(),
                    protocol: first.protocol,
                    mtu: Value {
                        mtu: self.expl.value(e),
                        expl: e,
                    },
                });
            }
        }
        devices.sort_by(|a, b| device_order(topo, &a.device, &b.device));
        devices
    }

    /// The fabric: the minimum of the agent `mtu`, the component's and pool's caps and the
    /// links, each without its probed path MTU (`unpathed`, by link index): one narrow path
    /// lowers the routes over its link, which the kernel enforces per route, not every pod's
    /// interface (`mtu.md` §5, D13).
    fn plan_fabric(
        &mut self,
        n: NodeId,
        links: &[LinkPlan],
        unpathed: &[(usize, ExplId)],
    ) -> Value {
        let node = self.topo().node(n);
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
        // `unpathed` is in link order: walked beside the links.
        let mut pathed = unpathed.iter().peekable();
        for (i, l) in links.iter().enumerate() {
            match pathed.next_if(|(at, _)| *at == i) {
                Some((_, e)) => kids.push(*e),
                None => kids.push(l.mtu.expl),
            }
        }
        let base = match (links.first(), unpathed.first()) {
            (Some(_), Some((0, e))) => *e,
            (Some(l), _) => l.mtu.expl,
            (None, _) => {
                // No link yet: the family of the node's own (private) underlay address.
                let ipv6_outer = self.net.outer_ipv6(self.net.underlay_addr(n, false), None);
                self.underlay_minus(n, Protocol::WireGuard, ipv6_outer)
            }
        };
        let fabric_e = self.expl.min_with(base, &kids);
        Value {
            mtu: self.expl.value(fabric_e),
            expl: fabric_e,
        }
    }

    /// The address a route to `peer` uses as its pod gateway: the first address of the peer's
    /// pod CIDR of the route's family (or of its first pod CIDR).
    fn pod_gateway(&self, peer: NodeId, v6: bool) -> Option<IpAddr> {
        let node = self.topo().node(peer);
        let net = node
            .pod_cidrs
            .iter()
            .find(|c| matches!(c, IpNet::V6(_)) == v6)
            .or_else(|| node.pod_cidrs.first())?;
        Some(first_address(net))
    }

    /// A next hop over `link`, for a route of the family `v6` says.
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

    /// The values gateway `g` of `pool` publishes, by prefix: for learned prefixes its transit
    /// route's value, for the Sites it serves its smallest delivery link into the Site, for the
    /// pool's own routed prefixes its unencapsulated underlay within the caps; the minimum where
    /// a prefix has several.
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
                    underlay: u.get(),
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
}

/// Whether a plan of `node` can hold findings: it has IPv6 pod CIDRs (the IPv6 floor), or it
/// is a gateway that has published values (a published annotation this input disagrees with).
/// A node for which this is false has none, so its plan need not be made to collect them.
/// Costs a scan of the node's pod CIDRs.
///
/// ```
/// use mtu_solver::{Resolver, Settings, doc_cluster::TWO_SITES, load, solver::may_find};
/// let settings = Settings::default();
/// let read = |yaml: &str| Resolver::new(load::from_sources([("c.yaml", yaml)]), settings.clone());
/// assert!(!read(TWO_SITES).topology().nodes.iter().any(may_find)); // IPv4 pods: none to find
/// let v6 = TWO_SITES.replace("[10.9.1.0/24]", "[10.9.1.0/24, 'fd00:9::/64']");
/// let dual = read(&v6);
/// let wa = dual.topology().node_id("wa").expect("wa");
/// assert!(may_find(dual.topology().node(wa)));
/// ```
pub fn may_find(node: &NodeInfo) -> bool {
    node.has_ipv6_pods() || (node.is_gateway() && !node.published.is_empty())
}

/// The finding of a node with IPv6 pod CIDRs whose values go below [`IPV6_MIN_MTU`]: how many
/// do, naming the first three (None when none does, or the node has no IPv6 pods).
fn ipv6_floor(
    topo: &Topology,
    n: NodeId,
    fabric: &Value,
    links: &[LinkPlan],
    routes: &[RoutePlan],
    devices: &[DevicePlan],
    published: Option<&[Published]>,
) -> Option<Diagnostic> {
    let node = topo.node(n);
    if !node.has_ipv6_pods() {
        return None;
    }
    let mut low: Vec<String> = Vec::new();
    below_ipv6_floor(&mut low, fabric.mtu, format_args!("fabric"));
    for l in links {
        let peer = &topo.node(l.peer).name;
        below_ipv6_floor(&mut low, l.mtu.mtu, format_args!("link to {peer}"));
    }
    for r in routes {
        below_ipv6_floor(&mut low, r.mtu.mtu, format_args!("route {}", r.destination));
    }
    for d in devices {
        let label = DeviceLabel(topo, &d.device);
        below_ipv6_floor(&mut low, d.mtu.mtu, format_args!("device {label}"));
    }
    for p in published.into_iter().flatten() {
        below_ipv6_floor(
            &mut low,
            p.mtu.mtu,
            format_args!("published {}", p.destination),
        );
    }
    if low.is_empty() {
        return None;
    }
    let n_low = low.len();
    low.truncate(3);
    Some(Diagnostic::new(
        Code::Ipv6Below1280,
        format!("Node/{}", node.name),
        "",
        format!(
            "the node has IPv6 pod CIDRs but {n_low} value(s) are below 1280 (IPv6 needs 1280): {}",
            low.join(", ")
        ),
        node.loc.clone(),
    ))
}

/// Notes `what` with its value in `low` when `mtu` is below [`IPV6_MIN_MTU`] (`what` is only
/// rendered then).
fn below_ipv6_floor(low: &mut Vec<String>, mtu: Mtu, what: impl fmt::Display) {
    if mtu.get() < IPV6_MIN_MTU {
        low.push(format!("{what} {mtu}"));
    }
}

/// A device as findings name it: its name, `(WireGuard for PEER)` when unnamed, `underlay`.
struct DeviceLabel<'a>(&'a Topology, &'a DeviceRef);

impl fmt::Display for DeviceLabel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            DeviceRef::Shared(n) => f.write_str(n),
            DeviceRef::PerPeer { name: Some(n), .. } => f.write_str(n),
            DeviceRef::PerPeer { name: None, peer } => {
                write!(f, "(WireGuard for {})", self.0.node(*peer).name)
            }
            DeviceRef::Underlay => f.write_str("underlay"),
        }
    }
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
