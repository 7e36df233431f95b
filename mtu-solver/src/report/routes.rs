//! A learned route's forwarding paths and hops in an explanation ([`super::explanation`]).
//! Everything after a route's first hops (its paths past the node, the hops past the first,
//! the findings about what they read) is the same for every route that leaves by the same next
//! hops for the same prefix, whichever node it belongs to: a [`RouteTail`], walked and worded
//! once per renderer, its hops rendered once per binding term. Each route adds its own first hops and marks the hops that hold
//! its binding term.

use super::Renderer;
use super::hops::HopOut;
use crate::explain::ExplId;
use crate::plan::{RouteKind, RoutePlan};
use crate::solver::Solver;
use crate::solver::hops::{Hop, HopTo};
use ipnet::IpNet;
use rustc_hash::FxHashMap;
use smallvec::SmallVec;
use std::sync::Arc;
use topology_core::diag::Diagnostic;
use topology_core::ids::NodeId;
use topology_core::net::{Dest, Origin};

/// What a route's tail depends on: its next hops, the origins they were selected for, the
/// advertised prefix, whether the route is a worker's (it reads published values) and how many
/// paths are listed.
type TailKey = (
    SmallVec<[NodeId; 4]>,
    SmallVec<[Origin; 1]>,
    IpNet,
    bool,
    usize,
);

/// A route's hops after the first, rendered with the hops that hold one binding term marked:
/// those shown (on a listed path, or binding) and how many are not.
#[derive(Debug, Clone)]
struct ShownTail {
    bound: ExplId,
    hops: Arc<[Arc<HopOut>]>,
    not_shown: usize,
}

/// The part of a learned route's explanation after its first hops. Its hops are kept rendered
/// per binding term only; a route with another binding term walks them again (each gateway's
/// step is kept by the solver).
#[derive(Debug)]
struct RouteTail {
    /// The first forwarding paths (the gateways after the node), at most as many as listed.
    walked: Vec<Vec<NodeId>>,
    /// How many forwarding paths there are, and whether that count saturated.
    total: u64,
    saturated: bool,
    /// The gateways its hops leave.
    through: SmallVec<[NodeId; 8]>,
    /// `W-PUBLISHED-STALE` of the gateways whose published values the route reads.
    diagnostics: Option<Arc<[Diagnostic]>>,
    /// The walked paths in words, after the node (` -> g1 (pool P, Site A) -> Site B`).
    words: Option<Arc<[Arc<str>]>>,
    /// The hops rendered per binding term (a route's is nearly always that of the others).
    shown: SmallVec<[ShownTail; 1]>,
}

/// The tails of the routes a renderer has explained, by what they depend on.
#[derive(Debug, Default)]
pub(super) struct RouteTails {
    index: FxHashMap<TailKey, usize>,
    tails: Vec<RouteTail>,
}

/// A forwarding path after its node (its gateways), and the prefix it carries.
pub(super) type PathKey = (SmallVec<[NodeId; 4]>, IpNet);

/// A listed learned route: its tail, its own first hops and its binding term.
#[derive(Debug)]
pub(super) struct ShownRoute {
    tail: usize,
    first: SmallVec<[Hop; 4]>,
    bound: ExplId,
    /// The tail's hops for this route, when they are not rendered yet for its binding term.
    fresh: Option<FreshTail>,
    /// The tail's findings, carried to the explanation's diagnostics.
    pub(super) diagnostics: Option<Arc<[Diagnostic]>>,
}

/// A route's tail hops, selected for its binding term and not yet rendered.
#[derive(Debug)]
struct FreshTail {
    /// Those on the walked paths or binding (marked).
    hops: Vec<Hop>,
    not_shown: usize,
    /// They are every route's with this binding term (the tail does not pass the route's node),
    /// so the tail keeps them rendered.
    shared: bool,
}

/// A learned route's paths and hops, as an explanation lists them.
pub(super) struct RouteDetail {
    /// How many forwarding paths there are, and whether that count saturated.
    pub(super) total: u64,
    pub(super) saturated: bool,
    /// The first paths, in words.
    pub(super) shown: Vec<String>,
    /// The hops on those paths, and the binding ones wherever they are.
    pub(super) hops: Vec<Arc<HopOut>>,
    /// How many hops are left out.
    pub(super) not_shown: usize,
}

