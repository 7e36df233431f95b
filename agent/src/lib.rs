//! `unbounded-mtu`: the node agent and the offline commands, as a library so tests can drive
//! every part. The binary (`main.rs`) only parses arguments and maps errors to exit codes.

/// `--version`: the crate version, the commit and the build date (baked in by `build.rs`).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("UNBOUNDED_MTU_COMMIT"),
    ", built ",
    env!("UNBOUNDED_MTU_BUILD_DATE"),
    ")"
);

/// `--version` in full: the same facts, one per line.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ncommit: ",
    env!("UNBOUNDED_MTU_COMMIT"),
    "\nbuilt: ",
    env!("UNBOUNDED_MTU_BUILD_DATE")
);

pub mod agent;
pub mod cli;
pub mod common;
pub mod dataplane;
pub mod explain;
pub mod graph;
pub mod k8s;
pub mod output;
pub mod probe;
pub mod prober;
pub mod resolve;
pub mod settings;
pub mod whatif;
