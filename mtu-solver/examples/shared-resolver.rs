//! One resolved cluster shared between threads, and a changed one swapped in while they read:
//! what a small server does that answers MTU questions and applies a what-if as the new truth.
//!
//! `cargo run -p mtu-solver --example shared-resolver -- -f DIR`
//!
//! Four reader threads plan every node, again and again, from whichever resolver is current;
//! the main thread swaps in the resolver of the same cluster with the agent's `mtu` at 1300.
//! A reader holds one resolver for a whole pass, so every plan it gets is of one cluster (the
//! capped one's links are all at most 1300), and after the swap every reader sees the new one. Written against the crate's public API alone.
#![allow(
    clippy::disallowed_methods,
    reason = "a program reads its arguments; the library's loader reads the files"
)]

use mtu_solver::{Resolver, Settings, load};
use std::error::Error;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};

const READERS: usize = 4;
const CAPPED: u32 = 1300;

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = match args.as_slice() {
        [flag, dir] if flag == "-f" => dir.clone(),
        _ => return Err("usage: shared-resolver -f DIR".into()),
    };
    let before = Resolver::strict(load::load(&[&dir])?, Settings::default())?;
    let nodes: Vec<String> = before.node_names().map(str::to_string).collect();
    let current = Arc::new(RwLock::new(Arc::new(before)));
    let swapped = Arc::new(AtomicBool::new(false));
    let passes = Arc::new(AtomicUsize::new(0));

    let readers: Vec<_> = (0..READERS)
        .map(|i| {
            let (current, swapped, passes) = (current.clone(), swapped.clone(), passes.clone());
            let nodes = nodes.clone();
            std::thread::spawn(move || read(i, &current, &swapped, &passes, &nodes))
        })
        .collect();

    // The changed cluster, resolved beside the one the readers use, then swapped in.
    let settings = Settings {
        cfg_mtu: CAPPED,
        ..Settings::default()
    };
    let after = Arc::new(Resolver::strict(load::load(&[&dir])?, settings)?);
    after.plan_all();
    // Swap while the readers read: once they have planned every node a few times.
    while passes.load(Ordering::SeqCst) < 2 * READERS {
        std::thread::yield_now();
    }
    *current.write().map_err(|_| "a reader panicked")? = after;
    swapped.store(true, Ordering::SeqCst);

    let (mut before, mut after) = (0, 0);
    for r in readers {
        let (old, new) = r.join().map_err(|_| "a reader panicked")??;
        before += old;
        after += new;
        println!("reader: {old} plans before the swap, {new} after");
    }
    if before == 0 || after < READERS * nodes.len() {
        return Err(format!("readers saw {before} plans before the swap, {after} after").into());
    }
    println!(
        "{} plans of {} nodes by {READERS} threads, each entirely of one cluster",
        before + after,
        nodes.len()
    );
    Ok(())
}

/// Plans every node until it has seen the swap and then read every node once more; how many
/// plans it got of each cluster.
fn read(
    i: usize,
    current: &RwLock<Arc<Resolver>>,
    swapped: &AtomicBool,
    passes: &AtomicUsize,
    nodes: &[String],
) -> Result<(usize, usize), String> {
    let (mut old, mut new) = (0, 0);
    loop {
        let was_swapped = swapped.load(Ordering::SeqCst);
        let resolver = current.read().map_err(|_| "poisoned")?.clone();
        let capped = resolver.settings().cfg_mtu == CAPPED;
        for n in nodes.iter().cycle().skip(i).take(nodes.len()) {
            let plan = resolver.plan(n).map_err(|e| e.to_string())?;
            let highest = plan.links.iter().map(|l| l.mtu).max().unwrap_or(0);
            if capped && highest > CAPPED {
                return Err(format!("{n}: a link at {highest} from the capped resolver"));
            }
            if capped {
                new += 1;
            } else {
                old += 1;
            }
        }
        passes.fetch_add(1, Ordering::SeqCst);
        if was_swapped {
            if !capped {
                return Err("the swap was not seen".into());
            }
            return Ok((old, new));
        }
    }
}
