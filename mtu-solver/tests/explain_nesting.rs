//! Route explanations are built nested (`min(links, rest)`, the rest shared by every node of a
//! class) where the flat form would be `min(link1, reach1, pub1, link2, ...)`. Both must name the
//! same bound term and list the same terms, whatever the grouping, ties included.

use mtu_solver::explain::{ExplId, Explanations, Leaf};
use proptest::prelude::*;
use test_utils::testkit::proptest_config;
use topology_core::ids::NodeId;
use topology_core::mtu::Mtu;

/// Interns one term per value (values from a small range, so ties are common).
fn terms(x: &mut Explanations, values: &[u32]) -> Vec<ExplId> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| {
            x.leaf(
                Leaf::Cfg {
                    node: NodeId::from_idx(i),
                },
                Mtu::new(*v).unwrap(),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(proptest_config(1000, concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/explain-nesting.txt")))]

    #[test]
    fn nested_minimums_name_the_flat_bound(
        values in prop::collection::vec(1300u32..1304, 2..12),
        split in any::<prop::sample::Index>(),
        split2 in any::<prop::sample::Index>(),
        fresh in any::<bool>(),
    ) {
        let mut x = Explanations::default();
        let leaves = terms(&mut x, &values);
        let flat = x.min(&leaves).unwrap();
        // Two groups, the second split again: min(min(a), min(min(b1), min(b2))).
        let cut = 1 + split.index(leaves.len() - 1);
        let (a, b) = leaves.split_at(cut);
        let ga = x.min(a).unwrap();
        let gb = if b.len() > 1 {
            let cut2 = 1 + split2.index(b.len() - 1);
            let (b1, b2) = b.split_at(cut2);
            let (e1, e2) = (x.min(b1).unwrap(), x.min(b2).unwrap());
            x.min(&[e1, e2]).unwrap()
        } else {
            x.min(b).unwrap()
        };
        // The uninterned path of a node's own routes, and the interned one.
        let nested = if fresh { x.min_pair(ga, gb) } else { x.min(&[ga, gb]).unwrap() };
        prop_assert_eq!(x.value(nested), x.value(flat));
        prop_assert_eq!(x.get(nested).bound, x.get(flat).bound);
        prop_assert_eq!(x.leaves(nested), x.leaves(flat));
        // The bound term's value is the minimum (invariant 8).
        let bound = x.get(flat).bound;
        prop_assert_eq!(x.value(bound), Mtu::new(*values.iter().min().unwrap()).unwrap());
    }
}
