//! `unbounded-mtu`: the node agent and the offline commands, as a library so tests can drive
//! every part. The binary (`main.rs`) only parses arguments and maps errors to exit codes.

pub mod agent;
pub mod cli;
pub mod common;
pub mod dataplane;
pub mod explain;
pub mod graph;
pub mod input;
pub mod k8s;
pub mod metrics;
pub mod node_agent;
pub mod resolve;
pub mod run_agent;
pub mod whatif;
