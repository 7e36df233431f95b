//! End to end (issue 10): `unbounded-mtu agent --manifests ... --netns ...` processes, one per
//! node namespace, moving real packets over VXLAN at the MTUs `resolve` computes.
//!
//! Topology (see `e2e/lab.rs`): an underlay bridge `br0` in its own namespace; nodes a1, a2
//! (Site A), b1 (Site B, underlay veth MTU 1400) and gateway g1 (Site G, Internal pool `hub`
//! serving A and B), each with `eth0` into `br0` (10.0.0.0/8), a pod bridge `cni0` holding the
//! pod gateway address (first address of the node's pod CIDR) and one pod namespace on it.
//! Every Site, the pool and the assignment say `tunnelProtocol: VXLAN`. The manifests carry
//! each node's underlay MTU as its annotation and g1's `published` values (from a first
//! `resolve` without them) as its GatewayPoolNode `forwarding-mtus` annotation.
//!
//! `e2e/nat.rs` adds a second lab (issue 15): a gateway reaching a NAT'd remote worker's
//! InternalIP, which its underlay cannot route, through its `NodeAddress` host route.
//!
//! `e2e/ipv6_outer.rs` (issue 22): two IPv6-only nodes under the default IPv4 tunnel family,
//! whose VXLAN packets carry an IPv6 outer header, at 1400 − 70, and the black hole that the
//! IPv4 overhead column (1400 − 50) would make.
//!
//! `e2e/stop.rs` (issue 16): SIGTERM during a long apply, and the own Node's deletion removing
//! the owned kernel state before exit 4 (API mode against the scripted API server).
//!
//! `e2e/probe.rs` (issue 20): a black hole behind routers that drop their own ICMP errors,
//! found by `unbounded-mtu probe` (behind VXLAN, GENEVE and WireGuard links) and repaired by the
//! agent's `--underlay-from-probe`.
//!
//! `e2e/vm.rs` (its tests named `vm::`, run by `.ci/vm-lab` on its kernel, skipped by CI's run on
//! the host): the hub lab with GENEVE inside the Sites and WireGuard across them, and with IPIP.
//!
//! Root only (skipped with a printed reason otherwise):
//! `cargo test -p agent --features e2e --test e2e -- --test-threads=1 --nocapture`
#![cfg(feature = "e2e")]

#[path = "e2e/ipv6_outer.rs"]
mod ipv6_outer;
#[path = "e2e/kernel.rs"]
mod kernel;
#[path = "e2e/lab.rs"]
mod lab;
#[path = "e2e/nat.rs"]
mod nat;
#[path = "e2e/probe.rs"]
mod probe;
#[path = "e2e/stop.rs"]
mod stop;
#[path = "support/mod.rs"]
mod support;
#[path = "e2e/vm.rs"]
mod vm;

use std::collections::{BTreeMap, BTreeSet};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kernel::{Snapshot, netlink_sample_until, sample_until};
use lab::{Caps, Lab, NODES, Want, first_line_with, node_def, ping, ping_ok, tail};

macro_rules! require_root {
    ($name:expr) => {
        if !lab::can_run($name) {
            return;
        }
    };
}

fn lowered_site_a() -> Caps {
    Caps {
        site_a: Some(1300),
        assignment: None,
    }
}

fn lowered_assignment() -> Caps {
    Caps {
        site_a: None,
        assignment: Some(1280),
    }
}

/// A lab with every agent running and converged on `caps`.
fn start(caps: Caps) -> (Lab, BTreeMap<String, Want>) {
    let mut lab = Lab::hub();
    let (wants, published) = lab.write_manifests(caps);
    println!("g1 forwarding-mtus annotation: {published:?}");
    for d in &NODES {
        lab.spawn_agent(d.name);
    }
    let took = lab.wait_converged(&wants);
    println!("all four agents converged in {took:?}");
    (lab, wants)
}

fn show(wants: &BTreeMap<String, Want>) {
    for (n, w) in wants {
        println!(
            "  {n}: fabric {} devices {:?} routes {:?}",
            w.fabric, w.devices, w.routes
        );
    }
}

/// Route MTU on `src` towards `dst_ip` (longest prefix among the plan's routes).
fn route_mtu(want: &Want, dst_ip: &str) -> Option<(String, u32)> {
    let ip: Ipv4Addr = dst_ip.parse().ok()?;
    want.routes
        .iter()
        .filter_map(|(d, m)| {
            let net: ipnet::Ipv4Net = d.parse().ok()?;
            net.contains(&ip).then(|| (net.prefix_len(), d.clone(), *m))
        })
        .max_by_key(|(len, _, _)| *len)
        .map(|(_, d, m)| (d, m))
}

