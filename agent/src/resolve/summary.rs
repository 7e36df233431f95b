//! `resolve --summary`: the rollup ([`super::rollup`]) as a screen of tables or a
//! `ResolutionSummary` document; with `--summary=nodes` (or `-o wide`) also one line per node.

use super::rollup::{Finished, NodeFacts, NodeLine, Rollup};
use super::{Job, SummaryMode};
use crate::output::{Format, TableStyle, diagnostics_table, table, write_data};
use anyhow::Result;
use mtu_solver::report::{API_VERSION, DiagOut};
use serde::Serialize;
use std::fmt::Write as _;
use topology_core::diag::Diagnostic;

/// Nodes per chunk: a node's facts are a few values per route.
const CHUNK: usize = 32;

/// Rows of a narrow table before "and N more".
const NARROW_ROWS: usize = 8;

/// Folds every node into the rollup and prints it; returns the diagnostics.
pub(super) fn write(job: &Job<'_>, mode: SummaryMode, format: Format) -> Result<Vec<Diagnostic>> {
    let wide = matches!(format, Format::Table(s) if s.wide);
    let keep_lines = mode == SummaryMode::Nodes || wide;
    let mut rollup = Rollup::default();
    let mut lines: Vec<NodeLine> = Vec::new();
    let diags = job.stream(
        CHUNK,
        |mut p| {
            let (topo, r, plan) = p.parts();
            NodeFacts::of(topo, r, plan)
        },
        |facts| {
            rollup.add(&facts);
            if keep_lines {
                lines.push(facts.line);
            }
            Ok(())
        },
    )?;
    let rollup = rollup.finish(&diags);
    match format {
        Format::Table(style) => {
            let mut s = rollup_tables(&rollup, style);
            if keep_lines {
                s.push('\n');
                s.push_str(&node_lines(&lines, style));
                s.push('\n');
                s.push_str(&diagnostics_table(&diags, style));
            }
            crate::common::write_text(&s)?;
        }
        Format::Data(f) => {
            let doc = Doc {
                api_version: API_VERSION,
                kind: "ResolutionSummary",
                rollup: &rollup,
                nodes: keep_lines.then_some(lines),
                diagnostics: diags.iter().map(DiagOut::from).collect(),
            };
            write_data(&doc, f)?;
        }
    }
    Ok(diags)
}

/// The `ResolutionSummary` document.
#[derive(Serialize)]
struct Doc<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    #[serde(flatten)]
    rollup: &'a Finished,
    #[serde(skip_serializing_if = "Option::is_none")]
    nodes: Option<Vec<NodeLine>>,
    diagnostics: Vec<DiagOut>,
}

/// The rollup for a screen: counts, the distinct MTUs, the lowest values, the IPv6 floor, the
/// objects that bind the most values, the diagnostics by code.
fn rollup_tables(r: &Finished, style: TableStyle) -> String {
    let mut s = String::new();
    let c = &r.counts;
    let _ = writeln!(
        s,
        "NODES        {} ({} workers, {} gateways) in {}, {}",
        thousands(c.nodes),
        thousands(c.workers),
        thousands(c.gateways),
        counted(c.sites, "Site", "Sites"),
        counted(c.pools, "pool", "pools"),
    );
    let _ = writeln!(
        s,
        "VALUES       {}, {}, {}",
        counted(c.links, "link", "links"),
        counted(c.routes, "route", "routes"),
        counted(c.devices, "device", "devices"),
    );
    lowest_lines(&mut s, r, style);
    s.push('\n');
    s.push_str(&mtu_table(r, style));
    s.push('\n');
    s.push_str(&binder_table(r, style));
    s.push('\n');
    s.push_str(&diagnostic_counts(r, style));
    s
}

fn lowest_lines(s: &mut String, r: &Finished, style: TableStyle) {
    match &r.lowest_fabric {
        Some(l) => {
            let _ = writeln!(
                s,
                "LOWEST       fabric {} on {}: {}",
                l.mtu,
                counted(l.nodes, "node", "nodes"),
                examples(&l.examples, l.nodes),
            );
        }
        None => s.push_str("LOWEST       no node\n"),
    }
    if let Some(l) = &r.lowest_route {
        // A route example is long: narrow tables name one.
        let shown = if style.wide { l.examples.len() } else { 1 };
        let _ = writeln!(
            s,
            "             route {}: {} on {}: {}",
            l.mtu,
            counted(l.values, "value", "values"),
            counted(l.nodes, "node", "nodes"),
            examples(&l.examples[..shown.min(l.examples.len())], l.nodes),
        );
    }
    let f = &r.ipv6_floor;
    if f.nodes == 0 {
        let _ = writeln!(s, "IPV6 FLOOR   no node's fabric at or below {}", f.mtu);
    } else {
        let names: Vec<String> = f.examples.iter().map(|n| n.to_string()).collect();
        let _ = writeln!(
            s,
            "IPV6 FLOOR   {} with a fabric at or below {}: {}",
            counted(f.nodes, "node", "nodes"),
            f.mtu,
            examples(&names, f.nodes),
        );
    }
}

