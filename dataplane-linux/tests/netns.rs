//! Real-kernel tests, each in private network namespaces (root only; skipped with a printed
//! reason otherwise). Run: `cargo test -p dataplane-linux --features netns-tests`.
#![cfg(feature = "netns-tests")]

mod common;

use std::path::PathBuf;

use common::{InNs, Ns, ip, route, vx, vx_to, vxlan_state};
use dataplane_linux::model::{Op, ReadScope};
use dataplane_linux::{
    DesiredState, ErrorKind, Fabric, HopProtocol, Kernel, NextHop, PodSpec, RouteSpec, Settings,
    TunnelDevice, TunnelKind, WireguardMtu,
};

/// A node namespace with an underlay `eth0` (192.168.0.1/24, MTU `mtu`) and a default route.
fn node(tag: &str, mtu: u32) -> Ns {
    let ns = Ns::new(tag);
    ns.sh(&format!(
        "ip link add eth0 mtu {mtu} type veth peer name eth0p mtu {mtu} && \
         ip addr add 192.168.0.1/24 dev eth0 && ip link set eth0 up && ip link set eth0p up && \
         ip route add default via 192.168.0.254 dev eth0"
    ));
    ns
}

fn desired(vxlan: u32, r: u32) -> DesiredState {
    vxlan_state(
        "192.168.0.1",
        vxlan,
        vec![
            route("10.2.0.0/24", r, vec![vx("192.168.0.2", "10.2.0.1")]),
            route(
                "10.3.0.0/24",
                r - 50,
                vec![vx("192.168.0.3", "10.3.0.1"), vx("192.168.0.4", "10.3.1.1")],
            ),
            route("10.8.0.0/16", r - 20, vec![vx("172.16.0.9", "10.8.0.1")]),
            route("fd00:2::/64", r, vec![vx("192.168.0.2", "fd00:2::1")]),
        ],
    )
}

fn scope() -> ReadScope {
    ReadScope {
        table: 100,
        neighbour_devices: vec!["vxlan0".into()],
        ..ReadScope::default()
    }
}

#[test]
fn devices_created_flow_based_with_mac_and_mtu() {
    require_root!("devices_created_flow_based_with_mac_and_mtu");
    let ns = node("dev", 1500);
    let rep = ns.dp(Settings::default(), |dp| dp.reconcile(&desired(1450, 1400)));
    let rep = rep.expect("reconcile");
    assert!(!rep.writes.is_empty());
    let out = ns.sh("ip -d link show vxlan0");
    assert!(out.contains("mtu 1450"), "{out}");
    assert!(out.contains("link/ether 0a:58:c0:a8:00:01"), "{out}");
    assert!(out.contains("external"), "{out}");
    assert!(out.contains("dstport 4789"), "{out}");
    assert!(
        out.contains("state UNKNOWN") || out.contains(",UP"),
        "{out}"
    );
}

/// The device's MAC follows the node's identity address, also on a device already up; each
/// neighbour carries its peer's identity MAC, not the MAC of the address the link uses.
#[test]
fn device_and_neighbour_macs_follow_identity_addresses() {
    require_root!("device_and_neighbour_macs_follow_identity_addresses");
    let ns = node("ident", 1500);
    let mut d = desired(1450, 1400);
    // A peer reached at 192.168.0.7 whose identity is 10.20.0.4.
    d.routes.push(route(
        "10.7.0.0/24",
        1400,
        vec![vx_to("192.168.0.7", "10.20.0.4", "10.7.0.1")],
    ));
    let first = d.clone();
    ns.dp(Settings::default(), move |dp| dp.reconcile(&first))
        .expect("first");
    let out = ns.sh("ip link show vxlan0");
    assert!(out.contains("link/ether 0a:58:c0:a8:00:01"), "{out}");
    let neigh = ns.sh("ip neigh show dev vxlan0");
    assert!(
        neigh.contains("10.7.0.1 lladdr 0a:58:0a:14:00:04"),
        "identity MAC of the peer: {neigh}"
    );
    let enc = ns.sh("ip route show table 100 10.7.0.0/24");
    assert!(enc.contains("dst 192.168.0.7"), "{enc}");
    // A new identity: the device, up, is readdressed in place.
    d.identity_addr = ip("10.10.0.1");
    let again = d.clone();
    let rep = ns
        .dp(Settings::default(), move |dp| dp.reconcile(&again))
        .expect("new identity");
    assert!(
        rep.writes
            .iter()
            .any(|o| matches!(o, Op::SetMac { link, .. } if link == "vxlan0")),
        "{:?}",
        rep.writes
    );
    let out = ns.sh("ip link show vxlan0");
    assert!(out.contains("link/ether 0a:58:0a:0a:00:01"), "{out}");
    assert!(out.contains(",UP"), "{out}");
    let rep = ns
        .dp(Settings::default(), move |dp| dp.reconcile(&d))
        .expect("converged");
    assert!(rep.writes.is_empty(), "{:?}", rep.writes);
}

