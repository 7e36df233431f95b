//! Phase 7, read back: what the kernel holds after the writes, checked against the plan.

use std::collections::BTreeMap;

use ipnet::IpNet;

use super::routes::kernel_route;
use crate::error::{Error, Result};
use crate::model::{KernelState, Route};
use crate::types::{DesiredState, Settings};

/// Phase 7: after the writes, every planned route holds its planned MTU and next hops, and
/// every device is at least each route through it. Returns the first discrepancy.
pub fn verify(desired: &DesiredState, settings: &Settings, state: &KernelState) -> Result<()> {
    let held_routes: BTreeMap<IpNet, &Route> =
        state.routes.iter().map(|r| (r.destination, r)).collect();
    for spec in &desired.routes {
        let Some(want) = kernel_route(spec, settings) else {
            continue;
        };
        let held = held_routes
            .get(&want.destination)
            .ok_or_else(|| Error::Verification(format!("route {} missing", want.destination)))?;
        if !held.same_forwarding(&want) {
            return Err(Error::Verification(format!(
                "route {}: kernel holds {:?} mtu {:?} (lock {}), planned {:?} mtu {:?}",
                want.destination, held.hops, held.mtu, held.mtu_locked, want.hops, want.mtu
            )));
        }
    }
    for r in &state.routes {
        if let Some(m) = r.mtu {
            for h in &r.hops {
                if let Some(l) = state.link(&h.device) {
                    if l.mtu < m {
                        return Err(Error::Verification(format!(
                            "route {} MTU {m} above device {} MTU {}",
                            r.destination, l.name, l.mtu
                        )));
                    }
                }
            }
        }
    }
    Ok(())
}
