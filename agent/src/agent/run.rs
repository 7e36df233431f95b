//! The agent's life (part 1): adopt, watch the own Node until acknowledged, keep caches, and
//! reconcile (resolve and print the plan: `--dry-run`), acknowledging the first success.

use super::AgentArgs;
use super::Exit;
use super::ack::acknowledge;
use super::adopt::{Adopted, adopt};
use super::node_watch::{Verdict, WatchEnd, watch_own_node};
use super::taint::{GATEWAY_TAINT_KEY, RetryPolicy, remove_gateway_taint};
use crate::k8s::client::{self, Source};
use crate::k8s::live::SOURCE;
use crate::k8s::store::{Change, Store, reflect};
use crate::k8s::{Backoff, ResourceKind};
use anyhow::{Context, Result, anyhow};
use kube::Client;
use mtu_solver::Solver;
use mtu_solver::report::{self, Renderer};
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use topology_core::decode::{Decoded, Kind, POOL_LABEL_KEY, SITE_LABEL_KEY};
use topology_core::diag::sort_diagnostics;
use topology_core::model::Topology;

/// Debounce of cache changes.
pub const DEBOUNCE: Duration = Duration::from_millis(200);
/// Periodic resync.
pub const RESYNC: Duration = Duration::from_secs(60);
/// Poll interval of `--manifests`.
pub const MANIFEST_POLL: Duration = Duration::from_secs(2);

/// The caches of every kind, kept by reflector tasks (aborted on drop).
#[derive(Debug)]
pub struct Caches {
    stores: Vec<Arc<Store>>,
    tasks: Vec<JoinHandle<()>>,
}

impl Caches {
    /// Starts a reflector per kind; changes are announced on `changes`.
    pub fn start(client: &Client, changes: &mpsc::UnboundedSender<Change>) -> Caches {
        let mut stores = Vec::new();
        let mut tasks = Vec::new();
        for kind in ResourceKind::ALL {
            let store = Arc::new(Store::new(kind));
            tasks.push(tokio::spawn(reflect(
                client.clone(),
                store.clone(),
                None,
                changes.clone(),
                Backoff::watch(),
            )));
            stores.push(store);
        }
        Caches { stores, tasks }
    }

    /// Whether every cache completed its initial LIST.
    pub fn synced(&self) -> bool {
        self.stores.iter().all(|s| s.synced())
    }

    /// Decodes a snapshot of every cache; the own Node's labels are pinned to the adopted
    /// assignment (it stays fixed for the life of the process).
    pub fn decoded(&self, adopted: &Adopted) -> Decoded {
        let mut d = Decoded::default();
        for s in &self.stores {
            for (name, obj) in s.snapshot().iter() {
                if s.kind().kind == Kind::Node && *name == adopted.node_name {
                    d.add_json(SOURCE, pin(adopted, obj.clone()));
                } else {
                    d.add_json(SOURCE, obj.clone());
                }
            }
        }
        d
    }
}

