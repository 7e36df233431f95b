//! 1,000-, 2,000- and 4,000-member peerings: one mesh SitePeering of N Sites (one node each) and
//! one GatewayPoolPeering of N pools (one gateway each): building the topology and resolving one
//! node. The sizes side by side show whether a build is linear.

use benches::{build, decode_text, index_entries, report_allocs};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mtu_solver::{Settings, Solver};
use std::time::Duration;
use test_utils::testkit::scale::{mesh_peering, pool_peering};
use topology_core::ids::NodeId;

fn bench(c: &mut Criterion) {
    for (label, text) in [
        ("site-peering-1000", mesh_peering(1000)),
        ("site-peering-2000", mesh_peering(2000)),
        ("site-peering-4000", mesh_peering(4000)),
        ("pool-peering-1000", pool_peering(1000)),
        ("pool-peering-2000", pool_peering(2000)),
        ("pool-peering-4000", pool_peering(4000)),
    ] {
        let d = decode_text(&text);
        let topo = build(&d);
        let e = index_entries(&topo);
        println!(
            "index {label}: {} memberships + {} hub entries",
            e.memberships, e.hubs
        );
        report_allocs(&format!("peering_build/{label}"), || build(&d));
        let mut g = c.benchmark_group("peering_build");
        g.sample_size(10).measurement_time(Duration::from_secs(5));
        g.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| build(std::hint::black_box(&d)))
        });
        g.finish();

        let node = NodeId::from_idx(topo.nodes.len() / 2);
        report_allocs(&format!("peering_resolve_node/{label}"), || {
            Solver::new(&topo, Settings::default()).plan(node)
        });
        let mut g = c.benchmark_group("peering_resolve_node");
        g.sample_size(20).measurement_time(Duration::from_secs(5));
        g.bench_function(BenchmarkId::from_parameter(label), |b| {
            b.iter(|| Solver::new(&topo, Settings::default()).plan(std::hint::black_box(node)))
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
