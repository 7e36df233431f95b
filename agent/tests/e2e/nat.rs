//! A gateway reaches a NAT'd remote worker's InternalIP, which the underlay cannot route,
//! through its `NodeAddress` host route over the tunnel (`forwarding.md` Destinations, rule 6).
//!
//! Topology (all `tunnelProtocol: VXLAN`: across public addresses `Auto` would be WireGuard):
//! - Site H (10.10.0.0/16, pods 10.110.0.0/16): gateway hg1 of the External pool PH (InternalIP
//!   10.10.0.1, ExternalIP 198.51.100.1) and worker hw1 (10.10.0.11);
//! - Site N (10.20.0.0/22, pods 10.120.0.0/16), not peered with H: worker n1 (InternalIP
//!   10.20.0.4, ExternalIP 203.0.113.4);
//! - assignments H x PH and N x PH, the latter with `tunnelMTU: 1380`.
//!
//! Namespaces: a router `rt` with a bridge for Site H's segment (10.10.0.0/16 and 198.51.100.0/24
//! on one wire, hg1 and hw1 plugged in) and a veth to n1 (203.0.113.0/24). n1 holds both of its
//! addresses. The router forwards only public addresses between the Sites: policy rules make
//! 10.20.0.0/22, and 10.10.0.0/16 from n1's side, unreachable. So hg1 reaches n1 at
//! 203.0.113.4 (the encapsulation destination) but never at 10.20.0.4 over the underlay.
//! hg1 is reached at 10.10.0.1 by hw1 and at 198.51.100.1 by n1: both must derive its one tunnel
//! MAC from its identity address, or n1's frames to hg1 would be dropped as addressed elsewhere.

use std::time::{Duration, Instant};

use crate::kernel::{link_mac, neighbour_mac, route_mtu, rx_packets, table_route};
use crate::lab::{
    self, CONVERGE, Lab, Ns, PodNet, first_line_with, ping_ok, ping_with, plan_link, plan_of,
    plan_route,
};

/// One node of the NAT lab.
struct NatNode {
    name: &'static str,
    site: &'static str,
    gateway: bool,
    internal: &'static str,
    external: Option<&'static str>,
    /// Prefix length of the InternalIP on the node's wire.
    internal_len: u8,
    /// Default gateway on the node's wire.
    default_via: &'static str,
    pod: PodNet,
}

const NODES: [NatNode; 3] = [
    NatNode {
        name: "hg1",
        site: "H",
        gateway: true,
        internal: "10.10.0.1",
        external: Some("198.51.100.1/24"),
        internal_len: 16,
        default_via: "198.51.100.254",
        pod: PodNet("10.110.1"),
    },
    NatNode {
        name: "hw1",
        site: "H",
        gateway: false,
        internal: "10.10.0.11",
        external: None,
        internal_len: 16,
        default_via: "10.10.255.254",
        pod: PodNet("10.110.11"),
    },
    NatNode {
        name: "n1",
        site: "N",
        gateway: false,
        internal: "10.20.0.4",
        external: Some("203.0.113.4/24"),
        internal_len: 22,
        default_via: "203.0.113.254",
        pod: PodNet("10.120.4"),
    },
];

const N1_INTERNAL: &str = "10.20.0.4";
const N1_EXTERNAL: &str = "203.0.113.4";
const LINK_CAP: u32 = 1380;

fn node(name: &str) -> &'static NatNode {
    NODES.iter().find(|n| n.name == name).expect("node")
}