#[test]
fn device_mtu_goes_up_and_down() {
    require_root!("device_mtu_goes_up_and_down");
    let ns = node("devmtu", 9000);
    ns.dp(Settings::default(), |dp| {
        dp.reconcile(&desired(1450, 1400)).expect("first");
        let up = dp.reconcile(&desired(8950, 8900)).expect("up");
        // Device up (phase 4) before routes up (phase 6).
        let dev = up
            .writes
            .iter()
            .position(|o| matches!(o, Op::SetMtu { link, .. } if link == "vxlan0"))
            .expect("device write");
        let rt = up
            .writes
            .iter()
            .position(|o| matches!(o, Op::ReplaceRoute(_)))
            .expect("route write");
        assert!(dev < rt, "{:?}", up.writes);
        let down = dp.reconcile(&desired(1400, 1300)).expect("down");
        let dev = down
            .writes
            .iter()
            .position(|o| matches!(o, Op::SetMtu { link, .. } if link == "vxlan0"))
            .expect("device write");
        let rt = down
            .writes
            .iter()
            .rposition(|o| matches!(o, Op::ReplaceRoute(_)))
            .expect("route write");
        assert!(rt < dev, "routes down before the device: {:?}", down.writes);
    });
    let out = ns.sh("ip link show vxlan0");
    assert!(out.contains("mtu 1400"), "{out}");
}

#[test]
fn routes_with_mtu_metrics_read_back() {
    require_root!("routes_with_mtu_metrics_read_back");
    let ns = node("routes", 1500);
    let held = ns.dp(Settings::default(), |dp| {
        dp.reconcile(&desired(1450, 1400)).expect("reconcile");
        dp.kernel_mut().read(&scope()).expect("read")
    });
    let out = ns.sh("ip route show table 100");
    assert!(
        out.contains("10.2.0.0/24  encap ip id 1 src 0.0.0.0 dst 192.168.0.2")
            || out.contains("encap ip id 1"),
        "{out}"
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("10.2.0.0/24"))
        .expect("route");
    assert!(line.contains("dst 192.168.0.2"), "{line}");
    assert!(line.contains("via 10.2.0.1 dev vxlan0"), "{line}");
    assert!(line.contains("proto 250"), "{line}");
    assert!(line.contains("onlink"), "{line}");
    assert!(line.contains("mtu 1400"), "{line}");
    // ECMP as multipath.
    assert!(out.contains("10.3.0.0/24 proto 250"), "{out}");
    assert!(
        out.contains("nexthop") && out.contains("dst 192.168.0.4"),
        "{out}"
    );
    // IPv6 locked.
    let v6 = ns.sh("ip -6 route show table 100");
    assert!(
        v6.contains("fd00:2::/64") && v6.contains("mtu lock 1400"),
        "{v6}"
    );
    // Read back through netlink equals what was planned.
    let want =
        dataplane_linux::plan::kernel_route(&desired(1450, 1400).routes[1], &Settings::default())
            .expect("a route with next hops");
    let got = held
        .routes
        .iter()
        .find(|r| r.destination == want.destination)
        .expect("ecmp route read back");
    assert_eq!(got, &want);
    let v6r = held
        .routes
        .iter()
        .find(|r| r.destination.to_string() == "fd00:2::/64")
        .expect("v6");
    assert!(v6r.mtu_locked && v6r.mtu == Some(1400));
}

#[test]
fn route_replace_and_sweep_only_own_protocol() {
    require_root!("route_replace_and_sweep_only_own_protocol");
    let ns = node("sweep", 1500);
    ns.dp(Settings::default(), |dp| {
        dp.reconcile(&desired(1450, 1400)).expect("first")
    });
    ns.sh("ip route add 10.99.0.0/16 dev eth0 table 100 proto static");
    ns.sh("ip route add 10.98.0.0/16 dev eth0 table 100 proto 250");
    let mut smaller = desired(1450, 1380);
    smaller.routes.remove(2);
    let rep = ns
        .dp(Settings::default(), move |dp| dp.reconcile(&smaller))
        .expect("second");
    let out = ns.sh("ip route show table 100");
    assert!(out.contains("10.99.0.0/16"), "foreign route kept: {out}");
    assert!(
        !out.contains("10.98.0.0/16"),
        "stale own route swept: {out}"
    );
    assert!(!out.contains("10.8.0.0/16"), "removed route deleted: {out}");
    assert!(
        !out.contains("172.16.0.9"),
        "its endpoint route deleted: {out}"
    );
    let line = out.lines().find(|l| l.starts_with("10.2.0.0/24")).unwrap();
    assert!(line.contains("mtu 1380"), "{line}");
    assert_eq!(
        out.matches("10.2.0.0/24").count(),
        1,
        "replaced, not added: {out}"
    );
    assert!(
        rep.writes
            .iter()
            .any(|o| matches!(o, Op::DeleteRoute { .. }))
    );
}

