//! `resolve`'s tables: each node's header, links, routes, devices and published values, written
//! as soon as the node is resolved; the diagnostics last.

use super::{Job, stdout};
use crate::output::{TableStyle, bound, diagnostics_table, hops, table};
use anyhow::Result;
use mtu_solver::report::{ExplOut, NodeOut};
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Arc;
use topology_core::diag::Diagnostic;

/// Nodes per chunk: a node's tables reach a hundred kilobytes on a large cluster.
const CHUNK: usize = 4;

/// Writes every node's tables, then the diagnostics; returns the diagnostics.
pub(super) fn write(job: &Job<'_>, style: TableStyle) -> Result<Vec<Diagnostic>> {
    let mut out = stdout();
    let diags = job.stream(
        CHUNK,
        |mut p| node_tables(&p.out(), style),
        |text| Ok(out.write_all(text.as_bytes())?),
    )?;
    out.write_all(diagnostics_table(&diags, style).as_bytes())?;
    out.flush()?;
    Ok(diags)
}

/// One node: a header (wide: one line; narrow: the fabric's bound on a line of its own), then
/// its links, routes (narrow: the first next hop and how many more), devices and published
/// values, and an empty line.
fn node_tables(n: &NodeOut, style: TableStyle) -> String {
    let mut s = String::new();
    let head = format!(
        "NODE {}  site {}  {}{}  fabric {}",
        n.name,
        n.site,
        n.role,
        n.pool
            .as_ref()
            .map(|x| format!(" of {x}"))
            .unwrap_or_default(),
        n.fabric_mtu,
    );
    let fabric_bound = term(&n.fabric_explanation);
    let mss = format!("mss {}/{}", n.mss_ipv4, n.mss_ipv6);
    if style.wide {
        let _ = writeln!(s, "{head} (bound by {fabric_bound})  {mss}");
    } else {
        let _ = writeln!(s, "{head}  {mss}\n  fabric bound by {fabric_bound}");
    }
    links(&mut s, n, style);
    routes(&mut s, n, style);
    devices(&mut s, n, style);
    published(&mut s, n, style);
    s.push('\n');
    s
}

fn links(s: &mut String, n: &NodeOut, style: TableStyle) {
    if n.links.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = n
        .links
        .iter()
        .map(|l| {
            vec![
                l.peer.to_string(),
                l.kind.to_string(),
                l.protocol.to_string(),
                l.mtu.to_string(),
                match &l.explanation {
                    Some(e) => bound(&e.bound.term, &e.bound.source, style),
                    None => String::new(),
                },
            ]
        })
        .collect();
    let headers = ["LINK", "KIND", "PROTOCOL", "MTU", "BOUND BY"];
    s.push_str(&indent(&table(&headers, &rows, style)));
}

fn routes(s: &mut String, n: &NodeOut, style: TableStyle) {
    if n.routes.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> = n
        .routes
        .iter()
        .map(|rt| {
            vec![
                rt.destination.to_string(),
                rt.ty.to_string(),
                rt.kind.to_string(),
                rt.mtu.to_string(),
                hops(&rt.via, style),
                rt.distance.to_string(),
                term(&rt.explanation).to_string(),
            ]
        })
        .collect();
    let headers = ["ROUTE", "TYPE", "KIND", "MTU", "VIA", "DIST", "BOUND BY"];
    s.push_str(&indent(&table(&headers, &rows, style)));
}

fn devices(s: &mut String, n: &NodeOut, style: TableStyle) {
    if n.devices.is_empty() {
        return;
    }
    let rows: Vec<Vec<String>> =
        n.devices
            .iter()
            .map(|d| {
                vec![
                    d.name.as_deref().map(str::to_string).unwrap_or_else(|| {
                        format!("(wg for {})", d.peer.as_deref().unwrap_or("?"))
                    }),
                    d.protocol.to_string(),
                    d.mtu.to_string(),
                    term(&d.explanation).to_string(),
                ]
            })
            .collect();
    let headers = ["DEVICE", "PROTOCOL", "MTU", "SET BY"];
    s.push_str(&indent(&table(&headers, &rows, style)));
}

fn published(s: &mut String, n: &NodeOut, style: TableStyle) {
    let Some(ps) = &n.published else { return };
    let rows: Vec<Vec<String>> = ps
        .iter()
        .map(|p| vec![p.destination.to_string(), p.mtu.to_string()])
        .collect();
    if !rows.is_empty() {
        s.push_str(&indent(&table(&["PUBLISHES", "MTU"], &rows, style)));
    }
}

/// The binding term's short name (`resolve` renders at least the bound term: never empty).
fn term(e: &Option<Arc<ExplOut>>) -> &str {
    e.as_ref().map_or("", |e| &e.bound.term)
}

fn indent(t: &str) -> String {
    t.lines().map(|l| format!("  {l}\n")).collect()
}
