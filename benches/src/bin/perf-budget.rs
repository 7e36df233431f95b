//! The performance budgets of the project, measured in one run on the seeded clusters:
//! `cargo run --release -p benches --bin perf-budget [-- --strict] [--no-dataplane]`.
//!
//! Prints a table (figure, measured median, budget, pass). With `--strict` it exits 1 when a
//! budget is missed. Every ratio is measured side by side in one run (samples interleaved), and
//! every figure is a median. In-process figures are judged on the CPU time of the measuring
//! thread (`CLOCK_THREAD_CPUTIME_ID`; everything measured is single-threaded), so a busy
//! shared machine does not fail them; wall-clock medians are printed next to them. The dataplane
//! comparison involves another process (`ip`) and the kernel, so it is judged on wall-clock time.
//! Absolute times (one node, resolve all per value) are shown against their targets but not
//! judged: on these shared machines they move by 30–70 % between runs.

use benches::alloc::{Allocs, counted};
use benches::{
    Fixture, Sample, build, decode_text, index_entries, median, medians, resolve_one, serialize,
    site_assignment_cap, timed, with_notes,
};
use mtu_solver::incremental::{Event, Incremental};
use mtu_solver::whatif::{what_if, what_if_on};
use mtu_solver::{Destination, NodePlan, Resolver, RouteKind, Settings, Solver};
use std::time::{Duration, Instant};
use test_utils::testkit::scale::{ScaleSpec, mesh_peering, pool_peering};
use topology_core::decode::{Decoded, RawObject};
use topology_core::ids::NodeId;
use topology_core::model::Topology;

/// One line of the table.
struct Row {
    figure: String,
    measured: String,
    budget: String,
    /// `None`: information only (or skipped).
    pass: Option<bool>,
    note: String,
}

struct Table {
    rows: Vec<Row>,
}

impl Table {
    fn budget(&mut self, figure: &str, measured: String, budget: &str, pass: bool, note: String) {
        self.rows.push(Row {
            figure: figure.into(),
            measured,
            budget: budget.into(),
            pass: Some(pass),
            note,
        });
        self.flush_last();
    }
    fn info(&mut self, figure: &str, measured: String, note: String) {
        self.rows.push(Row {
            figure: figure.into(),
            measured,
            budget: "-".into(),
            pass: None,
            note,
        });
        self.flush_last();
    }
    /// An absolute time shown against its target but not judged: on these shared machines
    /// absolute times move by 30–70 % between runs (issue 19), so only ratios measured in one
    /// run are judged.
    fn target(&mut self, figure: &str, measured: String, target: &str, met: bool, note: String) {
        self.rows.push(Row {
            figure: figure.into(),
            measured,
            budget: format!("({target})"),
            pass: None,
            note: format!(
                "{note}; {} the target (information: absolute times are not judged)",
                if met { "within" } else { "over" }
            ),
        });
        self.flush_last();
    }
    fn skip(&mut self, figure: &str, budget: &str, reason: String) {
        self.rows.push(Row {
            figure: figure.into(),
            measured: "skipped".into(),
            budget: budget.into(),
            pass: None,
            note: reason,
        });
        self.flush_last();
    }
    fn flush_last(&self) {
        if let Some(r) = self.rows.last() {
            eprintln!("  measured: {} = {} ({})", r.figure, r.measured, r.note);
        }
    }
    fn print(&self) {
        let w0 = self
            .rows
            .iter()
            .map(|r| r.figure.len())
            .max()
            .unwrap_or(6)
            .max(6);
        let w1 = self
            .rows
            .iter()
            .map(|r| r.measured.len())
            .max()
            .unwrap_or(8)
            .max(8);
        let w2 = self
            .rows
            .iter()
            .map(|r| r.budget.len())
            .max()
            .unwrap_or(6)
            .max(6);
        println!(
            "| {:w0$} | {:>w1$} | {:w2$} | pass | notes",
            "figure", "measured (median)", "budget"
        );
        println!(
            "|{}|{}|{}|------|------",
            "-".repeat(w0 + 2),
            "-".repeat(w1 + 2),
            "-".repeat(w2 + 2)
        );
        for r in &self.rows {
            let pass = match r.pass {
                Some(true) => "yes ",
                Some(false) => "NO  ",
                None if r.measured == "skipped" => "skip",
                None => "info",
            };
            println!(
                "| {:w0$} | {:>w1$} | {:w2$} | {pass} | {}",
                r.figure, r.measured, r.budget, r.note
            );
        }
    }
    fn failed(&self) -> Vec<&str> {
        self.rows
            .iter()
            .filter(|r| r.pass == Some(false))
            .map(|r| r.figure.as_str())
            .collect()
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}

/// CPU time first (the figure budgets are judged on), wall-clock time second.
fn both(s: Sample) -> String {
    format!("{} (wall {})", ms(s.cpu), ms(s.wall))
}

fn per(d: Duration, n: usize) -> f64 {
    d.as_secs_f64() * 1e9 / n.max(1) as f64
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(0);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|k| k.parse::<u64>().ok())
        })
        .map(|k| format!("{:.1} GiB", k as f64 / 1048576.0))
        .unwrap_or_else(|| "? GiB".into());
    format!("{cpus} CPUs, {model}, {mem} RAM")
}

struct Opts {
    strict: bool,
    dataplane: bool,
    samples: usize,
    only: Option<String>,
}

impl Opts {
    fn wants(&self, section: &str) -> bool {
        self.only
            .as_deref()
            .is_none_or(|o| o.split(',').any(|x| x == section))
    }
}