fn reach_all(lab: &Lab) {
    for s in &NODES {
        for d in &NODES {
            if s.name == d.name {
                continue;
            }
            let (code, out) = ping_ok(&lab.pods[s.name], None, &d.pod.ip(), 56);
            assert_eq!(
                code,
                Some(0),
                "pod {} -> pod {} ({}): {out}",
                s.name,
                d.name,
                d.pod.ip(),
            );
        }
    }
    println!("  reachability: every pod reaches every other pod (12 ordered pairs, ping -s 56)");
}

const ERR_TEXT: [&str; 3] = ["frag needed", "fragmentation needed", "message too long"];

/// DF pings at the route MTU: `R − 28` passes, `R − 27` fails with the error text.
fn df_checks(lab: &Lab, wants: &BTreeMap<String, Want>, pairs: &[(&str, &str)]) -> usize {
    let mut done = 0;
    for (s, d) in pairs {
        let (src, dst) = (node_def(s), node_def(d));
        let (dest, route) =
            route_mtu(&wants[*s], &dst.pod.ip()).expect("a route to the destination pod");
        let (_, back) = route_mtu(&wants[*d], &src.pod.ip()).expect("a route back");
        // What a DF ping can show: the route MTU on `src`, unless the source pod's own MTU
        // (the fabric), the destination's pod side or the way back is lower; then that is the
        // limit (and the pod's own kernel, or a later hop, answers).
        let limits = [
            (route, "route MTU on the source node"),
            (wants[*s].fabric, "source pod MTU (fabric)"),
            (wants[*d].fabric, "destination fabric"),
            (back, "route back"),
        ];
        let (r, bound) = limits
            .iter()
            .copied()
            .min_by_key(|(m, _)| *m)
            .expect("limits");
        let pod = &lab.pods[*s];
        // Forget path MTUs learned by earlier pings (caps changed since).
        pod.sh("ip route flush cache");
        let (code, out) = ping(pod, &dst.pod.ip(), r - 28);
        println!(
            "  {s}->{d} via {dest} (route MTU {route}; limit {r} = {bound}): ping -M do -s {} -> exit {code:?}",
            r - 28
        );
        assert_eq!(
            code,
            Some(0),
            "{s}->{d}: payload {} must pass:\n{out}",
            r - 28
        );
        let (code, out) = ping(pod, &dst.pod.ip(), r - 27);
        let lower = out.to_lowercase();
        let text = ERR_TEXT.iter().find(|t| lower.contains(*t));
        println!(
            "  {s}->{d}: ping -M do -s {} -> exit {code:?}: {}",
            r - 27,
            first_line_with(&out, &ERR_TEXT)
        );
        assert!(
            code.is_some_and(|c| c != 0),
            "{s}->{d}: payload {} must fail:\n{out}",
            r - 27
        );
        assert!(
            text.is_some(),
            "{s}->{d}: payload {} failed silently:\n{out}",
            r - 27
        );
        done += 2;
    }
    done
}

/// Pairs whose DF limit is set by the source node's route: the same-Site mesh pair, and the
/// Site A <-> Site B pairs through the gateway.
const DF_PAIRS: [(&str, &str); 6] = [
    ("a1", "a2"),
    ("a2", "a1"),
    ("a1", "b1"),
    ("b1", "a1"),
    ("a2", "b1"),
    ("b1", "a2"),
];

#[test]
fn agents_converge_to_resolve_and_pods_ping_at_the_route_mtu() {
    require_root!("agents_converge_to_resolve_and_pods_ping_at_the_route_mtu");
    let (lab, wants) = start(Caps::default());
    println!("resolve -o json (and the kernel, read back with ip -j):");
    show(&wants);
    // Read back once more, explicitly, and show what the kernel holds.
    for d in &NODES {
        let s = Snapshot::read(&lab.nodes[d.name], &lab.pods[d.name]);
        assert!(
            s.diff(&wants[d.name]).is_empty(),
            "{}: {:?}",
            d.name,
            s.diff(&wants[d.name])
        );
        let ports: Vec<String> = s
            .ports("cni0")
            .iter()
            .map(|(n, l)| format!("{n}={}", l.mtu))
            .collect();
        println!(
            "  kernel {}: vxlan0 {} cni0 {} ports [{}] pod eth0 {:?} table 100 {:?}",
            d.name,
            s.links["vxlan0"].mtu,
            s.links["cni0"].mtu,
            ports.join(","),
            s.pod,
            s.route_mtus()
        );
        assert!(s.violations(&wants[d.name].direct).is_empty());
    }
    // The smaller underlay reaches Site A's routes through the gateway's published value.
    assert_eq!(
        wants["a1"].routes["10.102.0.0/16"], 1350,
        "{:?}",
        wants["a1"].routes
    );
    assert_eq!(wants["b1"].fabric, 1350);
    reach_all(&lab);
    let n = df_checks(&lab, &wants, &DF_PAIRS);
    println!("  {n} DF pings as expected");
}

