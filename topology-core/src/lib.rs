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

pub(crate) mod broken;
pub mod decode;
pub mod diag;
pub mod ids;
pub mod model;
pub mod mtu;
pub mod net;
pub mod schema;
pub mod select;
pub(crate) mod tree;
pub mod vocab;
