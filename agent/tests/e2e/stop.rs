//! How the agent ends, on the real kernel (issue 16): SIGTERM during a long apply lets the write
//! step finish and exits 0 with every route at most its device's MTU; the deletion of its own
//! Node (API mode, against the scripted API server) removes the policy rule, its table's routes
//! and `vxlan0` before exit code 4.
//!
//! One namespace holds the node: `v0` (10.0.0.5/16, a veth whose peer `v1` stays in it) is the
//! underlay; its peers are addresses on that segment that never answer, which is all route
//! installation needs.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::kernel::{fix_encap_dst, with_prefix_len};
use crate::lab::{self, Ns};
use crate::support::{self, Mock, NODE, NODES, OWN, Reply};

/// The node namespace with its underlay.
fn node_ns() -> Ns {
    let ns = Ns::new("stop");
    ns.sh(
        "ip link add v0 type veth peer name v1 && ip addr add 10.0.0.5/16 dev v0 && \
         ip link set v0 up && ip link set v1 up",
    );
    ns
}

/// The peers' address and pod CIDR: `i` in 0..4000 → 10.0.16+i/250.(i%250+1), 10.200.x.y/28.
fn peer(i: u32) -> (String, String) {
    let addr = format!("10.0.{}.{}", 16 + i / 250, i % 250 + 1);
    let pods = format!("10.200.{}.{}/28", i / 16, (i % 16) * 16);
    (addr, pods)
}

/// Site a over VXLAN with n1 (10.0.0.5) and `peers` workers.
fn manifests(peers: u32) -> String {
    let mut y = String::from(
        "apiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata:\n  name: a\nspec:\n  \
         nodeCidrs: [10.0.0.0/16]\n  podCidrAssignments:\n    - cidrBlocks: [10.200.0.0/16, 10.201.0.0/24]\n  \
         tunnelProtocol: VXLAN\n---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: \
         {net.unbounded-cloud.io/site: a}\nstatus:\n  addresses: [{type: InternalIP, address: 10.0.0.5}]\n\
         spec:\n  podCIDRs: [10.201.0.0/28]\n",
    );
    for i in 0..peers {
        let (addr, pods) = peer(i);
        y += &format!(
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: p{i}\n  labels: \
             {{net.unbounded-cloud.io/site: a}}\nstatus:\n  addresses: [{{type: InternalIP, address: \
             {addr}}}]\nspec:\n  podCIDRs: [{pods}]\n"
        );
    }
    y
}

