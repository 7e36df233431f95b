//! Issue 22: nodes with only IPv6 addresses, under the default IPv4 tunnel family, reach each
//! other at their IPv6 underlay addresses, so their VXLAN packets carry an IPv6 outer header and
//! the link gets the IPv6 overhead column (`mtu.md` §1): 1400 − 70 = 1330, not 1400 − 50.
//!
//! Topology: an underlay bridge `br0` (own namespace) with two IPv6-only nodes, v6a
//! (fd00:10::1) and v6b (fd00:10::2), each `eth0` at MTU 1400 on fd00:10::/64, no IPv4 address;
//! both workers of the VXLAN Site S6 (nodeCidrs fd00:10::/64, IPv4 pods 10.160.0.0/16), so
//! meshed. Each node has a pod bridge `cni0` holding its pod gateway (10.160.N.1) and one pod
//! namespace (10.160.N.2). Inner packets are IPv4, outer IPv6. v6a's agent is told its underlay
//! (`--underlay-mtu 1400`, as its annotation says); v6b's detects it towards fd00:10::1.

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::Value;

use crate::kernel::{link_mac, neighbour_mac, route_mtu, rx_packets, table_route};
use crate::lab::{
    self, Lab, Ns, PodNet, UNDERLAY_BRIDGE, bridge_port, first_line_with, ping_ok, ping_with,
    plan_link, plan_of, plan_route,
};

/// Underlay MTU of both nodes (veths and annotations).
const UNDERLAY: u32 = 1400;
/// VXLAN overhead with an IPv6 outer header: IPv6 40 + UDP 8 + VXLAN 8 + inner Ethernet 14.
const VXLAN_IPV6: u32 = 70;
/// VXLAN overhead with an IPv4 outer header (20 + 8 + 8 + 14): the column these links must not
/// get.
const VXLAN_IPV4: u32 = 50;
/// The link MTU: what the outer header really costs.
const MTU: u32 = UNDERLAY - VXLAN_IPV6;
/// What the IPv4 column would give: 1350 + 70 > 1400, a black hole.
const IPV4_COLUMN: u32 = UNDERLAY - VXLAN_IPV4;

struct V6Node {
    name: &'static str,
    addr: &'static str,
    pod: PodNet,
}

const NODES: [V6Node; 2] = [
    V6Node {
        name: "v6a",
        addr: "fd00:10::1",
        pod: PodNet("10.160.1"),
    },
    V6Node {
        name: "v6b",
        addr: "fd00:10::2",
        pod: PodNet("10.160.2"),
    },
];

fn node(name: &str) -> &'static V6Node {
    NODES.iter().find(|n| n.name == name).expect("node")
}

fn manifests_yaml() -> String {
    let mut y = String::from(
        "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata:\n  name: S6\nspec:\n  nodeCidrs: [\"fd00:10::/64\"]\n  podCidrAssignments:\n    - cidrBlocks: [10.160.0.0/16]\n  tunnelProtocol: VXLAN\n",
    );
    for n in &NODES {
        y += &format!(
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{net.unbounded-cloud.io/site: S6}}\n  annotations:\n    mtu.unbounded-cloud.io/underlay-mtu: \"{UNDERLAY}\"\nspec:\n  podCIDRs: [{pods}]\nstatus:\n  addresses:\n    - type: InternalIP\n      address: \"{addr}\"\n",
            name = n.name,
            pods = n.pod.cidr(),
            addr = n.addr,
        );
    }
    y
}

/// Whether this kernel gives network namespaces IPv6, and a flow-based VXLAN device an IPv6
/// socket to receive on; prints the reason when not.
fn ipv6_can_run(test: &str) -> bool {
    let ns = Ns::new("probe6");
    let v6 = ns.try_sh(
        "test -d /proc/sys/net/ipv6 && \
         test \"$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6)\" = 0 && \
         ip -6 addr add fd00:ffff::1/128 dev lo",
    );
    if !v6.status.success() {
        test_utils::netns::skip(
            test,
            &format!(
                "IPv6 is disabled in network namespaces ({})",
                String::from_utf8_lossy(&v6.stderr).trim()
            ),
        );
        return false;
    }
    // 4789 = 0x12B5: the device's UDP socket, listed per family.
    let vx = ns.try_sh(
        "ip link add umtuprobe type vxlan external dstport 4789 && ip link set umtuprobe up && \
         grep -qi ':12B5 ' /proc/net/udp6",
    );
    if !vx.status.success() {
        test_utils::netns::skip(
            test,
            &format!(
                "a flow-based VXLAN device opens no IPv6 socket on this kernel, so it cannot \
                 receive over an IPv6 underlay ({})",
                String::from_utf8_lossy(&vx.stderr).trim()
            ),
        );
        return false;
    }
    true
}

