//! The agent's one reconcile loop, whatever the source (files or the API) and the applier
//! (kernel, dry run, a test's fake): wait for a change, a resync or a retry; take the source's
//! input; resolve and apply on a blocking thread (never interrupted: a write step in progress
//! finishes); let the source publish; report. A failure is retried after a backoff (1 s doubling
//! to 60 s, with jitter) and redoes every step. A stop (SIGTERM, SIGINT) ends the loop between
//! steps, and the caches and watches are dropped with the source.

use super::Exit;
use super::api_source;
use super::applier::{self, Applier};
use super::failure::{Failure, KernelError, Step};
use super::reconcile::{Outcome, reconcile};
use super::source::{Files, Source, Wake};
use super::status::{self, Status};
use crate::k8s::Backoff;
use crate::k8s::client;
use crate::k8s::metrics::ApiMetrics;
use crate::settings::{self, Apply};
use anyhow::Result;
use kube::Client;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;
use topology_core::decode::Decoded;

/// How long a stopping agent waits for its last Events to be posted.
pub const EVENTS_GRACE: Duration = Duration::from_secs(2);

/// The stop signal, as a flag the loop checks between steps and a future it can wait on.
#[derive(Clone, Debug)]
pub struct Stop(watch::Receiver<bool>);

impl Stop {
    /// A stop that fires when `signal` completes.
    pub fn on(signal: impl Future<Output = ()> + Send + 'static) -> Stop {
        let (tx, rx) = watch::channel(false);
        tokio::spawn(async move {
            signal.await;
            tracing::info!("stopping");
            // No receiver left: the loop has ended already.
            let _ = tx.send(true);
        });
        Stop(rx)
    }

    /// SIGTERM or SIGINT.
    pub fn on_signals() -> Stop {
        Stop::on(shutdown_signal())
    }

    /// Whether the stop fired.
    pub fn stopped(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits until the stop fires (cancel-safe).
    pub async fn wait(&mut self) {
        while !*self.0.borrow_and_update() {
            if self.0.changed().await.is_err() {
                // The signal task is gone without firing: never.
                std::future::pending::<()>().await;
            }
        }
    }
}

/// SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = term => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

/// The agent from its settings: the HTTP servers first, then the source the settings name.
pub async fn main(s: Arc<settings::Agent>) -> Result<Exit> {
    let api = ApiMetrics::default();
    let status = Arc::new(Status::with_api(api.clone()));
    let servers = status::start(&s.listen, &s.status_address, status.clone()).await?;
    let stop = Stop::on_signals();
    let applier = applier::for_settings(&s);
    let result = match &s.source {
        settings::Source::Manifests { paths, poll } => {
            let mut files = Files::new(paths.clone(), *poll);
            run(&s, &mut files, applier, &status, stop)
                .await
                .map_err(anyhow::Error::new)
        }
        settings::Source::Api(src) => {
            let client = client::client_with_metrics(src, &api).await?;
            run_api(client, s.clone(), status.clone(), stop, applier)
                .await
                .map_err(anyhow::Error::new)
        }
    };
    drop(servers);
    result
}

/// The agent against an API server: adoption, then the loop; with its own Pod known, the
/// reports that need an operator (a broken assignment, a failed apply) become Warning Events.
pub async fn run_api(
    client: Client,
    s: Arc<settings::Agent>,
    status: Arc<Status>,
    mut stop: Stop,
    applier: Arc<dyn Applier>,
) -> Result<Exit, Failure> {
    let events = s
        .pod
        .clone()
        .map(|pod| status::Events::start(&client, pod, &status));
    let result = async {
        let started = tokio::select! {
            a = api_source::Api::start(client, s.clone(), status.clone()) => a?,
            _ = stop.wait() => return Ok(Exit::Done),
        };
        match started {
            Ok(mut source) => run(&s, &mut source, applier, &status, stop).await,
            Err(exit) => Ok(finish(exit, &applier).await),
        }
    }
    .await;
    if let Some(e) = events {
        e.finish(EVENTS_GRACE).await;
    }
    result
}

/// What the loop carries between reconciles.
struct Loop<'a> {
    s: &'a settings::Agent,
    status: &'a Status,
    applier: Arc<dyn Applier>,
    backoff: Backoff,
    retry_at: Option<tokio::time::Instant>,
    printed: Option<Value>,
}

