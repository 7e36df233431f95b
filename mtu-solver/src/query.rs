//! Questions by name: the destinations a question names ([`Destination`]), the routes that
//! carry one ([`routes_carrying`]), and what a question can ask that the cluster does not have
//! ([`QueryError`]).

use crate::plan::RoutePlan;
use ipnet::IpNet;
use std::net::IpAddr;
use topology_core::net::prefix_order;

/// A node or destination the cluster does not have. Its message names what there is.
///
/// ```
/// # let resolver = mtu_solver::doc_cluster::resolver();
/// use mtu_solver::Destination;
/// let no_node = resolver.plan("wc").expect_err("no node wc");
/// assert_eq!(no_node.to_string(), "node wc does not exist; did you mean wa, wb?");
/// let nowhere: Destination = "192.0.2.1".parse()?;
/// let no_route = resolver.explain("wa", nowhere).expect_err("no route");
/// assert_eq!(no_route.to_string(), "node wa has no route to 192.0.2.1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    /// The node has no link to this peer.
    #[error("node {node} has no link to {peer} (its peers: {})", peers_text(peers))]
    NoLink {
        /// The node.
        node: String,
        /// The peer asked for.
        peer: String,
        /// The peers it has links to.
        peers: Vec<String>,
    },
}

fn peers_text(peers: &[String]) -> String {
    if peers.is_empty() {
        "none".to_string()
    } else {
        peers.join(", ")
    }
}

/// The routes among `prefixes` (a plan's, in its order) that carry `destination`, by index:
/// longest prefix first, routes of equal length in the plan's order. The first is the one the
/// kernel forwards by. This is what `explain` answers for a destination, in the binary and in
/// [`Resolver::explain`](crate::Resolver::explain). Costs a look at each prefix and a sort of
/// those that carry it.
///
/// ```
/// use mtu_solver::resolver::{Destination, routes_carrying};
/// let prefixes = ["10.0.0.0/8", "10.8.1.0/24", "192.0.2.0/24", "10.8.0.0/16"];
/// let to: Destination = "10.8.1.9".parse()?;
/// let carrying = routes_carrying(prefixes.iter().map(|p| p.parse().ok()), to);
/// assert_eq!(carrying, [1, 3, 0]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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

/// [`routes_carrying`] over a plan's routes, which are sorted by destination
/// ([`NodePlan::routes`](crate::plan::NodePlan::routes)): each prefix that can carry
/// `destination` (the prefix itself, or every prefix length of the address, longest first) is
/// found by binary search instead of a look at every route. Costs a binary search per prefix
/// length.
pub(crate) fn carrying_in_plan(routes: &[RoutePlan], destination: Destination) -> Vec<usize> {
    let candidates: Vec<IpNet> = match destination {
        Destination::Prefix(p) => vec![p.trunc()],
        Destination::Addr(a) => {
            let max = if a.is_ipv4() { 32 } else { 128 };
            (0..=max)
                .rev()
                .filter_map(|len| IpNet::new(a, len).ok().map(|n| n.trunc()))
                .collect()
        }
    };
    let mut found = Vec::new();
    for c in candidates {
        let start = routes.partition_point(|r| prefix_order(&r.destination, &c).is_lt());
        for (i, r) in routes.iter().enumerate().skip(start) {
            if prefix_order(&r.destination, &c).is_gt() {
                break;
            }
            if destination.carried_by(&r.destination) {
                found.push(i);
            }
        }
    }
    found
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
    /// equal to it. Free.
    ///
    /// ```
    /// use mtu_solver::Destination;
    /// let route: ipnet::IpNet = "10.8.0.0/16".parse()?;
    /// assert!("10.8.1.9".parse::<Destination>()?.carried_by(&route));
    /// assert!("10.8.0.0/16".parse::<Destination>()?.carried_by(&route));
    /// // A prefix asks for the route to exactly that prefix, not a wider one.
    /// assert!(!"10.8.1.0/24".parse::<Destination>()?.carried_by(&route));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn carried_by(&self, prefix: &IpNet) -> bool {
        match self {
            Destination::Addr(a) => prefix.contains(a),
            Destination::Prefix(p) => prefix == p,
        }
    }
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Destination::Addr(a) => a.fmt(f),
            Destination::Prefix(p) => p.fmt(f),
        }
    }
}

impl std::str::FromStr for Destination {
    type Err = std::net::AddrParseError;

    /// `10.1.2.3`, `fd00::1`, `10.1.0.0/16`; a prefix's host bits are dropped. Costs a parse
    /// of the text.
    ///
    /// ```
    /// use mtu_solver::Destination;
    /// assert!(matches!("fd00::1".parse()?, Destination::Addr(a) if a.is_ipv6()));
    /// let prefix: Destination = "10.8.1.9/16".parse()?;
    /// assert_eq!(prefix.to_string(), "10.8.0.0/16");
    /// assert!("10.8.1".parse::<Destination>().is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn from_str(s: &str) -> Result<Destination, Self::Err> {
        match s.parse::<IpNet>() {
            Ok(n) => Ok(Destination::Prefix(n.trunc())),
            Err(_) => s.parse().map(Destination::Addr),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Destination, carrying_in_plan, routes_carrying};
    use crate::{Settings, Solver};
    use std::net::IpAddr;
    use test_utils::reference::topology_of;
    use topology_core::ids::NodeId;

    /// On every node of an example with learned, direct and overlapping routes, the binary
    /// search finds what the scan finds, in its order: for every route's prefix, for the first,
    /// a middle and the last address of each, and for addresses no route carries.
    #[test]
    fn the_plan_search_finds_what_the_scan_finds() {
        for text in [
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../examples/04-transit-chain/cluster.yaml"
            )),
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../examples/06-routed-local-published/cluster.yaml"
            )),
            include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../examples/07-nat-and-unmanaged-cni/cluster.yaml"
            )),
        ] {
            let topo = topology_of(text);
            let mut solver = Solver::new(&topo, Settings::default());
            for i in 0..topo.nodes.len() {
                let plan = solver.plan(NodeId::from_idx(i));
                let mut asked: Vec<Destination> = vec![
                    Destination::Addr(IpAddr::from([192, 0, 2, 1])),
                    Destination::Addr("2001:db8::1".parse().unwrap_or(IpAddr::from([0; 16]))),
                ];
                for r in &plan.routes {
                    let d = r.destination;
                    asked.push(Destination::Prefix(d));
                    asked.push(Destination::Addr(d.network()));
                    asked.push(Destination::Addr(d.broadcast()));
                    asked.extend(d.hosts().nth(7).map(Destination::Addr));
                }
                assert!(!asked.is_empty());
                for d in asked {
                    let scan = routes_carrying(plan.routes.iter().map(|r| Some(r.destination)), d);
                    assert_eq!(carrying_in_plan(&plan.routes, d), scan, "{d}");
                }
            }
        }
    }
}