/// The lab: the underlay bridge, the two nodes, one pod per node. v6a's agent is given its
/// underlay; v6b's detects it from its kernel (towards fd00:10::1).
fn v6_lab() -> Lab {
    let mut lab = Lab::new("v6", UNDERLAY_BRIDGE);
    let underlay = UNDERLAY.to_string();
    for d in &NODES {
        let args: &[&str] = if d.name == "v6a" {
            &["--underlay-mtu", &underlay]
        } else {
            &["--detect-underlay"]
        };
        lab.add_node(
            d.name,
            d.pod,
            |infra, node| bridge_port(infra, d.name, node, UNDERLAY),
            &format!(
                "ip addr add {}/64 dev eth0 nodad && ip link set eth0 up",
                d.addr
            ),
            args,
        );
    }
    lab.replace_manifests(&manifests_yaml());
    lab
}

/// The `/status` document of node `name`'s agent (its HTTP address from the log line naming
/// it).
fn status(lab: &Lab, name: &str) -> Value {
    let log = lab.agent_log(name);
    let addr = log
        .split_whitespace()
        .find_map(|w| w.strip_prefix("bound="))
        .unwrap_or_else(|| panic!("no `bound=` address in {name}'s log:\n{log}"));
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the agent");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s.write_all(b"GET /status HTTP/1.0\r\nhost: x\r\nconnection: close\r\n\r\n")
        .expect("request");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("response");
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("/status: {e}:\n{out}"))
}

/// IPv6 packets the node could not fragment (`Ip6FragFails` of /proc/net/snmp6): an outer
/// header that exceeds the underlay, dropped at the sender.
fn ip6_frag_fails(ns: &Ns) -> u64 {
    let snmp = ns.sh("cat /proc/net/snmp6");
    snmp.lines()
        .find_map(|l| l.strip_prefix("Ip6FragFails"))
        .and_then(|v| v.trim().parse().ok())
        .expect("Ip6FragFails in /proc/net/snmp6")
}

fn identity_mac(addr: &str) -> String {
    dataplane_linux::types::format_mac(&dataplane_linux::tunnel_mac(addr.parse().expect("address")))
}

