//! What the agent reports, and where. Its HTTP servers, started before anything else:
//! `/healthz` (live), `/readyz` (false until the first successful reconcile) and `/metrics`
//! (Prometheus text) on the pod port (`--listen`), and `/status` (JSON: this node's whole plan
//! and the topology around it) on localhost unless `--status-address` says otherwise. In API
//! mode, the reports that need an operator (a broken assignment, a failed apply) also become
//! Kubernetes Events on the agent's own Pod.

use super::adopt::BrokenAssignment;
use super::failure::{Failure, Step};
use crate::k8s::metrics::ApiMetrics;
use crate::metrics::PeerLabel;
use crate::metrics::{ItemLabel, Metrics, ResultLabel, StepLabel};
use crate::settings::PodRef;
use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use mtu_solver::report::ResolveOut;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// What the server reports; shared with the agent's loop.
#[derive(Default)]
pub struct Status {
    inner: Mutex<Inner>,
    /// The Prometheus registry (`/metrics`), the same metrics in every mode.
    metrics: Metrics,
    /// Where reports that become Kubernetes Events go (API mode with a known Pod only).
    events: Mutex<Option<mpsc::UnboundedSender<Report>>>,
}

impl std::fmt::Debug for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Status")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Inner {
    ready: bool,
    adopted: Option<String>,
    /// The broken assignment found at adoption (`poolLabel`, `site`, `reason`), until adopted.
    broken: Option<Value>,
    watches: BTreeMap<String, bool>,
    last_result: Option<&'static str>,
    last_error: Option<Value>,
    /// The last error of each API read that has not read since.
    api_errors: BTreeMap<String, String>,
    /// More about the last successful reconcile (`--manifests` mode: writes, values, dry run).
    last_detail: Option<Value>,
    node: Option<String>,
    underlay: Option<u32>,
    /// The last plan (typed: serialised when `/status` is read).
    plan: Option<Arc<ResolveOut>>,
    /// The last background probe run (`--probe-interval`).
    probes: Option<Value>,
}

impl Status {
    /// A status whose `/metrics` also reports the API requests counted in `api`.
    pub fn with_api(api: ApiMetrics) -> Status {
        Status {
            inner: Mutex::default(),
            metrics: Metrics::new(&api),
            events: Mutex::default(),
        }
    }

    /// Sends the reports that become Events to `sink` from now on (`None`: to nowhere).
    pub fn set_event_sink(&self, sink: Option<mpsc::UnboundedSender<Report>>) {
        match self.events.lock() {
            Ok(mut g) => *g = sink,
            Err(p) => *p.into_inner() = sink,
        }
    }

