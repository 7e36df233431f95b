//! Hostile input through the binary: every corpus file (and a few generated ones: a 10 MB
//! string, random garbage, a transit chain with more forwarding paths than a `u64` counts)
//! gives exit 2 with a one-line reason, or a result with the right diagnostics (code, object,
//! field, file:line) or answer, within 5 seconds, and never a panic: exit 1 when an error
//! diagnostic fails the command (the default `--fail-on error`), exit 0 otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_unbounded-mtu")
}

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run(file: &Path) -> Outcome {
    run_command(&["resolve", "-o", "json"], file)
}

/// Runs `args -f file` under the time bound, with the checks of every hostile case.
fn run_command(args: &[&str], file: &Path) -> Outcome {
    let start = Instant::now();
    let mut child = Command::new(bin())
        .args(args)
        .arg("-f")
        .arg(file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Both pipes are drained while the child runs: a result larger than a pipe's buffer would
    // otherwise block the child until the time bound.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        // The acceptance bound is 5 s for the release binary; unoptimised test builds get more.
        let limit = if cfg!(debug_assertions) { 30 } else { 5 };
        assert!(
            start.elapsed() < Duration::from_secs(limit),
            "{}: still running after {limit} s",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    let o = Outcome {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&stdout.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&stderr.join().unwrap()).into_owned(),
    };
    assert!(
        !o.stderr.contains("panicked"),
        "{}: panic: {}",
        file.display(),
        o.stderr
    );
    assert!(
        (0..=2).contains(&o.code),
        "{}: exit {} ({})",
        file.display(),
        o.code,
        o.stderr
    );
    if o.code == 1 {
        // Diagnostics met --fail-on (errors, by default): the result is still printed in full.
        assert!(
            o.stderr.contains("--fail-on"),
            "{}: exit 1 without saying why: {}",
            file.display(),
            o.stderr
        );
        assert!(
            !o.stdout.is_empty(),
            "{}: exit 1 printed nothing",
            file.display()
        );
    }
    if o.code == 2 {
        assert_eq!(
            o.stderr.trim().lines().count(),
            1,
            "{}: the reason must be one line: {}",
            file.display(),
            o.stderr
        );
        assert!(o.stdout.is_empty());
    }
    o
}

fn diags(o: &Outcome) -> Vec<serde_json::Value> {
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    v["diagnostics"].as_array().unwrap().clone()
}

/// Asserts a diagnostic with these fields exists (`source` ends `file:line`, or
/// `file:line:column` where a point matters).
fn has(o: &Outcome, code: &str, object: &str, field: &str, line: Option<u32>) {
    let ds = diags(o);
    let hit = ds.iter().any(|d| {
        d["code"] == code
            && d["object"] == object
            && d["field"] == field
            && line.is_none_or(|l| {
                d["source"].as_str().is_some_and(|s| {
                    let at_line = s.trim_end_matches(|c: char| c.is_ascii_digit());
                    s.ends_with(&format!(":{l}"))
                        || (at_line.ends_with(':')
                            && at_line.trim_end_matches(':').ends_with(&format!(":{l}")))
                })
            })
    });
    assert!(hit, "no {code} {object} {field} line {line:?} in {ds:#?}");
}

fn corpus(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/hostile")
        .join(name)
}

#[test]
fn every_corpus_file_is_handled() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/hostile");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        run(&e.unwrap().path());
        n += 1;
    }
    assert!(n >= 20, "the corpus needs at least 20 files, has {n}");
}

#[test]
fn exit_2_with_file_and_line_when_nothing_decodes() {
    for (f, needle) in [
        ("01-bad-yaml.yaml", "01-bad-yaml.yaml:7"),
        ("04-alias-bomb.yaml", "alias"),
        ("05-deep-nesting.yaml", "05-deep-nesting.yaml:"),
        ("06-deep-flow-map.json", "06-deep-flow-map.json:1"),
        ("11-empty.yaml", "no objects"),
        ("12-binary-garbage.yaml", "UTF-8"),
        ("13-not-an-object.yaml", "must be an object"),
        ("17-tabs-and-bom.yaml", "17-tabs-and-bom.yaml:4"),
        ("22-unknown-anchor.yaml", "22-unknown-anchor.yaml:4"),
    ] {
        let o = run(&corpus(f));
        assert_eq!(o.code, 2, "{f}");
        assert!(o.stderr.contains(needle), "{f}: {}", o.stderr);
    }
}

