//! The JSON/YAML shape of `resolve`: typed, owned and `Send + Sync` (names are the
//! topology's shared `Arc<str>`s, explanations shared `Arc`s), serialized and deserialized by
//! serde: every type here reads back what it writes. Explanation texts are rendered once per
//! distinct explanation and shared.

mod diagnostics;
pub mod explanation;
pub mod hops;
mod routes;

use diagnostics::InputDiagnostics;
pub use diagnostics::{DiagIter, DiagList};

use crate::explain::ExplId;
use crate::plan::{DeviceRef, NodePlan, RouteKind, Value};
use crate::solver::Solver;
use crate::solver::hops::Hop;
use hops::HopOut;
use ipnet::IpNet;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::sync::Arc;
use topology_core::diag::{Code, Diagnostic, Severity};
use topology_core::ids::NodeId;
use topology_core::model::{Role, Topology};
use topology_core::net::{LinkKind, RouteType};
pub use topology_core::vocab::ObjectRef;
use topology_core::vocab::Protocol;

/// One rendered term: the human text (`term`, `source`) next to what a script reads
/// (`object`, `field`, `value`, and in `explain` the `location` it was read at).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct TermOut {
    /// Short name (`auto`, `cfg`, `Site/A spec.tunnelMTU`, ...).
    pub term: String,
    /// Its value.
    pub value: u32,
    /// Where it came from, in words that reproduce its arithmetic.
    pub source: String,
    /// The object it reads (serialized as `Kind/name`), null for agent settings, defaults and
    /// links.
    pub object: Option<ObjectRef>,
    /// The field of that object (`spec.tunnelMTU`, an annotation), null with `object`.
    pub field: Option<String>,
    /// `file:line` of that field, where it was read from a file (`explain` only: `resolve`
    /// output does not depend on where objects were read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
}

/// Terms, lowest first, shared: the values (and hops) an explanation lists with the same terms
/// share one list. Reads as a slice; written as a list.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
#[serde(transparent)]
pub struct TermList(Arc<[Arc<TermOut>]>);

impl std::ops::Deref for TermList {
    type Target = [Arc<TermOut>];

    fn deref(&self) -> &[Arc<TermOut>] {
        &self.0
    }
}

impl<'a> IntoIterator for &'a TermList {
    type Item = &'a Arc<TermOut>;
    type IntoIter = std::slice::Iter<'a, Arc<TermOut>>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl FromIterator<Arc<TermOut>> for TermList {
    fn from_iter<I: IntoIterator<Item = Arc<TermOut>>>(terms: I) -> Self {
        TermList(terms.into_iter().collect())
    }
}

/// A rendered explanation.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ExplOut {
    /// The binding term.
    pub bound: Arc<TermOut>,
    /// Every term considered (with `--explain full`); values that share a term share it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<Vec<Arc<TermOut>>>,
}

/// How much of each value's explanation results carry, chosen once (a
/// [`Resolver`](crate::Resolver)'s level; what the binary's `--explain` chooses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Explanations {
    /// Values alone: no explanation is rendered, and results carry none (`explanation` is
    /// null and left out of their JSON).
    None,
    /// The term that binds each value (`resolve`'s default).
    #[default]
    Bound,
    /// Every term considered (`--explain full`; `explain`'s answers): several times the
    /// memory and time of [`Explanations::Bound`] on large clusters.
    Full,
}

/// A [`Renderer`]'s caches while its solver plans more nodes.
#[derive(Debug, Default)]
pub struct RenderCache {
    full: bool,
    values_only: bool,
    cache: FxHashMap<ExplId, Arc<ExplOut>>,
    bound_cache: FxHashMap<ExplId, Arc<ExplOut>>,
    terms: FxHashMap<ExplId, Arc<TermOut>>,
    located: FxHashMap<ExplId, Arc<TermOut>>,
    located_lists: FxHashMap<ExplId, hops::LocatedLeaves>,
    rendered_hops: FxHashMap<Hop, Arc<HopOut>>,
    described: FxHashMap<NodeId, Arc<str>>,
    routes: routes::RouteTails,
    path_words: FxHashMap<routes::PathKey, Arc<str>>,
    input_diagnostics: Option<Arc<InputDiagnostics>>,
}

