//! Linux dataplane adapter: makes the kernel match a node's desired state (tunnel devices,
//! encapsulation routes with MTU metrics, endpoint routes, one policy rule, neighbours,
//! WireGuard MTUs, the pod bridge, its ports, pod veths and the CNI configuration's `mtu`),
//! in the safe write order of `agent.md`.
//!
//! Layers, like `netlink-packet-route` vs `rtnetlink`:
//! - [`types`]: the public input ([`DesiredState`], [`Settings`]), plain data;
//! - [`model`]: what the kernel holds ([`KernelState`]) and the writes ([`Op`]);
//! - [`plan`](mod@plan): pure diff `desired × kernel state -> ordered writes` (no I/O);
//! - [`Kernel`]: the boundary, implemented by [`NetlinkKernel`] (rtnetlink messages on one
//!   blocking socket, a phase's writes in batches) and
//!   [`FakeKernel`] (in memory, ordered write log, fault injection);
//! - [`Dataplane`]: read, plan, write, read back, finish; or remove everything owned
//!   ([`Dataplane::remove_owned`]).

pub mod cni;
pub mod error;
pub mod fake;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod model;
pub mod monitor;
pub mod netlink;
pub mod plan;
mod route_dump;
mod socket;
pub mod types;

pub use error::{Error, ErrorKind, Result};
pub use fake::FakeKernel;
pub use model::{KernelState, Op, ReadScope};
pub use netlink::{NetlinkKernel, Probe};
pub use plan::{Phase, Plan, Step, Underlay, detect_underlay, plan, removal, verify};
pub use types::{
    DesiredState, Fabric, HopProtocol, NextHop, PodSpec, RouteSpec, Settings, TunnelDevice,
    TunnelKind, WireguardMtu, tunnel_mac,
};

use std::net::IpAddr;

/// The boundary between planning and the kernel.
pub trait Kernel {
    /// Reads everything the adapter owns within `scope`.
    fn read(&mut self, scope: &ReadScope) -> Result<KernelState>;
    /// Performs one write.
    fn apply(&mut self, op: &Op) -> Result<()>;

    /// Performs the writes of one phase, in order. An implementation may keep several of them
    /// in flight at once (the netlink one sends them in batches): when one fails, writes after
    /// it in `ops` may have been performed too, but never a write of a later call. Returns the
    /// error of the first failed write in `ops`' order.
    ///
    /// The default performs them one at a time and stops at the first failure.
    fn apply_phase(&mut self, ops: &[Op]) -> Result<()> {
        ops.iter().try_for_each(|op| self.apply(op))
    }

    /// Performs the deletions of one removal step, in order, and returns those that found
    /// their object already gone (errno class [`ErrorKind::Absent`]: absence is the goal), by
    /// index in `ops`, with their errors. Any other failure is the error; as in
    /// [`Kernel::apply_phase`], deletions after it in `ops` may have been performed too (the
    /// netlink kernel sends them in batches), never one of a later call.
    ///
    /// The default performs them one at a time and stops at the first failure other than
    /// absence.
    fn remove_phase(&mut self, ops: &[Op]) -> Result<Vec<(usize, Error)>> {
        let mut absent = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            match self.apply(op) {
                Ok(()) => {}
                Err(e) if e.kind() == Some(ErrorKind::Absent) => absent.push((i, e)),
                Err(e) => return Err(e),
            }
        }
        Ok(absent)
    }
}

/// Outcome of a successful reconcile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// The writes performed, in order.
    pub writes: Vec<Op>,
    /// What was left alone and why.
    pub notes: Vec<String>,
}

/// The adapter: a kernel plus the settings naming what it owns.
#[derive(Debug)]
pub struct Dataplane<K: Kernel> {
    kernel: K,
    settings: Settings,
}

impl<K: Kernel> Dataplane<K> {
    /// Wraps a kernel.
    pub fn new(kernel: K, settings: Settings) -> Self {
        Dataplane { kernel, settings }
    }

    /// The kernel.
    pub fn kernel(&self) -> &K {
        &self.kernel
    }

