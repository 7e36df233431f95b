//! The pod side: the bridge, its ports, the pods' interfaces and the CNI configuration's `mtu`,
//! all at the fabric MTU. Lowered in phase 2, before anything they use goes down; raised in
//! phase 8, after everything they use went up. A new bridge is created in phase 1.

use super::{Phase, Plan};
use crate::model::{CniState, KernelState, LinkKind, Op};
use crate::types::{DesiredState, Fabric, PodSpec};

/// The pod-side writes of the desired fabric, if any.
pub(super) fn pod_side(desired: &DesiredState, state: &KernelState, plan: &mut Plan) {
    let Some(f) = &desired.fabric else {
        return;
    };
    bridge(desired, f, state, plan);
    for p in &f.pods {
        host_veth(f, p, state, plan);
        pod_interface(f, p, state, plan);
    }
    other_ports(f, state, plan);
    cni_config(f, state, plan);
}

/// The phase that takes a pod-side element from `old` to `new`: 2 down, 8 up.
fn pod_phase(old: u32, new: u32) -> Option<Phase> {
    match new.cmp(&old) {
        std::cmp::Ordering::Less => Some(Phase::PodDown),
        std::cmp::Ordering::Greater => Some(Phase::PodUp),
        std::cmp::Ordering::Equal => None,
    }
}

/// Plans `op`, which takes a pod-side element from `old` to `new`, in its phase; nothing when
/// the MTU stays.
fn resize(plan: &mut Plan, old: u32, new: u32, op: Op) {
    if let Some(phase) = pod_phase(old, new) {
        plan.push(phase, op);
    }
}

/// The bridge: created when missing, starting no higher than the devices currently are (and
/// raised to the fabric MTU in phase 8), else its MTU lowered or raised.
fn bridge(desired: &DesiredState, f: &Fabric, state: &KernelState, plan: &mut Plan) {
    let set_mtu = || Op::SetMtu {
        link: f.bridge.clone(),
        mtu: f.mtu,
    };
    match state.link(&f.bridge) {
        None => {
            let start = current_floor(desired, state).map_or(f.mtu, |m| m.min(f.mtu));
            plan.push(
                Phase::Create,
                Op::CreateBridge {
                    name: f.bridge.clone(),
                    mtu: start,
                },
            );
            if start != f.mtu {
                plan.push(Phase::PodUp, set_mtu());
            }
        }
        Some(l) => resize(plan, l.mtu, f.mtu, set_mtu()),
    }
}

/// The lowest MTU the desired tunnel and WireGuard devices currently have.
fn current_floor(desired: &DesiredState, state: &KernelState) -> Option<u32> {
    state
        .links
        .iter()
        .filter(|l| matches!(l.kind, LinkKind::Tunnel(_) | LinkKind::Wireguard))
        .filter(|l| {
            desired.devices.iter().any(|d| d.name == l.name)
                || desired.wireguard_mtus.iter().any(|w| w.name == l.name)
        })
        .map(|l| l.mtu)
        .min()
}

/// A pod's host-side veth, when named: its MTU, and its attachment to the bridge (phase 2).
fn host_veth(f: &Fabric, p: &PodSpec, state: &KernelState, plan: &mut Plan) {
    let Some(v) = &p.host_veth else {
        return;
    };
    match state.link(v) {
        None => plan.notes.push(format!("bridge port {v} not present")),
        Some(l) => {
            resize(
                plan,
                l.mtu,
                f.mtu,
                Op::SetMtu {
                    link: v.clone(),
                    mtu: f.mtu,
                },
            );
            if l.master.as_deref() != Some(f.bridge.as_str()) {
                plan.push(
                    Phase::PodDown,
                    Op::SetMaster {
                        link: v.clone(),
                        master: f.bridge.clone(),
                    },
                );
            }
        }
    }
}

/// The pod's own interface, inside its namespace; one that is not there is noted.
fn pod_interface(f: &Fabric, p: &PodSpec, state: &KernelState, plan: &mut Plan) {
    let held = state
        .pod_links
        .iter()
        .find(|pl| pl.netns == p.netns && pl.ifname == p.ifname)
        .and_then(|pl| pl.mtu);
    match held {
        None => plan.notes.push(format!(
            "pod interface {} in {} not present",
            p.ifname,
            p.netns.display()
        )),
        Some(m) => resize(
            plan,
            m,
            f.mtu,
            Op::SetPodMtu {
                netns: p.netns.clone(),
                ifname: p.ifname.clone(),
                mtu: f.mtu,
            },
        ),
    }
}

/// Every other port of the bridge, in name order: the agent names pods by namespace and
/// interface only, so their host-side veths are found here, by master.
fn other_ports(f: &Fabric, state: &KernelState, plan: &mut Plan) {
    let mut ports: Vec<_> = state
        .links
        .iter()
        .filter(|l| l.master.as_deref() == Some(f.bridge.as_str()))
        .filter(|l| {
            !f.pods
                .iter()
                .any(|p| p.host_veth.as_deref() == Some(l.name.as_str()))
        })
        .collect();
    ports.sort_by(|a, b| a.name.cmp(&b.name));
    for l in ports {
        let op = Op::SetMtu {
            link: l.name.clone(),
            mtu: f.mtu,
        };
        resize(plan, l.mtu, f.mtu, op);
    }
}

/// The CNI configuration's `mtu`: one without an `mtu` (or with plugins disagreeing) is written
/// in phase 2; a missing file is noted.
fn cni_config(f: &Fabric, state: &KernelState, plan: &mut Plan) {
    let Some(path) = &f.cni_config else {
        return;
    };
    let held = state
        .cni
        .as_ref()
        .filter(|(p, _)| p == path)
        .map(|(_, s)| s.clone());
    let op = Op::SetCniMtu {
        path: path.clone(),
        mtu: f.mtu,
    };
    match held {
        None | Some(CniState::Missing) => plan
            .notes
            .push(format!("CNI configuration {} not present", path.display())),
        Some(CniState::Mtu(None)) => plan.push(Phase::PodDown, op),
        Some(CniState::Mtu(Some(m))) => resize(plan, m, f.mtu, op),
    }
}