/// How a transition is watched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Watch {
    /// `ip -j` every ~20 ms per node (pod, links, table 100, links, pod).
    Ip,
    /// Netlink reads every ~2 ms per node (the same checks, finer grained).
    Netlink,
}

/// Rewrites the manifests for `to` while sampling every node; returns the new wants.
fn transition(
    lab: &Lab,
    from: &BTreeMap<String, Want>,
    to: Caps,
    label: &str,
    watch: Watch,
) -> BTreeMap<String, Want> {
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let direct: BTreeMap<&str, BTreeSet<String>> = NODES
        .iter()
        .map(|d| (d.name, from[d.name].direct.clone()))
        .collect();
    let (wants, stats) = std::thread::scope(|sc| {
        let handles: Vec<_> = NODES
            .iter()
            .map(|d| {
                let (node, pod, direct, stop) = (
                    &lab.nodes[d.name],
                    &lab.pods[d.name],
                    &direct[d.name],
                    stop.clone(),
                );
                let h = match watch {
                    Watch::Ip => sc.spawn(move || sample_until(node, pod, direct, &stop)),
                    Watch::Netlink => {
                        let (node, pod, direct) = (node.path(), pod.path(), direct.clone());
                        sc.spawn(move || netlink_sample_until(node, pod, direct, stop))
                    }
                };
                (d.name, h)
            })
            .collect();
        std::thread::sleep(Duration::from_millis(200));
        let (wants, published) = lab.write_manifests(to);
        let took = lab.wait_converged(&wants);
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::SeqCst);
        println!(
            "{label}: manifests rewritten ({to:?}, g1 publishes {published:?}); all converged in {took:?}"
        );
        let stats: Vec<_> = handles
            .into_iter()
            .map(|(n, h)| (n, h.join().expect("sampler")))
            .collect();
        (wants, stats)
    });
    show(&wants);
    assert!(
        NODES.iter().any(|d| from[d.name] != wants[d.name]),
        "{label}: nothing changed"
    );
    let mut total = 0;
    for (n, st) in &stats {
        let how = match watch {
            Watch::Ip => "ip -j: pod, -d link, route show table 100, -d link, pod",
            Watch::Netlink => "netlink: links, table 100, pod; 3 reads per sample",
        };
        println!(
            "  sampled {n}: {} samples (one every {:.1} ms; {how}), {} distinct states, {} violations",
            st.samples,
            st.mean_period_ms,
            st.distinct.len(),
            st.violations.len()
        );
        assert!(
            st.violations.is_empty(),
            "{label}: write order broken on {n}: {:#?}",
            st.violations
        );
        total += st.samples;
    }
    // Under qemu's TCG (the VM lab) every read of the kernel is about ten times slower.
    let enough = if std::env::var_os("UMTU_VM_LAB").is_some() {
        15
    } else {
        100
    };
    assert!(total > enough, "{label}: too few samples ({total})");
    wants
}