fn manifests_yaml() -> String {
    let mut y = String::new();
    for (site, node_cidr, pod_block) in [
        ("H", "10.10.0.0/16", "10.110.0.0/16"),
        ("N", "10.20.0.0/22", "10.120.0.0/16"),
    ] {
        y += &format!(
            "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata:\n  name: {site}\nspec:\n  nodeCidrs: [{node_cidr}]\n  podCidrAssignments:\n    - cidrBlocks: [{pod_block}]\n  tunnelProtocol: VXLAN\n"
        );
    }
    y += "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: GatewayPool\nmetadata:\n  name: PH\nspec:\n  type: External\n  nodeSelector: {gw: ph}\n  tunnelProtocol: VXLAN\n";
    y += "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: SiteGatewayPoolAssignment\nmetadata:\n  name: h\nspec:\n  sites: [H]\n  gatewayPools: [PH]\n  tunnelProtocol: VXLAN\n";
    y += &format!(
        "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: SiteGatewayPoolAssignment\nmetadata:\n  name: n\nspec:\n  sites: [N]\n  gatewayPools: [PH]\n  tunnelProtocol: VXLAN\n  tunnelMTU: {LINK_CAP}\n"
    );
    for n in &NODES {
        let pool = if n.gateway { ", gw: ph" } else { "" };
        let external = n
            .external
            .map(|e| {
                format!(
                    "    - type: ExternalIP\n      address: {}\n",
                    e.split('/').next().unwrap_or(e)
                )
            })
            .unwrap_or_default();
        y += &format!(
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{net.unbounded-cloud.io/site: {site}{pool}}}\n  annotations:\n    mtu.unbounded-cloud.io/underlay-mtu: \"1500\"\nspec:\n  podCIDRs: [{pods}]\nstatus:\n  addresses:\n    - type: InternalIP\n      address: {internal}\n{external}",
            name = n.name,
            site = n.site,
            pods = n.pod.cidr(),
            internal = n.internal,
        );
    }
    y
}

/// The lab: the router, the three nodes, one pod per node; agents at an underlay of 1500.
fn nat_lab() -> Lab {
    let mut lab = Lab::new(
        "nat",
        "sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
         net.ipv4.conf.default.rp_filter=0 && \
         ip link add brh type bridge && ip link set brh up && \
         ip addr add 10.10.255.254/16 dev brh && ip addr add 198.51.100.254/24 dev brh",
    );
    for d in &NODES {
        // Site H's nodes share the bridge `brh`; n1 has a routed link of its own.
        let plug = |rt: &Ns, node: &Ns| {
            let port = format!("r-{}", d.name);
            let upstream = if d.site == "H" {
                format!("ip link set {port} master brh")
            } else {
                format!("ip addr add 203.0.113.254/24 dev {port}")
            };
            rt.sh(&format!(
                "ip link add {port} type veth peer name eth0 netns {ns} && \
                 {upstream} && ip link set {port} up",
                ns = node.name
            ));
        };
        let external = d
            .external
            .map(|e| format!("ip addr add {e} dev eth0 && "))
            .unwrap_or_default();
        let eth0 = format!(
            "ip addr add {internal}/{len} dev eth0 && {external}ip link set eth0 up && \
             ip route add default via {via} dev eth0",
            internal = d.internal,
            len = d.internal_len,
            via = d.default_via,
        );
        lab.add_node(d.name, d.pod, plug, &eth0, &["--underlay-mtu", "1500"]);
    }
    // Between the Sites only public addresses pass: n1's private subnet from anywhere, and
    // Site H's from n1's side, are refused (an ICMP unreachable from the router).
    lab.infra
        .sh("ip rule add priority 10 to 10.20.0.0/22 unreachable && \
         ip rule add priority 11 iif r-n1 to 10.10.0.0/16 unreachable");
    lab.replace_manifests(&manifests_yaml());
    lab
}

