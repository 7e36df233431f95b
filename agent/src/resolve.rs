//! `unbounded-mtu resolve`.

use crate::cli::{ExplainLevel, ResolveArgs};
use crate::common;
use crate::output::{Format, TableStyle, bound, diagnostics_table, hops, table, write_data};
use anyhow::Result;
use mtu_solver::report::{self, Renderer};
use mtu_solver::{NodePlan, Solver};
use serde::Serialize;
use std::fmt::Write as _;
use topology_core::diag::{Diagnostic, sort_diagnostics};
use topology_core::ids::NodeId;

/// Runs `resolve`.
pub fn run(args: &ResolveArgs) -> Result<()> {
    let selector = common::selector(&args.select)?;
    let decoded = common::load(&args.common)?;
    let topo = common::topology(&decoded)?;
    let selected: Vec<NodeId> = common::select(&topo, &selector)?;
    let mut solver = Solver::new(&topo, crate::settings::offline(&args.common));
    let plans: Vec<NodePlan> = selected.iter().map(|n| solver.plan(*n)).collect();
    let mut diags: Vec<Diagnostic> = topo.diagnostics.clone();
    for p in &plans {
        diags.extend(p.diagnostics.iter().cloned());
    }
    sort_diagnostics(&mut diags);
    let mut r = Renderer::new(&solver, args.explain == ExplainLevel::Full);
    match (crate::settings::format(&args.out), args.summary) {
        (Format::Table(style), false) => {
            common::write_text(&render_table(&solver, &mut r, &plans, &diags, style))?
        }
        (Format::Table(style), true) => {
            let doc = summary(&solver, &mut r, &plans, &diags);
            common::write_text(&summary_table(&doc, &diags, style))?
        }
        (Format::Data(f), false) => {
            let doc = report::resolve_out(&topo, &mut r, &plans, &diags);
            write_data(&doc, f)?;
        }
        (Format::Data(f), true) => write_data(&summary(&solver, &mut r, &plans, &diags), f)?,
    }
    common::fail_on(args.fail.fail_on, &diags)
}

/// One node of `resolve --summary`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct SummaryNode<'a> {
    name: &'a str,
    site: &'a str,
    role: &'static str,
    pool: Option<&'a str>,
    #[serde(rename = "fabricMTU")]
    fabric_mtu: u32,
    /// The term that binds the fabric (`auto`, `Site/A spec.tunnelMTU`, ...).
    fabric_bound: String,
    /// The lowest route MTU and its destination (null without routes).
    #[serde(rename = "lowestRouteMTU")]
    lowest_route_mtu: Option<u32>,
    lowest_route_destination: Option<String>,
    links: usize,
}

/// The `resolve --summary` document.
#[derive(Serialize)]
struct SummaryDoc<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    kind: &'static str,
    nodes: Vec<SummaryNode<'a>>,
    diagnostics: Vec<report::DiagOut>,
}

fn summary<'a>(
    solver: &'a Solver<'_>,
    r: &mut Renderer<'_, '_>,
    plans: &[NodePlan],
    diags: &'a [Diagnostic],
) -> SummaryDoc<'a> {
    let topo = solver.topo();
    let nodes = plans
        .iter()
        .map(|p| {
            let node = topo.node(p.node);
            // The first of the lowest routes in output order.
            let lowest =
                p.routes.iter().fold(
                    None,
                    |best: Option<&mtu_solver::RoutePlan>, rt| match best {
                        Some(b) if b.mtu.mtu <= rt.mtu.mtu => Some(b),
                        _ => Some(rt),
                    },
                );
            SummaryNode {
                name: &node.name,
                site: &topo.site(node.site).name,
                role: if node.is_gateway() {
                    "gateway"
                } else {
                    "worker"
                },
                pool: node.pool().map(|x| &*topo.pool(x).name),
                fabric_mtu: p.fabric.mtu.get(),
                fabric_bound: r
                    .bound_only(solver.expl.get(p.fabric.expl).bound)
                    .bound
                    .term
                    .clone(),
                lowest_route_mtu: lowest.map(|rt| rt.mtu.mtu.get()),
                lowest_route_destination: lowest.map(|rt| rt.destination.to_string()),
                links: p.links.len(),
            }
        })
        .collect();
    SummaryDoc {
        api_version: report::API_VERSION,
        kind: "ResolutionSummary",
        nodes,
        diagnostics: diags.iter().map(report::DiagOut::from).collect(),
    }
}

