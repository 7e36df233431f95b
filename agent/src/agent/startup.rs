//! Start steps 3 and 4 of `agent.md` together: adoption, retried with a backoff while the Node
//! cannot be read, has no Site or carries a broken assignment, and the startup-only own-Node
//! watch. The watch already runs while the assignment is broken, so that the label change that
//! repairs it ends the process (exit 3) and the next process adopts afresh.

use super::Exit;
use super::adopt::{Adopted, Attempt, Baseline, try_adopt};
use super::node_watch::{Verdict, WatchEnd, watch_own_node};
use super::status::Status;
use crate::k8s::Backoff;
use kube::Client;
use std::sync::Arc;
use tokio::sync::watch;
use tokio::task::{JoinError, JoinHandle};

/// The startup-only own-Node watch task and its cancel switch. It is listed among the active
/// watches on `/status` while it runs, and aborted when dropped.
#[derive(Debug)]
pub struct StartupWatch {
    cancel: watch::Sender<bool>,
    task: Option<JoinHandle<WatchEnd>>,
    name: String,
    status: Arc<Status>,
}

impl StartupWatch {
    /// Starts watching the own Node from `base` (its GET's resource version).
    pub fn start(client: &Client, base: Baseline, status: &Arc<Status>) -> StartupWatch {
        let (cancel, rx) = watch::channel(false);
        let name = format!("node/{} (startup)", base.node_name);
        status.set_watch(&name, true);
        let task = tokio::spawn(watch_own_node(client.clone(), base, rx, Backoff::watch()));
        StartupWatch {
            cancel,
            task: Some(task),
            name,
            status: status.clone(),
        }
    }

    /// Whether the watch still runs.
    pub fn running(&self) -> bool {
        self.task.is_some()
    }

    /// Waits until the watch ends by itself (a verdict); never returns while none runs.
    /// Cancel-safe: dropping the future leaves the watch running.
    pub async fn ended(&mut self) -> Result<WatchEnd, JoinError> {
        let Some(task) = self.task.as_mut() else {
            return std::future::pending().await;
        };
        let end = task.await;
        self.finished();
        end
    }

    /// Cancels the watch and waits for it: `Cancelled`, or the verdict it reached first.
    pub async fn close(&mut self) -> Result<WatchEnd, JoinError> {
        // A send error means the task is gone already; awaiting it below says how it ended.
        let _ = self.cancel.send(true);
        let Some(task) = self.task.as_mut() else {
            return Ok(WatchEnd::Cancelled);
        };
        let end = task.await;
        self.finished();
        end
    }

    fn finished(&mut self) {
        self.task = None;
        self.status.set_watch(&self.name, false);
    }
}

impl Drop for StartupWatch {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
            self.status.set_watch(&self.name, false);
        }
    }
}

/// The exit a startup watch's end asks for, if any.
pub fn exit_of(end: &WatchEnd) -> Option<Exit> {
    match end {
        WatchEnd::Verdict(Verdict::Deleted) => Some(Exit::NodeDeleted),
        WatchEnd::Verdict(Verdict::Changed(why)) => Some(Exit::AssignmentChanged(why.clone())),
        WatchEnd::Verdict(Verdict::Unchanged) | WatchEnd::Cancelled => None,
    }
}

/// How adoption ended.
#[derive(Debug)]
pub enum Adoption {
    /// Adopted; the startup watch runs from the adopting GET.
    Adopted(Box<Adopted>, StartupWatch),
    /// The startup watch ended the process before an assignment was adopted (a label change of
    /// a broken assignment: exit 3; the Node's deletion: exit 4).
    Exit(Exit),
}

/// Adopts the assignment (`agent.md` Start 3 and 4), with `backoff` between attempts while the
/// Node cannot be read, belongs to no Site, or its assignment is broken. A broken assignment is
/// not adopted, so never acknowledged: it is reported on `/status` and in the log, and the
/// startup watch runs from the GET that found it, so that a change of the label ends the process.
/// Once adopted, that watch is closed (a verdict it reached first still ends the process) and
/// the startup watch starts from the adopting GET. Cancel by dropping the future (the watch is
/// aborted with it). Errs only when the watch task itself failed (panicked).
pub async fn adopt(
    client: &Client,
    node_name: &str,
    status: &Arc<Status>,
    mut backoff: Backoff,
) -> Result<Adoption, JoinError> {
    let mut broken_watch: Option<StartupWatch> = None;
    loop {
        let attempt = try_adopt(client, node_name).await;
        let delay = backoff.next_delay();
        match attempt {
            Ok(Attempt::Adopted(a)) => {
                if let Some(mut w) = broken_watch.take()
                    && let Some(exit) = exit_of(&w.close().await?)
                {
                    return Ok(Adoption::Exit(exit));
                }
                tracing::info!(assignment = %a.assignment.annotation_value(), "adopted the assignment");
                status.api_recovered("adoption");
                status.set_adopted(&a.assignment.annotation_value());
                let watch = StartupWatch::start(client, a.baseline(), status);
                return Ok(Adoption::Adopted(a, watch));
            }
            Ok(Attempt::NoSite) => {
                status.clear_broken_assignment();
                tracing::warn!(node = node_name, retry_in = ?delay, "the Node belongs to no Site yet; waiting")
            }
            Ok(Attempt::Broken(b)) => {
                tracing::warn!(node = node_name, pool_label = %b.pool_label, site = %b.site,
                    retry_in = ?delay, reason = %b.reason(), "broken assignment");
                status.set_broken_assignment(&b);
                if broken_watch.is_none() {
                    broken_watch = Some(StartupWatch::start(client, b.baseline(), status));
                }
            }
            Err(e) => {
                let error = crate::k8s::error::one_line(&e);
                tracing::warn!(node = node_name, %error, retry_in = ?delay, "adoption failed; retrying");
                status.api_failed("adoption", error);
            }
        }
        let watch_end = async {
            match broken_watch.as_mut() {
                Some(w) => w.ended().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            end = watch_end => {
                if let Some(exit) = exit_of(&end?) {
                    return Ok(Adoption::Exit(exit));
                }
                // Ended without a verdict: the next broken attempt starts it again.
                broken_watch = None;
            }
        }
    }
}
