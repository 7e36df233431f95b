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
use super::input::Input;
use super::probing::{self, LastRun, Lowerings, Probed};
use super::reconcile::{self, Kept, Outcome, Turn};
use super::source::{Files, Settled, Source, Wake};
use super::status::{self, Status};
use crate::k8s::Backoff;
use crate::k8s::client;
use crate::k8s::metrics::ApiMetrics;
use crate::settings::{self, Apply};
use anyhow::Result;
use kube::Client;
use mtu_solver::report::ResolveOut;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, watch};

/// How long a stopping agent waits for its last Events to be posted.
pub const EVENTS_GRACE: Duration = Duration::from_secs(2);

/// Resync intervals the loop may go without starting or finishing a reconcile before `/healthz`
/// fails: a live loop starts one at least every interval, so three mean a step has hung (a
/// kernel call, a lock, a request that never returns) and a restart is the remedy.
pub const STALL_RESYNCS: u32 = 3;

/// How long the loop may go without progress before `/healthz` fails ([`STALL_RESYNCS`]).
pub fn stall_after(s: &settings::Agent) -> Duration {
    s.resync.saturating_mul(STALL_RESYNCS)
}

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
    printed: Option<Arc<ResolveOut>>,
    probes: Option<Probes>,
    /// The own underlay the last turn detected (before probes lowered it): the next turn plans
    /// on it and plans again only if detection now says otherwise.
    underlay: Option<u32>,
    /// What the last turn that applied kept, while nothing failed since: a turn for a change
    /// of the input that cannot reach the plan ends without resolving, and one of caps alone
    /// takes them into its topology.
    kept: Option<Kept>,
    /// The desired state the kernel last took: a repair applies it again.
    applied: Option<Arc<dataplane_linux::DesiredState>>,
    /// The kernel's notifications about the state the adapter owns (`None`: not watched: a
    /// dry run, a fake, `--once`), and the watch that sends them.
    drift: Option<(mpsc::UnboundedReceiver<()>, applier::Watch)>,
}

/// The background probes (`--probe-interval`) between reconciles.
struct Probes {
    settings: settings::Probing,
    /// The last plan's links.
    targets: Vec<mtu_solver::probe::Target>,
    /// The node's underlay before probes lowered it, in the last plan.
    base: u32,
    lowerings: Lowerings,
    /// Whether the lowerings took the node's published `path-mtu` entries (after the first
    /// plan that read them).
    adopted: bool,
    /// What the probes lowered in the last reconcile.
    in_use: Probed,
    running: Option<tokio::task::JoinHandle<ProbeRun>>,
    /// When the next run is due (`None`: after the first plan).
    due: Option<tokio::time::Instant>,
}

/// What one background run returns.
type ProbeRun = (
    Vec<mtu_solver::probe::Target>,
    Duration,
    Result<Vec<mtu_solver::probe::LinkProbe>, crate::prober::ProbeError>,
);

/// What woke the loop on the probes' side.
enum ProbeEvent {
    /// A run is due.
    Due,
    /// A run finished.
    Finished(Result<ProbeRun, tokio::task::JoinError>),
    /// A lowering expired.
    Expired,
}

