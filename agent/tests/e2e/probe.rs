//! Probing the plan on the wire (issue 20): a black hole that ordinary path MTU discovery cannot
//! see, found by `unbounded-mtu probe` and repaired by the agent's `--underlay-from-probe`, which
//! lowers and publishes the narrow pair alone (D13, issue 43).
//!
//! Topology: routers r1 and r2 joined by an inner link of MTU 1400; every node device says
//! 1500. Both routers drop their own ICMP errors (`ip rule add iif lo ipproto icmp blackhole`),
//! so a 1500-byte DF packet crossing the inner link vanishes without a "fragmentation needed".
//! - a (10.1.0.1) and d (10.4.0.1) hang off r1, b (10.2.0.1) off r2;
//! - c (10.3.0.1) is in the manifests but nowhere on the wire (r1 routes 10.3/16 nowhere).
//!
//! One Site, `tunnelProtocol: VXLAN`, no underlay annotations: every link plans
//! 1500 − 50 = 1450, so a→b sends 1500-byte packets into a 1400 path. The probe finds the same
//! black hole behind a GENEVE link (1500 − 58) and a WireGuard link (1500 − 80): it probes the
//! underlay path of every link, whatever its tunnel.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use crate::kernel::{route_mtu, table_route};
use crate::lab::{self, Lab, Ns, PodNet, ping_ok, ping_with};
use test_utils::apiserver::ApiServer;
use unbounded_mtu::k8s::ResourceKind;

const A_POD: PodNet = PodNet("10.101.1");
const B_POD: PodNet = PodNet("10.102.1");
const D_POD: PodNet = PodNet("10.104.1");
const C_POD: PodNet = PodNet("10.103.1");

/// The lab's manifests, its one Site's links over `protocol`.
fn manifests(protocol: &str) -> String {
    let mut y = format!(
        "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata:\n  name: S\nspec:\n  nodeCidrs: [10.0.0.0/12]\n  podCidrAssignments:\n    - cidrBlocks: [10.96.0.0/11]\n  tunnelProtocol: {protocol}\n"
    );
    for (name, addr, pod) in [
        ("a", "10.1.0.1", A_POD),
        ("b", "10.2.0.1", B_POD),
        ("c", "10.3.0.1", C_POD),
        ("d", "10.4.0.1", D_POD),
    ] {
        y += &format!(
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels: {{net.unbounded-cloud.io/site: S}}\nspec:\n  podCIDRs: [{cidr}]\nstatus:\n  addresses:\n    - type: InternalIP\n      address: {addr}\n",
            cidr = pod.cidr()
        );
    }
    y
}

/// The lab: r1 (the lab's connecting namespace) with a and d, r2 with b, the inner link; its
/// links over `protocol`.
fn black_hole_lab(protocol: &str) -> (Lab, Ns) {
    let mut lab = Lab::new(
        "probe",
        "sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
         net.ipv4.conf.default.rp_filter=0",
    );
    let r2 = Ns::new("r2");
    r2.sh(
        "sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
         net.ipv4.conf.default.rp_filter=0",
    );
    lab.infra.sh(&format!(
        "ip link add inner mtu 1400 type veth peer name inner netns {r2} mtu 1400 && \
         ip addr add 10.254.0.1/30 dev inner && ip link set inner up && \
         ip route add 10.2.0.0/16 via 10.254.0.2 && ip route add 10.102.0.0/16 via 10.254.0.2",
        r2 = r2.name
    ));
    r2.sh(
        "ip addr add 10.254.0.2/30 dev inner && ip link set inner up && \
         ip route add default via 10.254.0.1",
    );
    for (name, addr, pod, router) in [
        ("a", "10.1.0.1", A_POD, None),
        ("d", "10.4.0.1", D_POD, None),
        ("b", "10.2.0.1", B_POD, Some(&r2)),
    ] {
        let gw = addr.replace(".0.1", ".0.254");
        lab.add_node(
            name,
            pod,
            |r1, node| {
                let rt = router.unwrap_or(r1);
                rt.sh(&format!(
                    "ip link add r-{name} mtu 1500 type veth peer name eth0 netns {ns} mtu 1500 && \
                     ip addr add {gw}/24 dev r-{name} && ip link set r-{name} up",
                    ns = node.name
                ));
            },
            &format!("ip addr add {addr}/24 dev eth0 && ip link set eth0 up && ip route add default via {gw}"),
            &["--underlay-mtu", "1500"],
        );
    }
    lab.replace_manifests(&manifests(protocol));
    (lab, r2)
}

