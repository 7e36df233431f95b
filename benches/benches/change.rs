//! One incremental event and one what-if on the standard cluster: an assignment of one Site
//! whose cap goes from none to 1280 (and back, for the incremental resolver). The what-if runs
//! from scratch (`what_if`) and on the resolved base (`what_if_on`).

use benches::{Fixture, report_allocs, site_assignment_cap};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mtu_solver::incremental::{Event, Incremental};
use mtu_solver::whatif::{Mutation, what_if, what_if_on};
use mtu_solver::{Settings, Solver};
use std::time::Duration;
use topology_core::decode::{RawCap, RawObject};

fn bench(c: &mut Criterion) {
    let std = Fixture::standard();
    let Some(m) = site_assignment_cap(std.topo()) else {
        println!("SKIP: no uncapped single-Site assignment");
        return;
    };
    let muts = [m.clone()];
    report_allocs(&format!("what_if/{}", std.name), || {
        what_if(std.input(), &muts, mtu_solver::Explanations::Bound)
    });
    let mut g = c.benchmark_group("what_if");
    g.sample_size(10).measurement_time(Duration::from_secs(10));
    g.bench_function(BenchmarkId::from_parameter(&std.name), |b| {
        b.iter(|| {
            what_if(
                std.input(),
                std::hint::black_box(&muts),
                mtu_solver::Explanations::Bound,
            )
        })
    });
    g.finish();

    // The same question on the resolved base (topology built, every node resolved once).
    let mut base = Solver::new(std.topo(), Settings::default());
    drop(base.plan_all());
    report_allocs(&format!("what_if_on/{}", std.name), || {
        what_if_on(&mut base, &std.base, &muts, mtu_solver::Explanations::Bound)
    });
    let mut g = c.benchmark_group("what_if_on");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    g.bench_function(BenchmarkId::from_parameter(&std.name), |b| {
        b.iter(|| {
            what_if_on(
                &mut base,
                &std.base,
                std::hint::black_box(&muts),
                mtu_solver::Explanations::Bound,
            )
        })
    });
    g.finish();
    drop(base);

    // The incremental resolver, loaded with every object, then one event at a time.
    let Mutation::SetCap { name, .. } = &m else {
        return;
    };
    let Some(before) = std
        .input()
        .objects
        .iter()
        .find(|o| matches!(o, RawObject::Assignment(_)) && o.name() == name)
        .cloned()
    else {
        return;
    };
    let mut after = before.clone();
    if let RawObject::Assignment(r) = &mut after {
        r.cap = Some(RawCap {
            mtu: 1280,
            invalid: None,
            loc: None,
        });
    }
    let mut inc = Incremental::new(Settings::default());
    inc.apply(std.input().objects.iter().cloned().map(Event::Apply));
    report_allocs(&format!("incremental_event/{}", std.name), || {
        inc.apply([Event::Apply(after.clone())])
    });
    let mut flip = false;
    let mut g = c.benchmark_group("incremental_event");
    g.sample_size(10).measurement_time(Duration::from_secs(15));
    g.bench_function(BenchmarkId::from_parameter(&std.name), |b| {
        b.iter(|| {
            flip = !flip;
            let ev = if flip { before.clone() } else { after.clone() };
            inc.apply([Event::Apply(ev)])
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
