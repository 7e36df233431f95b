//! Node plans: every value the solver resolves for one node, each with its explanation, plus
//! what the dataplane needs to apply it (addresses, protocols, devices).

use crate::explain::ExplId;
use ipnet::IpNet;
use smallvec::SmallVec;
use std::net::IpAddr;
use topology_core::diag::Diagnostic;
use topology_core::ids::{NodeId, PoolId, SiteId};
use topology_core::mtu::Mtu;
use topology_core::net::{LinkKind, RouteType};
use topology_core::vocab::Protocol;

/// A resolved value and its explanation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Value {
    /// The MTU.
    pub mtu: Mtu,
    /// Why.
    pub expl: ExplId,
}

/// Which device carries a link.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DeviceRef {
    /// A shared device by name (`geneve0`, `vxlan0`, `ipip0`, `wg51820`); shared, not copied
    /// per next hop.
    Shared(std::sync::Arc<str>),
    /// A per-peer WireGuard device (name `wg<port>`, or unnamed when the port is unknown).
    PerPeer {
        /// Its name, when the gateway's WireGuard port is known.
        name: Option<String>,
        /// The gateway peer.
        peer: NodeId,
    },
    /// No encapsulation: the underlay itself.
    Underlay,
}

/// A link's resolved MTU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkPlan {
    /// The other end.
    pub peer: NodeId,
    /// Kind.
    pub kind: LinkKind,
    /// Protocol.
    pub protocol: Protocol,
    /// MTU.
    pub mtu: Value,
    /// This end's underlay address.
    pub local_addr: Option<IpAddr>,
    /// The peer's underlay address.
    pub peer_addr: Option<IpAddr>,
    /// The device carrying it.
    pub device: DeviceRef,
}

/// Route kinds; serialized by their output names ([`RouteKind::as_str`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum RouteKind {
    /// Over the link to a peer: its own pod CIDRs (`NodePod`) or node addresses (`NodeAddress`).
    Direct,
    /// A worker's learned route.
    Gateway,
    /// A gateway's learned route.
    Transit,
}

impl RouteKind {
    /// The output name.
    /// Costs a match.
    ///
    /// ```
    /// use mtu_solver::RouteKind;
    /// assert_eq!(RouteKind::Gateway.as_str(), "gateway");
    /// assert_eq!(RouteKind::Direct.to_string(), RouteKind::Direct.as_str());
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            RouteKind::Direct => "direct",
            RouteKind::Gateway => "gateway",
            RouteKind::Transit => "transit",
        }
    }
}

impl std::fmt::Display for RouteKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// One ECMP next hop, as the dataplane needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NextHop {
    /// The peer node.
    pub peer: NodeId,
    /// Its underlay address on this link (the tunnel endpoint: the encapsulation destination).
    pub underlay_addr: Option<IpAddr>,
    /// The address that identifies the peer on every link ([`NodePlan::identity_addr`] of the
    /// peer): its tunnel MAC derives from it, whichever address this link reaches it at.
    pub identity_addr: Option<IpAddr>,
    /// Its pod gateway address (first address of its pod CIDR of the route's family).
    pub pod_gateway: Option<IpAddr>,
    /// The link protocol.
    pub protocol: Protocol,
    /// The device carrying it.
    pub device: DeviceRef,
}

/// A resolved route.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutePlan {
    /// Destination (installed piece, after `localCidrs` are cut out).
    pub destination: IpNet,
    /// The advertised prefix it came from (uncut).
    pub advertised: IpNet,
    /// Route type.
    pub ty: RouteType,
    /// Kind.
    pub kind: RouteKind,
    /// MTU.
    pub mtu: Value,
    /// Selected next hops, sorted by name.
    pub via: SmallVec<[NodeId; 4]>,
    /// Pools on the accepted hop list (0 for direct routes).
    pub distance: u32,
    /// Per next hop, what the dataplane needs (shared by the routes of one next-hop set).
    pub next_hops: std::sync::Arc<[NextHop]>,
}

/// A device's resolved MTU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DevicePlan {
    /// Which device.
    pub device: DeviceRef,
    /// Protocol it carries.
    pub protocol: Protocol,
    /// MTU (the largest link MTU it carries).
    pub mtu: Value,
}

/// What a gateway publishes for one prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Published {
    /// The advertised prefix (uncut).
    pub destination: IpNet,
    /// The value.
    pub mtu: Value,
}

/// Everything resolved for one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodePlan {
    /// The node.
    pub node: NodeId,
    /// Its Site.
    pub site: SiteId,
    /// Its pool (gateways).
    pub pool: Option<PoolId>,
    /// The address that identifies this node on every link (its private underlay address, else
    /// its first external one): its tunnel devices' MAC derives from it.
    pub identity_addr: Option<IpAddr>,
    /// Pod-facing MTU.
    pub fabric: Value,
    /// TCP MSS clamp for IPv4.
    pub mss_ipv4: u32,
    /// TCP MSS clamp for IPv6.
    pub mss_ipv6: u32,
    /// Links, sorted by peer name.
    pub links: Vec<LinkPlan>,
    /// Routes, sorted by destination then kind.
    pub routes: Vec<RoutePlan>,
    /// Devices, sorted by name then peer.
    pub devices: Vec<DevicePlan>,
    /// Published forwarding MTUs (gateways only), sorted by destination.
    pub published: Option<Vec<Published>>,
    /// Findings about this node's values (e.g. `W-IPV6-BELOW-1280`).
    pub diagnostics: Vec<Diagnostic>,
}

impl NodePlan {
    /// The link to `peer`.
    /// Costs a walk of the plan's links.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// resolver.with_solver(|solver| {
    ///     let topo = solver.topo();
    ///     let (wa, wb) = (topo.find_node("wa").expect("wa"), topo.find_node("wb").expect("wb"));
    ///     let plan = solver.plan(wa);
    ///     assert_eq!(plan.link(wb).map(|l| l.mtu.mtu.get()), Some(1400)); // SitePeering/ab's cap
    ///     assert!(plan.link(wa).is_none()); // no link to itself
    /// });
    /// ```
    pub fn link(&self, peer: NodeId) -> Option<&LinkPlan> {
        self.links.iter().find(|l| l.peer == peer)
    }
    /// Number of resolved link and route values (the unit of the performance budgets).
    /// Costs two lengths.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// let count = resolver.with_solver(|solver| {
    ///     let wa = solver.topo().find_node("wa").expect("wa");
    ///     solver.plan(wa).value_count()
    /// });
    /// let wa = resolver.plan("wa")?;
    /// assert_eq!(count, wa.links.len() + wa.routes.len());
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn value_count(&self) -> usize {
        self.links.len().saturating_add(self.routes.len())
    }
}
