//! The agent's life (part 1): adopt, watch the own Node until acknowledged, keep caches, and
//! reconcile (resolve and print the plan: `--dry-run`), acknowledging the first success.

use super::AgentArgs;
use super::Exit;
use super::ack::acknowledge;
use super::adopt::Adopted;
use super::node_watch::WatchEnd;
use super::startup::{self, Adoption, StartupWatch, exit_of};
use super::status::{self, Status};
use super::taint::{GATEWAY_TAINT_KEY, RetryPolicy, remove_gateway_taint};
use crate::k8s::client::{self, Source};
use crate::k8s::live::SOURCE;
use crate::k8s::metrics::ApiMetrics;
use crate::k8s::store::{Change, Objects, ReflectOptions, Store, reflect};
use crate::k8s::{Backoff, ResourceKind};
use anyhow::{Context, Result, anyhow};
use kube::Client;
use mtu_solver::Solver;
use mtu_solver::report::{self, Renderer};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
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

/// The three heavy kinds, watched only while needed.
pub const HEAVY: [Kind; 3] = [
    Kind::GatewayPool,
    Kind::GatewayPoolNode,
    Kind::GatewayPoolPeering,
];

/// Whether a kind is one of the heavy ones.
pub fn is_heavy(k: Kind) -> bool {
    HEAVY.contains(&k)
}

/// One cache and the reflector that keeps it (none while the kind is not watched).
#[derive(Debug)]
struct Cache {
    store: Arc<Store>,
    task: Option<JoinHandle<()>>,
}

/// The caches, kept by reflector tasks (aborted on drop). The light kinds are always watched;
/// the heavy kinds (GatewayPools, GatewayPoolNodes, GatewayPoolPeerings) only while needed; Nodes
/// metadata-only, restricted by the Site label to the Sites the node has links into.
pub struct Caches {
    client: Client,
    changes: mpsc::UnboundedSender<Change>,
    caches: Vec<Cache>,
    heavy: bool,
    /// The Node metadata cache and its label selector.
    nodes: Option<(String, Cache)>,
}

impl Caches {
    /// Starts a reflector per light kind, and per heavy kind when `heavy`; changes are
    /// announced on `changes`.
    pub fn start(
        client: &Client,
        changes: &mpsc::UnboundedSender<Change>,
        status: &Status,
        heavy: bool,
    ) -> Caches {
        let mut c = Caches {
            client: client.clone(),
            changes: changes.clone(),
            caches: ResourceKind::ALL
                .into_iter()
                .filter(|k| k.kind != Kind::Node)
                .map(|k| Cache {
                    store: Arc::new(Store::new(k)),
                    task: None,
                })
                .collect(),
            heavy: false,
            nodes: None,
        };
        for i in 0..c.caches.len() {
            if !c
                .caches
                .get(i)
                .is_some_and(|x| is_heavy(x.store.kind().kind))
            {
                c.spawn(i, status);
            }
        }
        c.set_heavy(heavy, status);
        c
    }

    fn spawn(&mut self, i: usize, status: &Status) {
        let (client, changes) = (self.client.clone(), self.changes.clone());
        if let Some(c) = self.caches.get_mut(i) {
            let kind = c.store.kind();
            status.set_watch(kind.plural(), true);
            c.store = Arc::new(Store::new(kind));
            c.task = Some(tokio::spawn(reflect(
                client,
                c.store.clone(),
                ReflectOptions::default(),
                changes,
                Backoff::watch(),
            )));
        }
    }

    /// Whether the heavy kinds are watched.
    pub fn heavy(&self) -> bool {
        self.heavy
    }

    /// Starts or stops the heavy kinds' reflectors (stopping closes their watches and empties
    /// their caches).
    pub fn set_heavy(&mut self, on: bool, status: &Status) {
        if on == self.heavy {
            return;
        }
        self.heavy = on;
        for i in 0..self.caches.len() {
            let Some(kind) = self.caches.get(i).map(|c| c.store.kind()) else {
                continue;
            };
            if !is_heavy(kind.kind) {
                continue;
            }
            if on {
                self.spawn(i, status);
            } else if let Some(c) = self.caches.get_mut(i) {
                if let Some(t) = c.task.take() {
                    t.abort();
                }
                c.store = Arc::new(Store::new(kind));
                status.set_watch(kind.plural(), false);
            }
        }
    }

