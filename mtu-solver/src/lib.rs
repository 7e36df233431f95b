//! MTU resolution along forwarding paths (`spec/mtu.md`): an I/O-free crate.
//!
//! [`Solver`] resolves a [`NodePlan`] for any node of a validated
//! [`topology_core::model::Topology`]: link, route, device, fabric and published MTUs, each with
//! an interned explanation.
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

pub mod explain;
pub mod incremental;
#[cfg(feature = "fs")]
pub mod load;
pub mod overhead;
pub mod plan;
pub mod report;
pub mod resolver;
pub mod snapshot;
pub mod solver;
pub mod whatif;

pub use plan::*;
pub use solver::{DeviceNames, Settings, Solver};
