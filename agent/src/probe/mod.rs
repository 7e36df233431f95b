//! Checking the plan on the wire: the `probe` command and the probe runner the agent's
//! background probes share with it. What to probe and how results are judged live in
//! `mtu_solver::probe`; the packets are sent by `probe-linux`.

pub mod command;
pub mod runner;
