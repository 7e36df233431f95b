//! The lab: an underlay bridge in its own namespace, node namespaces with a veth into it, a pod
//! namespace on each node's `cni0`, the manifests describing them (with the gateway's published
//! forwarding MTUs computed by `resolve`), and one agent process per node.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

static COUNTER: AtomicUsize = AtomicUsize::new(0);

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_unbounded-mtu")
}

/// Whether the end-to-end test can run here; prints the reason when not.
pub fn can_run(test: &str) -> bool {
    let uid = Command::new("id").arg("-u").output();
    if !matches!(&uid, Ok(o) if String::from_utf8_lossy(&o.stdout).trim() == "0") {
        println!("SKIP {test}: not running as root");
        return false;
    }
    for tool in ["ip", "ping"] {
        if Command::new(tool).arg("-V").output().is_err() {
            println!("SKIP {test}: `{tool}` is not installed");
            return false;
        }
    }
    let probe = format!(
        "ue2e{}p{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    );
    let ok = Command::new("ip")
        .args(["netns", "add", &probe])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        println!("SKIP {test}: cannot create a network namespace (ip netns add failed)");
        return false;
    }
    let vxlan = Command::new("ip")
        .args([
            "-n",
            &probe,
            "link",
            "add",
            "umtuprobe",
            "type",
            "vxlan",
            "external",
            "dstport",
            "4789",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    let _ = Command::new("ip").args(["netns", "del", &probe]).output();
    if !vxlan {
        println!("SKIP {test}: this kernel cannot create a flow-based VXLAN device");
        return false;
    }
    true
}

/// A network namespace created with `ip netns add`, deleted on drop.
pub struct Ns {
    pub name: String,
}

impl Ns {
    pub fn new(tag: &str) -> Ns {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let name = format!("ue2e{}-{n}-{tag}", std::process::id());
        let out = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .expect("run ip");
        assert!(out.status.success(), "ip netns add {name}: {out:?}");
        let ns = Ns { name };
        ns.sh("ip link set lo up");
        ns
    }

    pub fn path(&self) -> PathBuf {
        PathBuf::from(format!("/run/netns/{}", self.name))
    }

    /// `sh -c cmd` inside the namespace; panics on failure.
    pub fn sh(&self, cmd: &str) -> String {
        let out = self.try_sh(cmd);
        assert!(
            out.status.success(),
            "[{}] {cmd}: {}{}",
            self.name,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn try_sh(&self, cmd: &str) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.name, "sh", "-c", cmd])
            .output()
            .expect("run ip netns exec")
    }

    /// `ip -n NAME ARGS...` (no shell); stdout, or panics.
    pub fn ip(&self, args: &[&str]) -> String {
        let out = Command::new("ip")
            .arg("-n")
            .arg(&self.name)
            .args(args)
            .output()
            .expect("run ip");
        assert!(
            out.status.success(),
            "[{}] ip {args:?}: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .output();
    }
}

/// One node of the lab.
pub struct NodeDef {
    pub name: &'static str,
    pub site: &'static str,
    pub gateway: bool,
    pub addr: &'static str,
    pub underlay: u32,
    /// Pod CIDR (a /24): the node's bridge holds `.1`, its pod `.2`.
    pub pod_net: &'static str,
}

impl NodeDef {
    pub fn pod_gw(&self) -> String {
        format!("{}.1", self.pod_net)
    }
    pub fn pod_ip(&self) -> String {
        format!("{}.2", self.pod_net)
    }
    pub fn pod_cidr(&self) -> String {
        format!("{}.0/24", self.pod_net)
    }
}

/// Workers a1 and a2 in Site A (a same-Site VXLAN mesh pair), worker b1 in Site B behind an
/// underlay of 1400, gateway g1 in Site G whose Internal pool `hub` serves A and B.
pub const NODES: [NodeDef; 4] = [
    NodeDef {
        name: "a1",
        site: "A",
        gateway: false,
        addr: "10.1.0.1",
        underlay: 1500,
        pod_net: "10.101.1",
    },
    NodeDef {
        name: "a2",
        site: "A",
        gateway: false,
        addr: "10.1.0.2",
        underlay: 1500,
        pod_net: "10.101.2",
    },
    NodeDef {
        name: "b1",
        site: "B",
        gateway: false,
        addr: "10.2.0.1",
        underlay: 1400,
        pod_net: "10.102.1",
    },
    NodeDef {
        name: "g1",
        site: "G",
        gateway: true,
        addr: "10.5.0.1",
        underlay: 1500,
        pod_net: "10.105.1",
    },
];

pub fn node_def(name: &str) -> &'static NodeDef {
    NODES.iter().find(|n| n.name == name).expect("node")
}

/// Caps written into the manifests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps {
    /// `tunnelMTU` of Site A.
    pub site_a: Option<u32>,
    /// `tunnelMTU` of the assignment `spokes`.
    pub assignment: Option<u32>,
}

