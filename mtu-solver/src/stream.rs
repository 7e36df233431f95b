//! Every node of a cluster planned in order, on several threads, each node handed on as soon as
//! it is planned: what `resolve` of a whole cluster uses to write node after node without
//! holding every plan.
//!
//! The nodes are cut into chunks of consecutive nodes; chunk `c` goes to worker `c mod W`, which
//! plans it with its own [`Solver`] (memos are per solver: a worker's Sites are planned by that
//! worker's memos) and turns each plan into the caller's value with the worker's own
//! [`Renderer`]. The calling thread receives the chunks in node order and consumes them. Each
//! worker runs at most one chunk ahead of the consumer, so memory holds the topology, each
//! worker's memos and explanation caches, and a few chunks' values: never every plan.

use crate::plan::NodePlan;
use crate::report::{Explanations, RenderCache, Renderer};
use crate::solver::{Settings, Solver};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use topology_core::diag::Diagnostic;
use topology_core::ids::NodeId;
use topology_core::model::Topology;

/// Nodes one solver plans before a fresh one takes over, for a whole cluster written node by
/// node: memory stays flat at any size, at the price of rebuilding a few times the memos that
/// later nodes share (`docs/performance.md`, "Streaming resolve").
pub const RENEW: usize = 256;

/// How the nodes are shared out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Workers {
    /// Threads that plan (at least 1).
    pub threads: usize,
    /// Consecutive nodes per chunk (at least 1): larger chunks share more memoized work within a
    /// worker, smaller ones hold fewer values in flight.
    pub chunk: usize,
    /// Nodes a worker plans with one solver before it starts a fresh one: memos and
    /// explanations grow with the nodes planned, and those of Sites already done are rarely
    /// asked again, so a fresh solver bounds memory at the price of rebuilding what later nodes
    /// share. `None`: one solver per worker.
    pub renew: Option<usize>,
}

/// Plans `nodes` (in the order given) with `workers`; `render` turns each plan into a value on
/// the worker that planned it, its renderer explaining at `level`; `consume` receives the values in the order of `nodes`, each with
/// its plan's diagnostics, on the calling thread (the plans themselves are dropped on the
/// worker).
///
/// When `consume` fails, the workers stop at their next chunk and its error is returned; the
/// values already consumed stay consumed.
pub(crate) fn plan_in_order<T, E>(
    topo: &Topology,
    settings: &Settings,
    nodes: &[NodeId],
    workers: Workers,
    level: Explanations,
    render: impl Fn(&mut Renderer<'_, '_>, &NodePlan) -> T + Sync,
    mut consume: impl FnMut(T, Vec<Diagnostic>) -> Result<(), E>,
) -> Result<(), E>
where
    T: Send,
{
    let threads = workers.threads.max(1);
    let chunk = workers.chunk.max(1);
    let chunks: Vec<&[NodeId]> = nodes.chunks(chunk).collect();
    std::thread::scope(|scope| {
        let mut inboxes: Vec<Receiver<Chunk<T>>> = Vec::with_capacity(threads);
        for w in 0..threads.min(chunks.len()) {
            let (tx, rx) = sync_channel(1);
            inboxes.push(rx);
            let mine: Vec<&[NodeId]> = chunks.iter().skip(w).step_by(threads).copied().collect();
            let settings = settings.clone();
            let render = &render;
            scope.spawn(move || work(topo, settings, level, workers.renew, &mine, render, tx));
        }
        // Chunk `c` comes from worker `c mod W`.
        for inbox in inboxes.iter().cycle().take(chunks.len()) {
            // A worker that ended early (it cannot: it plans every chunk it was given) ends the
            // stream short rather than hanging.
            let Ok(values) = inbox.recv() else { break };
            for (value, diagnostics) in values {
                consume(value, diagnostics)?;
            }
        }
        Ok(())
    })
}

/// A chunk's values, each with its plan's diagnostics.
type Chunk<T> = Vec<(T, Vec<Diagnostic>)>;

/// One worker: plans its chunks in turn and sends each chunk's values; stops when the consumer
/// has gone.
fn work<T>(
    topo: &Topology,
    settings: Settings,
    level: Explanations,
    renew: Option<usize>,
    chunks: &[&[NodeId]],
    render: &(impl Fn(&mut Renderer<'_, '_>, &NodePlan) -> T + Sync),
    out: SyncSender<Chunk<T>>,
) {
    let mut solver = Solver::new(topo, settings.clone());
    let mut cache = RenderCache::at(level);
    let mut planned = 0usize;
    for nodes in chunks {
        if renew.is_some_and(|r| planned >= r) {
            solver = Solver::new(topo, settings.clone());
            cache = RenderCache::at(level);
            planned = 0;
        }
        planned = planned.saturating_add(nodes.len());
        let plans: Vec<NodePlan> = nodes.iter().map(|n| solver.plan(*n)).collect();
        let mut r = Renderer::resume(&solver, cache);
        let values: Chunk<T> = plans
            .into_iter()
            .map(|p| (render(&mut r, &p), p.diagnostics))
            .collect();
        cache = r.suspend();
        if out.send(values).is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use test_utils::testkit::scale::ScaleSpec;

    /// Every chunking and thread count hands on the same values, in node order.
    #[test]
    fn order_and_values_do_not_depend_on_the_workers() {
        let topo = Topology::build(ScaleSpec::small().objects().iter(), Vec::new());
        let nodes: Vec<NodeId> = (0..topo.nodes.len()).map(NodeId::from_idx).collect();
        let collect = |threads, chunk| {
            let mut seen = Vec::new();
            let w = Workers {
                threads,
                chunk,
                renew: Some(chunk * 3),
            };
            plan_in_order::<_, Infallible>(
                &topo,
                &Settings::default(),
                &nodes,
                w,
                Explanations::Bound,
                |r, p| (p.node, crate::report::node_out(&topo, r, p)),
                |out, _| {
                    seen.push(out);
                    Ok(())
                },
            )
            .unwrap();
            seen
        };
        let one = collect(1, nodes.len());
        assert_eq!(one.len(), nodes.len());
        assert!(one.iter().map(|(n, _)| *n).eq(nodes.iter().copied()));
        for (threads, chunk) in [(2, 1), (2, 7), (3, 16), (8, 5)] {
            assert!(
                collect(threads, chunk) == one,
                "{threads} threads, chunks of {chunk}"
            );
        }
    }

    /// A consumer that fails stops the stream with its error.
    #[test]
    fn a_failing_consumer_stops_the_workers() {
        let topo = Topology::build(ScaleSpec::small().objects().iter(), Vec::new());
        let nodes: Vec<NodeId> = (0..topo.nodes.len()).map(NodeId::from_idx).collect();
        let mut taken = 0;
        let w = Workers {
            threads: 2,
            chunk: 3,
            renew: None,
        };
        let r = plan_in_order(
            &topo,
            &Settings::default(),
            &nodes,
            w,
            Explanations::Bound,
            |_, p| p.node,
            |_, _| {
                taken += 1;
                if taken == 5 { Err("closed") } else { Ok(()) }
            },
        );
        assert_eq!(r, Err("closed"));
        assert_eq!(taken, 5);
    }
}
