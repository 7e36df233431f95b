//! The mutations a what-if asks about (caps, relationships, members, gateways, underlays, the
//! agent's `mtu`) and the checks a question passes before anything is applied.

use super::input::Input;
use topology_core::decode::RawObject;
use topology_core::model::{NoSuchName, Topology};
use topology_core::mtu::{MAX_CAP, MAX_UNDERLAY, MIN_MTU};
use topology_core::vocab::Kind;

/// One mutation of the cluster or the agent's settings.
///
/// Its text (`FromStr` reads exactly what `Display` writes; the `what-if` command's flags use
/// the same words; kinds are read in any letter case):
///
/// | text | what it does |
/// |---|---|
/// | `set KIND/NAME=MTU` | sets the object's `tunnelMTU` (576..9000) |
/// | `clear KIND/NAME` | removes it |
/// | `enable KIND/NAME`, `disable KIND/NAME` | a peering's or assignment's `enabled` |
/// | `add-member KIND/NAME=KIND/MEMBER`, `remove-member ...` | a Site or pool of a relation |
/// | `demote NODE`, `promote NODE=POOL` | a gateway becomes a worker, or a worker a gateway |
/// | `underlay NODE=MTU` | the node's underlay MTU |
/// | `agent-mtu MTU` | the agent's `mtu` setting (0 clears it) |
/// | `path NODE=PEER:MTU` | an entry of the node's `path-mtu` annotation (0 clears it) |
///
/// ```
/// use mtu_solver::{Kind, Mutation};
/// let m: Mutation = "set sitepeering/ab=1300".parse().unwrap();
/// assert_eq!(m, Mutation::SetCap { kind: Kind::SitePeering, name: "ab".into(), mtu: 1300 });
/// assert_eq!(m.to_string(), "set SitePeering/ab=1300");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Mutation {
    /// Set `tunnelMTU`.
    SetCap {
        /// Kind.
        kind: Kind,
        /// Name.
        name: String,
        /// Value: 576..9000, or 0 to clear the cap as a manifest's 0 does; anything else is
        /// refused by [`check`].
        mtu: u32,
    },
    /// Remove `tunnelMTU`.
    ClearCap {
        /// Kind.
        kind: Kind,
        /// Name.
        name: String,
    },
    /// Enable or disable a SitePeering, assignment or pool peering.
    SetEnabled {
        /// Kind.
        kind: Kind,
        /// Name.
        name: String,
        /// Enabled.
        enabled: bool,
    },
    /// Add or remove a member Site or pool.
    Member {
        /// Kind of the relationship.
        kind: Kind,
        /// Its name.
        name: String,
        /// `Site` or `GatewayPool`.
        member_kind: Kind,
        /// The member's name.
        member: String,
        /// Add (true) or remove (false).
        add: bool,
    },
    /// Demote a gateway to a worker.
    Demote {
        /// Node.
        node: String,
    },
    /// Promote a node into a pool.
    Promote {
        /// Node.
        node: String,
        /// Pool.
        pool: String,
    },
    /// Change a node's underlay MTU.
    Underlay {
        /// Node.
        node: String,
        /// MTU.
        mtu: u32,
    },
    /// Change the agent `mtu` of every node.
    AgentMtu(u32),
    /// Set (or, with `None`, clear) what a node's `path-mtu` annotation says about one peer: the
    /// probed path MTU that bounds their link (D13).
    PathMtu {
        /// The node whose annotation changes.
        node: String,
        /// The peer the entry is about.
        peer: String,
        /// The path MTU; `None` removes the entry.
        mtu: Option<u32>,
    },
}

