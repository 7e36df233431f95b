//! `unbounded-mtu`: the node agent and the offline commands, as a library so tests can drive
//! every part. The binary (`main.rs`) only parses arguments and maps errors to exit codes.

pub mod agent;
pub mod cli;
pub mod common;
pub mod input;
pub mod k8s;
pub mod resolve;