impl RenderCache {
    /// Empty caches of a renderer at `level`.
    /// Costs nothing: every cache starts empty.
    ///
    /// ```
    /// use mtu_solver::{Explanations, report::RenderCache};
    /// let full = format!("{:?}", RenderCache::at(Explanations::Full));
    /// assert!(full.contains("full: true, values_only: false, cache: {}"), "{full}");
    /// ```
    pub fn at(level: Explanations) -> Self {
        RenderCache {
            full: level == Explanations::Full,
            values_only: level == Explanations::None,
            ..Default::default()
        }
    }
}

/// Renders and caches explanations.
pub struct Renderer<'s, 't> {
    solver: &'s Solver<'t>,
    full: bool,
    /// [`Explanations::None`]: [`Renderer::explained`] renders nothing.
    values_only: bool,
    cache: FxHashMap<ExplId, Arc<ExplOut>>,
    bound_cache: FxHashMap<ExplId, Arc<ExplOut>>,
    /// The terms of full explanations: the leaves many values share (a node's underlay, a
    /// Site's cap) are worded once.
    terms: FxHashMap<ExplId, Arc<TermOut>>,
    /// Terms with where they were written (`explain`), worded and located once.
    located: RefCell<FxHashMap<ExplId, Arc<TermOut>>>,
    /// The located terms of a value (`explain`), listed once.
    located_lists: RefCell<FxHashMap<ExplId, hops::LocatedLeaves>>,
    /// Route hops (`explain`), rendered once.
    rendered_hops: RefCell<FxHashMap<Hop, Arc<HopOut>>>,
    /// Nodes as forwarding paths name them (`explain`), worded once.
    described: RefCell<FxHashMap<NodeId, Arc<str>>>,
    /// Learned routes' paths and hops after their first hops (`explain`), walked, worded and
    /// rendered once.
    routes: RefCell<routes::RouteTails>,
    /// Forwarding paths after their node (`explain`), worded once.
    path_words: RefCell<FxHashMap<routes::PathKey, Arc<str>>>,
    /// The topology's diagnostics, sorted and rendered once (`explain`).
    input_diagnostics: Option<Arc<InputDiagnostics>>,
}

impl<'s, 't> Renderer<'s, 't> {
    /// A renderer at `level`, its caches empty: [`Explanations::Full`] adds every term,
    /// [`Explanations::None`] renders values alone.
    /// Costs nothing: its caches start empty.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Explanations, report::{Renderer, node_out}};
    /// let wa = resolver.with_solver(|solver| {
    ///     let wa = solver.topo().find_node("wa").expect("wa");
    ///     let plan = solver.plan(wa);
    ///     node_out(solver.topo(), &mut Renderer::new(solver, Explanations::None), &plan)
    /// });
    /// assert_eq!((wa.fabric_mtu, wa.fabric_explanation), (1400, None)); // values alone
    /// ```
    pub fn new(solver: &'s Solver<'t>, level: Explanations) -> Self {
        Renderer::resume(solver, RenderCache::at(level))
    }

    /// A renderer that goes on with the caches of one suspended earlier on the same solver
    /// (which may have planned more nodes since: explanation IDs stay valid).
    pub(crate) fn resume(solver: &'s Solver<'t>, cache: RenderCache) -> Self {
        Renderer {
            solver,
            full: cache.full,
            values_only: cache.values_only,
            cache: cache.cache,
            bound_cache: cache.bound_cache,
            terms: cache.terms,
            located: RefCell::new(cache.located),
            located_lists: RefCell::new(cache.located_lists),
            rendered_hops: RefCell::new(cache.rendered_hops),
            described: RefCell::new(cache.described),
            routes: RefCell::new(cache.routes),
            path_words: RefCell::new(cache.path_words),
            input_diagnostics: cache.input_diagnostics,
        }
    }