#[test]
fn policy_rule_before_main() {
    require_root!("policy_rule_before_main");
    let ns = node("rule", 1500);
    let s = Settings {
        table: 1234,
        rule_priority: 321,
        ..Settings::default()
    };
    ns.dp(s.clone(), |dp| {
        dp.reconcile(&desired(1450, 1400)).expect("r")
    });
    let out = ns.sh("ip rule show");
    assert!(out.contains("321:\tfrom all lookup 1234"), "{out}");
    let v6 = ns.sh("ip -6 rule show");
    assert!(v6.contains("321:\tfrom all lookup 1234"), "{v6}");
    // A stale rule to our table with another priority is removed.
    ns.sh("ip rule add priority 400 lookup 1234");
    ns.dp(s, |dp| dp.reconcile(&desired(1450, 1400)).expect("r2"));
    let out = ns.sh("ip rule show");
    assert!(!out.contains("400:"), "{out}");
    assert_eq!(out.matches("lookup 1234").count(), 1, "{out}");
}

#[test]
fn permanent_neighbours_with_peer_tunnel_macs() {
    require_root!("permanent_neighbours_with_peer_tunnel_macs");
    let ns = node("neigh", 1500);
    ns.dp(Settings::default(), |dp| {
        dp.reconcile(&desired(1450, 1400)).expect("r")
    });
    let out = ns.sh("ip neigh show dev vxlan0");
    assert!(
        out.contains("10.2.0.1 lladdr 0a:58:c0:a8:00:02 PERMANENT"),
        "{out}"
    );
    assert!(
        out.contains("10.3.1.1 lladdr 0a:58:c0:a8:00:04 PERMANENT"),
        "{out}"
    );
    assert!(
        out.contains("10.8.0.1 lladdr 0a:58:ac:10:00:09 PERMANENT"),
        "{out}"
    );
    let v6 = ns.sh("ip -6 neigh show dev vxlan0");
    assert!(
        v6.contains("fd00:2::1 lladdr 0a:58:c0:a8:00:02 PERMANENT"),
        "{v6}"
    );
    let mut fewer = desired(1450, 1400);
    fewer.routes.truncate(2);
    ns.dp(Settings::default(), move |dp| {
        dp.reconcile(&fewer).expect("r")
    });
    let out = ns.sh("ip neigh show dev vxlan0");
    assert!(!out.contains("10.8.0.1"), "stale neighbour removed: {out}");
    assert!(out.contains("10.2.0.1"), "{out}");
}

fn add_pod(node: &Ns, pod: &Ns, veth: &str, mtu: u32) {
    node.sh(&format!(
        "ip link add {veth} mtu {mtu} type veth peer name eth0 mtu {mtu} netns {} && ip link set {veth} up",
        pod.name
    ));
    pod.sh("ip link set eth0 up");
}

