//! The naive reference oracle (tests and benches only; see the crate documentation).
//!
//! A direct, deliberately unoptimised reading of `spec/forwarding.md` and `spec/mtu.md`, written
//! independently of [`topology_core::net`] and the solver so that it can catch their bugs:
//!
//! - every relation is expanded eagerly into pairwise matrices (Site×Site, Site×pool, pool×pool);
//! - links and protocols follow the tables of `forwarding.md` and `mtu.md` §2 by checking every
//!   ordered pair of nodes;
//! - forwarding is a path-vector simulation of rules 1–5 to a fixpoint: every gateway holds every
//!   hop list it advertises, re-advertises every accepted list with its pool appended, and every
//!   node selects, per prefix, the peers whose best accepted list has the minimum number of pools
//!   (rules 4–5); rule 6 (a pool that originates a prefix does not route it) and rule 7 (installed
//!   routes, `localCidrs` cut out of learned prefixes) follow;
//! - MTUs (`mtu.md` §3–6) are computed by enumerating every forwarding path of every route
//!   explicitly (each gateway follows its own selection) and taking minimums over all of them.
//!
//! Shared with production: the validated [`Topology`] (membership, which objects count), the ID
//! types, [`Protocol`], [`LinkKind`] / [`RouteType`] as plain labels, and the prefix helpers
//! [`cut`] and [`prefix_order`].
// Test-only code over small topologies: plain indexing and arithmetic keep it readable.
#![allow(
    clippy::indexing_slicing,
    clippy::arithmetic_side_effects,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic
)]

use ipnet::IpNet;
use std::collections::{BTreeMap, BTreeSet};
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::{Role, Topology};
use topology_core::net::{LinkKind, RouteType, cut, prefix_order};
use topology_core::vocab::Protocol;

/// Encapsulation overhead (`mtu.md` §1), written out again from the spec's table.
pub fn overhead(p: Protocol, ipv6_outer: bool) -> u32 {
    match (p, ipv6_outer) {
        (Protocol::WireGuard, _) => 80,
        (Protocol::Geneve, false) => 58,
        (Protocol::Geneve, true) => 78,
        (Protocol::Vxlan, false) => 50,
        (Protocol::Vxlan, true) => 70,
        (Protocol::Ipip, false) => 20,
        (Protocol::Ipip, true) => 40,
        (Protocol::None, _) => 0,
    }
}

/// Inputs beyond the topology.
#[derive(Clone, Debug)]
pub struct RefSettings {
    /// Underlay of nodes without annotations.
    pub default_underlay: u32,
    /// Configured `mtu` of every node (0 = none).
    pub cfg_all: u32,
    /// Per-node configured `mtu` by node name, overriding `cfg_all` (0 = none).
    pub cfg: BTreeMap<String, u32>,
    /// The outer family is IPv6.
    pub ipv6_outer: bool,
    /// `Auto` across public addresses.
    pub public_encap: Protocol,
    /// `Auto` elsewhere.
    pub private_encap: Protocol,
}

impl Default for RefSettings {
    fn default() -> Self {
        RefSettings {
            default_underlay: 1500,
            cfg_all: 0,
            cfg: BTreeMap::new(),
            ipv6_outer: false,
            public_encap: Protocol::WireGuard,
            private_encap: Protocol::Geneve,
        }
    }
}

/// A hop of a hop list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Hop {
    /// The origin Site.
    Site(SiteId),
    /// A pool.
    Pool(PoolId),
}

/// Where an advertised prefix leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefDest {
    /// A Site's pod blocks or node CIDRs.
    Site(SiteId),
    /// A pool's routed CIDRs.
    Pool(PoolId),
}

/// An advertisement class: route type and destination (all prefixes of a class share hop lists).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Class {
    /// Route type.
    pub ty: RouteType,
    /// Destination.
    pub dest: RefDest,
}

/// A link seen from one end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefLink {
    /// The other end.
    pub peer: NodeId,
    /// Kind.
    pub kind: LinkKind,
    /// Protocol.
    pub protocol: Protocol,
    /// The link crosses public addresses.
    pub public: bool,
    /// Configured caps (`mtu.md` §3), every one.
    pub caps: Vec<u32>,
    /// `min(U(a), U(b), P(a,b)) − O(P)`.
    pub auto: u32,
    /// Link MTU.
    pub mtu: u32,
    /// The link's MTU without its path MTU: what enters the fabric (`mtu.md` §5).
    pub unpathed: u32,
}

/// Route kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefRouteKind {
    /// Over the link to a peer: its pod CIDRs or node addresses.
    Direct,
    /// A worker's learned route.
    Gateway,
    /// A gateway's learned route.
    Transit,
}