    /// Ends the borrow of the solver (so that it can plan again), keeping the caches for
    /// [`Renderer::resume`].
    pub(crate) fn suspend(self) -> RenderCache {
        RenderCache {
            full: self.full,
            values_only: self.values_only,
            cache: self.cache,
            bound_cache: self.bound_cache,
            terms: self.terms,
            located: self.located.into_inner(),
            located_lists: self.located_lists.into_inner(),
            rendered_hops: self.rendered_hops.into_inner(),
            described: self.described.into_inner(),
            routes: self.routes.into_inner(),
            path_words: self.path_words.into_inner(),
            input_diagnostics: self.input_diagnostics,
        }
    }

    /// One term.
    /// Costs a wording of the term.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Explanations, Kind, ObjectRef, report::Renderer};
    /// let term = resolver.with_solver(|solver| {
    ///     let wa = solver.topo().find_node("wa").expect("wa");
    ///     let link = solver.plan(wa).links[0].mtu.expl;
    ///     let bound = solver.explanations().get(link).bound;
    ///     Renderer::new(solver, Explanations::Bound).term(bound)
    /// });
    /// assert_eq!((term.value, term.field.as_deref()), (1400, Some("spec.tunnelMTU")));
    /// assert_eq!(term.object, Some(ObjectRef::new(Kind::SitePeering, "ab")));
    /// ```
    pub fn term(&self, id: ExplId) -> TermOut {
        let topo = self.solver.topo();
        let (object, field) = self.solver.expl.term_origin(id, topo).unzip();
        TermOut {
            term: self.solver.expl.term_name(id, topo),
            value: self.solver.expl.value(id).get(),
            source: self.solver.expl.term_source(id, topo),
            // `term_origin` writes `Kind/name` with a kind this crate reads: it parses back.
            object: object.and_then(|o| o.parse().ok()),
            field,
            location: None,
        }
    }

    /// [`Renderer::term`], worded once per renderer.
    fn shared_term(&mut self, id: ExplId) -> Arc<TermOut> {
        if let Some(t) = self.terms.get(&id) {
            return t.clone();
        }
        let t = Arc::new(self.term(id));
        self.terms.insert(id, t.clone());
        t
    }

    /// A value's explanation at the renderer's level: none at [`Explanations::None`], else
    /// [`Renderer::expl`].
    pub(crate) fn explained(&mut self, id: ExplId) -> Option<Arc<ExplOut>> {
        (!self.values_only).then(|| self.expl(id))
    }

    /// An explanation (cached; without `terms`, by its binding term alone).
    /// Costs a wording of its terms the first time; a look-up after.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Explanations, report::Renderer};
    /// use std::sync::Arc;
    /// let (bound, full, shared) = resolver.with_solver(|solver| {
    ///     let wa = solver.topo().find_node("wa").expect("wa");
    ///     let id = solver.plan(wa).links[0].mtu.expl;
    ///     let mut full = Renderer::new(solver, Explanations::Full);
    ///     let once = full.expl(id);
    ///     let again = Arc::ptr_eq(&once, &full.expl(id));
    ///     (Renderer::new(solver, Explanations::Bound).expl(id), once, again)
    /// });
    /// assert_eq!((&bound.bound, bound.terms.as_ref()), (&full.bound, None)); // bound term alone
    /// let terms = full.terms.clone().unwrap_or_default();
    /// assert!(terms.iter().any(|t| (&*t.term, t.value) == ("auto", 1442))); // 1500 − 58
    /// assert!(shared); // rendered once per renderer
    /// ```
    pub fn expl(&mut self, id: ExplId) -> Arc<ExplOut> {
        if !self.full {
            return self.bound_only(self.solver.expl.get(id).bound);
        }
        if let Some(x) = self.cache.get(&id) {
            return x.clone();
        }
        let node = self.solver.expl.get(id);
        let bound = self.shared_term(node.bound);
        let leaves = self.solver.expl.leaves(id);
        let terms = Some(leaves.into_iter().map(|l| self.shared_term(l)).collect());
        let out = Arc::new(ExplOut { bound, terms });
        self.cache.insert(id, out.clone());
        out
    }

