//! What a node's plan says each of its links carries: the addresses to probe and the figures a
//! probe is compared with.

use crate::explain::{Kind, Leaf, UnderlaySource};
use crate::plan::{DeviceRef, NodePlan};
use crate::solver::Solver;
use std::net::IpAddr;
use std::sync::Arc;
use topology_core::ids::NodeId;
use topology_core::model::{PairPath, Topology};
use topology_core::vocab::Protocol;

/// One link of a node's plan, as a probe sees it. Serialized with its fields' names in camel
/// case (`tunnelAddress`, `plannedUnderlay`, ...).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    /// The peer.
    pub peer: Arc<str>,
    /// The peer's underlay address on this link (the tunnel endpoint); `None`: nothing to
    /// probe.
    pub address: Option<IpAddr>,
    /// The peer's pod gateway address (first address of its pod CIDR), which the link's
    /// tunnel carries; `None` for links without encapsulation or a known pod CIDR.
    pub tunnel_address: Option<IpAddr>,
    /// The device that carries the link (`vxlan0`, `wg51820`...); `None` over the underlay.
    pub device: Option<Arc<str>>,
    /// The link's protocol.
    pub protocol: Protocol,
    /// The encapsulation overhead the plan subtracted (0 without encapsulation).
    pub overhead: u32,
    /// The underlay the plan assumed for the link: `min(U(node), U(peer), P(node, peer))`, the
    /// pair's path MTU included when one bounds it.
    pub planned_underlay: u32,
    /// `U(node)`: the probing node's own underlay in the plan.
    pub node_underlay: u32,
    /// `U(peer)`.
    pub peer_underlay: u32,
    /// The link's MTU.
    pub link_mtu: u32,
    /// The underlay term, e.g. `underlay of a 1500 (default)` or `path a↔b 1400 (probed by
    /// a)`: what a probed underlay below the plan contradicts.
    pub underlay_term: String,
    /// The term that binds the link's MTU, e.g. `SitePeering/ab spec.tunnelMTU 1400`.
    pub link_term: String,
}

impl Target {
    /// The largest packet the plan sends on the underlay for this link: the link MTU plus the
    /// encapsulation.
    /// Costs an addition.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let wb = &resolver.probe_targets("wa")?[0];
    /// assert_eq!(wb.planned_outer(), 1400 + 58); // the link MTU and GENEVE's overhead
    /// assert!(wb.planned_outer() <= wb.planned_underlay); // fits the underlay it assumed
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn planned_outer(&self) -> u32 {
        self.link_mtu.saturating_add(self.overhead)
    }
}

/// The probe targets of `plan` (made by `solver`), sorted by peer name.
/// Costs a walk of the plan's links, with an underlay look-up for each end.
///
/// ```
/// # let resolver = mtu_solver::doc_cluster::resolver();
/// use mtu_solver::probe::targets;
/// let found = resolver.with_solver(|solver| {
///     let wa = solver.topo().find_node("wa").expect("wa");
///     let plan = solver.plan(wa);
///     targets(solver, &plan)
/// });
/// assert_eq!(found, resolver.probe_targets("wa")?);
/// assert_eq!((&*found[0].peer, found[0].device.as_deref()), ("wb", Some("geneve0")));
/// assert_eq!(found[0].link_term, "SitePeering/ab spec.tunnelMTU 1400");
/// # Ok::<(), mtu_solver::Error>(())
/// ```
pub fn targets(solver: &mut Solver<'_>, plan: &NodePlan) -> Vec<Target> {
    let mut out: Vec<Target> = plan
        .links
        .iter()
        .map(|link| {
            let (ua, sa) = solver.underlay(plan.node);
            let (ub, sb) = solver.underlay(link.peer);
            let (end, u, src) = if ua <= ub {
                (plan.node, ua.get(), sa)
            } else {
                (link.peer, ub.get(), sb)
            };
            let topo = solver.topo();
            let mut term = underlay_term(&topo.node(end).name, u, src);
            let mut planned = u;
            if let Some(p) = topo.path_mtu(plan.node, link.peer).filter(|p| p.mtu < u) {
                planned = p.mtu;
                term = path_term(topo, plan.node, link.peer, p);
            }
            let overhead = link_overhead(solver, link.mtu.expl);
            let device = match &link.device {
                DeviceRef::Shared(n) => Some(n.clone()),
                DeviceRef::PerPeer { name: Some(n), .. } => Some(Arc::from(n.as_str())),
                DeviceRef::PerPeer { name: None, .. } | DeviceRef::Underlay => None,
            };
            let tunnel_address = (!matches!(link.device, DeviceRef::Underlay))
                .then(|| pod_gateway(plan, link.peer, link.peer_addr))
                .flatten();
            Target {
                peer: topo.node(link.peer).name.clone(),
                address: link.peer_addr,
                tunnel_address,
                device,
                protocol: link.protocol,
                overhead,
                planned_underlay: planned,
                node_underlay: ua.get(),
                peer_underlay: ub.get(),
                link_mtu: link.mtu.mtu.get(),
                underlay_term: term,
                link_term: binding_term(solver, link.mtu.expl),
            }
        })
        .collect();
    out.sort_by(|a, b| a.peer.cmp(&b.peer));
    out
}

/// The overhead of the link's auto term (every link explanation has one).
fn link_overhead(solver: &Solver<'_>, expl: crate::explain::ExplId) -> u32 {
    solver
        .expl
        .leaves(expl)
        .into_iter()
        .find_map(|x| match &solver.expl.get(x).kind {
            Kind::Leaf(Leaf::Auto { overhead, .. }) => Some(*overhead),
            _ => None,
        })
        .unwrap_or(0)
}

/// `underlay of NODE U (SOURCE)`, worded as `explain` words it.
fn underlay_term(node: &str, underlay: u32, source: UnderlaySource) -> String {
    format!("underlay of {node} {underlay}{}", source.note())
}

/// The pair's path MTU term, ends in ID order.
fn path_term(topo: &Topology, n: NodeId, peer: NodeId, p: PairPath) -> String {
    let (a, b) = if n <= peer { (n, peer) } else { (peer, n) };
    crate::explain::path_words(topo, a, b, p.mtu, p.invalid, p.by)
}

/// The binding term of an explanation, worded as `explain` words it.
fn binding_term(solver: &Solver<'_>, expl: crate::explain::ExplId) -> String {
    let bound = solver.expl.get(expl).bound;
    solver.expl.term_source(bound, solver.topo())
}

/// The peer's pod gateway address as the plan's routes through it name it, preferring the
/// family of the link's underlay address.
fn pod_gateway(plan: &NodePlan, peer: NodeId, underlay: Option<IpAddr>) -> Option<IpAddr> {
    let mut gateways = plan
        .routes
        .iter()
        .flat_map(|r| r.next_hops.iter())
        .filter(|nh| nh.peer == peer)
        .filter_map(|nh| nh.pod_gateway);
    let first = gateways.next()?;
    let v6 = underlay.is_some_and(|a| a.is_ipv6());
    if first.is_ipv6() == v6 {
        return Some(first);
    }
    gateways.find(|g| g.is_ipv6() == v6).or(Some(first))
}
