//! The policy rules looking up the adapter's table: IPv4 always, IPv6 when a route of the plan
//! is IPv6; a missing one is added in phase 1.

use std::collections::BTreeSet;

use ipnet::IpNet;

use super::{Phase, Plan};
use crate::model::{Family, KernelState, Op, Rule};
use crate::types::{DesiredState, Settings};

/// Adds each wanted rule the kernel does not hold; returns the wanted rules.
pub(super) fn rules(
    desired: &DesiredState,
    settings: &Settings,
    state: &KernelState,
    plan: &mut Plan,
) -> BTreeSet<Rule> {
    let mut want_rules = BTreeSet::new();
    want_rules.insert(Rule {
        family: Family::V4,
        priority: settings.rule_priority,
        table: settings.table,
    });
    if desired
        .routes
        .iter()
        .any(|r| matches!(r.destination, IpNet::V6(_)))
    {
        want_rules.insert(Rule {
            family: Family::V6,
            priority: settings.rule_priority,
            table: settings.table,
        });
    }
    for r in &want_rules {
        if !state.rules.contains(r) {
            plan.push(Phase::Create, Op::AddRule(*r));
        }
    }
    want_rules
}
