//! Next hops towards one origin pool: where a gateway forwards every destination that pool alone
//! originates ([`Net::directing_origins`], [`Net::via_toward`]).
//!
//! The next hops of pool `p` towards origin pool `a` are its peered pools one pool nearer to
//! `a`. That needs distances to `a`, which a fresh solver would get by searching from every
//! origin pool it walks towards: every pool, for one node. The paths a node walks, though, start
//! at its few uplink pools, and for `p` on a shortest path from root `r` to `a`, a peered pool
//! `q` is one pool nearer to `a` exactly when it is one pool farther from `r` and also on a
//! shortest path from `r` to `a` (nearer to `a` puts it on such a path; on one, its distance to
//! `a` is what remains of `r`'s). So the root's search, with the pools of those paths traced
//! back from `a` in it (a [`Trace`]), gives the next hops of every pool the walk meets. Where no
//! trace covers a pool, a new one is rooted there; past a few roots per origin pool (one solver
//! resolving many nodes), the origin pool's own search is made and used instead.

use super::search::{Searches, Trace, UNREACHED, is_marked};
use super::{GatewayClass, Net, Origin};
use crate::ids::{NodeId, PoolId, SiteId};
use smallvec::SmallVec;

/// Traces kept per origin pool before its own search is made instead.
const MAX_TRACES: usize = 4;

/// How to tell the next hops of one pool towards an origin pool.
enum Step<'m> {
    /// Peered pools at distance `want` in the origin pool's own search.
    Origin { search: &'m [u32], want: u32 },
    /// Peered pools at distance `want` from a trace's root and on its paths.
    Traced { trace: &'m Trace, want: u32 },
}

impl Step<'_> {
    fn is_next(&self, q: PoolId) -> bool {
        match self {
            Step::Origin { search, want } => search.get(q.idx()) == Some(want),
            Step::Traced { trace, want } => {
                trace.from_root.get(q.idx()) == Some(want) && is_marked(&trace.marks, q.0)
            }
        }
    }
}

