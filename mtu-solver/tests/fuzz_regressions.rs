//! Replays every input the fuzz targets ever crashed on (`fuzz/regressions/<target>/`), through
//! the same checks as the targets:
//!
//! - `decode/*` (raw bytes, any name): decode (also as JSON when it parses) and build.
//! - `resolve/*.yaml` (a topology, written by `fuzz`'s `to-yaml resolve`): decode, build, plan
//!   every node, each link, route and fabric value equal to its explanation's, JSON render.
//! - `whatif/*.yaml` (a topology whose `# what-if: ...` comment lines are the mutations, written
//!   by `to-yaml whatif`): `what_if` applied to the full resolve of the base equals the full
//!   resolve of the mutated input.
//!
//! Files of other extensions under `resolve/` and `whatif/` are the raw fuzzer inputs, kept for
//! `cargo fuzz run <target> <file>`; they are not read here.

#![allow(clippy::disallowed_methods)] // tests read the regression files

use mtu_solver::incremental::State;
use mtu_solver::report::{Renderer, resolve_out};
use mtu_solver::whatif::{Input, Mutation, apply, what_if};
use mtu_solver::{Settings, Solver};
use std::path::{Path, PathBuf};
use topology_core::decode::{Decoded, decode};
use topology_core::model::Topology;
use topology_core::vocab::Kind;

fn files(target: &str, ext: Option<&str>) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/regressions")
        .join(target);
    let mut out: Vec<PathBuf> = match std::fs::read_dir(&dir) {
        Ok(rd) => rd.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(_) => Vec::new(),
    };
    out.retain(|p| p.is_file() && p.file_name().is_some_and(|n| n != ".gitkeep"));
    if let Some(ext) = ext {
        out.retain(|p| p.extension().is_some_and(|e| e == ext));
    }
    out.sort();
    out
}

#[test]
fn decode_regressions() {
    for f in files("decode", None) {
        let data = std::fs::read(&f).unwrap();
        let d = decode([("fuzz.yaml", data.as_slice())]);
        let _ = Topology::build(d.objects.iter(), d.diagnostics.iter().cloned());
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&data) {
            let mut d = Decoded::default();
            d.add_json("fuzz.json", v);
            let _ = Topology::build(d.objects.iter(), d.diagnostics.iter().cloned());
        }
    }
}

#[test]
fn resolve_regressions() {
    for f in files("resolve", Some("yaml")) {
        let yaml = std::fs::read(&f).unwrap();
        let d = decode([("fuzz.yaml", yaml.as_slice())]);
        let topo = Topology::build(d.objects.iter(), d.diagnostics.iter().cloned());
        let mut solver = Solver::new(&topo, Settings::default());
        let plans = solver.plan_all();
        for p in &plans {
            assert_eq!(
                solver.explanations().value(p.fabric.expl),
                p.fabric.mtu,
                "{}",
                f.display()
            );
            for l in &p.links {
                assert_eq!(
                    solver.explanations().value(l.mtu.expl),
                    l.mtu.mtu,
                    "{}",
                    f.display()
                );
                assert!(p.fabric.mtu <= l.mtu.mtu, "{}", f.display());
            }
            for r in &p.routes {
                assert_eq!(
                    solver.explanations().value(r.mtu.expl),
                    r.mtu.mtu,
                    "{}",
                    f.display()
                );
            }
        }
        let mut r = Renderer::new(&solver, mtu_solver::Explanations::Bound);
        let out = resolve_out(&topo, &mut r, &plans, &topo.diagnostics);
        serde_json::to_writer(std::io::sink(), &out).unwrap();
    }
}

/// Parses one `# what-if: ...` line: the library's textual form of a mutation.
fn mutation(line: &str) -> Mutation {
    line.trim()
        .parse()
        .unwrap_or_else(|e| panic!("unreadable what-if line {line:?}: {e}"))
}

#[test]
fn mutation_lines_parse() {
    let m = mutation(" set SiteGatewayPoolAssignment/sa0=1280");
    assert_eq!(
        m,
        Mutation::SetCap {
            kind: Kind::SiteGatewayPoolAssignment,
            name: "sa0".into(),
            mtu: 1280,
        }
    );
}

#[test]
fn whatif_regressions() {
    for f in files("whatif", Some("yaml")) {
        let text = std::fs::read_to_string(&f).unwrap();
        let muts: Vec<Mutation> = text
            .lines()
            .filter_map(|l| l.strip_prefix("# what-if:"))
            .map(mutation)
            .collect();
        let d = decode([("fuzz.yaml", text.as_bytes())]);
        let base = Input {
            objects: d.objects,
            diagnostics: d.diagnostics,
            settings: Default::default(),
        };
        let Ok(w) = what_if(&base, &muts, mtu_solver::Explanations::Bound) else {
            continue;
        };
        let mut after = base.clone();
        if muts.iter().any(|m| apply(&mut after, m).is_err()) {
            continue;
        }
        let mut nodes = State::full(&base).nodes;
        mtu_solver::incremental::apply_changes(&mut nodes, w.changes);
        assert!(
            nodes == State::full(&after).nodes,
            "{}: what-if ({}) differs from two full resolves",
            f.display(),
            w.strategy
        );
    }
}
