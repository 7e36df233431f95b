//! Output to a reader that went away (`unbounded-mtu resolve | head -1`): every offline command,
//! in every output format, ends quietly with exit status 0, as `ripgrep` and other Unix tools
//! do: no panic, no backtrace, nothing on standard error. (The binary ignores `SIGPIPE`, as
//! every Rust program does, so a write to a closed pipe fails with `EPIPE`; that error ends the
//! command successfully, since the output was not wanted.)

use std::path::Path;
use std::process::{Command, Stdio};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_unbounded-mtu"));
    c.current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env("RUST_BACKTRACE", "1");
    c
}

/// The write end of a pipe whose read end is already closed: a child reads nothing from it and
/// exits before it is handed on, so the first write to it fails, whatever the timing.
fn closed_pipe() -> Stdio {
    let mut reader = Command::new("true")
        .stdin(Stdio::piped())
        .spawn()
        .expect("`true` runs");
    let write_end = reader.stdin.take().expect("a piped stdin");
    reader.wait().expect("`true` exits");
    Stdio::from(write_end)
}

const INPUT: &str = "examples/04-transit-chain";

/// Runs `args` with standard output on a closed pipe; asserts a quiet success, after checking
/// that the same command writes something when it has a reader.
fn quiet_on_closed_pipe(args: &[&str]) {
    let open = bin().args(args).output().unwrap();
    assert_eq!(
        open.status.code(),
        Some(0),
        "{args:?} with a reader: {}",
        String::from_utf8_lossy(&open.stderr)
    );
    assert!(!open.stdout.is_empty(), "{args:?} writes nothing");
    let closed = bin()
        .args(args)
        .stdout(closed_pipe())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&closed.stderr);
    assert_eq!(
        closed.status.code(),
        Some(0),
        "{args:?} into a closed pipe: {:?}, stderr: {stderr}",
        closed.status
    );
    assert!(
        stderr.is_empty(),
        "{args:?} into a closed pipe must be quiet: {stderr}"
    );
}

#[test]
fn resolve_into_a_closed_pipe() {
    for format in ["table", "json", "yaml"] {
        quiet_on_closed_pipe(&["resolve", "-f", INPUT, "-o", format]);
    }
}

#[test]
fn explain_into_a_closed_pipe() {
    for format in ["table", "json", "yaml"] {
        quiet_on_closed_pipe(&["explain", "-f", INPUT, "--node", "wa", "-o", format]);
    }
}

#[test]
fn what_if_into_a_closed_pipe() {
    for format in ["table", "json", "yaml"] {
        quiet_on_closed_pipe(&[
            "what-if",
            "-f",
            INPUT,
            "--set",
            "GatewayPoolPeering/pa-pb=1300",
            "-o",
            format,
        ]);
    }
}

#[test]
fn graph_into_a_closed_pipe() {
    quiet_on_closed_pipe(&["graph", "-f", INPUT, "--format", "dot"]);
    if Command::new("dot").arg("-V").output().is_ok() {
        quiet_on_closed_pipe(&["graph", "-f", INPUT, "--format", "svg"]);
    } else {
        eprintln!("skipped graph --format svg: Graphviz (dot) is not installed");
    }
}

#[test]
fn help_into_a_closed_pipe() {
    quiet_on_closed_pipe(&["--help"]);
    quiet_on_closed_pipe(&["resolve", "--help"]);
}