fn cap_line(c: Option<u32>) -> String {
    c.map(|m| format!("  tunnelMTU: {m}\n")).unwrap_or_default()
}

/// The manifests without the gateway's published values.
pub fn manifests_unpublished(caps: Caps) -> String {
    let mut y = String::new();
    for (site, node_cidr, pod_block, cap) in [
        ("A", "10.1.0.0/16", "10.101.0.0/16", caps.site_a),
        ("B", "10.2.0.0/16", "10.102.0.0/16", None),
        ("G", "10.5.0.0/16", "10.105.0.0/16", None),
    ] {
        y += &format!(
            "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata:\n  name: {site}\nspec:\n  nodeCidrs: [{node_cidr}]\n  podCidrAssignments:\n    - cidrBlocks: [{pod_block}]\n  tunnelProtocol: VXLAN\n{}",
            cap_line(cap)
        );
    }
    y += "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: GatewayPool\nmetadata:\n  name: hub\nspec:\n  type: Internal\n  nodeSelector: {gw: hub}\n  tunnelProtocol: VXLAN\n";
    y += &format!(
        "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: SiteGatewayPoolAssignment\nmetadata:\n  name: spokes\nspec:\n  sites: [A, B]\n  gatewayPools: [hub]\n  tunnelProtocol: VXLAN\n{}",
        cap_line(caps.assignment)
    );
    for n in &NODES {
        let pool = if n.gateway { ", gw: hub" } else { "" };
        let labels = format!(
            "  labels: {{net.unbounded-cloud.io/site: {}{pool}}}\n",
            n.site
        );
        y += &format!(
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {}\n{labels}  annotations:\n    mtu.unbounded-cloud.io/underlay-mtu: \"{}\"\nspec:\n  podCIDRs: [{}]\nstatus:\n  addresses:\n    - type: InternalIP\n      address: {}\n",
            n.name,
            n.underlay,
            n.pod_cidr(),
            n.addr
        );
    }
    y
}

/// What `resolve -o json` computes for one node.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Want {
    pub fabric: u32,
    pub devices: BTreeMap<String, u32>,
    /// Destination -> route MTU.
    pub routes: BTreeMap<String, u32>,
    /// Destinations of direct routes (their MTU is a link MTU).
    pub direct: BTreeSet<String>,
    /// Published forwarding MTUs (gateways).
    pub published: BTreeMap<String, u32>,
}

