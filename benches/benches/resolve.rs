//! Resolving one node (a fresh solver on a fresh build of the topology, the build not
//! measured) and every node of the standard cluster (and every node of the double cluster).

use benches::{Fixture, report_allocs, resolve_all, resolve_one};
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let std = Fixture::standard();
    let node = std.typical_worker();
    let topo = std.fresh_topology();
    report_allocs(&format!("resolve_node/{}", std.name), || {
        resolve_one(&topo, node)
    });
    drop(topo);
    let mut g = c.benchmark_group("resolve_node");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    g.bench_function(BenchmarkId::from_parameter(&std.name), |b| {
        b.iter_batched(
            || std.fresh_topology(),
            |topo| resolve_one(&topo, std::hint::black_box(node)),
            BatchSize::LargeInput,
        )
    });
    g.finish();

    let all = std::env::var("BENCH_DOUBLE").is_ok_and(|v| v == "1");
    let mut fixtures = vec![std];
    if all {
        fixtures.push(Fixture::double());
    }
    let mut g = c.benchmark_group("resolve_all");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    for f in &fixtures {
        report_allocs(&format!("resolve_all/{}", f.name), || resolve_all(f.topo()));
        g.bench_function(BenchmarkId::from_parameter(&f.name), |b| {
            b.iter(|| resolve_all(std::hint::black_box(f.topo())))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
