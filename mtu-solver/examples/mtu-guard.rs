//! A guard a platform team puts in front of a change: it refuses a change that would lower any
//! route MTU below a threshold.
//!
//! `cargo run -p mtu-solver --example mtu-guard -- -f DIR --set KIND/NAME=MTU [--set ...] --min MTU`
//!
//! Prints each value the change moves (node, item, before → after) and exits 1 when a route
//! would drop below `--min`, 2 on bad arguments or input with errors (a strict resolver: the
//! guard never answers for less than the whole cluster). Written against the crate's public
//! API alone.
#![allow(
    clippy::disallowed_methods,
    reason = "a program reads its arguments; the library's loader reads the files"
)]

use mtu_solver::snapshot::Item;
use mtu_solver::{Mutation, Resolver, Settings, load};
use std::process::ExitCode;

/// What the command line asks.
struct Args {
    dirs: Vec<String>,
    changes: Vec<Mutation>,
    min: u32,
}

fn parse(mut args: impl Iterator<Item = String>) -> Result<Args, String> {
    let (mut dirs, mut changes, mut min) = (Vec::new(), Vec::new(), None);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "-f" => dirs.push(value()?),
            "--set" => {
                let text = format!("set {}", value()?);
                changes.push(text.parse().map_err(|e| format!("--set: {e}"))?);
            }
            "--min" => min = Some(value()?.parse().map_err(|e| format!("--min: {e}"))?),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    match (dirs.is_empty(), changes.is_empty(), min) {
        (false, false, Some(min)) => Ok(Args { dirs, changes, min }),
        _ => Err("usage: mtu-guard -f DIR --set KIND/NAME=MTU [--set ...] --min MTU".into()),
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("mtu-guard: {e}");
            ExitCode::from(2)
        }
    }
}

/// Whether the change keeps every route at or above `--min`.
fn run() -> Result<bool, String> {
    let args = parse(std::env::args().skip(1))?;
    let decoded = load::load(&args.dirs).map_err(|e| e.to_string())?;
    let resolver = Resolver::strict(decoded, Settings::default()).map_err(|e| e.to_string())?;
    let answer = resolver.what_if(&args.changes).map_err(|e| e.to_string())?;
    let mut low = 0;
    for c in &answer.changes {
        let shown = |v: Option<u32>| v.map_or("-".to_string(), |m| m.to_string());
        let is_route = matches!(c.item, Item::Route { .. });
        let below = is_route && c.after.is_some_and(|m| m < args.min);
        println!(
            "{} {} {} → {}{}",
            c.node,
            c.item,
            shown(c.before),
            shown(c.after),
            if below { "  BELOW --min" } else { "" }
        );
        low += usize::from(below);
    }
    println!(
        "{} values change on {} nodes; {low} routes below {}",
        answer.changes.len(),
        answer.nodes_affected(),
        args.min
    );
    Ok(low == 0)
}