/// Drops the routers' own ICMP errors; false (with the reason printed) when the kernel refuses.
fn silence_routers(lab: &Lab, r2: &Ns) -> bool {
    for r in [&lab.infra, r2] {
        let o = r.try_sh("ip rule add iif lo ipproto icmp blackhole");
        if !o.status.success() {
            test_utils::netns::skip(
                "probe",
                &format!(
                    "cannot add a blackhole rule for local ICMP: {}",
                    String::from_utf8_lossy(&o.stderr)
                ),
            );
            return false;
        }
    }
    true
}

fn probe_json(lab: &Lab, node: &str, extra: &[&str]) -> (Option<i32>, serde_json::Value, Duration) {
    let started = Instant::now();
    let out = std::process::Command::new(lab::bin())
        .args(["probe", "-o", "json", "--node", node, "-f"])
        .arg(&lab.manifests)
        .arg("--netns")
        .arg(lab.nodes[node].path())
        .args(["--probe-timeout", "200ms"])
        .args(extra)
        .output()
        .expect("run probe");
    let took = started.elapsed();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "probe -o json: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), v, took)
}

fn link<'a>(report: &'a serde_json::Value, peer: &str) -> &'a serde_json::Value {
    report["links"]
        .as_array()
        .and_then(|ls| ls.iter().find(|l| l["peer"] == peer))
        .unwrap_or_else(|| panic!("no link to {peer}: {report}"))
}

