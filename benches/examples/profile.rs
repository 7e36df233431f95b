//! A workload to run under a profiler (`perf record`), one figure of `perf-budget` at a time:
//! `cargo run --release -p benches --example profile -- resolve-all|whatif [repeats]`.

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
    let fx = Fixture::standard();
    if what == "yaml" {
        print!("{}", fx.text);
        return;
    }
    for _ in 0..repeats {
        let t = thread_cpu();
        match what.as_str() {
            "resolve-all" => {
                let (_, values) = resolve_all(&fx.topo);
                let d = thread_cpu().saturating_sub(t);
                println!(
                    "resolve-all: {d:?}, {:.1} ns/value",
                    d.as_nanos() as f64 / values as f64
                );
            }
            "whatif" => {
                let Some(m) = site_assignment_cap(&fx.topo) else {
                    eprintln!("no uncapped single-Site assignment");
                    std::process::exit(2);
                };
                let out = what_if(&fx.input, &[m], false);
                let d = thread_cpu().saturating_sub(t);
                println!(
                    "whatif: {d:?}, {} changes",
                    out.map(|o| o.changes.len()).unwrap_or(0)
                );
            }
            "count" => {
                let mut s = mtu_solver::Solver::new(&fx.topo, mtu_solver::Settings::default());
                let plans = s.plan_all();
                let values: usize = plans.iter().map(mtu_solver::NodePlan::value_count).sum();
                let links: usize = plans.iter().map(|p| p.links.len()).sum();
                let d = thread_cpu().saturating_sub(t);
                println!(
                    "count: {d:?}, {values} values, {links} links, {} explanation nodes",
                    s.expl.len()
                );
            }
            other => {
                eprintln!("unknown workload {other}: resolve-all, whatif");
                std::process::exit(2);
            }
        }
    }
}