#[test]
fn bridge_ports_pod_veths_and_cni_config() {
    require_root!("bridge_ports_pod_veths_and_cni_config");
    let ns = node("fabric", 1500);
    let pa = Ns::new("poda");
    let pb = Ns::new("podb");
    add_pod(&ns, &pa, "veth-a", 1500);
    add_pod(&ns, &pb, "veth-b", 1500);
    let dir = std::env::temp_dir().join(format!("umtu-cni-{}", ns.name));
    std::fs::create_dir_all(&dir).unwrap();
    let cni: PathBuf = dir.join("10-pods.conflist");
    std::fs::write(
        &cni,
        r#"{"cniVersion":"1.0.0","name":"pods","plugins":[{"type":"bridge","bridge":"cni0","mtu":1500},{"type":"portmap"}]}"#,
    )
    .unwrap();
    let with_fabric = |mtu: u32| {
        let mut d = desired(1450, 1400);
        d.fabric = Some(Fabric {
            bridge: "cni0".into(),
            mtu,
            cni_config: Some(cni.clone()),
            pods: [(&pa, "veth-a"), (&pb, "veth-b")]
                .iter()
                .map(|(p, v)| PodSpec {
                    netns: p.path(),
                    ifname: "eth0".into(),
                    host_veth: Some(v.to_string()),
                })
                .collect(),
        });
        d
    };
    let d = with_fabric(1400);
    let rep = ns
        .dp(Settings::default(), move |dp| dp.reconcile(&d))
        .expect("fabric");
    let br = ns.sh("ip -d link show cni0");
    assert!(br.contains("mtu 1400") && br.contains("bridge"), "{br}");
    let port = ns.sh("ip link show veth-a");
    assert!(
        port.contains("mtu 1400") && port.contains("master cni0"),
        "{port}"
    );
    assert!(pa.sh("ip link show eth0").contains("mtu 1400"));
    assert!(pb.sh("ip link show eth0").contains("mtu 1400"));
    let text = std::fs::read_to_string(&cni).unwrap();
    assert_eq!(
        dataplane_linux::cni::read_mtu(&text),
        Ok(Some(1400)),
        "{text}"
    );
    assert!(rep.writes.iter().any(|o| matches!(o, Op::SetPodMtu { .. })));
    // Raise: pod side last.
    let d = with_fabric(1450);
    let rep = ns
        .dp(Settings::default(), move |dp| dp.reconcile(&d))
        .expect("raise");
    assert!(pa.sh("ip link show eth0").contains("mtu 1450"));
    assert!(ns.sh("ip link show cni0").contains("mtu 1450"));
    let last_net = rep.writes.iter().rposition(|o| {
        matches!(o, Op::ReplaceRoute(_)) || matches!(o, Op::SetMtu { link, .. } if link == "vxlan0")
    });
    let first_pod = rep
        .writes
        .iter()
        .position(|o| matches!(o, Op::SetPodMtu { .. }));
    if let (Some(n), Some(p)) = (last_net, first_pod) {
        assert!(n < p);
    }
    let d = with_fabric(1450);
    let again = ns
        .dp(Settings::default(), move |dp| dp.reconcile(&d))
        .expect("again");
    assert!(again.writes.is_empty(), "{:?}", again.writes);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn underlay_detection_skips_own_devices_and_falls_back_to_default() {
    require_root!("underlay_detection_skips_own_devices_and_falls_back_to_default");
    let ns = node("underlay", 1500);
    ns.sh(
        "ip link add eth1 mtu 9000 type veth peer name eth1p mtu 9000 && ip link set eth1 up && \
         ip link set eth1p up && ip addr add 172.30.0.1/24 dev eth1 && \
         ip route add 172.31.0.0/16 via 172.30.0.254 dev eth1 mtu 8800",
    );
    let (a, b, c, d) = ns.dp(Settings::default(), |dp| {
        let des = desired(1450, 1400);
        dp.reconcile(&des).expect("r");
        // An own route towards 172.31.0.0/16 must not be taken for the underlay.
        let a = dp.detect_underlay(&des, Some(ip("172.31.2.3"))).unwrap();
        let b = dp.detect_underlay(&des, Some(ip("172.30.0.7"))).unwrap();
        let c = dp.detect_underlay(&des, Some(ip("10.2.0.9"))).unwrap();
        let d = dp.detect_underlay(&des, None).unwrap();
        (a, b, c, d)
    });
    let a = a.expect("a");
    assert_eq!((a.device.as_str(), a.mtu), ("eth1", 8800));
    let b = b.expect("b");
    assert_eq!((b.device.as_str(), b.mtu, b.gateway), ("eth1", 9000, None));
    // 10.2.0.0/24 is the adapter's own (table 100, vxlan0): falls back to the default route.
    let c = c.expect("c");
    assert_eq!((c.device.as_str(), c.mtu), ("eth0", 1500));
    assert_eq!(c.gateway, Some(ip("192.168.0.254")));
    assert_eq!(d.expect("d").device, "eth0");
}

#[test]
fn endpoint_host_routes_through_underlay_next_hop() {
    require_root!("endpoint_host_routes_through_underlay_next_hop");
    let ns = node("endpoint", 1500);
    // A learned prefix covering an endpoint, through the tunnel: must not recurse.
    let mut d = desired(1450, 1400);
    d.routes.push(route(
        "172.16.0.0/16",
        1400,
        vec![vx("192.168.0.2", "10.2.0.1")],
    ));
    ns.dp(Settings::default(), move |dp| dp.reconcile(&d).expect("r"));
    let out = ns.sh("ip route show table 100");
    assert!(
        out.contains("192.168.0.2 dev eth0 proto 250 scope link"),
        "{out}"
    );
    assert!(
        out.contains("172.16.0.9 via 192.168.0.254 dev eth0 proto 250"),
        "{out}"
    );
    let get = ns.sh("ip route get 172.16.0.9");
    assert!(get.contains("via 192.168.0.254 dev eth0"), "{get}");
}

#[test]
fn errno_classification() {
    require_root!("errno_classification");
    let ns = node("errno", 1500);
    let results = ns.dp(Settings::default(), |dp| {
        dp.reconcile(&desired(1450, 1400)).expect("r");
        let k = dp.kernel_mut();
        let absent = k.apply(&Op::SetMtu {
            link: "nope0".into(),
            mtu: 1400,
        });
        let exists = k.apply(&Op::CreateTunnel {
            name: "vxlan0".into(),
            kind: TunnelKind::Vxlan,
            mtu: 1400,
            mac: [0x0a, 0x58, 0, 0, 0, 1],
            port: 4789,
        });
        let gone = k.apply(&Op::DeleteRoute {
            table: 100,
            destination: "10.123.0.0/16".parse().unwrap(),
            protocol: 250,
        });
        let rule_exists = k.apply(&Op::AddRule(dataplane_linux::model::Rule {
            family: dataplane_linux::model::Family::V4,
            priority: 100,
            table: 100,
        }));
        let too_big = k.apply(&Op::SetMtu {
            link: "eth0".into(),
            mtu: 70000,
        });
        [absent, exists, gone, rule_exists, too_big].map(|r| r.err().and_then(|e| e.kind()))
    });
    assert_eq!(
        results,
        [
            Some(ErrorKind::Absent),
            Some(ErrorKind::Exists),
            Some(ErrorKind::Absent),
            Some(ErrorKind::Exists),
            Some(ErrorKind::Other),
        ]
    );
}

#[test]
fn second_apply_writes_nothing() {
    require_root!("second_apply_writes_nothing");
    let ns = node("idem", 1500);
    let (first, second) = ns.dp(Settings::default(), |dp| {
        let d = desired(1450, 1400);
        let a = dp.reconcile(&d).expect("a");
        let b = dp.reconcile(&d).expect("b");
        (a.writes.len(), b.writes)
    });
    assert!(first > 5);
    assert!(second.is_empty(), "{second:?}");
}

#[test]
fn wireguard_device_mtu_set_when_present_never_created() {
    require_root!("wireguard_device_mtu_set_when_present_never_created");
    let ns = node("wg", 1500);
    // This kernel cannot create WireGuard devices: a veth named like one stands in (the
    // adapter only sets the MTU of what it finds, by name).
    ns.sh("ip link add wg51820 type veth peer name wgpeer && ip link set wg51820 up && ip link set wgpeer up");
    let mut d = desired(1450, 1400);
    d.wireguard_mtus = vec![
        WireguardMtu {
            name: "wg51820".into(),
            mtu: 1420,
        },
        WireguardMtu {
            name: "wg51821".into(),
            mtu: 1420,
        },
    ];
    d.routes.push(RouteSpec {
        destination: "10.50.0.0/16".parse().unwrap(),
        mtu: 1420,
        next_hops: vec![NextHop {
            device: "wg51820".into(),
            protocol: HopProtocol::WireGuard,
            peer_underlay: ip("0.0.0.0"),
            peer_identity: ip("0.0.0.0"),
            pod_gateway: ip("0.0.0.0"),
        }],
    });
    let rep = ns
        .dp(Settings::default(), move |dp| dp.reconcile(&d))
        .expect("r");
    assert!(ns.sh("ip link show wg51820").contains("mtu 1420"));
    assert!(ns.try_sh("ip link show wg51821").status.code() != Some(0));
    assert!(
        rep.notes.iter().any(|n| n.contains("wg51821")),
        "{:?}",
        rep.notes
    );
    let out = ns.sh("ip route show table 100");
    assert!(
        out.contains("10.50.0.0/16 dev wg51820 proto 250 scope link mtu 1420"),
        "{out}"
    );
}

#[test]
fn probe_reports_missing_tunnel_kinds() {
    require_root!("probe_reports_missing_tunnel_kinds");
    let ns = node("probe", 1500);
    let (probe, geneve) = ns.dp(Settings::default(), |dp| {
        let p = dp.kernel_mut().probe();
        let mut d = desired(1450, 1400);
        d.devices.push(TunnelDevice {
            name: "geneve0".into(),
            kind: TunnelKind::Geneve,
            mtu: 1450,
        });
        let g = dp.reconcile(&d).err().map(|e| (e.kind(), e.to_string()));
        (p, g)
    });
    println!("probe: {probe:?}");
    assert!(probe.vxlan, "{probe:?}");
    if probe.geneve {
        assert!(geneve.is_none());
    } else {
        let (kind, text) = geneve.expect("geneve creation must fail on this kernel");
        assert_eq!(kind, Some(ErrorKind::Unsupported), "{text}");
        assert!(text.contains("geneve0"), "{text}");
        assert!(probe.missing.iter().any(|m| m.starts_with("geneve")));
    }
    // The probe leaves nothing behind.
    assert!(!ns.sh("ip link show").contains("umtuprobe"));
}

/// Two nodes joined by an underlay veth pair, a pod behind each; only the adapter's VXLAN
/// routes connect them.
#[test]
fn two_nodes_pods_ping_and_df_limits() {
    require_root!("two_nodes_pods_ping_and_df_limits");
    if !test_utils::netns::can_run(
        "two_nodes_pods_ping_and_df_limits",
        &[test_utils::netns::Need::Tool("ping")],
    ) {
        return;
    }
    let n1 = Ns::new("n1");
    let n2 = Ns::new("n2");
    let p1 = Ns::new("p1");
    let p2 = Ns::new("p2");
    n1.sh(&format!(
        "ip link add u1 mtu 1500 type veth peer name u2 mtu 1500 netns {}",
        n2.name
    ));
    for (n, dev, addr) in [(&n1, "u1", "192.168.0.1/24"), (&n2, "u2", "192.168.0.2/24")] {
        n.sh(&format!(
            "sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
             net.ipv4.conf.default.rp_filter=0 && ip addr add {addr} dev {dev} && ip link set {dev} up"
        ));
    }
    add_pod(&n1, &p1, "veth-p1", 1500);
    add_pod(&n2, &p2, "veth-p2", 1500);
    let node_state = |me: &str, peer: &str, peer_pods: &str, pod: &Ns, veth: &str| DesiredState {
        fabric: Some(Fabric {
            bridge: "cni0".into(),
            mtu: 1450,
            cni_config: None,
            pods: vec![PodSpec {
                netns: pod.path(),
                ifname: "eth0".into(),
                host_veth: Some(veth.into()),
            }],
        }),
        ..vxlan_state(
            me,
            1450,
            vec![route(
                &format!("{peer_pods}.0/24"),
                1400,
                vec![vx(peer, &format!("{peer_pods}.1"))],
            )],
        )
    };
    let s1 = node_state("192.168.0.1", "192.168.0.2", "10.2.0", &p1, "veth-p1");
    let s2 = node_state("192.168.0.2", "192.168.0.1", "10.1.0", &p2, "veth-p2");
    n1.dp(Settings::default(), move |dp| {
        dp.reconcile(&s1).expect("n1")
    });
    n2.dp(Settings::default(), move |dp| {
        dp.reconcile(&s2).expect("n2")
    });
    // What the CNI plugin would do: gateway address on the bridge, pod address and route.
    n1.sh("ip addr add 10.1.0.1/24 dev cni0");
    n2.sh("ip addr add 10.2.0.1/24 dev cni0");
    p1.sh("ip addr add 10.1.0.2/24 dev eth0 && ip route add default via 10.1.0.1");
    p2.sh("ip addr add 10.2.0.2/24 dev eth0 && ip route add default via 10.2.0.1");
    assert!(p1.sh("ip link show eth0").contains("mtu 1450"));

    let mut ok = false;
    for _ in 0..5 {
        if p1.try_sh("ping -c 1 -W 1 10.2.0.2").status.success() {
            ok = true;
            break;
        }
    }
    assert!(
        ok,
        "pods cannot reach each other: {}",
        n1.sh("ip route show table 100; ip neigh show dev vxlan0")
    );
    assert!(p2.try_sh("ping -c 1 -W 1 10.1.0.2").status.success());

    let ping = |size: u32| {
        let o = p1.try_sh(&format!("ping -M do -s {size} -c 1 -W 1 10.2.0.2 2>&1"));
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
        )
    };
    // Above the pod's own MTU the pod's kernel refuses locally.
    let (code, out) = ping(1450 - 28 + 1);
    println!("ping -M do -s {}: exit {code:?}\n{out}", 1450 - 28 + 1);
    assert_ne!(code, Some(0), "{out}");
    assert!(out.to_lowercase().contains("message too long"), "{out}");
    assert!(out.contains("mtu=1450"), "the pod's own MTU: {out}");
    let (code, out) = ping(1400 - 28);
    println!("ping -M do -s {}: exit {code:?}\n{out}", 1400 - 28);
    assert_eq!(code, Some(0), "{out}");
    let (code, out) = ping(1400 - 28 + 1);
    println!("ping -M do -s {}: exit {code:?}\n{out}", 1400 - 28 + 1);
    assert_ne!(code, Some(0), "{out}");
    let lower = out.to_lowercase();
    assert!(
        lower.contains("frag needed")
            || lower.contains("fragmentation needed")
            || lower.contains("message too long"),
        "no error text: {out}"
    );
}

