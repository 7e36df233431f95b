//! Removing what the adapter owns: phase 9 of a reconcile (neighbours, endpoint routes, rules
//! and devices no longer needed) and [`removal`], everything owned when the node leaves.

use std::collections::BTreeSet;

use super::devices::Devices;
use super::neighbours::Wanted;
use super::validate::validate_settings;
use super::{Phase, Plan};
use crate::error::Result;
use crate::model::{KernelState, LinkKind, Neighbour, Op, Route, Rule};
use crate::types::{DesiredState, Settings};

/// What the earlier phases keep: phase 9 removes the rest.
pub(super) struct Kept<'k, 'a> {
    /// The devices, with those readdressed and those that go.
    pub(super) devices: &'k Devices<'a>,
    /// The wanted neighbours.
    pub(super) neighbours: &'k Wanted<'a>,
    /// The wanted rules.
    pub(super) rules: &'k BTreeSet<Rule>,
}

/// Phase 9: the neighbours on the adapter's devices no longer wanted (none on a device that goes
/// or was readdressed: the kernel flushes those), the endpoint routes no longer wanted
/// (`stale_endpoints`, from the plan routes), the rules of the adapter's table no longer wanted,
/// then the devices that go.
pub(super) fn removals(
    desired: &DesiredState,
    settings: &Settings,
    state: &KernelState,
    kept: &Kept<'_, '_>,
    stale_endpoints: Vec<Op>,
    plan: &mut Plan,
) {
    let mut stale_neigh: Vec<&Neighbour> = state
        .neighbours
        .iter()
        .filter(|n| {
            !kept
                .neighbours
                .contains_key(&(n.device.as_str(), n.address))
        })
        .filter(|n| !kept.devices.doomed.contains(&n.device))
        .filter(|n| !kept.devices.readdressed.contains(n.device.as_str()))
        .filter(|n| {
            settings.managed_devices.contains(&n.device)
                || desired.devices.iter().any(|d| d.name == n.device)
        })
        .collect();
    stale_neigh.sort();
    for n in stale_neigh {
        plan.push(
            Phase::Remove,
            Op::DeleteNeighbour {
                device: n.device.clone(),
                address: n.address,
            },
        );
    }
    for op in stale_endpoints {
        plan.push(Phase::Remove, op);
    }
    let mut stale_rules: Vec<&Rule> = state
        .rules
        .iter()
        .filter(|r| r.table == settings.table && !kept.rules.contains(r))
        .collect();
    stale_rules.sort();
    for r in stale_rules {
        plan.push(Phase::Remove, Op::DeleteRule(*r));
    }
    for n in &kept.devices.doomed {
        plan.push(Phase::Remove, Op::DeleteLink { link: (*n).clone() });
    }
}

/// Whether `route` looks like an endpoint host route (a host prefix through the underlay, no
/// encapsulation) rather than a route of the plan.
fn is_endpoint_route(route: &Route) -> bool {
    route.destination.prefix_len() == route.destination.max_prefix_len()
        && route.hops.iter().all(|h| h.encap.is_none())
}

/// The ordered removal of everything the adapter owns, without a desired state (the node agent
/// leaving the cluster). Every step is in [`Phase::Remove`]; the order is the order of `steps`:
///
/// 1. every policy rule looking up [`Settings::table`] (IPv4 and IPv6; the reconciler already
///    sweeps any such rule as its own), so that traffic stops consulting the table before it
///    empties;
/// 2. every route of that table carrying [`Settings::route_protocol`]: the plan's routes
///    first, then the endpoint host routes (the order of a reconcile's phase 9; with the rule
///    gone nothing looks them up anyway). Routes of other protocols are left alone, with a note;
/// 3. the shared tunnel devices: each name of [`Settings::managed_devices`] that the kernel holds
///    as a tunnel device. A link of another kind under such a name was not created by the
///    adapter and is left alone, with a note.
///
/// Neighbours are not deleted one by one: they exist only on the shared devices, and the kernel
/// flushes a device's neighbours (permanent ones included) when the device is deleted.
/// WireGuard devices (never created by the adapter, only their MTU set) and the pod side
/// (bridge, ports, pod veths, CNI configuration) are not touched: pods keep working at their
/// MTU, which only ever constrains.
///
/// `state` is read with [`ReadScope::owned`](crate::model::ReadScope::owned). An empty plan means nothing owned remains, which is
/// how [`crate::Dataplane::remove_owned`] verifies its read-back.
pub fn removal(settings: &Settings, state: &KernelState) -> Result<Plan> {
    // Invalid settings (e.g. table `main`) would make "the adapter's table" somebody else's:
    // refuse, like a reconcile, rather than delete there.
    validate_settings(settings)?;
    let mut plan = Plan::default();

    let mut rules: Vec<&Rule> = state
        .rules
        .iter()
        .filter(|r| r.table == settings.table)
        .collect();
    rules.sort();
    for r in rules {
        plan.push(Phase::Remove, Op::DeleteRule(*r));
    }

    let (own, foreign): (Vec<&Route>, Vec<&Route>) = state
        .routes
        .iter()
        .filter(|r| r.table == settings.table)
        .partition(|r| r.protocol == settings.route_protocol);
    let (mut endpoints, mut routes): (Vec<&Route>, Vec<&Route>) =
        own.into_iter().partition(|r| is_endpoint_route(r));
    routes.sort_by_key(|r| r.destination);
    endpoints.sort_by_key(|r| r.destination);
    for r in routes.into_iter().chain(endpoints) {
        plan.push(
            Phase::Remove,
            Op::DeleteRoute {
                table: r.table,
                destination: r.destination,
                protocol: r.protocol,
            },
        );
    }
    for r in foreign {
        plan.notes.push(format!(
            "route {} in table {} has protocol {}, not {}: left alone",
            r.destination, r.table, r.protocol, settings.route_protocol
        ));
    }

    let mut devices: Vec<&String> = settings.managed_devices.iter().collect();
    devices.sort();
    devices.dedup();
    for name in devices {
        match state.link(name) {
            None => {}
            Some(l) if matches!(l.kind, LinkKind::Tunnel(_)) => {
                plan.push(Phase::Remove, Op::DeleteLink { link: name.clone() });
            }
            Some(l) => plan.notes.push(format!(
                "link {name} is {:?}, not a tunnel device: not the adapter's, left alone",
                l.kind
            )),
        }
    }
    Ok(plan)
}
