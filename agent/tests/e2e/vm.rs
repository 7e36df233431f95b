//! The hub lab over the tunnels that only the VM lab's kernel carries (`.ci/vm-lab` runs the
//! tests of this module, `vm::`): GENEVE inside the Sites and WireGuard across them (the workers' links to the
//! gateway, with WireGuard devices configured as a deployment would: keys, peers and the
//! destinations the plan routes through each), and IPIP inside the Sites. The four agents
//! converge to what `resolve` computes, every pod reaches every other, and DF pings cross at
//! each route's MTU and not one byte above it.

use crate::lab::{self, Caps, Lab, NODES, Protocols};

fn can_run(test: &str) -> bool {
    use test_utils::netns::Need;
    test_utils::netns::can_run(
        test,
        &[
            Need::Tool("ip"),
            Need::Tool("ping"),
            Need::Tool("wg"),
            Need::LinkType("geneve"),
            Need::LinkType("wireguard"),
            Need::LinkType("ipip"),
        ],
    )
}

/// The hub lab over `protocols`, its agents converged; every pod reaches every other; DF pings
/// at the route MTU of each pair.
fn converge_and_ping(protocols: Protocols) {
    let mut lab = Lab::hub_with(protocols);
    let (wants, published) = lab.write_manifests(Caps::default());
    println!("{protocols:?}: g1 publishes {published:?}");
    let (_, resolved) = lab::resolve(&lab.manifests);
    lab.provision_wireguard(&resolved);
    for d in &NODES {
        lab.spawn_agent(d.name);
    }
    let took = lab.wait_converged(&wants);
    println!("{protocols:?}: the four agents converged in {took:?}");
    crate::show(&wants);
    crate::reach_all(&lab);
    let checked = crate::df_checks(&lab, &wants, &crate::DF_PAIRS);
    println!("{protocols:?}: {checked} DF pings as planned");
}

#[test]
fn geneve_inside_sites_and_wireguard_across_them() {
    if !can_run("geneve_inside_sites_and_wireguard_across_them") {
        return;
    }
    converge_and_ping(Protocols {
        sites: "GENEVE",
        hub: "WireGuard",
    });
}

#[test]
fn ipip_inside_sites() {
    if !can_run("ipip_inside_sites") {
        return;
    }
    converge_and_ping(Protocols {
        sites: "IPIP",
        hub: "VXLAN",
    });
}
