//! Reading a node's kernel back with `ip -j` (links with `-d`, table 100, the pod's interface),
//! comparing it with what `resolve` computed, and checking the write-order inequalities.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::lab::{Ns, Want};
use serde_json::Value;

/// One link as `ip -j -d link` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkInfo {
    pub mtu: u32,
    pub master: Option<String>,
    pub kind: String,
}

/// One route of table 100.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteInfo {
    pub dst: String,
    pub mtu: Option<u32>,
    pub devs: Vec<String>,
}

fn num(v: &Value) -> u32 {
    v.as_u64().and_then(|x| u32::try_from(x).ok()).unwrap_or(0)
}

pub fn links(node: &Ns) -> BTreeMap<String, LinkInfo> {
    let v: Value =
        serde_json::from_str(&node.ip(&["-j", "-d", "link", "show"])).expect("ip -j link");
    let mut out = BTreeMap::new();
    for l in v.as_array().into_iter().flatten() {
        let name = l["ifname"].as_str().unwrap_or_default().to_string();
        out.insert(
            name,
            LinkInfo {
                mtu: num(&l["mtu"]),
                master: l["master"].as_str().map(str::to_string),
                kind: l["linkinfo"]["info_kind"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            },
        );
    }
    out
}

/// `ip -j route` prints an encapsulation's outer destination as a second `"dst"` key of the
/// same object (after `"encap"`), which a JSON map would let override the route's own
/// destination: rename it to `"encap_dst"` first.
pub fn fix_encap_dst(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let mut rest = json;
    while let Some(i) = rest.find("\"encap\":") {
        let (head, tail) = rest.split_at(i);
        out.push_str(head);
        match tail.find("\"dst\":") {
            Some(j) => {
                out.push_str(&tail[..j]);
                out.push_str("\"encap_dst\":");
                rest = &tail[j + "\"dst\":".len()..];
            }
            None => {
                rest = tail;
                break;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `ip` prints a host route's destination without its length (`10.20.0.4`); `resolve` writes
/// `10.20.0.4/32`. Destinations are compared in the latter form.
pub fn with_prefix_len(dst: &str) -> String {
    if dst.contains('/') || dst == "default" {
        dst.to_string()
    } else if dst.contains(':') {
        format!("{dst}/128")
    } else {
        format!("{dst}/32")
    }
}

pub fn routes(node: &Ns) -> Vec<RouteInfo> {
    let out = std::process::Command::new("ip")
        .args(["-n", &node.name, "-j", "route", "show", "table", "100"])
        .output()
        .expect("run ip");
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        // Before the agent's first route the table does not exist: nothing held.
        assert!(
            err.contains("does not exist"),
            "[{}] ip -j route show table 100: {err}",
            node.name
        );
        return Vec::new();
    }
    let v: Value = serde_json::from_str(&fix_encap_dst(&String::from_utf8_lossy(&out.stdout)))
        .expect("ip -j route");
    let mut out = Vec::new();
    for r in v.as_array().into_iter().flatten() {
        let mtu = r["metrics"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|m| m.get("mtu"))
            .map(num);
        let mut devs: Vec<String> = r["dev"]
            .as_str()
            .map(|d| vec![d.to_string()])
            .unwrap_or_default();
        for h in r["nexthops"].as_array().into_iter().flatten() {
            if let Some(d) = h["dev"].as_str() {
                devs.push(d.to_string());
            }
        }
        out.push(RouteInfo {
            dst: with_prefix_len(r["dst"].as_str().unwrap_or_default()),
            mtu,
            devs,
        });
    }
    out
}

/// `ip -j` of one route of table 100 in `family` (`-4`/`-6`), the encapsulation's `dst` renamed
/// `encap_dst`.
pub fn table_route(ns: &Ns, family: &str, dst: &str) -> Option<Value> {
    let out = ns.ip(&[family, "-j", "-d", "route", "show", "table", "100", dst]);
    let v: Value = serde_json::from_str(&fix_encap_dst(&out)).expect("ip -j route");
    v.as_array()?.first().cloned()
}

/// The MTU metric of a route read by [`table_route`].
pub fn route_mtu(r: &Value) -> Option<u64> {
    r["metrics"]
        .as_array()?
        .iter()
        .find_map(|m| m.get("mtu"))
        .and_then(Value::as_u64)
}

pub fn link_mac(ns: &Ns, dev: &str) -> String {
    let v: Value = serde_json::from_str(&ns.ip(&["-j", "link", "show", dev])).expect("ip -j link");
    v[0]["address"].as_str().unwrap_or_default().to_string()
}

pub fn neighbour_mac(ns: &Ns, dev: &str, addr: &str) -> String {
    let v: Value = serde_json::from_str(&ns.ip(&["-j", "neigh", "show", "dev", dev, addr]))
        .expect("ip -j neigh");
    v[0]["lladdr"].as_str().unwrap_or_default().to_string()
}

pub fn rx_packets(ns: &Ns, dev: &str) -> u64 {
    let v: Value =
        serde_json::from_str(&ns.ip(&["-j", "-s", "link", "show", dev])).expect("ip -j -s link");
    v[0]["stats64"]["rx"]["packets"].as_u64().unwrap_or(0)
}

pub fn pod_mtu(pod: &Ns) -> Option<u32> {
    let v: Value = serde_json::from_str(&pod.ip(&["-j", "link", "show", "eth0"])).ok()?;
    v.as_array()?.first().map(|l| num(&l["mtu"]))
}

/// Everything the agent writes on one node, read at (nearly) one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    pub links: BTreeMap<String, LinkInfo>,
    pub routes: Vec<RouteInfo>,
    pub pod: Option<u32>,
}

impl Snapshot {
    pub fn read(node: &Ns, pod: &Ns) -> Snapshot {
        Snapshot {
            links: links(node),
            routes: routes(node),
            pod: pod_mtu(pod),
        }
    }

    /// Route MTUs by destination (routes with an MTU metric: the plan's routes; endpoint host
    /// routes carry none).
    pub fn route_mtus(&self) -> BTreeMap<String, u32> {
        self.routes
            .iter()
            .filter_map(|r| r.mtu.map(|m| (r.dst.clone(), m)))
            .collect()
    }

    /// Bridge ports.
    pub fn ports(&self, bridge: &str) -> Vec<(&String, &LinkInfo)> {
        self.links
            .iter()
            .filter(|(_, l)| l.master.as_deref() == Some(bridge))
            .collect()
    }

    /// What differs from `want` (empty: converged).
    pub fn diff(&self, want: &Want) -> Vec<String> {
        let mut out = Vec::new();
        for (dev, m) in &want.devices {
            match self.links.get(dev) {
                Some(l) if l.mtu == *m => {}
                other => out.push(format!(
                    "device {dev}: kernel {:?}, resolve {m}",
                    other.map(|l| l.mtu)
                )),
            }
        }
        let held = self.route_mtus();
        if held != want.routes {
            out.push(format!(
                "table 100 route MTUs: kernel {held:?}, resolve {:?}",
                want.routes
            ));
        }
        match self.links.get("cni0") {
            Some(l) if l.mtu == want.fabric => {}
            other => out.push(format!(
                "cni0: kernel {:?}, fabric {}",
                other.map(|l| l.mtu),
                want.fabric
            )),
        }
        for (name, l) in self.ports("cni0") {
            if l.mtu != want.fabric {
                out.push(format!(
                    "bridge port {name}: kernel {}, fabric {}",
                    l.mtu, want.fabric
                ));
            }
        }
        if self.pod != Some(want.fabric) {
            out.push(format!(
                "pod eth0: kernel {:?}, fabric {}",
                self.pod, want.fabric
            ));
        }
        out
    }

    /// The inequalities of an exact (static) snapshot: every route MTU ≤ each device it uses;
    /// every pod-side element (bridge, ports, pod veth) ≤ every link (the direct routes, whose
    /// MTU is a link MTU, and the tunnel devices).
    pub fn violations(&self, direct: &std::collections::BTreeSet<String>) -> Vec<String> {
        Sample {
            p1: self.pod,
            l1: self.links.clone(),
            r: self.routes.clone(),
            l2: self.links.clone(),
            p2: self.pod,
        }
        .violations(direct)
    }
}

/// A sample taken while an agent may be writing: pod, links, routes, links, pod, in this
/// order. Each value is bracketed by two reads, so the checks allow for the writes between
/// the reads without ever flagging a state the kernel did not hold: a device counts with the
/// larger of its two reads, a pod-side element with the smaller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub p1: Option<u32>,
    pub l1: BTreeMap<String, LinkInfo>,
    pub r: Vec<RouteInfo>,
    pub l2: BTreeMap<String, LinkInfo>,
    pub p2: Option<u32>,
}

impl Sample {
    pub fn read(node: &Ns, pod: &Ns) -> Sample {
        let p1 = pod_mtu(pod);
        let l1 = links(node);
        let r = routes(node);
        let l2 = links(node);
        let p2 = pod_mtu(pod);
        Sample { p1, l1, r, l2, p2 }
    }

    fn dev_max(&self, d: &str) -> Option<u32> {
        match (self.l1.get(d), self.l2.get(d)) {
            (Some(a), Some(b)) => Some(a.mtu.max(b.mtu)),
            (Some(a), None) | (None, Some(a)) => Some(a.mtu),
            (None, None) => None,
        }
    }

    fn elem_min(&self, d: &str) -> Option<u32> {
        Some(self.l1.get(d)?.mtu.min(self.l2.get(d)?.mtu))
    }

    pub fn violations(&self, direct: &std::collections::BTreeSet<String>) -> Vec<String> {
        let mut out = Vec::new();
        for r in &self.r {
            let Some(m) = r.mtu else { continue };
            for d in &r.devs {
                if let Some(dm) = self.dev_max(d) {
                    if m > dm {
                        out.push(format!("route {} MTU {m} above device {d} MTU {dm}", r.dst));
                    }
                }
            }
        }
        let mut links: Vec<(String, u32)> = self
            .r
            .iter()
            .filter(|r| direct.contains(&r.dst))
            .filter_map(|r| r.mtu.map(|m| (format!("link route {}", r.dst), m)))
            .collect();
        for (name, l) in &self.l1 {
            if l.kind == "vxlan" {
                if let Some(m) = self.dev_max(name) {
                    links.push((format!("device {name}"), m));
                }
            }
        }
        let mut pod_side: Vec<(String, u32)> = Vec::new();
        if let Some(m) = self.elem_min("cni0") {
            pod_side.push(("cni0".into(), m));
        }
        for (name, l) in &self.l1 {
            if l.master.as_deref() == Some("cni0") {
                if let Some(m) = self.elem_min(name) {
                    pod_side.push((format!("port {name}"), m));
                }
            }
        }
        if let (Some(a), Some(b)) = (self.p1, self.p2) {
            pod_side.push(("pod eth0".into(), a.min(b)));
        }
        for (e, em) in &pod_side {
            for (l, lm) in &links {
                if em > lm {
                    out.push(format!("pod-side {e} MTU {em} above {l} MTU {lm}"));
                }
            }
        }
        out
    }

    /// A compact key of the values seen (to count distinct states).
    pub fn key(&self) -> String {
        let mut k = format!("pod {:?}/{:?};", self.p1, self.p2);
        for (n, l) in &self.l2 {
            if l.kind == "vxlan" || l.kind == "bridge" || l.master.is_some() {
                k += &format!("{n}={};", l.mtu);
            }
        }
        for r in &self.r {
            if let Some(m) = r.mtu {
                k += &format!("{}={m};", r.dst);
            }
        }
        k
    }
}

/// Result of sampling one node.
#[derive(Debug, Default)]
pub struct SampleStats {
    pub samples: usize,
    pub distinct: std::collections::BTreeSet<String>,
    pub violations: Vec<String>,
    pub mean_period_ms: f64,
}

/// Samples a node every ~20 ms until `stop` is set.
pub fn sample_until(
    node: &Ns,
    pod: &Ns,
    direct: &std::collections::BTreeSet<String>,
    stop: &std::sync::atomic::AtomicBool,
) -> SampleStats {
    let mut st = SampleStats::default();
    let start = Instant::now();
    while !stop.load(std::sync::atomic::Ordering::SeqCst) {
        let t = Instant::now();
        let s = Sample::read(node, pod);
        st.samples += 1;
        for v in s.violations(direct) {
            st.violations.push(format!("sample {}: {v}", st.samples));
        }
        st.distinct.insert(s.key());
        let spent = t.elapsed();
        if let Some(rest) = std::time::Duration::from_millis(20).checked_sub(spent) {
            std::thread::sleep(rest);
        }
    }
    if st.samples > 0 {
        st.mean_period_ms = start.elapsed().as_secs_f64() * 1000.0 / st.samples as f64;
    }
    st
}

/// One netlink read: links, table 100, the pod's interface MTU.
type Read = (BTreeMap<String, LinkInfo>, Vec<RouteInfo>, Option<u32>);

fn from_netlink(st: &dataplane_linux::KernelState) -> Read {
    use dataplane_linux::model::LinkKind;
    let links = st
        .links
        .iter()
        .map(|l| {
            let kind = match &l.kind {
                LinkKind::Tunnel(dataplane_linux::TunnelKind::Vxlan) => "vxlan".to_string(),
                LinkKind::Bridge => "bridge".to_string(),
                LinkKind::Veth => "veth".to_string(),
                other => format!("{other:?}"),
            };
            (
                l.name.clone(),
                LinkInfo {
                    mtu: l.mtu,
                    master: l.master.clone(),
                    kind,
                },
            )
        })
        .collect();
    let routes = st
        .routes
        .iter()
        .map(|r| RouteInfo {
            dst: if r.destination.prefix_len() == r.destination.max_prefix_len() {
                r.destination.addr().to_string()
            } else {
                r.destination.to_string()
            },
            mtu: r.mtu,
            devs: r.hops.iter().map(|h| h.device.clone()).collect(),
        })
        .collect();
    (links, routes, st.pod_links.first().and_then(|p| p.mtu))
}

/// The same checks from netlink reads every ~2 ms inside the node's namespace (each read:
/// links, routes, then the pod's interface). Three consecutive reads A, B, C make one sample
/// (pod of A, links of B, routes of B, links of C, pod of C: in time order).
pub fn netlink_sample_until(
    node: std::path::PathBuf,
    pod: std::path::PathBuf,
    direct: std::collections::BTreeSet<String>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> SampleStats {
    dataplane_linux::netlink::in_netns(&node, move || {
        use dataplane_linux::Kernel;
        let mut k = dataplane_linux::NetlinkKernel::new().expect("netlink");
        let scope = dataplane_linux::ReadScope {
            table: 100,
            pods: vec![(pod, "eth0".to_string())],
            ..Default::default()
        };
        let mut st = SampleStats::default();
        let mut window: Vec<Read> = Vec::new();
        let start = Instant::now();
        while !stop.load(std::sync::atomic::Ordering::SeqCst) {
            // A short pause leaves the CPU to the agents and the `ip` sampler.
            std::thread::sleep(std::time::Duration::from_millis(2));
            let Ok(read) = k.read(&scope) else { continue };
            window.push(from_netlink(&read));
            if window.len() > 3 {
                window.remove(0);
            }
            if let [a, b, c] = window.as_slice() {
                let s = Sample {
                    p1: a.2,
                    l1: b.0.clone(),
                    r: b.1.clone(),
                    l2: c.0.clone(),
                    p2: c.2,
                };
                st.samples += 1;
                for v in s.violations(&direct) {
                    st.violations
                        .push(format!("netlink sample {}: {v}", st.samples));
                }
                st.distinct.insert(s.key());
            }
        }
        if st.samples > 0 {
            st.mean_period_ms = start.elapsed().as_secs_f64() * 1000.0 / st.samples as f64;
        }
        st
    })
    .expect("netns")
}
