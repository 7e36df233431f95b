//! The entry points of a what-if ([`what_if`], [`what_if_on`]) and of a comparison ([`diff`],
//! [`compare`]), and the one strategy they all try first ([`on_one_solver`]): cap changes one
//! solver can answer are answered per value on one solver (`engine.rs`); any other question is
//! answered by comparing the inputs before and after on a solver each (`diff.rs`). Also the
//! input a question makes ([`changed_over`]) and the manifests of its change ([`manifests`]).

use super::apply::apply_all;
use super::classify::{Difference, cap_replacements, classify, shared_caps};
use super::diff::{WhatIf, two_inputs};
use super::engine::per_value_shared;
use super::input::{Base, Input};
use super::manifests::Manifests;
use super::mutation::{Mutation, MutationError, check_all};
use crate::report::Explanations;
use crate::solver::{Settings, Solver};
use topology_core::model::{ObjRef, Topology};
use topology_core::mtu::Mtu;

/// Runs a what-if: `mutations` applied in order to `base`, once [`check_all`] accepts them.
/// Costs a build of `base`'s topology and a re-resolve of the values the mutations reach (for
/// mutations other than caps, what [`diff`] costs on top).
///
/// ```
/// # let d = mtu_solver::load::from_sources([("cluster.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
/// # let base = mtu_solver::whatif::Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
/// use mtu_solver::Explanations;
/// use mtu_solver::whatif::{Strategy, what_if};
/// let lower = what_if(&base, &["underlay wa=1300".parse()?], Explanations::Bound)?;
/// assert_eq!((lower.strategy, lower.nodes_affected()), (Strategy::NearNodes, 2));
/// // Both ends of the link: wa's underlay less GENEVE's 58.
/// assert!(lower.changes.iter().all(|c| (c.before, c.after) == (Some(1400), Some(1242))));
/// // Only a gateway can be demoted.
/// assert!(what_if(&base, &["demote wa".parse()?], Explanations::Bound).is_err());
/// # Ok::<(), mtu_solver::Error>(())
/// ```
pub fn what_if(
    base: &Input,
    mutations: &[Mutation],
    level: Explanations,
) -> Result<WhatIf, MutationError> {
    what_if_over(base, &base.build_topology(), mutations, level)
}

/// [`what_if`] over the topology already built from `base` (a [`Base`]'s), so a caller that
/// holds one does not build it again.
pub(crate) fn what_if_over(
    base: &Input,
    tb: &Topology,
    mutations: &[Mutation],
    level: Explanations,
) -> Result<WhatIf, MutationError> {
    check_all(base, tb, mutations)?;
    let caps = cap_replacements(tb, base, mutations);
    if let Some(w) = on_one_solver(OneSolver::Fresh(tb, &base.settings), caps.as_deref(), level) {
        return Ok(w);
    }
    let after = apply_all(base, mutations)?;
    Ok(diff(base, &after, level))
}

/// `base` changed by `mutations` in order, once [`check_all`] accepts them (against `tb`, the
/// topology built from `base`): the input whose resolve gives a what-if's values after.
pub(crate) fn changed_over(
    base: &Input,
    tb: &Topology,
    mutations: &[Mutation],
) -> Result<Input, MutationError> {
    check_all(base, tb, mutations)?;
    apply_all(base, mutations)
}

/// What `mutations` change in `base`'s cluster, as the manifests an operator applies
/// ([`Manifests`]: a merge patch per changed object, and what no object carries), once
/// [`check_all`] accepts them. Applied to the cluster, with the [`Unwritten`](super::Unwritten)
/// changes made where they are made, they make it the cluster whose values a [`what_if`]
/// reports as after. Costs a build of `base`'s topology, a copy of `base` and a comparison of
/// every object before and after.
///
/// ```
/// # let d = mtu_solver::load::from_sources([("cluster.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
/// # let base = mtu_solver::whatif::Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
/// use mtu_solver::{Kind, Unwritten};
/// use mtu_solver::whatif::manifests;
/// let change = manifests(&base, &["set SitePeering/ab=1300".parse()?, "agent-mtu 1300".parse()?])?;
/// let peering = &change.objects()[0];
/// assert_eq!((peering.kind(), peering.name()), (Kind::SitePeering, "ab"));
/// assert_eq!(peering.patch()["spec"]["tunnelMTU"], 1300);
/// assert_eq!(change.unwritten(), [Unwritten::AgentMtu { mtu: 1300 }]);
/// # Ok::<(), mtu_solver::Error>(())
/// ```
pub fn manifests(base: &Input, mutations: &[Mutation]) -> Result<Manifests, MutationError> {
    manifests_over(base, &base.build_topology(), mutations)
}

/// [`manifests`] over the topology already built from `base`.
pub(crate) fn manifests_over(
    base: &Input,
    tb: &Topology,
    mutations: &[Mutation],
) -> Result<Manifests, MutationError> {
    let after = changed_over(base, tb, mutations)?;
    Ok(Manifests::between(base, &after))
}

