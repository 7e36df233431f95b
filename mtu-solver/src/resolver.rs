//! [`Resolver`]: the entry point for tools that embed the resolver. It owns one cluster's
//! objects and their validated topology, takes node names and mutations, and returns owned,
//! thread-safe results (`Send + Sync`) with their explanations rendered. No result of one
//! resolver can be handed to another: nothing of its API takes a result, an interned
//! explanation or a node ID.

mod planned;
mod warm;

pub use crate::query::{Destination, QueryError, routes_carrying};
pub use crate::report::Explanations;
pub use planned::Planned;

use warm::{Planner, RECENT_PLANS, Recent, Rendered, Warm};

use crate::report::explanation::{self, Explanation, Question, Want};
use crate::report::{self, NodeOut, ResolveOut};
use crate::solver::{Settings, Solver};
use crate::stream::Workers;
use crate::whatif::{self, Base, Input, Manifests, Mutation, MutationError, WhatIf};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};
use topology_core::decode::Decoded;
use topology_core::diag::{Diagnostic, Severity, sort_diagnostics};
use topology_core::ids::NodeId;
use topology_core::model::Topology;

#[doc = include_str!("resolver.md")]
pub struct Resolver {
    warm: Warm,
    level: Explanations,
    /// Forwarding paths walked per learned route in [`Resolver::explain`].
    paths: usize,
    /// Every diagnostic, once asked for ([`Resolver::diagnostics`]).
    diagnostics: OnceLock<Vec<Diagnostic>>,
    /// Node IDs by name, once a question names a node (a lookup per question).
    ids: OnceLock<FxHashMap<Arc<str>, NodeId>>,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver")
            .field("nodes", &self.topology().nodes.len())
            .field("settings", self.settings())
            .field("explanations", &self.level)
            .finish_non_exhaustive()
    }
}

/// The input had errors and the resolver was asked to be strict ([`Resolver::strict`]).
/// Its message counts the errors and shows the first, located.
///
/// ```
/// use mtu_solver::{Resolver, Settings, load};
/// let quoted = mtu_solver::doc_cluster::TWO_SITES.replace("tunnelMTU: 1400", "tunnelMTU: '1400'");
/// let refused = Resolver::strict(load::from_sources([("cluster.yaml", quoted)]), Settings::default());
/// let shown = refused.expect_err("a quoted cap").to_string();
/// assert!(shown.starts_with("the input has 1 error: cluster.yaml:16: error E-FIELD-TYPE"), "{shown}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the input has {} error{}: {}", errors.len(), if errors.len() == 1 { "" } else { "s" }, first(errors))]
pub struct InputRefused {
    /// The error diagnostics, in output order.
    pub errors: Vec<Diagnostic>,
}

fn first(errors: &[Diagnostic]) -> String {
    errors.first().map(ToString::to_string).unwrap_or_default()
}

impl Resolver {
    /// A resolver of `decoded` objects under `settings`, its results explained by the bound
    /// term ([`Explanations::Bound`]). Costs one build of the topology (linear in the
    /// objects); nothing is resolved until asked.
    ///
    /// ```
    /// use mtu_solver::{Resolver, Settings, doc_cluster::TWO_SITES, load};
    /// let settings = Settings { default_underlay: 1400, ..Settings::default() };
    /// let resolver = Resolver::new(load::from_sources([("cluster.yaml", TWO_SITES)]), settings);
    /// assert_eq!(resolver.plan("wa")?.links[0].mtu, 1342); // 1400 − GENEVE's 58, below the cap
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn new(decoded: Decoded, settings: Settings) -> Resolver {
        let base = Base::new(Input {
            objects: decoded.objects,
            diagnostics: decoded.diagnostics,
            settings,
        });
        Resolver::over(base, Explanations::default())
    }