/// The real kernel behind a fault injector: lowering and raising with each write failing in
/// turn; after the failure the kernel holds no route above its device, and the next reconcile
/// (towards the new or the reverted state) converges.
#[test]
fn real_kernel_every_failure_converges() {
    require_root!("real_kernel_every_failure_converges");
    let ns = node("faulty", 1500);
    let path = ns.path();
    let res = dataplane_linux::netlink::in_netns(&path, move || {
        use dataplane_linux::fake::Faulty;
        let k = Faulty::new(dataplane_linux::NetlinkKernel::new().expect("netlink"));
        let mut dp = dataplane_linux::Dataplane::new(k, Settings::default());
        let a = desired(1450, 1400);
        let b = desired(1350, 1300);
        dp.reconcile(&a).expect("a");
        let mut checked = 0;
        for (from, to) in [(&a, &b), (&b, &a)] {
            dp.reconcile(from).expect("from");
            let n = dp.plan(to).expect("plan").steps.len();
            assert!(n > 3, "{n}");
            for k in 0..n {
                for revert in [false, true] {
                    dp.reconcile(from).expect("reset");
                    dp.kernel_mut().fail_in(k, 16);
                    let err = dp.reconcile(to).expect_err("injected");
                    assert_eq!(err.kind(), Some(ErrorKind::Transient));
                    dp.kernel_mut().clear();
                    let st = dp.kernel_mut().read(&scope()).expect("read");
                    for r in &st.routes {
                        for h in &r.hops {
                            let dev = st.link(&h.device).expect("device");
                            if let Some(m) = r.mtu {
                                assert!(m <= dev.mtu, "k={k}: {r:?} over {dev:?}");
                            }
                        }
                    }
                    let target = if revert { from } else { to };
                    dp.reconcile(target).expect("converge");
                    let again = dp.reconcile(target).expect("again");
                    assert!(again.writes.is_empty(), "k={k}: {:?}", again.writes);
                    checked += 1;
                }
            }
        }
        checked
    })
    .expect("netns");
    println!("real kernel: {res} injected failures, each followed by a converging reconcile");
    assert!(res > 8, "{res}");
}

