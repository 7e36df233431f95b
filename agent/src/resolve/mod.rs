//! `unbounded-mtu resolve`: every selected node's values written node after node as they are
//! resolved (tables, JSON, YAML: `nodes.rs`, `document.rs`), or a rollup of the whole cluster that
//! fits a screen (`--summary`: `rollup.rs`, `summary.rs`).
//!
//! Nodes are planned on every core ([`Resolver::plan_each`]) and written in name order, so the
//! output is byte for byte what one thread writes; memory holds the topology, the solvers' memos
//! and explanations, and the few nodes in flight, never the whole cluster's plans.

mod document;
mod nodes;
mod rollup;
mod summary;

use crate::common;
use crate::output::Format;
use anyhow::Result;
use mtu_solver::stream::Workers;
use mtu_solver::{Planned, Resolver};
use std::sync::Arc;
use topology_core::diag::{Diagnostic, sort_diagnostics};

pub use crate::cli::SummaryMode;

/// Runs `resolve`.
pub fn run(args: &crate::settings::Resolve) -> Result<()> {
    let decoded = common::load(&args.offline.input)?;
    let level = args.explanations;
    let resolver = Resolver::new(decoded, args.offline.solver.clone()).with_explanations(level);
    let topo = resolver.topology();
    common::some_resolved(topo)?;
    let nodes = common::select(topo, &args.selector)?
        .into_iter()
        .map(|n| topo.node(n).name.clone())
        .collect();
    let job = Job {
        resolver: &resolver,
        nodes,
    };
    let format = args.format;
    let diags = match args.summary {
        None => match format {
            Format::Table(style) => nodes::write(&job, style)?,
            Format::Data(f) => document::write(&job, f)?,
        },
        Some(mode) => summary::write(&job, mode, format)?,
    };
    common::fail_on(args.fail_on, &diags)
}

/// What one `resolve` resolves.
pub(crate) struct Job<'r> {
    pub resolver: &'r Resolver,
    /// In output order.
    pub nodes: Vec<Arc<str>>,
}

impl Job<'_> {
    /// Plans every node on every core; `render` makes each plan's output on the planning thread,
    /// `write` takes the outputs in node order. Returns every diagnostic to report: the
    /// topology's and the plans', sorted.
    pub fn stream<T: Send>(
        &self,
        chunk: usize,
        render: impl Fn(Planned<'_, '_, '_>) -> T + Sync,
        mut write: impl FnMut(T) -> Result<()>,
    ) -> Result<Vec<Diagnostic>> {
        let workers = Workers {
            threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(MAX_THREADS)),
            chunk,
            renew: Some(mtu_solver::stream::RENEW),
        };
        let mut diags: Vec<Diagnostic> = self.resolver.topology().diagnostics.clone();
        self.resolver
            .plan_each(&self.nodes, workers, render, |out, plan_diags| {
                diags.extend(plan_diags);
                write(out)
            })?;
        sort_diagnostics(&mut diags);
        Ok(diags)
    }
}

/// Planning threads at most: each holds its own memos, which more threads would repeat for
/// little gain.
const MAX_THREADS: usize = 4;

/// Standard output, buffered: a node's output goes out as soon as the buffer fills.
pub(crate) fn stdout() -> std::io::BufWriter<std::io::StdoutLock<'static>> {
    std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock())
}
