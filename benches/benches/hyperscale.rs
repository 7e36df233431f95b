//! The hyperscale cluster (`ScaleSpec::hyperscale()`: 65,000 nodes, 2,600 Sites, 650 pools, the
//! standard cluster 13 times over): building the topology and resolving one typical worker
//! with a fresh solver on a fresh build (not measured). Sampled (10 samples, short
//! measurement), so `cargo bench -p benches` stays short; `perf-budget --only hyperscale`
//! compares each stage with the standard cluster.

use benches::{Fixture, build, decode_text, report_allocs, resolve_one};
use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use std::time::Duration;

fn bench(c: &mut Criterion) {
    let fx = Fixture::hyperscale();
    let d = decode_text(&fx.text);
    let label = fx.name.clone();

    report_allocs(&format!("hyperscale_build/{label}"), || build(&d));
    let mut g = c.benchmark_group("hyperscale_build");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    g.bench_function(BenchmarkId::from_parameter(&label), |b| {
        b.iter(|| build(std::hint::black_box(&d)))
    });
    g.finish();

    let node = fx.typical_worker();
    let topo = fx.fresh_topology();
    report_allocs(&format!("hyperscale_resolve_node/{label}"), || {
        resolve_one(&topo, node)
    });
    drop(topo);
    let mut g = c.benchmark_group("hyperscale_resolve_node");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    g.bench_function(BenchmarkId::from_parameter(&label), |b| {
        b.iter_batched(
            || fx.fresh_topology(),
            |topo| resolve_one(&topo, std::hint::black_box(node)),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