#[test]
fn lowering_and_raising_a_cap_reconverges_in_write_order() {
    require_root!("lowering_and_raising_a_cap_reconverges_in_write_order");
    let (lab, base) = start(Caps::default());
    show(&base);
    for watch in [Watch::Ip, Watch::Netlink] {
        println!("== watched with {watch:?} ==");
        let low = transition(
            &lab,
            &base,
            lowered_site_a(),
            "lower Site A tunnelMTU to 1300",
            watch,
        );
        // Site A's links (mesh a1-a2, uplinks to g1) drop to 1300: devices, routes, pods follow.
        assert_eq!(low["a1"].devices["vxlan0"], 1300);
        assert_eq!(low["a1"].fabric, 1300);
        df_checks(&lab, &low, &DF_PAIRS);
        let up = transition(
            &lab,
            &low,
            Caps::default(),
            "raise Site A again (cap removed)",
            watch,
        );
        assert_eq!(up, base, "raising again restores the first state");
        df_checks(&lab, &up, &DF_PAIRS);
        let low = transition(
            &lab,
            &up,
            lowered_assignment(),
            "lower the assignment spokes to 1280",
            watch,
        );
        // The uplinks and deliveries drop to 1280: g1's device goes down, workers' pods follow.
        assert_eq!(low["g1"].devices["vxlan0"], 1280);
        assert_eq!(low["a1"].fabric, 1280);
        df_checks(&lab, &low, &DF_PAIRS);
        let up = transition(
            &lab,
            &low,
            Caps::default(),
            "raise the assignment again (cap removed)",
            watch,
        );
        assert_eq!(up, base);
        df_checks(&lab, &up, &DF_PAIRS);
    }
    reach_all(&lab);
}

/// What the kill trigger compares: cni0, vxlan0, the bridge ports and the route MTUs.
type Key = (
    Option<u32>,
    Option<u32>,
    BTreeMap<String, u32>,
    BTreeMap<String, u32>,
);

fn key_of(st: &dataplane_linux::KernelState) -> Key {
    (
        st.link("cni0").map(|l| l.mtu),
        st.link("vxlan0").map(|l| l.mtu),
        st.links
            .iter()
            .filter(|l| l.master.as_deref() == Some("cni0"))
            .map(|l| (l.name.clone(), l.mtu))
            .collect(),
        st.routes
            .iter()
            .filter_map(|r| r.mtu.map(|m| (r.destination.to_string(), m)))
            .collect(),
    )
}

fn scope() -> dataplane_linux::ReadScope {
    dataplane_linux::ReadScope {
        table: 100,
        ..Default::default()
    }
}

/// The node's key, read through netlink inside its namespace.
fn netlink_key(lab: &Lab, name: &str) -> Key {
    dataplane_linux::netlink::in_netns(&lab.nodes[name].path(), || {
        use dataplane_linux::Kernel;
        let mut k = dataplane_linux::NetlinkKernel::new().expect("netlink");
        key_of(&k.read(&scope()).expect("read"))
    })
    .expect("netns")
}

/// Reads the node's kernel through netlink (a tight loop, well under a millisecond per read)
/// until it differs from `baseline` (a write has landed), then SIGKILLs its agent at once.
/// Returns how long the wait took.
fn kill_on_first_write(lab: &mut Lab, name: &'static str, baseline: Key) -> Duration {
    let mut agent = lab.agents.remove(name).expect("running agent");
    let path = lab.nodes[name].path();
    let (agent, waited) = dataplane_linux::netlink::in_netns(&path, move || {
        use dataplane_linux::Kernel;
        let mut k = dataplane_linux::NetlinkKernel::new().expect("netlink");
        let start = Instant::now();
        loop {
            let st = k.read(&scope()).expect("read");
            if key_of(&st) != baseline || start.elapsed() > Duration::from_secs(15) {
                agent.stop();
                return (agent, start.elapsed());
            }
        }
    })
    .expect("netns");
    drop(agent);
    waited
}