impl Drop for Caches {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// The own Node with its site and pool labels set to the adopted assignment.
pub fn pin(adopted: &Adopted, mut node: Value) -> Value {
    if let Some(meta) = node.get_mut("metadata").and_then(Value::as_object_mut) {
        let labels = meta
            .entry("labels")
            .or_insert_with(|| Value::Object(Default::default()));
        if !labels.is_object() {
            *labels = Value::Object(Default::default());
        }
        if let Some(l) = labels.as_object_mut() {
            l.insert(
                SITE_LABEL_KEY.to_string(),
                Value::String(adopted.assignment.site.clone()),
            );
            l.insert(
                POOL_LABEL_KEY.to_string(),
                Value::String(adopted.assignment.pool.clone().unwrap_or_default()),
            );
        }
    }
    node
}

/// Resolves `node_name`'s plan: the `resolve -o json` document for that node alone.
pub fn plan_document(
    decoded: &Decoded,
    node_name: &str,
    settings: mtu_solver::Settings,
) -> Result<String> {
    let topo = Topology::build(decoded.objects.iter(), decoded.diagnostics.iter().cloned());
    let id = topo
        .node_id(node_name)
        .ok_or_else(|| anyhow!("node {node_name} is not in the topology (no Site?)"))?;
    let mut solver = Solver::new(&topo, settings);
    let plan = solver.plan(id);
    let mut diags = topo.diagnostics.clone();
    diags.extend(plan.diagnostics.iter().cloned());
    sort_diagnostics(&mut diags);
    let plans = [plan];
    let mut r = Renderer::new(&solver, false);
    let doc = report::resolve_out(&topo, &mut r, &plans, &diags);
    serde_json::to_string_pretty(&doc).context("cannot write the plan")
}

/// Whether the adopted Node carried the gateway taint.
pub fn carries_gateway_taint(node: &Value) -> bool {
    node.pointer("/spec/taints")
        .and_then(Value::as_array)
        .is_some_and(|ts| {
            ts.iter().any(|t| {
                t.get("key").and_then(Value::as_str) == Some(GATEWAY_TAINT_KEY)
                    && t.get("effect").and_then(Value::as_str) == Some("NoSchedule")
            })
        })
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

/// The agent from its arguments: manifests or an API server.
pub async fn main(args: &AgentArgs) -> Result<Exit> {
    if let Some(m) = &args.manifests {
        return run_manifests(args, m, shutdown_signal()).await;
    }
    let src = Source {
        kubeconfig: args.kubeconfig.clone(),
        in_cluster: args.in_cluster,
    };
    let client = client::client(&src).await?;
    run(client, args, shutdown_signal()).await
}

/// `--manifests`: resolve from files, re-read every 2 s; prints the plan when it changes.
pub async fn run_manifests(
    args: &AgentArgs,
    path: &str,
    shutdown: impl Future<Output = ()>,
) -> Result<Exit> {
    tokio::pin!(shutdown);
    let mut last: Option<String> = None;
    loop {
        let doc = crate::input::load(std::slice::from_ref(&path.to_string()))
            .and_then(|d| plan_document(&d, &args.node_name, args.settings()));
        match doc {
            Ok(doc) => {
                if last.as_ref() != Some(&doc) {
                    println!("{doc}");
                    last = Some(doc);
                }
                if args.once {
                    return Ok(Exit::Done);
                }
            }
            Err(e) if args.once => return Err(e),
            Err(e) => tracing::warn!(error = %format!("{e:#}"), "reconcile failed"),
        }
        tokio::select! {
            _ = tokio::time::sleep(MANIFEST_POLL) => {}
            _ = &mut shutdown => return Ok(Exit::Done),
        }
    }
}

/// The agent against an API server until `shutdown`, `--once` done, or a verdict of the startup
/// watch.
pub async fn run(
    client: Client,
    args: &AgentArgs,
    shutdown: impl Future<Output = ()>,
) -> Result<Exit> {
    tokio::pin!(shutdown);
    let adopted = tokio::select! {
        a = adopt(&client, &args.node_name, Backoff::watch()) => a,
        _ = &mut shutdown => return Ok(Exit::Done),
    };
    let (cancel_tx, cancel_rx) = watch::channel(false);
    let mut node_watch: Option<JoinHandle<WatchEnd>> = Some(tokio::spawn(watch_own_node(
        client.clone(),
        adopted.clone(),
        cancel_rx,
        Backoff::watch(),
    )));
    // The change queue exists before any cache starts: nothing that arrives is lost.
    let (tx, mut rx) = mpsc::unbounded_channel::<Change>();
    let caches = Caches::start(&client, &tx);
    let mut first_success = false;
    let mut taint_pending =
        adopted.assignment.pool.is_none() && carries_gateway_taint(&adopted.node);
    let mut last: Option<String> = None;
    let mut resync = tokio::time::interval(RESYNC);
    resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let watch_end = async {
            match node_watch.as_mut() {
                Some(h) => h.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            end = watch_end => {
                node_watch = None;
                match end {
                    Ok(WatchEnd::Verdict(Verdict::Deleted)) => return Ok(Exit::NodeDeleted),
                    Ok(WatchEnd::Verdict(Verdict::Changed(why))) => return Ok(Exit::AssignmentChanged(why)),
                    Ok(WatchEnd::Verdict(Verdict::Unchanged)) | Ok(WatchEnd::Cancelled) => {}
                    Err(e) => return Err(anyhow!("the own-Node watch failed: {e}")),
                }
                continue;
            }
            c = rx.recv() => {
                if c.is_none() {
                    return Err(anyhow!("every cache stopped"));
                }
                tokio::time::sleep(DEBOUNCE).await;
                while rx.try_recv().is_ok() {}
            }
            _ = resync.tick() => {}
            _ = &mut shutdown => return Ok(Exit::Done),
        }
        if !caches.synced() {
            continue;
        }
        let result = reconcile_once(
            &client,
            args,
            &adopted,
            &caches,
            &mut last,
            &mut first_success,
            &mut taint_pending,
            &cancel_tx,
            &mut node_watch,
        )
        .await;
        match result {
            Ok(Some(exit)) => return Ok(exit),
            Ok(None) => {
                if args.once {
                    return Ok(Exit::Done);
                }
            }
            Err(e) if args.once => return Err(e),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "reconcile failed; the next one redoes every step")
            }
        }
    }
}

/// One reconcile: resolve, print (dry run), then on the first success acknowledge and close the
/// startup watch; remove the gateway taint while the worker still carries it.
#[allow(clippy::too_many_arguments)]
async fn reconcile_once(
    client: &Client,
    args: &AgentArgs,
    adopted: &Adopted,
    caches: &Caches,
    last: &mut Option<String>,
    first_success: &mut bool,
    taint_pending: &mut bool,
    cancel_tx: &watch::Sender<bool>,
    node_watch: &mut Option<JoinHandle<WatchEnd>>,
) -> Result<Option<Exit>> {
    let doc = plan_document(&caches.decoded(adopted), &args.node_name, args.settings())?;
    if last.as_ref() != Some(&doc) {
        println!("{doc}");
        *last = Some(doc);
    }
    if !*first_success {
        match (&args.pod_namespace, &args.pod_name) {
            (Some(ns), Some(pod)) => {
                acknowledge(client, ns, pod, &adopted.assignment)
                    .await
                    .with_context(|| {
                        format!("cannot write the acknowledgment on Pod {ns}/{pod}")
                    })?;
                tracing::info!(assignment = %adopted.assignment.annotation_value(), "acknowledged");
                // Close the startup watch right away.
                let _ = cancel_tx.send(true);
                if let Some(h) = node_watch.take() {
                    match h.await {
                        Ok(WatchEnd::Verdict(Verdict::Deleted)) => {
                            return Ok(Some(Exit::NodeDeleted));
                        }
                        Ok(WatchEnd::Verdict(Verdict::Changed(why))) => {
                            return Ok(Some(Exit::AssignmentChanged(why)));
                        }
                        Ok(_) => {}
                        Err(e) => return Err(anyhow!("the own-Node watch failed: {e}")),
                    }
                }
            }
            _ => tracing::warn!(
                "POD_NAME / POD_NAMESPACE unset: no acknowledgment; the startup watch stays"
            ),
        }
        *first_success = true;
    }
    if *taint_pending {
        remove_gateway_taint(client, &args.node_name, RetryPolicy::default())
            .await
            .context("cannot remove the gateway taint")?;
        *taint_pending = false;
    }
    Ok(None)
}