/// Why a mutation cannot apply.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum MutationError {
    /// The object or node does not exist.
    #[error(transparent)]
    NoSuchObject(#[from] NoSuchName),
    /// The mutation does not fit the object.
    #[error("{0}")]
    NotApplicable(String),
    /// A cap set or cleared on an object that has no `tunnelMTU` (a Node, a GatewayPoolNode).
    #[error("{kind}/{name} has no tunnelMTU{}", no_cap_hint(*kind))]
    NoCap {
        /// Its kind.
        kind: Kind,
        /// Its name.
        name: String,
    },
    /// A `tunnelMTU` outside 576..9000 (0 clears the cap): asking what an invalid cap does is
    /// not a what-if (a manifest's invalid cap fails closed to 576).
    #[error("{mtu} is outside 576..9000 (0 clears the cap)")]
    CapOutOfRange {
        /// The value asked for.
        mtu: u32,
    },
    /// A path MTU outside 576..65535: as with caps, an invalid annotation fails closed, which is
    /// not a what-if.
    #[error("{mtu} is outside 576..65535 (a path MTU)")]
    PathOutOfRange {
        /// The value asked for.
        mtu: u32,
    },
    /// Only a gateway can be demoted.
    #[error("node {0} is not a gateway")]
    NotAGateway(String),
    /// The solver was not made from the base's topology.
    #[error("the solver was made from another topology than the base's")]
    OtherTopology,
}

/// What to ask instead of a cap on an object without one.
fn no_cap_hint(kind: Kind) -> &'static str {
    match kind {
        Kind::Node => {
            "; a node's own MTUs are `underlay NODE=MTU`, `agent-mtu MTU` or `path NODE=PEER:MTU`"
        }
        _ => {
            " (Sites, GatewayPools, SitePeerings, SiteGatewayPoolAssignments and \
             GatewayPoolPeerings have one)"
        }
    }
}

/// [`MutationError::NoSuchObject`] for `name`, offering the closest of `candidates`.
pub(super) fn no_such<'a>(
    what: impl Into<String>,
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> MutationError {
    MutationError::NoSuchObject(NoSuchName::new(what, name, candidates))
}

fn names_of(objects: &[RawObject], kind: Kind) -> impl Iterator<Item = &str> {
    objects
        .iter()
        .filter(move |o| o.kind() == kind)
        .map(|o| o.name())
}

/// Checks a mutation against the base input before anything is applied: the objects and nodes
/// it names exist (and the members it adds), caps are within 576..9000 (0 clears), only
/// gateways are demoted. [`what_if`](super::what_if) and [`what_if_on`](super::what_if_on)
/// check every mutation first. Costs a pass over `base`'s objects per object the mutation
/// names (a look-up per node).
///
/// ```
/// # let d = mtu_solver::load::from_sources([("cluster.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
/// # let base = mtu_solver::whatif::Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
/// use mtu_solver::whatif::{MutationError, check};
/// use mtu_solver::{Kind, Mutation};
/// let topology = base.build_topology();
/// assert_eq!(check(&base, &topology, &"set SitePeering/ab=1300".parse()?), Ok(()));
/// let wild = Mutation::SetCap { kind: Kind::SitePeering, name: "ab".into(), mtu: 100 };
/// assert_eq!(check(&base, &topology, &wild), Err(MutationError::CapOutOfRange { mtu: 100 }));
/// let demote: Mutation = "demote wa".parse()?;
/// assert_eq!(check(&base, &topology, &demote), Err(MutationError::NotAGateway("wa".into())));
/// # Ok::<(), mtu_solver::Error>(())
/// ```
pub fn check(base: &Input, topo: &Topology, m: &Mutation) -> Result<(), MutationError> {
    let object = |kind: Kind, name: &str| {
        if base
            .objects
            .iter()
            .any(|o| o.kind() == kind && o.name() == name)
        {
            Ok(())
        } else {
            Err(no_such(
                kind.to_string(),
                name,
                names_of(&base.objects, kind),
            ))
        }
    };
    let node = |name: &str| topo.find_node(name).map_err(MutationError::from);
    match m {
        Mutation::SetCap { kind, name, mtu } => {
            if *mtu != 0 && !(MIN_MTU..=MAX_CAP).contains(mtu) {
                return Err(MutationError::CapOutOfRange { mtu: *mtu });
            }
            object(*kind, name)
        }
        Mutation::ClearCap { kind, name } | Mutation::SetEnabled { kind, name, .. } => {
            object(*kind, name)
        }
        Mutation::Member {
            kind,
            name,
            member_kind,
            member,
            ..
        } => {
            object(*kind, name)?;
            object(*member_kind, member)
        }
        Mutation::Demote { node: n } => {
            if topo.node(node(n)?).is_gateway() {
                Ok(())
            } else {
                Err(MutationError::NotAGateway(n.clone()))
            }
        }
        Mutation::Promote { node: n, pool } => {
            node(n)?;
            object(Kind::GatewayPool, pool)
        }
        Mutation::Underlay { node: n, .. } => node(n).map(|_| ()),
        Mutation::PathMtu { node: n, peer, mtu } => {
            if let Some(v) = mtu
                && !(MIN_MTU..=MAX_UNDERLAY).contains(v)
            {
                return Err(MutationError::PathOutOfRange { mtu: *v });
            }
            node(n)?;
            node(peer).map(|_| ())
        }
        Mutation::AgentMtu(_) => Ok(()),
    }
}

