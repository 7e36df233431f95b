//! A workload to run under a profiler (`perf record`), one figure of `perf-budget` at a time:
//! `cargo run --release -p benches --example profile -- resolve-all|every|one|typical|typical-free|sites|spread|build|whatif|explain|explain-every [repeats]`.
//! `PROFILE_SCALE=hyperscale` profiles the 65,000-node cluster; `PROFILE_NOTES=N` adds N
//! objects of a skipped kind to the input (N notes).

use benches::{Fixture, resolve_all, site_assignment_cap, thread_cpu};
use mtu_solver::whatif::what_if;

fn main() {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_else(|| "resolve-all".into());
    let repeats: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(3);
    if what == "sizes" {
        println!(
            "RoutePlan {} LinkPlan {} NextHop {} Node {}",
            std::mem::size_of::<mtu_solver::RoutePlan>(),
            std::mem::size_of::<mtu_solver::LinkPlan>(),
            std::mem::size_of::<mtu_solver::NextHop>(),
            std::mem::size_of::<mtu_solver::explain::Node>(),
        );
        return;
    }
    // `PROFILE_SCALE=hyperscale` profiles the 65,000-node cluster instead of the standard one.
    let fx = match std::env::var("PROFILE_SCALE").as_deref() {
        Ok("hyperscale") => Fixture::hyperscale(),
        _ => Fixture::standard(),
    };
    // `PROFILE_NOTES=N` adds N objects of a kind this tool skips (N notes in every document).
    let fx = match std::env::var("PROFILE_NOTES")
        .ok()
        .and_then(|n| n.parse().ok())
    {
        Some(notes) => Fixture::from_text(fx.name.clone(), benches::with_notes(&fx.text, notes)),
        None => fx,
    };
    if what == "yaml" {
        print!("{}", fx.text);
        return;
    }
    for _ in 0..repeats {
        let t = thread_cpu();
        match what.as_str() {
            "resolve-all" => {
                let (_, values) = resolve_all(fx.topo());
                let d = thread_cpu().saturating_sub(t);
                println!(
                    "resolve-all: {d:?}, {:.1} ns/value",
                    d.as_nanos() as f64 / values as f64
                );
            }
            "every" => {
                // Every node with one solver, each plan dropped once counted: a full resolve of
                // a cluster too large to hold every plan at once.
                let mut s = mtu_solver::Solver::new(fx.topo(), mtu_solver::Settings::default());
                let mut values = 0usize;
                for i in 0..fx.topo().nodes.len() {
                    let n = topology_core::ids::NodeId::from_idx(i);
                    values += s.plan(n).value_count();
                }
                let d = thread_cpu().saturating_sub(t);
                println!(
                    "every: {d:?}, {values} values, {:.1} ns/value",
                    d.as_nanos() as f64 / values.max(1) as f64
                );
            }
            "whatif" => {
                let Some(m) = site_assignment_cap(fx.topo()) else {
                    eprintln!("no uncapped single-Site assignment");
                    std::process::exit(2);
                };
                let out = what_if(fx.input(), &[m], mtu_solver::Explanations::Bound);
                let d = thread_cpu().saturating_sub(t);
                println!(
                    "whatif: {d:?}, {} changes",
                    out.map(|o| o.changes.len()).unwrap_or(0)
                );
            }
            "count" => {
                let mut s = mtu_solver::Solver::new(fx.topo(), mtu_solver::Settings::default());
                let plans = s.plan_all();
                let values: usize = plans.iter().map(mtu_solver::NodePlan::value_count).sum();
                let links: usize = plans.iter().map(|p| p.links.len()).sum();
                let d = thread_cpu().saturating_sub(t);
                println!(
                    "count: {d:?}, {values} values, {links} links, {} explanation nodes",
                    s.explanations().len()
                );
            }
            "whatif-warm" => {
                let Some(m) = site_assignment_cap(fx.topo()) else {
                    std::process::exit(2);
                };
                let mut base = mtu_solver::Solver::new(fx.topo(), mtu_solver::Settings::default());
                drop(base.plan_all());
                let t = thread_cpu();
                let mut n = 0;
                for _ in 0..repeats * 20 {
                    let out = mtu_solver::whatif::what_if_on(
                        &mut base,
                        &fx.base,
                        std::slice::from_ref(&m),
                        mtu_solver::Explanations::Bound,
                    );
                    n = out.map(|o| o.changes.len()).unwrap_or(0);
                }
                let d = thread_cpu().saturating_sub(t);
                println!(
                    "whatif-warm: {:?} per query, {n} changes",
                    d / u32::try_from(repeats * 20).unwrap_or(1)
                );
            }
            "one" => {
                let (mut n, mut total) = (0, std::time::Duration::ZERO);
                for i in 0..51 {
                    let node = fx.spread_node(i, 51);
                    let topo = fx.fresh_topology();
                    let t = thread_cpu();
                    n += benches::resolve_one(&topo, node).value_count();
                    total += thread_cpu().saturating_sub(t);
                }
                println!("one: {:?} per node, {n} values", total / 51);
            }
            "sites" => {
                // perf-budget's "resolve all nodes": every node of 200 spread Sites, one solver.
                let nodes = fx.every_node_of_spread_sites(200);
                let mut s = mtu_solver::Solver::new(fx.topo(), mtu_solver::Settings::default());
                let values: usize = nodes.iter().map(|n| s.plan(*n).value_count()).sum();
                let d = thread_cpu().saturating_sub(t);
                println!(
                    "sites: {d:?}, {} nodes, {values} values, {:.1} ns/value",
                    nodes.len(),
                    d.as_nanos() as f64 / values.max(1) as f64
                );
            }
            "typical" => {
                // perf-budget's "resolve one node" on one typical worker: fresh solvers, each on
                // a freshly built topology (the build not measured).
                let node = fx.typical_worker();
                let (mut n, mut total) = (0, std::time::Duration::ZERO);
                for _ in 0..51 {
                    let topo = fx.fresh_topology();
                    let t = thread_cpu();
                    n += benches::resolve_one(&topo, node).value_count();
                    total += thread_cpu().saturating_sub(t);
                }
                println!("typical: {:?} per resolve, {} values", total / 51, n / 51);
            }
            "typical-free" => {
                // The typical worker's resolve with the solver's freeing timed apart: medians of
                // 51 fresh solvers on fresh builds.
                let node = fx.typical_worker();
                let (mut plan, mut free) = (Vec::new(), Vec::new());
                for _ in 0..51 {
                    let topo = fx.fresh_topology();
                    let t = thread_cpu();
                    let mut solver =
                        mtu_solver::Solver::new(&topo, mtu_solver::Settings::default());
                    let p = solver.plan(node);
                    let planned = thread_cpu();
                    drop(solver);
                    plan.push(planned.saturating_sub(t));
                    free.push(thread_cpu().saturating_sub(planned));
                    std::hint::black_box(p);
                }
                plan.sort();
                free.sort();
                println!(
                    "typical-free: plan {:?}, free the solver {:?} (medians)",
                    plan.get(25).copied().unwrap_or_default(),
                    free.get(25).copied().unwrap_or_default()
                );
            }
            "build" => {
                let d = benches::decode_text(&fx.text);
                let t = thread_cpu();
                let topo = benches::build(&d);
                let dt = thread_cpu().saturating_sub(t);
                println!(
                    "build: {dt:?}, {:.2} µs/node",
                    dt.as_secs_f64() * 1e6 / topo.nodes.len().max(1) as f64
                );
            }
            "spread" => {
                // perf-budget's "resolve 5,000 spread nodes": one solver, nodes spread evenly.
                let nodes = fx.topo().nodes.len().min(5000);
                let mut solver =
                    mtu_solver::Solver::new(fx.topo(), mtu_solver::Settings::default());
                let mut n = 0;
                for i in 0..nodes {
                    n += solver.plan(fx.spread_node(i, nodes)).value_count();
                }
                let d = thread_cpu().saturating_sub(t);
                println!(
                    "spread: {d:?}, {:.1} ns/value",
                    d.as_nanos() as f64 / n.max(1) as f64
                );
            }
            "explain-every" => {
                // Every route of every node through one resolver: how its memos grow.
                let resolver = mtu_solver::Resolver::new(
                    benches::decode_text(&fx.text),
                    mtu_solver::Settings::default(),
                );
                let mut routes = 0usize;
                for (i, node) in fx.topo().nodes.iter().enumerate() {
                    let Ok(plan) = resolver.plan(&node.name) else {
                        continue;
                    };
                    for r in &plan.routes {
                        routes += 1;
                        let d = mtu_solver::Destination::Prefix(r.destination);
                        std::hint::black_box(resolver.explain(&node.name, d).ok());
                    }
                    if i % 1000 == 999 {
                        println!(
                            "{} nodes, {routes} routes: {:?}, peak {}",
                            i + 1,
                            thread_cpu().saturating_sub(t),
                            peak_rss()
                        );
                    }
                }
            }
            "explain" => {
                // perf-budget's "explain every route of 200 nodes through one Resolver".
                let resolver = mtu_solver::Resolver::new(
                    benches::decode_text(&fx.text),
                    mtu_solver::Settings::default(),
                );
                let t = thread_cpu();
                let mut routes = 0usize;
                let (mut values, mut hops, mut diags) = (0usize, 0usize, 0usize);
                for i in 0..200 {
                    let n = fx.spread_node(i, 200);
                    let name = fx.topo().node(n).name.to_string();
                    let Ok(plan) = resolver.plan(&name) else {
                        continue;
                    };
                    for r in &plan.routes {
                        routes += 1;
                        let d = mtu_solver::Destination::Prefix(r.destination);
                        if let Ok(e) = resolver.explain(&name, d) {
                            values += e.values.len();
                            hops += e
                                .values
                                .iter()
                                .map(|v| v.hops.as_ref().map_or(0, |h| h.len()))
                                .sum::<usize>();
                            diags += e.diagnostics.len();
                        }
                    }
                }
                let d = thread_cpu().saturating_sub(t);
                let planned = mtu_solver::Resolver::new(
                    benches::decode_text(&fx.text),
                    mtu_solver::Settings::default(),
                );
                let tp = thread_cpu();
                for i in 0..200 {
                    let n = fx.spread_node(i, 200);
                    std::hint::black_box(planned.plan(&fx.topo().node(n).name).ok());
                }
                let dp = thread_cpu().saturating_sub(tp);
                println!(
                    "explain / plans: {:.2} × ({dp:?} for the plans)",
                    d.as_secs_f64() / dp.as_secs_f64()
                );
                println!(
                    "explain: {d:?}, {routes} routes, {values} values, {hops} hops, {diags} diagnostics, {:.2} µs/route",
                    d.as_secs_f64() * 1e6 / routes.max(1) as f64
                );
            }
            "near-plans" => {
                let mut base = mtu_solver::Solver::new(fx.topo(), mtu_solver::Settings::default());
                drop(base.plan_all());
                let site = fx
                    .topo()
                    .site_id("site-001")
                    .unwrap_or(topology_core::ids::SiteId(0));
                let mut nodes: Vec<topology_core::ids::NodeId> =
                    fx.topo().workers_of(site).to_vec();
                for a in fx.topo().assignments_of(site) {
                    for p in &fx.topo().assignment(*a).pools {
                        nodes.extend(fx.topo().pool(*p).gateways.iter().copied());
                    }
                }
                if repeats > 1 {
                    let gws: Vec<topology_core::ids::NodeId> = nodes
                        .iter()
                        .copied()
                        .filter(|n| fx.topo().node(*n).is_gateway())
                        .collect();
                    let t = thread_cpu();
                    for _ in 0..repeats {
                        for n in &gws {
                            drop(base.plan(*n));
                        }
                    }
                    let d = thread_cpu().saturating_sub(t);
                    println!(
                        "gateway re-plan: {:?}",
                        d / u32::try_from(repeats * gws.len()).unwrap_or(1)
                    );
                    return;
                }
                for n in nodes {
                    let t = thread_cpu();
                    let p = base.plan(n);
                    let d = thread_cpu().saturating_sub(t);
                    let t = thread_cpu();
                    let it = mtu_solver::snapshot::items(fx.topo(), &p);
                    let d2 = thread_cpu().saturating_sub(t);
                    println!(
                        "{}: plan {d:?} items {d2:?}: {} links {} routes {} published",
                        fx.topo().node(n).name,
                        p.links.len(),
                        p.routes.len(),
                        p.published.as_ref().map_or(0, |x| x.len())
                    );
                    drop(it);
                }
            }
            other => {
                eprintln!("unknown workload {other}: resolve-all, whatif");
                std::process::exit(2);
            }
        }
    }
}

/// The process's peak resident memory, as `/proc/self/status` words it.
fn peak_rss() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM"))
                .map(|l| l.trim_start_matches("VmHWM:").trim().to_string())
        })
        .unwrap_or_default()
}
