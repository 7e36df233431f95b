//! The `explain` document: why each value of one node is what it is, every term located
//! (`file:line`), each learned route with its forwarding paths and hops. One function builds
//! it for the binary's `explain` and the library's [`crate::Resolver::explain`].

use super::diagnostics::{DiagList, InputDiagnostics};
use super::hops::HopOut;
use super::routes::{RouteTails, ShownRoute};
use super::{ApiVersion, DocumentKind, RenderCache, Renderer, TermList, TermOut};
use crate::explain::ExplId;
use crate::plan::{DeviceRef, NodePlan, RouteKind, RoutePlan};
use crate::query::{Destination, QueryError, carrying_in_plan};
use crate::solver::Solver;
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::sync::Arc;
use topology_core::diag::Diagnostic;
use topology_core::ids::NodeId;
use topology_core::model::Topology;

/// How many forwarding paths of a route an explanation walks and lists when not told
/// (the binary's `--paths` default).
pub const DEFAULT_PATHS: usize = 4;

/// What an explanation answers, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Question {
    /// Every value of the node: links, routes, devices, fabric, published values.
    #[default]
    Everything,
    /// The link to this peer, and the direct routes over it.
    Peer(String),
    /// Every route that carries this destination, longest match first.
    To(Destination),
}

impl From<Destination> for Question {
    fn from(d: Destination) -> Question {
        Question::To(d)
    }
}

/// [`Question`] with the peer found in the topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Want {
    Everything,
    Peer(NodeId),
    To(Destination),
}

impl Want {
    /// The question asked of `topo`; an unknown peer is [`QueryError::NoSuchNode`].
    /// Costs a look-up of the peer's name.
    pub(crate) fn of(topo: &Topology, question: &Question) -> Result<Want, QueryError> {
        Ok(match question {
            Question::Everything => Want::Everything,
            Question::To(d) => Want::To(*d),
            Question::Peer(p) => {
                Want::Peer(topo.find_node(p).map_err(|e| QueryError::NoSuchNode {
                    name: p.clone(),
                    nearest: e.nearest,
                })?)
            }
        })
    }
}

/// The value an [`Explained`] explains.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum Subject {
    /// The link to a peer.
    Link {
        /// The peer's name.
        peer: String,
    },
    /// A route.
    Route {
        /// Its destination.
        destination: IpNet,
    },
    /// A tunnel device.
    Device {
        /// Its name (null for a WireGuard device whose port is unknown).
        name: Option<String>,
    },
    /// The pod-facing fabric.
    Fabric,
    /// What a gateway publishes for a prefix.
    Published {
        /// The prefix.
        destination: IpNet,
    },
}

/// One explained value.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Explained {
    /// What the value is, in words (`link to b (direct, geneve)`, `route 10.1.0.0/16 (...)`).
    pub item: String,
    /// What the value is, for a program.
    pub subject: Subject,
    /// The value.
    pub value: u32,
    /// The term that binds it, located.
    pub bound: Arc<TermOut>,
    /// Every term considered, lowest first, located; values that share a term share it, and
    /// values of one explanation share the list.
    pub terms: TermList,
    /// A learned route's forwarding paths.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paths: Option<Paths>,
    /// A learned route's hops: every hop of the listed paths, and the binding ones wherever
    /// they are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hops: Option<Vec<Arc<HopOut>>>,
    /// How many hops are left out of `hops`: off the listed paths and not binding.
    #[serde(rename = "hopsNotShown", skip_serializing_if = "Option::is_none")]
    pub hops_not_shown: Option<usize>,
}

/// A learned route's forwarding paths: counted, and the first few walked.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Paths {
    /// How many forwarding paths there are (the largest u64 when `saturated`).
    pub total: u64,
    /// The count reached the largest u64: there are at least `total` paths.
    pub saturated: bool,
    /// The paths walked, in words (`a@A -> g1 (pool P, Site A) -> Site B`).
    pub shown: Vec<String>,
}

