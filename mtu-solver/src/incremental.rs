//! The incremental resolver, which always equals a full resolve of the same objects: objects arrive as add/update/delete
//! events; each batch re-resolves only what it affects (the same classification as what-if:
//! per value for cap changes, the nodes around a node for underlay changes, every node when
//! links or paths may change) and publishes a new whole state. Readers hold an `Arc` of a state:
//! they never see a half-applied batch.

use crate::snapshot::{Item, items};
use crate::solver::{Settings, Solver, may_find};
use crate::whatif::{Change, Input, diff};
use std::collections::BTreeMap;
use std::sync::Arc;
use topology_core::decode::RawObject;
use topology_core::diag::{Diagnostic, sort_diagnostics};
use topology_core::ids::NodeId;
use topology_core::vocab::Kind;

/// An object event.
#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // events are transient; boxing buys nothing
#[non_exhaustive]
pub enum Event {
    /// Add or update: replaces every object of this kind and name.
    Apply(RawObject),
    /// Delete every object of this kind and name.
    Delete {
        /// Kind.
        kind: Kind,
        /// Name.
        name: String,
    },
}

/// Every node's values by name. Each node's map is shared between states: publishing a new
/// state copies only the nodes a batch changed.
pub type NodeValues = BTreeMap<String, Arc<BTreeMap<Item, u32>>>;

/// Applies changes (a what-if's, a batch's) to node values, copying only the nodes they touch.
pub fn apply_changes(nodes: &mut NodeValues, changes: impl IntoIterator<Item = Change>) {
    for c in changes {
        let entry = nodes.entry(c.node.to_string()).or_default();
        let values = Arc::make_mut(entry);
        match c.after {
            Some(v) => {
                values.insert(c.item, v);
            }
            None => {
                values.remove(&c.item);
            }
        }
        if values.is_empty() {
            nodes.remove(&*c.node);
        }
    }
}

/// A whole resolved state: every node's values by name, and the diagnostics.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct State {
    /// Per node name, every value (item and MTU) in output order.
    pub nodes: NodeValues,
    /// Diagnostics in output order.
    pub diagnostics: Vec<Diagnostic>,
    /// Batches applied so far.
    pub generation: u64,
}

impl State {
    /// Resolves an input from scratch.
    pub fn full(input: &Input) -> State {
        let topo = input.build_topology();
        let mut solver = Solver::new(&topo, input.settings.clone());
        let mut nodes = BTreeMap::new();
        let mut diagnostics = topo.diagnostics.clone();
        for i in 0..topo.nodes.len() {
            let plan = solver.plan(NodeId::from_idx(i));
            diagnostics.extend(plan.diagnostics.iter().cloned());
            let values = items(&topo, &plan)
                .into_iter()
                .map(|(k, v, _)| (k, v))
                .collect();
            nodes.insert(topo.node(plan.node).name.to_string(), Arc::new(values));
        }
        sort_diagnostics(&mut diagnostics);
        State {
            nodes,
            diagnostics,
            generation: 0,
        }
    }

    /// Whether two states hold the same values and diagnostics (the generation aside, and the
    /// diagnostics' `source`, which depends on where objects came from).
    pub fn same_values(&self, other: &State) -> bool {
        let strip = |d: &[Diagnostic]| -> Vec<(String, String, String, String)> {
            d.iter()
                .map(|x| {
                    (
                        x.code.to_string(),
                        x.object.clone(),
                        x.field.clone(),
                        x.message.clone(),
                    )
                })
                .collect()
        };
        self.nodes == other.nodes && strip(&self.diagnostics) == strip(&other.diagnostics)
    }
}

/// The incremental resolver.
pub struct Incremental {
    input: Input,
    state: Arc<State>,
    /// Values re-evaluated by the last batch (plans count once per side).
    pub last_work: usize,
}

impl std::fmt::Debug for Incremental {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Incremental")
            .field("objects", &self.input.objects.len())
            .field("settings", &self.input.settings)
            .field("nodes", &self.state.nodes.len())
            .field("last_work", &self.last_work)
            .finish()
    }
}

impl Incremental {
    /// An empty resolver with these settings.
    pub fn new(settings: Settings) -> Self {
        let input = Input {
            objects: Vec::new(),
            diagnostics: Vec::new(),
            settings,
        };
        let state = Arc::new(State::full(&input));
        Incremental {
            input,
            state,
            last_work: 0,
        }
    }

    /// The current whole state.
    pub fn state(&self) -> Arc<State> {
        self.state.clone()
    }

    /// The current input.
    pub fn input(&self) -> &Input {
        &self.input
    }

    /// Applies a batch of events and publishes the new state.
    pub fn apply(&mut self, events: impl IntoIterator<Item = Event>) -> Arc<State> {
        let mut next = self.input.clone();
        for e in events {
            match e {
                Event::Apply(o) => {
                    let (k, n) = (o.kind(), o.name().to_string());
                    match next
                        .objects
                        .iter()
                        .position(|x| x.kind() == k && x.name() == n)
                    {
                        Some(i) => {
                            // Replace in place (keeps order stable), drop further copies.
                            if let Some(slot) = next.objects.get_mut(i) {
                                *slot = o;
                            }
                            let mut seen = false;
                            next.objects.retain(|x| {
                                if x.kind() == k && x.name() == n {
                                    let keep = !seen;
                                    seen = true;
                                    keep
                                } else {
                                    true
                                }
                            });
                        }
                        None => next.objects.push(o),
                    }
                }
                Event::Delete { kind, name } => {
                    next.objects
                        .retain(|x| !(x.kind() == kind && x.name() == name));
                }
            }
        }
        self.advance(next)
    }

    /// Replaces the settings (e.g. a newly detected underlay) and publishes the new state.
    pub fn set_settings(&mut self, settings: Settings) -> Arc<State> {
        let mut next = self.input.clone();
        next.settings = settings;
        self.advance(next)
    }

    fn advance(&mut self, next: Input) -> Arc<State> {
        let w = diff(&self.input, &next, crate::report::Explanations::Bound);
        self.last_work = w.work;
        let mut nodes = self.state.nodes.clone();
        apply_changes(&mut nodes, w.changes);
        // Diagnostics are a linear function of the input: recompute them whole.
        let topo = next.build_topology();
        let mut diagnostics = topo.diagnostics.clone();
        if topo.nodes.iter().any(may_find) {
            let mut solver = Solver::new(&topo, next.settings.clone());
            for (i, n) in topo.nodes.iter().enumerate() {
                if may_find(n) {
                    diagnostics.extend(solver.plan(NodeId::from_idx(i)).diagnostics);
                }
            }
        }
        sort_diagnostics(&mut diagnostics);
        self.input = next;
        let state = Arc::new(State {
            nodes,
            diagnostics,
            generation: self.state.generation.saturating_add(1),
        });
        self.state = state.clone();
        state
    }
}
