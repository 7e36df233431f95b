//! A node's explanations do not depend on what else its solver resolved: the agent plans its
//! own node alone, `resolve` plans every node with one solver, and both must name the same
//! bound term and list the same terms in the same order, ties between equal terms included.

use mtu_solver::report::{Renderer, node_out};
use mtu_solver::{Settings, Solver};
use proptest::prelude::*;
use test_utils::reference::topology_of;
use test_utils::testkit::scale::ScaleSpec;
use test_utils::testkit::{arb_spec, proptest_config};
use topology_core::ids::NodeId;
use topology_core::model::Topology;

/// One node's plan rendered with every term.
fn rendered(solver: &mut Solver<'_>, topo: &Topology, node: NodeId) -> String {
    let plan = solver.plan(node);
    let mut r = Renderer::new(solver, mtu_solver::Explanations::Full);
    serde_json::to_string(&node_out(topo, &mut r, &plan)).unwrap_or_default()
}

/// The names of the nodes whose plan differs between a fresh solver and one solver that
/// resolved every node in reverse order before it.
fn differing(topo: &Topology) -> Vec<String> {
    let mut shared = Solver::new(topo, Settings::default());
    let mut out = Vec::new();
    for i in (0..topo.nodes.len()).rev() {
        let node = NodeId::from_idx(i);
        let after_others = rendered(&mut shared, topo, node);
        let mut fresh = Solver::new(topo, Settings::default());
        if rendered(&mut fresh, topo, node) != after_others {
            out.push(topo.node(node).name.to_string());
        }
    }
    out
}

/// A small cluster of the scale generator's shape: a ring and chords of pools, capped objects
/// with many equal caps.
#[test]
fn a_scale_cluster_explains_each_node_alike_alone_or_with_all() {
    let topo = topology_of(&ScaleSpec::small().generate());
    assert_eq!(differing(&topo), Vec::<String>::new());
}

proptest! {
    #![proptest_config(proptest_config(
        200,
        concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/explain-order.txt")
    ))]

    #[test]
    fn each_node_is_explained_alike_alone_or_with_all(spec in arb_spec()) {
        let topo = topology_of(&spec.to_yaml());
        prop_assert_eq!(differing(&topo), Vec::<String>::new());
    }
}