/// `(destination, mtu)` of the routes in table 100 and the MTU of `vxlan0` (0 when absent).
fn kernel_state(ns: &Ns) -> (Vec<(String, u32)>, u32) {
    // The table does not exist before the agent's first route, nor after the removal.
    let out = ns.try_sh("ip -j -d route show table 100");
    let routes: serde_json::Value =
        serde_json::from_str(&fix_encap_dst(&String::from_utf8_lossy(&out.stdout)))
            .unwrap_or(json!([]));
    let routes = routes
        .as_array()
        .map(|rs| {
            rs.iter()
                .map(|r| {
                    let mtu = r["metrics"]
                        .as_array()
                        .and_then(|m| m.iter().find_map(|x| x["mtu"].as_u64()))
                        .unwrap_or(0);
                    (
                        with_prefix_len(r["dst"].as_str().unwrap_or_default()),
                        u32::try_from(mtu).unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let dev = ns.try_sh("ip -j link show vxlan0");
    let device = serde_json::from_slice::<serde_json::Value>(&dev.stdout)
        .ok()
        .and_then(|v| v[0]["mtu"].as_u64())
        .unwrap_or(0);
    (routes, u32::try_from(device).unwrap_or(0))
}

fn wait_exit(child: &mut Child, limit: Duration) -> Option<i32> {
    let start = Instant::now();
    while start.elapsed() < limit {
        if let Ok(Some(st)) = child.try_wait() {
            return st.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    None
}

fn log_of(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn sigterm_during_a_long_apply_exits_0_with_every_route_at_most_its_device() {
    if !lab::can_run("sigterm_during_a_long_apply") {
        return;
    }
    const PEERS: u32 = 3000;
    let ns = node_ns();
    let dir = support::tmpdir("sigterm");
    let file = dir.join("cluster.yaml");
    std::fs::write(&file, manifests(PEERS)).expect("manifests");
    let log = dir.join("agent.log");
    let mut child = Command::new(lab::bin())
        .args(["agent", "--node-name", "n1", "--manifests"])
        .arg(&file)
        .arg("--netns")
        .arg(ns.path())
        .args(["--listen", "127.0.0.1:0", "--underlay-mtu", "1500"])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("spawn agent");
    // SIGTERM once the apply has started writing routes.
    let started = Instant::now();
    while kernel_state(&ns).0.is_empty() && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let (partial, _) = kernel_state(&ns);
    assert!(
        !partial.is_empty(),
        "the apply never started: {}",
        log_of(&log)
    );
    let sent = Instant::now();
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(term.success());
    let code = wait_exit(&mut child, Duration::from_secs(5));
    let took = sent.elapsed();
    let log_text = log_of(&log);
    assert_eq!(code, Some(0), "exit within 5 s: {log_text}");
    let (routes, device) = kernel_state(&ns);
    println!(
        "SIGTERM with {} of the routes written; exit 0 after {took:?} with {} routes, vxlan0 {device}",
        partial.len(),
        routes.len()
    );
    // The write step in progress finished: every pod route is there, none above the device.
    let pod_routes = routes
        .iter()
        .filter(|(d, _)| d.starts_with("10.200."))
        .count();
    assert_eq!(pod_routes, PEERS as usize, "{log_text}");
    assert!(device > 0, "vxlan0 exists");
    for (dst, mtu) in &routes {
        assert!(*mtu <= device, "{dst} mtu {mtu} above vxlan0 {device}");
    }
    assert!(log_text.contains("stopping"), "{log_text}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_nodes_deletion_removes_the_owned_kernel_state_before_exit_4() {
    if !lab::can_run("the_nodes_deletion_removes_the_owned_kernel_state") {
        return;
    }
    let ns = node_ns();
    // A route of another owner in the agent's table and the main table's routes stay.
    ns.sh("ip route add 10.99.0.0/16 dev v0 table 100 proto static");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let mock = rt.block_on(Mock::start());
    let site = json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "Site",
        "metadata": {"name": "a", "resourceVersion": "1"},
        "spec": {"nodeCidrs": ["10.0.0.0/16"], "podCidrAssignments": [{"cidrBlocks": ["10.200.0.0/16"]}],
            "tunnelProtocol": "VXLAN"}});
    let label = json!({support::SITE_LABEL: "a"});
    let mut n1 = support::node("n1", "u1", "100", label.clone(), "10.0.0.5");
    n1["spec"] = json!({"podCIDRs": ["10.200.0.0/24"]});
    let mut n2 = support::node("n2", "u2", "3", label.clone(), "10.0.0.6");
    n2["spec"] = json!({"podCIDRs": ["10.200.1.0/24"]});
    let slice = json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "SiteNodeSlice",
        "metadata": {"name": "a-0", "resourceVersion": "1"}, "siteName": "a",
        "nodes": [{"name": "n2", "internalIPs": ["10.0.0.6"], "podCIDRs": ["10.200.1.0/24"]}]});
    mock.on("GET", NODE, vec![Reply::Json(200, n1.clone())]);
    support::serve_collections(&mock, &[site, n1, n2, slice]);
    mock.on("PATCH", NODE, vec![support::node_patched()]);
    // The acknowledgment fails, so the startup watch of the own Node stays open.
    support::refuse_acknowledgment(&mock);
    let ch = mock.live_channel();
    mock.on_watch_selected(NODES, OWN, vec![Reply::Live(ch)]);
    let dir = support::tmpdir("exit4");
    let kc = mock.kubeconfig(&dir);
    let log = dir.join("agent.log");
    let mut child = Command::new(lab::bin())
        .args(["agent", "--kubeconfig"])
        .arg(&kc)
        .arg("--netns")
        .arg(ns.path())
        .args(["--listen", "127.0.0.1:0"])
        .env("NODE_NAME", "n1")
        .env("POD_NAME", "agent-x")
        .env("POD_NAMESPACE", "ns")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("spawn agent");
    let started = Instant::now();
    while kernel_state(&ns).1 == 0 && started.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (routes, device) = kernel_state(&ns);
    assert!(device > 0, "vxlan0 created: {}", log_of(&log));
    assert!(
        routes.iter().any(|(d, _)| d == "10.200.1.0/24"),
        "{routes:?}"
    );
    assert!(ns.ip(&["rule"]).contains("lookup 100"));
    mock.push(
        ch,
        support::event(
            "DELETED",
            support::node("n1", "u1", "101", label, "10.0.0.5"),
        ),
    );
    let code = wait_exit(&mut child, Duration::from_secs(10));
    let log_text = log_of(&log);
    assert_eq!(code, Some(4), "{log_text}");
    let (routes, device) = kernel_state(&ns);
    assert_eq!(device, 0, "vxlan0 removed: {log_text}");
    assert_eq!(
        routes,
        vec![("10.99.0.0/16".to_string(), 0)],
        "only the other owner's route stays in table 100"
    );
    assert!(!ns.ip(&["rule"]).contains("lookup 100"), "rule removed");
    assert!(
        !ns.ip(&["-6", "rule"]).contains("lookup 100"),
        "IPv6 rule removed"
    );
    assert!(ns.ip(&["link"]).contains("v0"), "the underlay stays");
    let _ = std::fs::remove_dir_all(dir);
    drop(rt);
}
