//! Along gateway paths: `reach(g, X)`, the smallest configured cap on every path a gateway
//! selects towards a destination, and `pubPath(g, X)`, the values published on them.
//!
//! `reach` follows each gateway's selected next hops down to the gateways that deliver, hop by
//! hop, memoized per (gateway class, destination). With thousands of destinations and paths
//! many pools long, walking every destination's paths is most of a node's resolve. Most
//! destinations, though, are forwarded towards one origin pool alone from most gateways
//! ([`Net::directing_origins`]): those paths are the same for every destination that pool
//! originates, so their caps are computed once per (gateway class, origin pool) (`toward`), and
//! a destination adds only the caps of the delivery into it.
//!
//! Both walks meet the same terms, so they explain each value alike: on equal values the term
//! that binds is chosen by the terms' own order ([`crate::explain::Leaf`]), not by the order a
//! walk meets them.

use super::Solver;
use super::tables::ClassRows;
use crate::explain::{ExplId, Leaf};
use ipnet::IpNet;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::model::ObjRef;
use topology_core::net::{Dest, LinkKind, Origin, SolePrefix};

/// The `reach` memo: per gateway class (pool, Site), prefix and the origins the route leads to.
/// Nearly every prefix has one origin: those are kept in rows indexed by the prefix's place in
/// the prefix table ([`ClassRows`]). A route leads to one origin but where identical prefixes of
/// several Sites merge, so that case has plain keys (no drop) and the other its own map.
#[derive(Default)]
pub(super) struct ReachMemo {
    sole: ClassRows<256>,
    one: FxHashMap<(PoolId, SiteId, IpNet, Origin), Option<ExplId>>,
    many: FxHashMap<ManyKey, Option<ExplId>>,
}

/// A [`ReachMemo`] key of a route leading to several origins.
type ManyKey = (PoolId, SiteId, IpNet, SmallVec<[Origin; 2]>);

impl ReachMemo {
    fn get(
        &self,
        pool: PoolId,
        site: SiteId,
        prefix: IpNet,
        origins: &[Origin],
        sole: Option<SolePrefix>,
    ) -> Option<Option<ExplId>> {
        match (sole, origins) {
            (Some(i), _) => self.sole.get(pool, site, i.idx()),
            (None, [o]) => self.one.get(&(pool, site, prefix, *o)).copied(),
            (None, _) => self
                .many
                .get(&(pool, site, prefix, SmallVec::from_slice(origins)))
                .copied(),
        }
    }

    fn insert(
        &mut self,
        pool: PoolId,
        site: SiteId,
        prefix: IpNet,
        origins: &[Origin],
        sole: Option<SolePrefix>,
        r: Option<ExplId>,
    ) {
        match (sole, origins) {
            (Some(i), _) => self.sole.insert(pool, site, i.idx(), r),
            (None, [o]) => {
                self.one.insert((pool, site, prefix, *o), r);
            }
            (None, _) => {
                self.many
                    .insert((pool, site, prefix, SmallVec::from_slice(origins)), r);
            }
        }
    }

    /// Forgets the values of routes leading to any of `dests`, whose sole prefixes are
    /// `sole`.
    pub(super) fn forget_leading_to(&mut self, dests: &FxHashSet<Dest>, sole: &[SolePrefix]) {
        self.sole.forget(sole.iter().map(|i| i.idx()));
        self.one.retain(|k, _| !dests.contains(&k.3.dest));
        self.many
            .retain(|k, _| !k.3.iter().any(|o| dests.contains(&o.dest)));
    }

    pub(super) fn clear(&mut self) {
        self.sole.clear();
        self.one.clear();
        self.many.clear();
    }
}

/// The gateway classes (pool, Site) of a walk's next hops.
type NextClasses = SmallVec<[(PoolId, SiteId); 4]>;

/// `pubPath` memo key: gateway, prefix, origins.
pub(super) type PubKey = (NodeId, IpNet, SmallVec<[Origin; 1]>);