/// [`check`] of every mutation of a question, in order: a node an earlier mutation promoted
/// may be demoted. Costs a [`check`] per mutation, up to the first refused.
///
/// ```
/// # let d = mtu_solver::load::from_sources([("hub.yaml", mtu_solver::doc_cluster::HUB_AND_SPOKE)]);
/// # let base = mtu_solver::whatif::Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
/// use mtu_solver::whatif::{Mutation, check_all};
/// let topology = base.build_topology();
/// let demote: Mutation = "demote a1".parse()?; // a1 is a worker
/// assert!(check_all(&base, &topology, &[demote.clone()]).is_err());
/// // Promoted into pool ph first, it may be demoted again.
/// let promote: Mutation = "promote a1=ph".parse()?;
/// assert_eq!(check_all(&base, &topology, &[promote, demote]), Ok(()));
/// # Ok::<(), mtu_solver::Error>(())
/// ```
pub fn check_all(
    base: &Input,
    topo: &Topology,
    mutations: &[Mutation],
) -> Result<(), MutationError> {
    match first_refused(base, topo, mutations) {
        Some((_, e)) => Err(e),
        None => Ok(()),
    }
}

/// The first mutation [`check_all`] refuses: its index and why. Costs a [`check`] per
/// mutation, up to the first refused.
///
/// ```
/// # let d = mtu_solver::load::from_sources([("cluster.yaml", mtu_solver::doc_cluster::TWO_SITES)]);
/// # let base = mtu_solver::whatif::Input { objects: d.objects, diagnostics: d.diagnostics, settings: Default::default() };
/// use mtu_solver::whatif::{MutationError, first_refused};
/// use mtu_solver::Mutation;
/// let topology = base.build_topology();
/// let question: [Mutation; 3] =
///     ["agent-mtu 1300".parse()?, "underlay wc=1300".parse()?, "demote wa".parse()?];
/// let (index, why) = first_refused(&base, &topology, &question).expect("wc is no node");
/// assert_eq!(index, 1);
/// assert!(matches!(why, MutationError::NoSuchObject(_)));
/// assert_eq!(first_refused(&base, &topology, &question[..1]), None);
/// # Ok::<(), mtu_solver::Error>(())
/// ```
pub fn first_refused(
    base: &Input,
    topo: &Topology,
    mutations: &[Mutation],
) -> Option<(usize, MutationError)> {
    mutations.iter().enumerate().find_map(|(i, m)| {
        let promoted_before = matches!(m, Mutation::Demote { node } if mutations
            .get(..i)
            .unwrap_or_default()
            .iter()
            .any(|e| matches!(e, Mutation::Promote { node: p, .. } if p == node)));
        if promoted_before {
            return None;
        }
        check(base, topo, m).err().map(|e| (i, e))
    })
}
