//! `unbounded-mtu`: the node agent and the offline resolve, explain, what-if and graph commands.

use clap::Parser;
use std::process::ExitCode;
use unbounded_mtu::{agent, cli, common, resolve};

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let result = match &cli.command {
        cli::Command::Resolve(a) => resolve::run(a),
        cli::Command::Agent(a) => agent::main(a),
        cli::Command::Explain(_) | cli::Command::WhatIf(_) | cli::Command::Graph(_) => {
            Err(common::usage("this command is not built yet"))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(x) = e.downcast_ref::<common::ExitError>() {
                eprintln!("unbounded-mtu: {}", x.message);
                ExitCode::from(x.code)
            } else if let Some(io) = e.downcast_ref::<std::io::Error>()
                && io.kind() == std::io::ErrorKind::BrokenPipe
            {
                ExitCode::SUCCESS
            } else {
                eprintln!("unbounded-mtu: {e:#}");
                ExitCode::from(2)
            }
        }
    }
}