/// The whole `explain` document of one node.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Explanation {
    /// [`ApiVersion`].
    #[serde(rename = "apiVersion")]
    pub api_version: ApiVersion,
    /// [`DocumentKind::Explanation`].
    pub kind: DocumentKind,
    /// The node.
    pub node: String,
    /// Its Site.
    pub site: String,
    /// `worker`, or `gateway of POOL`.
    pub role: String,
    /// The values asked about, in order: links, routes, then the node's own values.
    pub values: Vec<Explained>,
    /// The input's and the plan's findings, and those of the gateways whose published values
    /// the listed routes read, in output order; the input's are shared by every explanation
    /// of one resolver.
    pub diagnostics: DiagList,
}

/// The explanation of node `n` (planned as `plan`) for `want`, listing at most `max_paths`
/// forwarding paths per learned route; its terms are worded once in `cache` (a full one, of
/// `solver`), for this and later explanations. A peer `n` has no link to is [`QueryError::NoLink`];
/// a destination no route carries, [`QueryError::NoRoute`].
pub(crate) fn explanation(
    solver: &mut Solver<'_>,
    n: NodeId,
    plan: &NodePlan,
    want: Want,
    max_paths: usize,
    cache: &mut RenderCache,
) -> Result<Explanation, QueryError> {
    let topo = solver.topo();
    if let Want::Peer(p) = want {
        linked(topo, n, plan, p)?;
    }
    let listed = listed_routes(solver, &mut cache.routes, n, plan, want, max_paths);
    let mut r = Renderer::resume(solver, std::mem::take(cache));
    let mut values = link_values(&r, plan, want);
    values.extend(route_values(&r, n, plan, &listed));
    if want == Want::Everything {
        values.extend(node_values(&r, plan));
    }
    let diagnostics = r.input_diagnostics().with(diagnostics(plan, &listed));
    *cache = r.suspend();
    if let Want::To(d) = want
        && listed.is_empty()
    {
        return Err(QueryError::NoRoute {
            node: topo.node(n).name.to_string(),
            destination: d.to_string(),
        });
    }
    let node = topo.node(n);
    Ok(Explanation {
        api_version: ApiVersion::default(),
        kind: DocumentKind::Explanation,
        node: node.name.to_string(),
        site: topo.site(node.site).name.to_string(),
        role: match node.pool() {
            Some(p) => format!("gateway of {}", topo.pool(p).name),
            None => "worker".to_string(),
        },
        values,
        diagnostics,
    })
}

impl Renderer<'_, '_> {
    /// The topology's diagnostics, sorted and rendered once for this and later explanations.
    fn input_diagnostics(&mut self) -> Arc<InputDiagnostics> {
        let topo = self.solver.topo();
        self.input_diagnostics
            .get_or_insert_with(|| Arc::new(InputDiagnostics::of(topo)))
            .clone()
    }
}

/// A value with its binding term and every term considered, each located.
fn explained(r: &Renderer<'_, '_>, item: String, subject: Subject, e: ExplId) -> Explained {
    let solver = r.solver;
    let node = solver.explanations().get(e);
    Explained {
        item,
        subject,
        value: node.value.get(),
        bound: r.located_term(node.bound),
        terms: r.located_terms(e),
        paths: None,
        hops: None,
        hops_not_shown: None,
    }
}

/// Whether a route to `dest` is asked about (as a route, not as a direct route over a peer's
/// link).
fn wanted_route(dest: &IpNet, want: Want) -> bool {
    match want {
        Want::Everything => true,
        Want::To(d) => d.carried_by(dest),
        Want::Peer(_) => false,
    }
}

/// The order the routes are listed in: for a destination, every route that carries it, longest
/// match first ([`crate::query::routes_carrying`]); otherwise the plan's order.
fn listed_order(plan: &NodePlan, want: Want) -> Vec<usize> {
    match want {
        Want::To(d) => carrying_in_plan(&plan.routes, d),
        _ => (0..plan.routes.len()).collect(),
    }
}

