//! What a [`Resolver`](super::Resolver) keeps warm between questions: the solver beside the
//! topology it borrows (`self_cell`, behind a `Mutex`), the last node plans, and the render
//! caches of each level of explanation.

use crate::plan::NodePlan;
use crate::report::{Explanations, RenderCache, Renderer};
use crate::solver::Solver;
use crate::whatif::Base;
use std::collections::VecDeque;
use std::sync::Mutex;
use topology_core::ids::NodeId;

/// The solver a resolver keeps warm beside the topology it reads, and the plans of the nodes
/// asked about last: repeated questions reuse what earlier ones memoized or planned.
pub(super) struct Planner<'t> {
    pub(super) solver: Solver<'t>,
    /// The last [`RECENT_PLANS`] node plans made, the newest last.
    pub(super) recent: VecDeque<Recent>,
    /// The explanations rendered so far, by level: values of one node and of its neighbours
    /// share terms, rendered once.
    pub(super) rendered: Rendered,
}

/// A node's plan kept for the next questions.
pub(super) struct Recent {
    pub(super) node: NodeId,
    pub(super) plan: NodePlan,
}

/// How many node plans a resolver keeps: enough for a tool walking the nodes one by one and
/// asking several questions of each, a small part of a large cluster's plans.
pub(super) const RECENT_PLANS: usize = 16;

pub(super) type Locked<'t> = Mutex<Planner<'t>>;

/// A resolver's render caches, one per level of explanation.
pub(super) struct Rendered {
    pub(super) none: RenderCache,
    pub(super) bound: RenderCache,
    pub(super) full: RenderCache,
}

impl Rendered {
    pub(super) fn new() -> Rendered {
        Rendered {
            none: RenderCache::at(Explanations::None),
            bound: RenderCache::at(Explanations::Bound),
            full: RenderCache::at(Explanations::Full),
        }
    }

    /// Runs `f` with a renderer of `solver` at `level`, on that level's cache.
    pub(super) fn render<T>(
        &mut self,
        solver: &Solver<'_>,
        level: Explanations,
        f: impl FnOnce(&mut Renderer<'_, '_>) -> T,
    ) -> T {
        let slot = match level {
            Explanations::None => &mut self.none,
            Explanations::Bound => &mut self.bound,
            Explanations::Full => &mut self.full,
        };
        let mut r = Renderer::resume(solver, std::mem::take(slot));
        let out = f(&mut r);
        *slot = r.suspend();
        out
    }
}

self_cell::self_cell!(
    /// The cluster and the solver over its topology.
    pub(super) struct Warm {
        owner: Base,
        #[not_covariant]
        dependent: Locked,
    }
);