impl Net<'_> {
    /// The origin pools towards which a gateway of pool `p` forwards origin `o`: those nearest
    /// to `p`, sorted, when the class is clean (every gateway that is not an origin's accepts
    /// its hop lists, so each selects its next hops by distance alone) and `p` does not
    /// originate it (empty otherwise, or when `p` reaches none). With one such pool, every
    /// gateway on the paths from `p` is strictly nearer to it too (a next hop one pool nearer to
    /// it cannot be as near to another), so the paths are those towards that origin pool alone,
    /// whatever the destination. With several (a tie), the next hops are those towards any of
    /// them ([`Net::via_toward_any`]), and each next hop forwards towards those of them it is
    /// one pool nearer to.
    pub fn directing_origins(&self, p: PoolId, o: Origin) -> SmallVec<[PoolId; 2]> {
        let mut out: SmallVec<[PoolId; 2]> = SmallVec::new();
        let Some(bfs) = self.bfs(o.dest, o.ty == super::RouteType::NodeCidr) else {
            return out;
        };
        if !bfs.clean || bfs.origins.contains(&p) {
            return out;
        }
        let mut best = UNREACHED;
        for (i, a) in bfs.origins.iter().enumerate() {
            let k = self.origin_dist(bfs, i, p);
            if k == UNREACHED || k > best {
                continue;
            }
            if k < best {
                best = k;
                out.clear();
            }
            out.push(*a);
        }
        out.sort_unstable();
        out
    }

    /// The next hops of a gateway of pool `p` towards any of the origin pools `toward` (as
    /// [`Net::directing_origins`] gives them: all at the same distance from `p`), sorted.
    pub fn via_toward_any(&self, p: PoolId, toward: &[PoolId]) -> SmallVec<[NodeId; 4]> {
        let mut out: SmallVec<[NodeId; 4]> = SmallVec::new();
        for a in toward {
            out.extend(self.via_toward(p, *a));
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The next hops of a gateway of pool `p` towards origin pool `a` (see
    /// [`Net::directing_origins`]): the gateways of the pools peered with `p` one pool nearer to
    /// `a`, sorted (empty when `p` is `a` or does not reach it).
    pub fn via_toward(&self, p: PoolId, a: PoolId) -> SmallVec<[NodeId; 4]> {
        let mut out: SmallVec<[NodeId; 4]> = SmallVec::new();
        self.for_each_class_toward(p, a, |c| out.extend(c.gateways.iter().copied()));
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The gateway classes (pool, Site) of [`Net::via_toward`]'s next hops, each once: what a
    /// walk that depends on a next hop's pool and Site alone asks, without reading the nodes
    /// of the gateways.
    pub fn classes_toward(&self, p: PoolId, a: PoolId) -> SmallVec<[(PoolId, SiteId); 4]> {
        let mut out: SmallVec<[(PoolId, SiteId); 4]> = SmallVec::new();
        self.for_each_class_toward(p, a, |c| out.push((c.pool, c.site)));
        out
    }

    /// Calls `f` with each class of `p`'s transit peers one pool nearer to `a`. Read from `a`'s
    /// own search when made, else from a trace whose paths pass through `p`, else from a new
    /// trace rooted at `p` (or past a few roots, from `a`'s own search, made now).
    fn for_each_class_toward(&self, p: PoolId, a: PoolId, mut f: impl FnMut(&GatewayClass)) {
        if p == a || self.topo.pool(p).gateways.is_empty() {
            return;
        }
        let peers = self.transit_peers(p);
        if !self.known_next_classes(p, a, peers, &mut f) {
            if self.traces_of(a) >= MAX_TRACES {
                self.search_from(a, &[]);
            } else {
                self.new_trace(p, a);
            }
            self.known_next_classes(p, a, peers, &mut f);
        }
    }

    /// Calls `f` with each of `p`'s transit `peers` one pool nearer to `a`, when `a`'s own
    /// search or a trace through `p` tells them; false when neither does. `f` runs while the
    /// searches are borrowed: it must not search.
    fn known_next_classes(
        &self,
        p: PoolId,
        a: PoolId,
        peers: &[GatewayClass],
        f: &mut impl FnMut(&GatewayClass),
    ) -> bool {
        let memo = self.searches.borrow();
        let Some(step) = step_toward(&memo, p, a) else {
            return false;
        };
        if let Some(step) = step {
            for c in peers.iter().filter(|c| step.is_next(c.pool)) {
                f(c);
            }
        }
        true
    }

    fn traces_of(&self, a: PoolId) -> usize {
        self.searches
            .borrow()
            .traces
            .get(a.idx())
            .map_or(0, |t| t.len())
    }

    /// The trace of the shortest paths from `r` to `a`, kept for the pools of the walk.
    fn new_trace(&self, r: PoolId, a: PoolId) {
        let from_root = self.search_from(r, &[]);
        let marks = self.shortest_path_marks(&from_root, a);
        let trace = Trace { from_root, marks };
        let np = self.topo.pools.len();
        let mut memo = self.searches.borrow_mut();
        if memo.traces.len() < np {
            memo.traces.resize_with(np, SmallVec::new);
        }
        if let Some(ts) = memo.traces.get_mut(a.idx()) {
            ts.push(trace);
        }
    }
}

/// How to tell `p`'s next hops towards `a` from the searches made so far: `None` when neither
/// `a`'s own search nor a trace through `p` is there, `Some(None)` when `p` has none.
fn step_toward(memo: &Searches, p: PoolId, a: PoolId) -> Option<Option<Step<'_>>> {
    match memo.open_search(a) {
        Some(search) => Some(
            search
                .get(p.idx())
                .copied()
                .filter(|k| *k != UNREACHED && *k > 1)
                .map(|k| Step::Origin {
                    search,
                    want: k.saturating_sub(1),
                }),
        ),
        None => {
            let trace = memo
                .traces
                .get(a.idx())?
                .iter()
                .find(|t| is_marked(&t.marks, p.0))?;
            Some(
                trace
                    .from_root
                    .get(p.idx())
                    .and_then(|k| k.checked_add(1))
                    .map(|want| Step::Traced { trace, want }),
            )
        }
    }
}
