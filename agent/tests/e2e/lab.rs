//! What the labs share: network namespaces; a [`Lab`] of nodes, each plugged into the lab's
//! connecting namespace and holding a pod namespace on its `cni0`, with one agent process per
//! node, waiting until the kernels equal what `resolve` computes; pings. And the hub lab
//! ([`Lab::hub`]): an underlay bridge, four nodes, and the manifests describing them (with the
//! gateway's published forwarding MTUs computed by `resolve`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::OpenOptions;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use test_utils::netns::Ns;

static COUNTER: AtomicUsize = AtomicUsize::new(0);

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_unbounded-mtu")
}

/// Whether the end-to-end test can run here (root, network namespaces, `ip` and `ping`, a
/// flow-based VXLAN device); prints the reason when not.
pub fn can_run(test: &str) -> bool {
    use test_utils::netns::Need;
    test_utils::netns::can_run(
        test,
        &[Need::Tool("ip"), Need::Tool("ping"), Need::FlowVxlan],
    )
}

/// How long an agent may take to bring its node to what `resolve` computes.
pub const CONVERGE: Duration = Duration::from_secs(30);

/// A node's pod CIDR, a /24 given by its first three octets: the node's bridge holds `.1`, its
/// pod `.2`.
#[derive(Clone, Copy, Debug)]
pub struct PodNet(pub &'static str);

impl PodNet {
    pub fn gw(&self) -> String {
        format!("{}.1", self.0)
    }
    pub fn ip(&self) -> String {
        format!("{}.2", self.0)
    }
    pub fn cidr(&self) -> String {
        format!("{}.0/24", self.0)
    }
}

/// One node of the hub lab.
pub struct NodeDef {
    pub name: &'static str,
    pub site: &'static str,
    pub gateway: bool,
    pub addr: &'static str,
    pub underlay: u32,
    pub pod: PodNet,
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
        pod: PodNet("10.101.1"),
    },
    NodeDef {
        name: "a2",
        site: "A",
        gateway: false,
        addr: "10.1.0.2",
        underlay: 1500,
        pod: PodNet("10.101.2"),
    },
    NodeDef {
        name: "b1",
        site: "B",
        gateway: false,
        addr: "10.2.0.1",
        underlay: 1400,
        pod: PodNet("10.102.1"),
    },
    NodeDef {
        name: "g1",
        site: "G",
        gateway: true,
        addr: "10.5.0.1",
        underlay: 1500,
        pod: PodNet("10.105.1"),
    },
];

pub fn node_def(name: &str) -> &'static NodeDef {
    NODES.iter().find(|n| n.name == name).expect("node")
}

/// Caps written into the hub lab's manifests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Caps {
    /// `tunnelMTU` of Site A.
    pub site_a: Option<u32>,
    /// `tunnelMTU` of the assignment `spokes`.
    pub assignment: Option<u32>,
}

/// The tunnel protocols of the hub lab: its Sites' (the mesh inside Site A), and the pool's and
/// the assignment's (the workers' links to the gateway).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Protocols {
    pub sites: &'static str,
    pub hub: &'static str,
}

/// VXLAN everywhere: what every host kernel the tests run on can carry.
pub const VXLAN: Protocols = Protocols {
    sites: "VXLAN",
    hub: "VXLAN",
};

/// The WireGuard port of the gateway's devices, and so the name of the workers' devices
/// towards it (`wg<port>`).
pub const WIREGUARD_PORT: u16 = 51820;

fn cap_line(c: Option<u32>) -> String {
    c.map(|m| format!("  tunnelMTU: {m}\n")).unwrap_or_default()
}

