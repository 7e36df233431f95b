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

/// Runs a what-if: `mutations` applied in order to `base`.
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
/// reports as after.
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
/// [`what_if`].
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

/// Compares two complete inputs (`--after PATH`): the same as [`diff`].
pub fn compare(base: &Input, after: &Input, level: Explanations) -> WhatIf {
    diff(base, after, level)
}

/// Every value that differs between two inputs, computed at a cost that follows what changed:
/// per value for cap changes, the nodes around a node for underlay changes, every node when
/// links or paths may change.
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