    /// The kernel, mutably.
    pub fn kernel_mut(&mut self) -> &mut K {
        &mut self.kernel
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Reads the kernel and returns the plan that would be applied (no writes).
    pub fn plan(&mut self, desired: &DesiredState) -> Result<Plan> {
        let scope = plan::read_scope(desired, &self.settings);
        let state = self.kernel.read(&scope)?;
        plan::plan(desired, &self.settings, &state)
    }

    /// Makes the kernel match `desired`: read, plan, write phases 1–6, read back (7), write
    /// phases 8–9. The writes of one phase go to the kernel together
    /// ([`Kernel::apply_phase`]); a phase starts only once every write of the phases before it
    /// succeeded. Stops at the first phase with a failed write (writes of that phase after the
    /// failed one may have been performed: they are as safe as the phase's order allows at any
    /// point); the next call resumes from what the kernel then holds. A second call with the
    /// same state writes nothing.
    pub fn reconcile(&mut self, desired: &DesiredState) -> Result<Report> {
        let scope = plan::read_scope(desired, &self.settings);
        let state = self.kernel.read(&scope)?;
        let plan = plan::plan(desired, &self.settings, &state)?;
        let mut report = Report {
            writes: Vec::with_capacity(plan.steps.len()),
            notes: plan.notes,
        };
        let mut verified = false;
        for (phase, ops) in phases(plan.steps) {
            if phase > Phase::RoutesUp && !verified {
                self.read_back(desired, &scope, &report)?;
                verified = true;
            }
            self.kernel.apply_phase(&ops)?;
            report.writes.extend(ops);
        }
        if !verified {
            self.read_back(desired, &scope, &report)?;
        }
        Ok(report)
    }

    fn read_back(
        &mut self,
        desired: &DesiredState,
        scope: &ReadScope,
        report: &Report,
    ) -> Result<()> {
        if report.writes.is_empty() {
            return Ok(());
        }
        let state = self.kernel.read(scope)?;
        plan::verify(desired, &self.settings, &state)
    }

    /// Removes everything the adapter owns, for a node leaving the cluster (`agent.md`: the
    /// Node's deletion ends the agent after the owned dataplane state is removed): reads with
    /// [`ReadScope::owned`], writes [`plan::removal`] in order (the policy rules, then the
    /// table's routes of the adapter's protocol, then the shared tunnel devices with their
    /// neighbours), and reads back that nothing owned remains ([`Error::NotRemoved`]
    /// otherwise). WireGuard devices and the pod side are left as they are.
    ///
    /// Each of the three steps goes to the kernel together ([`Kernel::remove_phase`], in
    /// batches on netlink, as a reconcile's phases do), and a step starts only once every
    /// deletion of the steps before it succeeded. Stops at the first step with a failed write;
    /// the kernel then holds a subset of what it held (deletions of that step after the failed
    /// one may have been performed), and the next call removes the rest. A delete that finds its
    /// object already gone (errno class [`ErrorKind::Absent`], e.g. a route flushed with its
    /// device by someone else between the read and the write) is not a failure: absence is the
    /// goal; it is noted, and the read-back judges. A second call writes nothing.
    pub fn remove_owned(&mut self) -> Result<Report> {
        let scope = ReadScope::owned(&self.settings);
        let state = self.kernel.read(&scope)?;
        let plan = plan::removal(&self.settings, &state)?;
        let planned = !plan.is_empty();
        let mut report = Report {
            writes: Vec::with_capacity(plan.steps.len()),
            notes: plan.notes,
        };
        for ops in removal_steps(plan.steps) {
            let absent = self.kernel.remove_phase(&ops)?;
            let mut gone = vec![false; ops.len()];
            for (i, e) in absent {
                if let (Some(op), Some(g)) = (ops.get(i), gone.get_mut(i)) {
                    report.notes.push(format!("{op}: already absent ({e})"));
                    *g = true;
                }
            }
            report.writes.extend(
                ops.into_iter()
                    .zip(gone)
                    .filter_map(|(op, gone)| (!gone).then_some(op)),
            );
        }
        // An empty removal plan of the state read back is exactly "nothing owned remains". An
        // empty plan from the first read already says so: no second read.
        if !planned {
            return Ok(report);
        }
        let after = self.kernel.read(&scope)?;
        let left = plan::removal(&self.settings, &after)?.steps;
        if !left.is_empty() {
            return Err(Error::NotRemoved {
                left: left.into_iter().map(|s| s.op).collect(),
            });
        }
        Ok(report)
    }

    /// Underlay detection towards `peer` (or the default route without one), skipping the
    /// adapter's own devices and routes.
    pub fn detect_underlay(
        &mut self,
        desired: &DesiredState,
        peer: Option<IpAddr>,
    ) -> Result<Option<Underlay>> {
        let scope = ReadScope {
            table: self.settings.table,
            ..ReadScope::default()
        };
        let state = self.kernel.read(&scope)?;
        let own = plan::own_devices(desired, &self.settings);
        Ok(plan::detect_underlay(
            &state,
            peer,
            &own,
            self.settings.route_protocol,
        ))
    }
}

/// The deletions of a removal plan grouped into its steps (rules, routes, devices: runs of one
/// kind of write), in order.
fn removal_steps(steps: Vec<Step>) -> Vec<Vec<Op>> {
    let mut out: Vec<Vec<Op>> = Vec::new();
    for step in steps {
        match out.last_mut() {
            Some(ops)
                if ops.last().map(std::mem::discriminant)
                    == Some(std::mem::discriminant(&step.op)) =>
            {
                ops.push(step.op)
            }
            _ => out.push(vec![step.op]),
        }
    }
    out
}

/// The writes of `steps` (ordered by phase) grouped by phase, in order.
fn phases(steps: Vec<Step>) -> Vec<(Phase, Vec<Op>)> {
    let mut out: Vec<(Phase, Vec<Op>)> = Vec::new();
    for step in steps {
        match out.last_mut() {
            Some((phase, ops)) if *phase == step.phase => ops.push(step.op),
            _ => out.push((step.phase, vec![step.op])),
        }
    }
    out
}