/// The manifests without the gateway's published values.
pub fn manifests_unpublished(caps: Caps, protocols: Protocols) -> String {
    let mut y = String::new();
    for (site, node_cidr, pod_block, cap) in [
        ("A", "10.1.0.0/16", "10.101.0.0/16", caps.site_a),
        ("B", "10.2.0.0/16", "10.102.0.0/16", None),
        ("G", "10.5.0.0/16", "10.105.0.0/16", None),
    ] {
        y += &format!(
            "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: Site\nmetadata:\n  name: {site}\nspec:\n  nodeCidrs: [{node_cidr}]\n  podCidrAssignments:\n    - cidrBlocks: [{pod_block}]\n  tunnelProtocol: {}\n{}",
            protocols.sites,
            cap_line(cap)
        );
    }
    y += &format!(
        "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: GatewayPool\nmetadata:\n  name: hub\nspec:\n  type: Internal\n  nodeSelector: {{gw: hub}}\n  tunnelProtocol: {}\n",
        protocols.hub
    );
    if protocols.hub == "WireGuard" {
        // The gateway's WireGuard port names the workers' devices towards it.
        let g1 = node_def("g1");
        y += &format!(
            "status:\n  nodes:\n    - {{name: g1, siteName: G, gatewayWireguardPort: {WIREGUARD_PORT}, internalIPs: [{}], podCIDRs: [{}]}}\n",
            g1.addr,
            g1.pod.cidr()
        );
    }
    y += &format!(
        "---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: SiteGatewayPoolAssignment\nmetadata:\n  name: spokes\nspec:\n  sites: [A, B]\n  gatewayPools: [hub]\n  tunnelProtocol: {}\n{}",
        protocols.hub,
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
            n.pod.cidr(),
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

/// A lab: a temporary directory for the manifests and the agents' logs, the namespace that
/// connects the nodes (an underlay bridge or a router), one namespace per node and per pod, and
/// the agents started in them.
pub struct Lab {
    pub dir: PathBuf,
    pub manifests: PathBuf,
    /// The namespace connecting the nodes, kept for the lab's lifetime.
    pub infra: Ns,
    pub nodes: BTreeMap<&'static str, Ns>,
    pub pods: BTreeMap<&'static str, Ns>,
    pub agents: BTreeMap<&'static str, Agent>,
    /// Each node's underlay arguments for its agent (`--underlay-mtu N` or `--detect-underlay`).
    underlay_args: BTreeMap<&'static str, Vec<String>>,
    /// The hub lab's tunnel protocols.
    protocols: Protocols,
}

/// Shell commands that make `br0`, the underlay bridge, in a lab's connecting namespace.
pub const UNDERLAY_BRIDGE: &str = "ip link add br0 type bridge && ip link set br0 up";

/// Plugs `node` into the bridge `br0` of `infra` with a veth of `mtu` bytes: `u-NAME` on the
/// bridge, `eth0` in the node (not yet up).
pub fn bridge_port(infra: &Ns, name: &str, node: &Ns, mtu: u32) {
    infra.sh(&format!(
        "ip link add u-{name} mtu {mtu} type veth peer name eth0 netns {ns} mtu {mtu} && \
         ip link set u-{name} master br0 && ip link set u-{name} up",
        ns = node.name
    ));
}

impl Lab {
    /// A lab without nodes: its directory (named by `tag`) and its connecting namespace, set up
    /// by the shell commands `infra_setup`.
    pub fn new(tag: &str, infra_setup: &str) -> Lab {
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("umtu-e2e-{tag}-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let infra = Ns::new(tag);
        infra.sh(infra_setup);
        let manifests = dir.join("cluster.yaml");
        Lab {
            dir,
            manifests,
            infra,
            nodes: BTreeMap::new(),
            pods: BTreeMap::new(),
            agents: BTreeMap::new(),
            underlay_args: BTreeMap::new(),
            protocols: VXLAN,
        }
    }

    /// The hub lab: [`NODES`] on the underlay bridge, each at its own underlay MTU (veth and
    /// `--underlay-mtu`), in 10.0.0.0/8. Its manifests come from [`Lab::write_manifests`].
    pub fn hub() -> Lab {
        Lab::hub_with(VXLAN)
    }

    /// [`Lab::hub`] with its links over `protocols`.
    pub fn hub_with(protocols: Protocols) -> Lab {
        let mut lab = Lab::new("hub", UNDERLAY_BRIDGE);
        lab.protocols = protocols;
        for d in &NODES {
            lab.add_node(
                d.name,
                d.pod,
                |infra, node| bridge_port(infra, d.name, node, d.underlay),
                &format!("ip addr add {}/8 dev eth0 && ip link set eth0 up", d.addr),
                &["--underlay-mtu", &d.underlay.to_string()],
            );
        }
        lab
    }

    /// Adds node `name`: its namespace, given its `eth0` by `plug(infra, node)`; IPv4
    /// forwarding on, reverse-path filtering and redirects off (a gateway forwards out of the
    /// tunnel device it received on); `eth0` addressed and brought up by the shell commands
    /// `eth0`; the pod bridge `cni0` holding `pod.gw()`/24 with one pod namespace behind it
    /// (`pod.ip()`/24, default route via the bridge). Its agent will run with `underlay_args`.
    pub fn add_node(
        &mut self,
        name: &'static str,
        pod: PodNet,
        plug: impl FnOnce(&Ns, &Ns),
        eth0: &str,
        underlay_args: &[&str],
    ) {
        let node = Ns::new(name);
        let pod_ns = Ns::new(&format!("pod{name}"));
        plug(&self.infra, &node);
        node.sh(&format!(
            "sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 \
             net.ipv4.conf.default.rp_filter=0 net.ipv4.conf.all.send_redirects=0 \
             net.ipv4.conf.default.send_redirects=0 && \
             {eth0} && \
             ip link add cni0 type bridge && ip addr add {gw}/24 dev cni0 && ip link set cni0 up && \
             ip link add veth0 type veth peer name eth0 netns {pod_ns} && \
             ip link set veth0 master cni0 && ip link set veth0 up",
            gw = pod.gw(),
            pod_ns = pod_ns.name
        ));
        pod_ns.sh(&format!(
            "ip link set eth0 up && ip addr add {ip}/24 dev eth0 && ip route add default via {gw}",
            ip = pod.ip(),
            gw = pod.gw()
        ));
        self.nodes.insert(name, node);
        self.pods.insert(name, pod_ns);
        self.underlay_args
            .insert(name, underlay_args.iter().map(|a| a.to_string()).collect());
    }

    /// Replaces the agents' manifests file atomically (a temporary file renamed over it).
    pub fn replace_manifests(&self, yaml: &str) {
        let tmp = self.dir.join("cluster.yaml.tmp");
        std::fs::write(&tmp, yaml).expect("write");
        std::fs::rename(&tmp, &self.manifests).expect("rename");
    }

    /// Writes the hub lab's manifests for `caps`: resolves them once without published values,
    /// writes the gateway's `published` values as its GatewayPoolNode annotation (what its
    /// agent would publish), and replaces the agents' file atomically. Returns what `resolve`
    /// computes from the final file, and the published values written.
    pub fn write_manifests(&self, caps: Caps) -> (BTreeMap<String, Want>, BTreeMap<String, u32>) {
        let bare = manifests_unpublished(caps, self.protocols);
        let pre = self.dir.join("unpublished.yaml");
        std::fs::write(&pre, &bare).expect("write");
        let (pre_wants, _) = resolve(&pre);
        let published = pre_wants["g1"].published.clone();
        let json = serde_json::to_string(&published).expect("json");
        self.replace_manifests(&format!(
            "{bare}---\napiVersion: net.unbounded-cloud.io/v1alpha1\nkind: GatewayPoolNode\nmetadata:\n  name: g1\n  annotations:\n    mtu.unbounded-cloud.io/forwarding-mtus: '{json}'\nspec:\n  nodeName: g1\n  gatewayPool: hub\n  site: G\n"
        ));
        let (wants, _) = resolve(&self.manifests);
        (wants, published)
    }

    /// The WireGuard devices of every node's plan in `resolved` (`resolve -o json`), made and
    /// configured as a WireGuard deployment would (the agent only sets their MTU and routes):
    /// `wg<port>` listening on that port with a fresh key, one peer per WireGuard link, at the
    /// peer's underlay address and the port its device listens on, carrying the destinations
    /// the plan routes through that peer.
    pub fn provision_wireguard(&self, resolved: &serde_json::Value) {
        let name_of = |d: &serde_json::Value| d["name"].as_str().map(str::to_string);
        // Each node's WireGuard device (one per node in these labs) and public key.
        let mut devices: BTreeMap<&str, (String, String)> = BTreeMap::new();
        for name in self.nodes.keys() {
            let plan = plan_of(resolved, name);
            let wg: Vec<String> = plan["devices"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["protocol"] == "WireGuard")
                .filter_map(name_of)
                .collect();
            match wg.as_slice() {
                [] => continue,
                [device] => {
                    let key = self.dir.join(format!("wg-{name}.key"));
                    let public = self.nodes[name].sh(&format!(
                        "umask 077 && wg genkey | tee {} | wg pubkey",
                        key.display()
                    ));
                    devices.insert(name, (device.clone(), public.trim().to_string()));
                }
                more => panic!("{name}: one WireGuard device per node in these labs: {more:?}"),
            }
        }
        for (name, (device, _)) in &devices {
            let plan = plan_of(resolved, name);
            let port = device.trim_start_matches("wg");
            let key = self.dir.join(format!("wg-{name}.key"));
            let mut cmd = format!(
                "ip link add {device} type wireguard && wg set {device} private-key {} listen-port {port}",
                key.display()
            );
            for l in plan["links"].as_array().into_iter().flatten() {
                if l["protocol"] != "WireGuard" {
                    continue;
                }
                let peer = l["peer"].as_str().expect("peer");
                let (peer_device, public) = &devices[peer];
                let allowed: Vec<&str> = plan["routes"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|r| {
                        r["via"]
                            .as_array()
                            .is_some_and(|v| v.iter().any(|x| x == peer))
                    })
                    .filter_map(|r| r["destination"].as_str())
                    .collect();
                cmd += &format!(
                    " peer {public} endpoint {}:{} allowed-ips {}",
                    node_def(peer).addr,
                    peer_device.trim_start_matches("wg"),
                    allowed.join(",")
                );
            }
            cmd += &format!(" && ip link set {device} up");
            self.nodes[name].sh(&cmd);
        }
    }

    /// Starts the agent of node `name` with its underlay arguments.
    pub fn spawn_agent(&mut self, name: &'static str) {
        let args: Vec<&str> = self.underlay_args[name]
            .iter()
            .map(String::as_str)
            .collect();
        let child = spawn_node_agent(
            name,
            &self.manifests,
            &self.nodes[name],
            &self.pods[name],
            &self.dir,
            &args,
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

    /// Waits until every node's kernel equals `wants` (or panics after [`CONVERGE`]).
    pub fn wait_converged(&self, wants: &BTreeMap<String, Want>) -> Duration {
        let names: Vec<&str> = self.nodes.keys().copied().collect();
        self.wait_nodes(wants, &names)
    }

    /// Waits until the kernels of `names` equal `wants` (or panics after [`CONVERGE`], with the
    /// differences and the end of every agent's log).
    pub fn wait_nodes(&self, wants: &BTreeMap<String, Want>, names: &[&str]) -> Duration {
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
            if start.elapsed() > CONVERGE {
                let logs: Vec<String> = self
                    .nodes
                    .keys()
                    .map(|n| format!("--- agent {n} ---\n{}", tail(&self.agent_log(n), 40)))
                    .collect();
                panic!(
                    "not converged after {CONVERGE:?}:\n{}\n{}",
                    diffs.join("\n"),
                    logs.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

pub fn tail(s: &str, n: usize) -> String {
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

/// `ping -M do -s SIZE -c 1 -W WAIT [-I SRC] DST` in `ns`: exit code and combined output.
pub fn ping_with(
    ns: &Ns,
    src: Option<&str>,
    dst: &str,
    size: u32,
    wait: u32,
) -> (Option<i32>, String) {
    let from = src.map(|s| format!("-I {s} ")).unwrap_or_default();
    let o = ns.try_sh(&format!(
        "ping -M do -s {size} -c 1 -W {wait} {from}{dst} 2>&1"
    ));
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

/// `ping -M do -s SIZE -c 1 -W 2 DST` from a pod: exit code and combined output.
pub fn ping(pod: &Ns, dst: &str, size: u32) -> (Option<i32>, String) {
    ping_with(pod, None, dst, size, 2)
}

/// [`ping_with`] (waiting 2 s) up to five times until one passes (the underlay's first ARP or
/// neighbour discovery can cost the first packet); the last try's result.
pub fn ping_ok(ns: &Ns, src: Option<&str>, dst: &str, size: u32) -> (Option<i32>, String) {
    let mut last = (None, String::new());
    for _ in 0..5 {
        last = ping_with(ns, src, dst, size, 2);
        if last.0 == Some(0) {
            break;
        }
    }
    last
}

/// The first line of `out` containing any of `words` (lower case), trimmed; empty if none.
pub fn first_line_with<'a>(out: &'a str, words: &[&str]) -> &'a str {
    out.lines()
        .find(|l| words.iter().any(|w| l.to_lowercase().contains(w)))
        .unwrap_or("")
        .trim()
}

/// Node `name`'s plan in `resolve -o json` output.
pub fn plan_of<'a>(json: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    json["nodes"]
        .as_array()
        .and_then(|ns| ns.iter().find(|n| n["name"] == name))
        .unwrap_or_else(|| panic!("{name} not in resolve"))
}

/// The link to `peer` in a plan from [`plan_of`].
pub fn plan_link<'a>(plan: &'a serde_json::Value, peer: &str) -> &'a serde_json::Value {
    plan["links"]
        .as_array()
        .and_then(|ls| ls.iter().find(|l| l["peer"] == peer))
        .unwrap_or_else(|| panic!("{}: no link to {peer}: {}", plan["name"], plan["links"]))
}

/// The route to `destination` in a plan from [`plan_of`].
pub fn plan_route<'a>(plan: &'a serde_json::Value, destination: &str) -> &'a serde_json::Value {
    plan["routes"]
        .as_array()
        .and_then(|rs| rs.iter().find(|r| r["destination"] == destination))
        .unwrap_or_else(|| {
            panic!(
                "{}: no route {destination}: {}",
                plan["name"], plan["routes"]
            )
        })
}

/// Starts `unbounded-mtu agent --manifests` for node `name` inside its namespace (`--netns`),
/// with `underlay_args` (`--underlay-mtu N` or `--detect-underlay`), the pod bridge `cni0` and
/// the pod's `eth0`, logging to `<dir>/agent-<name>.log`.
pub fn spawn_node_agent(
    name: &str,
    manifests: &std::path::Path,
    node: &Ns,
    pod: &Ns,
    dir: &std::path::Path,
    underlay_args: &[&str],
) -> std::process::Child {
    spawn_node_agent_from(
        name,
        &["--manifests".as_ref(), manifests.as_os_str()],
        node,
        pod,
        dir,
        underlay_args,
    )
}

/// [`spawn_node_agent`] reading the cluster from `source` (`--manifests FILE`, or
/// `--kubeconfig FILE` for API mode).
pub fn spawn_node_agent_from(
    name: &str,
    source: &[&std::ffi::OsStr],
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
        .args(["agent", "--node-name", name])
        .args(source)
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