#[test]
fn gateway_reaches_a_natd_workers_internal_ip_through_its_node_address_route() {
    let name = "gateway_reaches_a_natd_workers_internal_ip_through_its_node_address_route";
    if !lab::can_run(name) {
        return;
    }
    let mut lab = nat_lab();
    let hg1 = &lab.nodes["hg1"];
    let gw_src = node("hg1").pod.gw();

    // The plan: a NodeAddress host route to n1's InternalIP, at the link MTU.
    let (wants, json) = lab::resolve(&lab.manifests);
    let plan = plan_of(&json, "hg1");
    let link_mtu = plan_link(plan, "n1")["mtu"]
        .as_u64()
        .expect("the MTU of hg1's link to n1");
    let host = format!("{N1_INTERNAL}/32");
    let route = plan_route(plan, &host);
    println!(
        "resolve: hg1 route {host} type {} kind {} via {} mtu {}; link hg1-n1 mtu {link_mtu}",
        route["type"], route["kind"], route["via"], route["mtu"]
    );
    assert_eq!(route["type"], "NodeAddress");
    assert_eq!(route["kind"], "direct");
    assert_eq!(route["via"], serde_json::json!(["n1"]));
    assert_eq!(
        route["mtu"].as_u64(),
        Some(link_mtu),
        "route MTU = link MTU"
    );
    assert_eq!(
        link_mtu,
        u64::from(LINK_CAP),
        "the assignment's tunnelMTU binds"
    );
    let mtu = LINK_CAP;

    // Without the agents' routes the underlay cannot route the InternalIP (only the external
    // address passes the router).
    let (code, out) = ping_ok(hg1, Some("198.51.100.1"), N1_EXTERNAL, 56);
    println!(
        "  before the agents: hg1 ping -I 198.51.100.1 {N1_EXTERNAL} (n1's ExternalIP) -> exit {code:?}"
    );
    assert_eq!(
        code,
        Some(0),
        "the underlay routes n1's external address:\n{out}"
    );
    let direct = hg1.try_sh(&format!("ping -c 1 -W 2 {N1_INTERNAL} 2>&1"));
    let text = String::from_utf8_lossy(&direct.stdout).into_owned();
    println!(
        "  before the agents: hg1 ping {N1_INTERNAL} -> exit {:?}: {}",
        direct.status.code(),
        first_line_with(&text, &["unreachable", "loss"])
    );
    assert_ne!(direct.status.code(), Some(0), "{text}");
    assert!(
        text.contains("Unreachable"),
        "the router refuses it:\n{text}"
    );
    let (code, out) = ping_with(hg1, Some(&gw_src), N1_INTERNAL, 56, 2);
    println!("  before the agents: hg1 ping -I {gw_src} {N1_INTERNAL} -> exit {code:?}");
    assert_ne!(code, Some(0), "{out}");

    for d in &NODES {
        lab.spawn_agent(d.name);
    }
    let took = lab.wait_converged(&wants);
    println!("three agents converged to resolve in {took:?}");
    let hg1 = &lab.nodes["hg1"];
    let n1 = &lab.nodes["n1"];
    let hw1 = &lab.nodes["hw1"];

    // The kernel: the host route in the agent's table, MTU metric = link MTU, encapsulated to
    // n1's ExternalIP via n1's pod gateway.
    println!(
        "  hg1 table 100:\n{}",
        hg1.ip(&["route", "show", "table", "100"])
    );
    let r = table_route(hg1, "-4", &host).expect("hg1 holds the NodeAddress route");
    assert_eq!(route_mtu(&r), Some(u64::from(mtu)), "{r}");
    assert_eq!(r["dev"], "vxlan0", "{r}");
    assert_eq!(r["encap_dst"], N1_EXTERNAL, "{r}");
    assert_eq!(r["gateway"], node("n1").pod.gw(), "{r}");
    let endpoint = table_route(hg1, "-4", &format!("{N1_EXTERNAL}/32"))
        .expect("an endpoint route to n1's ExternalIP");
    assert_eq!(endpoint["dev"], "eth0", "{endpoint}");
    assert!(endpoint.get("encap").is_none(), "{endpoint}");

    // One MAC per node, whichever address its peers reach it at.
    let hg1_mac = link_mac(hg1, "vxlan0");
    let n1_mac = link_mac(n1, "vxlan0");
    let at_n1 = neighbour_mac(n1, "vxlan0", &node("hg1").pod.gw());
    let at_hw1 = neighbour_mac(hw1, "vxlan0", &node("hg1").pod.gw());
    let at_hg1 = neighbour_mac(hg1, "vxlan0", &node("n1").pod.gw());
    println!(
        "  tunnel MACs: hg1 vxlan0 {hg1_mac} (held by n1 {at_n1}, by hw1 {at_hw1}); \
         n1 vxlan0 {n1_mac} (held by hg1 {at_hg1})"
    );
    assert_eq!(
        hg1_mac, "0a:58:0a:0a:00:01",
        "from hg1's identity 10.10.0.1"
    );
    assert_eq!(n1_mac, "0a:58:0a:14:00:04", "from n1's identity 10.20.0.4");
    assert_eq!(at_n1, hg1_mac, "n1 reaches hg1 at 198.51.100.1");
    assert_eq!(at_hw1, hg1_mac, "hw1 reaches hg1 at 10.10.0.1");
    assert_eq!(at_hg1, n1_mac, "hg1 reaches n1 at {N1_EXTERNAL}");

    // Packets: n1's InternalIP at the route MTU crosses the tunnel (n1's vxlan0 receives it).
    hg1.sh("ip route flush cache");
    let rx = rx_packets(n1, "vxlan0");
    let (code, out) = ping_ok(hg1, Some(&gw_src), N1_INTERNAL, mtu - 28);
    let rx_after = rx_packets(n1, "vxlan0");
    println!(
        "  hg1 ping -M do -s {} -I {gw_src} {N1_INTERNAL} -> exit {code:?} \
         (n1 vxlan0 rx packets {rx} -> {rx_after})",
        mtu - 28
    );
    assert_eq!(code, Some(0), "payload {} must pass:\n{out}", mtu - 28);
    assert!(rx_after > rx, "the request crossed the tunnel");
    let (code, out) = ping_with(hg1, Some(&gw_src), N1_INTERNAL, mtu - 27, 2);
    let line = first_line_with(&out, &["message too long", "frag"]);
    println!(
        "  hg1 ping -M do -s {} -I {gw_src} {N1_INTERNAL} -> exit {code:?}: {line}",
        mtu - 27
    );
    assert!(
        code.is_some_and(|c| c != 0),
        "payload {} must fail:\n{out}",
        mtu - 27
    );
    assert!(
        out.contains("local error") && out.to_lowercase().contains("message too long"),
        "refused by hg1's own route:\n{out}"
    );
    assert!(out.contains(&format!("mtu={mtu}")), "{out}");

    // A same-Site worker reaches n1's InternalIP through the gateway, which forwards it by its
    // NodeAddress route (hw1's own route is the learned node CIDR of Site N).
    let hw1_src = node("hw1").pod.gw();
    let (code, out) = ping_ok(hw1, Some(&hw1_src), N1_INTERNAL, mtu - 28);
    println!(
        "  hw1 ping -M do -s {} -I {hw1_src} {N1_INTERNAL} (through hg1) -> exit {code:?}",
        mtu - 28
    );
    assert_eq!(code, Some(0), "{out}");

    // Same kernel, without the agent's table: the InternalIP is unreachable again.
    lab.kill_agent("hg1");
    let hg1 = &lab.nodes["hg1"];
    hg1.sh("ip rule del priority 100 lookup 100");
    let (code, out) = ping_with(hg1, Some(&gw_src), N1_INTERNAL, 56, 2);
    println!(
        "  hg1 agent stopped, its policy rule removed: ping -I {gw_src} {N1_INTERNAL} -> exit {code:?}"
    );
    assert_ne!(code, Some(0), "{out}");
    // The restarted agent restores the rule, and with it the path.
    lab.spawn_agent("hg1");
    let hg1 = &lab.nodes["hg1"];
    let start = Instant::now();
    while !hg1
        .ip(&["rule", "show", "priority", "100"])
        .contains("lookup 100")
    {
        assert!(
            start.elapsed() < CONVERGE,
            "rule not restored:\n{}",
            lab.agent_log("hg1")
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (code, out) = ping_ok(hg1, Some(&gw_src), N1_INTERNAL, mtu - 28);
    println!(
        "  hg1 agent restarted ({:?}): ping -M do -s {} -> exit {code:?}",
        start.elapsed(),
        mtu - 28
    );
    assert_eq!(code, Some(0), "{out}");
}
