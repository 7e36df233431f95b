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

/// The node's identity address (its tunnel MAC derives from it, `mtu_solver::NodePlan`'s
/// `identity_addr`), else any address of its own; `None`: the node has no address at all.
pub fn identity_addr(topo: &Topology, plan: &NodePlan) -> Option<IpAddr> {
    plan.identity_addr
        .or_else(|| plan.links.iter().find_map(|l| l.local_addr))
        .or_else(|| topo.node(plan.node).internal_ips.first().copied())
}

/// Converts a node plan into the adapter's desired state. Next hops the adapter cannot program
/// (no underlay address, no device name, unencapsulated links) are left out; a route left
/// without next hops is not installed.
///
/// Tunnel MACs derive from identity addresses on both sides: the node's own from
/// [`NodePlan::identity_addr`] (`fallback_identity` only when the plan names none, i.e. the
/// node has no address of its own), each peer's from its next hop's `identity_addr` (else the
/// address the link reaches it at). A node reached at its InternalIP by some peers and at its
/// ExternalIP by others thus has one MAC for all of them.
pub fn desired_state(
    topo: &Topology,
    plan: &NodePlan,
    fallback_identity: IpAddr,
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
                peer_identity: nh.identity_addr.unwrap_or(peer_underlay),
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
        identity_addr: plan.identity_addr.unwrap_or(fallback_identity),
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

#[cfg(test)]
mod tests {
    use super::*;
    use topology_core::decode::Decoded;

    /// Gateway hg1 (External pool PH, InternalIP 10.10.0.1, ExternalIP 198.51.100.1) serving
    /// its own Site H (worker hw1) and the unpeered Site N (worker n1, InternalIP 10.20.0.4,
    /// ExternalIP 203.0.113.4), all over VXLAN.
    const NAT: &str = r#"
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: H}
spec:
  nodeCidrs: [10.10.0.0/16]
  podCidrAssignments: [{cidrBlocks: [10.110.0.0/16]}]
  tunnelProtocol: VXLAN
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: N}
spec:
  nodeCidrs: [10.20.0.0/22]
  podCidrAssignments: [{cidrBlocks: [10.120.0.0/16]}]
  tunnelProtocol: VXLAN
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: GatewayPool
metadata: {name: PH}
spec: {type: External, nodeSelector: {gw: ph}, tunnelProtocol: VXLAN}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SiteGatewayPoolAssignment
metadata: {name: hn}
spec: {sites: [H, N], gatewayPools: [PH], tunnelProtocol: VXLAN}
---
apiVersion: v1
kind: Node
metadata: {name: hg1, labels: {net.unbounded-cloud.io/site: H, gw: ph}}
spec: {podCIDRs: [10.110.1.0/24]}
status:
  addresses:
    - {type: InternalIP, address: 10.10.0.1}
    - {type: ExternalIP, address: 198.51.100.1}
---
apiVersion: v1
kind: Node
metadata: {name: hw1, labels: {net.unbounded-cloud.io/site: H}}
spec: {podCIDRs: [10.110.11.0/24]}
status:
  addresses: [{type: InternalIP, address: 10.10.0.11}]
---
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {net.unbounded-cloud.io/site: N}}
spec: {podCIDRs: [10.120.4.0/24]}
status:
  addresses:
    - {type: InternalIP, address: 10.20.0.4}
    - {type: ExternalIP, address: 203.0.113.4}
"#;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn desired(name: &str) -> DesiredState {
        let mut decoded = Decoded::default();
        decoded.add_source("nat.yaml", NAT.as_bytes());
        let topo = Topology::build(decoded.objects.iter(), decoded.diagnostics.iter().cloned());
        let node = topo.node_id(name).unwrap();
        let mut solver = mtu_solver::Solver::new(&topo, mtu_solver::Settings::default());
        let plan = solver.plan(node);
        // The fallback is for a plan without an identity address; these plans all have one.
        desired_state(&topo, &plan, ip("192.0.2.99"), &FabricOptions::default())
    }

    fn hop(d: &DesiredState, dst: &str) -> NextHop {
        let r = d
            .routes
            .iter()
            .find(|r| r.destination == dst.parse().unwrap())
            .unwrap_or_else(|| panic!("no route {dst} in {:?}", d.routes));
        assert_eq!(r.next_hops.len(), 1, "{r:?}");
        r.next_hops[0].clone()
    }

    #[test]
    fn macs_derive_from_identity_addresses_not_from_the_addresses_links_use() {
        let (hg1, hw1, n1) = (desired("hg1"), desired("hw1"), desired("n1"));
        assert_eq!(hg1.identity_addr, ip("10.10.0.1"));
        assert_eq!(hw1.identity_addr, ip("10.10.0.11"));
        assert_eq!(n1.identity_addr, ip("10.20.0.4"));
        // hg1 is reached at its InternalIP by hw1 and at its ExternalIP by n1: one identity.
        let from_hw1 = hop(&hw1, "10.110.1.0/24");
        let from_n1 = hop(&n1, "10.110.1.0/24");
        assert_eq!(from_hw1.peer_underlay, ip("10.10.0.1"));
        assert_eq!(from_n1.peer_underlay, ip("198.51.100.1"));
        assert_eq!(from_hw1.peer_identity, hg1.identity_addr);
        assert_eq!(from_n1.peer_identity, hg1.identity_addr);
        // hg1 reaches n1 at its ExternalIP, for its pods and for its InternalIP (NodeAddress).
        for dst in ["10.120.4.0/24", "10.20.0.4/32"] {
            let to_n1 = hop(&hg1, dst);
            assert_eq!(to_n1.peer_underlay, ip("203.0.113.4"), "{dst}");
            assert_eq!(to_n1.peer_identity, n1.identity_addr, "{dst}");
            assert_eq!(to_n1.pod_gateway, ip("10.120.4.1"), "{dst}");
        }
    }
}