/// What the caller of `reach` already knows about the prefix, so the walk need not ask.
#[derive(Clone, Copy)]
pub(super) enum Known<'a> {
    /// Nothing.
    Nothing,
    /// The prefix when only one Site or pool advertises it, `None` when several do (a route of
    /// a class's list, walked beside the prefix table).
    Prefix(Option<SolePrefix>),
    /// The origin pools the gateway forwards towards: a next hop of a tied walk, told those of
    /// the tied pools it is one pool nearer to (the ones nearest to it), for a prefix with one
    /// origin.
    Toward(SolePrefix, &'a [PoolId]),
}

impl Solver<'_> {
    /// `reach(g, X)`: the smallest configured cap along `g`'s selected paths to `X`'s destination.
    pub(crate) fn reach(&mut self, g: NodeId, prefix: IpNet, origins: &[Origin]) -> Option<ExplId> {
        self.reach_known(g, prefix, origins, Known::Nothing)
    }

    /// `reach`, told what its caller knows about the prefix.
    pub(super) fn reach_known(
        &mut self,
        g: NodeId,
        prefix: IpNet,
        origins: &[Origin],
        known: Known<'_>,
    ) -> Option<ExplId> {
        let gn = self.topo().node(g);
        let pool = gn.pool()?;
        self.reach_class(pool, gn.site, prefix, origins, known)
    }

    /// `reach` of the gateways of `pool` located in `site` (every gateway of a class has the
    /// same paths): what a walk asks of a next hop's class without reading its node.
    fn reach_class(
        &mut self,
        pool: PoolId,
        site: SiteId,
        prefix: IpNet,
        origins: &[Origin],
        known: Known<'_>,
    ) -> Option<ExplId> {
        let sole = match known {
            Known::Nothing => match origins {
                [o] => self
                    .net
                    .sole_prefix(&prefix)
                    .and_then(|(i, so)| (so == *o).then_some(i)),
                _ => None,
            },
            Known::Prefix(sole) => sole,
            Known::Toward(i, _) => Some(i),
        };
        // `reach` depends on the destination the caller's route leads to: with identical
        // prefixes of several Sites, the origins are part of the key.
        if let Some(x) = self.reach_memo.get(pool, site, prefix, origins, sole) {
            return x;
        }
        let r = self.reach_uncached(pool, site, prefix, origins, sole, known);
        self.reach_memo.insert(pool, site, prefix, origins, sole, r);
        r
    }

    fn reach_uncached(
        &mut self,
        pool: PoolId,
        site: SiteId,
        prefix: IpNet,
        origins: &[Origin],
        sole: Option<SolePrefix>,
        known: Known<'_>,
    ) -> Option<ExplId> {
        let mut kids: SmallVec<[ExplId; 8]> = SmallVec::new();
        let mut originated: SmallVec<[Origin; 1]> = SmallVec::new();
        for o in origins {
            if self.net.pool_originates(pool, o.dest) {
                originated.push(*o);
            }
        }
        if !originated.is_empty() {
            self.delivery_terms(site, pool, &originated, &mut kids);
            return self.expl.min(&kids);
        }
        let topo = self.topo();
        // Only a prefix with one origin shares the walk: a gateway's learned route depends on
        // every origin of its prefix (a pool that owns one of several identical prefixes learns
        // no route for any of them), not only on the origins the caller's route leads to.
        if self.shared_walks
            && let (Some(i), [o]) = (sole, origins)
        {
            let directing = match known {
                Known::Toward(_, t) => SmallVec::from_slice(t),
                _ => self.net.directing_origins(pool, *o),
            };
            match directing.as_slice() {
                [a] => return self.reach_towards(site, pool, *o, *a),
                [] => {}
                tied => return self.reach_tied(site, pool, prefix, i, *o, tied),
            }
        }
        if let Some(l) = self.net.gateway_learned_for(pool, site, &prefix) {
            for h in &l.via {
                let hn = topo.node(*h);
                if let Some(c) =
                    self.edge_caps(LinkKind::Transit, site, hn.site, Some(pool), hn.pool())
                {
                    kids.push(c);
                }
                if let Some(c) = self.reach(*h, prefix, &l.origins) {
                    kids.push(c);
                }
            }
        }
        self.expl.min(&kids)
    }

    /// `reach` of the gateways of `pool` located in `site` whose nearest origin pools are `tied`
    /// (two or more, at the same distance): this hop is walked for the destination, as its
    /// learned route would (its next hops are those towards any of the tied pools), without
    /// computing that route; each next hop's class is told which of the tied pools it is one
    /// pool nearer to, and shares the walk again once that is one pool.
    fn reach_tied(
        &mut self,
        site: SiteId,
        pool: PoolId,
        prefix: IpNet,
        i: SolePrefix,
        o: Origin,
        tied: &[PoolId],
    ) -> Option<ExplId> {
        let per_pool: SmallVec<[(PoolId, NextClasses); 2]> = tied
            .iter()
            .map(|a| (*a, self.net.classes_toward(pool, *a)))
            .collect();
        let mut via: NextClasses = per_pool
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .collect();
        via.sort_unstable();
        via.dedup();
        let mut kids: SmallVec<[ExplId; 8]> = SmallVec::new();
        for (q, x) in via {
            if let Some(c) = self.edge_caps(LinkKind::Transit, site, x, Some(pool), Some(q)) {
                kids.push(c);
            }
            let nearer: SmallVec<[PoolId; 2]> = per_pool
                .iter()
                .filter(|(_, v)| v.contains(&(q, x)))
                .map(|(a, _)| *a)
                .collect();
            if let Some(c) = self.reach_class(q, x, prefix, &[o], Known::Toward(i, &nearer)) {
                kids.push(c);
            }
        }
        self.expl.min(&kids)
    }

    /// The terms of the delivery by the gateways of `pool` located in `site` of the origins
    /// they originate: for a Site, the caps of a delivery link into it; for a pool's routed
    /// CIDRs, the pool's cap and the component of the gateways' Site.
    pub(super) fn delivery_terms(
        &mut self,
        site: SiteId,
        pool: PoolId,
        originated: &[Origin],
        kids: &mut SmallVec<[ExplId; 8]>,
    ) {
        for o in originated {
            match o.dest {
                Dest::Site(d) => {
                    if let Some(c) = self.edge_caps(LinkKind::Delivery, d, site, Some(pool), None) {
                        kids.push(c);
                    }
                }
                Dest::Pool(o) => {
                    if let Some(c) = self.cap_leaf(ObjRef::Pool(o)) {
                        kids.push(c);
                    }
                    if let Some(c) = self.comp_leaf(site) {
                        kids.push(c);
                    }
                }
            }
        }
    }

    /// `reach` of the gateways of `pool` located in `site` whose paths all lead towards origin
    /// pool `a`: the caps of those paths (shared with every destination forwarded towards `a`)
    /// and of the delivery into the destination on each gateway of `a` (every one of them ends
    /// a path: each is a next hop of the gateways one pool before `a`).
    fn reach_towards(
        &mut self,
        site: SiteId,
        pool: PoolId,
        o: Origin,
        a: PoolId,
    ) -> Option<ExplId> {
        let (t, d) = (self.toward(pool, site, a), self.delivery(o, a));
        self.min2(t, d)
    }

    /// The caps of the paths from a gateway of `pool` located in `site` towards origin pool
    /// `a`, the delivery into a destination left out (memoized per gateway class and origin
    /// pool).
    fn toward(&mut self, pool: PoolId, site: SiteId, a: PoolId) -> Option<ExplId> {
        if let Some(x) = self.toward_memo.get(pool, site, a.idx()) {
            return x;
        }
        let mut kids: SmallVec<[ExplId; 8]> = SmallVec::new();
        // The next hops of one gateway class (pool and Site) have the same edge caps and the
        // same paths on: each class is walked once.
        for (q, x) in self.net.classes_toward(pool, a) {
            if let Some(c) = self.edge_caps(LinkKind::Transit, site, x, Some(pool), Some(q)) {
                kids.push(c);
            }
            if q != a
                && let Some(c) = self.toward(q, x, a)
            {
                kids.push(c);
            }
        }
        let r = self.expl.min(&kids);
        self.toward_memo.insert(pool, site, a.idx(), r);
        r
    }

    /// The caps of the delivery of origin `o` on every gateway of pool `a` (once per gateway
    /// class: the caps depend on the gateway's Site, not on the gateway). They depend on the
    /// destination alone (not on the route's type): memoized until caps change.
    fn delivery(&mut self, o: Origin, a: PoolId) -> Option<ExplId> {
        if let Some(x) = self.deliveries.get(&(o.dest, a)) {
            return *x;
        }
        let mut kids: SmallVec<[ExplId; 8]> = SmallVec::new();
        let sites: SmallVec<[SiteId; 4]> = SmallVec::from_slice(self.net.gateway_sites_of(a));
        for site in sites {
            self.delivery_terms(site, a, &[o], &mut kids);
        }
        let r = self.expl.min(&kids);
        self.deliveries.insert((o.dest, a), r);
        r
    }

    /// `pubPath(g, X)`: the published values of every gateway on every selected path.
    pub(crate) fn pub_path(
        &mut self,
        g: NodeId,
        prefix: IpNet,
        origins: &[Origin],
    ) -> Option<ExplId> {
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
}