/// [`QueryError::NoLink`] when node `n` has no link to `peer`.
fn linked(topo: &Topology, n: NodeId, plan: &NodePlan, peer: NodeId) -> Result<(), QueryError> {
    if plan.link(peer).is_some() {
        return Ok(());
    }
    Err(QueryError::NoLink {
        node: topo.node(n).name.to_string(),
        peer: topo.node(peer).name.to_string(),
        peers: plan
            .links
            .iter()
            .map(|l| topo.node(l.peer).name.to_string())
            .collect(),
    })
}

/// The routes asked about, by index in the plan, in the order they are listed: every route,
/// those to the destination, or the direct routes over the link to the peer. Each learned one
/// comes with its paths and hops: the paths counted, not enumerated (a chain of pools
/// multiplies the branches), the first `max_paths` walked; the hops on those paths, and the
/// binding ones wherever they are.
fn listed_routes(
    solver: &mut Solver<'_>,
    tails: &mut RouteTails,
    n: NodeId,
    plan: &NodePlan,
    want: Want,
    max_paths: usize,
) -> Vec<(usize, Option<ShownRoute>)> {
    let mut out = Vec::new();
    for i in listed_order(plan, want) {
        let Some(rt) = plan.routes.get(i) else {
            continue;
        };
        let via_peer =
            matches!(want, Want::Peer(p) if rt.kind == RouteKind::Direct && rt.via.contains(&p));
        if !(wanted_route(&rt.destination, want) || via_peer) {
            continue;
        }
        out.push((i, tails.shown_route(solver, n, rt, max_paths)));
    }
    out
}

/// The links asked about: every link, or the one to the peer.
fn link_values(r: &Renderer<'_, '_>, plan: &NodePlan, want: Want) -> Vec<Explained> {
    let topo = r.solver.topo();
    plan.links
        .iter()
        .filter(|l| match want {
            Want::Everything => true,
            Want::Peer(p) => p == l.peer,
            Want::To(_) => false,
        })
        .map(|l| {
            let item = format!(
                "link to {} ({}, {})",
                topo.node(l.peer).name,
                l.kind.as_str(),
                l.protocol
            );
            let peer = topo.node(l.peer).name.to_string();
            explained(r, item, Subject::Link { peer }, l.mtu.expl)
        })
        .collect()
}

/// The listed routes' values, with their paths and hops.
fn route_values(
    r: &Renderer<'_, '_>,
    n: NodeId,
    plan: &NodePlan,
    listed: &[(usize, Option<ShownRoute>)],
) -> Vec<Explained> {
    let topo = r.solver.topo();
    let mut values = Vec::with_capacity(listed.len());
    for (i, detail) in listed {
        let Some(rt) = plan.routes.get(*i) else {
            continue;
        };
        let item = route_item(topo, rt);
        let subject = Subject::Route {
            destination: rt.destination,
        };
        let mut e = explained(r, item, subject, rt.mtu.expl);
        if let Some(shown) = detail {
            let d = r.route_detail(n, rt, shown);
            e.paths = Some(Paths {
                total: d.total,
                saturated: d.saturated,
                shown: d.shown,
            });
            e.hops = Some(d.hops);
            e.hops_not_shown = Some(d.not_shown);
        }
        values.push(e);
    }
    values
}

/// A route in words: `route 10.1.0.0/16 (PodCidr, transit, distance 1, via g1, g2)`. Written
/// without the formatting machinery: it is made for every route explained.
fn route_item(topo: &Topology, rt: &RoutePlan) -> String {
    let mut item = String::with_capacity(rt.via.len().saturating_mul(24).saturating_add(64));
    item.push_str("route ");
    push_prefix(&mut item, &rt.destination);
    item.push_str(" (");
    item.push_str(rt.ty.as_str());
    item.push_str(", ");
    item.push_str(rt.kind.as_str());
    item.push_str(", distance ");
    push_decimal(&mut item, rt.distance);
    item.push_str(", via ");
    for (i, v) in rt.via.iter().enumerate() {
        if i > 0 {
            item.push_str(", ");
        }
        item.push_str(&topo.node(*v).name);
    }
    item.push(')');
    item
}