/// A what-if against a resolved base: `solver` is a solver over `base`'s topology (a fresh one
/// gives the same answer; one that already resolved nodes answers faster, its memos being warm);
/// a solver over any other topology is refused ([`MutationError::OtherTopology`]).
/// Cap changes of assignments, pools and pool peerings are answered on that solver itself
/// ([`Solver::set_caps`]): nothing is rebuilt, values the change cannot touch are never
/// looked at, and the solver is back on the base caps afterwards. Other mutations fall back to
/// [`what_if`]. Costs a re-resolve of the values the mutations reach, on `solver` when one
/// solver can answer (its warm memos reused), or what [`what_if`] costs.
///
/// ```
/// # let d = mtu_solver::load::from_sources([("cluster.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
/// # let base = mtu_solver::whatif::Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
/// use mtu_solver::whatif::{Base, MutationError, what_if, what_if_on};
/// use mtu_solver::{Explanations::Bound, Mutation, Solver};
/// let resolved = Base::new(base.clone());
/// let mut solver = Solver::new(resolved.topology(), base.settings.clone());
/// let _plans = solver.plan_all(); // memos warm
/// let cap: Mutation = "set SitePeering/ab=1300".parse()?;
/// let warm = what_if_on(&mut solver, &resolved, &[cap.clone()], Bound)?;
/// assert_eq!(warm.changes, what_if(&base, &[cap.clone()], Bound)?.changes);
/// // Another build of the same objects is another topology: refused.
/// let other = what_if_on(&mut solver, &Base::new(base), &[cap], Bound);
/// assert_eq!(other.err(), Some(MutationError::OtherTopology));
/// # Ok::<(), mtu_solver::Error>(())
/// ```
pub fn what_if_on(
    solver: &mut Solver<'_>,
    base: &Base,
    mutations: &[Mutation],
    level: Explanations,
) -> Result<WhatIf, MutationError> {
    if !std::ptr::eq(solver.topo(), base.topology()) {
        return Err(MutationError::OtherTopology);
    }
    let base = base.input();
    check_all(base, solver.topo(), mutations)?;
    let caps = cap_replacements(solver.topo(), base, mutations);
    match on_one_solver(OneSolver::Given(solver), caps.as_deref(), level) {
        Some(w) => Ok(w),
        None => what_if(base, mutations, level),
    }
}

/// Compares two complete inputs (`--after PATH`): the same as [`diff`]. Costs what [`diff`]
/// costs.
///
/// ```
/// # let d = mtu_solver::load::from_sources([("cluster.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
/// # let base = mtu_solver::whatif::Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
/// use mtu_solver::Explanations;
/// use mtu_solver::whatif::{Strategy, compare};
/// let mut after = base.clone();
/// after.settings.cfg_mtu = 1300; // the agent's `mtu` on every node
/// let changed = compare(&base, &after, Explanations::Bound);
/// assert_eq!((changed.strategy, changed.changes.len()), (Strategy::AllNodes, 8));
/// assert!(changed.changes.iter().all(|c| c.after == Some(1300)));
/// assert!(compare(&base, &base, Explanations::Bound).changes.is_empty());
/// ```
pub fn compare(base: &Input, after: &Input, level: Explanations) -> WhatIf {
    diff(base, after, level)
}

/// Every value that differs between two inputs, computed at a cost that follows what changed:
/// per value for cap changes, the nodes around a node for underlay changes, every node when
/// links or paths may change. Costs a build of `base`'s topology and a comparison of the
/// inputs' objects, then a re-resolve of the values that can differ (on a second topology,
/// built from `after`, unless one solver answers the cap changes).
///
/// ```
/// # let d = mtu_solver::load::from_sources([("cluster.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
/// # let base = mtu_solver::whatif::Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
/// use mtu_solver::whatif::{Input, Strategy, diff};
/// use mtu_solver::{Explanations, doc_cluster::TWO_SITES, load};
/// let edited = TWO_SITES.replace("tunnelMTU: 1400", "tunnelMTU: 1300");
/// let d = load::from_sources([("cluster.yaml", edited)]);
/// let after = Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
/// let changed = diff(&base, &after, Explanations::Bound);
/// assert_eq!((changed.strategy, changed.nodes_affected()), (Strategy::PerValue, 2));
/// assert!(changed.changes.iter().all(|c| (c.before, c.after) == (Some(1400), Some(1300))));
/// ```
pub fn diff(base: &Input, after: &Input, level: Explanations) -> WhatIf {
    let tb = base.build_topology();
    let difference = classify(base, after);
    let caps = match &difference {
        Difference::Caps(objs) => shared_caps(&tb, after, objs),
        _ => None,
    };
    if let Some(w) = on_one_solver(
        OneSolver::Fresh(&tb, &base.settings),
        caps.as_deref(),
        level,
    ) {
        return w;
    }
    two_inputs(&tb, base, after, difference, level)
}

/// The solver a per-value answer runs on.
enum OneSolver<'s, 't> {
    /// A fresh solver over this topology with these settings, made only when it answers.
    Fresh(&'t Topology, &'s Settings),
    /// The caller's solver, its memos warm; it is back on its caps afterwards.
    Given(&'s mut Solver<'t>),
}

/// The strategy every entry point tries first: the cap replacements `caps` are answered per
/// value on one solver. `caps` is None when one solver cannot answer the question (a change
/// other than caps, or a cap one solver cannot replace); the answer is then None, and the
/// caller compares two inputs.
fn on_one_solver(
    solver: OneSolver<'_, '_>,
    caps: Option<&[(ObjRef, Option<Mtu>)]>,
    level: Explanations,
) -> Option<WhatIf> {
    let caps = caps?;
    Some(match solver {
        OneSolver::Fresh(topo, settings) => {
            per_value_shared(&mut Solver::new(topo, settings.clone()), caps, level)
        }
        OneSolver::Given(s) => per_value_shared(s, caps, level),
    })
}
