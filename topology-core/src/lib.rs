//! I/O-free model of multi-site overlays.
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

pub mod diag;
pub mod tree;
pub mod decode;
pub mod ids;
pub mod mtu;
pub mod model;
pub mod net;
#[cfg(feature = "reference")]
pub mod reference;
#[cfg(feature = "testkit")]
pub mod testkit;