/// The loop until `stop`, `--once` done, or the source ends the process.
pub async fn run<S: Source>(
    s: &settings::Agent,
    source: &mut S,
    applier: Arc<dyn Applier>,
    status: &Status,
    mut stop: Stop,
) -> Result<Exit, Failure> {
    let mut l = Loop {
        s,
        status,
        applier,
        backoff: Backoff::watch(),
        retry_at: None,
        printed: None,
    };
    let mut resync = tokio::time::interval_at(tokio::time::Instant::now() + s.resync, s.resync);
    resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut first = true;
    loop {
        if !first {
            tokio::select! {
                w = source.next() => match w? {
                    Wake::Changed => {
                        tokio::select! {
                            _ = tokio::time::sleep(s.debounce) => {}
                            _ = stop.wait() => return Ok(Exit::Done),
                        }
                        source.drain();
                    }
                    Wake::Exit(exit) => return Ok(finish(exit, &l.applier).await),
                },
                _ = resync.tick() => {}
                _ = sleep_until(l.retry_at), if l.retry_at.is_some() => {}
                _ = stop.wait() => return Ok(Exit::Done),
            }
        }
        first = false;
        let started = Instant::now();
        let decoded = match source.input() {
            Ok(Some(d)) => d,
            Ok(None) => continue,
            Err(f) => {
                l.failed(started, f)?;
                continue;
            }
        };
        match reconcile_on_thread(s, decoded, l.applier.clone()).await {
            Ok(outcome) => match source.after_success(&outcome).await {
                Ok(exit) => {
                    l.succeeded(started, &outcome, source.node_uid());
                    if let Some(exit) = exit {
                        return Ok(finish(exit, &l.applier).await);
                    }
                    if s.once {
                        return Ok(Exit::Done);
                    }
                }
                Err(f) => l.failed(started, f)?,
            },
            Err(f) => l.failed(started, f)?,
        }
        if stop.stopped() {
            return Ok(Exit::Done);
        }
    }
}

impl Loop<'_> {
    fn succeeded(&mut self, started: Instant, o: &Outcome, uid: Option<String>) {
        let adopted = format!(
            "{}/{}/{}",
            uid.as_deref().unwrap_or("-"),
            o.site,
            o.pool.as_deref().unwrap_or("-")
        );
        self.status.set_adopted(&adopted);
        self.status
            .set_node(&self.s.node, Some(o.publication.underlay));
        for (item, mtu) in &o.mtus {
            self.status.applied_mtu(item, *mtu);
        }
        let detail = serde_json::json!({
            "writes": o.applied.writes,
            "values": o.values,
            "dryRun": self.s.apply == Apply::DryRun,
        });
        self.status
            .reconciled_with(started.elapsed(), o.document.clone(), Some(detail));
        for note in &o.applied.notes {
            tracing::info!(note = %note, "dataplane left alone");
        }
        for op in &o.applied.planned {
            tracing::info!(op = %op, "dry run: would write");
        }
        tracing::info!(
            writes = o.applied.writes,
            values = o.values,
            underlay = o.publication.underlay,
            "reconciled"
        );
        if self.s.apply == Apply::DryRun {
            self.print_changed(&o.document);
        }
        self.backoff.reset();
        self.retry_at = None;
    }

    /// Records a failure and schedules the retry; with `--once` the failure ends the agent.
    fn failed(&mut self, started: Instant, f: Failure) -> Result<(), Failure> {
        self.status.failed(started.elapsed(), &f);
        if f.step() == Step::Dataplane {
            self.status
                .report(status::Report::ApplyFailed { error: f.text() });
        }
        if self.s.once {
            return Err(f);
        }
        let delay = self.backoff.next_delay();
        tracing::warn!(step = %f.step(), error = %f.text(), retry_in = ?delay,
            "reconcile failed; the next one redoes every step");
        self.retry_at = Some(tokio::time::Instant::now() + delay);
        Ok(())
    }

    /// Prints the plan when it differs from the last one printed (`--dry-run`).
    fn print_changed(&mut self, doc: &Value) {
        if self.printed.as_ref() == Some(doc) {
            return;
        }
        match serde_json::to_string_pretty(doc) {
            // Never a panic on a closed standard output: the agent goes on, and says why.
            Ok(text) => {
                if let Err(e) = crate::common::write_text(&format!("{text}\n")) {
                    tracing::warn!(error = %e, "cannot print the plan");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot print the plan"),
        }
        self.printed = Some(doc.clone());
    }
}

/// One reconcile on a blocking thread.
async fn reconcile_on_thread(
    s: &settings::Agent,
    decoded: Decoded,
    applier: Arc<dyn Applier>,
) -> Result<Outcome, Failure> {
    let s = s.clone();
    tokio::task::spawn_blocking(move || reconcile(&s, &decoded, applier.as_ref()))
        .await
        .map_err(|e| Failure::Dataplane(KernelError::Task(e)))?
}

/// Ends the process as `exit` says; the Node's deletion first removes the kernel state the
/// agent owns (`agent.md`: exit 4 after the owned dataplane state is removed).
async fn finish(exit: Exit, applier: &Arc<dyn Applier>) -> Exit {
    if exit == Exit::NodeDeleted {
        let applier = applier.clone();
        match tokio::task::spawn_blocking(move || applier.remove_owned()).await {
            Ok(Ok(done)) => {
                tracing::info!(
                    writes = done.writes,
                    "the Node was deleted; owned kernel state removed"
                )
            }
            Ok(Err(e)) => {
                tracing::error!(error = %e, "the Node was deleted; cannot remove the owned kernel state")
            }
            Err(e) => tracing::error!(error = %e, "the Node was deleted; the removal task failed"),
        }
    }
    exit
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