#[test]
fn probe_finds_the_black_hole_that_path_mtu_discovery_misses() {
    if !lab::can_run("probe_finds_the_black_hole_that_path_mtu_discovery_misses") {
        return;
    }
    let (lab, r2) = black_hole_lab("VXLAN");
    if !silence_routers(&lab, &r2) {
        return;
    }
    let a = &lab.nodes["a"];
    // Ordinary path MTU discovery fails: a 1472-byte ping (1500 on the wire) gets no answer and
    // no error, while 1372 (1400) crosses.
    assert_eq!(
        ping_ok(a, None, "10.2.0.1", 1372).0,
        Some(0),
        "the path works"
    );
    let (code, out) = ping_with(a, None, "10.2.0.1", 1472, 1);
    assert_ne!(code, Some(0), "1500 bytes must vanish: {out}");
    assert!(
        !out.contains("Frag needed"),
        "no ICMP error may come back: {out}"
    );

    let (code, report, took) = probe_json(&lab, "a", &["--fail-on", "black-hole"]);
    assert_eq!(code, Some(1), "--fail-on black-hole: {report}");
    assert_eq!(report["kind"], "ProbeReport");
    assert_eq!(report["apiVersion"], "unbounded-mtu/v1alpha1");
    let peers: Vec<&str> = report["links"]
        .as_array()
        .expect("links")
        .iter()
        .map(|l| l["peer"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(peers, ["b", "c", "d"], "sorted by peer");
    let b = link(&report, "b");
    assert_eq!(b["verdict"], "black-hole", "{b}");
    assert_eq!(b["address"], "10.2.0.1");
    assert_eq!(b["plannedUnderlay"], 1500);
    assert_eq!(b["probedUnderlay"], 1400, "exactly the inner link: {b}");
    assert_eq!(b["linkMTU"], 1450);
    assert_eq!(
        b["probedLinkMTU"],
        serde_json::Value::Null,
        "no tunnel is up yet"
    );
    assert_eq!(b["contradicts"], "underlay of a 1500 (default)");
    let d = link(&report, "d");
    assert_eq!(d["verdict"], "ok", "{d}");
    assert_eq!(d["probedUnderlay"], 1500);
    let c = link(&report, "c");
    assert_eq!(c["verdict"], "unreachable", "{c}");
    assert_eq!(c["probedUnderlay"], serde_json::Value::Null);
    // The silent peer costs its own timeouts, concurrently with the others: 2 sizes × 3 tries
    // × 200 ms for c, while b's search runs beside it.
    assert!(took < Duration::from_secs(8), "took {took:?}");
    println!("probe of a: {took:?}\n{report:#}");

    // Without privileges: UDP answered by b's own port-unreachable finds the same 1400.
    let (code, report, _) = probe_json(&lab, "a", &["--probe-method", "udp", "--peer", "b"]);
    assert_eq!(code, Some(0), "no --fail-on: {report}");
    let b = link(&report, "b");
    assert_eq!(
        (&b["verdict"], &b["probedUnderlay"]),
        (&"black-hole".into(), &1400.into()),
        "{b}"
    );
    assert_eq!(
        report["links"].as_array().map(Vec::len),
        Some(1),
        "--peer b only"
    );
}

/// The same black hole behind a GENEVE link and behind a WireGuard link: the probe sends DF
/// packets on the underlay path of each link, whatever tunnel the link uses, and finds the
/// 1400-byte inner link under the plan's 1500 (link MTUs 1500 − 58 and 1500 − 80).
#[test]
fn probe_finds_the_black_hole_behind_geneve_and_wireguard_links() {
    if !lab::can_run("probe_finds_the_black_hole_behind_geneve_and_wireguard_links") {
        return;
    }
    for (protocol, link_mtu) in [("GENEVE", 1442), ("WireGuard", 1420)] {
        let (lab, r2) = black_hole_lab(protocol);
        if !silence_routers(&lab, &r2) {
            return;
        }
        let (code, report, _) = probe_json(&lab, "a", &["--fail-on", "black-hole", "--peer", "b"]);
        assert_eq!(code, Some(1), "{protocol}: --fail-on black-hole: {report}");
        let b = link(&report, "b");
        assert_eq!(b["verdict"], "black-hole", "{protocol}: {b}");
        assert_eq!(b["plannedUnderlay"], 1500, "{protocol}: {b}");
        assert_eq!(
            b["probedUnderlay"], 1400,
            "{protocol}: exactly the inner link: {b}"
        );
        assert_eq!(b["linkMTU"], link_mtu, "{protocol}: {b}");
        println!("{protocol}: probe of a -> b: {b}");
    }
}

/// A free local TCP port for an agent's `/status`.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// The lab's cluster as an API server holds it: the Site, the four Nodes and the Site's
/// SiteNodeSlice (what the controller publishes), for agents in API mode.
fn served() -> Vec<serde_json::Value> {
    use serde_json::json;
    let net = "net.unbounded-cloud.io/v1alpha1";
    let mut out = vec![json!({"apiVersion": net, "kind": "Site",
        "metadata": {"name": "S", "resourceVersion": "1"},
        "spec": {"nodeCidrs": ["10.0.0.0/12"],
            "podCidrAssignments": [{"cidrBlocks": ["10.96.0.0/11"]}], "tunnelProtocol": "VXLAN"}})];
    let mut entries = Vec::new();
    for (name, addr, pod) in [
        ("a", "10.1.0.1", A_POD),
        ("b", "10.2.0.1", B_POD),
        ("c", "10.3.0.1", C_POD),
        ("d", "10.4.0.1", D_POD),
    ] {
        out.push(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": "1",
                "labels": {"net.unbounded-cloud.io/site": "S"}},
            "spec": {"podCIDRs": [pod.cidr()]},
            "status": {"addresses": [{"type": "InternalIP", "address": addr}]}}));
        entries.push(json!({"name": name, "internalIPs": [addr], "podCIDRs": [pod.cidr()]}));
    }
    out.push(json!({"apiVersion": net, "kind": "SiteNodeSlice",
        "metadata": {"name": "S-0", "resourceVersion": "1"}, "siteName": "S", "nodes": entries}));
    out
}

