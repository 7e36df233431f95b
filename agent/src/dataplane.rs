//! From a node plan to the dataplane adapter's desired state, and applying it (optionally inside
//! a network namespace).

use dataplane_linux::{
    Dataplane, DesiredState, Fabric, HopProtocol, NetlinkKernel, NextHop, PodSpec, Report,
    RouteSpec, Settings as DpSettings, TunnelDevice, TunnelKind, WireguardMtu,
};
use mtu_solver::{DeviceRef, NodePlan};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use topology_core::decode::Protocol;
use topology_core::model::Topology;

/// Pod-side options of the agent.
#[derive(Clone, Debug, Default)]
pub struct FabricOptions {
    /// The pod bridge (None: the agent manages no fabric).
    pub bridge: Option<String>,
    /// The CNI configuration file whose `mtu` the agent owns (only where the Site manages CNI).
    pub cni_config: Option<PathBuf>,
    /// Pods to reach: network namespace path and interface name.
    pub pods: Vec<(PathBuf, String)>,
}

fn tunnel_kind(p: Protocol) -> Option<TunnelKind> {
    match p {
        Protocol::Vxlan => Some(TunnelKind::Vxlan),
        Protocol::Geneve => Some(TunnelKind::Geneve),
        Protocol::Ipip => Some(TunnelKind::Ipip),
        Protocol::WireGuard | Protocol::None => None,
    }
}

/// Converts a node plan into the adapter's desired state. Next hops the adapter cannot program
/// (no underlay address, no device name, unencapsulated links) are left out; a route left
/// without next hops is not installed.
pub fn desired_state(
    topo: &Topology,
    plan: &NodePlan,
    underlay_addr: IpAddr,
    fabric: &FabricOptions,
) -> DesiredState {
    let mut devices = Vec::new();
    let mut wireguard_mtus = Vec::new();
    for d in &plan.devices {
        let name: Option<String> = match &d.device {
            DeviceRef::Shared(n) => Some(n.to_string()),
            DeviceRef::PerPeer { name: Some(n), .. } => Some(n.clone()),
            _ => None,
        };
        let Some(name) = name else { continue };
        match tunnel_kind(d.protocol) {
            Some(kind) if matches!(d.device, DeviceRef::Shared(_)) => devices.push(TunnelDevice {
                name,
                kind,
                mtu: d.mtu.mtu.0,
            }),
            None if d.protocol == Protocol::WireGuard => wireguard_mtus.push(WireguardMtu {
                name,
                mtu: d.mtu.mtu.0,
            }),
            _ => {}
        }
    }
    let mut routes = Vec::new();
    for r in &plan.routes {
        let mut next_hops = Vec::new();
        for nh in r.next_hops.iter() {
            let device = match &nh.device {
                DeviceRef::Shared(n) => n.to_string(),
                DeviceRef::PerPeer { name: Some(n), .. } => n.clone(),
                _ => continue,
            };
            let protocol = match tunnel_kind(nh.protocol) {
                Some(k) => HopProtocol::Tunnel(k),
                None if nh.protocol == Protocol::WireGuard => HopProtocol::WireGuard,
                None => continue,
            };
            let (Some(peer_underlay), Some(pod_gateway)) = (nh.underlay_addr, nh.pod_gateway)
            else {
                continue;
            };
            next_hops.push(NextHop {
                device,
                protocol,
                peer_underlay,
                pod_gateway,
            });
        }
        if !next_hops.is_empty() {
            routes.push(RouteSpec {
                destination: r.destination,
                mtu: r.mtu.mtu.0,
                next_hops,
            });
        }
    }
    let manage_cni = topo.site(plan.site).manage_cni;
    let fabric = fabric.bridge.as_ref().map(|bridge| Fabric {
        bridge: bridge.clone(),
        mtu: plan.fabric.mtu.0,
        cni_config: if manage_cni {
            fabric.cni_config.clone()
        } else {
            None
        },
        pods: fabric
            .pods
            .iter()
            .map(|(netns, ifname)| PodSpec {
                netns: netns.clone(),
                ifname: ifname.clone(),
                host_veth: None,
            })
            .collect(),
    });
    DesiredState {
        underlay_addr,
        devices,
        wireguard_mtus,
        routes,
        fabric,
    }
}

/// Applies a desired state to the kernel (inside `netns` when given).
pub fn apply(
    desired: &DesiredState,
    settings: &DpSettings,
    netns: Option<&Path>,
) -> dataplane_linux::Result<Report> {
    let (desired, settings) = (desired.clone(), settings.clone());
    let work = move || {
        let kernel = NetlinkKernel::new()?;
        let mut dp = Dataplane::new(kernel, settings);
        dp.reconcile(&desired)
    };
    match netns {
        Some(ns) => dataplane_linux::netlink::in_netns(ns, work)?,
        None => work(),
    }
}

/// The operations a reconcile would write, without writing (`--dry-run`).
pub fn dry_run(
    desired: &DesiredState,
    settings: &DpSettings,
    netns: Option<&Path>,
) -> dataplane_linux::Result<Vec<String>> {
    let (desired, settings) = (desired.clone(), settings.clone());
    let work = move || {
        let kernel = NetlinkKernel::new()?;
        let mut dp = Dataplane::new(kernel, settings);
        let plan = dp.plan(&desired)?;
        Ok(plan
            .steps
            .iter()
            .map(|s| format!("{:?}: {:?}", s.phase, s.op))
            .collect())
    };
    match netns {
        Some(ns) => dataplane_linux::netlink::in_netns(ns, work)?,
        None => work(),
    }
}

/// The lowest underlay MTU towards any of `peers` (or the default route without peers), as the
/// kernel sees it, skipping the adapter's own devices and routes.
pub fn detect_underlay(
    desired: &DesiredState,
    settings: &DpSettings,
    netns: Option<&Path>,
    peers: &[IpAddr],
) -> dataplane_linux::Result<Option<u32>> {
    let (desired, settings, peers) = (desired.clone(), settings.clone(), peers.to_vec());
    let work = move || {
        let kernel = NetlinkKernel::new()?;
        let mut dp = Dataplane::new(kernel, settings);
        let mut lowest: Option<u32> = None;
        let targets: Vec<Option<IpAddr>> = if peers.is_empty() {
            vec![None]
        } else {
            peers.into_iter().map(Some).collect()
        };
        for p in targets {
            if let Some(u) = dp.detect_underlay(&desired, p)? {
                lowest = Some(lowest.map_or(u.mtu, |l| l.min(u.mtu)));
            }
        }
        Ok(lowest)
    };
    match netns {
        Some(ns) => dataplane_linux::netlink::in_netns(ns, work)?,
        None => work(),
    }
}
