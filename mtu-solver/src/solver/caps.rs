//! Configured caps as terms: an object's own cap, a direct-mesh component's, and the symmetric
//! caps of a link memoized per edge class (`mtu.md` §3); and the caps a what-if replaces
//! ([`Solver::set_caps`]), which drop only the memos that depend on caps.

use super::tables::{pack_term, unpack_term};
use super::{ComponentCap, Solver};
use crate::explain::{ExplId, Leaf};
use rustc_hash::FxHashSet;
use smallvec::SmallVec;
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::ObjRef;
use topology_core::mtu::Mtu;
use topology_core::net::{Dest, LinkKind};

/// The edge class a link's configured caps are memoized by: its kind, its Sites and its pools
/// in canonical orientation (`Solver::edge_caps`).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct EdgeKey {
    kind: u8,
    a: SiteId,
    b: SiteId,
    p: Option<PoolId>,
    q: Option<PoolId>,
}

impl Solver<'_> {
    /// The term of an object's own cap.
    pub(crate) fn cap_leaf(&mut self, obj: ObjRef) -> Option<ExplId> {
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
    pub(crate) fn comp_leaf(&mut self, s: SiteId) -> Option<ExplId> {
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
    /// Costs dropping those memos (for assignments alone, only the reach towards their Sites):
    /// what they held is resolved again as nodes are planned.
    ///
    /// ```
    /// # use mtu_solver::{Resolver, Settings, doc_cluster::HUB_AND_SPOKE, load};
    /// # let hub = load::from_sources([("hub.yaml", HUB_AND_SPOKE)]);
    /// # let hub = Resolver::new(hub, Settings::default());
    /// use mtu_solver::{Kind, Solver, topology_core::mtu::Mtu};
    /// let topo = hub.topology();
    /// let mut solver = Solver::new(topo, Settings::default());
    /// let a1 = topo.find_node("a1")?;
    /// let spokes = topo.obj_ref(Kind::SiteGatewayPoolAssignment, "spokes").expect("spokes");
    /// let undo = solver.set_caps(&[(spokes, Mtu::cap(1300))])?;
    /// assert_eq!(solver.plan(a1).fabric.mtu.get(), 1300);
    /// solver.set_caps(&undo)?; // back to the cluster's own 1380
    /// assert_eq!(solver.plan(a1).fabric.mtu.get(), 1380);
    /// let site = topo.obj_ref(Kind::Site, "a").expect("a");
    /// assert!(solver.set_caps(&[(site, Mtu::cap(1300))]).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
        self.first_hops.clear();
        self.hop_links.clear();
        self.steps.clear();
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
    pub(super) fn edge_caps(
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
}