/// The summary table: narrow, a node's name, Site, role, fabric and what binds it, its lowest
/// route and links; wide, also its pool and the lowest route's destination.
fn summary_table(doc: &SummaryDoc<'_>, diags: &[Diagnostic], style: TableStyle) -> String {
    let rows: Vec<Vec<String>> = doc
        .nodes
        .iter()
        .map(|n| {
            let lowest = n
                .lowest_route_mtu
                .map(|m| m.to_string())
                .unwrap_or_else(|| "-".into());
            let mut row = vec![n.name.to_string(), n.site.to_string(), n.role.to_string()];
            if style.wide {
                row.push(n.pool.unwrap_or("-").to_string());
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
    let mut s = table(headers, &rows, style);
    s.push('\n');
    s.push_str(&diagnostics_table(diags, style));
    s
}

/// Every node's values: a header (wide: one line; narrow: the fabric's bound on a line of its
/// own), then its links, routes (narrow: the first next hop and how many more), devices and
/// published values, then the diagnostics.
fn render_table(
    solver: &Solver<'_>,
    r: &mut Renderer<'_, '_>,
    plans: &[NodePlan],
    diags: &[Diagnostic],
    style: TableStyle,
) -> String {
    let topo = solver.topo();
    let mut s = String::new();
    for p in plans {
        let n = report::node_out(topo, r, p);
        let head = format!(
            "NODE {}  site {}  {}{}  fabric {}",
            n.name,
            n.site,
            n.role,
            n.pool.map(|x| format!(" of {x}")).unwrap_or_default(),
            n.fabric_mtu,
        );
        let fabric_bound = &n.fabric_explanation.bound.term;
        let mss = format!("mss {}/{}", n.mss_ipv4, n.mss_ipv6);
        if style.wide {
            let _ = writeln!(s, "{head} (bound by {fabric_bound})  {mss}");
        } else {
            let _ = writeln!(s, "{head}  {mss}\n  fabric bound by {fabric_bound}");
        }
        if !n.links.is_empty() {
            let rows: Vec<Vec<String>> = n
                .links
                .iter()
                .map(|l| {
                    vec![
                        l.peer.to_string(),
                        l.kind.to_string(),
                        l.protocol.to_string(),
                        l.mtu.to_string(),
                        bound(
                            &l.explanation.bound.term,
                            &l.explanation.bound.source,
                            style,
                        ),
                    ]
                })
                .collect();
            s.push_str(&indent(&table(
                &["LINK", "KIND", "PROTOCOL", "MTU", "BOUND BY"],
                &rows,
                style,
            )));
        }
        if !n.routes.is_empty() {
            let rows: Vec<Vec<String>> = n
                .routes
                .iter()
                .map(|rt| {
                    vec![
                        rt.destination.clone(),
                        rt.ty.to_string(),
                        rt.kind.to_string(),
                        rt.mtu.to_string(),
                        hops(&rt.via, style),
                        rt.distance.to_string(),
                        rt.explanation.bound.term.clone(),
                    ]
                })
                .collect();
            s.push_str(&indent(&table(
                &["ROUTE", "TYPE", "KIND", "MTU", "VIA", "DIST", "BOUND BY"],
                &rows,
                style,
            )));
        }
        if !n.devices.is_empty() {
            let rows: Vec<Vec<String>> = n
                .devices
                .iter()
                .map(|d| {
                    vec![
                        d.name.as_deref().map(str::to_string).unwrap_or_else(|| {
                            format!("(wg for {})", d.peer.as_deref().unwrap_or("?"))
                        }),
                        d.protocol.to_string(),
                        d.mtu.to_string(),
                        d.explanation.bound.term.clone(),
                    ]
                })
                .collect();
            s.push_str(&indent(&table(
                &["DEVICE", "PROTOCOL", "MTU", "SET BY"],
                &rows,
                style,
            )));
        }
        if let Some(ps) = &n.published {
            let rows: Vec<Vec<String>> = ps
                .iter()
                .map(|p| vec![p.destination.clone(), p.mtu.to_string()])
                .collect();
            if !rows.is_empty() {
                s.push_str(&indent(&table(&["PUBLISHES", "MTU"], &rows, style)));
            }
        }
        s.push('\n');
    }
    s.push_str(&diagnostics_table(diags, style));
    s
}

fn indent(t: &str) -> String {
    t.lines().map(|l| format!("  {l}\n")).collect()
}
