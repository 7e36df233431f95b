//! [`Resolver`]: the entry point for tools that embed the resolver. It owns one cluster's
//! objects and their validated topology, takes node names and mutations, and returns owned,
//! thread-safe results (`Send + Sync`) with their explanations rendered. No result of one
//! resolver can be handed to another: nothing of its API takes a result, an interned
//! explanation or a node ID.

use crate::report::hops::HopOut;
use crate::report::{self, NodeOut, Renderer, ResolveOut, RouteOut};
use crate::solver::{Settings, Solver};
use crate::whatif::{self, Base, Input, Mutation, MutationError, WhatIf};
use ipnet::IpNet;
use std::net::IpAddr;
use topology_core::decode::Decoded;
use topology_core::diag::{Diagnostic, sort_diagnostics};
use topology_core::model::Topology;

/// A node or destination the cluster does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// No node of this name (or it belongs to no Site).
    #[error("node {name} does not exist{}", did_you_mean(nearest))]
    NoSuchNode {
        /// The name asked for.
        name: String,
        /// The closest existing names.
        nearest: Vec<String>,
    },
    /// The node has no route that carries this destination.
    #[error("node {node} has no route to {destination}")]
    NoRoute {
        /// The node.
        node: String,
        /// The destination asked for.
        destination: String,
    },
}

/// The routes among `prefixes` (a plan's, in its order) that carry `destination`, by index:
/// longest prefix first, routes of equal length in the plan's order. The first is the one the
/// kernel forwards by. This is what `explain` answers for a destination, in the binary and in
/// [`Resolver::explain`].
pub fn routes_carrying(
    prefixes: impl Iterator<Item = Option<IpNet>>,
    destination: Destination,
) -> Vec<usize> {
    let mut found: Vec<(u8, usize)> = prefixes
        .enumerate()
        .filter_map(|(i, p)| {
            let prefix = p?;
            destination
                .carried_by(&prefix)
                .then_some((prefix.prefix_len(), i))
        })
        .collect();
    found.sort_by_key(|(len, _)| std::cmp::Reverse(*len));
    found.into_iter().map(|(_, i)| i).collect()
}

fn no_route(node: &str, destination: Destination) -> QueryError {
    QueryError::NoRoute {
        node: node.to_string(),
        destination: match destination {
            Destination::Addr(a) => a.to_string(),
            Destination::Prefix(p) => p.to_string(),
        },
    }
}

fn did_you_mean(nearest: &[String]) -> String {
    if nearest.is_empty() {
        String::new()
    } else {
        format!("; did you mean {}?", nearest.join(", "))
    }
}

/// A destination: an address (the route whose prefix contains it, longest first) or a prefix
/// (the route with exactly that prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Destination {
    /// An address.
    Addr(IpAddr),
    /// A prefix.
    Prefix(IpNet),
}

impl Destination {
    /// Whether a route to `prefix` carries this destination: an address inside it, or a prefix
    /// equal to it.
    pub fn carried_by(&self, prefix: &IpNet) -> bool {
        match self {
            Destination::Addr(a) => prefix.contains(a),
            Destination::Prefix(p) => prefix == p,
        }
    }
}

impl std::str::FromStr for Destination {
    type Err = std::net::AddrParseError;

    /// `10.1.2.3`, `fd00::1`, `10.1.0.0/16`.
    fn from_str(s: &str) -> Result<Destination, Self::Err> {
        match s.parse::<IpNet>() {
            Ok(n) => Ok(Destination::Prefix(n.trunc())),
            Err(_) => s.parse().map(Destination::Addr),
        }
    }
}

/// One cluster: its objects, settings and validated topology.
///
/// Questions are asked by name, never by ID, so no ID of another topology can reach it; this
/// compiles:
///
/// ```
/// # use mtu_solver::resolver::Resolver;
/// fn ask(resolver: &Resolver, node: &str) {
///     let _ = resolver.plan(node);
/// }
/// ```
///
/// and this, with a `NodeId` (of this cluster or any other), does not:
///
/// ```compile_fail
/// # use mtu_solver::resolver::Resolver;
/// use topology_core::ids::NodeId;
/// fn ask(resolver: &Resolver, node: NodeId) {
///     let _ = resolver.plan(node);
/// }
/// ```
///
/// ```
/// use mtu_solver::resolver::Resolver;
/// use mtu_solver::{Settings, load};
/// use mtu_solver::resolver::Destination;
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
/// spec: {podCIDRs: [10.9.1.0/24]}
/// ---
/// apiVersion: v1
/// kind: Node
/// metadata: {name: n2, labels: {net.unbounded-cloud.io/site: a}}
/// status: {addresses: [{type: InternalIP, address: 10.0.0.2}]}
/// spec: {podCIDRs: [10.9.2.0/24]}
/// ";
/// let decoded = load::from_sources([("cluster.yaml", yaml)]);
/// let resolver = Resolver::new(decoded, Settings::default());
/// // GENEVE on a 1500 underlay: 1500 − 58.
/// let n1 = resolver.plan("n1").unwrap();
/// assert_eq!(n1.links[0].mtu, 1442);
/// // Why the route to n2's pods is what it is.
/// let to_n2: Destination = "10.9.2.7".parse().unwrap();
/// let route = &resolver.explain("n1", to_n2).unwrap()[0];
/// assert_eq!(route.explanation.bound.term, "auto");
/// // A cap on the Site: every value at most 1400.
/// let cap = mtu_solver::whatif::Mutation::SetCap {
///     kind: topology_core::vocab::Kind::Site,
///     name: "a".into(),
///     mtu: 1400,
/// };
/// let change = resolver.what_if(&[cap]).unwrap();
/// assert!(!change.changes.is_empty());
/// assert!(change.changes.iter().all(|c| c.after <= Some(1400)));
/// ```
#[derive(Debug)]
pub struct Resolver {
    base: Base,
}

