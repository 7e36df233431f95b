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
//! - Two relationships joining the same two nodes are one edge naming both, with the lowest link
//!   among them and what binds it.
//! - A [`Selection`] limits the picture to some Sites and pools (`--around NODE`: one node's
//!   neighbourhood). Large pictures are laid out by `fdp` instead of `dot`, each pool a cluster
//!   of the Sites its gateways run in ([`layout`]).
//!
//! Labels are node labels or edge labels (`label`, which Graphviz lays out beside its edge), never
//! external labels (`xlabel`), which Graphviz places after routing and may draw over edges.

mod body;
mod dot;
mod facts;
mod json;
pub mod layout;
mod select;

use crate::cli::GraphFormat;
use crate::common::{self, usage};
use crate::output::{DataFormat, TableStyle, diagnostics_table, write_data};
use crate::settings;
use anyhow::{Context, Result};
use mtu_solver::report::DiagOut;
use mtu_solver::{Resolver, Solver};
use std::io::Write as _;

pub use dot::{Drawing, dot};
pub use select::Selection;

/// Runs `graph`.
pub fn run(args: &settings::Graph) -> Result<()> {
    let decoded = common::load(&args.offline.input)?;
    let resolver = Resolver::new(decoded, args.offline.solver.clone());
    common::some_resolved(resolver.topology())?;
    resolver.with_solver(|solver| {
        let topo = solver.topo();
        let selection = match &args.around {
            Some(name) => {
                let n = topo
                    .find_node(name)
                    .map_err(|e| usage(format!("--around {name}: {e}")))?;
                Selection::around(solver, n)
            }
            None if args.selector.is_empty() => Selection::All,
            None => Selection::nodes(topo, &common::select(topo, &args.selector)?),
        };
        draw(solver, &selection, args.format)
    })?;
    common::fail_on(args.fail_on, &resolver.topology().diagnostics)
}

/// Writes the picture (or its document) of the Sites and pools `selection` selects, in the
/// `format`, and the input's diagnostics on standard error after a picture.
pub fn draw(solver: &mut Solver<'_>, selection: &Selection, format: GraphFormat) -> Result<()> {
    let topo = solver.topo();
    let data = match format {
        GraphFormat::Dot | GraphFormat::Svg => None,
        GraphFormat::Json => Some(DataFormat::Json),
        GraphFormat::Yaml => Some(DataFormat::Yaml),
    };
    if let Some(format) = data {
        // A document carries its diagnostics, as every other command's does.
        let diagnostics = topo.diagnostics.iter().map(DiagOut::from).collect();
        return write_data(&json::graph_doc(solver, diagnostics, selection), format);
    }
    let drawing = dot(solver, selection);
    let bytes = match format {
        GraphFormat::Svg => {
            if let Some(note) = layout::slow_note(drawing.size, drawing.engine) {
                writeln!(std::io::stderr().lock(), "{note}")?;
            }
            render_svg(&drawing.text)?
        }
        _ => drawing.text.into_bytes(),
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
    Ok(())
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
