//! A structured topology and up to four mutations: `what_if` must not panic, its changes
//! applied to the full resolve of the base must equal the full resolve of the mutated input, and
//! `what_if_on` a solver that resolved every node must give the same changes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mtu_solver::Solver;
use mtu_solver::incremental::State;
use mtu_solver::whatif::{apply, what_if, what_if_on};
use unbounded_mtu_fuzz::WhatIfCase;

fuzz_target!(|c: WhatIfCase| {
    let base = c.topo.input();
    let muts = c.mutations();
    let Ok(w) = what_if(&base, &muts, mtu_solver::Explanations::Bound) else {
        return;
    };
    // The same question on a solver that already resolved every node (warm memos).
    let resolved = mtu_solver::whatif::Base::new(base.clone());
    let mut solver = Solver::new(resolved.topology(), base.settings.clone());
    let _ = solver.plan_all();
    let key = |w: &mtu_solver::whatif::WhatIf| -> Vec<_> {
        w.changes
            .iter()
            .map(|c| (c.node.clone(), c.item.clone(), c.before, c.after))
            .collect()
    };
    if let Ok(warm) = what_if_on(&mut solver, &resolved, &muts, mtu_solver::Explanations::Bound) {
        assert!(
            key(&warm) == key(&w),
            "what-if on a resolved solver differs for {muts:?}"
        );
    }
    let mut after = base.clone();
    for m in &muts {
        if apply(&mut after, m).is_err() {
            return;
        }
    }
    let mut nodes = State::full(&base).nodes;
    mtu_solver::incremental::apply_changes(&mut nodes, w.changes);
    let full = State::full(&after).nodes;
    assert!(
        nodes == full,
        "what-if ({}) differs from two full resolves for {muts:?}",
        w.strategy
    );
});
