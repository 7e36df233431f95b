//! Questions by name: the destinations a question names ([`Destination`]), the routes that
//! carry one ([`routes_carrying`]), and what a question can ask that the cluster does not have
//! ([`QueryError`]).

use ipnet::IpNet;
use std::net::IpAddr;

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
/// [`Resolver::explain`](crate::Resolver::explain).
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
    /// equal to it.
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

    /// `10.1.2.3`, `fd00::1`, `10.1.0.0/16`.
    fn from_str(s: &str) -> Result<Destination, Self::Err> {
        match s.parse::<IpNet>() {
            Ok(n) => Ok(Destination::Prefix(n.trunc())),
            Err(_) => s.parse().map(Destination::Addr),
        }
    }
}