    /// Hands `report` to the Event publisher, when there is one.
    pub fn report(&self, report: Report) {
        let g = match self.events.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if let Some(tx) = g.as_ref() {
            // A closed channel means the publisher is gone (the agent is stopping).
            let _ = tx.send(report);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Records this node's name and the underlay MTU it uses for itself.
    pub fn set_node(&self, node: &str, underlay: Option<u32>) {
        let mut g = self.lock();
        g.node = Some(node.to_string());
        g.underlay = underlay;
    }

    /// Records an MTU the kernel now carries (`item`: `device/vxlan0`, `fabric/cni0`).
    pub fn applied_mtu(&self, item: &str, mtu: u32) {
        self.metrics
            .applied_mtu
            .get_or_create(&ItemLabel { item: item.into() })
            .set(i64::from(mtu));
    }

    /// Records a background probe run: `/status` shows it per link with the lowerings in
    /// force, and the metrics the probed underlay per peer and the number of black holes.
    pub fn probed(
        &self,
        run: &super::probing::LastRun,
        lowered: &BTreeMap<String, u32>,
        lowering_on: bool,
    ) {
        // RFC 3339, as Kubernetes writes times.
        let at = k8s_openapi::jiff::Timestamp::try_from(run.at)
            .map(|t| t.to_string())
            .ok();
        self.lock().probes = Some(json!({
            "at": at,
            "tookSeconds": run.took.as_secs_f64(),
            "blackHoles": run.black_holes(),
            "underlayFromProbe": lowering_on,
            "lowered": lowered,
            "error": null,
            "links": run.links,
        }));
        self.metrics.link_probed.clear();
        for l in &run.links {
            if let Some(u) = l.probed_underlay {
                self.metrics
                    .link_probed
                    .get_or_create(&PeerLabel {
                        peer: l.peer.to_string(),
                    })
                    .set(i64::from(u));
            }
        }
        self.metrics
            .link_black_holes
            .set(i64::try_from(run.black_holes()).unwrap_or(i64::MAX));
    }

    /// Records a probe run that could not start (no socket of the method could be opened).
    pub fn probe_failed(&self, error: &str) {
        let mut g = self.lock();
        let mut doc = g.probes.take().unwrap_or_else(|| json!({}));
        if let Some(o) = doc.as_object_mut() {
            o.insert("error".into(), Value::String(error.to_string()));
        }
        g.probes = Some(doc);
    }

    /// Records the adopted assignment (`<uid>/<Site>/<pool or ->`); it is no longer broken.
    pub fn set_adopted(&self, a: &str) {
        let mut g = self.lock();
        g.adopted = Some(a.to_string());
        g.broken = None;
    }

    /// Records a broken assignment: the pool label names a missing pool that no pool's status
    /// or selector backs; nothing is adopted or acknowledged while it lasts.
    /// Each call (one per adoption attempt, so throttled by its backoff) is also reported as a
    /// `BrokenAssignment` Warning Event on the agent's Pod.
    pub fn set_broken_assignment(&self, b: &BrokenAssignment) {
        self.lock().broken = Some(json!({
            "poolLabel": b.pool_label,
            "site": b.site,
            "reason": b.reason(),
        }));
        self.report(Report::BrokenAssignment {
            node: b.node_name.clone(),
            reason: b.reason(),
        });
    }

    /// Forgets a broken assignment that is no longer what the Node says (it left its Site).
    pub fn clear_broken_assignment(&self) {
        self.lock().broken = None;
    }

    /// Marks a watch active or not.
    pub fn set_watch(&self, name: &str, active: bool) {
        let mut g = self.lock();
        g.watches.insert(name.to_string(), active);
        let n = g.watches.values().filter(|a| **a).count();
        self.metrics
            .active_watches
            .set(i64::try_from(n).unwrap_or(i64::MAX));
    }

    fn count(&self, result: &str, took: Duration) {
        self.metrics
            .reconciles
            .get_or_create(&ResultLabel {
                result: result.into(),
            })
            .inc();
        self.metrics.reconcile_seconds.observe(took.as_secs_f64());
    }

    /// Records a turn for a change of the input that cannot reach the node's plan (counted as
    /// a reconcile with result `unreached`; the last reconcile and its plan stand).
    pub fn unreached(&self, took: Duration) {
        self.count("unreached", took);
    }

    /// Records a successful reconcile and its plan; the agent becomes ready.
    pub fn reconciled(&self, took: Duration, plan: Arc<ResolveOut>) {
        self.reconciled_with(took, plan, None);
    }

    /// [`Status::reconciled`] with more about it (merged into `lastReconcile`).
    pub fn reconciled_with(&self, took: Duration, plan: Arc<ResolveOut>, detail: Option<Value>) {
        self.count("ok", took);
        let mut g = self.lock();
        g.ready = true;
        g.last_result = Some("ok");
        g.last_error = None;
        g.last_detail = detail;
        g.plan = Some(plan);
    }

    /// Records a failed reconcile: counted by its step, shown as the last error.
    pub fn failed(&self, took: Duration, failure: &Failure) {
        self.count("error", took);
        self.count_error(failure.step());
        let mut g = self.lock();
        g.last_result = Some("error");
        g.last_error = Some(json!({"step": failure.step().as_str(), "error": failure.text()}));
    }

    /// Counts a failure of `step`.
    pub fn count_error(&self, step: Step) {
        self.metrics
            .errors
            .get_or_create(&StepLabel {
                step: step.as_str().into(),
            })
            .inc();
    }

    /// Records a failed API read (a LIST, WATCH or GET of `what`): counted as an `api` error and
    /// shown under `apiErrors` until `what` reads again.
    pub fn api_failed(&self, what: &str, error: String) {
        self.count_error(Step::Api);
        self.lock().api_errors.insert(what.to_string(), error);
    }

    /// `what` reads again.
    pub fn api_recovered(&self, what: &str) {
        self.lock().api_errors.remove(what);
    }

    /// Whether the first reconcile succeeded.
    pub fn ready(&self) -> bool {
        self.lock().ready
    }

    /// The `/status` document.
    pub fn document(&self) -> Value {
        let g = self.lock();
        let watches: Vec<&String> = g
            .watches
            .iter()
            .filter(|(_, a)| **a)
            .map(|(k, _)| k)
            .collect();
        let mut last = json!({"result": g.last_result, "error": g.last_error});
        if let (Some(Value::Object(d)), Some(l)) = (&g.last_detail, last.as_object_mut()) {
            for (k, v) in d {
                l.insert(k.clone(), v.clone());
            }
        }
        json!({
            "node": g.node,
            "underlayMTU": g.underlay,
            "ready": g.ready,
            "adoptedAssignment": g.adopted,
            "brokenAssignment": g.broken,
            "activeWatches": watches,
            "lastReconcile": last,
            "apiErrors": g.api_errors,
            "probes": g.probes,
            // A document of strings and numbers always encodes.
            "plan": g.plan.as_deref().map(|p| serde_json::to_value(p).unwrap_or(Value::Null)),
        })
    }

    /// The `/metrics` text (Prometheus exposition by `prometheus-client`).
    pub fn metrics(&self) -> String {
        self.metrics.ready.set(i64::from(self.ready()));
        self.metrics.encode()
    }
}

fn reply(code: u16, ctype: &str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() =
        http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = http::HeaderValue::from_str(ctype) {
        r.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    r
}

/// Which endpoints a listener serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoints {
    /// `/healthz`, `/readyz` and `/metrics`: the pod port.
    Probes,
    /// `/status` alone: localhost by default.
    Status,
    /// Everything (`--status-address` equal to `--listen`).
    All,
}

impl Endpoints {
    fn serves(self, path: &str) -> bool {
        match self {
            Endpoints::All => true,
            Endpoints::Status => path == "/status",
            Endpoints::Probes => path != "/status",
        }
    }
}

/// The response to one request, every endpoint served.
pub fn respond(status: &Status, path: &str) -> Response<Full<Bytes>> {
    respond_on(status, Endpoints::All, path)
}

/// The response to one request on a listener that serves `endpoints` (404 for the others).
pub fn respond_on(status: &Status, endpoints: Endpoints, path: &str) -> Response<Full<Bytes>> {
    if !endpoints.serves(path) {
        return reply(404, "text/plain", "not found\n".into());
    }
    match path {
        "/healthz" => reply(200, "text/plain", "ok\n".into()),
        "/readyz" if status.ready() => reply(200, "text/plain", "ready\n".into()),
        "/readyz" => reply(
            503,
            "text/plain",
            "not ready: no successful reconcile yet\n".into(),
        ),
        "/status" => reply(200, "application/json", format!("{}\n", status.document())),
        "/metrics" => reply(
            200,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            status.metrics(),
        ),
        _ => reply(404, "text/plain", "not found\n".into()),
    }
}

/// Why the HTTP servers could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// An address that does not parse as `IP:PORT`.
    #[error("{flag} {value}: not an address such as 127.0.0.1:9842")]
    Address {
        /// The flag that carried it.
        flag: &'static str,
        /// What it said.
        value: String,
    },
    /// The pod port could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The running HTTP servers; dropping them stops them.
#[derive(Debug)]
pub struct Servers {
    /// Where `/healthz`, `/readyz` and `/metrics` are served (the pod port).
    pub probes: SocketAddr,
    /// Every address where `/status` is served: none when it is off (or its address could not
    /// be bound and the pod port is not on loopback).
    pub status: Vec<SocketAddr>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Servers {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn parse_addr(flag: &'static str, value: &str) -> Result<SocketAddr, ServeError> {
    value.parse().map_err(|_| ServeError::Address {
        flag,
        value: value.to_string(),
    })
}

/// Binds and serves the pod port (`listen`: health and metrics) and `/status` (`status_address`:
/// its own listener; the pod port's when the two addresses are equal; none for `off`). A pod
/// port on a loopback address (tests, agents started by hand) serves `/status` as well, since
/// nothing there leaves the host. Failing to bind the pod port is fatal (the probes need it);
/// failing to bind the status address is not (the agent still does its work, and logs why
/// `/status` is missing).
pub async fn start(
    listen: &str,
    status_address: &str,
    status: Arc<Status>,
) -> Result<Servers, ServeError> {
    let listen_addr = parse_addr("--listen", listen)?;
    let status_addr = match status_address.trim() {
        "off" | "" => None,
        a => Some(parse_addr("--status-address", a)?),
    };
    // Port 0 asks for a fresh port each time, so two such addresses are two listeners.
    let shared = status_addr == Some(listen_addr) && listen_addr.port() != 0;
    let on_probes = if shared || (status_addr.is_some() && listen_addr.ip().is_loopback()) {
        Endpoints::All
    } else {
        Endpoints::Probes
    };
    let bind = |addr| async move {
        TcpListener::bind(addr)
            .await
            .and_then(|l| Ok((l.local_addr()?, l)))
            .map_err(|source| ServeError::Bind { addr, source })
    };
    let (probes, listener) = bind(listen_addr).await?;
    let mut tasks = vec![tokio::spawn(serve_on(listener, status.clone(), on_probes))];
    let mut status_at = Vec::new();
    if on_probes == Endpoints::All {
        status_at.push(probes);
        tracing::info!(bound = %probes, "serving /healthz /readyz /metrics /status");
    } else {
        tracing::info!(bound = %probes, "serving /healthz /readyz /metrics");
    }
    if let Some(addr) = status_addr.filter(|_| !shared) {
        match bind(addr).await {
            Ok((bound, l)) => {
                tasks.push(tokio::spawn(serve_on(l, status.clone(), Endpoints::Status)));
                status_at.push(bound);
                tracing::info!(%bound, "serving /status");
            }
            Err(e) => {
                tracing::warn!(error = %format!("{:#}", anyhow::Error::new(e)),
                    "/status is not served there (the agent goes on without it)");
            }
        }
    }
    Ok(Servers {
        probes,
        status: status_at,
        tasks,
    })
}

/// Serves every endpoint until the task is dropped.
pub async fn serve(listener: TcpListener, status: Arc<Status>) {
    serve_on(listener, status, Endpoints::All).await;
}

/// Serves `endpoints` until the task is dropped.
pub async fn serve_on(listener: TcpListener, status: Arc<Status>, endpoints: Endpoints) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let st = status.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                let st = st.clone();
                async move { Ok::<_, Infallible>(respond_on(&st, endpoints, req.uri().path())) }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), svc)
                .await
            {
                tracing::debug!(error = %e, "status connection ended");
            }
        });
    }
}