/// An installed route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefRoute {
    /// Installed destination (cut piece).
    pub destination: IpNet,
    /// Advertised prefix (uncut).
    pub advertised: IpNet,
    /// Type.
    pub ty: RouteType,
    /// Kind.
    pub kind: RefRouteKind,
    /// Pools on the accepted hop list (0 for direct routes).
    pub distance: u32,
    /// Selected next hops, sorted by ID (= by name).
    pub via: Vec<NodeId>,
    /// Route MTU.
    pub mtu: u32,
    /// Every forwarding path (gateways in forwarding order; empty for direct routes).
    pub paths: Vec<Vec<NodeId>>,
    /// Every configured cap on every path, the first link's included (learned routes).
    pub path_caps: Vec<u32>,
    /// Every published value on every path (workers' learned routes).
    pub path_published: Vec<u32>,
}

/// A device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeviceKey {
    /// The shared device of a protocol (WireGuard: the mesh device for worker peers).
    Shared(Protocol),
    /// The per-peer WireGuard device of a gateway peer.
    PerPeer(NodeId),
}

/// A node's resolved values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefNode {
    /// The node.
    pub node: NodeId,
    /// Links, sorted by peer.
    pub links: Vec<RefLink>,
    /// Routes, sorted by destination (prefix order) then kind.
    pub routes: Vec<RefRoute>,
    /// Devices with their MTU.
    pub devices: BTreeMap<DeviceKey, u32>,
    /// Fabric MTU.
    pub fabric: u32,
    /// Published values (gateways), sorted by prefix order.
    pub published: Option<Vec<(IpNet, u32)>>,
}

/// The reference result.
#[derive(Clone, Debug)]
pub struct Reference {
    /// Every node, by ID.
    pub nodes: Vec<RefNode>,
    /// Converged advertisements of every gateway: class → hop lists (origin first).
    pub adverts: BTreeMap<NodeId, BTreeMap<Class, BTreeSet<Vec<Hop>>>>,
}

fn min_opt(a: Option<u32>, b: u32) -> Option<u32> {
    Some(a.map_or(b, |x| x.min(b)))
}

/// Eager pairwise relations.
struct Rel {
    mesh: Vec<Vec<bool>>,
    netp: Vec<Vec<bool>>,
    peer_cap: Vec<Vec<Option<u32>>>,
    mesh_proto: Vec<Vec<Option<Protocol>>>,
    comp_cap: Vec<Option<u32>>,
    assigned: Vec<Vec<bool>>,
    sgpa_cap: Vec<Vec<Option<u32>>>,
    sgpa_proto: Vec<Vec<Option<Protocol>>>,
    peered: Vec<Vec<bool>>,
    gpp_cap: Vec<Vec<Option<u32>>>,
    gpp_proto: Vec<Vec<Option<Protocol>>>,
    site_cap: Vec<Option<u32>>,
    pool_cap: Vec<Option<u32>>,
}

