//! [`Planned`]: a node [`Resolver::plan_each`](super::Resolver::plan_each) planned, handed to
//! the caller's render function on the thread that planned it.

use crate::plan::NodePlan;
use crate::report::{self, NodeOut, Renderer};
use topology_core::model::Topology;

/// A node [`Resolver::plan_each`](super::Resolver::plan_each) planned, on the thread that
/// planned it.
pub struct Planned<'a, 's, 't> {
    pub(super) topo: &'a Topology,
    pub(super) renderer: &'a mut Renderer<'s, 't>,
    pub(super) plan: &'a NodePlan,
}

impl<'s, 't> Planned<'_, 's, 't> {
    /// The node's output, as [`Resolver::plan`](super::Resolver::plan) gives it. Costs
    /// rendering its values (each explanation once per worker).
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let workers = mtu_solver::stream::Workers { threads: 2, chunk: 1, renew: None };
    /// let mut planned = Vec::new();
    /// resolver.plan_each(["wa", "wb"], workers, |mut node| node.out(), |out, _| {
    ///     planned.push(out); Ok::<_, mtu_solver::Error>(())
    /// })?;
    /// assert_eq!(planned, [resolver.plan("wa")?, resolver.plan("wb")?]);
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn out(&mut self) -> NodeOut {
        report::node_out(self.topo, self.renderer, self.plan)
    }

    /// The plan, the topology it names nodes of, and the worker's renderer: for a tool that
    /// folds plans into something smaller than [`Planned::out`] (the binary's `resolve
    /// --summary`). Free.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Kind, ObjectRef, stream::Workers};
    /// let (workers, mut fabrics) = (Workers { threads: 2, chunk: 1, renew: None }, Vec::new());
    /// resolver.plan_each(["wa", "wb"], workers, |mut planned| {
    ///     let (topo, renderer, plan) = planned.parts();
    ///     let why = renderer.expl(plan.fabric.expl).bound.object.clone();
    ///     (topo.node(plan.node).name.to_string(), plan.fabric.mtu.get(), why)
    /// }, |fabric, _| { fabrics.push(fabric); Ok::<_, mtu_solver::Error>(()) })?;
    /// let ab = Some(ObjectRef::new(Kind::SitePeering, "ab"));
    /// assert_eq!(fabrics, [("wa".into(), 1400, ab.clone()), ("wb".into(), 1400, ab)]);
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn parts(&mut self) -> (&Topology, &mut Renderer<'s, 't>, &NodePlan) {
        (self.topo, self.renderer, self.plan)
    }
}