/// A report that becomes a Warning Event on the agent's own Pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Report {
    /// The Node's pool label names a GatewayPool that does not exist and no pool takes the
    /// node: nothing is adopted or acknowledged.
    BrokenAssignment {
        /// The node.
        node: String,
        /// Why (the same text as `/status`).
        reason: String,
    },
    /// Applying the plan to the dataplane failed; the next reconcile redoes every step.
    ApplyFailed {
        /// The error.
        error: String,
    },
}

/// The Events API limits a note to 1 kB.
const NOTE_LIMIT: usize = 1024;

impl Report {
    /// The Event: `reason` and `action` name what happened, the note says why.
    pub fn event(&self) -> Event {
        let (reason, action, note) = match self {
            Report::BrokenAssignment { node, reason } => (
                "BrokenAssignment",
                "Adopt",
                format!("Node {node}: {reason}"),
            ),
            Report::ApplyFailed { error } => ("ApplyFailed", "Apply", error.clone()),
        };
        Event {
            type_: EventType::Warning,
            reason: reason.into(),
            note: Some(truncate(note, NOTE_LIMIT)),
            action: action.into(),
            secondary: None,
        }
    }
}

/// `s` cut to at most `max` bytes on a character boundary.
fn truncate(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut cut = max.saturating_sub('…'.len_utf8());
        while !s.is_char_boundary(cut) {
            cut = cut.saturating_sub(1);
        }
        s.truncate(cut);
        s.push('…');
    }
    s
}