/// A node namespace whose underlay is IPv6 only: `eth0` (MTU `mtu`) with fd00:10::1/64 and an
/// IPv6 default route via a link-local router address; `None` (with the reason printed) when
/// this kernel has IPv6 disabled.
fn ipv6_node(test: &str, tag: &str, mtu: u32) -> Option<Ns> {
    let ns = Ns::new(tag);
    ns.sh(&format!(
        "ip link add eth0 mtu {mtu} type veth peer name eth0p mtu {mtu} && \
         ip link set eth0 up && ip link set eth0p up"
    ));
    let added = ns.try_sh(
        "ip addr add fd00:10::1/64 dev eth0 nodad && \
         ip -6 route add default via fe80::1 dev eth0",
    );
    if !added.status.success() {
        test_utils::netns::skip(
            test,
            &format!(
                "IPv6 is not available in network namespaces: {}",
                String::from_utf8_lossy(&added.stderr).trim()
            ),
        );
        return None;
    }
    Some(ns)
}

/// IPv4 pods over VXLAN towards IPv6 underlay addresses: one peer on the segment, an ECMP pair
/// behind the router.
fn ipv6_underlay_desired() -> DesiredState {
    vxlan_state(
        "fd00:10::1",
        1330,
        vec![
            route("10.160.2.0/24", 1330, vec![vx("fd00:10::2", "10.160.2.1")]),
            route(
                "10.170.0.0/16",
                1330,
                vec![
                    vx("fd00:20::5", "10.170.5.1"),
                    vx("fd00:20::6", "10.170.6.1"),
                ],
            ),
        ],
    )
}