    /// Watches the metadata of the Nodes of `sites` (by the Site label); returns whether the
    /// selection changed (the new cache then has to complete its LIST).
    pub fn set_node_sites(&mut self, sites: &BTreeSet<String>, status: &Status) -> bool {
        let names: Vec<&str> = sites.iter().map(String::as_str).collect();
        let selector = format!("{SITE_LABEL_KEY} in ({})", names.join(","));
        if self.nodes.as_ref().is_some_and(|(s, _)| *s == selector) {
            return false;
        }
        if let Some((_, old)) = self.nodes.take()
            && let Some(t) = old.task
        {
            t.abort();
        }
        let kind = ResourceKind::of(Kind::Node);
        let store = Arc::new(Store::new(kind));
        let opts = ReflectOptions {
            label_selector: Some(selector.clone()),
            metadata_only: true,
        };
        let task = tokio::spawn(reflect(
            self.client.clone(),
            store.clone(),
            opts,
            self.changes.clone(),
            Backoff::watch(),
        ));
        status.set_watch("nodes (metadata)", true);
        self.nodes = Some((
            selector,
            Cache {
                store,
                task: Some(task),
            },
        ));
        true
    }

    /// Whether every watched cache completed its initial LIST.
    pub fn synced(&self) -> bool {
        self.caches
            .iter()
            .chain(self.nodes.iter().map(|(_, c)| c))
            .filter(|c| c.task.is_some())
            .all(|c| c.store.synced())
    }

    /// The store of a kind.
    pub fn store(&self, k: Kind) -> Option<&Arc<Store>> {
        self.caches
            .iter()
            .find(|c| c.store.kind().kind == k)
            .map(|c| &c.store)
    }

    /// Decodes a snapshot of every watched cache; the own Node's labels are pinned to the
    /// adopted assignment (it stays fixed for the life of the process).
    pub fn decoded(&self, adopted: &Adopted) -> Decoded {
        let mut d = Decoded::default();
        let (mut slices, mut pools) = (Vec::new(), Vec::new());
        for c in self.caches.iter().filter(|c| c.task.is_some()) {
            let snap = c.store.snapshot();
            for obj in snap.values() {
                d.add_json(SOURCE, obj.clone());
            }
            match c.store.kind().kind {
                Kind::SiteNodeSlice => slices.push(snap),
                Kind::GatewayPool => pools.push(snap),
                _ => {}
            }
        }
        let meta = self
            .nodes
            .as_ref()
            .map(|(_, c)| c.store.snapshot())
            .unwrap_or_default();
        for n in node_objects(adopted, &meta, &slices, &pools) {
            d.add_json(SOURCE, n);
        }
        d
    }
}

impl Drop for Caches {
    fn drop(&mut self) {
        for c in self
            .caches
            .iter_mut()
            .chain(self.nodes.iter_mut().map(|(_, c)| c))
        {
            if let Some(t) = c.task.take() {
                t.abort();
            }
        }
    }
}

/// Whether the heavy kinds are needed: the node is a gateway, or an enabled
/// SiteGatewayPoolAssignment lists its Site.
pub fn needs_heavy(adopted: &Adopted, assignments: &crate::k8s::store::Objects) -> bool {
    if adopted.assignment.pool.is_some() {
        return true;
    }
    assignments.values().any(|a| {
        let enabled = a.pointer("/spec/enabled").and_then(Value::as_bool) != Some(false);
        let site = adopted.assignment.site.as_str();
        let lists_site = a
            .pointer("/spec/sites")
            .and_then(Value::as_array)
            .is_some_and(|ss| ss.iter().any(|s| s.as_str() == Some(site)));
        enabled && lists_site
    })
}

