//! Checking a plan against the wire: which links to probe and what the plan says they carry
//! ([`targets`]), the search for the largest packet a path answers ([`Search`]), and the
//! verdict of each link ([`judge`]). Sending the packets is the caller's business (the
//! `probe-linux` adapter on Linux): the search takes the probe as a function.

mod report;
mod search;
mod target;

pub use report::{LinkProbe, Measured, ProbeReport, Verdict, judge};
pub use search::{Answer, Found, Search};
pub use target::{Target, targets};