fn object_ref(pod: &PodRef) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(pod.namespace.clone()),
        name: Some(pod.name.clone()),
        uid: pod.uid.clone(),
        ..Default::default()
    }
}

/// The `reportingController` of the agent's Events.
pub const EVENT_CONTROLLER: &str = "mtu.unbounded-cloud.io/agent";

/// Publishes the reports [`Status::report`] receives as Events on the agent's Pod, one at a
/// time, through kube's [`Recorder`] (a repeat of the same report within its cache time patches
/// the Event's series instead of creating another Event).
pub struct Events {
    status: Arc<Status>,
    task: Option<JoinHandle<()>>,
}

impl Events {
    /// Starts the publisher and connects it to `status`.
    pub fn start(client: &kube::Client, pod: PodRef, status: &Arc<Status>) -> Events {
        let (tx, mut rx) = mpsc::unbounded_channel::<Report>();
        let recorder = Recorder::new(
            client.clone(),
            Reporter {
                controller: EVENT_CONTROLLER.into(),
                instance: Some(pod.name.clone()),
            },
        );
        let reference = object_ref(&pod);
        let st = status.clone();
        let task = tokio::spawn(async move {
            while let Some(r) = rx.recv().await {
                if let Err(e) = recorder.publish(&r.event(), &reference).await {
                    st.count_error(Step::Publish);
                    tracing::warn!(error = %crate::k8s::error::describe(&e), event = ?r,
                        "cannot post the Event on the agent's Pod");
                }
            }
        });
        status.set_event_sink(Some(tx));
        Events {
            status: status.clone(),
            task: Some(task),
        }
    }