impl RouteTails {
    /// The tail of learned route `rt` of node `n` (walked once per renderer for its next hops
    /// and prefix), with the node's own first hops; None for a direct route. The tail's hops
    /// are selected for the route's binding term unless the tail has them rendered.
    pub(super) fn shown_route(
        &mut self,
        solver: &mut Solver<'_>,
        n: NodeId,
        rt: &RoutePlan,
        max_paths: usize,
    ) -> Option<ShownRoute> {
        if rt.kind == RouteKind::Direct {
            return None;
        }
        let prefix = rt.advertised;
        let worker = rt.kind == RouteKind::Gateway;
        let (via, origins) = match solver.net().learned_for(n, &prefix) {
            Some(l) => (l.via, l.origins),
            None => (SmallVec::new(), SmallVec::new()),
        };
        let first = via.iter().map(|g| solver.first_hop(n, *g)).collect();
        let bound = solver.explanations().get(rt.mtu.expl).bound;
        let key: TailKey = (via, origins, prefix, worker, max_paths);
        let (tail, walked) = match self.index.get(&key) {
            Some(t) => (*t, None),
            None => {
                let (tail, hops) = RouteTail::walk(solver, &key);
                let t = self.tails.len();
                self.tails.push(tail);
                (t, Some(hops))
            }
        };
        let walked_now = walked.is_some();
        let fresh = self
            .tails
            .get(tail)
            .and_then(|t| t.fresh(solver, &key, walked, n, bound));
        let diagnostics = self.tails.get(tail).and_then(|t| t.diagnostics.clone());
        if walked_now {
            self.index.insert(key, tail);
        }
        Some(ShownRoute {
            tail,
            first,
            bound,
            fresh,
            diagnostics,
        })
    }
}

impl RouteTail {
    /// Walks the tail `key` names: its first paths, counted, and its hops after the first
    /// (returned, for the route that asked).
    fn walk(solver: &mut Solver<'_>, key: &TailKey) -> (RouteTail, Vec<Hop>) {
        let (via, origins, prefix, worker, max_paths) = key;
        let paths = solver.net().first_paths_via(via, prefix, *max_paths);
        let after = solver.hops_after(via, origins, *prefix, *worker);
        let mut through: SmallVec<[NodeId; 8]> = SmallVec::new();
        for h in &after.hops {
            if !through.contains(&h.from) {
                through.push(h.from);
            }
        }
        let tail = RouteTail {
            walked: paths.paths,
            total: paths.total,
            saturated: paths.saturated,
            through,
            diagnostics: (!after.diagnostics.is_empty()).then(|| after.diagnostics.into()),
            words: None,
            shown: SmallVec::new(),
        };
        (tail, after.hops)
    }

    /// The tail's hops for a route of node `n` whose binding term is `bound`, unless the tail
    /// has them rendered: those on the walked paths or binding ([`shown_hops`]). `walked` are the hops when
    /// the tail was just walked; otherwise they are walked again. A tail that passes `n` itself
    /// (a forwarding loop, cut by depth) has hops from it that are on the paths for `n` alone.
    fn fresh(
        &self,
        solver: &mut Solver<'_>,
        key: &TailKey,
        walked: Option<Vec<Hop>>,
        n: NodeId,
        bound: ExplId,
    ) -> Option<FreshTail> {
        let passes = self.through.contains(&n);
        if !passes && self.shown.iter().any(|s| s.bound == bound) {
            return None;
        }
        let hops = walked.unwrap_or_else(|| {
            let (via, origins, prefix, worker, _) = key;
            solver.hops_after(via, origins, *prefix, *worker).hops
        });
        let (hops, not_shown) = shown_hops(solver, passes.then_some(n), self, &hops, bound);
        Some(FreshTail {
            hops,
            not_shown,
            shared: !passes,
        })
    }
}

/// Whether `hop` is on one of `paths` (gateways after node `n`, the last one delivering): from
/// `n` to a path's first gateway, between two of its gateways, or out of its last one. With no
/// node, the hops after a route's first hops that are on its paths whichever node it is of.
fn on_paths(n: Option<NodeId>, paths: &[Vec<NodeId>], hop: &Hop) -> bool {
    paths.iter().any(|p| {
        let mut from = n;
        for g in p {
            if from == Some(hop.from) && hop.to == HopTo::Node(*g) {
                return true;
            }
            from = Some(*g);
        }
        from == Some(hop.from) && !matches!(hop.to, HopTo::Node(_))
    })
}

/// Which of a route's `hops` an explanation lists, those holding its binding term `bound`
/// marked: those on the tail's walked paths (after node `n`, for its first hops or a tail that
/// passes it) or binding; and how many others there are.
fn shown_hops<C: FromIterator<Hop>>(
    solver: &Solver<'_>,
    n: Option<NodeId>,
    tail: &RouteTail,
    hops: &[Hop],
    bound: ExplId,
) -> (C, usize) {
    let mut hidden = 0usize;
    let kept = hops
        .iter()
        .filter_map(|h| {
            let mut h = *h;
            h.binds = solver.binds(&h, bound);
            if h.binds || on_paths(n, &tail.walked, &h) {
                Some(h)
            } else {
                hidden = hidden.saturating_add(1);
                None
            }
        })
        .collect();
    (kept, hidden)
}