/// A fake API server holding [`served`] on its own runtime (kept beside it), and a kubeconfig
/// for it in `dir`.
fn api_server(dir: &std::path::Path) -> (tokio::runtime::Runtime, ApiServer, std::path::PathBuf) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let kinds: Vec<(String, String)> = ResourceKind::ALL
        .into_iter()
        .map(|k| (k.api_version(), k.kind.as_str().to_string()))
        .collect();
    let kinds: Vec<(&str, &str)> = kinds
        .iter()
        .map(|(v, k)| (v.as_str(), k.as_str()))
        .collect();
    let server = runtime
        .block_on(ApiServer::start(&kinds, served()))
        .expect("fake API server");
    let config = dir.join("kubeconfig");
    server.write_kubeconfig(&config).expect("kubeconfig");
    (runtime, server, config)
}

/// The MTU of `to`'s route in the adapter's table of `ns`, once the table exists.
fn route_mtu_to(ns: &Ns, to: &str) -> Option<u64> {
    let listed = ns.try_sh("ip route show table 100 >/dev/null 2>&1");
    if !listed.status.success() {
        return None;
    }
    table_route(ns, "-4", to).as_ref().and_then(route_mtu)
}

/// Waits up to `limit` for `ns`'s route to `to` to carry `mtu`.
fn wait_route(lab: &Lab, node: &str, to: &str, mtu: u64, limit: Duration) -> Duration {
    let started = Instant::now();
    loop {
        let m = route_mtu_to(&lab.nodes[node], to);
        if m == Some(mtu) {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "{node}'s route to {to} stays at {m:?}, not {mtu}:\n{}",
            lab.agent_log(node)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// D13 on the wire: the black hole lies on the path a → b only. The agents run in API mode
/// against one fake API server; a probes every 2 s with `--underlay-from-probe`, finds that
/// its path to b carries 1400 while its path to d carries 1500, and publishes `b=1400` in its
/// Node's `path-mtu` annotation instead of lowering its underlay. Afterwards a's route to b
/// carries 1400 − 50, b reads the annotation through its Node metadata watch and lowers its
/// route back to a the same way, a DF ping from a's pod crosses to b's at exactly that size,
/// while a → d keeps its full 1450 and a's pods keep their interface MTU.
#[test]
fn the_agent_lowers_the_narrow_pair_and_publishes_it() {
    if !lab::can_run("the_agent_lowers_the_narrow_pair_and_publishes_it") {
        return;
    }
    let (mut lab, r2) = black_hole_lab("VXLAN");
    if !silence_routers(&lab, &r2) {
        return;
    }
    let (_runtime, server, kubeconfig) = api_server(&lab.dir);
    let api = ["--kubeconfig".as_ref(), kubeconfig.as_os_str()];
    let status_port = free_port();
    // b and d without probes; a probes every 2 s and lets the probe lower what it plans.
    for n in ["b", "d"] {
        let child = lab::spawn_node_agent_from(
            n,
            &api,
            &lab.nodes[n],
            &lab.pods[n],
            &lab.dir,
            &["--underlay-mtu", "1500", "--status-address", "off"],
        );
        lab.agents.insert(n, lab::Agent { child });
    }
    let status = format!("127.0.0.1:{status_port}");
    let child = lab::spawn_node_agent_from(
        "a",
        &api,
        &lab.nodes["a"],
        &lab.pods["a"],
        &lab.dir,
        &[
            "--underlay-mtu",
            "1500",
            "--status-address",
            &status,
            "--probe-interval",
            "2s",
            "--probe-timeout",
            "200ms",
            "--underlay-from-probe",
        ],
    );
    lab.agents.insert("a", lab::Agent { child });

    let took = wait_route(&lab, "a", &B_POD.cidr(), 1350, Duration::from_secs(40));
    println!("a's route to b lowered to 1350 after {took:?}");
    // Published on a's own Node once the kernel carries it (the agent applies, then
    // publishes), and its underlay left as it was.
    let started = Instant::now();
    let annotations = loop {
        let node_a = server.get("/api/v1/nodes", "a").expect("Node a");
        let annotations = node_a["metadata"]["annotations"].clone();
        if annotations["mtu.unbounded-cloud.io/path-mtu"] == "b=1400" {
            break annotations;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "a never published b=1400: {annotations}\n{}",
            lab.agent_log("a")
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    println!("published {:?} after the route", started.elapsed());
    assert_eq!(
        annotations["mtu.unbounded-cloud.io/underlay-mtu"], "1500",
        "{annotations}"
    );
    // b reads it: the pair's link is lowered at both ends.
    let took = wait_route(&lab, "b", &A_POD.cidr(), 1350, Duration::from_secs(20));
    println!("b's route to a lowered to 1350 {took:?} later");
    // a → d keeps its full size, and so do a's pods.
    assert_eq!(route_mtu_to(&lab.nodes["a"], &D_POD.cidr()), Some(1450));
    let pod_a = &lab.pods["a"];
    let eth0 = pod_a.sh("cat /sys/class/net/eth0/mtu");
    assert_eq!(eth0.trim(), "1450", "a's pod keeps its interface MTU");
    let (code, out) = ping_ok(pod_a, None, &D_POD.ip(), 1450 - 28);
    assert_eq!(code, Some(0), "1450 to d: {out}");
    // Pod to pod at the new link MTU crosses (1350 inner, 1400 outer); one byte more is
    // refused at the source with the route's MTU, never sent into the black hole.
    let (code, out) = ping_ok(pod_a, None, &B_POD.ip(), 1350 - 28);
    assert_eq!(code, Some(0), "1350 across the tunnel: {out}");
    let (code, out) = ping_with(pod_a, None, &B_POD.ip(), 1350 - 28 + 1, 1);
    assert_ne!(code, Some(0), "1351 must not cross: {out}");
    assert!(
        out.contains("mtu = 1350") || out.contains("mtu=1350"),
        "refused locally at the route MTU: {out}"
    );
    // /status: the pair in force, the node's underlay unchanged, the last probe per link.
    let v: serde_json::Value =
        serde_json::from_str(&http_get(status_port, "/status")).expect("status json");
    assert_eq!(v["pathMTUs"], serde_json::json!({"b": 1400}), "{v}");
    assert_eq!(v["underlayMTU"], 1500, "{v}");
    let probes = &v["probes"];
    assert_eq!(probes["underlayFromProbe"], true, "{probes}");
    assert_eq!(probes["lowered"]["b"], 1400, "{probes}");
    assert_eq!(link(probes, "c")["verdict"], "unreachable");
    // The next runs probe the lowered plan: the link now carries exactly what it plans, and
    // the probe that confirms the narrow path keeps the entry in force.
    let started = Instant::now();
    let b = loop {
        let v: serde_json::Value =
            serde_json::from_str(&http_get(status_port, "/status")).expect("status json");
        let b = link(&v["probes"], "b").clone();
        if b["verdict"] == "ok" {
            break b;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "b never probed ok after the lowering: {b}"
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(b["plannedUnderlay"], 1400, "{b}");
    assert_eq!(b["probedUnderlay"], 1400, "{b}");
    assert_eq!(b["linkMTU"], 1350, "{b}");
    // The tunnel carries at least the link MTU. a's vxlan0 is shared with d's link at 1450,
    // so the probe's 1351 is not refused by the device, and VXLAN sends its outer packets
    // without DF: r1 fragments the 1401-byte outer packet, and it crosses.
    let through = b["probedLinkMTU"].as_u64();
    assert!(through >= Some(1350), "{b}");
    assert_eq!(link(&v["probes"], "d")["verdict"], "ok");
    assert_eq!(route_mtu_to(&lab.nodes["a"], &B_POD.cidr()), Some(1350));
}

/// `GET path` on 127.0.0.1:port (HTTP/1.0, the body).
fn http_get(port: u16, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    write!(s, "GET {path} HTTP/1.0\r\nHost: localhost\r\n\r\n").expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    out.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or(out)
}
