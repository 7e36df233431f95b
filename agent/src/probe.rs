//! `unbounded-mtu probe`: one node's plan checked on the wire, link by link. What to probe and
//! how results are judged live in `mtu_solver::probe`; the links are probed by `prober.rs`, which
//! the agent's background probes share.

use crate::cli::ProbeFailOn;
use crate::common::{self, ExitError, counted, usage};
use crate::output::{Format, TableStyle, diagnostics_table, table, write_data};
use crate::prober;
use crate::settings;
use anyhow::{Result, bail};
use mtu_solver::probe::{ProbeReport, Verdict};
use mtu_solver::resolver::Resolver;
use topology_core::diag::Severity;

/// Runs `probe`.
pub fn run(args: &settings::Probe) -> Result<()> {
    let decoded = common::load(&args.offline.input)?;
    let resolver = Resolver::new(decoded, args.offline.solver.clone());
    common::some_resolved(resolver.topology())?;
    let mut targets = resolver
        .probe_targets(&args.node)
        .map_err(|e| usage(e.to_string()))?;
    if !args.peers.is_empty() {
        for p in &args.peers {
            if !targets.iter().any(|t| &*t.peer == p) {
                let peers: Vec<&str> = targets.iter().map(|t| &*t.peer).collect();
                bail!(usage(format!(
                    "--peer {p}: node {} has no link to it (its peers: {})",
                    args.node,
                    if peers.is_empty() {
                        "none".to_string()
                    } else {
                        peers.join(", ")
                    }
                )));
            }
        }
        targets.retain(|t| args.peers.iter().any(|p| **p == *t.peer));
    }
    if !args.elsewhere {
        this_host_is(resolver.topology(), &args.node)?;
    }
    let links = prober::probe_links(&targets, &args.run).map_err(|e| usage(e.to_string()))?;
    let diags = resolver.input_diagnostics();
    let report = ProbeReport::new(args.node.as_str().into(), links, &diags);
    match args.format {
        Format::Table(style) => {
            let mut text = render_table(&report, style);
            if !diags.is_empty() {
                text.push('\n');
                text.push_str(&diagnostics_table(&diags, style));
            }
            common::write_text(&text)?
        }
        Format::Data(f) => write_data(&report, f)?,
    }
    fail_on(&args.fail_on, &report, &diags)
}

/// Exit 2 unless this host holds one of node `name`'s addresses: probes sent from elsewhere
/// measure another host's paths. (With `--netns` the namespace stands for the node.)
fn this_host_is(topo: &topology_core::model::Topology, name: &str) -> Result<()> {
    let node = topo
        .find_node(name)
        .map(|id| topo.node(id))
        .map_err(|e| usage(e.to_string()))?;
    let theirs: Vec<std::net::IpAddr> = node
        .internal_ips
        .iter()
        .chain(node.external_ips.iter())
        .copied()
        .collect();
    if theirs.is_empty() {
        return Ok(());
    }
    let local = probe_linux::local_addresses().map_err(|e| usage(e.to_string()))?;
    if theirs.iter().any(|a| local.contains(a)) {
        return Ok(());
    }
    let listed: Vec<String> = theirs.iter().map(ToString::to_string).collect();
    bail!(usage(format!(
        "this host is not {name} (no local address {}): run on {name}, or pass --netns",
        listed.join(", ")
    )))
}

/// The table: one line per link.
fn render_table(r: &ProbeReport, style: TableStyle) -> String {
    let opt = |v: Option<u32>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
    let rows: Vec<Vec<String>> = r
        .links
        .iter()
        .map(|l| {
            vec![
                l.peer.to_string(),
                l.address.map_or_else(|| "-".to_string(), |a| a.to_string()),
                l.planned_underlay.to_string(),
                opt(l.probed_underlay),
                l.link_mtu.to_string(),
                opt(l.probed_link_mtu),
                l.verdict.to_string(),
                l.contradicts.clone().unwrap_or_default(),
            ]
        })
        .collect();
    let mut s = format!(
        "node {}: {}\n",
        r.node,
        counted(r.links.len(), "link", "links")
    );
    s.push_str(&table(
        &[
            "PEER",
            "ADDRESS",
            "PLANNED-UNDERLAY",
            "PROBED-UNDERLAY",
            "LINK-MTU",
            "PROBED-LINK-MTU",
            "VERDICT",
            "CONTRADICTS",
        ],
        &rows,
        style,
    ));
    s
}

/// Exit 1 when a `--fail-on` condition holds.
fn fail_on(
    wanted: &[ProbeFailOn],
    r: &ProbeReport,
    diags: &[topology_core::diag::Diagnostic],
) -> Result<()> {
    let mut found = Vec::new();
    for w in wanted {
        let n = match w {
            ProbeFailOn::BlackHole => r.count(Verdict::BlackHole),
            ProbeFailOn::Unreachable => r.count(Verdict::Unreachable),
            ProbeFailOn::Error => diags
                .iter()
                .filter(|d| d.severity <= Severity::Error)
                .count(),
            ProbeFailOn::Warning => diags
                .iter()
                .filter(|d| d.severity <= Severity::Warning)
                .count(),
            ProbeFailOn::None => 0,
        };
        if n > 0 {
            let what = match w {
                ProbeFailOn::BlackHole => counted(n, "black hole", "black holes"),
                ProbeFailOn::Unreachable => counted(n, "unreachable peer", "unreachable peers"),
                ProbeFailOn::Error => counted(n, "error diagnostic", "error diagnostics"),
                ProbeFailOn::Warning => counted(n, "diagnostic", "diagnostics"),
                ProbeFailOn::None => continue,
            };
            found.push(what);
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    bail!(ExitError {
        code: 1,
        message: format!("{} (--fail-on)", found.join(", ")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mtu_solver::probe::{LinkProbe, Verdict};

    fn link(peer: &str, probed: Option<u32>, verdict: Verdict) -> LinkProbe {
        LinkProbe {
            peer: peer.into(),
            address: "10.2.0.1".parse().ok(),
            planned_underlay: 1500,
            probed_underlay: probed,
            link_mtu: 1450,
            probed_link_mtu: None,
            verdict,
            contradicts: (verdict == Verdict::BlackHole)
                .then(|| "underlay of a 1500 (default)".to_string()),
            probes: 3,
        }
    }

    #[test]
    fn the_table_has_a_line_per_link_and_exit_1_follows_fail_on() {
        let r = ProbeReport::new(
            "a".into(),
            vec![
                link("c", None, Verdict::Unreachable),
                link("b", Some(1400), Verdict::BlackHole),
            ],
            &[],
        );
        let t = render_table(&r, TableStyle::default());
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "node a: 2 links");
        assert!(lines[1].starts_with("PEER"), "{t}");
        assert!(
            lines[2].starts_with("b ")
                && lines[2].contains("1400")
                && lines[2].ends_with("black-hole   underlay of a 1500 (default)"),
            "{t}"
        );
        assert!(
            lines[3].starts_with("c ") && lines[3].contains("unreachable"),
            "{t}"
        );
        assert!(fail_on(&[], &r, &[]).is_ok());
        let e = fail_on(&[ProbeFailOn::BlackHole, ProbeFailOn::Unreachable], &r, &[])
            .expect_err("exit 1");
        let x = e.downcast_ref::<ExitError>().expect("an exit status");
        assert_eq!(x.code, 1);
        assert_eq!(x.message, "1 black hole, 1 unreachable peer (--fail-on)");
        assert!(fail_on(&[ProbeFailOn::Error], &r, &[]).is_ok());
    }
}
