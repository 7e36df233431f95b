//! Pure planning: desired state + settings + what the kernel holds -> ordered writes.
//! Deterministic, no I/O. Write order per element is that of `agent.md` ("Dataplane").
//!
//! [`plan`] runs one step per element, each in its own module, each adding its writes in the
//! phases they belong to: the devices, the rules, the endpoint routes, the neighbours, the pod
//! side, the plan routes, then the removals; the writes are then sorted by phase.

use std::collections::BTreeSet;
use std::net::IpAddr;

use crate::error::Result;
use crate::model::{KernelState, Op, ReadScope};
use crate::types::{DesiredState, Settings};

mod devices;
mod neighbours;
mod pod_side;
mod read_back;
mod removals;
mod routes;
mod rules;
mod underlay;
mod validate;

pub use read_back::verify;
pub use removals::removal;
pub use routes::{encapsulates_into_itself, installed_hops, kernel_route};
pub use underlay::detect_underlay;
pub use validate::validate_settings;

/// The phases of `agent.md`'s write order. Phase 7 (read back) is done by the reconciler.
///
/// Each write of a phase keeps the inequalities on its own once every earlier phase is done:
/// none needs another write of its phase to have succeeded first (one that names a device
/// created in its phase fails by itself when the creation failed). So the writes of one phase
/// may be in flight together, and a failed one may be followed by the rest of its phase; a
/// later phase must not start before every write of the earlier ones succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// 1. Create what is missing and needed first: devices, the rule, endpoint routes, neighbours.
    Create = 1,
    /// 2. Pod-side elements whose MTU goes down.
    PodDown = 2,
    /// 3. Routes whose MTU goes down, and routes to delete.
    RoutesDown = 3,
    /// 4. Devices whose MTU goes up.
    DevicesUp = 4,
    /// 5. Devices whose MTU goes down.
    DevicesDown = 5,
    /// 6. Routes whose MTU goes up, and new routes.
    RoutesUp = 6,
    /// 8. Pod-side elements whose MTU goes up.
    PodUp = 8,
    /// 9. Remove neighbours, endpoint routes and devices no longer needed.
    Remove = 9,
}

/// One write with its phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Phase.
    pub phase: Phase,
    /// The write.
    pub op: Op,
}

/// An ordered list of writes plus notes about what was skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Writes in execution order (phases ascending).
    pub steps: Vec<Step>,
    /// Things left alone, with the reason (e.g. a pod interface that is not there).
    pub notes: Vec<String>,
}

impl Plan {
    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    fn push(&mut self, phase: Phase, op: Op) {
        self.steps.push(Step { phase, op });
    }
}

/// Underlay as seen from this node towards one address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Underlay {
    /// Device the underlay route leaves through.
    pub device: String,
    /// Its gateway, if not directly connected.
    pub gateway: Option<IpAddr>,
    /// MTU: the route's MTU metric, else the device's MTU.
    pub mtu: u32,
}

/// What the reconciler must read for a desired state.
pub fn read_scope(desired: &DesiredState, settings: &Settings) -> ReadScope {
    let mut devices: BTreeSet<String> = settings.managed_devices.iter().cloned().collect();
    devices.extend(desired.devices.iter().map(|d| d.name.clone()));
    let (pods, cni) = match &desired.fabric {
        Some(f) => (
            f.pods
                .iter()
                .map(|p| (p.netns.clone(), p.ifname.clone()))
                .collect(),
            f.cni_config.clone(),
        ),
        None => (Vec::new(), None),
    };
    ReadScope {
        table: settings.table,
        neighbour_devices: devices.into_iter().collect(),
        pods,
        cni,
    }
}

/// Devices the adapter owns or configures (skipped by underlay detection).
pub fn own_devices(desired: &DesiredState, settings: &Settings) -> BTreeSet<String> {
    let mut own: BTreeSet<String> = settings.managed_devices.iter().cloned().collect();
    own.extend(desired.devices.iter().map(|d| d.name.clone()));
    own.extend(desired.wireguard_mtus.iter().map(|w| w.name.clone()));
    if let Some(f) = &desired.fabric {
        own.insert(f.bridge.clone());
    }
    own
}

/// Computes the ordered writes that make `state` match `desired`.
pub fn plan(desired: &DesiredState, settings: &Settings, state: &KernelState) -> Result<Plan> {
    validate_settings(settings)?;
    validate::validate_desired(desired, state)?;
    let mut plan = Plan::default();
    let devices = devices::devices(desired, settings, state, &mut plan);
    let rules = rules::rules(desired, settings, state, &mut plan);
    let routes = routes::endpoint_routes(desired, settings, state, &mut plan)?;
    let neighbours = neighbours::neighbours(desired, state, &devices.readdressed, &mut plan)?;
    pod_side::pod_side(desired, state, &mut plan);
    let stale_endpoints = routes::plan_routes(settings, state, &routes, &devices.doomed, &mut plan);
    let kept = removals::Kept {
        devices: &devices,
        neighbours: &neighbours,
        rules: &rules,
    };
    removals::removals(desired, settings, state, &kept, stale_endpoints, &mut plan);
    plan.steps.sort_by_key(|s| s.phase);
    Ok(plan)
}