/// The kernel takes and returns the `csum` flag of `encap ip6` next hops (single and
/// multipath), so a second reconcile writes nothing; endpoint host routes to the IPv6 underlay
/// addresses go through `eth0` (on-link, or via the router); detection reads the IPv6 routes.
#[test]
fn ipv6_underlay_encap_with_checksum_reads_back() {
    let test = "ipv6_underlay_encap_with_checksum_reads_back";
    require_root!(test);
    let Some(ns) = ipv6_node(test, "v6", 1400) else {
        return;
    };
    let (second, on_link, none) = ns.dp(Settings::default(), |dp| {
        let d = ipv6_underlay_desired();
        dp.reconcile(&d).expect("first reconcile");
        let second = dp.reconcile(&d).expect("second reconcile").writes;
        let on_link = dp.detect_underlay(&d, Some(ip("fd00:10::2"))).unwrap();
        let none = dp.detect_underlay(&d, None).unwrap();
        (second, on_link, none)
    });
    assert!(second.is_empty(), "{second:?}");
    let single = ns.sh("ip -d route show table 100 10.160.2.0/24");
    println!("{single}");
    assert!(
        single.contains("encap ip6 id 1 src :: dst fd00:10::2")
            && single.contains(" csum via 10.160.2.1 dev vxlan0")
            && single.contains("mtu 1330"),
        "{single}"
    );
    let multi = ns.sh("ip -d route show table 100 10.170.0.0/16");
    println!("{multi}");
    assert_eq!(multi.matches(" csum ").count(), 2, "{multi}");
    let endpoints = ns.sh("ip -6 route show table 100");
    println!("{endpoints}");
    assert!(
        endpoints.contains("fd00:10::2 dev eth0 proto 250"),
        "{endpoints}"
    );
    assert!(
        endpoints.contains("fd00:20::5 via fe80::1 dev eth0 proto 250"),
        "{endpoints}"
    );
    let on_link = on_link.expect("towards fd00:10::2");
    assert_eq!((on_link.device.as_str(), on_link.mtu), ("eth0", 1400));
    let none = none.expect("the IPv6 default route");
    assert_eq!((none.device.as_str(), none.mtu), ("eth0", 1400));
}

