//! Prints what a fuzz input of the `resolve` or `whatif` target stands for: the topology as
//! YAML (and, for `whatif`, the mutations as `# what-if: ...` comment lines), the form the
//! regression test replays. Usage: `cargo run --bin to-yaml -- resolve|whatif FILE >
//! regressions/<target>/<name>.yaml`.

use arbitrary::{Arbitrary, Unstructured};
use unbounded_mtu_fuzz::{FTopo, WhatIfCase};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(target), Some(file)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: to-yaml resolve|whatif FILE");
        std::process::exit(2);
    };
    let data = std::fs::read(file).unwrap_or_else(|e| {
        eprintln!("{file}: {e}");
        std::process::exit(2);
    });
    let mut u = Unstructured::new(&data);
    match target.as_str() {
        "resolve" => match FTopo::arbitrary_take_rest(u) {
            Ok(t) => print!("{}", t.yaml()),
            Err(e) => eprintln!("not an input: {e}"),
        },
        "whatif" => match WhatIfCase::arbitrary(&mut u) {
            Ok(c) => {
                for m in c.mutations() {
                    println!("{}", unbounded_mtu_fuzz::mutation_line(&m));
                }
                print!("{}", c.topo.yaml());
            }
            Err(e) => eprintln!("not an input: {e}"),
        },
        _ => {
            eprintln!("unknown target {target}");
            std::process::exit(2);
        }
    }
}