    /// [`Resolver::new`], refusing input with errors as the binary's default exit status
    /// does (`--fail-on error`): a document that did not decode, an invalid field, an object
    /// that names nothing. Costs a resolve of every node (the resolver's findings are among
    /// the diagnostics), kept for later questions.
    ///
    /// ```
    /// use mtu_solver::{Resolver, Settings, doc_cluster::TWO_SITES, load, topology_core::diag::Code};
    /// let read = |yaml: &str| load::from_sources([("cluster.yaml", yaml)]);
    /// assert!(Resolver::strict(read(TWO_SITES), Settings::default()).is_ok());
    /// let quoted = read(&TWO_SITES.replace("tunnelMTU: 1400", "tunnelMTU: '1400'")); // wrong type
    /// let first = &Resolver::strict(quoted, Settings::default()).expect_err("an error").errors[0];
    /// assert_eq!((first.code, first.field.as_str()), (Code::FieldType, "spec.tunnelMTU"));
    /// ```
    pub fn strict(decoded: Decoded, settings: Settings) -> Result<Resolver, InputRefused> {
        let r = Resolver::new(decoded, settings);
        if r.has_errors() {
            let errors = r
                .diagnostics()
                .iter()
                .filter(|d| d.severity == Severity::Error)
                .cloned()
                .collect();
            return Err(InputRefused { errors });
        }
        Ok(r)
    }

    /// The same resolver, its results explained at `level`; what it memoized stays. Free.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::Explanations;
    /// let bound = resolver.plan("wa")?.links[0].explanation.clone().expect("explained");
    /// assert_eq!(bound.terms, None); // the bound term alone
    /// let full = resolver.with_explanations(Explanations::Full); // every term
    /// let why = full.plan("wa")?.links[0].explanation.clone().expect("explained");
    /// let terms = why.terms.clone().unwrap_or_default();
    /// assert!(terms.iter().any(|t| (&*t.term, t.value) == ("auto", 1442)), "{terms:?}"); // 1500 − 58
    /// let bare = full.with_explanations(Explanations::None); // values alone
    /// assert_eq!(bare.plan("wa")?.links[0].explanation, None);
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn with_explanations(mut self, level: Explanations) -> Resolver {
        self.level = level;
        self
    }

