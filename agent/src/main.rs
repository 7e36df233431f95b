//! `unbounded-mtu`: the node agent and the offline resolve, explain, what-if and graph commands.

use clap::Parser;
use std::process::ExitCode;
use unbounded_mtu::{agent, cli, common, explain, graph, resolve, whatif};

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match &cli.command {
        cli::Command::Resolve(a) => resolve::run(a),
        cli::Command::WhatIf(a) => {
            let raw: Vec<String> = std::env::args().collect();
            whatif::run(a, &raw)
        }
        cli::Command::Explain(a) => explain::run(a),
        cli::Command::Graph(a) => graph::run(a),
        cli::Command::Agent(a) => agent::main(a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(x) = e.downcast_ref::<common::ExitError>() {
                eprintln!("unbounded-mtu: {}", x.message);
                ExitCode::from(x.code)
            } else if broken_pipe(&e) {
                // The reader went away (`| head`): not an error of ours.
                ExitCode::SUCCESS
            } else {
                eprintln!("unbounded-mtu: {e:#}");
                ExitCode::from(2)
            }
        }
    }
}

fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
    })
}
