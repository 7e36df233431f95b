//! Forwarding paths on a transit chain of 100 pools with three gateways each (3^100 paths from
//! one end to the other, far more than a `u64` counts): what `explain` does for the worker at
//! one end, for the route to the far end and for every route it has. The count is a dynamic
//! program over (gateway, hop) states and only the paths shown are enumerated, so both are
//! proportional to the gateways, not to the paths.

use benches::{build, decode_text, report_allocs};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mtu_solver::{RouteKind, RoutePlan, Settings, Solver};
use std::time::Duration;
use test_utils::testkit::scale::transit_chain;
use topology_core::ids::NodeId;
use topology_core::model::Topology;
use topology_core::net::{LinkSettings, Net};

/// Paths `explain` shows per route by default.
const SHOWN: usize = 4;

/// The far-end route: counted, and the paths shown listed.
fn far_end(topo: &Topology, w: NodeId, route: &RoutePlan) -> (u64, usize) {
    let net = Net::new(topo, LinkSettings::default());
    let fp = net.forwarding_paths(w, &route.advertised);
    (fp.total(), fp.iter().take(SHOWN).map(|p| p.len()).sum())
}

/// Every learned route of the worker, as `explain` without `--destination` does it.
fn every_route(topo: &Topology, w: NodeId) -> usize {
    let mut solver = Solver::new(topo, Settings::default());
    let plan = solver.plan(w);
    let mut hops = 0usize;
    for rt in plan.routes.iter().filter(|r| r.kind != RouteKind::Direct) {
        let fp = solver.net().forwarding_paths(w, &rt.advertised);
        hops += fp.iter().take(SHOWN).map(|p| p.len()).sum::<usize>();
    }
    hops
}

fn bench(c: &mut Criterion) {
    let (pools, gateways) = (100usize, 3usize);
    let label = format!("chain-{pools}x{gateways}");
    let d = decode_text(&transit_chain(pools, gateways));
    let topo = build(&d);
    let w = topo
        .node_id("node-000-00")
        .expect("the chain's first worker");
    // The route to the last Site's node CIDR (Site `pools + 1`).
    let far = format!("10.0.{}.0/24", pools + 1);
    let plan = Solver::new(&topo, Settings::default()).plan(w);
    let route = plan
        .routes
        .iter()
        .find(|r| r.advertised.to_string() == far)
        .expect("a route to the far end");
    let fp = Net::new(&topo, LinkSettings::default()).forwarding_paths(w, &route.advertised);
    println!(
        "{label}: {} paths to the far end{}, {} (gateway, hop) states counted",
        fp.total(),
        if fp.saturated() {
            " (saturated: more than a u64 counts)"
        } else {
            ""
        },
        fp.state_count()
    );

    report_allocs(&format!("explain_paths/far-end/{label}"), || {
        far_end(&topo, w, route)
    });
    report_allocs(&format!("explain_paths/every-route/{label}"), || {
        every_route(&topo, w)
    });
    let mut g = c.benchmark_group("explain_paths");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    g.bench_function(BenchmarkId::new("far-end", &label), |b| {
        b.iter(|| far_end(&topo, std::hint::black_box(w), route))
    });
    g.bench_function(BenchmarkId::new("every-route", &label), |b| {
        b.iter(|| every_route(&topo, std::hint::black_box(w)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
