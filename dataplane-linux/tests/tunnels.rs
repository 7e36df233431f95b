//! Every tunnel kind on the wire, on a kernel that has every driver (the VM lab, `.ci/vm-lab`;
//! feature `vm-lab`): two nodes joined by an underlay veth pair, a pod behind each, connected only
//! by the adapter's routes over VXLAN, GENEVE and IPIP devices (flow-based, as the adapter creates
//! them) and WireGuard devices (configured here with real keys and peers, since the adapter only
//! sets their MTU and routes), over IPv4 and IPv6 outer headers.
//!
//! - A DF ping at exactly the planned route MTU (underlay − the overhead table's value) crosses;
//!   one byte more is refused.
//! - The overhead table checked on the wire: the largest route MTU that still carries a DF packet
//!   of that size, with the devices set as the adapter sets them for it, gives the real overhead
//!   (`underlay − that`), which the table must never be below.
//!
//! Outer fragments are dropped at the receiving node's underlay (a `tc` filter), so a packet
//! "crosses" only when its encapsulation fits the underlay whole.
#![cfg(feature = "vm-lab")]

mod common;

use common::{InNs, Ns, route};
use dataplane_linux::{
    DesiredState, Fabric, HopProtocol, NextHop, PodSpec, Settings, TunnelDevice, TunnelKind,
    WireguardMtu,
};
use std::net::IpAddr;
use test_utils::netns::{Need, can_run};
use topology_core::vocab::Protocol;

/// A tunnel kind as the tests set it up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Vxlan,
    Geneve,
    Ipip,
    WireGuard,
}

const KINDS: [Kind; 4] = [Kind::WireGuard, Kind::Geneve, Kind::Vxlan, Kind::Ipip];

impl Kind {
    fn protocol(self) -> Protocol {
        match self {
            Kind::Vxlan => Protocol::Vxlan,
            Kind::Geneve => Protocol::Geneve,
            Kind::Ipip => Protocol::Ipip,
            Kind::WireGuard => Protocol::WireGuard,
        }
    }

    /// The device the routes leave through over `outer`, and its kind (none for WireGuard):
    /// IPIP over IPv6 is an `ip6tnl` device, as the agent plans it.
    fn device(self, outer: Outer) -> (&'static str, Option<TunnelKind>) {
        match (self, outer) {
            (Kind::Vxlan, _) => ("vxlan0", Some(TunnelKind::Vxlan)),
            (Kind::Geneve, _) => ("geneve0", Some(TunnelKind::Geneve)),
            (Kind::Ipip, Outer::V4) => ("ipip0", Some(TunnelKind::Ipip)),
            (Kind::Ipip, Outer::V6) => ("ip6ip0", Some(TunnelKind::Ip6Ip)),
            (Kind::WireGuard, _) => ("wg0", None),
        }
    }

    /// The `ip link` type whose driver the test needs.
    fn link_type(self) -> &'static str {
        match self {
            Kind::Vxlan => "vxlan",
            Kind::Geneve => "geneve",
            Kind::Ipip => "ipip",
            Kind::WireGuard => "wireguard",
        }
    }
}

/// The outer address family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outer {
    V4,
    V6,
}

const OUTERS: [Outer; 2] = [Outer::V4, Outer::V6];

impl Outer {
    fn name(self) -> &'static str {
        match self {
            Outer::V4 => "IPv4",
            Outer::V6 => "IPv6",
        }
    }

    /// Node `i`'s underlay address.
    fn addr(self, i: usize) -> String {
        match self {
            Outer::V4 => format!("192.168.0.{}", i + 1),
            Outer::V6 => format!("fd00:10::{}", i + 1),
        }
    }

    fn prefix(self) -> u8 {
        match self {
            Outer::V4 => 24,
            Outer::V6 => 64,
        }
    }
}

/// The overhead table's value.
fn table(kind: Kind, outer: Outer) -> u32 {
    mtu_solver::overhead::overhead(kind.protocol(), outer == Outer::V6)
}

fn can(test: &str, kind: Kind) -> bool {
    can_run(
        test,
        &[
            Need::LinkType(kind.link_type()),
            Need::Tool("ping"),
            Need::Tool("tc"),
            Need::Tool("wg"),
        ],
    )
}

/// Two nodes, a pod behind each (IPv4 pods 10.{1,2}.0.2 behind bridges at 10.{1,2}.0.1).
struct Pair {
    kind: Kind,
    outer: Outer,
    nodes: [Ns; 2],
    pods: [Ns; 2],
    /// The router between the nodes, when the underlay has a narrow hop.
    _router: Option<Ns>,
    /// The nodes' underlay addresses.
    addrs: [String; 2],
}

