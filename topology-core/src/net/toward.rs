//! Next hops towards one origin pool: where a gateway forwards every destination that pool alone
//! originates ([`Net::directing_origin`], [`Net::via_toward`]).
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

use super::search::{UNREACHED, is_marked};
use super::{Net, Origin};
use crate::ids::{NodeId, PoolId};
use smallvec::SmallVec;
use std::sync::Arc;

/// Traces kept per origin pool before its own search is made instead.
const MAX_TRACES: usize = 4;

/// The shortest paths from a root pool to an origin pool.
#[derive(Debug, Clone)]
pub(super) struct Trace {
    /// The root's open search.
    from_root: Arc<[u32]>,
    /// The pools on the shortest paths from the root to the origin pool (bit set).
    marks: Arc<[u64]>,
}

/// How to tell the next hops of one pool towards an origin pool.
enum Step {
    /// Peered pools at distance `want` in the origin pool's own search.
    Origin { search: Arc<[u32]>, want: u32 },
    /// Peered pools at distance `want` from a trace's root and on its paths.
    Traced { trace: Trace, want: u32 },
}

impl Step {
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
    /// The one origin pool towards which a gateway of pool `p` forwards origin `o`, when there is
    /// one: the class is clean (every gateway that is not an origin's accepts its hop lists, so
    /// each selects its next hops by distance alone), `p` does not originate it, and one origin
    /// pool's search is strictly nearer to `p` than every other's. Then every gateway on the
    /// paths from `p` is strictly nearer to that origin too (a next hop one pool nearer to it
    /// cannot be as near to another), so the paths are those towards that origin pool alone,
    /// whatever the destination: [`Net::via_toward`] gives them hop by hop.
    pub fn directing_origin(&self, p: PoolId, o: Origin) -> Option<PoolId> {
        let bfs = self.bfs(o.dest, o.ty == super::RouteType::NodeCidr);
        if !bfs.clean || bfs.origins.contains(&p) {
            return None;
        }
        let mut best: Option<(u32, PoolId)> = None;
        let mut tied = false;
        for (i, a) in bfs.origins.iter().enumerate() {
            let k = self.origin_dist(&bfs, i, p);
            match best {
                Some((b, _)) if k > b => {}
                Some((b, _)) if k == b => tied = true,
                _ => {
                    best = Some((k, *a));
                    tied = false;
                }
            }
        }
        best.filter(|(k, _)| !tied && *k != UNREACHED)
            .map(|(_, a)| a)
    }

    /// The next hops of a gateway of pool `p` towards origin pool `a` (see
    /// [`Net::directing_origin`]): the gateways of the pools peered with `p` one pool nearer to
    /// `a`, sorted (empty when `p` is `a` or does not reach it).
    pub fn via_toward(&self, p: PoolId, a: PoolId) -> SmallVec<[NodeId; 4]> {
        let Some(step) = self.step_toward(p, a) else {
            return SmallVec::new();
        };
        let mut out: SmallVec<[NodeId; 4]> = self
            .transit_peers(p)
            .iter()
            .filter(|(_, q, _)| step.is_next(*q))
            .map(|(g, _, _)| *g)
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// How to tell `p`'s next hops towards `a` (`None`: it has none): from `a`'s own search
    /// when made, else from a trace whose paths pass through `p`, rooted at `p` if none does.
    fn step_toward(&self, p: PoolId, a: PoolId) -> Option<Step> {
        if p == a || self.topo.pool(p).gateways.is_empty() {
            return None;
        }
        let own = self.searches.borrow().open_search(a).cloned();
        if let Some(search) = own {
            return origin_step(search, p);
        }
        let trace = match self.trace_through(p, a) {
            Some(t) => t,
            None if self.traces_of(a) >= MAX_TRACES => {
                return origin_step(self.search_from(a, &[]), p);
            }
            None => self.new_trace(p, a),
        };
        if !is_marked(&trace.marks, p.0) {
            return None;
        }
        let want = trace.from_root.get(p.idx())?.checked_add(1)?;
        Some(Step::Traced { trace, want })
    }

    /// A trace towards `a` whose paths pass through `p`.
    fn trace_through(&self, p: PoolId, a: PoolId) -> Option<Trace> {
        let memo = self.searches.borrow();
        memo.traces
            .get(a.idx())?
            .iter()
            .find(|t| is_marked(&t.marks, p.0))
            .cloned()
    }

    fn traces_of(&self, a: PoolId) -> usize {
        self.searches
            .borrow()
            .traces
            .get(a.idx())
            .map_or(0, |t| t.len())
    }

    /// The trace of the shortest paths from `r` to `a` (kept for the next pools of the walk).
    fn new_trace(&self, r: PoolId, a: PoolId) -> Trace {
        let from_root = self.search_from(r, &[]);
        let marks = self.shortest_path_marks(&from_root, a);
        let trace = Trace { from_root, marks };
        let np = self.topo.pools.len();
        let mut memo = self.searches.borrow_mut();
        if memo.traces.len() < np {
            memo.traces.resize_with(np, SmallVec::new);
        }
        if let Some(ts) = memo.traces.get_mut(a.idx()) {
            ts.push(trace.clone());
        }
        trace
    }
}

/// Next hops from origin pool `a`'s own search: the peered pools one pool nearer to it than `p`.
fn origin_step(search: Arc<[u32]>, p: PoolId) -> Option<Step> {
    let k = search
        .get(p.idx())
        .copied()
        .filter(|k| *k != UNREACHED && *k > 1)?;
    let want = k.saturating_sub(1);
    Some(Step::Origin { search, want })
}
