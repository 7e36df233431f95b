//! `resolve` writes each node as soon as it is resolved: its JSON and YAML documents stay the
//! documents a whole-cluster serializer writes, byte for byte. Two oracles: snapshots of every
//! shipped example (`tests/snapshots/streaming__*.snap`), and, on generated clusters, the
//! document built in one piece by the library (`report::resolve_out`) and serialized whole.

mod cli;

use cli::run;
use std::path::Path;

use mtu_solver::report::{self, Renderer};
use mtu_solver::{Settings, Solver};
use test_utils::testkit::scale::ScaleSpec;
use topology_core::diag::sort_diagnostics;
use topology_core::ids::NodeId;
use topology_core::model::Topology;

const EXAMPLES: [&str; 7] = [
    "01-single-site",
    "02-mesh-peering-cap",
    "03-hub-and-spoke",
    "04-transit-chain",
    "05-network-only-peering",
    "06-routed-local-published",
    "07-nat-and-unmanaged-cni",
];

/// `resolve ARGS`: its standard output (exit 0 or 1: some examples carry error diagnostics on
/// purpose).
fn resolve(args: &[&str]) -> String {
    let all: Vec<&str> = std::iter::once("resolve")
        .chain(args.iter().copied())
        .collect();
    let (code, out, err) = run(&all);
    assert!(matches!(code, 0 | 1), "{args:?}: exit {code}: {err}");
    out
}

#[test]
fn examples_in_every_document_format() {
    for ex in EXAMPLES {
        let file = format!("examples/{ex}");
        for (format, explain) in [
            ("json", "bound"),
            ("yaml", "bound"),
            ("json", "full"),
            ("yaml", "full"),
        ] {
            let out = resolve(&["-f", &file, "-o", format, "--explain", explain]);
            insta::assert_snapshot!(format!("resolve-{format}-{explain}-{ex}"), out);
        }
    }
}

#[test]
fn examples_as_wide_tables() {
    for ex in EXAMPLES {
        let out = resolve(&["-f", &format!("examples/{ex}"), "-o", "wide"]);
        insta::assert_snapshot!(format!("resolve-wide-{ex}"), out);
    }
}

/// The whole `resolve` document of `file`, built in one piece and serialized whole: the
/// offline defaults' solver, every node in index order, the topology's diagnostics and the
/// plans', sorted.
fn whole_document(file: &Path, full: bool) -> report::ResolveOut {
    let decoded = mtu_solver::load::load(&[file]).unwrap();
    let topo = Topology::build(decoded.objects.iter(), decoded.diagnostics.iter().cloned());
    let mut solver = Solver::new(&topo, Settings::default());
    let plans: Vec<_> = (0..topo.nodes.len())
        .map(|i| solver.plan(NodeId::from_idx(i)))
        .collect();
    let mut diags = topo.diagnostics.clone();
    for p in &plans {
        diags.extend(p.diagnostics.iter().cloned());
    }
    sort_diagnostics(&mut diags);
    let level = if full {
        mtu_solver::Explanations::Full
    } else {
        mtu_solver::Explanations::Bound
    };
    let mut r = Renderer::new(&solver, level);
    report::resolve_out(&topo, &mut r, &plans, &diags)
}

/// Generated clusters (the small test shape, and a larger one with a cap on most objects so that
/// diagnostics and explanations vary): the streamed JSON and YAML equal the whole document's.
#[test]
fn generated_clusters_equal_the_whole_document() {
    let dir = tempdir();
    let shapes = [
        ScaleSpec::small(),
        // More nodes than one solver plans before a fresh one takes over.
        ScaleSpec {
            sites: 72,
            pools: 18,
            capped_percent: 80,
            seed: 7,
            ..ScaleSpec::small()
        },
    ];
    for (i, spec) in shapes.iter().enumerate() {
        let file = dir.join(format!("cluster-{i}.yaml"));
        std::fs::write(&file, spec.generate()).unwrap();
        let path = file.to_str().unwrap();
        for full in [false, true] {
            let explain = if full { "full" } else { "bound" };
            let doc = whole_document(&file, full);
            let json = serde_json::to_string_pretty(&doc).unwrap() + "\n";
            let streamed = resolve(&["-f", path, "-o", "json", "--explain", explain]);
            assert!(
                streamed == json,
                "cluster {i}, --explain {explain}: JSON differs"
            );
            let yaml = serde_saphyr::to_string(&doc).unwrap();
            let streamed = resolve(&["-f", path, "-o", "yaml", "--explain", explain]);
            assert!(
                streamed == yaml,
                "cluster {i}, --explain {explain}: YAML differs"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn tempdir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("umtu-streaming-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
