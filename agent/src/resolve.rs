//! `unbounded-mtu resolve`.

use crate::cli::{ExplainLevel, Output, ResolveArgs};
use crate::common::{self, table, usage};
use anyhow::Result;
use mtu_solver::report::{self, Renderer};
use mtu_solver::{NodePlan, Solver};
use std::fmt::Write as _;
use topology_core::diag::{Diagnostic, sort_diagnostics};
use topology_core::ids::NodeId;

/// Runs `resolve`.
pub fn run(args: &ResolveArgs) -> Result<()> {
    let decoded = common::load(&args.common)?;
    let topo = common::topology(&decoded);
    let mut selected: Vec<NodeId> = Vec::new();
    for name in &args.nodes {
        match topo.node_id(name) {
            Some(id) => selected.push(id),
            None => {
                return Err(usage(format!(
                    "node {name} does not exist (or belongs to no Site)"
                )));
            }
        }
    }
    if args.nodes.is_empty() {
        selected = (0..topo.nodes.len()).map(NodeId::from_idx).collect();
    }
    selected.sort();
    selected.dedup();
    let mut solver = Solver::new(&topo, common::settings(&args.common));
    let plans: Vec<NodePlan> = selected.iter().map(|n| solver.plan(*n)).collect();
    let mut diags: Vec<Diagnostic> = topo.diagnostics.clone();
    for p in &plans {
        diags.extend(p.diagnostics.iter().cloned());
    }
    sort_diagnostics(&mut diags);
    let out = common::output(&args.common);
    let mut r = Renderer::new(&solver, args.explain == ExplainLevel::Full);
    match out {
        Output::Table => print!("{}", render_table(&solver, &mut r, &plans, &diags)),
        _ => {
            let doc = report::resolve_out(&topo, &mut r, &plans, &diags);
            common::write_data(&doc, out)?;
        }
    }
    common::fail_on(&args.common, &diags)
}

fn render_table(
    solver: &Solver<'_>,
    r: &mut Renderer<'_, '_>,
    plans: &[NodePlan],
    diags: &[Diagnostic],
) -> String {
    let topo = solver.topo();
    let mut s = String::new();
    for p in plans {
        let n = report::node_out(topo, r, p);
        let _ = writeln!(
            s,
            "NODE {}  site {}  {}{}  fabric {} (bound by {})  mss {}/{}",
            n.name,
            n.site,
            n.role,
            n.pool.map(|x| format!(" of {x}")).unwrap_or_default(),
            n.fabric_mtu,
            n.fabric_explanation.bound.term,
            n.mss_ipv4,
            n.mss_ipv6
        );
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
                        l.explanation.bound.source.clone(),
                    ]
                })
                .collect();
            s.push_str(&indent(&table(
                &["LINK", "KIND", "PROTOCOL", "MTU", "BOUND BY"],
                &rows,
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
                        rt.via.join(","),
                        rt.distance.to_string(),
                        rt.explanation.bound.term.clone(),
                    ]
                })
                .collect();
            s.push_str(&indent(&table(
                &["ROUTE", "TYPE", "KIND", "MTU", "VIA", "DIST", "BOUND BY"],
                &rows,
            )));
        }
        if !n.devices.is_empty() {
            let rows: Vec<Vec<String>> = n
                .devices
                .iter()
                .map(|d| {
                    vec![
                        d.name
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("(wg for {})", d.peer.unwrap_or("?"))),
                        d.protocol.to_string(),
                        d.mtu.to_string(),
                        d.explanation.bound.term.clone(),
                    ]
                })
                .collect();
            s.push_str(&indent(&table(
                &["DEVICE", "PROTOCOL", "MTU", "SET BY"],
                &rows,
            )));
        }
        if let Some(ps) = &n.published {
            let rows: Vec<Vec<String>> = ps
                .iter()
                .map(|p| vec![p.destination.clone(), p.mtu.to_string()])
                .collect();
            if !rows.is_empty() {
                s.push_str(&indent(&table(&["PUBLISHES", "MTU"], &rows)));
            }
        }
        s.push('\n');
    }
    if diags.is_empty() {
        s.push_str("no diagnostics\n");
    } else {
        let rows: Vec<Vec<String>> = diags
            .iter()
            .map(|d| {
                vec![
                    d.severity.to_string(),
                    d.code.to_string(),
                    d.object.clone(),
                    d.field.clone(),
                    d.source.as_ref().map(|x| x.to_string()).unwrap_or_default(),
                    d.message.clone(),
                ]
            })
            .collect();
        s.push_str(&table(
            &["SEVERITY", "CODE", "OBJECT", "FIELD", "SOURCE", "MESSAGE"],
            &rows,
        ));
    }
    s
}

fn indent(t: &str) -> String {
    t.lines().map(|l| format!("  {l}\n")).collect()
}