#[test]
fn ipv6_only_nodes_get_the_ipv6_outer_overhead_and_carry_it() {
    let name = "ipv6_only_nodes_get_the_ipv6_outer_overhead_and_carry_it";
    if !lab::can_run(name) || !ipv6_can_run(name) {
        return;
    }
    let mut lab = v6_lab();

    // (1) resolve: the link and the NodePod route of each node get 1400 − 70.
    let (wants, json) = lab::resolve(&lab.manifests);
    for (me, peer) in [("v6a", "v6b"), ("v6b", "v6a")] {
        let plan = plan_of(&json, me);
        let link = plan_link(plan, peer);
        let cidr = node(peer).pod.cidr();
        let route = plan_route(plan, &cidr);
        println!(
            "resolve {me}: link to {peer} {} {} mtu {} ({}); route {cidr} {} mtu {}; vxlan0 {:?}; fabric {}",
            link["kind"],
            link["protocol"],
            link["mtu"],
            link["explanation"]["bound"]["source"],
            route["type"],
            route["mtu"],
            wants[me].devices.get("vxlan0"),
            wants[me].fabric
        );
        assert_eq!(link["protocol"], "VXLAN", "{link}");
        assert_eq!(route["type"], "NodePod", "{route}");
        assert_eq!(
            link["mtu"].as_u64(),
            Some(u64::from(MTU)),
            "{me}-{peer}: the underlay {UNDERLAY} minus the IPv6-outer VXLAN overhead \
             {VXLAN_IPV6} (the IPv4 column would give {IPV4_COLUMN}): {link}"
        );
        assert_eq!(route["mtu"].as_u64(), Some(u64::from(MTU)), "{route}");
        assert_eq!(wants[me].devices.get("vxlan0"), Some(&MTU));
        assert_eq!(wants[me].fabric, MTU);
    }

    for d in &NODES {
        lab.spawn_agent(d.name);
    }
    let took = lab.wait_converged(&wants);
    println!("both agents converged to resolve in {took:?}");
    let (a, b) = (&lab.nodes["v6a"], &lab.nodes["v6b"]);
    let (na, nb) = (node("v6a"), node("v6b"));

    // v6b detected its underlay towards fd00:10::1 (eth0, 1400) and planned with it.
    let st = status(&lab, "v6b");
    println!(
        "  v6b /status: underlayMTU {} (detected), its plan's link to v6a {}",
        st["underlayMTU"], st["plan"]["nodes"][0]["links"][0]["mtu"]
    );
    assert_eq!(st["underlayMTU"], UNDERLAY, "{st}");
    assert_eq!(st["plan"]["nodes"][0]["links"][0]["peer"], "v6a", "{st}");
    assert_eq!(st["plan"]["nodes"][0]["links"][0]["mtu"], MTU, "{st}");

    // (2) The kernel: IPv4 pods encapsulated in IPv6 towards the peer's underlay address, with
    // a UDP checksum, at the route MTU; the endpoint host route to that address over eth0.
    for (me, peer) in [("v6a", "v6b"), ("v6b", "v6a")] {
        let (ns, p) = (&lab.nodes[me], node(peer));
        println!(
            "  {me} table 100:\n{}{}",
            ns.ip(&["-d", "route", "show", "table", "100"]),
            ns.ip(&["-6", "route", "show", "table", "100"])
        );
        let r = table_route(ns, "-4", &p.pod.cidr()).expect("the NodePod route");
        assert_eq!(r["encap"], "ip6", "{r}");
        assert_eq!(r["encap_dst"], p.addr, "{r}");
        assert_eq!(route_mtu(&r), Some(u64::from(MTU)), "{r}");
        assert_eq!(r["gateway"], p.pod.gw(), "{r}");
        assert_eq!(r["dev"], "vxlan0", "{r}");
        let text = ns.ip(&["-d", "route", "show", "table", "100", &p.pod.cidr()]);
        assert!(
            text.contains(&format!("encap ip6 id 1 src :: dst {}", p.addr))
                && text.contains(" csum ")
                && text.contains(&format!("mtu {MTU}")),
            "{text}"
        );
        let e = table_route(ns, "-6", &format!("{}/128", p.addr)).expect("an endpoint route");
        assert_eq!(e["dev"], "eth0", "{e}");
        assert!(e.get("encap").is_none(), "{e}");
        // The flow-based device listens on IPv6 (4789 = 0x12B5).
        let udp6 = ns.sh("cat /proc/net/udp6");
        assert!(udp6.to_uppercase().contains(":12B5 "), "{udp6}");
    }
    // Tunnel MACs hashed from the IPv6 identity addresses, held by the peer.
    let (mac_a, mac_b) = (link_mac(a, "vxlan0"), link_mac(b, "vxlan0"));
    let (held_by_b, held_by_a) = (
        neighbour_mac(b, "vxlan0", &na.pod.gw()),
        neighbour_mac(a, "vxlan0", &nb.pod.gw()),
    );
    println!(
        "  tunnel MACs: v6a vxlan0 {mac_a} (held by v6b {held_by_b}), v6b vxlan0 {mac_b} (held by v6a {held_by_a})"
    );
    assert_eq!(mac_a, identity_mac(na.addr));
    assert_eq!(mac_b, identity_mac(nb.addr));
    assert_eq!(held_by_b, mac_a);
    assert_eq!(held_by_a, mac_b);

    // (3) Packets at the link MTU cross the tunnel, one byte more is refused at the sender.
    for (src, dst) in [("v6a", "v6b"), ("v6b", "v6a")] {
        let (pod, peer, to) = (&lab.pods[src], &lab.nodes[dst], node(dst));
        let rx = rx_packets(peer, "vxlan0");
        let (code, out) = ping_ok(pod, None, &to.pod.ip(), MTU - 28);
        let rx_after = rx_packets(peer, "vxlan0");
        println!(
            "  pod {src} ping -M do -s {} {} -> exit {code:?} ({dst} vxlan0 rx packets {rx} -> {rx_after})",
            MTU - 28,
            to.pod.ip()
        );
        assert_eq!(code, Some(0), "payload {} must pass:\n{out}", MTU - 28);
        assert!(rx_after > rx, "the request crossed the tunnel");
        let (code, out) = ping_with(pod, None, &to.pod.ip(), MTU - 27, 2);
        println!(
            "  pod {src} ping -M do -s {} -> exit {code:?}: {}",
            MTU - 27,
            first_line_with(&out, &["message too long", "frag"])
        );
        assert!(code.is_some_and(|c| c != 0), "{out}");
        assert!(
            out.contains("local error") && out.contains(&format!("mtu={MTU}")),
            "refused by the pod's own interface (the fabric):\n{out}"
        );
    }
    // The node itself, sourced at its pod gateway: its own route refuses one byte more.
    a.sh("ip route flush cache");
    let rx = rx_packets(b, "vxlan0");
    let (code, out) = ping_ok(a, Some(&na.pod.gw()), &nb.pod.ip(), MTU - 28);
    let rx_after = rx_packets(b, "vxlan0");
    println!(
        "  v6a ping -M do -s {} -I {} {} -> exit {code:?} (v6b vxlan0 rx packets {rx} -> {rx_after})",
        MTU - 28,
        na.pod.gw(),
        nb.pod.ip()
    );
    assert_eq!(code, Some(0), "{out}");
    assert!(rx_after > rx, "the request crossed the tunnel");
    let (code, out) = ping_with(a, Some(&na.pod.gw()), &nb.pod.ip(), MTU - 27, 2);
    println!(
        "  v6a ping -M do -s {} -I {} -> exit {code:?}: {}",
        MTU - 27,
        na.pod.gw(),
        first_line_with(&out, &["message too long", "frag"])
    );
    assert!(code.is_some_and(|c| c != 0), "{out}");
    assert!(
        out.contains("local error")
            && out.to_lowercase().contains("message too long")
            && out.contains(&format!("mtu={MTU}")),
        "refused by v6a's own route:\n{out}"
    );

    // (4) The IPv4 column's value is a black hole: with v6a's agent stopped, its kernel set as
    // that plan would set it (vxlan0, the route, cni0, its port and the pod at 1350), a DF
    // packet of 1350 bytes from the pod leaves as 1350 + 70 = 1420 bytes of IPv6, which the
    // 1400 underlay cannot carry and IPv6 does not fragment in flight: dropped at the sender,
    // with no error back to the pod, every time.
    lab.kill_agent("v6a");
    let (a, b, pa) = (&lab.nodes["v6a"], &lab.nodes["v6b"], &lab.pods["v6a"]);
    a.sh(&format!(
        "ip link set vxlan0 mtu {IPV4_COLUMN} && \
         ip route replace {cidr} table 100 proto 250 encap ip6 id 1 dst {dst} csum \
         via {gw} dev vxlan0 onlink mtu {IPV4_COLUMN} && \
         ip link set cni0 mtu {IPV4_COLUMN} && ip link set veth0 mtu {IPV4_COLUMN}",
        cidr = nb.pod.cidr(),
        dst = nb.addr,
        gw = nb.pod.gw()
    ));
    pa.sh(&format!("ip link set eth0 mtu {IPV4_COLUMN}"));
    println!(
        "  v6a agent stopped, IPv4-column values written: {}",
        a.ip(&["route", "show", "table", "100", &nb.pod.cidr()])
            .trim()
    );
    let (rx, fails) = (rx_packets(b, "vxlan0"), ip6_frag_fails(a));
    let tries = 3;
    for i in 0..tries {
        let (code, out) = ping_with(pa, None, &nb.pod.ip(), IPV4_COLUMN - 28, 1);
        println!(
            "  pod v6a ping -M do -s {} {} (try {i}) -> exit {code:?}: {}",
            IPV4_COLUMN - 28,
            nb.pod.ip(),
            first_line_with(&out, &["transmitted"])
        );
        assert_eq!(code, Some(1), "no reply, no error:\n{out}");
        assert!(
            !out.contains("local error") && !out.to_lowercase().contains("frag"),
            "the loss is silent:\n{out}"
        );
    }
    let (rx_after, fails_after) = (rx_packets(b, "vxlan0"), ip6_frag_fails(a));
    println!(
        "  black hole: v6b vxlan0 rx packets {rx} -> {rx_after}; v6a Ip6FragFails {fails} -> {fails_after}"
    );
    assert_eq!(rx_after, rx, "nothing arrived");
    assert!(
        fails_after >= fails + tries,
        "v6a dropped the oversized outer packets"
    );
    // The same path carries packets that fit (the loss is the size, not the path).
    let (code, out) = ping_ok(pa, None, &nb.pod.ip(), MTU - 28);
    assert_eq!(code, Some(0), "{out}");

    // The restarted agent puts back the IPv6-column values, and with them the DF limit.
    lab.spawn_agent("v6a");
    let took = lab.wait_converged(&wants);
    let pa = &lab.pods["v6a"];
    let (code, out) = ping_with(pa, None, &nb.pod.ip(), IPV4_COLUMN - 28, 2);
    println!(
        "  v6a agent restarted, converged in {took:?}: pod ping -M do -s {} -> exit {code:?}: {}",
        IPV4_COLUMN - 28,
        first_line_with(&out, &["message too long", "frag"])
    );
    assert!(
        code.is_some_and(|c| c != 0) && out.contains(&format!("mtu={MTU}")),
        "{out}"
    );
    let (code, out) = ping_ok(pa, None, &nb.pod.ip(), MTU - 28);
    assert_eq!(code, Some(0), "{out}");
}