impl Probes {
    /// Waits for the next probe event (cancel-safe: a finished run stays in `running` until
    /// it is taken here).
    async fn next(&mut self) -> ProbeEvent {
        let expiry = self
            .lowerings
            .next_expiry()
            .map(tokio::time::Instant::from_std);
        let idle = self.running.is_none();
        let due = self.due;
        let ev = {
            let running = async {
                match self.running.as_mut() {
                    Some(h) => h.await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = running => ProbeEvent::Finished(r),
                _ = sleep_until(due), if idle => ProbeEvent::Due,
                _ = sleep_until(expiry) => ProbeEvent::Expired,
            }
        };
        if matches!(ev, ProbeEvent::Finished(_)) {
            self.running = None;
        }
        ev
    }

    /// Starts a run over the last plan's links on a blocking thread.
    fn start(&mut self) {
        self.due = Some(tokio::time::Instant::now() + self.settings.interval);
        let targets = self.targets.clone();
        let run = self.settings.run.clone();
        self.running = Some(tokio::task::spawn_blocking(move || {
            let started = Instant::now();
            let result = crate::prober::probe_links(&targets, &run);
            (targets, started.elapsed(), result)
        }));
    }

    /// What the probes lower in the next reconcile (`--underlay-from-probe`; nothing
    /// without it).
    fn probed(&self) -> Probed {
        if !self.settings.lower_underlay {
            return Probed::default();
        }
        Probed {
            keep_published: !self.adopted,
            ..self.lowerings.probed(self.base, Instant::now())
        }
    }
}

/// The next batch of kernel notifications about the adapter's state (never, when unwatched).
async fn next_drift(d: &mut Option<(mpsc::UnboundedReceiver<()>, applier::Watch)>) {
    match d {
        Some((rx, _)) => {
            if rx.recv().await.is_none() {
                // The watch's thread ended: nothing will come.
                *d = None;
            }
        }
        None => std::future::pending().await,
    }
}

async fn next_probe_event(p: &mut Option<Probes>) -> ProbeEvent {
    match p {
        Some(p) => p.next().await,
        None => std::future::pending().await,
    }
}

/// The loop until `stop`, `--once` done, or the source ends the process.
pub async fn run<S: Source>(
    s: &settings::Agent,
    source: &mut S,
    applier: Arc<dyn Applier>,
    status: &Status,
    mut stop: Stop,
) -> Result<Exit, Failure> {
    let mut l = Loop::new(s, status, applier);
    status.expect_progress(stall_after(s));
    let mut resync = tokio::time::interval_at(tokio::time::Instant::now() + s.resync, s.resync);
    resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut first = true;
    loop {
        // Whether this turn is for a change of the input (resyncs, retries and probes redo
        // every step).
        let mut changed = false;
        if !first {
            tokio::select! {
                w = source.next() => match w? {
                    Wake::Changed => {
                        changed = true;
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
                ev = next_probe_event(&mut l.probes) => {
                    if !l.on_probe_event(ev) {
                        continue;
                    }
                }
                _ = next_drift(&mut l.drift) => {
                    l.repair().await;
                    continue;
                }
                _ = stop.wait() => return Ok(Exit::Done),
            }
        }
        first = false;
        let started = Instant::now();
        status.progressed();
        let input = match source.input() {
            Ok(Some(d)) => d,
            Ok(None) => continue,
            Err(f) => {
                l.failed(started, f)?;
                continue;
            }
        };
        let probed = l.probes.as_mut().map_or_else(Probed::default, |p| {
            p.in_use = p.probed();
            p.in_use.clone()
        });
        // The turn takes what the last one kept (resyncs, retries and probes start afresh).
        let last = l.kept.take().filter(|_| changed);
        let resolved =
            match resolve_on_thread(s, input, l.applier.clone(), probed, l.underlay, last).await {
                Ok(Turn::Resolved(r)) => r,
                Ok(Turn::Unreached(kept)) => {
                    l.kept = Some(*kept);
                    l.unreached(started, source);
                    continue;
                }
                Err(f) => {
                    l.failed(started, f)?;
                    continue;
                }
            };
        l.underlay = Some(resolved.base_underlay());
        if !source.complete_for(resolved.linked()) {
            continue;
        }
        match apply_on_thread(resolved, l.applier.clone()).await {
            Ok((outcome, kept)) => match source.after_success(&outcome).await {
                Ok(exit) => {
                    source.settled(Settled::Applied);
                    l.kept = Some(kept);
                    l.applied = outcome.applied.in_kernel.then(|| outcome.desired.clone());
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

impl<'a> Loop<'a> {
    /// The loop's state before its first turn.
    fn new(s: &'a settings::Agent, status: &'a Status, applier: Arc<dyn Applier>) -> Loop<'a> {
        Loop {
            s,
            status,
            applier: applier.clone(),
            backoff: Backoff::watch(),
            retry_at: None,
            printed: None,
            underlay: None,
            kept: None,
            applied: None,
            drift: (!s.once)
                .then(|| {
                    let (tx, rx) = mpsc::unbounded_channel();
                    applier.watch(tx).map(|w| (rx, w))
                })
                .flatten(),
            // One reconcile with --once: nothing would wait for a probe.
            probes: s
                .probing
                .clone()
                .filter(|_| !s.once)
                .map(|settings| Probes {
                    settings,
                    targets: Vec::new(),
                    base: 0,
                    lowerings: Lowerings::default(),
                    adopted: false,
                    in_use: Probed::default(),
                    running: None,
                    due: None,
                }),
        }
    }

    /// Applies the desired state of the last reconcile again after the kernel announced changes
    /// to the state the adapter owns: someone deleted a route of its table, removed its rule,
    /// changed a device's MTU, flushed a neighbour. The input did not change, so neither did
    /// the plan; the adapter writes only what differs (nothing, when the notifications were its
    /// own writes). A burst of notifications is one repair.
    async fn repair(&mut self) {
        tokio::time::sleep(self.s.debounce).await;
        if let Some((rx, _)) = self.drift.as_mut() {
            while rx.try_recv().is_ok() {}
        }
        let Some(desired) = self.applied.clone() else {
            return;
        };
        let applier = self.applier.clone();
        let started = Instant::now();
        match tokio::task::spawn_blocking(move || applier.apply(&desired)).await {
            Ok(Ok(a)) if a.writes > 0 => {
                self.status.repaired();
                tracing::info!(
                    writes = a.writes,
                    took_ms = started.elapsed().as_millis(),
                    "repaired kernel state changed by someone else"
                );
            }
            Ok(Ok(_)) => tracing::debug!("kernel notifications: the kernel holds the plan"),
            Ok(Err(e)) => {
                self.status.count_error(Step::Dataplane);
                tracing::warn!(error = %e, "repairing the kernel state failed; the next resync retries");
            }
            Err(e) => tracing::warn!(error = %e, "the repair's thread failed"),
        }
    }

    /// Ends a turn whose change cannot reach the plan applied: that plan stands, so the source
    /// still checks it watches what the plan depends on, and ends what waited for it.
    fn unreached<S: Source>(&mut self, started: Instant, source: &mut S) {
        self.status.unreached(started.elapsed());
        tracing::debug!("the change cannot reach this node's plan: nothing to do");
        if let Some(k) = &self.kept
            && !source.complete_for(k.linked())
        {
            self.kept = None;
            return;
        }
        source.settled(Settled::Unreached);
    }

    fn succeeded(&mut self, started: Instant, o: &Outcome, uid: Option<String>) {
        let adopted = format!(
            "{}/{}/{}",
            uid.as_deref().unwrap_or("-"),
            o.site,
            o.pool.as_deref().unwrap_or("-")
        );
        self.status.set_adopted(&adopted);
        self.status.set_node(
            &self.s.node,
            Some(o.publication.underlay),
            o.publication.paths.as_ref(),
        );
        for (item, mtu) in &o.mtus {
            self.status.applied_mtu(item, *mtu);
        }
        let detail = serde_json::json!({
            "writes": o.applied.writes,
            "values": o.values,
            "plans": o.plans,
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
            plans = o.plans,
            underlay = o.publication.underlay,
            "reconciled"
        );
        if self.s.apply == Apply::DryRun {
            self.print_changed(&o.document);
        }
        self.backoff.reset();
        self.retry_at = None;
        self.plan_probes(o);
    }

    /// After a plan: the probes take its links, and probe now when a link changed (or at the
    /// first plan), unless a run is in progress (the next one then comes at its interval).
    fn plan_probes(&mut self, o: &Outcome) {
        let Some(p) = self.probes.as_mut() else {
            return;
        };
        let changed = probing::links_changed(&p.targets, &o.targets);
        p.targets = o.targets.clone();
        p.base = o.base_underlay;
        if p.settings.lower_underlay && !p.adopted {
            p.lowerings.adopt(
                &o.publication.paths_published,
                p.base,
                Instant::now(),
                p.settings.expiry,
            );
            p.adopted = true;
        }
        if (changed || p.due.is_none()) && p.running.is_none() && !p.targets.is_empty() {
            p.start();
        }
    }

    /// Handles a probe event; true when the node's underlay changed and the loop must
    /// reconcile.
    fn on_probe_event(&mut self, ev: ProbeEvent) -> bool {
        let Some(p) = self.probes.as_mut() else {
            return false;
        };
        let now = Instant::now();
        match ev {
            ProbeEvent::Due => {
                if !p.targets.is_empty() {
                    p.start();
                } else {
                    p.due = Some(tokio::time::Instant::now() + p.settings.interval);
                }
                false
            }
            ProbeEvent::Expired => {
                p.lowerings.record(p.base, &[], &[], now, p.settings.expiry);
                p.probed() != p.in_use
            }
            ProbeEvent::Finished(Err(e)) => {
                tracing::warn!(error = %e, "the probe task failed");
                false
            }
            ProbeEvent::Finished(Ok((_, _, Err(e)))) => {
                tracing::warn!(error = %e, "cannot probe the links");
                self.status.probe_failed(&e.to_string());
                false
            }
            ProbeEvent::Finished(Ok((targets, took, Ok(links)))) => {
                p.lowerings
                    .record(p.base, &targets, &links, now, p.settings.expiry);
                let run = LastRun {
                    at: std::time::SystemTime::now(),
                    took,
                    links,
                };
                for l in &run.links {
                    tracing::info!(peer = %l.peer, verdict = %l.verdict,
                        probed_underlay = ?l.probed_underlay, planned_underlay = l.planned_underlay,
                        link_mtu = l.link_mtu, probed_link_mtu = ?l.probed_link_mtu,
                        contradicts = ?l.contradicts, "probed");
                }
                let probed = p.probed();
                self.status
                    .probed(&run, &p.lowerings.current(now), p.settings.lower_underlay);
                if probed != p.in_use {
                    tracing::warn!(underlay = ?probed.underlay, paths = ?probed.paths,
                        base = p.base, "the probes changed what the node plans; reconciling");
                }
                probed != p.in_use
            }
        }
    }

    /// Records a failure and schedules the retry; with `--once` the failure ends the agent.
    fn failed(&mut self, started: Instant, f: Failure) -> Result<(), Failure> {
        self.kept = None;
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

    /// Prints the plan when it differs from the last one printed (`--dry-run`), streamed to
    /// standard output.
    fn print_changed(&mut self, doc: &Arc<ResolveOut>) {
        if self.printed.as_deref() == Some(&**doc) {
            return;
        }
        // Never a panic on a closed standard output: the agent goes on, and says why.
        if let Err(e) = crate::output::write_data(&**doc, crate::output::DataFormat::Json) {
            tracing::warn!(error = %e, "cannot print the plan");
        }
        self.printed = Some(doc.clone());
    }
}

/// A turn's resolve on a blocking thread.
async fn resolve_on_thread(
    s: &settings::Agent,
    input: Input,
    applier: Arc<dyn Applier>,
    probed: Probed,
    assumed: Option<u32>,
    last: Option<Kept>,
) -> Result<Turn, Failure> {
    let s = s.clone();
    tokio::task::spawn_blocking(move || {
        reconcile::resolve(&s, input, applier.as_ref(), &probed, assumed, last)
    })
    .await
    .map_err(|e| Failure::Dataplane(KernelError::Task(e)))?
}

/// A resolved plan applied on a blocking thread (never interrupted: a write step in progress
/// finishes); what the turn keeps with it.
async fn apply_on_thread(
    resolved: Box<reconcile::Resolved>,
    applier: Arc<dyn Applier>,
) -> Result<(Outcome, Kept), Failure> {
    tokio::task::spawn_blocking(move || reconcile::apply(*resolved, applier.as_ref()))
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