pub fn resolve(path: &std::path::Path) -> (BTreeMap<String, Want>, serde_json::Value) {
    let out = Command::new(bin())
        .args(["resolve", "-o", "json", "-f"])
        .arg(path)
        .output()
        .expect("run resolve");
    assert!(
        out.status.success(),
        "resolve: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("resolve json");
    let mut wants = BTreeMap::new();
    for n in v["nodes"].as_array().expect("nodes") {
        let u = |x: &serde_json::Value| u32::try_from(x.as_u64().expect("number")).expect("u32");
        let s = |x: &serde_json::Value| x.as_str().expect("string").to_string();
        let mut w = Want {
            fabric: u(&n["fabricMTU"]),
            ..Want::default()
        };
        for d in n["devices"].as_array().expect("devices") {
            w.devices.insert(s(&d["name"]), u(&d["mtu"]));
        }
        for r in n["routes"].as_array().expect("routes") {
            let dst = s(&r["destination"]);
            assert!(
                w.routes.insert(dst.clone(), u(&r["mtu"])).is_none(),
                "one route per destination here"
            );
            if r["kind"] == "direct" {
                w.direct.insert(dst);
            }
        }
        for p in n["published"].as_array().into_iter().flatten() {
            w.published.insert(s(&p["destination"]), u(&p["mtu"]));
        }
        wants.insert(s(&n["name"]), w);
    }
    (wants, v)
}

/// The whole lab.
pub struct Lab {
    pub dir: PathBuf,
    pub manifests: PathBuf,
    /// The underlay namespace (bridge `br0`), kept for the lab's lifetime.
    pub _underlay: Ns,
    pub nodes: BTreeMap<&'static str, Ns>,
    pub pods: BTreeMap<&'static str, Ns>,
    pub agents: BTreeMap<&'static str, Agent>,
}

impl Lab {
    pub fn new() -> Lab {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("umtu-e2e-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let underlay = Ns::new("ul");
        underlay.sh("ip link add br0 type bridge && ip link set br0 up");
        let mut nodes = BTreeMap::new();
        let mut pods = BTreeMap::new();
        for d in &NODES {
            let node = Ns::new(d.name);
            let pod = Ns::new(&format!("pod{}", d.name));
            let u = d.underlay;
            underlay.sh(&format!(
                "ip link add u-{name} mtu {u} type veth peer name eth0 netns {ns} mtu {u} && \
                 ip link set u-{name} master br0 && ip link set u-{name} up",
                name = d.name,
                ns = node.name
            ));
            node.sh(&format!(
                "sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
                 net.ipv4.conf.default.rp_filter=0 net.ipv4.conf.all.send_redirects=0 && \
                 ip addr add {addr}/8 dev eth0 && ip link set eth0 up && \
                 ip link add cni0 type bridge && ip addr add {gw}/24 dev cni0 && ip link set cni0 up && \
                 ip link add veth0 type veth peer name eth0 netns {pod} && \
                 ip link set veth0 master cni0 && ip link set veth0 up",
                addr = d.addr,
                gw = d.pod_gw(),
                pod = pod.name
            ));
            pod.sh(&format!(
                "ip link set eth0 up && ip addr add {ip}/24 dev eth0 && ip route add default via {gw}",
                ip = d.pod_ip(),
                gw = d.pod_gw()
            ));
            nodes.insert(d.name, node);
            pods.insert(d.name, pod);
        }
        let manifests = dir.join("cluster.yaml");
        Lab {
            dir,
            manifests,
            _underlay: underlay,
            nodes,
            pods,
            agents: BTreeMap::new(),
        }
    }

    /// Writes the manifests for `caps`: resolves them once without published values, writes the
    /// gateway's `published` values as its GatewayPoolNode annotation (what its agent would
    /// publish), and replaces the agents' file atomically. Returns what `resolve` computes from
    /// the final file, and the published values written.
    pub fn write_manifests(&self, caps: Caps) -> (BTreeMap<String, Want>, BTreeMap<String, u32>) {
        let bare = manifests_unpublished(caps);
        let pre = self.dir.join("unpublished.yaml");
        std::fs::write(&pre, &bare).expect("write");
        let (pre_wants, _) = resolve(&pre);
        let published = pre_wants["g1"].published.clone();
        let json = serde_json::to_string(&published).expect("json");
        let full = format!(
            "{bare}---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: GatewayPoolNode\nmetadata:\n  name: g1\n  annotations:\n    mtu.unbounded-cloud.io/forwarding-mtus: '{json}'\nspec:\n  nodeName: g1\n  gatewayPool: hub\n  site: G\n"
        );
        let tmp = self.dir.join("cluster.yaml.tmp");
        std::fs::write(&tmp, &full).expect("write");
        std::fs::rename(&tmp, &self.manifests).expect("rename");
        let (wants, _) = resolve(&self.manifests);
        (wants, published)
    }

    pub fn spawn_agent(&mut self, name: &'static str) {
        let d = node_def(name);
        let child = spawn_node_agent(
            name,
            &self.manifests,
            &self.nodes[name],
            &self.pods[name],
            d.underlay,
            &self.dir,
        );
        self.agents.insert(name, Agent { child });
    }

    /// SIGKILL (Child::kill) of the agent of `name`, and reaps it.
    pub fn kill_agent(&mut self, name: &str) {
        if let Some(mut a) = self.agents.remove(name) {
            a.stop();
        }
    }

    pub fn agent_log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("agent-{name}.log"))).unwrap_or_default()
    }

    /// Waits until every node's kernel equals `wants` (or panics after `timeout`).
    pub fn wait_converged(&self, wants: &BTreeMap<String, Want>, timeout: Duration) -> Duration {
        self.wait_nodes(wants, &NODES.map(|d| d.name), timeout)
    }

    /// Waits until the kernels of `names` equal `wants` (or panics after `timeout`).
    pub fn wait_nodes(
        &self,
        wants: &BTreeMap<String, Want>,
        names: &[&str],
        timeout: Duration,
    ) -> Duration {
        let start = Instant::now();
        loop {
            let mut diffs = Vec::new();
            for name in names {
                let snap = crate::kernel::Snapshot::read(&self.nodes[name], &self.pods[name]);
                for m in snap.diff(&wants[*name]) {
                    diffs.push(format!("{name}: {m}"));
                }
            }
            if diffs.is_empty() {
                return start.elapsed();
            }
            if start.elapsed() > timeout {
                let logs: Vec<String> = NODES
                    .iter()
                    .map(|d| {
                        format!(
                            "--- agent {} ---\n{}",
                            d.name,
                            tail(&self.agent_log(d.name), 20)
                        )
                    })
                    .collect();
                panic!(
                    "not converged after {timeout:?}:\n{}\n{}",
                    diffs.join("\n"),
                    logs.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

impl Drop for Lab {
    fn drop(&mut self) {
        let names: Vec<&str> = self.agents.keys().copied().collect();
        for n in names {
            self.kill_agent(n);
        }
        if std::env::var_os("E2E_KEEP").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// One agent process (started by this test; killed by its own handle only).
pub struct Agent {
    pub child: Child,
}

impl Agent {
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ping -M do -s SIZE -c 1 -W 2 DST` from a pod: exit code and combined output.
pub fn ping(pod: &Ns, dst: &str, size: u32) -> (Option<i32>, String) {
    let o = pod.try_sh(&format!("ping -M do -s {size} -c 1 -W 2 {dst} 2>&1"));
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

/// Starts `unbounded-mtu agent --manifests` for node `name` inside its namespace (`--netns`),
/// with the pod bridge `cni0` and the pod's `eth0`, logging to `<dir>/agent-<name>.log`.
pub fn spawn_node_agent(
    name: &str,
    manifests: &std::path::Path,
    node: &Ns,
    pod: &Ns,
    underlay: u32,
    dir: &std::path::Path,
) -> std::process::Child {
    spawn_node_agent_with(
        name,
        manifests,
        node,
        pod,
        dir,
        &["--underlay-mtu", &underlay.to_string()],
    )
}

/// [`spawn_node_agent`] with `underlay_args` (e.g. `--underlay-mtu N`, or `--detect-underlay`)
/// in place of its `--underlay-mtu`.
pub fn spawn_node_agent_with(
    name: &str,
    manifests: &std::path::Path,
    node: &Ns,
    pod: &Ns,
    dir: &std::path::Path,
    underlay_args: &[&str],
) -> std::process::Child {
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(format!("agent-{name}.log")))
        .expect("log");
    Command::new(bin())
        .args(["agent", "--node-name", name, "--manifests"])
        .arg(manifests)
        .arg("--netns")
        .arg(node.path())
        .args(underlay_args)
        .args(["--bridge", "cni0", "--listen", "127.0.0.1:0", "--pod"])
        .arg(format!("{}:eth0", pod.path().display()))
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("spawn agent")
}
