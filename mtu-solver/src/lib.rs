//! MTU resolution along the paths traffic really takes, for clusters that span many Sites
//! joined by tunnels and gateway pools.
//!
//! Every link, route, tunnel device and pod-facing fabric gets an MTU, and every MTU an
//! explanation naming the object and field that bound it. The rules, in short:
//!
//! - a link between nodes `a` and `b` carries `min(U(a), U(b)) − O(protocol, outer family)`,
//!   where `U` is a node's underlay MTU (its `mtu.unbounded-cloud.io/underlay-mtu` annotation,
//!   capped by `underlay-mtu-max`, else [`Settings::default_underlay`]) and `O` the
//!   encapsulation overhead (WireGuard 80; GENEVE 58, or 78 over IPv6; VXLAN 50/70; IPIP 20/40);
//!   configured caps (`tunnelMTU` of the Sites, pools, peerings and assignments the link belongs
//!   to, and the agent's `mtu`) lower it further;
//! - a route carries the lowest MTU of every link on every path it may take, through gateways
//!   and transit pools, and what the gateways on the way published;
//! - a shared tunnel device takes the largest MTU of the links it carries (each route keeps its
//!   own, lower, MTU); the pod fabric the smallest link MTU of the node.
//!
//! The crate does no I/O except its loader ([`load::load`], feature `fs`, on by default): it
//! decodes `(name, bytes)` pairs ([`load::from_sources`], always there) and takes host facts as
//! settings.
//!
//! # Load, resolve, ask what if, explain
//!
//! ```
//! use mtu_solver::{Destination, Kind, Mutation, ObjectRef, Resolver, Settings, load};
//!
//! // Two Sites peered over GENEVE; a directory would do as well: `load::load(&["manifests/"])`.
//! let manifests = "
//! apiVersion: net.unbounded-cloud.io/v1alpha1
//! kind: Site
//! metadata: {name: a}
//! spec: {nodeCidrs: [10.0.0.0/16], podCidrAssignments: [{cidrBlocks: [10.9.0.0/16]}]}
//! ---
//! apiVersion: net.unbounded-cloud.io/v1alpha1
//! kind: Site
//! metadata: {name: b}
//! spec: {nodeCidrs: [10.1.0.0/16], podCidrAssignments: [{cidrBlocks: [10.8.0.0/16]}]}
//! ---
//! apiVersion: net.unbounded-cloud.io/v1alpha1
//! kind: SitePeering
//! metadata: {name: ab}
//! spec: {sites: [a, b], tunnelMTU: 1400}
//! ---
//! apiVersion: v1
//! kind: Node
//! metadata: {name: wa, labels: {net.unbounded-cloud.io/site: a}}
//! status: {addresses: [{type: InternalIP, address: 10.0.0.1}]}
//! spec: {podCIDRs: [10.9.1.0/24]}
//! ---
//! apiVersion: v1
//! kind: Node
//! metadata: {name: wb, labels: {net.unbounded-cloud.io/site: b}}
//! status: {addresses: [{type: InternalIP, address: 10.1.0.1}]}
//! spec: {podCIDRs: [10.8.1.0/24]}
//! ";
//! let resolver = Resolver::new(load::from_sources([("cluster.yaml", manifests)]), Settings::default());
//! assert!(resolver.diagnostics().is_empty());
//!
//! // wa's link to wb: min(1500 − GENEVE 58, the peering's cap 1400).
//! let wa = resolver.plan("wa")?;
//! assert_eq!((&*wa.links[0].peer, wa.links[0].mtu), ("wb", 1400));
//!
//! // Why the route to wb's pods is 1400: the SitePeering's tunnelMTU.
//! let to_wb: Destination = "10.8.1.9".parse()?;
//! let route = &resolver.explain("wa", to_wb)?.values[0];
//! assert_eq!(route.bound.object, Some(ObjectRef::new(Kind::SitePeering, "ab")));
//! assert_eq!(route.bound.location.as_deref(), Some("cluster.yaml:15"));
//!
//! // What if the peering's cap were 1300? Both nodes' links and routes follow.
//! let cap = Mutation::SetCap { kind: Kind::SitePeering, name: "ab".into(), mtu: 1300 };
//! let what_if = resolver.what_if(&[cap])?;
//! assert!(what_if.changes.iter().all(|c| c.after == Some(1300)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Resolver`] is the entry point for tools that embed the resolver; [`Resolver::strict`]
//! refuses input with errors as the binary's exit status does, and [`Explanations`] chooses
//! once how much of each explanation results carry. Every fallible call converts into
//! [`Error`] with `?`; [`Error::kind`] says what went wrong. The modules below it ([`solver`],
//! [`whatif`], [`incremental`], [`report`]) are what it is built from, for tools that need more
//! control.
//!
//! A what-if's answer can be kept and carried out: [`Resolver::apply`] is the resolver of the
//! changed cluster (the mutations applied as [`Resolver::what_if`] applies them, so its values
//! are the what-if's values after), and [`Resolver::manifests`] writes the changed objects as
//! [`Manifests`]: a JSON merge patch per object ([`Manifest`], `kubectl patch -f FILE --type
//! merge --patch-file FILE`), and the changes no object carries ([`Unwritten`]: the agent's
//! `mtu`, a pool's controller-written status).
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::indexing_slicing,
        clippy::arithmetic_side_effects
    )
)]

#[doc(hidden)]
pub mod doc_cluster;
mod error;
pub mod explain;
pub mod incremental;
pub mod load;
pub mod locality;
pub mod overhead;
pub mod plan;
pub mod probe;
mod query;
mod raw;
pub mod report;
pub mod resolver;
pub mod snapshot;
pub mod solver;
pub mod stream;
pub mod whatif;

pub use error::{Error, ErrorKind};
#[cfg(feature = "fs")]
pub use load::LoadError;
pub use plan::*;
pub use report::explanation::{Explained, Explanation, Paths, Question, Subject};
pub use report::hops::{HopEnd, HopKind, HopOut, PublishedOut};
pub use report::{DiagList, DiagOut, TermList, TermOut};
pub use resolver::{Destination, Explanations, InputRefused, Planned, QueryError, Resolver};
pub use solver::{ComponentCap, DeviceNames, Settings, Solver};
/// The model this crate resolves: its types (`Kind`, `Decoded`, `Diagnostic`...) named
/// without a second dependency.
pub use topology_core;
pub use topology_core::decode::Decoded;
pub use topology_core::diag::{Diagnostic, Severity};
pub use topology_core::vocab::{Kind, ObjectRef};
pub use whatif::{
    Manifest, Manifests, Mutation, MutationError, ParseMutationError, Unwritten, WhatIf,
};