#[cfg(test)]
mod tests {
    use crate::report::{Renderer, node_out};
    use crate::{Settings, Solver};
    use proptest::prelude::*;
    use test_utils::reference::topology_of;
    use test_utils::testkit::scale::ScaleSpec;
    use test_utils::testkit::{arb_spec, proptest_config};
    use topology_core::ids::NodeId;
    use topology_core::model::Topology;

    /// Every node's plan rendered with every term, on fresh solvers per node or on one solver.
    fn resolve(topo: &Topology, shared: bool, one_solver: bool) -> Vec<String> {
        let mut out = Vec::new();
        let mut solver = Solver::new(topo, Settings::default());
        for i in 0..topo.nodes.len() {
            if !one_solver {
                solver = Solver::new(topo, Settings::default());
            }
            solver.shared_walks = shared;
            let plan = solver.plan(NodeId::from_idx(i));
            let mut r = Renderer::new(&solver, crate::Explanations::Full);
            out.push(serde_json::to_string(&node_out(topo, &mut r, &plan)).unwrap_or_default());
        }
        out
    }

    /// A small cluster of the scale generator's shape (ring and chords of pools, capped
    /// objects with ties), where most walks are shared.
    #[test]
    fn shared_walks_equal_walks_per_destination_on_a_scale_cluster() {
        let topo = topology_of(&ScaleSpec::small().generate());
        for one_solver in [false, true] {
            assert_eq!(
                resolve(&topo, true, one_solver),
                resolve(&topo, false, one_solver)
            );
        }
        let mut solver = Solver::new(&topo, Settings::default());
        drop(solver.plan_all());
        assert!(!solver.toward_memo.is_empty());
    }

    proptest! {
        #![proptest_config(proptest_config(
            300,
            concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/shared_walks.txt")
        ))]

        /// The walk shared between destinations gives every value, every term and every tie
        /// the walk per destination gives: on fresh solvers per node and on one solver for all.
        #[test]
        fn shared_walks_equal_walks_per_destination(spec in arb_spec()) {
            let topo = topology_of(&spec.to_yaml());
            for one_solver in [false, true] {
                let shared = resolve(&topo, true, one_solver);
                let per_destination = resolve(&topo, false, one_solver);
                prop_assert_eq!(shared, per_destination);
            }
        }
    }
}