    /// [`Renderer::bound_only`] at this renderer's level: nothing at [`Explanations::None`].
    pub(crate) fn explained_by(&mut self, bound: ExplId) -> Option<Arc<ExplOut>> {
        (!self.values_only).then(|| self.bound_only(bound))
    }

    /// An explanation without `terms`, known by its binding term (cached by that term).
    pub(crate) fn bound_only(&mut self, bound: ExplId) -> Arc<ExplOut> {
        if let Some(x) = self.bound_cache.get(&bound) {
            return x.clone();
        }
        let out = Arc::new(ExplOut {
            bound: self.shared_term(bound),
            terms: None,
        });
        self.bound_cache.insert(bound, out.clone());
        out
    }
}

/// A link in output.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct LinkOut {
    /// Peer name.
    pub peer: Arc<str>,
    /// Kind.
    pub kind: LinkKind,
    /// Protocol.
    pub protocol: Protocol,
    /// MTU.
    pub mtu: u32,
    /// Why (none at [`Explanations::None`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Arc<ExplOut>>,
}

/// A route in output.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct RouteOut {
    /// Destination (serialized as canonical CIDR text).
    pub destination: IpNet,
    /// Route type.
    #[serde(rename = "type")]
    pub ty: RouteType,
    /// Kind.
    pub kind: RouteKind,
    /// MTU.
    pub mtu: u32,
    /// First hops.
    pub via: Vec<Arc<str>>,
    /// Pools on the hop list.
    pub distance: u32,
    /// Why (none at [`Explanations::None`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Arc<ExplOut>>,
}

/// A device in output.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct DeviceOut {
    /// Name (null for a per-peer device whose port is unknown).
    pub name: Option<Arc<str>>,
    /// The gateway peer of a per-peer device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<Arc<str>>,
    /// Protocol carried.
    pub protocol: Protocol,
    /// MTU.
    pub mtu: u32,
    /// Why: the link that sets the maximum (none at [`Explanations::None`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<Arc<ExplOut>>,
}

/// A published value in output.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct PublishedOut {
    /// Prefix (serialized as canonical CIDR text).
    pub destination: IpNet,
    /// Value.
    pub mtu: u32,
}

/// A node's role in output: `worker` or `gateway` (its pool is [`NodeOut::pool`]).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "lowercase")]
pub enum NodeRole {
    /// A worker.
    Worker,
    /// A gateway of a pool.
    Gateway,
}

impl NodeRole {
    /// The output name: `worker`, `gateway`.
    /// Costs a match.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::report::NodeRole;
    /// assert_eq!(resolver.plan("wa")?.role.as_str(), "worker");
    /// assert_eq!(NodeRole::Gateway.to_string(), NodeRole::Gateway.as_str());
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            NodeRole::Worker => "worker",
            NodeRole::Gateway => "gateway",
        }
    }
}

impl From<Role> for NodeRole {
    fn from(role: Role) -> NodeRole {
        match role {
            Role::Worker => NodeRole::Worker,
            Role::Gateway(_) => NodeRole::Gateway,
        }
    }
}

impl std::fmt::Display for NodeRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// A node in output.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct NodeOut {
    /// Name.
    pub name: Arc<str>,
    /// Site.
    pub site: Arc<str>,
    /// Worker or gateway.
    pub role: NodeRole,
    /// Pool, null for workers.
    pub pool: Option<Arc<str>>,
    /// Fabric MTU.
    #[serde(rename = "fabricMTU")]
    pub fabric_mtu: u32,
    /// MSS clamp, IPv4.
    #[serde(rename = "mssIPv4")]
    pub mss_ipv4: u32,
    /// MSS clamp, IPv6.
    #[serde(rename = "mssIPv6")]
    pub mss_ipv6: u32,
    /// Why the fabric is what it is.
    #[serde(rename = "fabricExplanation")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fabric_explanation: Option<Arc<ExplOut>>,
    /// Links.
    pub links: Vec<LinkOut>,
    /// Routes.
    pub routes: Vec<RouteOut>,
    /// Devices.
    pub devices: Vec<DeviceOut>,
    /// Published values (gateways only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<Vec<PublishedOut>>,
}

