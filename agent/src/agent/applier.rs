//! Where a reconcile's desired state goes: the kernel through dataplane-linux, a dry run that
//! reads the kernel and writes nothing, or a test's fake. Each call is blocking (netlink on its
//! own thread, inside the network namespace when one is given); the reconcile loop runs it on a
//! blocking thread and never interrupts it, so a write step in progress always finishes.

use crate::settings::{self, Apply};
use dataplane_linux::monitor::Monitor;
use dataplane_linux::{Dataplane, DesiredState, NetlinkKernel, Settings};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

/// What an apply did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Kernel writes made.
    pub writes: usize,
    /// Operations planned but not written (dry run), one line each.
    pub planned: Vec<String>,
    /// What the adapter left alone, and why.
    pub notes: Vec<String>,
    /// Whether the kernel now holds the desired state (false for a dry run): only then are the
    /// values that describe it published.
    pub in_kernel: bool,
}

/// The dataplane step of a reconcile.
pub trait Applier: Send + Sync {
    /// The lowest underlay MTU towards any of `peers` (the default route's device without
    /// peers), skipping the adapter's own devices and routes; `None` when no route says.
    fn detect_underlay(
        &self,
        desired: &DesiredState,
        peers: &[IpAddr],
    ) -> dataplane_linux::Result<Option<u32>>;

    /// Makes the kernel match `desired` (or says what it would write).
    fn apply(&self, desired: &DesiredState) -> dataplane_linux::Result<Applied>;

    /// Removes every piece of kernel state the adapter owns (the own Node was deleted).
    fn remove_owned(&self) -> dataplane_linux::Result<Applied>;

    /// Watches the kernel for changes to the state the adapter owns (made by someone else, or
    /// by the adapter itself) and sends on `changed` for each batch of them, until the returned
    /// [`Watch`] is dropped; `None` when there is no kernel state to keep (a dry run, a fake).
    fn watch(&self, changed: mpsc::UnboundedSender<()>) -> Option<Watch> {
        let _ = changed;
        None
    }
}

/// A kernel watch in progress: dropping it ends the watching thread within its poll interval.
#[derive(Debug)]
pub struct Watch {
    stop: Arc<AtomicBool>,
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
    }
}

/// How long the watching thread waits for notifications before it checks whether to stop.
const WATCH_POLL: Duration = Duration::from_millis(500);

/// The applier the settings ask for.
pub fn for_settings(s: &settings::Agent) -> Arc<dyn Applier> {
    let kernel = Kernel {
        settings: s.dataplane.clone(),
        netns: s.netns.clone(),
        bridge: s.fabric.bridge.clone(),
    };
    match s.apply {
        Apply::Kernel => Arc::new(kernel),
        Apply::DryRun => Arc::new(DryRun(kernel)),
    }
}

/// The real kernel (inside `netns` when given).
#[derive(Clone, Debug)]
pub struct Kernel {
    settings: Settings,
    netns: Option<PathBuf>,
    /// The pod bridge whose MTU (and its ports') the adapter sets.
    bridge: Option<String>,
}

impl Kernel {
    /// Runs `f` on a dataplane over a fresh netlink connection, inside the namespace if any.
    fn with_dataplane<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Dataplane<NetlinkKernel>) -> dataplane_linux::Result<T> + Send + 'static,
    ) -> dataplane_linux::Result<T> {
        let settings = self.settings.clone();
        let work = move || {
            let mut dp = Dataplane::new(NetlinkKernel::new()?, settings);
            f(&mut dp)
        };
        match self.netns.as_deref() {
            Some(ns) => in_netns(ns, work),
            None => work(),
        }
    }
}

fn in_netns<T: Send + 'static>(
    ns: &Path,
    work: impl FnOnce() -> dataplane_linux::Result<T> + Send + 'static,
) -> dataplane_linux::Result<T> {
    dataplane_linux::netlink::in_netns(ns, work)?
}

