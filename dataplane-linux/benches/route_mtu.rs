//! 10,000 route MTU changes: the adapter (read, plan, 10,000 netlink replaces, read back)
//! versus `ip -batch` doing the same replaces, side by side in one private network namespace.
//!
//! Run as root: `cargo bench -p dataplane-linux --bench route_mtu`
//! (`ROUTES=N` changes the count). Prints a skip reason when not root.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::process::Command;
use std::time::{Duration, Instant};

use dataplane_linux::netlink::in_netns;
use dataplane_linux::{
    Dataplane, DesiredState, HopProtocol, Kernel, NetlinkKernel, NextHop, Op, RouteSpec, Settings,
    TunnelDevice, TunnelKind,
};

struct Ns(String);

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).output();
    }
}

fn sh(ns: &str, cmd: &str) -> Result<String, String> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "sh", "-c", cmd])
        .output()
        .map_err(|e| e.to_string())?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("{cmd}: {}", String::from_utf8_lossy(&out.stderr)))
    }
}

fn prefix(i: usize) -> String {
    format!("10.{}.{}.0/24", i / 256, i % 256)
}

fn desired(n: usize, mtu: u32) -> DesiredState {
    let peer: IpAddr = "192.168.0.2"
        .parse()
        .unwrap_or(IpAddr::from([192, 168, 0, 2]));
    let gw: IpAddr = IpAddr::from([10, 250, 0, 1]);
    DesiredState {
        underlay_addr: IpAddr::from([192, 168, 0, 1]),
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
                    pod_gateway: gw,
                }],
            })
            .collect(),
        fabric: None,
    }
}

fn main() {
    let is_root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    if !is_root {
        println!("SKIP route_mtu: needs root (creates a network namespace)");
        return;
    }
    let n: usize = std::env::var("ROUTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let name = format!("umtu-bench-{}", std::process::id());
    let ok = Command::new("ip")
        .args(["netns", "add", &name])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        println!("SKIP route_mtu: ip netns add failed");
        return;
    }
    let ns = Ns(name);
    if let Err(e) = sh(
        &ns.0,
        "ip link set lo up && ip link add eth0 type veth peer name eth0p && \
         ip addr add 192.168.0.1/24 dev eth0 && ip link set eth0 up && ip link set eth0p up",
    ) {
        println!("SKIP route_mtu: setup failed: {e}");
        return;
    }

    let path = std::path::PathBuf::from(format!("/run/netns/{}", ns.0));
    let res = in_netns(
        &path,
        move || -> Result<(Duration, usize, Duration, Duration), String> {
            let k = NetlinkKernel::new().map_err(|e| e.to_string())?;
            let mut dp = Dataplane::new(k, Settings::default());
            let t = Instant::now();
            dp.reconcile(&desired(n, 1400)).map_err(|e| e.to_string())?;
            let install = t.elapsed();
            let t = Instant::now();
            let rep = dp.reconcile(&desired(n, 1300)).map_err(|e| e.to_string())?;
            let change = t.elapsed();
            // The bare executor: the same writes without read, plan and read back.
            let s = Settings::default();
            let ops: Vec<Op> = desired(n, 1250)
                .routes
                .iter()
                .map(|r| Op::ReplaceRoute(dataplane_linux::plan::kernel_route(r, &s)))
                .collect();
            let t = Instant::now();
            for op in &ops {
                dp.kernel_mut().apply(op).map_err(|e| e.to_string())?;
            }
            let bare = t.elapsed();
            Ok((install, rep.writes.len(), change, bare))
        },
    );
    let (install, writes, change, bare) = match res {
        Ok(Ok(v)) => v,
        Ok(Err(e)) | Err(dataplane_linux::Error::Netlink(e)) => {
            println!("SKIP route_mtu: adapter failed: {e}");
            return;
        }
        Err(e) => {
            println!("SKIP route_mtu: {e}");
            return;
        }
    };

    let mut batch = String::with_capacity(n * 120);
    for i in 0..n {
        let _ = writeln!(
            batch,
            "route replace {} encap ip id 1 dst 192.168.0.2 via 10.250.0.1 dev vxlan0 onlink mtu 1200 table 100 proto 250",
            prefix(i)
        );
    }
    let file = std::env::temp_dir().join(format!("{}.batch", ns.0));
    if let Err(e) = std::fs::write(&file, batch) {
        println!("SKIP route_mtu: {e}");
        return;
    }
    let t = Instant::now();
    let out = Command::new("ip")
        .args(["-n", &ns.0, "-batch"])
        .arg(&file)
        .output();
    let ip_batch = t.elapsed();
    let _ = std::fs::remove_file(&file);
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            println!(
                "SKIP route_mtu: ip -batch failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            return;
        }
        Err(e) => {
            println!("SKIP route_mtu: {e}");
            return;
        }
    }
    let check = sh(&ns.0, "ip route show table 100 | grep -c 'mtu 1200'").unwrap_or_default();

    let secs = |d: Duration| d.as_secs_f64();
    println!("route_mtu: {n} routes over vxlan0 (encap ip, onlink, MTU metric), table 100");
    println!("  adapter initial install        : {:8.3} s", secs(install));
    println!(
        "  adapter reconcile (MTU change) : {:8.3} s  ({writes} writes; read + plan + write + read back)",
        secs(change)
    );
    println!(
        "  adapter executor only          : {:8.3} s  ({n} netlink replaces, no read/plan)",
        secs(bare)
    );
    println!(
        "  ip -batch (route replace)      : {:8.3} s  ({} routes read back at mtu 1200)",
        secs(ip_batch),
        check.trim()
    );
    println!(
        "  ratio adapter reconcile / ip -batch = {:.2}",
        secs(change) / secs(ip_batch)
    );
    println!(
        "  ratio adapter executor  / ip -batch = {:.2}",
        secs(bare) / secs(ip_batch)
    );
}