fn relations(t: &Topology) -> Rel {
    let ns = t.sites.len();
    let np = t.pools.len();
    let mut r = Rel {
        mesh: vec![vec![false; ns]; ns],
        netp: vec![vec![false; ns]; ns],
        peer_cap: vec![vec![None; ns]; ns],
        mesh_proto: vec![vec![None; ns]; ns],
        comp_cap: vec![None; ns],
        assigned: vec![vec![false; np]; ns],
        sgpa_cap: vec![vec![None; np]; ns],
        sgpa_proto: vec![vec![None; np]; ns],
        peered: vec![vec![false; np]; np],
        gpp_cap: vec![vec![None; np]; np],
        gpp_proto: vec![vec![None; np]; np],
        site_cap: t
            .sites
            .iter()
            .map(|s| s.cap.as_ref().map(|c| c.mtu.get()))
            .collect(),
        pool_cap: t
            .pools
            .iter()
            .map(|p| p.cap.as_ref().map(|c| c.mtu.get()))
            .collect(),
    };
    for i in 0..ns {
        r.mesh[i][i] = true;
        r.netp[i][i] = true;
    }
    // Relations are sorted by name, so the first explicit protocol met is the first by name.
    for p in t.site_peerings.iter().filter(|p| p.relates) {
        for a in &p.sites {
            for b in &p.sites {
                let (a, b) = (a.idx(), b.idx());
                if a == b {
                    continue;
                }
                r.netp[a][b] = true;
                if let Some(c) = &p.cap {
                    r.peer_cap[a][b] = min_opt(r.peer_cap[a][b], c.mtu.get());
                }
                if p.mesh {
                    r.mesh[a][b] = true;
                    if r.mesh_proto[a][b].is_none() {
                        r.mesh_proto[a][b] = p.protocol;
                    }
                }
            }
        }
    }
    // Components: repeated relaxation of component labels over mesh peerings.
    let mut label: Vec<usize> = (0..ns).collect();
    loop {
        let mut changed = false;
        for a in 0..ns {
            for b in 0..ns {
                if r.mesh[a][b] && label[b] < label[a] {
                    label[a] = label[b];
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut comp_cap: BTreeMap<usize, u32> = BTreeMap::new();
    for (l, cap) in label.iter().zip(&r.site_cap) {
        if let Some(c) = *cap {
            let e = comp_cap.entry(*l).or_insert(c);
            *e = (*e).min(c);
        }
    }
    for p in t.site_peerings.iter().filter(|p| p.relates && p.mesh) {
        if let (Some(c), Some(s)) = (&p.cap, p.sites.first()) {
            let e = comp_cap.entry(label[s.idx()]).or_insert(c.mtu.get());
            *e = (*e).min(c.mtu.get());
        }
    }
    r.comp_cap = label.iter().map(|l| comp_cap.get(l).copied()).collect();
    for a in t.assignments.iter().filter(|a| a.relates) {
        for s in &a.sites {
            for p in &a.pools {
                let (s, p) = (s.idx(), p.idx());
                r.assigned[s][p] = true;
                if let Some(c) = &a.cap {
                    r.sgpa_cap[s][p] = min_opt(r.sgpa_cap[s][p], c.mtu.get());
                }
                if r.sgpa_proto[s][p].is_none() {
                    r.sgpa_proto[s][p] = a.protocol;
                }
            }
        }
    }
    for g in t.pool_peerings.iter().filter(|g| g.relates) {
        for p in &g.pools {
            for q in &g.pools {
                let (p, q) = (p.idx(), q.idx());
                if p == q {
                    continue;
                }
                r.peered[p][q] = true;
                if let Some(c) = &g.cap {
                    r.gpp_cap[p][q] = min_opt(r.gpp_cap[p][q], c.mtu.get());
                }
                if r.gpp_proto[p][q].is_none() {
                    r.gpp_proto[p][q] = g.protocol;
                }
            }
        }
    }
    r
}

/// The computation context.
struct Cx<'a> {
    t: &'a Topology,
    s: &'a RefSettings,
    r: Rel,
    /// Every advertised prefix with its classes, in prefix order.
    prefixes: Vec<(IpNet, Vec<Class>)>,
}

impl Cx<'_> {
    /// Every class of an advertised prefix.
    fn classes_of(&self, prefix: &IpNet) -> &[Class] {
        self.prefixes
            .iter()
            .find(|(p, _)| p == prefix)
            .map(|(_, c)| c.as_slice())
            .unwrap_or(&[])
    }
    fn site_of(&self, n: NodeId) -> usize {
        self.t.node(n).site.idx()
    }
    fn pool_of(&self, n: NodeId) -> Option<usize> {
        match self.t.node(n).role {
            Role::Gateway(p) => Some(p.idx()),
            Role::Worker => None,
        }
    }
    fn underlay(&self, n: NodeId) -> u32 {
        let node = self.t.node(n);
        let vals: Vec<u32> = node
            .underlay
            .iter()
            .chain(node.underlay_max.iter())
            .map(|u| u.mtu)
            .collect();
        vals.into_iter()
            .min()
            .unwrap_or(self.s.default_underlay.max(576))
    }
    /// `P(a,b)`: the lowest entry either node's `path-mtu` annotation holds about the other,
    /// read from the raw entries by name (`model.md`).
    fn path_mtu(&self, a: NodeId, b: NodeId) -> Option<u32> {
        let about = |x: NodeId, y: NodeId| {
            self.t
                .path_mtus_of(x)
                .iter()
                .filter(|(p, _)| self.t.node(*p).name == self.t.node(y).name)
                .map(|(_, e)| e.mtu)
                .min()
        };
        match (about(a, b), about(b, a)) {
            (Some(x), Some(y)) => Some(x.min(y)),
            (x, y) => x.or(y),
        }
    }
    fn cfg(&self, n: NodeId) -> Option<u32> {
        let v = self
            .s
            .cfg
            .get(&*self.t.node(n).name)
            .copied()
            .unwrap_or(self.s.cfg_all);
        (v > 0).then_some(v)
    }

    /// The kind of the link from `a` to `b` (forwarding.md, "Links").
    fn link_kind(&self, a: NodeId, b: NodeId) -> Option<LinkKind> {
        if a == b {
            return None;
        }
        let (sa, sb) = (self.site_of(a), self.site_of(b));
        match (self.pool_of(a), self.pool_of(b)) {
            (None, None) => {
                let ok = if sa == sb {
                    self.t.sites[sa].manage_cni
                } else {
                    self.r.mesh[sa][sb]
                };
                ok.then_some(LinkKind::Mesh)
            }
            (None, Some(p)) => self.r.assigned[sa][p].then_some(LinkKind::Uplink),
            (Some(p), None) => self.r.assigned[sb][p].then_some(LinkKind::Delivery),
            (Some(p), Some(q)) => {
                if p == q {
                    Some(LinkKind::PoolMesh)
                } else if self.r.peered[p][q] {
                    Some(LinkKind::Transit)
                } else {
                    None
                }
            }
        }
    }

    fn external_gateway(&self, n: NodeId) -> bool {
        self.pool_of(n).is_some_and(|p| !self.t.pools[p].internal)
    }

    /// `mtu.md` §2.
    fn protocol(&self, a: NodeId, b: NodeId, kind: LinkKind) -> (Protocol, bool) {
        let (sa, sb) = (self.site_of(a), self.site_of(b));
        let explicit = match kind {
            LinkKind::Mesh => {
                if sa == sb {
                    self.t.sites[sa].protocol
                } else {
                    self.r.mesh_proto[sa][sb]
                }
            }
            LinkKind::Uplink | LinkKind::Delivery => {
                let (w, g) = if kind == LinkKind::Uplink {
                    (a, b)
                } else {
                    (b, a)
                };
                let (s, x) = (self.site_of(w), self.site_of(g));
                let p = self.pool_of(g).unwrap();
                self.r.sgpa_proto[s][p].or(if s == x {
                    self.t.sites[s].protocol
                } else {
                    None
                })
            }
            LinkKind::PoolMesh => self.t.pools[self.pool_of(a).unwrap()].protocol,
            LinkKind::Transit => {
                self.r.gpp_proto[self.pool_of(a).unwrap()][self.pool_of(b).unwrap()]
            }
        };
        let public = sa != sb
            && !self.r.netp[sa][sb]
            && (self.external_gateway(a) || self.external_gateway(b));
        let p = explicit.unwrap_or(if public {
            self.s.public_encap
        } else {
            self.s.private_encap
        });
        (p, public)
    }

    /// Configured caps of a delivery/uplink link between a worker of Site `s` and a gateway of
    /// pool `p` located in Site `x` (also used when no worker exists).
    fn delivery_caps(&self, s: usize, x: usize, p: usize) -> Vec<u32> {
        let r = &self.r;
        let mut c: Vec<Option<u32>> = vec![r.comp_cap[s], r.comp_cap[x]];
        if s != x {
            c.push(r.peer_cap[s][x]);
        }
        c.push(r.sgpa_cap[s][p]);
        c.push(r.pool_cap[p]);
        c.into_iter().flatten().collect()
    }

    /// `mtu.md` §3: configured caps of the link `a–b`.
    fn link_caps(&self, a: NodeId, b: NodeId, kind: LinkKind) -> Vec<u32> {
        let r = &self.r;
        let (sa, sb) = (self.site_of(a), self.site_of(b));
        match kind {
            LinkKind::Uplink => return self.delivery_caps(sa, sb, self.pool_of(b).unwrap()),
            LinkKind::Delivery => return self.delivery_caps(sb, sa, self.pool_of(a).unwrap()),
            _ => {}
        }
        let mut c: Vec<Option<u32>> = vec![r.comp_cap[sa], r.comp_cap[sb]];
        if sa != sb {
            c.push(r.peer_cap[sa][sb]);
        }
        match kind {
            LinkKind::PoolMesh => c.push(r.pool_cap[self.pool_of(a).unwrap()]),
            LinkKind::Transit => {
                let (p, q) = (self.pool_of(a).unwrap(), self.pool_of(b).unwrap());
                c.push(r.gpp_cap[p][q]);
                c.push(r.pool_cap[p]);
                c.push(r.pool_cap[q]);
            }
            _ => {}
        }
        c.into_iter().flatten().collect()
    }

    /// Whether the address node `n` picks from `list` is IPv6: the first of the tunnel family,
    /// else the first (`model.md`, "underlay address"). `None` for an empty list.
    fn pick_is_v6(&self, list: &[std::net::IpAddr]) -> Option<bool> {
        list.iter()
            .find(|a| a.is_ipv6() == self.s.ipv6_outer)
            .or(list.first())
            .map(|a| a.is_ipv6())
    }

    /// `mtu.md` §1: the IPv6 column when the tunnel family is IPv6 or either end's underlay
    /// address on the link is IPv6 (an External pool's gateway across public addresses uses its
    /// ExternalIPs, everyone else its InternalIPs); also when a NAT'd worker across public
    /// addresses is reached at an IPv6 ExternalIP.
    fn ipv6_outer(&self, a: NodeId, b: NodeId, public: bool) -> bool {
        let v6 = |n: NodeId| {
            let node = self.t.node(n);
            let external = public && !node.external_ips.is_empty();
            let underlay = if external && self.external_gateway(n) {
                &node.external_ips
            } else {
                &node.internal_ips
            };
            let endpoint_v6 = external
                && self.pool_of(n).is_none()
                && self.pick_is_v6(&node.external_ips) == Some(true);
            self.pick_is_v6(underlay) == Some(true) || endpoint_v6
        };
        self.s.ipv6_outer || v6(a) || v6(b)
    }

    fn make_link(&self, a: NodeId, b: NodeId, kind: LinkKind) -> RefLink {
        let (protocol, public) = self.protocol(a, b, kind);
        let caps = self.link_caps(a, b, kind);
        let o = overhead(protocol, self.ipv6_outer(a, b, public));
        let underlays = self.underlay(a).min(self.underlay(b));
        let path = self.path_mtu(a, b);
        let auto = underlays.min(path.unwrap_or(u32::MAX)).saturating_sub(o);
        let mut mtu = auto;
        let mut unpathed = underlays.saturating_sub(o);
        for c in caps.iter().copied().chain(self.cfg(a)) {
            mtu = mtu.min(c);
            unpathed = unpathed.min(c);
        }
        RefLink {
            peer: b,
            kind,
            protocol,
            public,
            caps,
            auto,
            mtu,
            unpathed,
        }
    }

    /// Whether gateway `g`'s pool originates a class.
    fn originates(&self, g: NodeId, c: Class) -> bool {
        match (self.pool_of(g), c.dest) {
            (Some(p), RefDest::Site(d)) => self.r.assigned[d.idx()][p],
            (Some(p), RefDest::Pool(o)) => o.idx() == p,
            (None, _) => false,
        }
    }

    /// Rule 3 at node `n`.
    fn accepts(&self, n: NodeId, c: Class, list: &[Hop]) -> bool {
        let s = self.site_of(n);
        if list.contains(&Hop::Site(SiteId::from_idx(s))) {
            return false;
        }
        if let Some(p) = self.pool_of(n)
            && list.contains(&Hop::Pool(PoolId::from_idx(p)))
        {
            return false;
        }
        if c.ty == RouteType::NodeCidr
            && let RefDest::Site(t) = c.dest
            && self.r.netp[s][t.idx()]
        {
            return false;
        }
        true
    }
}

fn pools_on(list: &[Hop]) -> u32 {
    list.iter().filter(|h| matches!(h, Hop::Pool(_))).count() as u32
}

/// The selection of one node for one prefix: distance and next hops.
#[derive(Clone, Debug)]
struct Selected {
    distance: u32,
    via: Vec<NodeId>,
    classes: Vec<Class>,
}

type Adverts = BTreeMap<NodeId, BTreeMap<Class, BTreeSet<Vec<Hop>>>>;

/// Runs the reference over a topology.
pub fn compute(t: &Topology, settings: &RefSettings) -> Reference {
    let r = relations(t);
    let mut by_prefix: BTreeMap<(u8, IpNet), BTreeSet<Class>> = BTreeMap::new();
    let key = |p: &IpNet| (u8::from(matches!(p, IpNet::V6(_))), *p);
    for (i, s) in t.sites.iter().enumerate() {
        let d = RefDest::Site(SiteId::from_idx(i));
        for p in &s.pod_blocks {
            by_prefix.entry(key(p)).or_default().insert(Class {
                ty: RouteType::PodCidr,
                dest: d,
            });
        }
        for p in &s.node_cidrs {
            by_prefix.entry(key(p)).or_default().insert(Class {
                ty: RouteType::NodeCidr,
                dest: d,
            });
        }
    }
    for (i, pool) in t.pools.iter().enumerate() {
        let d = RefDest::Pool(PoolId::from_idx(i));
        for p in &pool.routed_cidrs {
            by_prefix.entry(key(p)).or_default().insert(Class {
                ty: RouteType::RoutedCidr,
                dest: d,
            });
        }
    }
    let mut prefixes: Vec<(IpNet, Vec<Class>)> = by_prefix
        .into_iter()
        .map(|((_, p), c)| (p, c.into_iter().collect()))
        .collect();
    prefixes.sort_by(|a, b| prefix_order(&a.0, &b.0));
    let cx = Cx {
        t,
        s: settings,
        r,
        prefixes,
    };
    let n_nodes = t.nodes.len();
    let ids: Vec<NodeId> = (0..n_nodes).map(NodeId::from_idx).collect();

    // Links of every node, by checking every ordered pair.
    let links: Vec<Vec<RefLink>> = ids
        .iter()
        .map(|a| {
            ids.iter()
                .filter_map(|b| cx.link_kind(*a, *b).map(|k| cx.make_link(*a, *b, k)))
                .collect()
        })
        .collect();
    let gateways: Vec<NodeId> = ids
        .iter()
        .copied()
        .filter(|n| cx.pool_of(*n).is_some())
        .collect();

    // Rules 1–3 to a fixpoint.
    let classes: BTreeSet<Class> = cx
        .prefixes
        .iter()
        .flat_map(|(_, c)| c.iter().copied())
        .collect();
    let mut adv: Adverts = gateways.iter().map(|g| (*g, BTreeMap::new())).collect();
    loop {
        let mut changed = false;
        for g in &gateways {
            let p = cx.pool_of(*g).unwrap();
            let mut out: BTreeMap<Class, BTreeSet<Vec<Hop>>> = BTreeMap::new();
            for c in &classes {
                if cx.originates(*g, *c) {
                    let list = match c.dest {
                        RefDest::Site(d) => vec![Hop::Site(d), Hop::Pool(PoolId::from_idx(p))],
                        RefDest::Pool(o) => vec![Hop::Pool(o)],
                    };
                    out.entry(*c).or_default().insert(list);
                }
            }
            for l in &links[g.idx()] {
                if l.kind != LinkKind::Transit {
                    continue;
                }
                for (c, lists) in &adv[&l.peer] {
                    for list in lists {
                        if cx.accepts(*g, *c, list) {
                            let mut x = list.clone();
                            x.push(Hop::Pool(PoolId::from_idx(p)));
                            out.entry(*c).or_default().insert(x);
                        }
                    }
                }
            }
            if adv[g] != out {
                adv.insert(*g, out);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }

    // Rules 4–6: every node's selection per prefix (uncut).
    let mut sel: Vec<BTreeMap<IpNet, Selected>> = vec![BTreeMap::new(); n_nodes];
    for n in &ids {
        let worker = cx.pool_of(*n).is_none();
        let from_kind = if worker {
            LinkKind::Uplink
        } else {
            LinkKind::Transit
        };
        for (prefix, cls) in &cx.prefixes {
            if !worker && cls.iter().any(|c| cx.originates(*n, *c)) {
                continue; // rule 6
            }
            let mut best: BTreeMap<NodeId, (u32, Vec<Class>)> = BTreeMap::new();
            for l in links[n.idx()].iter().filter(|l| l.kind == from_kind) {
                for c in cls {
                    for list in adv[&l.peer].get(c).into_iter().flatten() {
                        if !cx.accepts(*n, *c, list) {
                            continue;
                        }
                        let d = pools_on(list);
                        let e = best.entry(l.peer).or_insert((d, Vec::new()));
                        if d < e.0 {
                            *e = (d, Vec::new());
                        }
                        if d == e.0 && !e.1.contains(c) {
                            e.1.push(*c);
                        }
                    }
                }
            }
            let Some(min) = best.values().map(|b| b.0).min() else {
                continue;
            };
            let mut classes: Vec<Class> = Vec::new();
            let mut via = Vec::new();
            for (g, (d, cs)) in best {
                if d == min {
                    via.push(g);
                    for c in cs {
                        if !classes.contains(&c) {
                            classes.push(c);
                        }
                    }
                }
            }
            classes.sort();
            sel[n.idx()].insert(
                *prefix,
                Selected {
                    distance: min,
                    via,
                    classes,
                },
            );
        }
    }

    // Forwarding paths of a gateway for a prefix, each gateway following its own selection.
    // Each path comes with the classes (origins) selected by the node before its last gateway:
    // the destination `D` of the hop lists that led there (`mtu.md` §4, `reach`).
    fn walk(
        cx: &Cx<'_>,
        sel: &[BTreeMap<IpNet, Selected>],
        g: NodeId,
        prefix: &IpNet,
        selected: &[Class],
        depth: usize,
        out: &mut Vec<(Vec<NodeId>, Vec<Class>)>,
    ) {
        // Rule 6: a gateway whose pool originates the prefix (any of its origins, when
        // identical prefixes of several Sites merge) delivers it instead of routing it.
        if cx.classes_of(prefix).iter().any(|c| cx.originates(g, *c)) {
            out.push((vec![g], selected.to_vec()));
            return;
        }
        assert!(
            depth <= cx.t.pools.len() + 1,
            "reference: forwarding loop at {g:?} for {prefix}"
        );
        let Some(s) = sel[g.idx()].get(prefix) else {
            // A next hop that advertised the prefix always routes or originates it.
            panic!("reference: {g:?} advertised {prefix} without a route");
        };
        for h in &s.via {
            let mut sub = Vec::new();
            walk(cx, sel, *h, prefix, &s.classes, depth + 1, &mut sub);
            for (mut p, c) in sub {
                p.insert(0, g);
                out.push((p, c));
            }
        }
    }

    let link_of = |a: NodeId, b: NodeId| -> &RefLink {
        links[a.idx()].iter().find(|l| l.peer == b).expect("linked")
    };
    // Configured caps along a path (transit edges and the terminal reach term).
    // The terminal term: `reach` of the last gateway for the destinations `D` of the hop lists
    // selected before it that its pool serves or owns (possibly none: rule 6 then ends the path
    // at a gateway that delivers another origin of a merged prefix, with no further caps).
    let path_caps = |path: &[NodeId], prefix_classes: &[Class]| -> Vec<u32> {
        let mut caps = Vec::new();
        for w in path.windows(2) {
            caps.extend(link_of(w[0], w[1]).caps.iter().copied());
        }
        let last = *path.last().unwrap();
        let x = cx.site_of(last);
        let p = cx.pool_of(last).unwrap();
        for c in prefix_classes.iter().filter(|c| cx.originates(last, **c)) {
            match c.dest {
                RefDest::Site(d) => caps.extend(cx.delivery_caps(d.idx(), x, p)),
                RefDest::Pool(o) => {
                    caps.extend(cx.r.pool_cap[o.idx()]);
                    caps.extend(cx.r.comp_cap[x]);
                }
            }
        }
        caps
    };

    let mut nodes: Vec<RefNode> = Vec::with_capacity(n_nodes);
    for n in &ids {
        let node = t.node(*n);
        let worker = cx.pool_of(*n).is_none();
        let my_links = &links[n.idx()];
        let mut routes: Vec<RefRoute> = Vec::new();
        // Direct routes (forwarding.md, "Destinations"): every linked peer's own pod CIDRs,
        // except between a worker and a gateway located in the worker's own Site when that Site
        // does not manage its CNI; on a gateway, a host route to each InternalIP of a worker it
        // delivers to across public addresses. A destination both ways is a `NodePod` route.
        let mut direct: BTreeMap<(u8, IpNet), (RouteType, Vec<NodeId>)> = BTreeMap::new();
        for l in my_links {
            let peer = t.node(l.peer);
            let worker_gateway_pair = matches!(l.kind, LinkKind::Uplink | LinkKind::Delivery);
            let unmanaged_own_site =
                worker_gateway_pair && node.site == peer.site && !t.site(node.site).manage_cni;
            if !unmanaged_own_site {
                for c in &peer.pod_cidrs {
                    let e = direct
                        .entry(key(c))
                        .or_insert((RouteType::NodePod, Vec::new()));
                    e.0 = RouteType::NodePod;
                    e.1.push(l.peer);
                }
            }
            if l.kind == LinkKind::Delivery && l.public {
                for ip in &peer.internal_ips {
                    let host = IpNet::from(*ip);
                    direct
                        .entry(key(&host))
                        .or_insert((RouteType::NodeAddress, Vec::new()))
                        .1
                        .push(l.peer);
                }
            }
        }
        for ((_, dest), (ty, mut via)) in direct {
            via.sort();
            via.dedup();
            let mtu = via.iter().map(|v| link_of(*n, *v).mtu).min().unwrap();
            routes.push(RefRoute {
                destination: dest,
                advertised: dest,
                ty,
                kind: RefRouteKind::Direct,
                distance: 0,
                via,
                mtu,
                paths: Vec::new(),
                path_caps: Vec::new(),
                path_published: Vec::new(),
            });
        }
        // Learned routes.
        let locals = &t.site(node.site).local_cidrs;
        let mut transit_mtu: Vec<(IpNet, u32)> = Vec::new();
        for (prefix, s) in &sel[n.idx()] {
            let mut mtu = u32::MAX;
            let mut paths = Vec::new();
            let mut all_caps = Vec::new();
            let mut all_pub = Vec::new();
            for g in &s.via {
                let link = link_of(*n, *g);
                let mut sub = Vec::new();
                walk(&cx, &sel, *g, prefix, &s.classes, 0, &mut sub);
                for (path, terminal) in sub {
                    let mut v = link.mtu;
                    let caps = path_caps(&path, &terminal);
                    for c in &caps {
                        v = v.min(*c);
                    }
                    all_caps.extend(link.caps.iter().copied());
                    all_caps.extend(caps);
                    if worker {
                        for h in &path {
                            if let Some(m) = t.node(*h).published_for(prefix) {
                                v = v.min(m.get());
                                all_pub.push(m.get());
                            }
                        }
                    }
                    mtu = mtu.min(v);
                    paths.push(path);
                }
            }
            if !worker {
                transit_mtu.push((*prefix, mtu));
            }
            let pieces = cut(*prefix, locals);
            for piece in pieces {
                routes.push(RefRoute {
                    destination: piece,
                    advertised: *prefix,
                    ty: s.classes[0].ty,
                    kind: if worker {
                        RefRouteKind::Gateway
                    } else {
                        RefRouteKind::Transit
                    },
                    distance: s.distance,
                    via: s.via.clone(),
                    mtu,
                    paths: paths.clone(),
                    path_caps: all_caps.clone(),
                    path_published: all_pub.clone(),
                });
            }
        }
        routes
            .sort_by(|a, b| prefix_order(&a.destination, &b.destination).then(a.kind.cmp(&b.kind)));
        // Devices.
        let mut devices: BTreeMap<DeviceKey, u32> = BTreeMap::new();
        for l in my_links {
            let k = match l.protocol {
                Protocol::None => continue,
                Protocol::WireGuard if cx.pool_of(l.peer).is_some() => DeviceKey::PerPeer(l.peer),
                p => DeviceKey::Shared(p),
            };
            let e = devices.entry(k).or_insert(l.mtu);
            *e = (*e).max(l.mtu);
        }
        // Fabric.
        let s = cx.site_of(*n);
        let mut fabric_terms: Vec<u32> = Vec::new();
        fabric_terms.extend(cx.cfg(*n));
        fabric_terms.extend(cx.r.comp_cap[s]);
        if let Some(p) = cx.pool_of(*n) {
            fabric_terms.extend(cx.r.pool_cap[p]);
        }
        // Links enter the fabric without their probed path MTU (`mtu.md` §5, D13).
        fabric_terms.extend(my_links.iter().map(|l| l.unpathed));
        if my_links.is_empty() {
            fabric_terms.push(
                cx.underlay(*n)
                    .saturating_sub(overhead(Protocol::WireGuard, settings.ipv6_outer)),
            );
        }
        let fabric = fabric_terms.into_iter().min().unwrap();
        // Published (gateways).
        let published = cx.pool_of(*n).map(|p| {
            let mut out: BTreeMap<(u8, IpNet), u32> = BTreeMap::new();
            let mut put = |prefix: IpNet, v: u32| {
                let e = out.entry(key(&prefix)).or_insert(v);
                *e = (*e).min(v);
            };
            for (prefix, v) in &transit_mtu {
                put(*prefix, *v);
            }
            for d in 0..t.sites.len() {
                if !cx.r.assigned[d][p] {
                    continue;
                }
                let into: Vec<u32> = my_links
                    .iter()
                    .filter(|l| l.kind == LinkKind::Delivery && cx.site_of(l.peer) == d)
                    .map(|l| l.mtu)
                    .collect();
                let v = if into.is_empty() {
                    // The protocol a delivery link into `d` would take.
                    let x = s;
                    let explicit =
                        cx.r.sgpa_proto[d][p].or(if d == x { t.sites[d].protocol } else { None });
                    let public = d != x && !cx.r.netp[d][x] && !t.pools[p].internal;
                    let proto = explicit.unwrap_or(if public {
                        settings.public_encap
                    } else {
                        settings.private_encap
                    });
                    // The column of the gateway's own underlay address towards `d`.
                    let own = &t.node(*n).external_ips;
                    let list = if public && !own.is_empty() {
                        own
                    } else {
                        &t.node(*n).internal_ips
                    };
                    let v6 = settings.ipv6_outer || cx.pick_is_v6(list) == Some(true);
                    let mut v = cx.underlay(*n).saturating_sub(overhead(proto, v6));
                    for c in cx.delivery_caps(d, x, p).into_iter().chain(cx.cfg(*n)) {
                        v = v.min(c);
                    }
                    v
                } else {
                    into.into_iter().min().unwrap()
                };
                let site = &t.sites[d];
                for prefix in site.pod_blocks.iter().chain(site.node_cidrs.iter()) {
                    put(*prefix, v);
                }
            }
            let pool = &t.pools[p];
            if !pool.routed_cidrs.is_empty() {
                let mut v = cx.underlay(*n);
                for c in cx
                    .cfg(*n)
                    .into_iter()
                    .chain(cx.r.pool_cap[p])
                    .chain(cx.r.comp_cap[s])
                {
                    v = v.min(c);
                }
                for prefix in &pool.routed_cidrs {
                    put(*prefix, v);
                }
            }
            out.into_iter()
                .map(|((_, p), v)| (p, v))
                .collect::<Vec<_>>()
        });
        let mut published = published;
        if let Some(p) = published.as_mut() {
            p.sort_by(|a, b| prefix_order(&a.0, &b.0));
        }
        nodes.push(RefNode {
            node: *n,
            links: my_links.clone(),
            routes,
            devices,
            fabric,
            published,
        });
    }
    Reference {
        nodes,
        adverts: adv,
    }
}

/// Decodes a YAML/JSON stream and builds the validated topology (a test convenience).
pub fn topology_of(yaml: &str) -> Topology {
    let d = topology_core::decode::decode([("input.yaml", yaml.as_bytes())]);
    Topology::build(d.objects.iter(), d.diagnostics.iter().cloned())
}
