//! A failure in the middle of a phase whose writes are in flight together (the in-memory
//! kernel attempts every write of the phase, the most a pipelining kernel does): the error
//! names the failed write with its errno, the phase's other writes land, no later phase starts,
//! the inequalities hold, and the next reconcile converges.

mod common;

use common::{fabric_node as node, node_state as state};
use dataplane_linux::{Dataplane, DesiredState, Error, FakeKernel, Op, Phase, Plan, Settings};

fn base() -> DesiredState {
    state(1450, 1420, [1450, 1400, 1420, 1450], 1400, false)
}

/// Every route and the fabric down, the devices down.
fn lowered() -> DesiredState {
    state(1350, 1380, [1350, 1300, 1380, 1340], 1300, false)
}

fn converged(desired: &DesiredState) -> Dataplane<FakeKernel> {
    let mut dp = Dataplane::new(node(), Settings::default());
    dp.reconcile(desired).expect("initial reconcile");
    dp
}

fn ops_of(plan: &Plan, phase: Phase) -> Vec<Op> {
    plan.steps
        .iter()
        .filter(|s| s.phase == phase)
        .map(|s| s.op.clone())
        .collect()
}

#[test]
fn a_failure_mid_phase_names_its_write_and_no_later_phase_starts() {
    let mut dp = converged(&base());
    let plan = dp.plan(&lowered()).expect("plan");
    let routes_down = ops_of(&plan, Phase::RoutesDown);
    assert!(routes_down.len() >= 3, "{routes_down:?}");
    let first = plan
        .steps
        .iter()
        .position(|s| s.phase == Phase::RoutesDown)
        .expect("a routes-down step");
    let failing = routes_down[1].clone();
    let violations = dp.kernel().violations().len();
    let attempted_before = dp.kernel().attempts();
    dp.kernel_mut().clear_log();
    dp.kernel_mut()
        .fail_attempt(attempted_before + first + 1, 16);

    let err = dp
        .reconcile(&lowered())
        .expect_err("the injected failure surfaces");
    match &err {
        Error::Kernel { op, errno, .. } => {
            assert_eq!(op, &format!("{failing} (injected)"));
            assert_eq!(*errno, 16);
        }
        other => panic!("not a kernel error: {other:?}"),
    }

    let log: Vec<Op> = dp.kernel().log().iter().map(|e| e.op.clone()).collect();
    let before: Vec<Op> = plan.steps[..first].iter().map(|s| s.op.clone()).collect();
    let mut expected = before;
    expected.extend(routes_down.iter().cloned());
    assert_eq!(
        log, expected,
        "earlier phases, then every write of the failed phase"
    );
    let failed: Vec<&Op> = dp
        .kernel()
        .log()
        .iter()
        .filter(|e| e.errno.is_some())
        .map(|e| &e.op)
        .collect();
    assert_eq!(failed, [&failing]);
    for later in [
        Phase::DevicesUp,
        Phase::DevicesDown,
        Phase::RoutesUp,
        Phase::PodUp,
        Phase::Remove,
    ] {
        for op in ops_of(&plan, later) {
            assert!(!log.contains(&op), "{later:?} started: {op}");
        }
    }
    assert_eq!(
        &dp.kernel().violations()[violations..],
        &[] as &[String],
        "the writes after the failed one keep the inequalities"
    );

    dp.kernel_mut().clear_failures();
    let rep = dp
        .reconcile(&lowered())
        .expect("the next reconcile resumes");
    assert!(
        rep.writes.contains(&failing),
        "the failed write is planned again: {:?}",
        rep.writes
    );
    let again = dp.reconcile(&lowered()).expect("converged");
    assert!(again.writes.is_empty(), "{:?}", again.writes);
    assert_eq!(&dp.kernel().violations()[violations..], &[] as &[String]);
}
