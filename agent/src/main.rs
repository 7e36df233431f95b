//! `unbounded-mtu`: the node agent and the offline resolve, explain, what-if and graph commands.

use clap::{CommandFactory, FromArgMatches};
use std::process::ExitCode;
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
        cli::Command::Resolve(a) => resolve::run(a),
        // The what-if flags apply in command-line order, which clap's matches record.
        cli::Command::WhatIf(a) => whatif::run(a, matches.subcommand_matches("what-if")),
        cli::Command::Explain(a) => explain::run(a),
        cli::Command::Graph(a) => graph::run(a),
        cli::Command::Probe(a) => probe::command::run(a),
        cli::Command::Agent(a) => agent::main(a),
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