/// How the nodes are joined.
#[derive(Clone, Copy)]
enum Underlay {
    /// One link of this MTU, outer fragments dropped at the receiving end: a packet crosses
    /// only whole.
    Direct(u32),
    /// Node 0's link to a router at the first MTU, the router's link to node 1 at the second
    /// (IPv4 only); the router forwards (and fragments where the outer header lets it).
    Routed(u32, u32),
}

impl Pair {
    /// The nodes joined by the underlay, the WireGuard devices configured (for that kind), the
    /// pods added; nothing of the adapter yet.
    fn new(kind: Kind, outer: Outer, underlay: Underlay) -> Pair {
        let nodes = [Ns::new("n0"), Ns::new("n1")];
        let pods = [Ns::new("p0"), Ns::new("p1")];
        let (router, addrs) = match underlay {
            Underlay::Direct(mtu) => {
                nodes[0].sh(&format!(
                    "ip link add u0 mtu {mtu} type veth peer name u1 mtu {mtu} netns {}",
                    nodes[1].name
                ));
                (None, [outer.addr(0), outer.addr(1)])
            }
            Underlay::Routed(near, far) => {
                assert_eq!(outer, Outer::V4, "the routed underlay is IPv4");
                let r = Ns::new("r");
                nodes[0].sh(&format!(
                    "ip link add u0 mtu {near} type veth peer name r0 mtu {near} netns {}",
                    r.name
                ));
                nodes[1].sh(&format!(
                    "ip link add u1 mtu {far} type veth peer name r1 mtu {far} netns {}",
                    r.name
                ));
                r.sh("sysctl -qw net.ipv4.ip_forward=1 && \
                     ip addr add 192.168.0.254/24 dev r0 && ip link set r0 up && \
                     ip addr add 192.168.1.254/24 dev r1 && ip link set r1 up");
                (
                    Some(r),
                    ["192.168.0.1".to_string(), "192.168.1.1".to_string()],
                )
            }
        };
        for (i, n) in nodes.iter().enumerate() {
            let nodad = if outer == Outer::V6 { " nodad" } else { "" };
            n.sh(&format!(
                "sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
                 net.ipv4.conf.default.rp_filter=0 net.ipv6.conf.all.forwarding=1 && \
                 ip addr add {}/{} dev u{i}{nodad} && ip link set u{i} up",
                addrs[i],
                outer.prefix()
            ));
            if router.is_some() {
                n.sh(&format!("ip route add default via 192.168.{i}.254"));
            }
            n.sh(&format!(
                "ip link add veth-p{i} mtu 1500 type veth peer name eth0 mtu 1500 netns {} && \
                 ip link set veth-p{i} up",
                pods[i].name
            ));
            pods[i].sh("ip link set eth0 up");
        }
        if matches!(underlay, Underlay::Direct(_)) {
            for (i, n) in nodes.iter().enumerate() {
                n.sh(&format!(
                    "tc qdisc add dev u{i} ingress && \
                     tc filter add dev u{i} parent ffff: protocol ip u32 match u16 0x2000 0x2000 at 6 action drop && \
                     tc filter add dev u{i} parent ffff: protocol ipv6 u32 match u8 44 0xff at 6 action drop"
                ));
            }
        }
        let pair = Pair {
            kind,
            outer,
            nodes,
            pods,
            _router: router,
            addrs,
        };
        if kind == Kind::WireGuard {
            pair.wireguard();
        }
        pair
    }

    /// WireGuard devices `wg0` with fresh keys, each the other's peer at its underlay address,
    /// carrying the other's pods.
    fn wireguard(&self) {
        let dir = std::env::temp_dir().join(format!("umtu-wg-{}", self.nodes[0].name));
        std::fs::create_dir_all(&dir).expect("key directory");
        let keys: Vec<(String, String)> = (0..2)
            .map(|i| {
                let private = dir.join(format!("key{i}"));
                let public = self.nodes[i].sh(&format!(
                    "umask 077 && wg genkey | tee {} | wg pubkey",
                    private.display()
                ));
                (private.display().to_string(), public.trim().to_string())
            })
            .collect();
        for i in 0..2 {
            let peer = 1 - i;
            let endpoint = match self.outer {
                Outer::V4 => format!("{}:51820", self.addrs[peer]),
                Outer::V6 => format!("[{}]:51820", self.addrs[peer]),
            };
            self.nodes[i].sh(&format!(
                "ip link add wg0 type wireguard && \
                 wg set wg0 private-key {} listen-port 51820 peer {} endpoint {endpoint} \
                 allowed-ips 10.{}.0.0/24 && ip link set wg0 up",
                keys[i].0,
                keys[peer].1,
                peer + 1
            ));
        }
    }