    /// The same resolver, its [`Resolver::explain`] walking at most `paths` forwarding paths
    /// of each learned route (the binary's `--paths`; [`DEFAULT_PATHS`](explanation::DEFAULT_PATHS)
    /// when not told). The hops that bind are listed wherever they are. Free.
    ///
    /// ```
    /// use mtu_solver::{Destination, Resolver, Settings, load};
    /// // Worker a1 reaches Site b's pods through either of two hub gateways.
    /// let hub = load::from_sources([("hub.yaml", mtu_solver::doc_cluster::HUB_AND_SPOKE)]);
    /// let resolver = Resolver::new(hub, Settings::default()).with_paths(1);
    /// let why = resolver.explain("a1", "10.102.0.9".parse::<Destination>()?)?;
    /// let paths = why.values[0].paths.as_ref().expect("a learned route");
    /// assert_eq!((paths.total, paths.shown.len()), (2, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_paths(mut self, paths: usize) -> Resolver {
        self.paths = paths;
        self
    }

    /// The level its results are explained at. Free.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::Explanations::{Bound, Full};
    /// assert_eq!(resolver.explanations(), Bound);
    /// assert_eq!(resolver.with_explanations(Full).explanations(), Full);
    /// ```
    pub fn explanations(&self) -> Explanations {
        self.level
    }

    fn over(base: Base, level: Explanations) -> Resolver {
        let warm = Warm::new(base, |base| {
            Mutex::new(Planner {
                solver: Solver::new(base.topology(), base.input().settings.clone()),
                recent: VecDeque::new(),
                rendered: Rendered::new(),
            })
        });
        Resolver {
            warm,
            level,
            paths: explanation::DEFAULT_PATHS,
            diagnostics: OnceLock::new(),
            ids: OnceLock::new(),
        }
    }

    /// Runs `f` on the warm planner (a question at a time: concurrent callers wait).
    fn planner<T>(&self, f: impl FnOnce(&Topology, &mut Planner<'_>) -> T) -> T {
        self.warm.with_dependent(|base, planner| {
            // A panic while the lock was held poisons it; the memo and the plans are still
            // valid (they only hold finished answers).
            let mut planner = planner.lock().unwrap_or_else(|p| p.into_inner());
            f(base.topology(), &mut planner)
        })
    }

    /// Runs `f` on the warm solver.
    fn solve<T>(&self, f: impl FnOnce(&Topology, &mut Solver<'_>) -> T) -> T {
        self.planner(|topo, p| f(topo, &mut p.solver))
    }

    /// Runs `f` on node `n`'s plan (planned once while it is among the [`RECENT_PLANS`] asked
    /// about last) and the warm solver.
    fn on_plan<T>(
        &self,
        n: NodeId,
        f: impl FnOnce(&Topology, &mut Solver<'_>, &Recent, &mut Rendered) -> T,
    ) -> T {
        self.planner(|topo, p| {
            let Planner {
                solver,
                recent,
                rendered,
            } = p;
            // The plan asked about moves to the back (the newest), so the plans kept are those
            // asked about last, however long ago each was first made.
            let kept = recent
                .iter()
                .position(|r| r.node == n)
                .and_then(|i| recent.remove(i));
            let r = kept.unwrap_or_else(|| Recent {
                node: n,
                plan: solver.plan(n),
            });
            let out = f(topo, solver, &r, rendered);
            if recent.len() >= RECENT_PLANS {
                recent.pop_front();
            }
            recent.push_back(r);
            out
        })
    }

    fn base(&self) -> &Base {
        self.warm.borrow_owner()
    }

    /// The validated topology. Free.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let topo = resolver.topology();
    /// assert_eq!((topo.sites.len(), topo.site_peerings.len(), topo.nodes.len()), (2, 1, 2));
    /// ```
    pub fn topology(&self) -> &Topology {
        self.base().topology()
    }

    /// The settings it resolves with. Free.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Mutation, Settings};
    /// assert_eq!(resolver.settings(), &Settings::default());
    /// assert_eq!(resolver.apply(&[Mutation::AgentMtu(1300)])?.settings().cfg_mtu, 1300);
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn settings(&self) -> &Settings {
        &self.base().input().settings
    }

    /// Every finding the binary prints for the whole cluster, in output order: the decoder's
    /// and the model's, and the resolver's (`W-IPV6-BELOW-1280`, `W-PUBLISHED-STALE`). The
    /// first call resolves every node (as [`Resolver::plan_all`]); later ones are free.
    ///
    /// ```
    /// use mtu_solver::{Resolver, Settings, load};
    /// let typo = mtu_solver::doc_cluster::TWO_SITES.replace("tunnelMTU", "tunelMTU"); // misspelt
    /// let typo = Resolver::new(load::from_sources([("typo.yaml", typo)]), Settings::default());
    /// let found: Vec<_> = typo.diagnostics().iter().map(|d| (d.code.as_str(), &*d.object)).collect();
    /// assert_eq!(found, [("W-UNKNOWN-FIELD", "SitePeering/ab")]);
    /// assert_eq!(typo.plan("wa")?.links[0].mtu, 1442); // read as absent
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn diagnostics(&self) -> &[Diagnostic] {
        self.diagnostics.get_or_init(|| {
            self.solve(|topo, solver| {
                let plans = solver.plan_all();
                all_diagnostics(topo, &plans)
            })
        })
    }

    /// The decoder's and the model's findings alone, in output order: what the input says,
    /// without resolving anything. Costs a copy of the topology's list.
    ///
    /// ```
    /// use mtu_solver::{Resolver, Settings, load};
    /// let typo = mtu_solver::doc_cluster::TWO_SITES.replace("tunnelMTU", "tunelMTU");
    /// let typo = Resolver::new(load::from_sources([("typo.yaml", typo)]), Settings::default());
    /// let said = typo.input_diagnostics();
    /// assert_eq!((said.len(), said[0].field.as_str()), (1, "spec.tunelMTU"));
    /// assert_eq!(said, typo.diagnostics());
    /// ```
    pub fn input_diagnostics(&self) -> Vec<Diagnostic> {
        let mut d = self.base().topology().diagnostics.clone();
        sort_diagnostics(&mut d);
        d
    }

    /// Whether any diagnostic is an error: the input was not read as written, and the
    /// binary exits 1 by default. Costs what [`Resolver::diagnostics`] costs.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Resolver, Settings, doc_cluster::TWO_SITES, load};
    /// assert!(!resolver.has_errors());
    /// let quoted = TWO_SITES.replace("tunnelMTU: 1400", "tunnelMTU: '1400'"); // the wrong type
    /// let broken = Resolver::new(load::from_sources([("quoted.yaml", quoted)]), Settings::default());
    /// assert!(broken.has_errors());
    /// assert_eq!(broken.plan("wa")?.links[0].mtu, 576); // the cap fails closed
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn has_errors(&self) -> bool {
        self.diagnostics()
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// The names of the nodes it resolves, in order. Free.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// assert_eq!(resolver.node_names().collect::<Vec<_>>(), ["wa", "wb"]);
    /// ```
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.base().topology().nodes.iter().map(|n| &*n.name)
    }

    /// One node's plan: links, routes, devices, fabric and published values, each explained
    /// at the resolver's level; equal to that node's entry of [`Resolver::plan_all`]. Costs a
    /// plan of the node on the warm solver (what earlier questions memoized is reused).
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let wa = resolver.plan("wa")?;
    /// assert_eq!((&*wa.site, wa.fabric_mtu, &*wa.links[0].peer, wa.links[0].mtu), ("a", 1400, "wb", 1400));
    /// assert!(matches!(resolver.plan("wc"), Err(mtu_solver::QueryError::NoSuchNode { .. })));
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn plan(&self, node: &str) -> Result<NodeOut, QueryError> {
        Ok(self.node_out(self.node_id(node)?))
    }

    fn node_out(&self, id: NodeId) -> NodeOut {
        let level = self.level;
        self.on_plan(id, |topo, solver, recent, rendered| {
            rendered.render(solver, level, |r| report::node_out(topo, r, &recent.plan))
        })
    }

    /// What `node`'s links carry by its plan, to compare with probes of the wire
    /// ([`crate::probe`]), sorted by peer name. Costs a plan of the node on the warm solver.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let targets = resolver.probe_targets("wa")?;
    /// let wb = &targets[0];
    /// assert_eq!((targets.len(), &*wb.peer, wb.link_mtu), (1, "wb", 1400));
    /// assert_eq!((wb.planned_underlay, wb.overhead), (1500, 58));
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn probe_targets(&self, node: &str) -> Result<Vec<crate::probe::Target>, QueryError> {
        let id = self.node_id(node)?;
        Ok(self.on_plan(id, |_, solver, recent, _| {
            crate::probe::targets(solver, &recent.plan)
        }))
    }

    /// Every node's plan and the diagnostics: the `resolve -o json` document, explained at the
    /// resolver's level. Costs a resolve of every node on the warm solver.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let all = resolver.plan_all();
    /// assert!(all.diagnostics.is_empty());
    /// assert_eq!(all.nodes, [resolver.plan("wa")?, resolver.plan("wb")?]);
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn plan_all(&self) -> ResolveOut {
        let level = self.level;
        self.planner(|topo, p| {
            let plans = p.solver.plan_all();
            let diags = all_diagnostics(topo, &plans);
            p.rendered.render(&p.solver, level, |r| {
                report::resolve_out(topo, r, &plans, &diags)
            })
        })
    }

    /// What changes if `mutations` are applied, in order, each change explained at the
    /// resolver's level. A mutation that names something the cluster does not have, or a cap
    /// outside 576..9000, is refused. Costs what the binary's `what-if` costs: the values the
    /// mutations can reach, re-resolved on a solver of its own.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Kind, Mutation};
    /// let cap = Mutation::SetCap { kind: Kind::SitePeering, name: "ab".into(), mtu: 1300 };
    /// let what_if = resolver.what_if(&[cap])?;
    /// assert_eq!(what_if.nodes_affected(), 2);
    /// assert!(what_if.changes.iter().all(|c| (c.before, c.after) == (Some(1400), Some(1300))));
    /// let wild = Mutation::SetCap { kind: Kind::SitePeering, name: "ab".into(), mtu: 100 };
    /// assert!(resolver.what_if(&[wild]).is_err(), "a cap outside 576..9000");
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn what_if(&self, mutations: &[Mutation]) -> Result<WhatIf, MutationError> {
        whatif::what_if_over(
            self.base().input(),
            self.base().topology(),
            mutations,
            self.level,
        )
    }

    /// The resolver of the cluster after `mutations`, applied in order as [`Resolver::what_if`]
    /// applies them: same settings (but for what an `underlay` or `agent-mtu` mutation sets)
    /// and level of explanation, so its values are the ones `what_if` reports as after, and its
    /// [`Resolver::plan_all`] is a fresh resolver's of the changed input. A mutation refused by
    /// `what_if` is refused here, and `self` is left as it was. Costs a clone of the input and
    /// a build of the topology; nothing of `self`'s memo or plans is shared (they belong to
    /// its topology), so the changed resolver starts cold.
    ///
    /// ```
    /// use mtu_solver::{Kind, Mutation, Resolver, Settings, load};
    /// let yaml = "
    /// apiVersion: net.unbounded-cloud.io/v1alpha1
    /// kind: Site
    /// metadata: {name: a}
    /// spec: {nodeCidrs: [10.0.0.0/16], podCidrAssignments: [{cidrBlocks: [10.9.0.0/16]}]}
    /// ---
    /// apiVersion: v1
    /// kind: Node
    /// metadata: {name: n1, labels: {net.unbounded-cloud.io/site: a}}
    /// status: {addresses: [{type: InternalIP, address: 10.0.0.1}]}
    /// ---
    /// apiVersion: v1
    /// kind: Node
    /// metadata: {name: n2, labels: {net.unbounded-cloud.io/site: a}}
    /// status: {addresses: [{type: InternalIP, address: 10.0.0.2}]}
    /// ";
    /// let resolver = Resolver::new(load::from_sources([("cluster.yaml", yaml)]), Settings::default());
    /// let cap = Mutation::SetCap { kind: Kind::Site, name: "a".into(), mtu: 1400 };
    /// let capped = resolver.apply(&[cap])?;
    /// assert_eq!(capped.plan("n1")?.links[0].mtu, 1400);
    /// // The resolver asked stays on the cluster as it is.
    /// assert_eq!(resolver.plan("n1")?.links[0].mtu, 1442);
    /// // A refused mutation changes nothing.
    /// let typo = Mutation::SetCap { kind: Kind::Site, name: "b".into(), mtu: 1400 };
    /// assert!(resolver.apply(&[typo]).is_err());
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn apply(&self, mutations: &[Mutation]) -> Result<Resolver, MutationError> {
        let after = whatif::changed_over(self.base().input(), self.topology(), mutations)?;
        Ok(Resolver::over(Base::new(after), self.level))
    }

    /// What `mutations` change, as the manifests an operator applies to the cluster: a JSON
    /// merge patch per changed object, each a partial manifest for `kubectl patch -f FILE
    /// --type merge --patch-file FILE`, and the changes no object carries (the agent's `mtu`,
    /// a pool's controller-written status); [`Manifests`] says what each mutation is written
    /// as. Refuses what [`Resolver::what_if`] refuses. Costs a clone of the input and a
    /// comparison of each object with its changed copy.
    ///
    /// ```
    /// use mtu_solver::{Kind, Mutation, Resolver, Settings, load};
    /// let yaml = "
    /// apiVersion: net.unbounded-cloud.io/v1alpha1
    /// kind: Site
    /// metadata: {name: a}
    /// spec: {nodeCidrs: [10.0.0.0/16], tunnelMTU: 1400}
    /// ---
    /// apiVersion: v1
    /// kind: Node
    /// metadata: {name: n1, labels: {net.unbounded-cloud.io/site: a, kubernetes.io/os: linux}}
    /// status: {addresses: [{type: InternalIP, address: 10.0.0.1}]}
    /// ";
    /// let resolver = Resolver::new(load::from_sources([("cluster.yaml", yaml)]), Settings::default());
    /// let change = [
    ///     Mutation::ClearCap { kind: Kind::Site, name: "a".into() },
    ///     Mutation::Underlay { node: "n1".into(), mtu: 9000 },
    ///     Mutation::AgentMtu(1400),
    /// ];
    /// let manifests = resolver.manifests(&change)?;
    /// let site = &manifests.objects()[0];
    /// assert_eq!((site.kind(), site.name()), (Kind::Site, "a"));
    /// assert_eq!(site.to_yaml(), "\
    /// apiVersion: net.unbounded-cloud.io/v1alpha1
    /// kind: Site
    /// metadata:
    ///   name: a
    /// spec:
    ///   tunnelMTU: null
    /// ");
    /// // The Node's other labels are not named, so a merge patch keeps them.
    /// assert_eq!(manifests.objects()[1].to_yaml(), "\
    /// apiVersion: v1
    /// kind: Node
    /// metadata:
    ///   name: n1
    ///   annotations:
    ///     mtu.unbounded-cloud.io/underlay-mtu: \"9000\"
    /// ");
    /// // The agent's mtu is a setting of the agent, not an object.
    /// assert_eq!(manifests.unwritten(), [mtu_solver::Unwritten::AgentMtu { mtu: 1400 }]);
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn manifests(&self, mutations: &[Mutation]) -> Result<Manifests, MutationError> {
        whatif::manifests_over(self.base().input(), self.topology(), mutations)
    }

    /// Why `node`'s values are what they are: what the binary's `explain` prints. Every value
    /// the question asks about (all of them; the link to a peer and the direct routes over it;
    /// or every route that carries a destination, longest match first, the first being the one
    /// the kernel forwards by) with every term located at its `file:line`, and each learned
    /// route with its forwarding paths (at most [`Resolver::with_paths`] of them walked) and
    /// its hops, the binding ones marked. A peer it has no link to is [`QueryError::NoLink`], a
    /// destination no route carries [`QueryError::NoRoute`]. Costs a plan of the node on the
    /// warm solver (none when it is among the last 16 asked about) and a walk of each listed
    /// learned route: a few microseconds a route on a 5,000-node cluster, 10 to 20 times its
    /// share of the plan. The walk's steps through each gateway and the hops it renders are
    /// kept and shared by later routes through them, so the resolver grows with the routes
    /// explained, up to a step per gateway and prefix.
    ///
    /// ```
    /// # use mtu_solver::Destination;
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let to_wb: Destination = "10.8.1.9".parse()?;
    /// let why = resolver.explain("wa", to_wb)?;
    /// let route = &why.values[0];
    /// let peering = mtu_solver::ObjectRef::new(mtu_solver::Kind::SitePeering, "ab");
    /// assert_eq!((route.value, route.bound.object.as_ref()), (1400, Some(&peering)));
    /// assert_eq!(route.bound.location.as_deref(), Some("cluster.yaml:16"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn explain(
        &self,
        node: &str,
        question: impl Into<Question>,
    ) -> Result<Explanation, QueryError> {
        let id = self.node_id(node)?;
        let want = Want::of(self.topology(), &question.into())?;
        self.on_plan(id, |_, solver, recent, rendered| {
            explanation::explanation(
                solver,
                id,
                &recent.plan,
                want,
                self.paths,
                &mut rendered.full,
            )
        })
    }

    /// Runs `f` on the resolver's warm solver: for a tool that reads what the results do not
    /// carry (memoized reach, explanation trees, the forwarding graph), as the binary's `graph`
    /// does. What `f` memoizes stays for later questions; concurrent questions wait for `f`.
    /// Costs what `f` asks of the solver.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let links = resolver.with_solver(|solver| {
    ///     let wa = solver.topo().find_node("wa").expect("wa");
    ///     solver.plan(wa).links.len()
    /// });
    /// assert_eq!(links, 1);
    /// ```
    pub fn with_solver<T>(&self, f: impl FnOnce(&mut Solver<'_>) -> T) -> T {
        self.solve(|_, solver| f(solver))
    }

    /// The first of `mutations` that [`Resolver::what_if`] would refuse, by index, and why:
    /// for a tool that names the flag or line that asked for it. Costs a look-up per mutation.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Kind, Mutation};
    /// let asked = [
    ///     Mutation::SetCap { kind: Kind::SitePeering, name: "ab".into(), mtu: 1300 },
    ///     Mutation::SetCap { kind: Kind::SitePeering, name: "ba".into(), mtu: 1300 },
    /// ];
    /// let (index, why) = resolver.refused(&asked).expect("there is no SitePeering/ba");
    /// assert_eq!(index, 1);
    /// assert!(why.to_string().contains("ab"), "{why}");
    /// ```
    pub fn refused(&self, mutations: &[Mutation]) -> Option<(usize, MutationError)> {
        whatif::first_refused(self.base().input(), self.topology(), mutations)
    }

    /// Every value that differs between this cluster and `after` (another input of the same
    /// cluster, read with its own settings), each change explained at this resolver's level:
    /// what the binary's `what-if --after` answers. Costs what [`Resolver::what_if`] costs for
    /// the difference: per value for cap changes, the nodes around a node for underlay changes,
    /// every node when links or paths may change.
    ///
    /// ```
    /// # use mtu_solver::{Resolver, Settings, load};
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let lower = mtu_solver::doc_cluster::TWO_SITES.replace("tunnelMTU: 1400", "tunnelMTU: 1350");
    /// let after = Resolver::new(load::from_sources([("after.yaml", lower)]), Settings::default());
    /// let change = resolver.compare(&after);
    /// assert!(change.changes.iter().all(|c| c.after == Some(1350)));
    /// ```
    pub fn compare(&self, after: &Resolver) -> WhatIf {
        whatif::compare(self.base().input(), after.base().input(), self.level)
    }

    /// Plans `nodes` (by name, in the order given) on several threads and hands each on as
    /// soon as it is planned, without holding every plan: what the binary's `resolve` writes
    /// node after node. `render` turns each [`Planned`] node into a value on the thread that
    /// planned it (its explanations at the resolver's level); `consume` receives the values in
    /// the order of `nodes`, each with its plan's diagnostics, on the calling thread. A name
    /// the cluster does not have is refused before anything is planned; an error of `consume`
    /// stops the workers and is returned. Costs a resolve of the nodes on solvers of the
    /// workers' own ([`crate::stream`]): the resolver's warm solver is not used, so a stream
    /// does not wait for other questions, nor they for it.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::stream::Workers;
    /// let workers = Workers { threads: 2, chunk: 1, renew: None };
    /// let mut fabrics = Vec::new();
    /// resolver.plan_each(
    ///     ["wa", "wb"],
    ///     workers,
    ///     |mut planned| planned.out().fabric_mtu,
    ///     |fabric, _diagnostics| {
    ///         fabrics.push(fabric);
    ///         Ok::<_, mtu_solver::Error>(())
    ///     },
    /// )?;
    /// assert_eq!(fabrics, [1400, 1400]);
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn plan_each<T, E>(
        &self,
        nodes: impl IntoIterator<Item = impl AsRef<str>>,
        workers: Workers,
        render: impl Fn(Planned<'_, '_, '_>) -> T + Sync,
        consume: impl FnMut(T, Vec<Diagnostic>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        T: Send,
        E: From<QueryError>,
    {
        let ids = nodes
            .into_iter()
            .map(|n| self.node_id(n.as_ref()))
            .collect::<Result<Vec<NodeId>, QueryError>>()?;
        let topo = self.topology();
        crate::stream::plan_in_order(
            topo,
            self.settings(),
            &ids,
            workers,
            self.level,
            |renderer, plan| {
                render(Planned {
                    topo,
                    renderer,
                    plan,
                })
            },
            consume,
        )
    }

    fn node_id(&self, name: &str) -> Result<NodeId, QueryError> {
        let topo = self.base().topology();
        let ids = self.ids.get_or_init(|| {
            topo.nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.name.clone(), NodeId::from_idx(i)))
                .collect()
        });
        if let Some(id) = ids.get(name) {
            return Ok(*id);
        }
        topo.find_node(name).map_err(|e| QueryError::NoSuchNode {
            name: name.to_string(),
            nearest: e.nearest,
        })
    }
}

/// The topology's diagnostics and every plan's, in output order.
fn all_diagnostics(topo: &Topology, plans: &[crate::plan::NodePlan]) -> Vec<Diagnostic> {
    let mut diags = topo.diagnostics.clone();
    for p in plans {
        diags.extend(p.diagnostics.iter().cloned());
    }
    sort_diagnostics(&mut diags);
    diags
}

#[cfg(test)]
mod tests {
    use super::{RECENT_PLANS, Resolver};
    use crate::Settings;
    use test_utils::testkit::scale::ScaleSpec;
    use topology_core::ids::NodeId;

    /// The nodes whose plans `resolver` keeps, oldest first.
    fn kept(resolver: &Resolver) -> Vec<NodeId> {
        resolver.planner(|_, p| p.recent.iter().map(|r| r.node).collect())
    }

    /// A node asked about again and again stays among the kept plans while more other nodes
    /// than are kept are asked about in between; a node not asked about again leaves.
    #[test]
    fn the_plans_kept_are_those_asked_about_last() {
        let yaml = ScaleSpec::small().generate();
        let decoded = crate::load::from_sources([("small.yaml", yaml)]);
        let resolver = Resolver::new(decoded, Settings::default());
        let names: Vec<String> = resolver
            .topology()
            .nodes
            .iter()
            .map(|n| n.name.to_string())
            .collect();
        let others = RECENT_PLANS * 2;
        assert!(names.len() > others + 1, "{} nodes", names.len());
        let hot = names[0].as_str();
        let hot_id = resolver.topology().find_node(hot).expect("the hot node");
        let first_other = resolver.topology().find_node(&names[1]).expect("a node");
        for other in &names[1..=others] {
            resolver.plan(hot).expect("a plan");
            resolver.plan(other).expect("a plan");
        }
        let now = kept(&resolver);
        assert_eq!(now.len(), RECENT_PLANS);
        assert!(now.contains(&hot_id), "{now:?}");
        assert!(!now.contains(&first_other), "{now:?}");
        assert_eq!(
            now.last(),
            Some(
                &resolver
                    .topology()
                    .find_node(&names[others])
                    .expect("a node")
            )
        );
    }
}