impl Resolver {
    /// A resolver of `decoded` objects under `settings`.
    pub fn new(decoded: Decoded, settings: Settings) -> Resolver {
        let base = Base::new(Input {
            objects: decoded.objects,
            diagnostics: decoded.diagnostics,
            settings,
        });
        Resolver { base }
    }

    /// The validated topology.
    pub fn topology(&self) -> &Topology {
        self.base.topology()
    }

    /// The settings it resolves with.
    pub fn settings(&self) -> &Settings {
        &self.base.input().settings
    }

    /// Findings about the input (decoder and model), in output order.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        let mut d = self.base.topology().diagnostics.clone();
        sort_diagnostics(&mut d);
        d
    }

    /// The names of the nodes it resolves, in order.
    pub fn node_names(&self) -> impl Iterator<Item = &str> {
        self.base.topology().nodes.iter().map(|n| &*n.name)
    }

    /// One node's plan: links, routes, devices, fabric and published values, each explained.
    pub fn plan(&self, node: &str) -> Result<NodeOut, QueryError> {
        let id = self.node_id(node)?;
        let mut solver = Solver::new(self.base.topology(), self.base.input().settings.clone());
        let plan = solver.plan(id);
        let mut r = Renderer::new(&solver, true);
        Ok(report::node_out(self.base.topology(), &mut r, &plan))
    }

    /// What `node`'s links carry by its plan, to compare with probes of the wire
    /// ([`crate::probe`]), sorted by peer name.
    pub fn probe_targets(&self, node: &str) -> Result<Vec<crate::probe::Target>, QueryError> {
        let id = self.node_id(node)?;
        let mut solver = Solver::new(self.base.topology(), self.base.input().settings.clone());
        let plan = solver.plan(id);
        Ok(crate::probe::targets(&mut solver, &plan))
    }

    /// Every node's plan and the diagnostics: the `resolve -o json` document.
    pub fn plan_all(&self) -> ResolveOut {
        let mut solver = Solver::new(self.base.topology(), self.base.input().settings.clone());
        let plans = solver.plan_all();
        let mut diags = self.base.topology().diagnostics.clone();
        for p in &plans {
            diags.extend(p.diagnostics.iter().cloned());
        }
        sort_diagnostics(&mut diags);
        let mut r = Renderer::new(&solver, false);
        report::resolve_out(self.base.topology(), &mut r, &plans, &diags)
    }

    /// What changes if `mutations` are applied, in order. A mutation that names
    /// something the cluster does not have, or a cap outside 576..9000, is refused.
    pub fn what_if(&self, mutations: &[Mutation]) -> Result<WhatIf, MutationError> {
        whatif::what_if_over(self.base.input(), self.base.topology(), mutations, true)
    }

    /// Every route of `node` that carries `destination`, longest match first (the first is the
    /// one the kernel forwards by; [`routes_carrying`]), each with every term of its
    /// explanation: what the binary's `explain --destination` lists. Never empty: a node with
    /// no such route is [`QueryError::NoRoute`].
    pub fn explain(
        &self,
        node: &str,
        destination: Destination,
    ) -> Result<Vec<RouteOut>, QueryError> {
        let out = self.plan(node)?;
        let prefixes = out.routes.iter().map(|r| r.destination.parse().ok());
        let order = routes_carrying(prefixes, destination);
        let mut routes: Vec<Option<RouteOut>> = out.routes.into_iter().map(Some).collect();
        let found: Vec<RouteOut> = order
            .into_iter()
            .filter_map(|i| routes.get_mut(i).and_then(Option::take))
            .collect();
        if found.is_empty() {
            return Err(no_route(node, destination));
        }
        Ok(found)
    }

    /// The hops of the first route [`Self::explain`] answers with (none for a direct route), the
    /// binding ones marked, and the `W-PUBLISHED-STALE` findings of the gateways whose published
    /// values they read.
    pub fn explain_hops(
        &self,
        node: &str,
        destination: Destination,
    ) -> Result<(Vec<HopOut>, Vec<Diagnostic>), QueryError> {
        let id = self.node_id(node)?;
        let mut solver = Solver::new(self.base.topology(), self.base.input().settings.clone());
        let plan = solver.plan(id);
        let prefixes = plan.routes.iter().map(|r| Some(r.destination));
        let route = routes_carrying(prefixes, destination)
            .first()
            .and_then(|i| plan.routes.get(*i))
            .ok_or_else(|| no_route(node, destination))?;
        let hops = solver.route_hops(id, route);
        let r = Renderer::new(&solver, true);
        Ok((r.hops(&hops.hops), hops.diagnostics))
    }

    fn node_id(&self, name: &str) -> Result<topology_core::ids::NodeId, QueryError> {
        self.base
            .topology()
            .find_node(name)
            .map_err(|e| QueryError::NoSuchNode {
                name: name.to_string(),
                nearest: e.nearest,
            })
    }
}