impl Renderer<'_, '_> {
    /// The paths and hops of learned route `rt` of node `n`, listed as `shown` found them: the
    /// tail's paths after the node's own words, the node's first hops on those paths or
    /// binding, then the tail's (rendered once per binding term).
    pub(super) fn route_detail(
        &self,
        n: NodeId,
        rt: &RoutePlan,
        shown: &ShownRoute,
    ) -> RouteDetail {
        let solver = self.solver;
        let bound = shown.bound;
        let mut hops: Vec<Arc<HopOut>> = Vec::new();
        let mut routes = self.routes.borrow_mut();
        let Some(tail) = routes.tails.get_mut(shown.tail) else {
            return RouteDetail {
                total: 0,
                saturated: false,
                shown: Vec::new(),
                hops,
                not_shown: 0,
            };
        };
        let (kept_first, first_hidden): (SmallVec<[Hop; 4]>, _) =
            shown_hops(solver, Some(n), tail, &shown.first, bound);
        let after = self.tail_hops(tail, shown);
        hops.reserve_exact(kept_first.len().saturating_add(after.hops.len()));
        hops.extend(self.hops(&kept_first));
        hops.extend(after.hops.iter().cloned());
        let shown_paths = self.paths_in_words(n, tail, &rt.advertised);
        RouteDetail {
            total: tail.total,
            saturated: tail.saturated,
            shown: shown_paths,
            hops,
            not_shown: first_hidden.saturating_add(after.not_shown),
        }
    }

    /// The tail's walked paths in words, each after node `n`'s.
    fn paths_in_words(&self, n: NodeId, tail: &mut RouteTail, prefix: &IpNet) -> Vec<String> {
        let words = self.tail_words(tail, prefix);
        let head = self.describe(n);
        words
            .iter()
            .map(|w| {
                let mut s = String::with_capacity(head.len().saturating_add(w.len()));
                s.push_str(&head);
                s.push_str(w);
                s
            })
            .collect()
    }

    /// The tail's hops of a listed route: rendered now when `shown` selected them (and kept by
    /// the tail for the routes with the same binding term), else those the tail keeps.
    fn tail_hops(&self, tail: &mut RouteTail, shown: &ShownRoute) -> ShownTail {
        let kept = tail.shown.iter().find(|s| s.bound == shown.bound);
        let Some(fresh) = &shown.fresh else {
            return kept.cloned().unwrap_or(ShownTail {
                bound: shown.bound,
                hops: Arc::from([]),
                not_shown: 0,
            });
        };
        if fresh.shared
            && let Some(s) = kept
        {
            return s.clone();
        }
        let s = ShownTail {
            bound: shown.bound,
            hops: self.hops(&fresh.hops).into(),
            not_shown: fresh.not_shown,
        };
        if fresh.shared {
            tail.shown.push(s.clone());
        }
        s
    }

    /// A node in a path: `name@Site`, or `name (pool P, Site S)` for a gateway; worded once
    /// per renderer.
    fn describe(&self, n: NodeId) -> Arc<str> {
        if let Some(d) = self.described.borrow().get(&n) {
            return d.clone();
        }
        let topo = self.solver.topo();
        let node = topo.node(n);
        let site = &topo.site(node.site).name;
        let d: Arc<str> = match node.pool() {
            Some(p) => format!("{} (pool {}, Site {})", node.name, topo.pool(p).name, site),
            None => format!("{}@{}", node.name, site),
        }
        .into();
        self.described.borrow_mut().insert(n, d.clone());
        d
    }

    /// The tail's walked paths in words, after the node: worded once per tail.
    fn tail_words(&self, tail: &mut RouteTail, prefix: &IpNet) -> Arc<[Arc<str>]> {
        if let Some(w) = &tail.words {
            return w.clone();
        }
        let words: Arc<[Arc<str>]> = tail
            .walked
            .iter()
            .map(|p| self.path_tail(p, prefix))
            .collect();
        tail.words = Some(words.clone());
        words
    }

    /// A forwarding path after its node, in words (` -> g1 (pool P, Site A) -> Site B`): the
    /// same in every tail whose path it is, so worded once per renderer.
    fn path_tail(&self, hops: &[NodeId], prefix: &IpNet) -> Arc<str> {
        let key: PathKey = (SmallVec::from_slice(hops), *prefix);
        if let Some(t) = self.path_words.borrow().get(&key) {
            return t.clone();
        }
        let words = self.path_words_of(hops, prefix);
        self.path_words.borrow_mut().insert(key, words.clone());
        words
    }

