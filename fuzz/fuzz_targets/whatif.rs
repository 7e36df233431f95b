//! A structured topology and up to four mutations: `what_if` must not panic, and its changes
//! applied to the full resolve of the base must equal the full resolve of the mutated input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mtu_solver::incremental::State;
use mtu_solver::whatif::{apply, what_if};
use unbounded_mtu_fuzz::WhatIfCase;

fuzz_target!(|c: WhatIfCase| {
    let base = c.topo.input();
    let muts = c.mutations();
    let Ok(w) = what_if(&base, &muts, false) else {
        return;
    };
    let mut after = base.clone();
    for m in &muts {
        if apply(&mut after, m).is_err() {
            return;
        }
    }
    let mut nodes = State::full(&base).nodes;
    for ch in w.changes {
        let entry = nodes.entry(ch.node.clone()).or_default();
        match ch.after {
            Some(v) => {
                entry.insert(ch.item, v);
            }
            None => {
                entry.remove(&ch.item);
            }
        }
        if entry.is_empty() {
            nodes.remove(&ch.node);
        }
    }
    let full = State::full(&after).nodes;
    assert!(
        nodes == full,
        "what-if ({}) differs from two full resolves for {muts:?}",
        w.strategy
    );
});
