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
/// Costs one pass over `changes`, and a copy of each touched node's map that a state still shares.
///
/// ```
/// # use mtu_solver::{Settings, doc_cluster::TWO_SITES, load, whatif::Input};
/// # let read = |yaml: &str| {
/// #     let d = load::from_sources([("cluster.yaml", yaml)]);
/// #     let settings = Settings::default();
/// #     Input { objects: d.objects, diagnostics: d.diagnostics, settings }
/// # };
/// use mtu_solver::incremental::{State, apply_changes};
/// let before = read(TWO_SITES);
/// let after = read(&TWO_SITES.replace("tunnelMTU: 1400", "tunnelMTU: 1300"));
/// let mut nodes = State::full(&before).nodes;
/// let changes = mtu_solver::whatif::diff(&before, &after, Default::default()).changes;
/// apply_changes(&mut nodes, changes);
/// assert_eq!(nodes, State::full(&after).nodes);
/// assert!(nodes["wa"].values().all(|mtu| *mtu == 1300));
/// ```
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
    /// Resolves an input from scratch. Costs a build of the topology and a plan of every node.
    ///
    /// ```
    /// # use mtu_solver::{Settings, doc_cluster::TWO_SITES, load, whatif::Input};
    /// # let read = |yaml: &str| {
    /// #     let d = load::from_sources([("cluster.yaml", yaml)]);
    /// #     let settings = Settings::default();
    /// #     Input { objects: d.objects, diagnostics: d.diagnostics, settings }
    /// # };
    /// use mtu_solver::{incremental::State, snapshot::Item};
    /// let state = State::full(&read(TWO_SITES));
    /// assert_eq!(state.nodes.keys().collect::<Vec<_>>(), ["wa", "wb"]);
    /// assert_eq!(state.nodes["wa"][&Item::Fabric], 1400);
    /// assert!(state.diagnostics.is_empty() && state.generation == 0);
    /// ```
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
    /// diagnostics' `source`, which depends on where objects came from). Costs a comparison of
    /// every value and a copy of every diagnostic's fields.
    ///
    /// ```
    /// # use mtu_solver::{Settings, doc_cluster::TWO_SITES, load, whatif::Input};
    /// # let read = |yaml: &str| {
    /// #     let d = load::from_sources([("cluster.yaml", yaml)]);
    /// #     let settings = Settings::default();
    /// #     Input { objects: d.objects, diagnostics: d.diagnostics, settings }
    /// # };
    /// # use mtu_solver::{incremental::{Event, Incremental}, snapshot::Item};
    /// use mtu_solver::incremental::State;
    /// let mut inc = Incremental::new(Settings::default());
    /// inc.apply(read(TWO_SITES).objects.into_iter().map(Event::Apply));
    /// let full = State::full(&read(TWO_SITES));
    /// assert!(inc.state().same_values(&full));
    /// assert_ne!(*inc.state(), full, "their generations differ");
    /// ```
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
    /// An empty resolver with these settings. Costs a resolve of the empty input.
    ///
    /// ```
    /// use mtu_solver::{Settings, incremental::Incremental};
    /// let inc = Incremental::new(Settings::default());
    /// assert!(inc.state().nodes.is_empty() && inc.input().objects.is_empty());
    /// assert_eq!((inc.state().generation, inc.last_work), (0, 0));
    /// ```
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

    /// The current whole state. Costs a reference count: later batches publish new states and
    /// leave this one as it is.
    ///
    /// ```
    /// # use mtu_solver::{Settings, doc_cluster::TWO_SITES, load, whatif::Input};
    /// # let read = |yaml: &str| {
    /// #     let d = load::from_sources([("cluster.yaml", yaml)]);
    /// #     let settings = Settings::default();
    /// #     Input { objects: d.objects, diagnostics: d.diagnostics, settings }
    /// # };
    /// # use mtu_solver::{incremental::{Event, Incremental}, snapshot::Item};
    /// let mut inc = Incremental::new(Settings::default());
    /// let before = inc.state();
    /// inc.apply(read(TWO_SITES).objects.into_iter().map(Event::Apply));
    /// assert!(before.nodes.is_empty(), "a state held does not change");
    /// assert_eq!(inc.state().nodes.len(), 2);
    /// ```
    pub fn state(&self) -> Arc<State> {
        self.state.clone()
    }

    /// The current input. Costs nothing.
    ///
    /// ```
    /// # use mtu_solver::{Settings, doc_cluster::TWO_SITES, load, whatif::Input};
    /// # let read = |yaml: &str| {
    /// #     let d = load::from_sources([("cluster.yaml", yaml)]);
    /// #     let settings = Settings::default();
    /// #     Input { objects: d.objects, diagnostics: d.diagnostics, settings }
    /// # };
    /// # use mtu_solver::{incremental::{Event, Incremental}, snapshot::Item};
    /// let mut inc = Incremental::new(Settings::default());
    /// inc.apply(read(TWO_SITES).objects.into_iter().map(Event::Apply));
    /// assert_eq!(inc.input().objects.len(), 5, "two Sites, a SitePeering, two nodes");
    /// assert_eq!(inc.input().settings, Settings::default());
    /// ```
    pub fn input(&self) -> &Input {
        &self.input
    }

    /// Applies a batch of events and publishes the new state. Costs a clone of the input, a scan
    /// of its objects per event, what [`diff`] costs for the difference, and a build of the
    /// topology for the diagnostics (with a plan of each node that may have findings).
    ///
    /// ```
    /// # use mtu_solver::{Settings, doc_cluster::TWO_SITES, load, whatif::Input};
    /// # let read = |yaml: &str| {
    /// #     let d = load::from_sources([("cluster.yaml", yaml)]);
    /// #     let settings = Settings::default();
    /// #     Input { objects: d.objects, diagnostics: d.diagnostics, settings }
    /// # };
    /// # use mtu_solver::{incremental::{Event, Incremental}, snapshot::Item};
    /// use mtu_solver::Kind;
    /// let mut inc = Incremental::new(Settings::default());
    /// let state = inc.apply(read(TWO_SITES).objects.into_iter().map(Event::Apply));
    /// assert_eq!(state.nodes["wa"][&Item::Fabric], 1400);
    /// let lower = read(&TWO_SITES.replace("tunnelMTU: 1400", "tunnelMTU: 1300")).objects;
    /// let ab = lower.into_iter().find(|o| o.kind() == Kind::SitePeering).expect("ab");
    /// let state = inc.apply([Event::Apply(ab)]);
    /// assert_eq!((state.generation, state.nodes["wa"][&Item::Fabric]), (2, 1300));
    /// ```
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
    /// Costs a clone of the input, what [`diff`] costs for the difference, and a build of the
    /// topology for the diagnostics.
    ///
    /// ```
    /// # use mtu_solver::{Settings, doc_cluster::TWO_SITES, load, whatif::Input};
    /// # let read = |yaml: &str| {
    /// #     let d = load::from_sources([("cluster.yaml", yaml)]);
    /// #     let settings = Settings::default();
    /// #     Input { objects: d.objects, diagnostics: d.diagnostics, settings }
    /// # };
    /// # use mtu_solver::{incremental::{Event, Incremental}, snapshot::Item};
    /// let mut inc = Incremental::new(Settings::default());
    /// inc.apply(read(TWO_SITES).objects.into_iter().map(Event::Apply));
    /// let lower = Settings { default_underlay: 1400, ..Settings::default() };
    /// let state = inc.set_settings(lower.clone());
    /// assert_eq!(state.nodes["wa"][&Item::Fabric], 1342, "1400 − GENEVE 58");
    /// assert_eq!(inc.input().settings, lower);
    /// ```
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