/// A diagnostic in output: a [`Diagnostic`] with its source written as `file:line`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct DiagOut {
    /// Severity.
    pub severity: Severity,
    /// Code.
    pub code: Code,
    /// Object.
    pub object: String,
    /// Field.
    pub field: String,
    /// Message.
    pub message: String,
    /// `file:line`.
    pub source: Option<String>,
}

impl From<&Diagnostic> for DiagOut {
    fn from(d: &Diagnostic) -> Self {
        DiagOut {
            severity: d.severity,
            code: d.code,
            object: d.object.to_string(),
            field: d.field.to_string(),
            message: d.message.to_string(),
            source: d.source.as_ref().map(|s| s.to_string()),
        }
    }
}

/// The `apiVersion` of every JSON/YAML document.
pub const API_VERSION: &str = ApiVersion::V1alpha1.as_str();

/// The `apiVersion` of a document: [`API_VERSION`].
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ApiVersion {
    /// `unbounded-mtu/v1alpha1`.
    #[default]
    #[serde(rename = "unbounded-mtu/v1alpha1")]
    V1alpha1,
}

impl ApiVersion {
    /// As written in documents. Costs nothing (a constant).
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::report::ApiVersion;
    /// let all = resolver.plan_all();
    /// assert_eq!(all.api_version.as_str(), "unbounded-mtu/v1alpha1");
    /// let json = serde_json::to_value(&all)?;
    /// assert_eq!(json["apiVersion"], ApiVersion::V1alpha1.as_str());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V1alpha1 => "unbounded-mtu/v1alpha1",
        }
    }
}

impl std::fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// The `kind` of a document this crate writes.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DocumentKind {
    /// `Resolution`: [`ResolveOut`].
    Resolution,
    /// `ProbeReport`: [`crate::probe::ProbeReport`].
    ProbeReport,
    /// `Explanation`: [`explanation::Explanation`].
    Explanation,
}

impl DocumentKind {
    /// As written in documents. Costs nothing (a constant).
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::report::DocumentKind;
    /// let all = resolver.plan_all();
    /// assert_eq!(all.kind, DocumentKind::Resolution);
    /// let json = serde_json::to_value(&all)?;
    /// assert_eq!(json["kind"], DocumentKind::Resolution.as_str());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            DocumentKind::Resolution => "Resolution",
            DocumentKind::ProbeReport => "ProbeReport",
            DocumentKind::Explanation => "Explanation",
        }
    }
}

impl std::fmt::Display for DocumentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// The whole `resolve` document.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Eq)]
pub struct ResolveOut {
    /// [`API_VERSION`].
    #[serde(rename = "apiVersion")]
    pub api_version: ApiVersion,
    /// [`DocumentKind::Resolution`].
    pub kind: DocumentKind,
    /// Nodes by name.
    pub nodes: Vec<NodeOut>,
    /// Diagnostics in output order.
    pub diagnostics: Vec<DiagOut>,
}

fn val(r: &mut Renderer<'_, '_>, v: &Value) -> (u32, Option<Arc<ExplOut>>) {
    (v.mtu.get(), r.explained(v.expl))
}

/// Builds the output of one route of a plan.
pub(crate) fn route_out(
    topo: &Topology,
    r: &mut Renderer<'_, '_>,
    rt: &crate::plan::RoutePlan,
) -> RouteOut {
    let (mtu, explanation) = val(r, &rt.mtu);
    RouteOut {
        destination: rt.destination,
        ty: rt.ty,
        kind: rt.kind,
        mtu,
        via: rt.via.iter().map(|v| topo.node(*v).name.clone()).collect(),
        distance: rt.distance,
        explanation,
    }
}