/// Every distinct MTU (narrow: the lowest few) with the nodes and values that carry it.
fn mtu_table(r: &Finished, style: TableStyle) -> String {
    let shown = if style.wide {
        r.mtus.len()
    } else {
        NARROW_ROWS
    };
    let rows: Vec<Vec<String>> = r
        .mtus
        .iter()
        .take(shown)
        .map(|m| {
            vec![
                m.mtu.to_string(),
                thousands(m.fabric_nodes),
                thousands(m.link_values),
                thousands(m.route_values),
                thousands(m.route_nodes),
            ]
        })
        .collect();
    let headers = ["MTU", "FABRIC NODES", "LINKS", "ROUTES", "ROUTE NODES"];
    let mut s = table(&headers, &rows, style);
    more(&mut s, r.mtus.len(), shown, "MTUs");
    s
}

/// The objects that bind the most values (narrow: the first few).
fn binder_table(r: &Finished, style: TableStyle) -> String {
    if r.binders.is_empty() {
        return "no value is bound by an object: every value is the underlay's\n".into();
    }
    let shown = if style.wide {
        r.binders.len()
    } else {
        NARROW_ROWS
    };
    let rows: Vec<Vec<String>> = r
        .binders
        .iter()
        .take(shown)
        .map(|b| {
            vec![
                b.name.clone(),
                thousands(b.fabric_nodes),
                thousands(b.link_values),
                thousands(b.route_values),
                thousands(b.device_values),
                thousands(b.nodes),
            ]
        })
        .collect();
    let headers = [
        "BOUND BY",
        "FABRIC NODES",
        "LINKS",
        "ROUTES",
        "DEVICES",
        "NODES",
    ];
    let mut s = table(&headers, &rows, style);
    more(&mut s, r.binders.len(), shown, "binding objects");
    s
}

fn diagnostic_counts(r: &Finished, style: TableStyle) -> String {
    let d = &r.diagnostic_counts;
    if d.codes.is_empty() {
        return "no diagnostics\n".into();
    }
    let mut s = format!(
        "DIAGNOSTICS  {}, {}, {} (-o wide or --summary=nodes lists them)\n",
        counted(d.error, "error", "errors"),
        counted(d.warning, "warning", "warnings"),
        counted(d.note, "note", "notes"),
    );
    let rows: Vec<Vec<String>> = d
        .codes
        .iter()
        .map(|c| vec![c.severity.into(), c.code.into(), thousands(c.count)])
        .collect();
    s.push_str(&table(&["SEVERITY", "CODE", "COUNT"], &rows, style));
    s
}

/// One line per node: narrow, its name, Site, role, fabric and what binds it, its lowest route
/// and links; wide, also its pool and the lowest route's destination.
fn node_lines(lines: &[NodeLine], style: TableStyle) -> String {
    let rows: Vec<Vec<String>> = lines
        .iter()
        .map(|n| {
            let lowest = n
                .lowest_route_mtu
                .map(|m| m.to_string())
                .unwrap_or_else(|| "-".into());
            let mut row = vec![n.name.to_string(), n.site.to_string(), n.role.to_string()];
            if style.wide {
                row.push(n.pool.as_deref().unwrap_or("-").to_string());
            }
            row.extend([n.fabric_mtu.to_string(), n.fabric_bound.clone(), lowest]);
            if style.wide {
                row.push(
                    n.lowest_route_destination
                        .clone()
                        .unwrap_or_else(|| "-".into()),
                );
            }
            row.push(n.links.to_string());
            row
        })
        .collect();
    let headers: &[&str] = if style.wide {
        &[
            "NODE",
            "SITE",
            "ROLE",
            "POOL",
            "FABRIC",
            "BOUND BY",
            "LOWEST ROUTE",
            "TO",
            "LINKS",
        ]
    } else {
        &[
            "NODE",
            "SITE",
            "ROLE",
            "FABRIC",
            "BOUND BY",
            "LOWEST ROUTE",
            "LINKS",
        ]
    };
    table(headers, &rows, style)
}

/// `… and 12 more MTUs (-o wide lists every one)` under a table cut short.
fn more(s: &mut String, total: usize, shown: usize, what: &str) {
    if total > shown {
        let _ = writeln!(
            s,
            "… and {} more {what} (-o wide lists every one)",
            thousands(total - shown)
        );
    }
}

/// The first examples, and how many more there are.
fn examples(shown: &[String], total: usize) -> String {
    let mut s = shown.join(", ");
    if total > shown.len() {
        let _ = write!(s, " and {} more", thousands(total - shown.len()));
    }
    s
}

/// `1 node`, `4,506 nodes`.
fn counted(n: usize, one: &str, many: &str) -> String {
    format!("{} {}", thousands(n), if n == 1 { one } else { many })
}

/// `286459` as `286,459`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::thousands;

    #[test]
    fn thousands_are_grouped() {
        for (n, text) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (286_459, "286,459"),
            (1_234_567, "1,234,567"),
        ] {
            assert_eq!(thousands(n), text);
        }
    }
}