/// The Node objects the topology sees in agent mode: the own Node (from adoption, its Site and
/// pool pinned, its annotations refreshed from the metadata cache), and for every node of the
/// metadata cache that a SiteNodeSlice (workers) or a GatewayPool status (gateways) lists, a Node
/// made of its metadata and the addresses and pod CIDRs listed there, merged by name.
pub fn node_objects(
    adopted: &Adopted,
    meta: &Objects,
    slices: &[Arc<Objects>],
    pools: &[Arc<Objects>],
) -> Vec<Value> {
    let mut entries: BTreeMap<&str, &Value> = BTreeMap::new();
    let listed = slices
        .iter()
        .flat_map(|s| s.values())
        .filter_map(|s| s.get("nodes").and_then(Value::as_array))
        .chain(
            pools
                .iter()
                .flat_map(|p| p.values())
                .filter_map(|p| p.pointer("/status/nodes").and_then(Value::as_array)),
        );
    for list in listed {
        for e in list {
            if let Some(n) = e.get("name").and_then(Value::as_str) {
                entries.entry(n).or_insert(e);
            }
        }
    }
    let mut own = pin(adopted, adopted.node.clone());
    if let Some(a) = meta
        .get(&adopted.node_name)
        .and_then(|m| m.pointer("/metadata/annotations"))
        && let Some(m) = own.get_mut("metadata").and_then(Value::as_object_mut)
    {
        m.insert("annotations".to_string(), a.clone());
    }
    let mut out = vec![own];
    for (name, m) in meta {
        if *name == adopted.node_name {
            continue;
        }
        if let Some(e) = entries.get(name.as_str()) {
            out.push(peer_node(m, e));
        }
    }
    out
}

/// A Node from a node's metadata and a SiteNodeSlice or pool status entry.
pub fn peer_node(meta: &Value, entry: &Value) -> Value {
    let ips = |field: &str, ty: &str| -> Vec<Value> {
        entry
            .get(field)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|ip| serde_json::json!({"type": ty, "address": ip}))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut addresses = ips("internalIPs", "InternalIP");
    addresses.extend(ips("externalIPs", "ExternalIP"));
    let m = |k: &str| {
        meta.pointer(&format!("/metadata/{k}"))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let mut metadata = serde_json::Map::new();
    for k in ["name", "labels", "annotations"] {
        let v = m(k);
        if !v.is_null() {
            metadata.insert(k.to_string(), v);
        }
    }
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata,
        "status": {"addresses": addresses},
        "spec": {"podCIDRs": entry.get("podCIDRs").cloned().unwrap_or(Value::Array(Vec::new()))},
    })
}

/// The Sites `node_name` has links into (its own included), from a resolve of `decoded`.
pub fn linked_sites(
    decoded: &Decoded,
    node_name: &str,
    settings: mtu_solver::Settings,
) -> Option<BTreeSet<String>> {
    let topo = Topology::build(decoded.objects.iter(), decoded.diagnostics.iter().cloned());
    let id = topo.node_id(node_name)?;
    let mut solver = Solver::new(&topo, settings);
    let plan = solver.plan(id);
    let mut sites: BTreeSet<String> = BTreeSet::new();
    sites.insert(topo.site_name_of(id).to_string());
    for l in &plan.links {
        sites.insert(topo.site_name_of(l.peer).to_string());
    }
    Some(sites)
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
) -> Result<Value> {
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
    serde_json::to_value(&doc).context("cannot write the plan")
}