/// Builds the output of one node.
/// Costs a rendering of each of the plan's values (each explanation once per renderer).
///
/// ```
/// # let resolver = mtu_solver::doc_cluster::resolver();
/// use mtu_solver::{Explanations, report::{Renderer, node_out}};
/// let wa = resolver.with_solver(|solver| {
///     let wa = solver.topo().find_node("wa").expect("wa");
///     let plan = solver.plan(wa);
///     node_out(solver.topo(), &mut Renderer::new(solver, Explanations::Bound), &plan)
/// });
/// assert_eq!(wa, resolver.plan("wa")?); // what the resolver answers
/// assert_eq!((&*wa.links[0].peer, wa.links[0].mtu), ("wb", 1400));
/// # Ok::<(), mtu_solver::Error>(())
/// ```
pub fn node_out(topo: &Topology, r: &mut Renderer<'_, '_>, plan: &NodePlan) -> NodeOut {
    let node = topo.node(plan.node);
    let links = plan
        .links
        .iter()
        .map(|l| {
            let (mtu, explanation) = val(r, &l.mtu);
            LinkOut {
                peer: topo.node(l.peer).name.clone(),
                kind: l.kind,
                protocol: l.protocol,
                mtu,
                explanation,
            }
        })
        .collect();
    let routes = plan
        .routes
        .iter()
        .map(|rt| route_out(topo, r, rt))
        .collect();
    let devices = plan
        .devices
        .iter()
        .map(|d| {
            let (mtu, explanation) = val(r, &d.mtu);
            let (name, peer) = match &d.device {
                DeviceRef::Shared(n) => (Some(n.clone()), None),
                DeviceRef::PerPeer { name, peer } => (
                    name.as_deref().map(Arc::from),
                    Some(topo.node(*peer).name.clone()),
                ),
                DeviceRef::Underlay => (None, None),
            };
            DeviceOut {
                name,
                peer,
                protocol: d.protocol,
                mtu,
                explanation,
            }
        })
        .collect();
    let published = plan.published.as_ref().map(|ps| {
        ps.iter()
            .map(|p| PublishedOut {
                destination: p.destination,
                mtu: p.mtu.mtu.get(),
            })
            .collect()
    });
    let (fabric_mtu, fabric_explanation) = val(r, &plan.fabric);
    NodeOut {
        name: node.name.clone(),
        site: topo.site(node.site).name.clone(),
        role: node.role.into(),
        pool: node.pool().map(|p| topo.pool(p).name.clone()),
        fabric_mtu,
        mss_ipv4: plan.mss_ipv4,
        mss_ipv6: plan.mss_ipv6,
        fabric_explanation,
        links,
        routes,
        devices,
        published,
    }
}

/// Builds the whole `resolve` document.
/// Costs a [`node_out`] per plan and a rendering of each diagnostic.
///
/// ```
/// # let resolver = mtu_solver::doc_cluster::resolver();
/// use mtu_solver::{Explanations, report::{Renderer, resolve_out}};
/// let doc = resolver.with_solver(|solver| {
///     let plans = solver.plan_all();
///     let topo = solver.topo();
///     let mut renderer = Renderer::new(solver, Explanations::Bound);
///     resolve_out(topo, &mut renderer, &plans, &topo.diagnostics)
/// });
/// assert_eq!(doc, resolver.plan_all()); // what the resolver answers
/// assert_eq!((doc.kind.as_str(), doc.nodes.len()), ("Resolution", 2));
/// ```
pub fn resolve_out(
    topo: &Topology,
    r: &mut Renderer<'_, '_>,
    plans: &[NodePlan],
    diagnostics: &[Diagnostic],
) -> ResolveOut {
    ResolveOut {
        api_version: ApiVersion::V1alpha1,
        kind: DocumentKind::Resolution,
        nodes: plans.iter().map(|p| node_out(topo, r, p)).collect(),
        diagnostics: diagnostics.iter().map(DiagOut::from).collect(),
    }
}
