//! `unbounded-mtu`: the node agent and the offline resolve, explain, what-if and graph commands.

use clap::{CommandFactory, FromArgMatches};
use std::process::ExitCode;
use unbounded_mtu::settings::{self, SettingsError};
use unbounded_mtu::{agent, cli, common, explain, graph, probe, resolve, whatif};

/// mimalloc rather than the C library's malloc: a resolve makes millions of small allocations
/// beside a large explanation arena, and glibc's malloc spent up to a fifth of a what-if
/// searching its fragmented bins (`docs/performance.md`, "The allocator"). The DaemonSet sets
/// its memory settings (`deploy/daemonset.yaml`); the benchmark binaries count allocations over
/// the same allocator (`benches/src/alloc.rs`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let matches = cli::Cli::command().get_matches();
    let cli = cli::Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let result = match &cli.command {
        cli::Command::Resolve(a) => settings::resolve(a)
            .map_err(refused)
            .and_then(|s| resolve::run(&s)),
        // The what-if flags apply in command-line order, which clap's matches record.
        cli::Command::WhatIf(a) => settings::what_if(a, matches.subcommand_matches("what-if"))
            .map_err(refused)
            .and_then(|s| whatif::run(&s)),
        cli::Command::Explain(a) => settings::explain(a)
            .map_err(refused)
            .and_then(|s| explain::run(&s)),
        cli::Command::Graph(a) => settings::graph(a)
            .map_err(refused)
            .and_then(|s| graph::run(&s)),
        cli::Command::Probe(a) => probe::run(&settings::probe_command(a)),
        cli::Command::Agent(a) => settings::Agent::from_args(a)
            .map_err(refused)
            .and_then(agent::main),
        cli::Command::Completion(a) => common::completion(a.shell),
        cli::Command::Man(a) => common::man_page(a),
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
                eprintln!("unbounded-mtu: {}", common::chain_text(&e));
                ExitCode::from(2)
            }
        }
    }
}

/// Flags that make no settings: exit 2 with what is wrong, before any input is read.
fn refused(e: SettingsError) -> anyhow::Error {
    common::usage(e.to_string())
}

/// Whether the command ended because standard output was closed (`unbounded-mtu resolve | head
/// -1`). Rust programs ignore `SIGPIPE`, so such a write fails with `EPIPE` instead of killing
/// the process; every command writes its output through fallible writes, and this error ends it
/// with exit status 0 and nothing on standard error, as `ripgrep` does: the reader stopped
/// wanting the output, nothing went wrong. (Dying by `SIGPIPE`, status 141 in a shell, is the
/// C convention; with `set -o pipefail` it would fail a script that only wanted the first line.)
fn broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<serde_json::Error>()
                .is_some_and(|j| j.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
    })
}