    /// Node `i`'s desired state: its pod behind `cni0` at `fabric`, the other pod's /24 at
    /// `route_mtu` over the kind's device at `device_mtu`.
    fn desired(&self, i: usize, route_mtu: u32, device_mtu: u32, fabric: u32) -> DesiredState {
        let peer = 1 - i;
        let me: IpAddr = self.addrs[i].parse().expect("address");
        let them: IpAddr = self.addrs[peer].parse().expect("address");
        let (device, tunnel) = self.kind.device(self.outer);
        let hop = NextHop {
            device: device.into(),
            protocol: tunnel.map_or(HopProtocol::WireGuard, HopProtocol::Tunnel),
            peer_underlay: them,
            peer_identity: them,
            pod_gateway: format!("10.{}.0.1", peer + 1).parse().expect("gateway"),
        };
        let (devices, wireguard_mtus) = match tunnel {
            None => (
                vec![],
                vec![WireguardMtu {
                    name: device.into(),
                    mtu: device_mtu,
                }],
            ),
            Some(kind) => (
                vec![TunnelDevice {
                    name: device.into(),
                    kind,
                    mtu: device_mtu,
                }],
                vec![],
            ),
        };
        DesiredState {
            identity_addr: me,
            devices,
            wireguard_mtus,
            routes: vec![route(
                &format!("10.{}.0.0/24", peer + 1),
                route_mtu,
                vec![hop],
            )],
            fabric: Some(Fabric {
                bridge: "cni0".into(),
                mtu: fabric,
                cni_config: None,
                pods: vec![PodSpec {
                    netns: self.pods[i].path(),
                    ifname: "eth0".into(),
                    host_veth: Some(format!("veth-p{i}")),
                }],
            }),
        }
    }

    /// Applies both nodes' desired states through the adapter; the first time, also what the CNI
    /// plugin would do (addresses of the bridges and pods, the pods' default routes).
    fn apply(&self, route_mtu: u32, device_mtu: u32, fabric: u32) {
        for i in 0..2 {
            let d = self.desired(i, route_mtu, device_mtu, fabric);
            let what = format!("{:?}/{} node {i}", self.kind, self.outer.name());
            self.nodes[i].dp(Settings::default(), move |dp| {
                if let Err(e) = dp.reconcile(&d) {
                    panic!("{what}: {e}");
                }
            });
        }
        for i in 0..2 {
            let cni = self.nodes[i].try_sh(&format!("ip addr add 10.{}.0.1/24 dev cni0", i + 1));
            if cni.status.success() {
                self.pods[i].sh(&format!(
                    "ip addr add 10.{}.0.2/24 dev eth0 && ip route add default via 10.{}.0.1",
                    i + 1,
                    i + 1
                ));
            }
        }
    }

    /// A DF ping of an IP packet of `size` bytes from pod 0 to pod 1: whether it was answered,
    /// and what ping said.
    fn ping(&self, size: u32) -> (bool, String) {
        self.ping_within(size, "1")
    }