fn opts() -> Opts {
    let mut o = Opts {
        strict: false,
        dataplane: true,
        samples: 3,
        only: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--only" => o.only = args.next(),
            "--strict" => o.strict = true,
            "--no-dataplane" => o.dataplane = false,
            "--quick" => o.samples = 2,
            "-h" | "--help" => {
                println!(
                    "perf-budget [--strict] [--no-dataplane] [--quick] [--only SECTIONS]\n  \
                     --strict        exit 1 when a budget is missed\n  \
                     --no-dataplane  skip the 10,000-route dataplane comparison\n  \
                     --quick         2 samples per figure instead of 3\n  \
                     --only LIST     comma-separated sections: decode, one, all, views, whatif,\n                  \
                     resolver, incremental, turn, api-load, peerings, graph, hyperscale,\n                  \
                     memory,\n                  \
                     dataplane (for profiling)"
                );
                std::process::exit(0);
            }
            other => {
                eprintln!("perf-budget: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    o
}

fn main() {
    let o = opts();
    let started = Instant::now();
    let mut t = Table { rows: Vec::new() };
    println!("perf-budget: {}", machine());
    eprintln!("generating the standard (5,000 nodes) and double (10,000 nodes) clusters ...");
    let std = Fixture::standard();
    if o.wants("decode") {
        decode_and_build(&mut t, &std, o.samples);
    }
    if o.wants("one") {
        one_node(&mut t, &std);
    }
    if o.wants("api-load") {
        api_load(&mut t, &std);
    }
    // Before the sections that allocate and free gigabytes (resolving every node of the double
    // cluster, its JSON): the heap they leave behind, which no user's process has, made the
    // hyperscale one-node resolve measure twice as long.
    if o.wants("hyperscale") || o.wants("memory") || o.wants("turn") {
        eprintln!("generating the hyperscale cluster (65,000 nodes) ...");
        let hyper = Fixture::hyperscale();
        if o.wants("turn") {
            agent_turn(&mut t, &std, o.samples);
            agent_turn(&mut t, &hyper, o.samples);
        }
        if o.wants("hyperscale") {
            hyperscale(&mut t, &std, &hyper, o.samples);
        }
        if o.wants("memory") {
            memory(&mut t, &std, &hyper);
        }
    }
    if o.wants("all") {
        let dbl = Fixture::double();
        all_nodes(&mut t, &std, &dbl, o.samples);
    }
    if o.wants("views") {
        eprintln!("whole-cluster views: the release binary on 5,000, 10,000 and 65,000 nodes ...");
        views(&mut t, &std, o.samples);
    }
    if o.wants("whatif") {
        what_if_cap(&mut t, &std, o.samples);
    }
    if o.wants("resolver") {
        embedding(&mut t, &std, o.samples);
    }
    if o.wants("incremental") {
        incremental_event(&mut t, &std);
    }
    if o.wants("peerings") {
        peerings(&mut t, o.samples);
    }
    if o.wants("graph") {
        graph_svg(&mut t, &std, o.samples);
    }
    if !o.wants("dataplane") {
    } else if o.dataplane {
        dataplane(&mut t, o.samples);
    } else {
        t.skip(DATAPLANE_FIGURE, DATAPLANE_BUDGET, "--no-dataplane".into());
    }

    println!();
    t.print();
    println!();
    let failed = t.failed();
    println!(
        "{} budgets, {} missed; run took {:.1} s",
        t.rows.iter().filter(|r| r.pass.is_some()).count(),
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        println!("missed: {}", failed.join("; "));
        if o.strict {
            std::process::exit(1);
        }
    }
}

fn decode_and_build(t: &mut Table, f: &Fixture, samples: usize) {
    let (mut dec, mut bld) = (Vec::new(), Vec::new());
    let (mut da, mut ba) = (Allocs::default(), Allocs::default());
    for _ in 0..samples {
        let ((d, a), s) = timed(|| counted(|| decode_text(&f.text)));
        dec.push(s);
        da = a;
        let ((topo, a), s) = timed(|| counted(|| build(&d)));
        bld.push(s);
        ba = a;
        std::hint::black_box(topo);
    }
    t.info(
        &format!(
            "decode {} ({:.1} MB YAML)",
            f.name,
            f.text.len() as f64 / 1e6
        ),
        both(medians(&dec)),
        da.human(),
    );
    t.info(
        &format!("build topology {}", f.name),
        both(medians(&bld)),
        ba.human(),
    );
    yaml_against_parser(t, &f.name, &f.text, RATIO_SAMPLES, true);
    eprintln!("generating the hyperscale cluster's YAML (65,000 nodes) ...");
    let spec = ScaleSpec::hyperscale();
    let hyper = spec.generate();
    let name = format!("hyperscale-{}", spec.node_count());
    yaml_against_parser(t, &name, &hyper, samples, false);
    drop(hyper);
    json_against_parser(t, f, RATIO_SAMPLES);
}

/// Samples of the decode ratios on the standard cluster (a sample takes tens of milliseconds).
const RATIO_SAMPLES: usize = 7;

/// Issue 19's decode budget, both formats: our decoder ÷ the parser it stands on.
const DECODE_RATIO: f64 = 2.0;

/// Our decoder (bytes to `Decoded`) against `saphyr-parser`'s bare event scan of the same bytes,
/// samples interleaved; a budget (≤ 2 ×) when `judged`, information otherwise.
fn yaml_against_parser(t: &mut Table, name: &str, text: &str, samples: usize, judged: bool) {
    let (mut ours, mut scan) = (Vec::new(), Vec::new());
    let (mut oa, mut sa) = (Allocs::default(), Allocs::default());
    let mut events = 0;
    for _ in 0..samples {
        let ((d, a), s) = timed(|| counted(|| decode_text(text)));
        ours.push(s);
        oa = a;
        std::hint::black_box(d);
        let ((n, a), s) = timed(|| counted(|| scan_events(text)));
        scan.push(s);
        sa = a;
        events = n;
    }
    let (o, s) = (medians(&ours), medians(&scan));
    let r = o.cpu.as_secs_f64() / s.cpu.as_secs_f64().max(1e-12);
    let figure = format!(
        "decode / saphyr-parser event scan, {name} ({:.1} MB YAML)",
        text.len() as f64 / 1e6
    );
    let note = format!(
        "decode {} ({}) vs scan {} ({}; {events} events)",
        both(o),
        oa.human(),
        both(s),
        sa.human()
    );
    if judged {
        t.budget(
            &figure,
            format!("{r:.2} ×"),
            "≤ 2 ×",
            r <= DECODE_RATIO,
            note,
        );
    } else {
        t.info(
            &figure,
            format!("{r:.2} ×"),
            format!("{note}; target ≤ 2 ×"),
        );
    }
}

/// Every event of every document of `text`, doing nothing with them; the number of events
/// (a parse error ends the scan, as it ends a document's parse).
fn scan_events(text: &str) -> usize {
    let mut n = 0usize;
    for ev in saphyr_parser::Parser::new_from_str(text) {
        if ev.is_err() {
            break;
        }
        std::hint::black_box(&ev);
        n += 1;
    }
    n
}

/// API mode's path: the fixture's objects as the agent hands them to the decoder (one
/// `serde_json::Value` per object, `Decoded::add_json`) against `serde_json::from_slice` of the
/// same objects' JSON bytes, samples interleaved. The values are parsed before each timed
/// decode; both sides drop what they made inside the timing.
fn json_against_parser(t: &mut Table, f: &Fixture, samples: usize) {
    let docs: Vec<Vec<u8>> = yaml_documents_as_json(&f.text)
        .iter()
        .filter_map(|v| serde_json::to_vec(v).ok())
        .collect();
    let bytes: usize = docs.iter().map(Vec::len).sum();
    let parse = || -> Vec<serde_json::Value> {
        docs.iter()
            .filter_map(|b| serde_json::from_slice(b).ok())
            .collect()
    };
    let (mut ours, mut json) = (Vec::new(), Vec::new());
    let (mut oa, mut ja) = (Allocs::default(), Allocs::default());
    let mut objects = 0;
    for _ in 0..samples {
        let values = parse();
        let ((n, a), s) = timed(|| {
            counted(|| {
                let mut d = Decoded::default();
                for v in values {
                    d.add_json("cluster", v);
                }
                d.objects.len()
            })
        });
        ours.push(s);
        oa = a;
        objects = n;
        let (((), a), s) = timed(|| counted(|| drop(std::hint::black_box(parse()))));
        json.push(s);
        ja = a;
    }
    let (o, j) = (medians(&ours), medians(&json));
    let r = o.cpu.as_secs_f64() / j.cpu.as_secs_f64().max(1e-12);
    t.budget(
        &format!(
            "decode API JSON / serde_json::from_slice, {} ({:.1} MB JSON, {} objects)",
            f.name,
            bytes as f64 / 1e6,
            docs.len()
        ),
        format!("{r:.2} ×"),
        "≤ 2 ×",
        r <= DECODE_RATIO,
        format!(
            "add_json of {objects} objects {} ({}) vs from_slice {} ({})",
            both(o),
            oa.human(),
            both(j),
            ja.human()
        ),
    );
}

/// The documents of a YAML stream as JSON values, for the fixtures' simple YAML (plain scalars
/// resolved as the core schema does for integers, booleans and null; quoted ones are strings;
/// no anchors or tags). Independent of the decoder measured.
fn yaml_documents_as_json(text: &str) -> Vec<serde_json::Value> {
    use saphyr_parser::{Event, ScalarStyle};
    use serde_json::Value as J;
    enum Open {
        Seq(Vec<J>),
        Map(serde_json::Map<String, J>, Option<String>),
    }
    let mut docs = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    for ev in saphyr_parser::Parser::new_from_str(text) {
        let Ok((ev, _)) = ev else { break };
        let done = match ev {
            Event::Scalar(s, style, ..) => Some(match (style, s.as_ref()) {
                (ScalarStyle::Plain, "" | "~" | "null") => J::Null,
                (ScalarStyle::Plain, "true") => J::Bool(true),
                (ScalarStyle::Plain, "false") => J::Bool(false),
                (ScalarStyle::Plain, t) => t
                    .parse::<i64>()
                    .map_or_else(|_| J::String(t.to_string()), J::from),
                _ => J::String(s.into_owned()),
            }),
            Event::SequenceStart(..) => {
                stack.push(Open::Seq(Vec::new()));
                None
            }
            Event::MappingStart(..) => {
                stack.push(Open::Map(serde_json::Map::new(), None));
                None
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(Open::Seq(v)) => Some(J::Array(v)),
                Some(Open::Map(m, _)) => Some(J::Object(m)),
                None => None,
            },
            _ => None,
        };
        let Some(v) = done else { continue };
        match stack.last_mut() {
            None => docs.push(v),
            Some(Open::Seq(items)) => items.push(v),
            Some(Open::Map(m, key)) => match key.take() {
                None => *key = Some(v.as_str().unwrap_or_default().to_string()),
                Some(k) => {
                    m.insert(k, v);
                }
            },
        }
    }
    docs
}

/// Nodes of the one-node samples, spread over the cluster.
const ONE_NODE_SAMPLES: usize = 51;

fn one_node(t: &mut Table, f: &Fixture) {
    const N: usize = ONE_NODE_SAMPLES;
    let mut times = Vec::with_capacity(N);
    let mut allocs = Vec::with_capacity(N);
    let mut values = 0;
    for i in 0..N {
        let n = f.spread_node(i, N);
        let topo = f.fresh_topology();
        let ((plan, a), s) = timed(|| counted(|| resolve_one(&topo, n)));
        times.push(s);
        allocs.push(a.count);
        values += plan.value_count();
    }
    let max = times.iter().map(|s| s.cpu).max().unwrap_or_default();
    let med = medians(&times);
    allocs.sort_unstable();
    t.target(
        "resolve one node (standard-5000, fresh Solver and Topology)",
        both(med),
        "≤ 2 ms",
        med.cpu <= Duration::from_millis(2),
        format!(
            "{N} nodes spread over the cluster, max {}, {} values/node, median {} allocs",
            ms(max),
            values / N,
            allocs.get(N / 2).copied().unwrap_or(0)
        ),
    );
}

fn all_nodes(t: &mut Table, std: &Fixture, dbl: &Fixture, samples: usize) {
    let (mut rs, mut ss, mut rd) = (Vec::new(), Vec::new(), Vec::new());
    let (mut vs, mut vd, mut bytes) = (0, 0, 0);
    let (mut ra, mut sa, mut da) = (Allocs::default(), Allocs::default(), Allocs::default());
    for _ in 0..samples {
        // Standard: resolve every node, then serialize what it produced.
        let ((solver, plans, a), s) = timed(|| {
            let mut solver = Solver::new(std.topo(), Settings::default());
            let (plans, a) = counted(|| solver.plan_all());
            (solver, plans, a)
        });
        rs.push(s);
        ra = a;
        vs = plans.iter().map(NodePlan::value_count).sum();
        let ((b, a), s) = timed(|| counted(|| serialize(&solver, std.topo(), &plans)));
        ss.push(s);
        sa = a;
        bytes = b;
        drop(plans);
        drop(solver);
        // Double.
        let ((plans, a), s) = timed(|| {
            let mut solver = Solver::new(dbl.topo(), Settings::default());
            counted(|| solver.plan_all())
        });
        rd.push(s);
        da = a;
        vd = plans.iter().map(NodePlan::value_count).sum();
    }
    let (mrs, mss, mrd) = (medians(&rs), medians(&ss), medians(&rd));
    let ns_std = per(mrs.cpu, vs);
    let ns_dbl = per(mrd.cpu, vd);
    t.target(
        "resolve all nodes standard-5000, per value",
        format!("{ns_std:.1} ns"),
        "≤ 150 ns",
        ns_std <= 150.0,
        format!(
            "{} for {vs} values (links + routes); wall {:.1} ns/value; {}",
            both(mrs),
            per(mrs.wall, vs),
            ra.human()
        ),
    );
    t.budget(
        "resolve all / serialize its JSON (standard-5000)",
        format!("{:.2} ×", mrs.cpu.as_secs_f64() / mss.cpu.as_secs_f64()),
        "≤ 0.25 ×",
        mrs.cpu.as_secs_f64() <= 0.25 * mss.cpu.as_secs_f64(),
        format!(
            "resolve {} vs resolve_out + serde_json {} ({:.1} MB JSON; {})",
            both(mrs),
            both(mss),
            bytes as f64 / 1e6,
            sa.human()
        ),
    );
    t.info(
        "resolve all nodes double-10000, per value",
        format!("{ns_dbl:.1} ns"),
        format!("{} for {vd} values; {}", both(mrd), da.human()),
    );
    let ratio = ns_dbl / ns_std;
    t.budget(
        "double / standard, cost per resolved value",
        format!("{ratio:.2} ×"),
        "≤ 1.3 ×",
        ratio <= 1.3,
        format!("{ns_dbl:.1} ns / {ns_std:.1} ns"),
    );
}

/// Nodes whose every route `explain` is asked about through one resolver (issue 44).
const EXPLAINED_NODES: usize = 200;

/// Issue 44: the embedding API costs what the binary costs, on the standard cluster.
/// `Resolver::what_if` against `whatif::what_if` on a built base (the `what-if` command's own
/// call), time and bytes allocated; `explain` of every route of 200 spread nodes through one
/// resolver against planning those nodes on one solver.
fn embedding(t: &mut Table, f: &Fixture, samples: usize) {
    let resolver = Resolver::new(decode_text(&f.text), Settings::default());
    if let Some(m) = site_assignment_cap(f.topo()) {
        let muts = [m];
        let (mut lib, mut cli) = (Vec::new(), Vec::new());
        let (mut la, mut ca) = (Allocs::default(), Allocs::default());
        for _ in 0..samples.max(5) {
            let ((_, a), s) = timed(|| counted(|| std::hint::black_box(resolver.what_if(&muts))));
            lib.push(s);
            la = a;
            let ((_, a), s) = timed(|| {
                counted(|| {
                    std::hint::black_box(what_if(f.input(), &muts, mtu_solver::Explanations::Bound))
                })
            });
            cli.push(s);
            ca = a;
        }
        let (ml, mc) = (medians(&lib), medians(&cli));
        let r = ml.cpu.as_secs_f64() / mc.cpu.as_secs_f64();
        t.budget(
            "Resolver::what_if / the what-if command's call (it builds the topology), time (standard-5000)",
            format!("{r:.2} ×"),
            "≤ 1.2 ×",
            r <= 1.2,
            format!(
                "Resolver (its topology built) {} ({}) vs whatif::what_if of the input, as the command calls it {} ({})",
                both(ml),
                la.human(),
                both(mc),
                ca.human()
            ),
        );
        let b = la.bytes as f64 / ca.bytes.max(1) as f64;
        t.budget(
            "Resolver::what_if / the what-if command's call, bytes allocated",
            format!("{b:.2} ×"),
            "≤ 1.2 ×",
            b <= 1.2,
            format!("{} vs {}", la.human(), ca.human()),
        );
    }
    let nodes: Vec<NodeId> = (0..EXPLAINED_NODES)
        .map(|i| f.spread_node(i, EXPLAINED_NODES))
        .collect();
    let topo = f.topo();
    let asked: Vec<(String, Vec<Destination>)> = {
        let mut solver = Solver::new(topo, Settings::default());
        nodes
            .iter()
            .map(|n| {
                let plan = solver.plan(*n);
                let dests = plan
                    .routes
                    .iter()
                    .map(|r| Destination::Prefix(r.destination))
                    .collect();
                (topo.node(*n).name.to_string(), dests)
            })
            .collect()
    };
    let routes: usize = asked.iter().map(|(_, d)| d.len()).sum();
    let (mut ex, mut pl, mut full, mut bare) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..samples {
        let fresh = Resolver::new(decode_text(&f.text), Settings::default());
        let (_, s) = timed(|| {
            for (n, dests) in &asked {
                for d in dests {
                    std::hint::black_box(fresh.explain(n, *d).ok());
                }
            }
        });
        ex.push(s);
        let planned = Resolver::new(decode_text(&f.text), Settings::default());
        let (_, s) = timed(|| {
            for (n, _) in &asked {
                std::hint::black_box(planned.plan(n).ok());
            }
        });
        pl.push(s);
        let located = Resolver::new(decode_text(&f.text), Settings::default())
            .with_explanations(mtu_solver::Explanations::Full);
        let (_, s) = timed(|| {
            for (n, _) in &asked {
                std::hint::black_box(located.plan(n).ok());
            }
        });
        full.push(s);
        let (_, s) = timed(|| {
            let mut solver = Solver::new(topo, Settings::default());
            for n in &nodes {
                std::hint::black_box(solver.plan(*n));
            }
        });
        bare.push(s);
    }
    let (me, mp, mf, mb) = (medians(&ex), medians(&pl), medians(&full), medians(&bare));
    let rf = me.cpu.as_secs_f64() / mf.cpu.as_secs_f64();
    let r = me.cpu.as_secs_f64() / mp.cpu.as_secs_f64();
    t.budget(
        "explain every route of 200 nodes through one Resolver / their plans through one (standard-5000)",
        format!("{r:.2} ×"),
        "≤ 2 ×",
        r <= 2.0,
        format!(
            "{routes} routes explained (every term located, paths and hops) in {} vs the 200 nodes' plan_all entries (bound terms rendered) {}; the plans alone on one solver {}; the plans at Explanations::Full (every term rendered, as explain's values) {}, explain {rf:.2} × those",
            both(me),
            both(mp),
            both(mb),
            both(mf)
        ),
    );
    noisy_explain(t, f, &asked, samples);
}

/// Notes added to the input of the noisy `explain` figure: an export of a busy cluster, whose
/// objects of kinds this tool skips are each a note.
const EXPLAIN_NOTES: usize = 10_000;

/// How many of the explained nodes the noisy `explain` figure asks about, every route of each.
const NOISY_EXPLAINED_NODES: usize = 20;

/// `explain` of every route of some nodes with [`EXPLAIN_NOTES`] notes in the input against
/// the same without: every explanation lists the input's diagnostics, which are sorted and
/// rendered once per resolver and shared, so their number does not multiply each question.
fn noisy_explain(t: &mut Table, f: &Fixture, asked: &[(String, Vec<Destination>)], samples: usize) {
    let noisy_text = with_notes(&f.text, EXPLAIN_NOTES);
    let asked = asked.get(..NOISY_EXPLAINED_NODES).unwrap_or(asked);
    let explain_all = |resolver: &Resolver| {
        let mut listed = 0usize;
        for (n, dests) in asked {
            for d in dests {
                listed += resolver.explain(n, *d).map_or(0, |e| e.diagnostics.len());
            }
        }
        listed
    };
    let (mut quiet, mut noisy) = (Vec::new(), Vec::new());
    let mut listed = 0usize;
    for _ in 0..samples {
        let resolver = Resolver::new(decode_text(&f.text), Settings::default());
        let (_, s) = timed(|| std::hint::black_box(explain_all(&resolver)));
        quiet.push(s);
        let resolver = Resolver::new(decode_text(&noisy_text), Settings::default());
        let (l, s) = timed(|| std::hint::black_box(explain_all(&resolver)));
        listed = l;
        noisy.push(s);
    }
    let (mq, mn) = (medians(&quiet), medians(&noisy));
    let r = mn.cpu.as_secs_f64() / mq.cpu.as_secs_f64();
    t.budget(
        "explain every route of 20 nodes, 10,000 notes in the input / none (standard-5000)",
        format!("{r:.2} ×"),
        "≤ 1.5 ×",
        r <= 1.5,
        format!(
            "{} explanations listing {listed} diagnostics in all: {} with the notes vs {} without",
            asked.iter().map(|(_, d)| d.len()).sum::<usize>(),
            both(mn),
            both(mq)
        ),
    );
}

/// The window of `resolve -o json` at 65,000 nodes: about 4,000 nodes written, each worker
/// past seven fresh solvers.
const HYPERSCALE_JSON_WINDOW: Duration = Duration::from_secs(25);

/// One cluster size of the whole-cluster views: its YAML and a worker of it.
struct ViewSize {
    label: &'static str,
    text: String,
    worker: &'static str,
    /// How long `resolve -o json` of every node runs before it is stopped (None: to its end).
    /// At 65,000 nodes it writes 100 GB in 5 minutes of CPU; its memory is flat after the
    /// first chunks (a fresh solver every `RENEW` nodes), so a window of many renewals shows
    /// its peak.
    json_window: Option<Duration>,
}

/// Issue 39: the whole-cluster views stream. `resolve --summary` and `resolve -o json`, run as
/// an operator runs them (the release binary, its output read and discarded), hold at most
/// four times the memory of `resolve --node` of one worker; the JSON's first byte comes within
/// twice the time of that one worker's resolve; resolving every node costs per value at 65,000
/// nodes what it costs at 5,000.
fn views(t: &mut Table, std: &Fixture, samples: usize) {
    let sizes = [
        ViewSize {
            label: "standard-5000",
            text: std.text.clone(),
            worker: "node-000-02",
            json_window: None,
        },
        ViewSize {
            label: "double-10000",
            text: ScaleSpec::double().generate(),
            worker: "node-000-02",
            json_window: None,
        },
        ViewSize {
            label: "hyperscale-65000",
            text: ScaleSpec::hyperscale().generate(),
            worker: "node-0000-02",
            json_window: Some(HYPERSCALE_JSON_WINDOW),
        },
    ];
    let mut per_value: Vec<(&str, f64)> = Vec::new();
    for size in &sizes {
        match view_size(t, size, samples) {
            Ok(ns) => per_value.push((size.label, ns)),
            Err(reason) => t.skip(
                &format!("whole-cluster views, {}", size.label),
                "≤ 4 ×",
                reason,
            ),
        }
    }
    if let (Some((_, s)), Some((_, h))) = (
        per_value.iter().find(|(l, _)| *l == "standard-5000"),
        per_value.iter().find(|(l, _)| *l == "hyperscale-65000"),
    ) {
        let r = h / s;
        t.budget(
            "resolve every node (--summary), per value, hyperscale-65000 / standard",
            format!("{r:.2} ×"),
            "≤ 1.3 ×",
            r <= 1.3,
            format!("{h:.1} ns / {s:.1} ns of CPU per value (links + routes), the whole process"),
        );
    }
}

/// The figures of one size; returns the CPU per value of `--summary` in nanoseconds.
fn view_size(t: &mut Table, size: &ViewSize, samples: usize) -> Result<f64, String> {
    use benches::memory::command_peak;
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let one_args = ["resolve", "-f", "{}", "--node", size.worker, "-o", "json"];
    let json_args = ["resolve", "-f", "{}", "-o", "json"];
    let summary = command_peak(
        &size.text,
        &["resolve", "-f", "{}", "--summary", "-o", "json"],
        true,
        None,
    )?;
    // Interleaved samples: one worker, then every node as JSON (whose first byte is timed).
    let (mut ones, mut firsts, mut json_peak) = (Vec::new(), Vec::new(), 0u64);
    let mut one_peak = 0u64;
    for _ in 0..samples {
        let one = command_peak(&size.text, &one_args, false, None)?;
        one_peak = one_peak.max(one.peak.bytes);
        ones.push(one.peak.took);
        let all = command_peak(&size.text, &json_args, false, size.json_window)?;
        json_peak = json_peak.max(all.peak.bytes);
        firsts.push(all.first_byte.ok_or("resolve -o json wrote nothing")?);
    }
    let one_wall = median(&mut ones);
    let ratio = summary.peak.bytes as f64 / one_peak.max(1) as f64;
    t.budget(
        &format!("resolve --summary peak memory / one worker, {}", size.label),
        format!("{ratio:.2} ×"),
        "≤ 4 ×",
        ratio <= 4.0,
        format!(
            "{:.1} MiB / {:.1} MiB ({} wall)",
            mib(summary.peak.bytes),
            mib(one_peak),
            ms(summary.peak.took)
        ),
    );
    let ratio = json_peak as f64 / one_peak.max(1) as f64;
    let window = size
        .json_window
        .map(|w| format!(", the first {} s of its run", w.as_secs()))
        .unwrap_or_default();
    t.budget(
        &format!("resolve -o json peak memory / one worker, {}", size.label),
        format!("{ratio:.2} ×"),
        "≤ 4 ×",
        ratio <= 4.0,
        format!(
            "{:.1} MiB / {:.1} MiB{window}",
            mib(json_peak),
            mib(one_peak)
        ),
    );
    let first = median(&mut firsts);
    let ratio = first.as_secs_f64() / one_wall.as_secs_f64().max(1e-9);
    t.budget(
        &format!(
            "resolve -o json first byte / one worker's resolve, {}",
            size.label
        ),
        format!("{ratio:.2} ×"),
        "≤ 2 ×",
        ratio <= 2.0,
        format!(
            "{} / {} wall, medians of {samples}",
            ms(first),
            ms(one_wall)
        ),
    );
    let doc: serde_json::Value =
        serde_json::from_slice(&summary.output).map_err(|e| format!("--summary -o json: {e}"))?;
    let counts = &doc["counts"];
    let values = counts["links"].as_u64().unwrap_or(0) + counts["routes"].as_u64().unwrap_or(0);
    let ns = summary.cpu.as_secs_f64() * 1e9 / values.max(1) as f64;
    t.info(
        &format!("resolve --summary, every node, {}", size.label),
        format!("{ns:.1} ns/value"),
        format!(
            "{} CPU, {} wall, {values} values, {:.1} MiB peak",
            ms(summary.cpu),
            ms(summary.peak.took),
            mib(summary.peak.bytes)
        ),
    );
    Ok(ns)
}

fn what_if_cap(t: &mut Table, f: &Fixture, samples: usize) {
    let Some(m) = site_assignment_cap(f.topo()) else {
        t.skip(
            "what-if: Site assignment cap none → 1280",
            "≤ 2 µs/change",
            "no uncapped single-Site assignment".into(),
        );
        return;
    };
    let name = match &m {
        mtu_solver::whatif::Mutation::SetCap { name, .. } => name.clone(),
        _ => String::new(),
    };
    let muts = [m];
    // The base as a running resolver holds it: the topology built and every node resolved
    // once (warm memos). The query itself is what is measured; a cold what-if (build the
    // topology, fresh solver) is reported next to it.
    let mut base = Solver::new(f.topo(), Settings::default());
    let (_, prep) = timed(|| std::hint::black_box(base.plan_all()).len());
    let (mut wi, mut cold, mut full) = (Vec::new(), Vec::new(), Vec::new());
    let (mut changes, mut work, mut strategy, mut wa) = (0, 0, "", Allocs::default());
    let mut cold_changes = 0;
    // At least five rounds: the full re-resolve, half a second, is one sample per round, and
    // the speed-up is as steady as the median of those.
    for _ in 0..samples.max(5) {
        // The query is short (milliseconds): five samples per round, all in the median.
        for _ in 0..5 {
            let ((w, a), s) = timed(|| {
                counted(|| what_if_on(&mut base, &f.base, &muts, mtu_solver::Explanations::Bound))
            });
            wi.push(s);
            wa = a;
            if let Ok(w) = w {
                changes = w.changes.len();
                work = w.work;
                strategy = w.strategy.as_str();
            }
        }
        let (w, s) = timed(|| what_if(f.input(), &muts, mtu_solver::Explanations::Bound));
        cold.push(s);
        cold_changes = w.map(|w| w.changes.len()).unwrap_or(0);
        // The full re-resolve it replaces: build the topology, resolve every node.
        let ((), s) = timed(|| {
            let topo = f.input().build_topology();
            let mut solver = Solver::new(&topo, Settings::default());
            std::hint::black_box(solver.plan_all());
        });
        full.push(s);
    }
    let (mw, mc, mf) = (medians(&wi), medians(&cold), medians(&full));
    let per_change = mw.cpu.as_secs_f64() * 1e6 / changes.max(1) as f64;
    t.budget(
        "what-if: Site assignment cap none → 1280, per changed value",
        format!("{per_change:.2} µs"),
        "≤ 2 µs",
        per_change <= 2.0,
        format!(
            "SiteGatewayPoolAssignment/{name} on the resolved base: {} for {changes} changes ({strategy}, work {work}); {}",
            both(mw),
            wa.human()
        ),
    );
    let speedup = mf.cpu.as_secs_f64() / mw.cpu.as_secs_f64();
    t.budget(
        "what-if speed-up over a full re-resolve",
        format!("{speedup:.1} ×"),
        "≥ 50 ×",
        speedup >= 50.0,
        format!(
            "full (build + resolve all) {} vs what-if on the resolved base {}",
            both(mf),
            both(mw)
        ),
    );
    let cold_speedup = mf.cpu.as_secs_f64() / mc.cpu.as_secs_f64();
    t.info(
        "what-if from scratch (build the base, fresh solver)",
        format!("{:.3} ms", mc.cpu.as_secs_f64() * 1e3),
        format!(
            "{cold_changes} changes, {cold_speedup:.1} × faster than the full re-resolve; preparing the base (resolve every node once): {}",
            both(prep)
        ),
    );
}

fn incremental_event(t: &mut Table, f: &Fixture) {
    let Some(mut_obj) = f.input().objects.iter().find_map(|o| match o {
        RawObject::Assignment(r) if r.cap.is_none() => Some(o.clone()),
        _ => None,
    }) else {
        return;
    };
    let mut inc = Incremental::new(Settings::default());
    let s = Instant::now();
    inc.apply(f.input().objects.iter().cloned().map(Event::Apply));
    let load = s.elapsed();
    let mut changed = mut_obj.clone();
    if let RawObject::Assignment(r) = &mut changed {
        r.cap = Some(topology_core::decode::RawCap {
            mtu: 1280,
            invalid: None,
            loc: None,
        });
    }
    let mut times = Vec::new();
    let mut a = Allocs::default();
    for i in 0..3 {
        let ev = if i % 2 == 0 {
            changed.clone()
        } else {
            mut_obj.clone()
        };
        let ((_, al), s) = timed(|| counted(|| inc.apply([Event::Apply(ev)])));
        times.push(s);
        a = al;
    }
    t.info(
        "incremental: one assignment cap event (standard-5000)",
        both(medians(&times)),
        format!(
            "work {}; initial load of all objects {}; {}",
            inc.last_work,
            ms(load),
            a.human()
        ),
    );
}

/// The turn's budget for an event that cannot reach the node, against a full build and plan.
const UNREACHED_TURN: f64 = 1.0;
/// The turn's budget for an event that changes the node's route MTUs, against a full build and
/// plan.
const REACHED_TURN: f64 = 10.0;

/// The node agent's turn in API mode (`benches::api_cluster`: the cluster's objects in
/// reflector stores, workers in SiteNodeSlices, gateways in pool statuses), the typical worker's
/// agent having applied a plan, as the agent's loop runs it: the API source's input
/// (`agent::intake`: only the objects the caches replaced are decoded and digested) and the
/// reconcile's resolve and apply (`agent::reconcile`, an applier that writes nothing). A cap
/// change of an object outside the plan's footprint (the turn ends unreached; the watch checks,
/// `agent::needs`, counted too) and one inside it (the cap taken into the kept topology, the
/// node planned, its document, desired state and footprint made), each against a full build
/// and plan (decode the snapshot, build, plan, footprint: what every turn did before the agent
/// kept its state), samples interleaved. Applying the watch event to the store is the reflector's work, not the turn's,
/// and is not counted.
fn agent_turn(t: &mut Table, f: &Fixture, samples: usize) {
    use benches::api_cluster::ApiCluster;
    use benches::api_load::{Holding, agent_settings};
    use mtu_solver::locality::Footprint;
    use unbounded_mtu::agent::caches::Snapshot;
    use unbounded_mtu::agent::intake::Intake;
    use unbounded_mtu::agent::probing::Probed;
    use unbounded_mtu::agent::reconcile::{self, Kept, Turn};
    let worker = f.topo().node(f.typical_worker()).name.to_string();
    let values = yaml_documents_as_json(&f.text);
    let figure = |what: &str| format!("agent turn (API mode), {what}, {}", f.name);
    let unreached_figure = figure("an event that cannot reach the node / a full build and plan");
    // The Sites the worker's plan links into (its own and its peers'), and its peers: the agent
    // watches the metadata of those Sites' Nodes.
    let linked = reconcile::linked(
        f.topo(),
        &benches::resolve_one(f.topo(), f.typical_worker()),
    );
    let (Some(cluster), Ok(settings)) = (
        ApiCluster::of(&values, &worker, &linked.sites),
        agent_settings(&worker),
    ) else {
        t.skip(
            &unreached_figure,
            "≤ 1 %",
            "the cluster does not read as API objects".into(),
        );
        return;
    };
    let adopted = cluster.adopted.clone();
    let full = |snap: &Snapshot| {
        let d = snap.decode(&adopted);
        let topo = Topology::build(d.objects.iter(), d.diagnostics.iter().cloned());
        let mut solver = Solver::new(&topo, Settings::default());
        let plan = topo.node_id(&worker).map(|id| solver.plan(id));
        let footprint = plan
            .as_ref()
            .map(|p| Footprint::of(&solver, p))
            .unwrap_or_default();
        (plan.map_or(0, |p| p.value_count()), footprint)
    };
    // One turn of the agent: its input, then resolve and, when reached, apply (the input then
    // marked, as the loop's `Source::settled` marks it); whether it resolved, and what it kept.
    let mut intake = Intake::default();
    let turn = |intake: &mut Intake, last: Option<Kept>| -> (bool, Option<Kept>) {
        let input = intake.input(&cluster.snapshot(), &adopted);
        match reconcile::resolve(
            &settings,
            input,
            &Holding,
            &Probed::default(),
            Some(1500),
            last,
        ) {
            Ok(Turn::Resolved(r)) => {
                let kept = reconcile::apply(*r, &Holding).ok().map(|(_, k)| k);
                intake.mark();
                (true, kept)
            }
            Ok(Turn::Unreached(k)) => (false, Some(*k)),
            Err(_) => (true, None),
        }
    };
    let (_, Some(mut kept)) = turn(&mut intake, None) else {
        t.skip(
            &unreached_figure,
            "≤ 1 %",
            "the worker's plan did not resolve".into(),
        );
        return;
    };
    let (values_api, footprint) = full(&cluster.snapshot());
    let values_files = benches::resolve_one(f.topo(), f.typical_worker()).value_count();
    // A capped object outside the footprint, and one inside it.
    let capped = |inside: bool| {
        values.iter().find(|v| {
            let kind = v
                .get("kind")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default();
            let name = v
                .pointer("/metadata/name")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default();
            let in_fp = topology_core::vocab::Kind::parse_ci(kind)
                .is_some_and(|k| footprint.contains(k, name));
            v.pointer("/spec/tunnelMTU")
                .is_some_and(serde_json::Value::is_u64)
                && in_fp == inside
        })
    };
    let (Some(outside), Some(inside)) = (capped(false).cloned(), capped(true).cloned()) else {
        t.skip(
            &unreached_figure,
            "≤ 1 %",
            "no capped object outside and inside the footprint".into(),
        );
        return;
    };
    let label = |v: &serde_json::Value| {
        format!(
            "{}/{}",
            v["kind"].as_str().unwrap_or("?"),
            v["metadata"]["name"].as_str().unwrap_or("?")
        )
    };
    let toggle = |v: &serde_json::Value, i: usize| {
        let cap = v["spec"]["tunnelMTU"].as_u64().unwrap_or(1400);
        let kind = topology_core::vocab::Kind::parse_ci(v["kind"].as_str().unwrap_or_default());
        let name = v["metadata"]["name"].as_str().unwrap_or_default();
        kind.is_some_and(|k| {
            cluster.modify(k, name, |o| {
                o["spec"]["tunnelMTU"] = serde_json::json!(if i % 2 == 0 { cap - 20 } else { cap });
            })
        })
    };
    let (mut unreached, mut reached, mut base) = (Vec::new(), Vec::new(), Vec::new());
    let mut wrong = 0;
    let mut needs = unbounded_mtu::agent::needs::Needs::default();
    std::hint::black_box(cluster.watch_checks(&mut needs, &linked));
    for i in 0..samples.max(5) {
        assert!(toggle(&outside, i), "{}", label(&outside));
        let ((resolved, k), s) = timed(|| {
            let r = turn(&mut intake, Some(kept));
            std::hint::black_box(cluster.watch_checks(&mut needs, &linked));
            r
        });
        wrong += usize::from(resolved);
        unreached.push(s);
        assert!(toggle(&inside, i), "{}", label(&inside));
        let ((resolved, k), s) = match k {
            Some(k) => timed(|| turn(&mut intake, Some(k))),
            None => break,
        };
        wrong += usize::from(!resolved);
        match k {
            Some(k) => kept = k,
            None => break,
        }
        reached.push(s);
        let (_, s) = timed(|| std::hint::black_box(full(&cluster.snapshot())));
        base.push(s);
    }
    let (mu, mr, mb) = (medians(&unreached), medians(&reached), medians(&base));
    let pct = |m: benches::Sample| m.cpu.as_secs_f64() / mb.cpu.as_secs_f64().max(1e-12) * 100.0;
    let (pu, pr) = (pct(mu), pct(mr));
    let checked = if wrong > 0 {
        format!("; WRONG: {wrong} turns judged the other way")
    } else {
        String::new()
    };
    let plan_note = format!(
        "full build and plan (decode the snapshot, build, plan, footprint) {}; the worker's plan {values_api} values in API mode, {values_files} from files; footprint {} objects",
        both(mb),
        footprint.len()
    );
    t.budget(
        &unreached_figure,
        format!("{pu:.2} %"),
        "≤ 1 %",
        pu <= UNREACHED_TURN && wrong == 0,
        format!(
            "{}'s cap: the input from the kept decodes and its delta, the footprint check, and the watch checks (assignments, slice members, Node selection) {}; {plan_note}{checked}",
            label(&outside),
            both(mu)
        ),
    );
    t.budget(
        &figure("an event that changes the node's routes / a full build and plan"),
        format!("{pr:.1} %"),
        "≤ 10 %",
        pr <= REACHED_TURN && wrong == 0,
        format!(
            "{}'s cap: the input and its delta, the cap taken into the kept topology, the node planned, its document, desired state and footprint {}",
            label(&inside),
            both(mr)
        ),
    );
}

/// Sizes of the peering fixtures: each doubling of members should double the build.
const PEERING_SIZES: [usize; 3] = [1000, 2000, 4000];

fn peerings(t: &mut Table, samples: usize) {
    for (kind, make) in [
        ("SitePeering", mesh_peering as fn(usize) -> String),
        ("GatewayPoolPeering", pool_peering as fn(usize) -> String),
    ] {
        let decoded: Vec<_> = PEERING_SIZES
            .iter()
            .map(|n| decode_text(&make(*n)))
            .collect();
        // Builds of every size interleaved, `samples` rounds (at least 5): the ratios compare
        // medians taken under the same load.
        let mut builds: Vec<Vec<Sample>> = vec![Vec::new(); PEERING_SIZES.len()];
        for _ in 0..samples.max(5) {
            for (i, d) in decoded.iter().enumerate() {
                let (topo, s) = timed(|| build(d));
                drop(topo);
                builds[i].push(s);
            }
        }
        let build_time: Vec<Sample> = builds.iter().map(|b| medians(b)).collect();
        for (i, n) in PEERING_SIZES.iter().enumerate() {
            peering_size(t, kind, *n, &decoded[i], build_time[i]);
        }
        let ratio = |i: usize| {
            build_time[i].cpu.as_secs_f64() / build_time[i - 1].cpu.as_secs_f64().max(1e-12)
        };
        let r2 = ratio(1);
        t.budget(
            &format!("index build, 2000-member {kind} / 1000-member"),
            format!("{r2:.2} ×"),
            "≤ 2.3 ×",
            r2 <= 2.3,
            format!(
                "{} vs {} (medians of {} interleaved builds)",
                both(build_time[1]),
                both(build_time[0]),
                samples.max(5)
            ),
        );
        t.info(
            &format!("index build, 4000-member {kind} / 2000-member"),
            format!("{:.2} ×", ratio(2)),
            format!("{} vs {}", both(build_time[2]), both(build_time[1])),
        );
    }
}

/// One peering fixture: its index entries (judged), its build's allocations, and the pair memo
/// and cost of resolving one node.
fn peering_size(
    t: &mut Table,
    kind: &str,
    n: usize,
    d: &topology_core::decode::Decoded,
    build_time: Sample,
) {
    let (topo, ba) = counted(|| build(d));
    let e = index_entries(&topo);
    t.budget(
        &format!("index entries, {n}-member {kind}"),
        format!("{} ({:.2} N)", e.total(), e.total() as f64 / n as f64),
        "≤ 4 N",
        e.total() <= 4 * n,
        format!(
            "{} memberships + {} hub entries (+{} component entries); build {} ({})",
            e.memberships,
            e.hubs,
            e.components,
            both(build_time),
            ba.human()
        ),
    );
    let node = NodeId::from_idx(topo.nodes.len() / 2);
    let mut solver = Solver::new(&topo, Settings::default());
    let ((plan, a), d) = timed(|| counted(|| solver.plan(node)));
    t.info(
        &format!("pair memo after one node, {n}-member {kind}"),
        format!("{}", solver.net().memo_stats().pair_entries),
        format!(
            "resolve one node {} ({} values; {})",
            both(d),
            plan.value_count(),
            a.human()
        ),
    );
}

/// The seed's headline: node agent API calls cut by 73.8 % by scoping worker watches, so the
/// scoped worker's share of the unscoped agent's load is at most 26.2 %.
const SCOPED_SHARE: f64 = 26.2;

/// The API load of one agent (`benches::api_load`): the typical worker, its Site listed by no
/// assignment, watching what it needs and watching everything as agents did before watches
/// were scoped, and a worker whose Site an assignment lists; start-up and a window of churn
/// each, against the fake API server serving the cluster.
fn api_load(t: &mut Table, f: &Fixture) {
    use benches::api_load::{Churn, listed_worker, measure, unassigned};
    use unbounded_mtu::settings::WatchScope;
    let values = yaml_documents_as_json(&f.text);
    let worker = f.topo().node(f.typical_worker());
    let (own, site) = (
        worker.name.to_string(),
        f.topo().site(worker.site).name.to_string(),
    );
    let objects = unassigned(&benches::api_cluster::served(&values), &site);
    let figure = |what: &str| format!("API load of a worker agent, {what}, {}", f.name);
    let budget = format!("≤ {SCOPED_SHARE} %");
    let Some((listed, listed_site)) = listed_worker(&objects, &site) else {
        return t.skip(
            &figure("scoped / everything"),
            &budget,
            "no worker of a listed Site".into(),
        );
    };
    let churn = Churn::typical(f.topo().nodes.len());
    let run = |node: &str, scope| measure(&objects, node, scope, churn);
    let (scoped, everything, assigned) = match (
        run(&own, WatchScope::Needed),
        run(&own, WatchScope::Everything),
        run(&listed, WatchScope::Needed),
    ) {
        (Ok(a), Ok(b), Ok(c)) => (a, b, c),
        (a, b, c) => {
            let why = [a.err(), b.err(), c.err()]
                .into_iter()
                .flatten()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("; ");
            return t.skip(&figure("scoped / everything"), &budget, why);
        }
    };
    let share = |a: u64, b: u64| a as f64 / (b as f64).max(1.0) * 100.0;
    let line = |s: &benches::api_load::Served| {
        let (st, ch) = (s.startup, s.churn);
        format!(
            "start-up {} requests ({} LIST pages, {} watches, {} GETs, {} PATCHes), {} events, {} KiB, ready after {} ms; churn {} requests, {} events, {} KiB",
            st.requests,
            st.lists,
            st.watches,
            st.gets,
            st.patches,
            st.events,
            st.bytes / 1024,
            s.ready_after.as_millis(),
            ch.requests,
            ch.events,
            ch.bytes / 1024
        )
    };
    let (sc, ev) = (scoped.total(), everything.total());
    let (requests, events, bytes) = (
        share(sc.requests, ev.requests),
        share(sc.events, ev.events),
        share(sc.bytes, ev.bytes),
    );
    let window = format!(
        "start-up and {} rounds of churn ({} changes: every GatewayPoolNode's heartbeat and {} Node status updates a round, a SitePeering cap every {} rounds)",
        churn.rounds, everything.changes, churn.node_updates, churn.peering_every
    );
    t.budget(
        &figure("requests, scoped / everything"),
        format!("{requests:.1} % ({} / {})", sc.requests, ev.requests),
        &budget,
        requests <= SCOPED_SHARE,
        format!(
            "{window}; seed: 73.8 % fewer, {:.1} % fewer here",
            100.0 - requests
        ),
    );
    t.budget(
        &figure("watch events, scoped / everything"),
        format!("{events:.1} % ({} / {})", sc.events, ev.events),
        &budget,
        events <= SCOPED_SHARE,
        format!(
            "bytes {bytes:.1} % ({} / {} KiB)",
            sc.bytes / 1024,
            ev.bytes / 1024
        ),
    );
    t.info(
        &figure(&format!("scoped ({own}, Site {site} in no assignment)")),
        format!("{} requests", sc.requests),
        line(&scoped),
    );
    t.info(
        &figure("watching everything (before scoping)"),
        format!("{} requests", ev.requests),
        line(&everything),
    );
    let asg = assigned.total();
    t.info(
        &figure(&format!(
            "assigned ({listed}, Site {listed_site} in an assignment)"
        )),
        format!(
            "{} requests, {:.1} % of everything",
            asg.requests,
            share(asg.requests, ev.requests)
        ),
        format!(
            "events {:.1} %, bytes {:.1} %; {}",
            share(asg.events, ev.events),
            share(asg.bytes, ev.bytes),
            line(&assigned)
        ),
    );
}

/// The agent's peak resident memory, one worker, `--dry-run --once` as the DaemonSet runs it
/// (its allocator settings): from `--manifests` (the standard cluster as information, the
/// hyperscale one judged), and in API mode against the fake API server holding the same
/// cluster, judged against files mode.
fn memory(t: &mut Table, std: &Fixture, hyper: &Fixture) {
    const FIG: &str = "agent peak resident memory, hyperscale-65000, one worker";
    const BUDGET: &str = "≤ 64 MiB";
    let files_std = benches::memory::agent_peak(&std.text, "node-000-02");
    match &files_std {
        Ok(p) => t.info(
            "agent peak resident memory, standard-5000, one worker",
            format!("{:.1} MiB", mib(p.bytes)),
            format!("--manifests --dry-run --once, {} wall", ms(p.took)),
        ),
        Err(reason) => t.skip(
            "agent peak resident memory, standard-5000",
            "-",
            reason.clone(),
        ),
    }
    let files_hyper = benches::memory::agent_peak(&hyper.text, "node-0000-02");
    match &files_hyper {
        Ok(p) => t.budget(
            FIG,
            format!("{:.1} MiB", mib(p.bytes)),
            BUDGET,
            p.bytes <= 64 * 1024 * 1024,
            format!(
                "--manifests ({:.1} MB of YAML) --dry-run --once, {}, {} wall",
                hyper.text.len() as f64 / 1e6,
                benches::memory::DAEMONSET_ENV
                    .map(|(k, v)| format!("{k}={v}"))
                    .join(" "),
                ms(p.took)
            ),
        ),
        Err(reason) => t.skip(FIG, BUDGET, reason.clone()),
    }
    api_memory(t, std, "node-000-02", files_std);
    api_memory(t, hyper, "node-0000-02", files_hyper);
}

/// The agent's peak in API mode against the fake API server over its peak from files.
const API_OVER_FILES: f64 = 1.5;

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// The agent of `node` in API mode (`benches::api_load::agent_peak`: the fake API server holding
/// `f`'s cluster as a cluster holds it) against the same agent from files (`files`).
fn api_memory(
    t: &mut Table,
    f: &Fixture,
    node: &str,
    files: Result<benches::memory::Peak, String>,
) {
    let figure = format!(
        "agent peak resident memory, API mode / files, {}, one worker",
        f.name
    );
    let budget = format!("≤ {API_OVER_FILES} ×");
    let objects = benches::api_cluster::served(&yaml_documents_as_json(&f.text));
    let api = benches::api_load::agent_peak(&objects, node);
    match (api, files) {
        (Ok(a), Ok(b)) => {
            let ratio = a.bytes as f64 / (b.bytes.max(1) as f64);
            t.budget(
                &figure,
                format!("{ratio:.2} ×"),
                &budget,
                ratio <= API_OVER_FILES,
                format!(
                    "API mode {:.1} MiB ({} wall: LISTs, adoption, one reconcile) vs --manifests {:.1} MiB; {} objects served",
                    mib(a.bytes),
                    ms(a.took),
                    mib(b.bytes),
                    objects.len()
                ),
            );
        }
        (Err(reason), _) | (_, Err(reason)) => t.skip(&figure, &budget, reason),
    }
}

/// `graph --format svg` of the standard cluster by the release binary, Graphviz included: wall
/// clock (two processes), the manifests written to a file first (not timed).
fn graph_svg(t: &mut Table, f: &Fixture, samples: usize) {
    const FIG: &str = "graph --format svg, standard-5000 (200 Sites, 50 pools)";
    const BUDGET: &str = "≤ 10 s";
    let bin = match benches::memory::agent_binary() {
        Ok(b) => b,
        Err(reason) => return t.skip(FIG, BUDGET, reason),
    };
    if std::process::Command::new("fdp")
        .arg("-V")
        .output()
        .is_err()
    {
        return t.skip(FIG, BUDGET, "Graphviz (fdp) is not installed".into());
    }
    let file = std::env::temp_dir().join(format!("perf-budget-graph-{}.yaml", std::process::id()));
    if let Err(e) = std::fs::write(&file, &f.text) {
        return t.skip(FIG, BUDGET, format!("write {}: {e}", file.display()));
    }
    let mut walls = Vec::new();
    let mut bytes = 0;
    let mut failure = None;
    for _ in 0..samples {
        let started = Instant::now();
        let out = std::process::Command::new(&bin)
            .args(["graph", "--format", "svg", "--fail-on", "none", "-f"])
            .arg(&file)
            .output();
        walls.push(started.elapsed());
        match out {
            Ok(o) if o.status.success() && o.stdout.starts_with(b"<?xml") => bytes = o.stdout.len(),
            Ok(o) => failure = Some(String::from_utf8_lossy(&o.stderr).trim().to_string()),
            Err(e) => failure = Some(format!("run {}: {e}", bin.display())),
        }
    }
    let _ = std::fs::remove_file(&file);
    if let Some(reason) = failure {
        return t.skip(FIG, BUDGET, format!("graph failed: {reason}"));
    }
    let wall = median(&mut walls);
    t.budget(
        FIG,
        format!("{:.2} s", wall.as_secs_f64()),
        BUDGET,
        wall <= Duration::from_secs(10),
        format!(
            "wall clock, release binary, Graphviz fdp included; {:.1} MB of SVG; median of {samples}",
            bytes as f64 / 1e6
        ),
    );
}

const DATAPLANE_FIGURE: &str = "10,000 route MTU changes, adapter / ip -batch";
/// Issue 19: "rtnetlink can pipeline requests; the floor is the kernel, not `ip`".
const DATAPLANE_BUDGET: &str = "≤ 1.0 ×";

fn dataplane(t: &mut Table, samples: usize) {
    const FIG: &str = DATAPLANE_FIGURE;
    const BUDGET: &str = DATAPLANE_BUDGET;
    match benches::dataplane::route_mtu(10_000, samples) {
        Err(reason) => t.skip(FIG, BUDGET, reason),
        Ok(mut r) => {
            let (a, b) = (median(&mut r.adapter), median(&mut r.ip_batch));
            let ratio = a.as_secs_f64() / b.as_secs_f64();
            t.budget(
                FIG,
                format!("{ratio:.2} ×"),
                BUDGET,
                ratio <= 1.0,
                format!(
                    "wall clock, same routes, same namespace, samples interleaved: adapter \
                     reconcile (read, plan, {} writes, read back) {} vs ip -batch ({} route \
                     replace lines, process start included) {}; {} routes read back",
                    r.writes,
                    ms(a),
                    r.routes,
                    ms(b),
                    r.verified
                ),
            );
        }
    }
}

/// Builds timed per decoded input in [`scale_costs`].
const BUILDS_PER_DECODE: usize = 5;

/// One fixture's costs per unit: decode per input byte, build per node, one node's resolve, and
/// resolving `sample` nodes spread over the cluster on one solver, per value.
#[derive(Default)]
struct Scale {
    decode_per_mb: f64,
    build_per_node: f64,
    one_node: Duration,
    one_node_values: usize,
    /// Of those values, the learned routes (the rest, links and direct routes, do not grow
    /// with the cluster).
    one_node_learned: usize,
    per_value: f64,
    values: usize,
    /// Resolve all, per value: every node of 200 Sites spread evenly, one solver.
    all_per_value: f64,
    all_values: usize,
    all_nodes: usize,
}

/// One fixture's samples, taken a round at a time (see [`scale_costs`]).
#[derive(Default)]
struct ScaleSamples {
    dec: Vec<Sample>,
    bld: Vec<Sample>,
    one: Vec<Sample>,
    one_values: usize,
    one_learned: usize,
    spread: Vec<Sample>,
    spread_values: usize,
    every: Vec<Sample>,
    every_values: usize,
    every_nodes: usize,
}

impl ScaleSamples {
    fn decode(&mut self, f: &Fixture) -> Decoded {
        let (d, s) = timed(|| decode_text(&f.text));
        self.dec.push(s);
        d
    }

    fn build(&mut self, d: &Decoded) {
        let (topo, s) = timed(|| build(d));
        self.bld.push(s);
        std::hint::black_box(topo);
    }

    /// The `i`-th spread node, a fresh solver on a fresh build (not measured).
    fn one_node(&mut self, f: &Fixture, i: usize) {
        let n = f.spread_node(i, ONE_NODE_SAMPLES);
        let topo = f.fresh_topology();
        let (plan, s) = timed(|| resolve_one(&topo, n));
        self.one_values += plan.value_count();
        self.one_learned += plan
            .routes
            .iter()
            .filter(|r| r.kind != RouteKind::Direct)
            .count();
        self.one.push(s);
    }

    /// `sample` nodes spread over the cluster, one solver.
    fn spread(&mut self, f: &Fixture, sample: usize) {
        let nodes = sample.min(f.topo().nodes.len());
        let (values, s) = timed(|| {
            let mut solver = Solver::new(f.topo(), Settings::default());
            (0..nodes)
                .map(|i| solver.plan(f.spread_node(i, nodes)).value_count())
                .sum()
        });
        self.spread_values = values;
        self.spread.push(s);
    }

    /// Every node of 200 Sites spread evenly, one solver.
    fn every(&mut self, f: &Fixture) {
        let sites = f.every_node_of_spread_sites(200);
        let (values, s) = timed(|| {
            let mut solver = Solver::new(f.topo(), Settings::default());
            sites.iter().map(|n| solver.plan(*n).value_count()).sum()
        });
        self.every_values = values;
        self.every_nodes = sites.len();
        self.every.push(s);
    }

    fn costs(&self, f: &Fixture) -> Scale {
        let mb = f.text.len() as f64 / 1e6;
        Scale {
            all_per_value: medians(&self.every).cpu.as_secs_f64() / self.every_values.max(1) as f64,
            all_values: self.every_values,
            all_nodes: self.every_nodes,
            decode_per_mb: medians(&self.dec).cpu.as_secs_f64() / mb,
            build_per_node: medians(&self.bld).cpu.as_secs_f64()
                / f.topo().nodes.len().max(1) as f64,
            one_node: medians(&self.one).cpu,
            one_node_values: self.one_values / ONE_NODE_SAMPLES,
            one_node_learned: self.one_learned / ONE_NODE_SAMPLES,
            per_value: medians(&self.spread).cpu.as_secs_f64() / self.spread_values.max(1) as f64,
            values: self.spread_values,
        }
    }
}

/// The costs of each fixture, measured side by side: each sample is taken of every fixture in
/// turn, so a change in the machine's load moves both figures of a ratio alike rather than
/// the one measured while it lasts (these machines move by 30–70 % between runs).
fn scale_costs<const N: usize>(
    fixtures: [&Fixture; N],
    samples: usize,
    sample: usize,
) -> [Scale; N] {
    let mut acc: [ScaleSamples; N] = std::array::from_fn(|_| ScaleSamples::default());
    for _ in 0..samples {
        let decoded: Vec<Decoded> = acc
            .iter_mut()
            .zip(fixtures)
            .map(|(a, f)| a.decode(f))
            .collect();
        // A build takes milliseconds, a decode up to a second: several builds per decode,
        // interleaved, so the median of the short standard build is not left to three samples.
        for _ in 0..BUILDS_PER_DECODE {
            for (a, d) in acc.iter_mut().zip(&decoded) {
                a.build(d);
            }
        }
    }
    for i in 0..ONE_NODE_SAMPLES {
        for (a, f) in acc.iter_mut().zip(fixtures) {
            a.one_node(f, i);
        }
    }
    for _ in 0..samples {
        for (a, f) in acc.iter_mut().zip(fixtures) {
            a.spread(f, sample);
        }
    }
    for _ in 0..samples {
        for (a, f) in acc.iter_mut().zip(fixtures) {
            a.every(f);
        }
    }
    std::array::from_fn(|i| match (acc.get(i), fixtures.get(i)) {
        (Some(a), Some(f)) => a.costs(f),
        _ => Scale::default(),
    })
}

/// Hyperscale (13 times the standard cluster) against the standard one, stage by stage, per
/// input byte, node or value, judged at issue 19's budget (≤ 1.3 ×).
fn hyperscale(t: &mut Table, std: &Fixture, hyper: &Fixture, samples: usize) {
    const SAMPLE: usize = 5000;
    let [s, h] = scale_costs([std, hyper], samples, SAMPLE);
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::INFINITY };
    let rows = [
        (
            "decode per input byte",
            ratio(h.decode_per_mb, s.decode_per_mb),
            format!(
                "{:.2} ms/MB ({:.1} MB) vs {:.2} ms/MB ({:.1} MB)",
                h.decode_per_mb * 1e3,
                hyper.text.len() as f64 / 1e6,
                s.decode_per_mb * 1e3,
                std.text.len() as f64 / 1e6
            ),
        ),
        (
            "build per node",
            ratio(h.build_per_node, s.build_per_node),
            format!(
                "{:.2} µs vs {:.2} µs",
                h.build_per_node * 1e6,
                s.build_per_node * 1e6
            ),
        ),
        (
            "resolve one node, per value",
            ratio(
                h.one_node.as_secs_f64() / h.one_node_values.max(1) as f64,
                s.one_node.as_secs_f64() / s.one_node_values.max(1) as f64,
            ),
            format!(
                "{} for {} values ({} learned routes) vs {} for {} values ({} learned routes) \
                 (median of 51 spread nodes, each a fresh solver on a fresh build)",
                ms(h.one_node),
                h.one_node_values,
                h.one_node_learned,
                ms(s.one_node),
                s.one_node_values,
                s.one_node_learned
            ),
        ),
        (
            "resolve all nodes, per value",
            ratio(h.all_per_value, s.all_per_value),
            format!(
                "{:.1} ns ({} values, every node of 200 spread Sites: {} nodes) vs {:.1} ns \
                 ({} values, {} nodes), one solver each",
                h.all_per_value * 1e9,
                h.all_values,
                h.all_nodes,
                s.all_per_value * 1e9,
                s.all_values,
                s.all_nodes
            ),
        ),
        (
            "resolve 5,000 spread nodes, per value",
            ratio(h.per_value, s.per_value),
            format!(
                "{:.1} ns ({} values) vs {:.1} ns ({} values), one solver each",
                h.per_value * 1e9,
                h.values,
                s.per_value * 1e9,
                s.values
            ),
        ),
    ];
    let [decode, build, one_per_value, all, spread] = rows;
    for (what, r, notes) in [decode, build, all] {
        t.budget(
            &format!("{what}, hyperscale-65000 / standard"),
            format!("{r:.2} ×"),
            "≤ 1.3 ×",
            r <= 1.3,
            notes,
        );
    }
    // A node's links and direct routes are its own (about 200 on both clusters); its learned
    // routes grow with the cluster, and cost the most. The same cost per learned route thus
    // reads higher per value on the larger cluster, so one node is judged per learned route
    // (the decision on issue 19, recorded in issue 40), the figure per value shown beside it.
    let per_learned = ratio(
        h.one_node.as_secs_f64() / h.one_node_learned.max(1) as f64,
        s.one_node.as_secs_f64() / s.one_node_learned.max(1) as f64,
    );
    let share = |v: usize, l: usize| l as f64 / v.max(1) as f64;
    let (what, r, notes) = one_per_value;
    t.info(
        &format!("{what}, hyperscale-65000 / standard"),
        format!("{r:.2} ×"),
        notes,
    );
    t.budget(
        "resolve one node, per learned route, hyperscale-65000 / standard",
        format!("{per_learned:.2} ×"),
        "≤ 1.3 ×",
        per_learned <= 1.3,
        format!(
            "learned routes are {:.0} % of a node's values vs {:.0} %: equal cost per learned \
             route reads as {:.2} × per value",
            100.0 * share(h.one_node_values, h.one_node_learned),
            100.0 * share(s.one_node_values, s.one_node_learned),
            share(h.one_node_values, h.one_node_learned)
                / share(s.one_node_values, s.one_node_learned).max(f64::MIN_POSITIVE)
        ),
    );
    // A sparse sample (2 nodes per Site here, 25 on the standard cluster) shares each Site's
    // routes between fewer nodes than a full resolve: information, beside the judged figure.
    let (what, r, notes) = spread;
    t.info(
        &format!("{what}, hyperscale-65000 / standard"),
        format!("{r:.2} ×"),
        format!("{notes}; a partial resolve: each Site's routes shared by 2 nodes, not 25"),
    );
}
