//! `unbounded-mtu graph`: Sites, pools and their relationships as Graphviz DOT (or SVG through
//! `dot`), for people.
//!
//! - Sites are boxes, pools ellipses; each says how many workers or gateways it has, its cap and
//!   the lowest link inside it (the mesh within a Site, the mesh of a pool's gateways). A pool
//!   also shows the values its gateways publish for what they deliver (resolved) and the values
//!   they have published (GatewayPoolNode annotations).
//! - Every relationship is an edge between its members (a peering of more than two members is a
//!   small hub node), labelled with its name, its cap and the lowest link MTU it carries, and the
//!   term that binds that link (an object's cap, an underlay minus an overhead). An object whose
//!   own cap binds a link or route shown is red: the bottleneck, visible at a glance. A dotted
//!   edge joins a pool to each Site its gateways run in.
//! - Below the picture, the lowest route MTU from the workers of each Site to each other Site
//!   with workers, end to end (what pods can send), and what binds it.
//!
//! Labels are node labels or edge labels (`label`, which Graphviz lays out beside its edge), never
//! external labels (`xlabel`), which Graphviz places after routing and may draw over edges.

mod dot;
mod facts;
mod json;
mod scope;

use crate::cli::{GraphArgs, GraphFormat};
use crate::common::{self, usage};
use crate::output::{DataFormat, TableStyle, diagnostics_table, write_data};
use anyhow::{Context, Result};
use mtu_solver::Solver;
use mtu_solver::report::DiagOut;
use std::io::Write as _;

pub use dot::dot;
pub use scope::Scope;

/// Runs `graph`.
pub fn run(args: &GraphArgs) -> Result<()> {
    let selector = common::selector(&args.select)?;
    let decoded = common::load(&args.common)?;
    let topo = common::topology(&decoded)?;
    let scope = match selector.is_empty() {
        true => Scope::all(),
        false => Scope::of(&topo, &common::select(&topo, &selector)?),
    };
    let mut solver = Solver::new(&topo, crate::settings::offline(&args.common));
    let data = match args.format {
        GraphFormat::Dot | GraphFormat::Svg => None,
        GraphFormat::Json => Some(DataFormat::Json),
        GraphFormat::Yaml => Some(DataFormat::Yaml),
    };
    if let Some(format) = data {
        // A document carries its diagnostics, as every other command's does.
        let diagnostics = topo.diagnostics.iter().map(DiagOut::from).collect();
        write_data(&json::graph_doc(&mut solver, &scope, diagnostics), format)?;
        return common::fail_on(args.fail.fail_on, &topo.diagnostics);
    }
    let text = dot(&mut solver, &scope);
    let bytes = match args.format {
        GraphFormat::Svg => render_svg(&text)?,
        _ => text.into_bytes(),
    };
    // Errors (a reader that went away among them) go to the caller, which ends quietly on a
    // closed pipe; `print!` would panic instead.
    let mut out = std::io::stdout().lock();
    out.write_all(&bytes)?;
    out.flush()?;
    // The input's diagnostics follow the picture on standard error: standard output stays a
    // valid DOT or SVG document.
    if !topo.diagnostics.is_empty() {
        let mut err = std::io::stderr().lock();
        let table = diagnostics_table(&topo.diagnostics, TableStyle::default());
        err.write_all(table.as_bytes())?;
    }
    common::fail_on(args.fail.fail_on, &topo.diagnostics)
}

/// Renders DOT to SVG with Graphviz; exit 2 when Graphviz is missing.
pub fn render_svg(dot_text: &str) -> Result<Vec<u8>> {
    let mut child = match std::process::Command::new("dot")
        .arg("-Tsvg")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(usage(
                "Graphviz is not installed (no `dot` on PATH): install the graphviz package, or use --format dot",
            ));
        }
        Err(e) => return Err(e).context("cannot start Graphviz dot"),
    };
    // A write error here (dot exited early) is reported after dot's own status and message, and
    // never as an I/O error: a broken pipe to dot is a failure, not a reader of ours going away.
    let written = match child.stdin.take() {
        Some(mut stdin) => stdin.write_all(dot_text.as_bytes()),
        None => Ok(()),
    };
    let out = child.wait_with_output().context("Graphviz dot failed")?;
    if !out.status.success() {
        return Err(usage(format!(
            "Graphviz dot failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    if let Err(e) = written {
        return Err(usage(format!("cannot write to Graphviz dot: {e}")));
    }
    Ok(out.stdout)
}
