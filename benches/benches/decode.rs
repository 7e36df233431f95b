//! Decoding the standard cluster's YAML and building its topology; `saphyr-parser`'s bare event
//! scan of the same YAML, the parse the decoder stands on (issue 19: decode ≤ 2 × the scan).

use benches::{build, decode_text, report_allocs};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::time::Duration;
use test_utils::testkit::scale::ScaleSpec;

fn bench(c: &mut Criterion) {
    let spec = ScaleSpec::standard();
    let id = format!("standard-{}", spec.node_count());
    let text = spec.generate();
    let decoded = decode_text(&text);

    report_allocs(&format!("decode/{id}"), || decode_text(&text));
    let mut g = c.benchmark_group("decode");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    g.bench_function(BenchmarkId::from_parameter(&id), |b| {
        b.iter(|| decode_text(std::hint::black_box(&text)))
    });
    g.finish();

    report_allocs(&format!("saphyr_scan/{id}"), || scan_events(&text));
    let mut g = c.benchmark_group("saphyr_scan");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    g.bench_function(BenchmarkId::from_parameter(&id), |b| {
        b.iter(|| scan_events(std::hint::black_box(&text)))
    });
    g.finish();

    report_allocs(&format!("build/{id}"), || build(&decoded));
    let mut g = c.benchmark_group("build");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    g.bench_function(BenchmarkId::from_parameter(&id), |b| {
        b.iter(|| build(std::hint::black_box(&decoded)))
    });
    g.finish();
}

/// Every event of every document of `text`, doing nothing with them; the number of events.
fn scan_events(text: &str) -> usize {
    let mut n = 0;
    for ev in saphyr_parser::Parser::new_from_str(text) {
        if ev.is_err() {
            break;
        }
        std::hint::black_box(&ev);
        n += 1;
    }
    n
}

criterion_group!(benches, bench);
criterion_main!(benches);