#[test]
fn diagnostics_name_object_field_and_line() {
    let o = run(&corpus("02-wrong-types.yaml"));
    has(&o, "E-FIELD-TYPE", "Site/a", "spec.nodeCidrs", Some(6));
    has(&o, "E-FIELD-TYPE", "Site/a", "spec.tunnelMTU", Some(7));
    has(
        &o,
        "E-FIELD-TYPE",
        "Site/a",
        "spec.manageCniPlugin",
        Some(8),
    );
    has(&o, "E-FIELD-TYPE", "SitePeering/p", "spec.sites", Some(16));
    let o = run(&corpus("03-huge-numbers.yaml"));
    has(&o, "E-CAP-RANGE", "Site/a", "spec.tunnelMTU", Some(7));
    has(&o, "E-CAP-RANGE", "Site/b", "spec.tunnelMTU", Some(15));
    has(
        &o,
        "E-UNDERLAY-RANGE",
        "Node/n1",
        "metadata.annotations.mtu.unbounded-cloud.io/underlay-mtu",
        Some(22),
    );
    let o = run(&corpus("07-cycle-self-peering.yaml"));
    has(
        &o,
        "W-DUPLICATE-MEMBER",
        "GatewayPoolPeering/loop",
        "spec.gatewayPools[1]",
        None,
    );
    has(
        &o,
        "W-TOO-FEW-MEMBERS",
        "SitePeering/self",
        "spec.sites",
        None,
    );
    let o = run(&corpus("08-dangling-references.yaml"));
    has(
        &o,
        "W-MISSING-SITE",
        "SitePeering/ghosts",
        "spec.sites[0]",
        Some(4),
    );
    has(
        &o,
        "W-MISSING-POOL",
        "GatewayPoolPeering/ghost-pools",
        "spec.gatewayPools[1]",
        Some(14),
    );
    let o = run(&corpus("09-duplicate-names.yaml"));
    has(&o, "E-DUPLICATE", "Site/twin", "metadata.name", Some(1));
    has(&o, "E-DUPLICATE", "Node/n", "metadata.name", None);
    let o = run(&corpus("10-overlapping-cidrs.yaml"));
    has(&o, "E-CIDR-OVERLAP", "Site/b", "spec.nodeCidrs", None);
    has(
        &o,
        "E-CIDR-OVERLAP",
        "Site/b",
        "spec.podCidrAssignments",
        None,
    );
    let o = run(&corpus("14-bad-cidrs.yaml"));
    has(&o, "E-CIDR", "Site/a", "spec.nodeCidrs[0]", Some(5));
    has(&o, "E-CIDR", "Site/a", "spec.nodeCidrs[1]", Some(5));
    has(
        &o,
        "W-CIDR-HOST-BITS",
        "Site/a",
        "spec.nodeCidrs[3]",
        Some(5),
    );
    has(&o, "E-CIDR", "Site/a", "spec.localCidrs[0]", Some(6));
    let o = run(&corpus("15-unknown-protocol.yaml"));
    has(&o, "E-PROTOCOL", "Site/a", "spec.tunnelProtocol", Some(4));
    let o = run(&corpus("18-bad-annotations.yaml"));
    has(
        &o,
        "E-UNDERLAY-RANGE",
        "Node/n",
        "metadata.annotations.mtu.unbounded-cloud.io/underlay-mtu",
        Some(11),
    );
    has(
        &o,
        "E-FIELD-TYPE",
        "GatewayPoolNode/gpn",
        "metadata.annotations.mtu.unbounded-cloud.io/forwarding-mtus",
        Some(20),
    );
    let o = run(&corpus("20-invalid-caps-everywhere.yaml"));
    has(&o, "E-CAP-RANGE", "Site/a", "spec.tunnelMTU", Some(4));
    has(
        &o,
        "E-FIELD-TYPE",
        "SitePeering/ab",
        "spec.tunnelMTU",
        Some(14),
    );
    // Fail closed: the invalid caps count as 576.
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    for n in v["nodes"].as_array().unwrap() {
        assert_eq!(n["fabricMTU"], 576, "{n}");
    }
    let o = run(&corpus("21-broken-middle-document.yaml"));
    let ds = diags(&o);
    assert_eq!(
        ds.iter().filter(|d| d["code"] == "E-DECODE").count(),
        1,
        "{ds:#?}"
    );
    // Named by a lenient scan of the broken text, located at the parser's point.
    has(&o, "E-DECODE", "Site/broken", "", Some(9));
}

