//! [`Error`]: the one error type an embedder needs. Every fallible call of the crate converts
//! into it with `?`; [`Error::kind`] says what went wrong without reading the message, the
//! message names what exists nearest to a misspelt name, and `source()` reaches the cause (the
//! I/O error of a file that could not be read).

#[cfg(feature = "fs")]
use crate::load::LoadError;
use crate::resolver::{InputRefused, QueryError};
use crate::whatif::{MutationError, ParseMutationError};

/// Anything the crate's API can refuse.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A question named a node or a destination the cluster does not have.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// A mutation names something the cluster does not have, or does not fit it.
    #[error(transparent)]
    Mutation(#[from] MutationError),
    /// A mutation's text does not parse.
    #[error(transparent)]
    Parse(#[from] ParseMutationError),
    /// Manifests could not be read.
    #[cfg(feature = "fs")]
    #[error(transparent)]
    Load(#[from] LoadError),
    /// A strict resolver refused input with errors.
    #[error(transparent)]
    Refused(#[from] InputRefused),
}

/// What an [`Error`] is about, to match on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// No node of that name.
    UnknownNode,
    /// No object of that kind and name.
    UnknownObject,
    /// The node has no route to that destination.
    NoRoute,
    /// The node has no link to that peer.
    NoLink,
    /// A mutation that does not parse, does not fit its object, or asks an invalid value.
    BadMutation,
    /// Manifests could not be read.
    Load,
    /// The input has errors and was refused.
    InputRefused,
}

impl Error {
    /// What the error is about. Free.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Error, ErrorKind, Kind, Mutation, Resolver};
    /// fn fabric(resolver: &Resolver, node: &str) -> Result<u32, Error> {
    ///     Ok(resolver.plan(node)?.fabric_mtu)
    /// }
    /// assert_eq!(fabric(&resolver, "wc").map_err(|e| e.kind()), Err(ErrorKind::UnknownNode));
    /// let typo = Mutation::SetCap { kind: Kind::SitePeering, name: "ba".into(), mtu: 1300 };
    /// let refused = Error::from(resolver.what_if(&[typo]).expect_err("no SitePeering/ba"));
    /// assert_eq!(refused.kind(), ErrorKind::UnknownObject);
    /// let garbled = Error::from("set SitePeering/ab".parse::<Mutation>().expect_err("no MTU"));
    /// assert_eq!(garbled.kind(), ErrorKind::BadMutation);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Query(QueryError::NoSuchNode { .. }) => ErrorKind::UnknownNode,
            Error::Query(QueryError::NoLink { .. }) => ErrorKind::NoLink,
            Error::Query(_) => ErrorKind::NoRoute,
            Error::Mutation(MutationError::NoSuchObject(n)) if n.what == "node" => {
                ErrorKind::UnknownNode
            }
            Error::Mutation(MutationError::NoSuchObject(_)) => ErrorKind::UnknownObject,
            Error::Mutation(_) | Error::Parse(_) => ErrorKind::BadMutation,
            #[cfg(feature = "fs")]
            Error::Load(_) => ErrorKind::Load,
            Error::Refused(_) => ErrorKind::InputRefused,
        }
    }
}