    /// Disconnects from the status and waits up to `grace` for the reports already handed over
    /// to be posted.
    pub async fn finish(mut self, grace: Duration) {
        self.status.set_event_sink(None);
        if let Some(mut t) = self.task.take()
            && tokio::time::timeout(grace, &mut t).await.is_err()
        {
            t.abort();
        }
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            self.status.set_event_sink(None);
            t.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty_plan() -> Arc<ResolveOut> {
        Arc::new(ResolveOut {
            api_version: "unbounded-mtu/v1alpha1",
            kind: "Resolution",
            nodes: Vec::new(),
            diagnostics: Vec::new(),
        })
    }

    fn probe_of(peer: &str, probed: Option<u32>) -> mtu_solver::probe::LinkProbe {
        let t = mtu_solver::probe::Target {
            peer: peer.into(),
            address: Some("192.0.2.1".parse().expect("address")),
            tunnel_address: None,
            device: None,
            protocol: topology_core::vocab::Protocol::Vxlan,
            overhead: 50,
            planned_underlay: 1500,
            node_underlay: 1500,
            peer_underlay: 1500,
            link_mtu: 1450,
            underlay_term: "underlay of a 1500 (default)".into(),
            link_term: String::new(),
        };
        mtu_solver::probe::judge(
            &t,
            mtu_solver::probe::Measured {
                underlay: probed,
                link: None,
                probes: 3,
            },
        )
    }

    #[test]
    fn a_probe_run_shows_on_status_and_in_the_metrics() {
        let s = Status::default();
        assert_eq!(s.document()["probes"], Value::Null);
        let run = crate::agent::probing::LastRun {
            at: std::time::SystemTime::now(),
            took: Duration::from_millis(1500),
            links: vec![probe_of("b", Some(1400)), probe_of("c", None)],
        };
        let lowered = BTreeMap::from([("b".to_string(), 1400)]);
        s.probed(&run, &lowered, true);
        let doc = s.document();
        let p = &doc["probes"];
        assert_eq!(p["blackHoles"], 1);
        assert_eq!(p["lowered"]["b"], 1400);
        assert_eq!(p["links"][0]["verdict"], "black-hole");
        assert_eq!(p["links"][1]["verdict"], "unreachable");
        assert!(p["at"].as_str().is_some_and(|t| t.ends_with('Z')), "{p}");
        let m = s.metrics();
        assert!(
            m.contains("unbounded_mtu_link_probed_bytes{peer=\"b\"} 1400"),
            "{m}"
        );
        assert!(
            !m.contains("peer=\"c\""),
            "an unanswered link has no probed size: {m}"
        );
        assert!(m.contains("unbounded_mtu_link_black_holes 1"), "{m}");
        // The next run finds the path repaired: the gauge follows, the old peer label goes.
        let run = crate::agent::probing::LastRun {
            links: vec![probe_of("d", Some(1500))],
            ..run
        };
        s.probed(&run, &BTreeMap::new(), true);
        let m = s.metrics();
        assert!(m.contains("unbounded_mtu_link_black_holes 0"), "{m}");
        assert!(!m.contains("peer=\"b\""), "{m}");
        s.probe_failed("cannot open probe sockets (icmp): EPERM");
        assert_eq!(
            s.document()["probes"]["error"],
            "cannot open probe sockets (icmp): EPERM"
        );
    }

    #[test]
    fn ready_only_after_a_success() {
        let s = Status::default();
        assert_eq!(respond(&s, "/healthz").status(), 200);
        assert_eq!(respond(&s, "/readyz").status(), 503);
        let m = s.metrics();
        for step in Step::ALL {
            assert!(
                m.contains(&format!("unbounded_mtu_errors_total{{step=\"{step}\"}} 0")),
                "every step starts at 0: {m}"
            );
        }
        assert!(m.contains("unbounded_mtu_build_info{version=\""), "{m}");
        s.failed(
            Duration::from_millis(5),
            &Failure::from(super::super::failure::ResolveError::NoNode("n1".into())),
        );
        assert_eq!(respond(&s, "/readyz").status(), 503);
        assert_eq!(s.document()["lastReconcile"]["error"]["step"], "resolve");
        s.api_failed("sites", "503 Service Unavailable".into());
        assert_eq!(
            s.document()["apiErrors"]["sites"],
            "503 Service Unavailable"
        );
        s.api_recovered("sites");
        assert_eq!(s.document()["apiErrors"], json!({}));
        s.set_adopted("u/a/-");
        s.set_watch("node/n1", true);
        s.reconciled(Duration::from_millis(5), empty_plan());
        assert_eq!(respond(&s, "/readyz").status(), 200);
        let d = s.document();
        assert_eq!(d["adoptedAssignment"], "u/a/-");
        assert_eq!(d["activeWatches"], json!(["node/n1"]));
        assert_eq!(d["lastReconcile"]["result"], "ok");
        let m = s.metrics();
        assert!(
            m.contains("unbounded_mtu_reconciles_total{result=\"ok\"} 1"),
            "{m}"
        );
        assert!(
            m.contains("unbounded_mtu_reconciles_total{result=\"error\"} 1"),
            "{m}"
        );
        assert!(
            m.contains("unbounded_mtu_reconcile_duration_seconds_count 2"),
            "{m}"
        );
        assert!(m.contains("unbounded_mtu_active_watches 1"), "{m}");
        assert!(m.contains("unbounded_mtu_ready 1"), "{m}");
        assert!(
            m.contains("unbounded_mtu_errors_total{step=\"api\"} 1"),
            "{m}"
        );
        assert!(
            m.contains("unbounded_mtu_errors_total{step=\"resolve\"} 1"),
            "{m}"
        );
        assert_eq!(respond(&s, "/nope").status(), 404);
        assert_eq!(d["brokenAssignment"], Value::Null);
        // A broken assignment is reported until an assignment is adopted.
        let missing = BrokenAssignment {
            node_uid: "u".into(),
            node_name: "n1".into(),
            resource_version: "1".into(),
            site: "a".into(),
            site_label: None,
            pool_label: "missing".into(),
            sites: Vec::new(),
        };
        s.set_broken_assignment(&missing);
        let b = &s.document()["brokenAssignment"];
        assert_eq!(b["poolLabel"], "missing");
        assert_eq!(b["site"], "a");
        assert!(
            b["reason"]
                .as_str()
                .is_some_and(|r| r.contains("does not exist")),
            "{b}"
        );
        s.clear_broken_assignment();
        assert_eq!(s.document()["brokenAssignment"], Value::Null);
        s.set_broken_assignment(&missing);
        s.set_adopted("u/a/-");
        assert_eq!(s.document()["brokenAssignment"], Value::Null);
        // The node, its underlay, what the dataplane carries, and the writes of the last pass.
        s.set_node("n1", Some(1450));
        s.applied_mtu("device/vxlan0", 1400);
        s.reconciled_with(
            Duration::from_millis(3),
            empty_plan(),
            Some(json!({"writes": 7, "values": 12, "dryRun": false})),
        );
        let d = s.document();
        assert_eq!(d["node"], "n1");
        assert_eq!(d["underlayMTU"], 1450);
        assert_eq!(d["lastReconcile"]["result"], "ok");
        assert_eq!(d["lastReconcile"]["writes"], 7);
        let m = s.metrics();
        assert!(
            m.contains("unbounded_mtu_applied_mtu_bytes{item=\"device/vxlan0\"} 1400"),
            "{m}"
        );
        assert!(m.ends_with("# EOF\n"), "{m}");
        let api = ApiMetrics::default();
        let s = Status::with_api(api.clone());
        api.record(
            &http::Method::GET,
            "/api/v1/nodes",
            Some("watch=true"),
            Some(http::StatusCode::OK),
        );
        assert!(s.metrics().contains(
            "unbounded_mtu_api_requests_total{verb=\"watch\",resource=\"nodes\",code=\"200\"} 1"
        ));
    }

    #[test]
    fn the_pod_port_does_not_serve_status_and_the_status_listener_serves_nothing_else() {
        let s = Status::default();
        for path in ["/healthz", "/readyz", "/metrics"] {
            assert_ne!(
                respond_on(&s, Endpoints::Probes, path).status(),
                404,
                "{path}"
            );
            assert_eq!(
                respond_on(&s, Endpoints::Status, path).status(),
                404,
                "{path}"
            );
        }
        assert_eq!(respond_on(&s, Endpoints::Probes, "/status").status(), 404);
        assert_eq!(respond_on(&s, Endpoints::Status, "/status").status(), 200);
        assert_eq!(respond_on(&s, Endpoints::All, "/status").status(), 200);
        assert_eq!(respond_on(&s, Endpoints::All, "/healthz").status(), 200);
    }

    /// The first line of the response to `GET path` at `addr`.
    async fn get(addr: SocketAddr, path: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).await.expect("read");
        out.lines().next().unwrap_or_default().to_string()
    }

