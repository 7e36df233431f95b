//! The index build of one N-member relationship stays linear: each doubling of the members at
//! most doubles (with 10 % slack) the allocations, the bytes allocated and the index entries of
//! the build, for a mesh SitePeering and a GatewayPoolPeering of 1,000, 2,000 and 4,000 members.
//! Counted, not timed: the counts are exact on any machine. A step that scans what it has already
//! built (every pool per node, every member per member) shows here as soon as it collects what it
//! scans; the timed ratio is `perf-budget`'s (`index build, 2000-member ... / 1000-member`).

use benches::alloc::counted;
use benches::{build, decode_text, index_entries};
use test_utils::testkit::scale::{mesh_peering, pool_peering};

/// Per doubling, at most this many times the smaller size's figure.
const SLACK: f64 = 2.1;

#[test]
fn peering_builds_grow_linearly_with_their_members() {
    for (kind, make) in [
        ("SitePeering", mesh_peering as fn(usize) -> String),
        ("GatewayPoolPeering", pool_peering as fn(usize) -> String),
    ] {
        let mut last: Option<(usize, u64, u64, usize)> = None;
        for n in [1000usize, 2000, 4000] {
            let decoded = decode_text(&make(n));
            // A first build warms what is built once per process (none today), then the count.
            drop(build(&decoded));
            let (topo, allocs) = counted(|| build(&decoded));
            let entries = index_entries(&topo).total();
            assert!(
                topo.diagnostics.is_empty(),
                "{kind} {n}: the fixture must be clean: {:?}",
                topo.diagnostics.first()
            );
            if let Some((m, count, bytes, e)) = last {
                let grow = |a: f64, b: f64| a / b.max(1.0);
                for (what, now, before) in [
                    ("allocations", allocs.count as f64, count as f64),
                    ("bytes", allocs.bytes as f64, bytes as f64),
                    ("index entries", entries as f64, e as f64),
                ] {
                    assert!(
                        grow(now, before) <= SLACK,
                        "{kind}: {what} grew {:.2}x from {m} to {n} members ({before} -> {now})",
                        grow(now, before)
                    );
                }
            }
            last = Some((n, allocs.count, allocs.bytes, entries));
        }
    }
}