#[test]
fn kernel_state_changed_by_someone_else_is_repaired_within_two_seconds() {
    require_root!("kernel_state_changed_by_someone_else_is_repaired_within_two_seconds");
    let (lab, wants) = start(Caps::default());
    let (node, pod, want) = (&lab.nodes["a1"], &lab.pods["a1"], &wants["a1"]);
    // A route someone else keeps in the adapter's table: never swept.
    node.sh("ip route add 192.0.2.0/24 dev eth0 table 100 proto static");
    let rules = || node.sh("ip rule show table 100");
    let neighbours = || node.sh("ip neigh show dev vxlan0 nud permanent");
    let (rules_before, neighbours_before) = (rules(), neighbours());
    assert!(
        !rules_before.trim().is_empty(),
        "the agent's rule:\n{}",
        node.sh("ip rule")
    );
    let victim = want
        .routes
        .keys()
        .next()
        .expect("a route with an MTU")
        .clone();
    let cases = [
        (
            "an owned route deleted",
            format!("ip route del {victim} table 100"),
        ),
        (
            "vxlan0's MTU lowered",
            "ip link set vxlan0 mtu 1200".to_string(),
        ),
        (
            "the policy rule removed",
            format!(
                "ip rule del {}",
                rules_before
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .split_once(':')
                    .map(|(_, r)| r.trim())
                    .unwrap_or_default()
            ),
        ),
        (
            "vxlan0's neighbours flushed",
            "ip neigh flush dev vxlan0 nud permanent".to_string(),
        ),
    ];
    for (what, cmd) in cases {
        node.sh(&cmd);
        let start = Instant::now();
        loop {
            let snap = Snapshot::read(node, pod);
            if snap.diff(want).is_empty()
                && rules() == rules_before
                && neighbours() == neighbours_before
            {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(2),
                "{what} ({cmd}): not repaired within 2 s: {:?}; rules {}; neighbours {}\n{}",
                snap.diff(want),
                rules(),
                neighbours(),
                tail(&lab.agent_log("a1"), 10)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        println!("  {what}: repaired in {:?}", start.elapsed());
        assert!(
            node.sh("ip route show table 100 192.0.2.0/24")
                .contains("192.0.2.0/24"),
            "{what}: the foreign route in the same table is gone"
        );
    }
    let log = lab.agent_log("a1");
    assert!(
        log.contains("repaired kernel state changed by someone else"),
        "{}",
        tail(&log, 20)
    );
}

/// The first `reconciled` log line of node `name`'s agent after byte `from` of its log.
fn first_reconcile_after(lab: &Lab, name: &str, from: usize) -> String {
    let start = Instant::now();
    loop {
        let log = lab.agent_log(name);
        let since = log.get(from..).unwrap_or_default();
        if let Some(l) = since.lines().find(|l| l.contains(" reconciled ")) {
            return l.to_string();
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{name} did not reconcile after its restart:\n{since}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_restart_over_converged_kernel_state_writes_nothing() {
    require_root!("a_restart_over_converged_kernel_state_writes_nothing");
    let (mut lab, wants) = start(Caps::default());
    // A worker and the gateway (its tunnel devices, its pool routes), each SIGKILLed over the
    // state it converged to and started again on the same manifests.
    for name in ["a1", "g1"] {
        let before = Snapshot::read(&lab.nodes[name], &lab.pods[name]);
        let from = lab.agent_log(name).len();
        lab.kill_agent(name);
        lab.spawn_agent(name);
        let line = first_reconcile_after(&lab, name, from);
        println!("  {name} restarted: {line}");
        assert!(
            line.contains(" writes=0 "),
            "{name}'s first reconcile over converged state wrote to the kernel: {line}"
        );
        let after = Snapshot::read(&lab.nodes[name], &lab.pods[name]);
        assert!(
            after == before,
            "{name}'s kernel changed: {:?}",
            after.diff(&wants[name])
        );
    }
    lab.wait_converged(&wants);
}

#[test]
fn killed_agents_converge_to_the_same_state() {
    require_root!("killed_agents_converge_to_the_same_state");
    let (mut lab, base) = start(Caps::default());
    let low = lab.write_manifests(lowered_site_a()).0;
    lab.wait_converged(&low);
    let mut wants = low;
    let direct = base["a1"].direct.clone();
    assert_eq!(direct, wants["a1"].direct);

    // 1. SIGKILL shortly after start, at increasing delays; each time the manifests move a1
    //    away from what its kernel holds (lowered <-> base), so the new process has work.
    lab.kill_agent("a1");
    let low_a1 = wants["a1"].clone();
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    let delays = [0u64, 2, 4, 5, 6, 7, 8, 9, 10, 12, 15, 20, 30, 50, 100];
    for delay in delays {
        let held = Snapshot::read(&lab.nodes["a1"], &lab.pods["a1"]);
        let caps = if held.diff(&low_a1).is_empty() {
            Caps::default()
        } else {
            lowered_site_a()
        };
        wants = lab.write_manifests(caps).0;
        let before = held.diff(&wants["a1"]).len();
        lab.spawn_agent("a1");
        std::thread::sleep(Duration::from_millis(delay));
        lab.kill_agent("a1");
        let snap = Snapshot::read(&lab.nodes["a1"], &lab.pods["a1"]);
        let after = snap.diff(&wants["a1"]).len();
        let v = snap.violations(&direct);
        let what = if after == 0 {
            "the pass had finished"
        } else if snap != held {
            "killed mid-apply"
        } else {
            "killed before its first write"
        };
        *tally.entry(what).or_default() += 1;
        println!(
            "  start, SIGKILL after {delay} ms, towards {caps:?}: {before} -> {after} differing items ({what}); inequalities {}",
            if v.is_empty() { "hold" } else { "BROKEN" }
        );
        assert!(v.is_empty(), "after a kill at {delay} ms: {v:?}");
    }
    // The same, killed on its first visible write after start.
    for round in 0..3 {
        let held = Snapshot::read(&lab.nodes["a1"], &lab.pods["a1"]);
        let caps = if held.diff(&low_a1).is_empty() {
            Caps::default()
        } else {
            lowered_site_a()
        };
        wants = lab.write_manifests(caps).0;
        let baseline = netlink_key(&lab, "a1");
        lab.spawn_agent("a1");
        let waited = kill_on_first_write(&mut lab, "a1", baseline);
        let snap = Snapshot::read(&lab.nodes["a1"], &lab.pods["a1"]);
        let left = snap.diff(&wants["a1"]).len();
        let v = snap.violations(&direct);
        let what = if left == 0 {
            "the pass had finished"
        } else {
            "killed mid-apply"
        };
        *tally.entry(what).or_default() += 1;
        println!(
            "  start {round}, SIGKILL on the first visible write ({waited:?} after start), towards {caps:?}: {left} items still differ ({what}); inequalities {}",
            if v.is_empty() { "hold" } else { "BROKEN" }
        );
        assert!(v.is_empty(), "start round {round}: {v:?}");
    }
    lab.spawn_agent("a1");
    let took = lab.wait_nodes(&wants, &["a1"]);
    lab.wait_converged(&wants);
    println!(
        "  restarted a1: converged in {took:?} (polled every 100 ms); kills after start: {tally:?}"
    );

    // 2. SIGKILL right after the first write that follows a manifest change: the worker a1 and
    //    the gateway g1 in turn (g1's device goes down and up with Site A's cap).
    let mut caught = 0;
    let mut lowered = wants["a1"] != base["a1"];
    let rounds = 6;
    for round in 0..rounds {
        let node: &'static str = if round % 2 == 0 { "a1" } else { "g1" };
        lowered = !lowered;
        let caps = if lowered {
            lowered_site_a()
        } else {
            Caps::default()
        };
        let baseline = netlink_key(&lab, node);
        wants = lab.write_manifests(caps).0;
        let waited = kill_on_first_write(&mut lab, node, baseline);
        let snap = Snapshot::read(&lab.nodes[node], &lab.pods[node]);
        let left = snap.diff(&wants[node]);
        let v = snap.violations(&base[node].direct);
        if !left.is_empty() {
            caught += 1;
        }
        println!(
            "  round {round}: manifests -> {caps:?}; agent {node} killed {waited:?} later, on its first visible write; {} items still differ ({}); inequalities {}",
            left.len(),
            if left.is_empty() {
                "the pass had finished"
            } else {
                "mid-apply"
            },
            if v.is_empty() { "hold" } else { "BROKEN" }
        );
        assert!(v.is_empty(), "round {round} ({node}): {v:?}");
        lab.spawn_agent(node);
        let took = lab.wait_nodes(&wants, &[node]);
        lab.wait_converged(&wants);
        println!("  round {round}: restarted {node} converged in {took:?} (polled every 100 ms)");
    }
    println!("  {caught} of {rounds} change-time kills landed mid-apply");
    // Every agent's final state is what resolve computes; packets still flow.
    let check = lab.wait_converged(&wants);
    println!("  final state equals resolve (checked in {check:?})");
    reach_all(&lab);
    df_checks(&lab, &wants, &DF_PAIRS);
}

#[test]
fn encap_destination_does_not_shadow_the_route_destination() {
    let raw = r#"[{"dst":"10.101.2.0/24","encap":"ip","id":1,"src":"0.0.0.0","dst":"10.1.0.2","dev":"vxlan0","metrics":[{"mtu":1450}]}]"#;
    let v: serde_json::Value = serde_json::from_str(&kernel::fix_encap_dst(raw)).unwrap();
    assert_eq!(v[0]["dst"], "10.101.2.0/24");
    assert_eq!(v[0]["encap_dst"], "10.1.0.2");
}

#[test]
fn host_route_destinations_compare_with_their_length() {
    assert_eq!(kernel::with_prefix_len("10.20.0.4"), "10.20.0.4/32");
    assert_eq!(kernel::with_prefix_len("fd00::4"), "fd00::4/128");
    assert_eq!(kernel::with_prefix_len("10.120.4.0/24"), "10.120.4.0/24");
    assert_eq!(kernel::with_prefix_len("default"), "default");
}