/// Prints the plan when it differs from the last one printed.
fn print_changed(doc: &Value, last: &mut Option<Value>) {
    if last.as_ref() != Some(doc) {
        match serde_json::to_string_pretty(doc) {
            // Never a panic on a closed standard output: the agent goes on, and says why.
            Ok(text) => {
                if let Err(e) = crate::common::write_text(&format!("{text}\n")) {
                    tracing::warn!(error = %e, "cannot print the plan");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot print the plan"),
        }
        *last = Some(doc.clone());
    }
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

/// The agent from its arguments: the HTTP server first, then manifests or an API server.
pub async fn main(args: &AgentArgs) -> Result<Exit> {
    let api = ApiMetrics::default();
    let status = Arc::new(Status::with_api(api.clone()));
    let servers = status::start(&args.listen, &args.status_address, status.clone()).await?;
    let result = match &args.manifests {
        Some(m) => run_manifests(args, m, &status, shutdown_signal()).await,
        None => {
            let src = Source {
                kubeconfig: args.kubeconfig.clone(),
                in_cluster: args.in_cluster,
                context: None,
            };
            match client::client_with_metrics(&src, &api).await {
                Ok(client) => run(client, args, status.clone(), shutdown_signal()).await,
                Err(e) => Err(e),
            }
        }
    };
    drop(servers);
    result
}

/// `--manifests`: resolve from files, re-read every 2 s; prints the plan when it changes.
pub async fn run_manifests(
    args: &AgentArgs,
    path: &str,
    status: &Status,
    shutdown: impl Future<Output = ()>,
) -> Result<Exit> {
    tokio::pin!(shutdown);
    let mut last: Option<Value> = None;
    loop {
        let started = Instant::now();
        let doc = crate::input::load(std::slice::from_ref(&path.to_string()))
            .and_then(|d| plan_document(&d, &args.node_name, args.settings()));
        match doc {
            Ok(doc) => {
                print_changed(&doc, &mut last);
                status.reconciled(started.elapsed(), doc);
                if args.once {
                    return Ok(Exit::Done);
                }
            }
            Err(e) if args.once => return Err(e),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "reconcile failed");
                status.failed(started.elapsed(), "resolve", format!("{e:#}"));
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(MANIFEST_POLL) => {}
            _ = &mut shutdown => return Ok(Exit::Done),
        }
    }
}

/// The reconcile step that applies the plan to the dataplane.
const STEP_DATAPLANE: &str = "dataplane";

/// A failed reconcile step.
#[derive(Debug)]
pub struct Failure {
    /// The step: `resolve`, `acknowledge`, `watch` or `taint`.
    pub step: &'static str,
    /// What went wrong (with the API status when there is one).
    pub error: anyhow::Error,
}

impl Failure {
    fn new(step: &'static str, error: anyhow::Error) -> Failure {
        Failure { step, error }
    }
}

/// What the loop carries between reconciles.
struct LoopState {
    applier: Arc<dyn super::publish::Applier>,
    first_success: bool,
    taint_pending: bool,
    last: Option<Value>,
    startup: StartupWatch,
}

fn verdict_exit(end: Result<WatchEnd, tokio::task::JoinError>) -> Result<Option<Exit>, Failure> {
    match end {
        Ok(end) => Ok(exit_of(&end)),
        Err(e) => Err(Failure::new(
            "watch",
            anyhow!("the own-Node watch failed: {e}"),
        )),
    }
}

async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The agent against an API server until `shutdown`, `--once` done, or a verdict of the startup
/// watch. A failed reconcile is retried after a backoff (1 s doubling to 60 s), and on every cache
/// change and resync.
pub async fn run(
    client: Client,
    args: &AgentArgs,
    status: Arc<Status>,
    shutdown: impl Future<Output = ()>,
) -> Result<Exit> {
    run_with(
        client,
        args,
        status,
        shutdown,
        Arc::new(super::publish::Netlink),
    )
    .await
}

/// How long a stopping agent waits for its last Events to be posted.
pub const EVENTS_GRACE: Duration = Duration::from_secs(2);

/// [`run`] with the dataplane behind `applier` (tests pass a fake that can fail on purpose).
/// With its own Pod known (`POD_NAME`, `POD_NAMESPACE`), a broken assignment and a failed apply
/// are also posted as Warning Events on that Pod.
pub async fn run_with(
    client: Client,
    args: &AgentArgs,
    status: Arc<Status>,
    shutdown: impl Future<Output = ()>,
    applier: Arc<dyn super::publish::Applier>,
) -> Result<Exit> {
    let events = match (&args.pod_namespace, &args.pod_name) {
        (Some(namespace), Some(name)) => Some(status::Events::start(
            &client,
            status::PodRef {
                namespace: namespace.clone(),
                name: name.clone(),
                uid: args.pod_uid.clone(),
            },
            &status,
        )),
        _ => None,
    };
    let result = run_loop(client, args, status, shutdown, applier).await;
    if let Some(e) = events {
        e.finish(EVENTS_GRACE).await;
    }
    result
}

async fn run_loop(
    client: Client,
    args: &AgentArgs,
    status: Arc<Status>,
    shutdown: impl Future<Output = ()>,
    applier: Arc<dyn super::publish::Applier>,
) -> Result<Exit> {
    tokio::pin!(shutdown);
    // Adoption runs the startup watch itself (also while the assignment is broken) and hands it
    // over once adopted.
    let adoption = tokio::select! {
        a = startup::adopt(&client, &args.node_name, &status, Backoff::watch()) => a,
        _ = &mut shutdown => return Ok(Exit::Done),
    };
    let (adopted, startup_watch) =
        match adoption.map_err(|e| anyhow!("the own-Node watch failed: {e}"))? {
            Adoption::Adopted(a, w) => (*a, w),
            Adoption::Exit(exit) => return Ok(exit),
        };
    // The change queue exists before any cache starts: nothing that arrives is lost.
    let (tx, mut rx) = mpsc::unbounded_channel::<Change>();
    // The heavy kinds start with a gateway; a worker starts them once an enabled assignment
    // lists its Site (known from the light caches).
    let mut caches = Caches::start(&client, &tx, &status, adopted.assignment.pool.is_some());
    let mut st = LoopState {
        applier,
        first_success: false,
        taint_pending: adopted.assignment.pool.is_none() && carries_gateway_taint(&adopted.node),
        last: None,
        startup: startup_watch,
    };
    let mut stop_heavy_after_success = false;
    let mut resync = tokio::time::interval(RESYNC);
    resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut retry_backoff = Backoff::watch();
    let mut retry_at: Option<tokio::time::Instant> = None;
    loop {
        tokio::select! {
            end = st.startup.ended() => {
                match verdict_exit(end) {
                    Ok(Some(exit)) => return Ok(exit),
                    Ok(None) => {}
                    Err(f) => return Err(f.error),
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
            _ = sleep_until(retry_at), if retry_at.is_some() => {}
            _ = &mut shutdown => return Ok(Exit::Done),
        }
        if let Some(a) = caches.store(Kind::SiteGatewayPoolAssignment)
            && a.synced()
        {
            let need = needs_heavy(&adopted, &a.snapshot());
            if need && !caches.heavy() {
                tracing::info!("watching GatewayPools, GatewayPoolNodes, GatewayPoolPeerings");
                caches.set_heavy(true, &status);
            }
            // Stop them only after a reconcile without them succeeded: the dataplane state that
            // depended on them (uplinks, gateway routes) must be removed first.
            stop_heavy_after_success = !need && caches.heavy();
        }
        if !caches.synced() {
            continue;
        }
        // Node metadata (underlay annotations) of the Sites it has links into: when that
        // selection changes, wait for the new cache before reconciling.
        if let Some(sites) =
            linked_sites(&caches.decoded(&adopted), &args.node_name, args.settings())
            && caches.set_node_sites(&sites, &status)
        {
            continue;
        }
        let started = Instant::now();
        let result = reconcile_once(&client, args, &adopted, &caches, &mut st).await;
        match result {
            Ok((exit, plan)) => {
                status.reconciled(started.elapsed(), plan);
                if stop_heavy_after_success {
                    tracing::info!(
                        "dataplane state without gateways applied; stopping the GatewayPool, GatewayPoolNode and GatewayPoolPeering watches"
                    );
                    caches.set_heavy(false, &status);
                    stop_heavy_after_success = false;
                }
                retry_backoff.reset();
                retry_at = None;
                if let Some(exit) = exit {
                    return Ok(exit);
                }
                if args.once {
                    return Ok(Exit::Done);
                }
            }
            Err(f) => {
                status.failed(started.elapsed(), f.step, format!("{:#}", f.error));
                if f.step == STEP_DATAPLANE {
                    status.report(status::Report::ApplyFailed {
                        error: format!("{:#}", f.error),
                    });
                }
                if args.once {
                    return Err(f.error.context(format!("reconcile step {} failed", f.step)));
                }
                let delay = retry_backoff.next_delay();
                tracing::warn!(step = f.step, error = %format!("{:#}", f.error), retry_in = ?delay,
                    "reconcile failed; the next one redoes every step");
                retry_at = Some(tokio::time::Instant::now() + delay);
            }
        }
    }
}

/// One reconcile: resolve, print (dry run), then on the first success acknowledge and close the
/// startup watch at once; remove the gateway taint while the worker still carries it.
async fn reconcile_once(
    client: &Client,
    args: &AgentArgs,
    adopted: &Adopted,
    caches: &Caches,
    st: &mut LoopState,
) -> Result<(Option<Exit>, Value), Failure> {
    let decoded = caches.decoded(adopted);
    let doc = plan_document(&decoded, &args.node_name, args.settings())
        .map_err(|e| Failure::new("resolve", e))?;
    if args.dry_run {
        print_changed(&doc, &mut st.last);
    } else {
        // Apply through dataplane-linux (blocking netlink on a blocking thread), then publish
        // the underlay MTU and a gateway's forwarding MTUs, only after the dataplane succeeded.
        let args_owned = args.clone();
        let applier = st.applier.clone();
        let applied = tokio::task::spawn_blocking(move || applier.apply(&args_owned, &decoded))
            .await
            .map_err(|e| Failure::new(STEP_DATAPLANE, anyhow!("the dataplane task failed: {e}")))?
            .map_err(|e| Failure::new(STEP_DATAPLANE, e))?;
        tracing::info!(writes = applied.writes, "dataplane applied");
        super::publish::publish(client, &args.node_name, &applied)
            .await
            .map_err(|e| Failure::new("publication", e))?;
    }
    if !st.first_success {
        match (&args.pod_namespace, &args.pod_name) {
            (Some(ns), Some(pod)) => {
                acknowledge(client, ns, pod, &adopted.assignment)
                    .await
                    .with_context(|| format!("cannot write the acknowledgment on Pod {ns}/{pod}"))
                    .map_err(|e| Failure::new("acknowledge", e))?;
                tracing::info!(assignment = %adopted.assignment.annotation_value(), "acknowledged");
                // Close the startup watch right away.
                if st.startup.running()
                    && let Some(exit) = verdict_exit(st.startup.close().await)?
                {
                    return Ok((Some(exit), doc));
                }
            }
            _ => tracing::warn!(
                "POD_NAME / POD_NAMESPACE unset: no acknowledgment; the startup watch stays"
            ),
        }
        st.first_success = true;
    }
    if st.taint_pending {
        remove_gateway_taint(client, &args.node_name, RetryPolicy::default())
            .await
            .context("cannot remove the gateway taint")
            .map_err(|e| Failure::new("taint", e))?;
        st.taint_pending = false;
    }
    Ok((None, doc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::adopt::Assignment;
    use serde_json::json;

    #[test]
    fn node_objects_merge_metadata_with_slice_and_pool_status_entries() {
        let adopted = Adopted {
            assignment: Assignment {
                node_uid: "u1".into(),
                site: "a".into(),
                pool: None,
            },
            node_name: "n1".into(),
            resource_version: "1".into(),
            site_label: None,
            pool_label: None,
            node: json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}),
            sites: Vec::new(),
        };
        let meta = |name: &str, ann: &str| {
            json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": {
                "name": name, "labels": {SITE_LABEL_KEY: "a"},
                "annotations": {"mtu.unbounded-cloud.io/underlay-mtu": ann}}})
        };
        let mut m = Objects::new();
        for (n, a) in [
            ("n1", "1450"),
            ("w2", "1400"),
            ("g1", "1300"),
            ("lonely", "1200"),
        ] {
            m.insert(n.to_string(), meta(n, a));
        }
        let slices = [Arc::new(Objects::from([(
            "s".to_string(),
            json!({"nodes": [{"name": "w2", "internalIPs": ["10.0.0.2"], "podCIDRs": ["10.9.2.0/24"]}]}),
        )]))];
        let pools = [Arc::new(Objects::from([(
            "p".to_string(),
            json!({"status": {"nodes": [{"name": "g1", "internalIPs": ["10.0.0.3"], "externalIPs": ["1.1.1.1"]}]}}),
        )]))];
        let out = node_objects(&adopted, &m, &slices, &pools);
        let names: Vec<&str> = out
            .iter()
            .filter_map(|n| n.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        assert_eq!(
            names,
            ["n1", "g1", "w2"],
            "the node listed nowhere is left out"
        );
        assert_eq!(
            out[0]["metadata"]["annotations"]["mtu.unbounded-cloud.io/underlay-mtu"],
            "1450"
        );
        assert_eq!(out[0]["metadata"]["labels"][SITE_LABEL_KEY], "a", "pinned");
        assert_eq!(
            out[0]["metadata"]["labels"][POOL_LABEL_KEY], "",
            "pinned worker"
        );
        assert_eq!(
            out[1]["status"]["addresses"],
            json!([{"type": "InternalIP", "address": "10.0.0.3"}, {"type": "ExternalIP", "address": "1.1.1.1"}])
        );
        assert_eq!(out[2]["spec"]["podCIDRs"], json!(["10.9.2.0/24"]));
        assert_eq!(out[2]["kind"], "Node");
    }
}