/// `prefix` as its `Display` writes it (an IPv4 one digit by digit).
fn push_prefix(out: &mut String, prefix: &IpNet) {
    match prefix {
        IpNet::V4(n) => {
            for (i, o) in n.addr().octets().iter().enumerate() {
                if i > 0 {
                    out.push('.');
                }
                push_decimal(out, u32::from(*o));
            }
            out.push('/');
            push_decimal(out, u32::from(n.prefix_len()));
        }
        IpNet::V6(_) => {
            let _ = write!(out, "{prefix}");
        }
    }
}

/// `n` in decimal.
fn push_decimal(out: &mut String, n: u32) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// The node's own values: its devices (the underlay left out), its fabric, and what a gateway
/// publishes.
fn node_values(r: &Renderer<'_, '_>, plan: &NodePlan) -> Vec<Explained> {
    let topo = r.solver.topo();
    let mut values = Vec::new();
    for d in &plan.devices {
        let (name, shown) = match &d.device {
            DeviceRef::Shared(n) => (Some(n.to_string()), n.to_string()),
            DeviceRef::PerPeer { name, peer } => (
                name.clone(),
                name.clone()
                    .unwrap_or_else(|| format!("(WireGuard device for {})", topo.node(*peer).name)),
            ),
            DeviceRef::Underlay => continue,
        };
        let item = format!("device {shown} (largest link it carries)");
        values.push(explained(r, item, Subject::Device { name }, d.mtu.expl));
    }
    let fabric = "fabric (pods, bridge, CNI)".to_string();
    values.push(explained(r, fabric, Subject::Fabric, plan.fabric.expl));
    for p in plan.published.iter().flatten() {
        let item = format!("published for {}", p.destination);
        let subject = Subject::Published {
            destination: p.destination,
        };
        values.push(explained(r, item, subject, p.mtu.expl));
    }
    values
}

/// The plan's diagnostics, and the stale findings of the gateways whose published values the
/// listed routes read.
fn diagnostics<'a>(
    plan: &'a NodePlan,
    listed: &'a [(usize, Option<ShownRoute>)],
) -> impl Iterator<Item = &'a Diagnostic> {
    let hops = listed
        .iter()
        .filter_map(|(_, s)| s.as_ref()?.diagnostics.as_deref())
        .flatten();
    plan.diagnostics.iter().chain(hops)
}

#[cfg(test)]
mod tests {
    use super::{push_decimal, push_prefix};
    use ipnet::{IpNet, Ipv4Net, Ipv6Net};
    use proptest::prelude::*;
    use std::net::{Ipv4Addr, Ipv6Addr};
    use test_utils::testkit::proptest_config;

    proptest! {
        #![proptest_config(proptest_config(
            256,
            concat!(env!("CARGO_MANIFEST_DIR"), "/../proptest-regressions/route_words.txt")
        ))]

        /// A route's words write numbers and prefixes as `Display` does.
        #[test]
        fn words_write_as_display(n in any::<u32>(), a in any::<u32>(), len in 0u8..=32, b in any::<u128>(), len6 in 0u8..=128) {
            let mut s = String::new();
            push_decimal(&mut s, n);
            prop_assert_eq!(s, n.to_string());
            let nets = [
                Ipv4Net::new(Ipv4Addr::from(a), len).map(IpNet::V4),
                Ipv6Net::new(Ipv6Addr::from(b), len6).map(IpNet::V6),
            ];
            for net in nets.into_iter().flatten() {
                let mut s = String::new();
                push_prefix(&mut s, &net);
                prop_assert_eq!(s, net.to_string());
            }
        }
    }
}