/// The node leaving the cluster: after a reconcile, `remove_owned` leaves no rule looking up
/// the table, none of its routes of the adapter's protocol, no `vxlan0` (and so none of its
/// neighbours), while a foreign route of the table, a route of the adapter's protocol in
/// another table, a foreign rule and the pod bridge stay. A second call writes nothing.
#[test]
fn remove_owned_leaves_only_foreign_state() {
    require_root!("remove_owned_leaves_only_foreign_state");
    let ns = node("remove", 1500);
    let mut d = desired(1450, 1400);
    d.fabric = Some(Fabric {
        bridge: "cni0".into(),
        mtu: 1400,
        cni_config: None,
        pods: vec![],
    });
    ns.dp(Settings::default(), move |dp| dp.reconcile(&d))
        .expect("reconcile");
    ns.sh("ip route add 10.99.0.0/16 dev eth0 table 100 proto static");
    ns.sh("ip route add 10.98.0.0/16 dev eth0 table 200 proto 250");
    ns.sh("ip rule add priority 100 lookup 200");
    assert!(ns.sh("ip rule show").contains("lookup 100"));
    assert!(ns.sh("ip -6 rule show").contains("lookup 100"));
    assert!(ns.sh("ip neigh show dev vxlan0").contains("PERMANENT"));

    let (rep, again) = ns.dp(Settings::default(), |dp| {
        (dp.remove_owned(), dp.remove_owned())
    });
    let rep = rep.expect("removal");
    assert!(!rep.writes.is_empty());
    let again = again.expect("second removal");
    assert!(again.writes.is_empty(), "{:?}", again.writes);

    let gone = ns.try_sh("ip -d link show vxlan0");
    assert!(!gone.status.success(), "vxlan0 still there: {gone:?}");
    let rules = ns.sh("ip rule show");
    assert!(!rules.contains("lookup 100\n"), "{rules}");
    assert!(
        rules.contains("100:\tfrom all lookup 200"),
        "foreign rule kept: {rules}"
    );
    let rules6 = ns.sh("ip -6 rule show");
    assert!(!rules6.contains("lookup 100"), "{rules6}");
    let table = ns.sh("ip route show table 100");
    assert_eq!(
        table.lines().collect::<Vec<_>>(),
        ["10.99.0.0/16 dev eth0 proto static scope link "],
        "only the foreign route stays: {table}"
    );
    let table6 = ns.sh("ip -6 route show table 100");
    assert!(table6.trim().is_empty(), "{table6}");
    let other = ns.sh("ip route show table 200");
    assert!(other.contains("10.98.0.0/16"), "other table kept: {other}");
    let br = ns.sh("ip link show cni0");
    assert!(br.contains("mtu 1400"), "pod bridge kept: {br}");
    // The underlay is the host's again.
    let main = ns.sh("ip route show");
    assert!(
        main.contains("default via 192.168.0.254 dev eth0"),
        "{main}"
    );
}

/// A write failing mid-removal (on the real kernel, injected) leaves a state from which the next
/// call finishes.
#[test]
fn remove_owned_resumes_after_a_failed_write() {
    require_root!("remove_owned_resumes_after_a_failed_write");
    let ns = node("removefail", 1500);
    ns.dp(Settings::default(), |dp| dp.reconcile(&desired(1450, 1400)))
        .expect("reconcile");
    let (first, second) = dataplane_linux::netlink::in_netns(&ns.path(), || {
        let k = dataplane_linux::fake::Faulty::new(
            dataplane_linux::NetlinkKernel::new().expect("netlink"),
        );
        let mut dp = dataplane_linux::Dataplane::new(k, Settings::default());
        // Two rules, then the routes: the fourth write is a route delete.
        dp.kernel_mut().fail_in(3, 16);
        let first = dp.remove_owned();
        dp.kernel_mut().clear();
        (first, dp.remove_owned())
    })
    .expect("enter namespace");
    let err = first.expect_err("injected failure");
    assert_eq!(err.kind(), Some(ErrorKind::Transient));
    let second = second.expect("the next removal finishes");
    assert!(!second.writes.is_empty());
    assert!(!ns.try_sh("ip link show vxlan0").status.success());
    assert!(ns.sh("ip route show table 100").trim().is_empty());
    assert!(!ns.sh("ip rule show").contains("lookup 100"));
}
