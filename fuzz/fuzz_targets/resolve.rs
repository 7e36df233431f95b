//! A structured topology rendered to YAML, decoded, built, and every node planned and rendered
//! to JSON. Checks no panic, invariant 8 for minimums (each link, route and fabric value equals
//! the value of its explanation), fabric ≤ every link not bounded by a probed path MTU (the
//! fabric leaves that term out, `mtu.md` §5), and that no route is a default route
//! (`0.0.0.0/0` routed CIDRs are dropped with `W-DEFAULT-ROUTE`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mtu_solver::report::{Renderer, resolve_out};
use mtu_solver::{Settings, Solver};
use topology_core::decode::decode;
use topology_core::model::Topology;
use unbounded_mtu_fuzz::FTopo;

fuzz_target!(|t: FTopo| {
    let yaml = t.yaml();
    let d = decode([("fuzz.yaml", yaml.as_bytes())]);
    let topo = Topology::build(d.objects.iter(), d.diagnostics.iter().cloned());
    let mut solver = Solver::new(&topo, Settings::default());
    let plans = solver.plan_all();
    for p in &plans {
        assert_eq!(
            solver.explanations().value(p.fabric.expl),
            p.fabric.mtu,
            "fabric explanation"
        );
        for l in &p.links {
            assert_eq!(solver.explanations().value(l.mtu.expl), l.mtu.mtu, "link explanation");
            if topo.path_mtu(p.node, l.peer).is_none() {
                assert!(p.fabric.mtu <= l.mtu.mtu, "fabric above a link");
            }
        }
        for r in &p.routes {
            assert_ne!(r.destination.prefix_len(), 0, "a default route");
            assert_eq!(
                solver.explanations().value(r.mtu.expl),
                r.mtu.mtu,
                "route explanation"
            );
        }
    }
    let mut r = Renderer::new(&solver, mtu_solver::Explanations::Bound);
    let out = resolve_out(&topo, &mut r, &plans, &topo.diagnostics);
    serde_json::to_writer(std::io::sink(), &out).expect("serialize");
});