    #[tokio::test]
    async fn start_binds_status_apart_shared_or_not_at_all() {
        let st = Arc::new(Status::default());
        // Every address: /status only on its own listener.
        let apart = start("0.0.0.0:0", "127.0.0.1:0", st.clone())
            .await
            .expect("start");
        assert_eq!(apart.status.len(), 1);
        let status_at = apart.status[0];
        assert!(status_at.ip().is_loopback());
        let probes = SocketAddr::from(([127, 0, 0, 1], apart.probes.port()));
        assert!(get(probes, "/status").await.contains(" 404 "));
        assert!(get(probes, "/healthz").await.contains(" 200 "));
        assert!(get(status_at, "/status").await.contains(" 200 "));
        // The same address: one listener serves everything.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a port")
            .port();
        let same = format!("0.0.0.0:{port}");
        let shared = start(&same, &same, st.clone()).await.expect("start");
        assert_eq!(shared.status, [shared.probes]);
        let at = SocketAddr::from(([127, 0, 0, 1], port));
        assert!(get(at, "/status").await.contains(" 200 "));
        // A pod port on loopback leaks nothing: it serves /status too.
        let local = start("127.0.0.1:0", "127.0.0.1:0", st.clone())
            .await
            .expect("start");
        assert_eq!(local.status.len(), 2);
        assert!(get(local.probes, "/status").await.contains(" 200 "));
        // Off: nowhere, not even on a loopback pod port.
        let off = start("127.0.0.1:0", "off", st.clone())
            .await
            .expect("start");
        assert!(off.status.is_empty());
        assert!(get(off.probes, "/status").await.contains(" 404 "));
        // The status address taken already: the agent still starts, without that listener.
        let busy = start("0.0.0.0:0", &status_at.to_string(), st.clone())
            .await
            .expect("start");
        assert!(busy.status.is_empty());
        let bad = start("127.0.0.1:0", "localhost", st.clone()).await;
        assert!(
            matches!(
                bad,
                Err(ServeError::Address {
                    flag: "--status-address",
                    ..
                })
            ),
            "{bad:?}"
        );
        let probes_busy = start(&apart.probes.to_string(), "off", st).await;
        assert!(
            matches!(probes_busy, Err(ServeError::Bind { .. })),
            "{probes_busy:?}"
        );
    }

