//! Questions by name: the destinations a question names ([`Destination`]), the routes that
//! carry one ([`routes_carrying`]), and what a question can ask that the cluster does not have
//! ([`QueryError`]).

use ipnet::IpNet;
use std::net::IpAddr;

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