impl Applier for Kernel {
    fn detect_underlay(
        &self,
        desired: &DesiredState,
        peers: &[IpAddr],
    ) -> dataplane_linux::Result<Option<u32>> {
        let desired = desired.clone();
        let targets: Vec<Option<IpAddr>> = if peers.is_empty() {
            vec![None]
        } else {
            peers.iter().copied().map(Some).collect()
        };
        self.with_dataplane(move |dp| {
            let mut lowest: Option<u32> = None;
            for p in targets {
                if let Some(u) = dp.detect_underlay(&desired, p)? {
                    lowest = Some(lowest.map_or(u.mtu, |l| l.min(u.mtu)));
                }
            }
            Ok(lowest)
        })
    }

    fn apply(&self, desired: &DesiredState) -> dataplane_linux::Result<Applied> {
        let desired = desired.clone();
        self.with_dataplane(move |dp| {
            let report = dp.reconcile(&desired)?;
            Ok(Applied {
                writes: report.writes.len(),
                planned: Vec::new(),
                notes: report.notes,
                in_kernel: true,
            })
        })
    }

    fn watch(&self, changed: mpsc::UnboundedSender<()>) -> Option<Watch> {
        let stop = Arc::new(AtomicBool::new(false));
        let (settings, netns, devices) = (
            self.settings.clone(),
            self.netns.clone(),
            self.bridge.iter().cloned().collect::<Vec<_>>(),
        );
        let stopped = stop.clone();
        let spawned = std::thread::Builder::new()
            .name("kernel-watch".into())
            .spawn(move || watch_kernel(&settings, netns.as_deref(), &devices, &changed, &stopped));
        match spawned {
            Ok(_) => Some(Watch { stop }),
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the kernel watch; drift is repaired at the next resync");
                None
            }
        }
    }

    fn remove_owned(&self) -> dataplane_linux::Result<Applied> {
        self.with_dataplane(|dp| {
            let report = dp.remove_owned()?;
            Ok(Applied {
                writes: report.writes.len(),
                planned: Vec::new(),
                notes: report.notes,
                in_kernel: true,
            })
        })
    }
}

/// The kernel watch's thread: subscribes in `netns`, and sends on `changed` whenever a
/// notification concerns the adapter's state, until `stop` or the receiver is gone. A watch
/// that fails is reopened after a pause; meanwhile the resync repairs.
fn watch_kernel(
    settings: &Settings,
    netns: Option<&Path>,
    devices: &[String],
    changed: &mpsc::UnboundedSender<()>,
    stop: &AtomicBool,
) {
    while !stop.load(Ordering::Acquire) {
        let mut monitor = match Monitor::open_in(netns, settings, devices) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "cannot watch the kernel's notifications; retrying");
                std::thread::sleep(WATCH_POLL * 10);
                continue;
            }
        };
        while !stop.load(Ordering::Acquire) {
            match monitor.wait(WATCH_POLL) {
                Ok(true) => {
                    if changed.send(()).is_err() {
                        return;
                    }
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "the kernel watch failed; reopening it");
                    break;
                }
            }
        }
    }
}

/// `--dry-run`: reads the kernel (detection, and what a reconcile would write) and writes
/// nothing.
#[derive(Clone, Debug)]
pub struct DryRun(Kernel);

impl Applier for DryRun {
    fn detect_underlay(
        &self,
        desired: &DesiredState,
        peers: &[IpAddr],
    ) -> dataplane_linux::Result<Option<u32>> {
        self.0.detect_underlay(desired, peers)
    }

    fn apply(&self, desired: &DesiredState) -> dataplane_linux::Result<Applied> {
        let desired = desired.clone();
        let planned = self.0.with_dataplane(move |dp| dp.plan(&desired));
        Ok(match planned {
            Ok(plan) => Applied {
                writes: 0,
                planned: plan
                    .steps
                    .iter()
                    .map(|s| format!("{:?}: {:?}", s.phase, s.op))
                    .collect(),
                notes: plan.notes,
                in_kernel: false,
            },
            // Without access to the kernel (no privileges, no namespace) the plan is still worth
            // printing.
            Err(e) => Applied {
                notes: vec![format!("cannot read the kernel ({e}); the plan only")],
                ..Applied::default()
            },
        })
    }

    fn remove_owned(&self) -> dataplane_linux::Result<Applied> {
        Ok(Applied {
            notes: vec!["dry run: the owned kernel state is left in place".into()],
            ..Applied::default()
        })
    }
}