    #[test]
    fn reports_become_warning_events_with_a_bounded_note() {
        let e = Report::ApplyFailed {
            error: "é".repeat(600),
        }
        .event();
        assert_eq!(e.type_, EventType::Warning);
        assert_eq!(
            (e.reason.as_str(), e.action.as_str()),
            ("ApplyFailed", "Apply")
        );
        let note = e.note.expect("note");
        assert!(note.len() <= NOTE_LIMIT, "{}", note.len());
        assert!(note.ends_with('…'));
        let b = Report::BrokenAssignment {
            node: "n1".into(),
            reason: "the label names GatewayPool \"x\"".into(),
        }
        .event();
        assert_eq!(b.reason, "BrokenAssignment");
        assert_eq!(
            b.note.as_deref(),
            Some("Node n1: the label names GatewayPool \"x\"")
        );
    }

    #[test]
    fn reports_reach_the_sink_only_while_one_is_set() {
        let s = Status::default();
        s.report(Report::ApplyFailed { error: "x".into() });
        let (tx, mut rx) = mpsc::unbounded_channel();
        s.set_event_sink(Some(tx));
        s.report(Report::ApplyFailed { error: "y".into() });
        assert_eq!(
            rx.try_recv().ok(),
            Some(Report::ApplyFailed { error: "y".into() })
        );
        s.set_event_sink(None);
        s.report(Report::ApplyFailed { error: "z".into() });
        assert!(rx.try_recv().is_err(), "nothing after the sink was removed");
    }
}