    /// [`Pair::ping`] waiting `wait` seconds for the answer (pods on one host answer within
    /// milliseconds once neighbours and handshakes are done).
    fn ping_within(&self, size: u32, wait: &str) -> (bool, String) {
        let o = self.pods[0].try_sh(&format!(
            "ping -M do -s {} -c 1 -W {wait} 10.2.0.2 2>&1",
            size - 28
        ));
        (
            o.status.success(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    }

    /// Whether the pods reach each other at all (the first packets also resolve neighbours and,
    /// for WireGuard, complete the handshake).
    fn reachable(&self) -> bool {
        (0..8).any(|_| self.ping(84).0)
    }

    fn describe(&self) -> String {
        let mut s = String::new();
        for n in &self.nodes {
            s.push_str(&n.sh(
                "ip -d link show; ip route show table 100; ip neigh show; wg show 2>/dev/null || true",
            ));
        }
        s
    }
}

/// Runs `check` for every kind (whose driver this kernel has) over both outer families, on two
/// threads (the VM lab has two processors; each combination waits mostly on packets), and
/// returns every failure it reported, in order.
fn every_combination(test: &str, check: impl Fn(Kind, Outer) -> Vec<String> + Sync) -> Vec<String> {
    let combos: Vec<(Kind, Outer)> = KINDS
        .into_iter()
        .filter(|k| can(&format!("{test} {k:?}"), *k))
        .flat_map(|k| OUTERS.map(|o| (k, o)))
        .collect();
    let (first, second) = combos.split_at(combos.len() / 2);
    let run = |part: &[(Kind, Outer)]| -> Vec<String> {
        part.iter().flat_map(|(k, o)| check(*k, *o)).collect()
    };
    std::thread::scope(|s| {
        let other = s.spawn(|| run(second));
        let mut failures = run(first);
        failures.extend(
            other
                .join()
                .unwrap_or_else(|_| vec![format!("{test}: a thread panicked")]),
        );
        failures
    })
}

/// A DF ping at exactly the planned route MTU crosses the tunnel; one byte more is refused,
/// for every kind over both outer families, on a 1500-byte underlay.
#[test]
fn every_tunnel_kind_carries_its_planned_mtu() {
    let failures = every_combination("every_tunnel_kind_carries_its_planned_mtu", planned_mtu);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn planned_mtu(kind: Kind, outer: Outer) -> Vec<String> {
    let mut failures = Vec::new();
    let underlay = 1500;
    let planned = underlay - table(kind, outer);
    let pair = Pair::new(kind, outer, Underlay::Direct(underlay));
    // Device, route and pods at the planned MTU, as the adapter's invariants want them (no pod
    // above its tunnel device).
    pair.apply(planned, planned, planned);
    let label = format!("{kind:?} over {}: planned {planned}", outer.name());
    if !pair.reachable() {
        failures.push(format!(
            "{label}: the pods do not reach each other\n{}",
            pair.describe()
        ));
        return failures;
    }
    let (ok, out) = pair.ping(planned);
    println!(
        "{label}: ping at {planned}: {}",
        if ok { "answered" } else { "lost" }
    );
    if !ok {
        failures.push(format!(
            "{label}: a DF ping at the planned MTU is lost:\n{out}"
        ));
    }
    let (ok, out) = pair.ping(planned + 1);
    let refused = out.to_lowercase();
    let says = refused.contains("frag needed")
        || refused.contains("fragmentation needed")
        || refused.contains("message too long");
    if ok || !says {
        failures.push(format!(
            "{label}: one byte more is not refused with an error:\n{out}"
        ));
    }
    failures
}

/// The largest route MTU `m` in `low..=high` for which, with both nodes set for it as the
/// adapter sets them (device and route at `m`), a DF packet of `m` bytes crosses.
fn largest_crossing(pair: &Pair, low: u32, high: u32) -> Option<u32> {
    let crosses = |m: u32| {
        pair.apply(m, m, m);
        // A lost probe is tried again: only a size that never crosses counts as too big.
        (0..2).any(|_| pair.ping_within(m, "0.4").0)
    };
    if !crosses(low) {
        return None;
    }
    let (mut ok, mut bad) = (low, high + 1);
    while bad - ok > 1 {
        let mid = ok + (bad - ok) / 2;
        if crosses(mid) {
            ok = mid;
        } else {
            bad = mid;
        }
    }
    Some(ok)
}

/// The overhead each kind really adds, measured on the wire over underlays of 1500 and 1400
/// bytes, against the table: never below it; above it by at most GENEVE's 8 bytes of option
/// room, or 20 for WireGuard over IPv4 (the IPv6 value, as wg-quick uses). Prints one line per
/// kind and outer family: `overhead <kind> <family> table=<N> measured=<M>`.
#[test]
fn the_overhead_table_is_never_below_the_wire() {
    let failures = every_combination("the_overhead_table_is_never_below_the_wire", overhead);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn overhead(kind: Kind, outer: Outer) -> Vec<String> {
    let mut failures = Vec::new();
    let t = table(kind, outer);
    let mut worst = 0;
    for underlay in [1500, 1400] {
        let pair = Pair::new(kind, outer, Underlay::Direct(underlay));
        pair.apply(underlay - t, underlay - t, underlay - t);
        if !pair.reachable() {
            failures.push(format!(
                "{kind:?} over {}: the pods do not reach each other\n{}",
                outer.name(),
                pair.describe()
            ));
            continue;
        }
        // The real overhead lies within 32 bytes below and 24 above the table's.
        match largest_crossing(&pair, underlay - t - 24, underlay - t + 32) {
            Some(m) => worst = worst.max(underlay - m),
            None => failures.push(format!(
                "{kind:?} over {} on {underlay}: nothing crosses",
                outer.name()
            )),
        }
    }
    println!(
        "overhead {} {} table={t} measured={worst}",
        match kind {
            Kind::WireGuard => "WireGuard",
            Kind::Geneve => "GENEVE",
            Kind::Vxlan => "VXLAN",
            Kind::Ipip => "IPIP",
        },
        outer.name()
    );
    let allowed = match (kind, outer) {
        (Kind::Geneve, _) => 8,
        (Kind::WireGuard, Outer::V4) => 20,
        _ => 0,
    };
    if t < worst {
        failures.push(format!(
            "{kind:?} over {}: the table's {t} is below the {worst} bytes measured: a black hole",
            outer.name()
        ));
    } else if t - worst > allowed {
        failures.push(format!(
            "{kind:?} over {}: the table's {t} wastes {} bytes over the {worst} measured (at most {allowed})",
            outer.name(),
            t - worst
        ));
    }
    failures
}

/// A hop of the underlay narrower than the plan assumed (a router's 1400-byte link behind the
/// node's 1500-byte one), with each kind's outer Don't Fragment setting (`model::Encap::df`):
///
/// - VXLAN and GENEVE leave DF off: a packet at the planned size still arrives, the router
///   fragmenting its outer header. With DF they would lose it: they pass the path MTU they learn
///   only to a sender behind a bridge port, and the node forwards the pods' packets without the
///   path MTUs it learns. The narrow hop stays visible to a DF packet on the underlay itself,
///   which is how `probe` finds it.
/// - IPIP sets DF: the packet is dropped at the hop, never fragmented; the node learns the
///   hop's MTU from the router's "fragmentation needed", the IPIP device passes the tunnel's
///   path MTU to the pod, and the pod sends at that size.
#[test]
fn a_narrow_underlay_hop_behind_each_tunnel_kind() {
    let mut failures = Vec::new();
    for kind in [Kind::Vxlan, Kind::Geneve, Kind::Ipip] {
        let test = format!("a_narrow_underlay_hop_behind_each_tunnel_kind {kind:?}");
        if !can(&test, kind) {
            continue;
        }
        let planned = 1500 - table(kind, Outer::V4);
        let pair = Pair::new(kind, Outer::V4, Underlay::Routed(1500, 1400));
        pair.apply(planned, planned, planned);
        if !pair.reachable() {
            failures.push(format!(
                "{kind:?}: the pods do not reach each other\n{}",
                pair.describe()
            ));
            continue;
        }
        // ICMP errors are rate limited: a few tries may pass before one is answered.
        let tries: Vec<(bool, String)> = (0..6).map(|_| pair.ping(planned)).collect();
        let underlay = pair.nodes[0].try_sh("ping -M do -s 1472 -c 2 -W 1 192.168.1.1 2>&1");
        if underlay.status.success() {
            failures.push(format!(
                "{kind:?}: a 1500-byte DF packet crossed the 1400-byte hop on the underlay"
            ));
        }
        let outs = tries
            .iter()
            .map(|t| t.1.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        if kind == Kind::Ipip {
            let real = 1400 - table(kind, Outer::V4);
            if tries.iter().any(|t| t.0) {
                failures.push(format!("{kind:?}: a {planned}-byte packet crossed the 1400-byte hop: its outer header was fragmented\n{outs}"));
            }
            let node = pair.nodes[0].sh("ip route get 192.168.1.1");
            if !node.contains("mtu 1400") {
                failures.push(format!(
                    "{kind:?}: the node did not learn the 1400-byte hop: {node}"
                ));
            }
            let told = |t: &(bool, String)| {
                t.1.contains(&format!("mtu = {real}")) || t.1.contains(&format!("mtu={real}"))
            };
            if !tries.iter().any(told) {
                failures.push(format!(
                    "{kind:?}: the pod was never told the tunnel's path MTU {real}:\n{outs}"
                ));
            }
            let (ok, out) = pair.ping(real);
            if !ok {
                failures.push(format!(
                    "{kind:?}: a packet at the tunnel's path MTU {real} is lost:\n{out}"
                ));
            }
        } else if !tries.iter().any(|t| t.0) {
            failures.push(format!("{kind:?}: a {planned}-byte packet is lost behind the 1400-byte hop: its outer header must be fragmentable\n{outs}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