    /// [`Renderer::path_tail`], worded anew.
    fn path_words_of(&self, hops: &[NodeId], prefix: &IpNet) -> Arc<str> {
        let solver = self.solver;
        let topo = solver.topo();
        let mut s = String::with_capacity(hops.len().saturating_add(1).saturating_mul(48));
        for h in hops {
            s.push_str(" -> ");
            s.push_str(&self.describe(*h));
        }
        let last = hops.last().copied();
        let end = solver
            .net()
            .origins_of(prefix)
            .iter()
            .find(|o| last.is_some_and(|g| solver.net().originates(g, o.dest)))
            .map(|o| o.dest);
        match end {
            Some(Dest::Site(d)) => {
                s.push_str(" -> Site ");
                s.push_str(&topo.site(d).name);
            }
            Some(Dest::Pool(p)) => {
                s.push_str(" -> leaves the overlay (routed by pool ");
                s.push_str(&topo.pool(p).name);
                s.push(')');
            }
            None => {}
        }
        s.into()
    }
}

#[cfg(test)]
mod tests {
    use super::on_paths;
    use crate::plan::RouteKind;
    use crate::report::explanation::{DEFAULT_PATHS, Explanation, Want, explanation};
    use crate::report::{Explanations, RenderCache, Renderer};
    use crate::{Settings, Solver};
    use proptest::prelude::*;
    use std::sync::Arc;
    use test_utils::reference::topology_of;
    use test_utils::testkit::{arb_spec, proptest_config};
    use topology_core::ids::NodeId;
    use topology_core::model::Topology;

    /// Every node's explanation, in `order`, through one renderer's caches.
    fn explain_all(topo: &Topology, order: &[NodeId]) -> Vec<(NodeId, Explanation)> {
        let mut solver = Solver::new(topo, Settings::default());
        let mut cache = RenderCache::at(Explanations::Full);
        order
            .iter()
            .filter_map(|n| {
                let plan = solver.plan(*n);
                let e = explanation(
                    &mut solver,
                    *n,
                    &plan,
                    Want::Everything,
                    DEFAULT_PATHS,
                    &mut cache,
                );
                e.ok().map(|e| (*n, e))
            })
            .collect()
    }

    /// Each learned route's listed hops and paths, made from the route's own walk
    /// ([`Solver::route_hops`], [`topology_core::net::Net::first_paths`]) without a tail.
    fn walked_anew(topo: &Topology, n: NodeId) -> Vec<(Vec<Arc<crate::HopOut>>, usize, u64)> {
        let mut solver = Solver::new(topo, Settings::default());
        let plan = solver.plan(n);
        let mut out = Vec::new();
        for rt in plan.routes.iter().filter(|r| r.kind != RouteKind::Direct) {
            let paths = solver.net().first_paths(n, &rt.advertised, DEFAULT_PATHS);
            let mut hops = solver.route_hops(n, rt).hops;
            let all = hops.len();
            hops.retain(|h| h.binds || on_paths(Some(n), &paths.paths, h));
            let r = Renderer::new(&solver, Explanations::Full);
            out.push((r.hops(&hops), all.saturating_sub(hops.len()), paths.total));
        }
        out
    }

    /// The routes' hops, hops left out and path counts of an explanation.
    fn listed(e: &Explanation) -> Vec<(Vec<Arc<crate::HopOut>>, usize, u64)> {
        e.values
            .iter()
            .filter_map(|v| Some((v.hops.clone()?, v.hops_not_shown?, v.paths.as_ref()?.total)))
            .collect()
    }

    proptest! {
        #![proptest_config(proptest_config(
            100,
            concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/route_tails.txt")
        ))]

        /// On random topologies, a node's explanation is the same whichever nodes were
        /// explained before it (the tails they left are the node's own), and its routes list
        /// the hops of their own walk: those on their first paths, and the binding ones.
        #[test]
        fn tails_are_each_routes_own(spec in arb_spec()) {
            let topo = topology_of(&spec.to_yaml());
            let nodes: Vec<NodeId> = (0..topo.nodes.len()).map(NodeId::from_idx).collect();
            let reversed: Vec<NodeId> = nodes.iter().rev().copied().collect();
            let forward = explain_all(&topo, &nodes);
            let mut backward = explain_all(&topo, &reversed);
            backward.reverse();
            prop_assert_eq!(forward.len(), backward.len());
            for ((n, a), (m, b)) in forward.iter().zip(&backward) {
                prop_assert_eq!(n, m);
                let fresh = explain_all(&topo, &[*n]);
                prop_assert_eq!(fresh.first().map(|(_, e)| e), Some(a));
                prop_assert_eq!(a, b);
                prop_assert_eq!(listed(a), walked_anew(&topo, *n), "{}", topo.node(*n).name);
            }
        }
    }
}
