//! The input a what-if question is asked about.

use crate::solver::Settings;
use topology_core::decode::RawObject;
use topology_core::diag::Diagnostic;
use topology_core::model::Topology;

/// The input of a resolve: decoded objects, decoder findings and settings.
#[derive(Clone, Debug, Default)]
pub struct Input {
    /// Decoded objects.
    pub objects: Vec<RawObject>,
    /// Findings that belong to no object.
    pub diagnostics: Vec<Diagnostic>,
    /// Settings.
    pub settings: Settings,
}

impl Input {
    /// Builds the validated topology of this input (a whole build each call: keep the result,
    /// or hold a [`Base`], which keeps it).
    ///
    /// ```
    /// # let d = mtu_solver::load::from_sources([("cluster.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// # let base = mtu_solver::whatif::Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
    /// let topology = base.build_topology();
    /// let names: Vec<&str> = topology.nodes.iter().map(|n| &*n.name).collect();
    /// assert_eq!(names, ["wa", "wb"]);
    /// assert!(topology.node_id("wc").is_none());
    /// ```
    pub fn build_topology(&self) -> Topology {
        Topology::build(self.objects.iter(), self.diagnostics.iter().cloned())
    }
}

/// An input together with the topology built from it: the base a what-if on an already
/// resolved [`Solver`](crate::Solver) is answered against. A solver made from another base's
/// topology (another cluster, or another build of the same objects) is refused by
/// [`what_if_on`](super::what_if_on), so its memos can never answer for the wrong cluster.
///
/// A solver borrows the topology it was made from, so it cannot outlive its base; this
/// compiles:
///
/// ```
/// use mtu_solver::whatif::{Base, Input};
/// use mtu_solver::{Settings, Solver};
/// let base = Base::new(Input::default());
/// let solver = Solver::new(base.topology(), Settings::default());
/// drop(solver);
/// ```
///
/// and this does not (the base, and its topology, are gone while the solver lives on):
///
/// ```compile_fail
/// use mtu_solver::whatif::{Base, Input};
/// use mtu_solver::{Settings, Solver};
/// let solver = {
///     let base = Base::new(Input::default());
///     Solver::new(base.topology(), Settings::default())
/// };
/// drop(solver);
/// ```
#[derive(Debug)]
pub struct Base {
    input: Input,
    topology: Topology,
}

impl Base {
    /// The base of `input`. Costs one build of its topology.
    ///
    /// ```
    /// # let d = mtu_solver::load::from_sources([("cluster.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// # let base = mtu_solver::whatif::Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
    /// use mtu_solver::whatif::Base;
    /// let resolved = Base::new(base);
    /// assert_eq!(resolved.topology().nodes.len(), 2);
    /// assert!(resolved.topology().node_id("wa").is_some());
    /// ```
    pub fn new(input: Input) -> Base {
        let topology = input.build_topology();
        Base { input, topology }
    }

    /// The input. Costs nothing.
    ///
    /// ```
    /// # let d = mtu_solver::load::from_sources([("cluster.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// # let base = mtu_solver::whatif::Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
    /// use mtu_solver::whatif::{Base, what_if};
    /// use mtu_solver::Explanations;
    /// let resolved = Base::new(base);
    /// assert_eq!(resolved.input().objects.len(), 5); // two Sites, a SitePeering, two Nodes
    /// let what_if = what_if(resolved.input(), &["agent-mtu 1300".parse()?], Explanations::None)?;
    /// assert_eq!(what_if.nodes_affected(), 2);
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn input(&self) -> &Input {
        &self.input
    }

    /// The topology; make the solver of [`what_if_on`](super::what_if_on) from this one. Costs
    /// nothing.
    ///
    /// ```
    /// # let d = mtu_solver::load::from_sources([("cluster.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
    /// # let base = mtu_solver::whatif::Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
    /// use mtu_solver::whatif::Base;
    /// use mtu_solver::{Settings, Solver};
    /// let resolved = Base::new(base);
    /// let mut solver = Solver::new(resolved.topology(), Settings::default());
    /// let plans = solver.plan_all();
    /// assert_eq!(plans.len(), resolved.topology().nodes.len());
    /// ```
    pub fn topology(&self) -> &Topology {
        &self.topology
    }
}