#[test]
fn generated_monsters() {
    let dir = std::env::temp_dir().join(format!("unbounded-mtu-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // A 10 MB string in a name and in a CIDR list.
    let big = "x".repeat(10 * 1024 * 1024);
    let f = dir.join("ten-mb-string.yaml");
    std::fs::write(
        &f,
        format!(
            "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata:\n  name: big\nspec:\n  nodeCidrs: [\"{big}\"]\n  tunnelProtocol: \"{big}\"\n"
        ),
    )
    .unwrap();
    let o = run(&f);
    assert_eq!(o.code, 1, "errors fail the command: {}", o.stderr);
    has(&o, "E-CIDR", "Site/big", "spec.nodeCidrs[0]", Some(6));
    has(&o, "E-PROTOCOL", "Site/big", "spec.tunnelProtocol", Some(7));
    // A path-mtu annotation of 60,000 entries, every one about a node that does not exist but
    // one, each peer named twice: read within the bound (a lookup per entry, not a scan), one
    // warning per peer.
    let entries: Vec<String> = (0..30_000)
        .flat_map(|i| [format!("ghost-{i}=1400"), format!("ghost-{i}=1300")])
        .chain(["b=1400".to_string(), "b=1350".to_string()])
        .collect();
    let f = dir.join("long-path-mtu.yaml");
    std::fs::write(
        &f,
        format!(
            "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata: {{name: s}}\nspec: {{nodeCidrs: [10.0.0.0/24], podCidrAssignments: [{{cidrBlocks: [10.9.0.0/16]}}]}}\n---\napiVersion: v1\nkind: Node\nmetadata:\n  name: a\n  annotations:\n    mtu.unbounded-cloud.io/path-mtu: \"{}\"\nspec: {{podCIDR: 10.9.0.0/24}}\nstatus: {{addresses: [{{type: InternalIP, address: 10.0.0.1}}]}}\n---\napiVersion: v1\nkind: Node\nmetadata: {{name: b}}\nspec: {{podCIDR: 10.9.1.0/24}}\nstatus: {{addresses: [{{type: InternalIP, address: 10.0.0.2}}]}}\n",
            entries.join(",")
        ),
    )
    .unwrap();
    let o = run(&f);
    assert_eq!(o.code, 0, "warnings do not fail the command: {}", o.stderr);
    has(
        &o,
        "W-PATH-MTU-PEER",
        "Node/a",
        "metadata.annotations.mtu.unbounded-cloud.io/path-mtu",
        Some(11),
    );
    assert_eq!(
        diags(&o)
            .iter()
            .filter(|d| d["code"] == "W-PATH-MTU-PEER")
            .count(),
        30_000,
        "one warning per peer that does not exist"
    );
    // Pseudo-random binary garbage, several seeds.
    let mut x: u64 = 0x9e3779b97f4a7c15;
    for i in 0..5 {
        let bytes: Vec<u8> = (0..200_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        let f = dir.join(format!("garbage-{i}.yaml"));
        std::fs::write(&f, bytes).unwrap();
        let o = run(&f);
        assert_eq!(o.code, 2);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A transit chain of `pools` External pools with `k` gateways each, every pool's gateways in
/// their own worker-less Site, consecutive pools peered; Site `first` (worker `w-first`) is
/// assigned to the first pool and Site `last` (worker `w-last`) to the last. Every gateway
/// selects every gateway of the next pool, so `w-first` has `k^pools` paths to `last`.
fn transit_chain(pools: usize, k: usize) -> String {
    use std::fmt::Write as _;
    const API: &str = "apiVersion: net.unbounded-cloud.io/v1alpha1";
    let mut out = String::new();
    // Site index `i`: node CIDR 10.1.<i>.0/24, pod block 10.<100 + i / 128>.<(i % 128) * 2>.0/23;
    // its node `n` has the `n`-th /26 of the block.
    let site = |out: &mut String, name: &str, i: usize| {
        let _ = write!(
            out,
            "---\n{API}\nkind: Site\nmetadata: {{name: {name}}}\nspec: {{nodeCidrs: [10.1.{i}.0/24], podCidrAssignments: [{{cidrBlocks: [10.{}.{}.0/23]}}]}}\n",
            100 + i / 128,
            (i % 128) * 2
        );
    };
    let node = |out: &mut String,
                name: &str,
                site: &str,
                i: usize,
                n: usize,
                pool: Option<&str>| {
        let label = pool.map(|p| format!(", pool: {p}")).unwrap_or_default();
        let external = pool
            .map(|_| format!(", {{type: ExternalIP, address: 198.18.{i}.{}}}", n + 1))
            .unwrap_or_default();
        let _ = write!(
            out,
            "---\napiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{net.unbounded-cloud.io/site: {site}{label}}}}}\nspec: {{podCIDRs: [10.{}.{}.{}/26]}}\nstatus: {{addresses: [{{type: InternalIP, address: 10.1.{i}.{}}}{external}]}}\n",
            100 + i / 128,
            (i % 128) * 2,
            (n % 4) * 64,
            n + 1
        );
    };
    site(&mut out, "first", 0);
    node(&mut out, "w-first", "first", 0, 0, None);
    site(&mut out, "last", pools + 1);
    node(&mut out, "w-last", "last", pools + 1, 0, None);
    for j in 0..pools {
        let (s, p) = (format!("s{j:03}"), format!("p{j:03}"));
        site(&mut out, &s, j + 1);
        let _ = write!(
            out,
            "---\n{API}\nkind: GatewayPool\nmetadata: {{name: {p}}}\nspec: {{type: External, nodeSelector: {{pool: {p}}}}}\n"
        );
        for n in 0..k {
            node(&mut out, &format!("g{j:03}-{n}"), &s, j + 1, n, Some(&p));
        }
        if j + 1 < pools {
            let _ = write!(
                out,
                "---\n{API}\nkind: GatewayPoolPeering\nmetadata: {{name: link-{j:03}}}\nspec: {{gatewayPools: [{p}, p{:03}]}}\n",
                j + 1
            );
        }
    }
    for (s, p) in [("first", 0), ("last", pools - 1)] {
        let _ = write!(
            out,
            "---\n{API}\nkind: SiteGatewayPoolAssignment\nmetadata: {{name: {s}}}\nspec: {{sites: [{s}], gatewayPools: [p{p:03}]}}\n"
        );
    }
    out
}

#[test]
fn explain_counts_the_paths_of_a_long_transit_chain() {
    // 100 pools of 3 gateways: 3^100 forwarding paths from one end to the other. Walking them
    // never ends; counting them is one state per gateway.
    let dir = std::env::temp_dir().join(format!("unbounded-mtu-chain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("chain-100x3.yaml");
    std::fs::write(&f, transit_chain(100, 3)).unwrap();
    let o = run_command(&["explain", "-o", "json", "--node", "w-first"], &f);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let v: serde_json::Value = serde_json::from_str(&o.stdout).unwrap();
    let routes: Vec<&serde_json::Value> = v["values"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| !x["paths"].is_null())
        .collect();
    // The far Site's node CIDR and pod block.
    assert_eq!(routes.len(), 2, "{routes:#?}");
    for r in routes {
        let paths = &r["paths"];
        assert_eq!(paths["total"].as_u64(), Some(u64::MAX), "{r}");
        assert_eq!(paths["saturated"], true, "{r}");
        let shown = paths["shown"].as_array().unwrap();
        assert_eq!(shown.len(), 4, "{r}");
        // Hops: those of the shown paths and the binding ones (the three first hops, bound by
        // the worker's own underlay); the other 788 of the 897 distinct hops are counted.
        let hops = r["hops"].as_array().unwrap();
        assert_eq!(hops.len(), 109, "{r}");
        assert_eq!(r["hopsNotShown"], 788, "{r}");
        let binding: Vec<&str> = hops
            .iter()
            .filter(|h| h["binds"] == true)
            .map(|h| h["to"].as_str().unwrap())
            .collect();
        assert_eq!(binding, ["g000-0", "g000-1", "g000-2"], "{r}");
        for p in shown {
            let p = p.as_str().unwrap();
            // The worker, 100 gateways, the destination Site.
            assert_eq!(p.split(" -> ").count(), 102, "{p}");
            assert!(
                p.starts_with("w-first@first -> g000-0 ") && p.ends_with("-> Site last"),
                "{p}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The upstream documentation examples (verbatim, hand-written fragments of a real cluster, not
/// all valid) do not crash the command: they name three Nodes, none of them in a Site, so the
/// command refuses to print an empty result that would read as a healthy cluster, and says why
/// on one line (topology-core's `unknown_fields` checks their diagnostics one by one).
#[test]
fn upstream_documentation_examples_are_refused_with_the_reason() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../topology-core/tests/fixtures/upstream-docs");
    let o = run(&dir);
    assert_eq!(o.code, 2, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("3 Nodes, none in a Site (the first: Node/node-001 at ")
            && o.stderr
                .contains("custom-resources-05.yaml:21): see W-NO-SITE"),
        "{}",
        o.stderr
    );
}
