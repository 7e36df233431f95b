//! Route MTU changes through dataplane-linux against `ip -batch` doing the same, side by side
//! in one private network namespace.
//! Root only: anything missing is a skip reason, never a failure.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use dataplane_linux::netlink::in_netns;
use dataplane_linux::{
    Dataplane, DesiredState, HopProtocol, NetlinkKernel, NextHop, RouteSpec, Settings,
    TunnelDevice, TunnelKind,
};
use test_utils::netns::Ns;

fn prefix(i: usize) -> String {
    format!("10.{}.{}.0/24", i / 256, i % 256)
}

fn desired(n: usize, mtu: u32) -> DesiredState {
    let peer = IpAddr::from([192, 168, 0, 2]);
    let gw = IpAddr::from([10, 250, 0, 1]);
    DesiredState {
        identity_addr: IpAddr::from([192, 168, 0, 1]),
        devices: vec![TunnelDevice {
            name: "vxlan0".into(),
            kind: TunnelKind::Vxlan,
            mtu: 1450,
        }],
        wireguard_mtus: vec![],
        routes: (0..n)
            .map(|i| RouteSpec {
                destination: prefix(i).parse().unwrap_or_default(),
                mtu,
                next_hops: vec![NextHop {
                    device: "vxlan0".into(),
                    protocol: HopProtocol::Tunnel(TunnelKind::Vxlan),
                    peer_underlay: peer,
                    peer_identity: peer,
                    pod_gateway: gw,
                }],
            })
            .collect(),
        fabric: None,
    }
}

fn ip_batch(ns: &str, n: usize, mtu: u32) -> Result<Duration, String> {
    let mut batch = String::with_capacity(n * 120);
    for i in 0..n {
        let _ = writeln!(
            batch,
            "route replace {} encap ip id 1 dst 192.168.0.2 via 10.250.0.1 dev vxlan0 onlink mtu {mtu} table 100 proto 250",
            prefix(i)
        );
    }
    let file = std::env::temp_dir().join(format!("{ns}-{mtu}.batch"));
    std::fs::write(&file, batch).map_err(|e| e.to_string())?;
    let t = Instant::now();
    let out = Command::new("ip")
        .args(["-n", ns, "-batch"])
        .arg(&file)
        .output();
    let d = t.elapsed();
    let _ = std::fs::remove_file(&file);
    match out {
        Ok(o) if o.status.success() => Ok(d),
        Ok(o) => Err(format!(
            "ip -batch failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("ip -batch: {e}")),
    }
}

/// What one comparison measured.
#[derive(Clone, Debug)]
pub struct RouteMtu {
    /// Routes changed per sample.
    pub routes: usize,
    /// Adapter reconciles (read, plan, write, read back), one per sample.
    pub adapter: Vec<Duration>,
    /// Writes of the last adapter reconcile.
    pub writes: usize,
    /// `ip -batch` runs of the same replaces, one per sample (interleaved with the adapter's).
    pub ip_batch: Vec<Duration>,
    /// Routes read back at the last sample's MTU.
    pub verified: usize,
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Installs `n` routes, then changes all their MTUs `samples` times through the adapter and
/// through `ip -batch`, alternately. `Err` is the reason it was skipped.
pub fn route_mtu(n: usize, samples: usize) -> Result<RouteMtu, String> {
    if !is_root() {
        return Err("needs root (creates a network namespace)".into());
    }
    let ns = Ns::try_new("perf")?;
    ns.check(
        "ip link add eth0 type veth peer name eth0p && \
         ip addr add 192.168.0.1/24 dev eth0 && ip link set eth0 up && ip link set eth0p up",
    )
    .map_err(|e| format!("namespace setup failed: {e}"))?;
    let path = ns.path();
    let nsname = ns.name.clone();
    let res = in_netns(&path, move || -> Result<RouteMtu, String> {
        let k = NetlinkKernel::new().map_err(|e| e.to_string())?;
        let mut dp = Dataplane::new(k, Settings::default());
        dp.reconcile(&desired(n, 1400))
            .map_err(|e| format!("adapter install failed: {e}"))?;
        let mut out = RouteMtu {
            routes: n,
            adapter: Vec::new(),
            writes: 0,
            ip_batch: Vec::new(),
            verified: 0,
        };
        for s in 0..samples {
            let step = u32::try_from(s).unwrap_or(0).saturating_mul(4);
            let want = desired(n, 1390 - step);
            let t = Instant::now();
            let rep = dp
                .reconcile(&want)
                .map_err(|e| format!("adapter reconcile failed: {e}"))?;
            out.adapter.push(t.elapsed());
            out.writes = rep.writes.len();
            out.ip_batch.push(ip_batch(&nsname, n, 1200 - step)?);
        }
        Ok(out)
    });
    let mut out = match res {
        Ok(r) => r?,
        Err(e) => return Err(format!("netns: {e}")),
    };
    let last = 1200 - u32::try_from(samples.saturating_sub(1)).unwrap_or(0) * 4;
    out.verified = ns
        .check(&format!("ip route show table 100 | grep -c 'mtu {last}'"))
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0);
    Ok(out)
}
