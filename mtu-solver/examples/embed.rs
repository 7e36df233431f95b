//! Embedding the resolver: load a directory of manifests, resolve one node, explain its route to
//! an address, and ask what changes if a GatewayPoolPeering's cap drops.
//!
//! `cargo run -p mtu-solver --example embed -- [DIR [NODE [ADDRESS [PEERING MTU]]]]`, by default
//! the shipped three-pool transit chain (`examples/04-transit-chain`), worker `wa`, the address
//! 10.103.1.10 (a pod in Site C) and the peering `pb-pc` capped at 1300.
#![allow(
    clippy::disallowed_methods,
    reason = "a program reads its arguments; the library's loader reads the files"
)]

use mtu_solver::resolver::{Destination, Resolver};
use mtu_solver::whatif::Mutation;
use mtu_solver::{Settings, load};
use std::error::Error;
use topology_core::vocab::Kind;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize, default: &str| args.get(i).cloned().unwrap_or_else(|| default.into());
    let dir = arg(
        0,
        concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/04-transit-chain"),
    );
    let node = arg(1, "wa");
    let destination: Destination = arg(2, "10.103.1.10").parse()?;
    let peering = arg(3, "pb-pc");
    let mtu: u32 = arg(4, "1300").parse()?;

    // Load and resolve: the same rules as `unbounded-mtu resolve -f DIR`.
    let resolver = Resolver::new(load::load(&[&dir])?, Settings::default());
    for d in resolver.diagnostics() {
        eprintln!("{d}");
    }
    let plan = resolver.plan(&node)?;
    println!(
        "{} (Site {}), fabric MTU {}",
        plan.name, plan.site, plan.fabric_mtu
    );
    for l in &plan.links {
        // Explained at the resolver's level: the bound term (Explanations::Bound).
        let why = l.explanation.as_ref().map_or("", |e| &e.bound.source);
        println!(
            "  link to {:<6} {:>5} {:<9} {why}",
            l.peer, l.mtu, l.protocol
        );
    }

    // Why the route to the destination is what it is, every term.
    let route = &resolver.explain(&node, destination)?.values[0];
    println!("{}: {}", route.item, route.value);
    for t in &route.terms {
        let at = t.location.as_deref().unwrap_or("-");
        println!("  {:>5}  {}  ({at})", t.value, t.source);
    }

    // What if the pool peering were capped lower?
    let cap = Mutation::SetCap {
        kind: Kind::GatewayPoolPeering,
        name: peering.clone(),
        mtu,
    };
    let what_if = resolver.what_if(&[cap])?;
    println!(
        "GatewayPoolPeering/{peering} at {mtu}: {} values change",
        what_if.changes.len()
    );
    for c in what_if.changes.iter().filter(|c| *c.node == *node) {
        println!("  {c}");
    }
    Ok(())
}
