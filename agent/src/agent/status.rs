//! The agent's HTTP server, started before anything else: `/healthz` (live), `/readyz` (false
//! until the first successful reconcile), `/status` (JSON) and `/metrics` (Prometheus text).

use super::adopt::BrokenAssignment;
use crate::k8s::metrics::ApiMetrics;
use crate::metrics::{ItemLabel, KindLabel, Metrics, RequestLabel, ResultLabel};
use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::net::TcpListener;

/// What the server reports; shared with the agent's loop.
#[derive(Default)]
pub struct Status {
    inner: Mutex<Inner>,
    api: ApiMetrics,
    /// The Prometheus registry (`/metrics`), the same metrics in every mode.
    metrics: Metrics,
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
    last_error: Option<String>,
    /// More about the last successful reconcile (`--manifests` mode: writes, values, dry run).
    last_detail: Option<Value>,
    node: Option<String>,
    underlay: Option<u32>,
    plan: Option<Value>,
}

impl Status {
    /// A status whose `/metrics` also reports the API requests counted in `api`.
    pub fn with_api(api: ApiMetrics) -> Status {
        Status {
            inner: Mutex::default(),
            api,
            metrics: Metrics::default(),
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

    /// Records an MTU the dataplane now carries (`item`: `device` or `fabric`).
    pub fn applied_mtu(&self, item: &str, name: &str, mtu: u32) {
        self.metrics
            .mtu_applied
            .get_or_create(&ItemLabel {
                item: item.into(),
                name: name.into(),
            })
            .set(i64::from(mtu));
    }

    /// Records the adopted assignment (`<uid>/<Site>/<pool or ->`); it is no longer broken.
    pub fn set_adopted(&self, a: &str) {
        let mut g = self.lock();
        g.adopted = Some(a.to_string());
        g.broken = None;
    }

    /// Records a broken assignment: the pool label names a missing pool that no pool's status
    /// or selector backs; nothing is adopted or acknowledged while it lasts.
    pub fn set_broken_assignment(&self, b: &BrokenAssignment) {
        self.lock().broken = Some(json!({
            "poolLabel": b.pool_label,
            "site": b.site,
            "reason": b.reason(),
        }));
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

    /// Records a successful reconcile and its plan; the agent becomes ready.
    pub fn reconciled(&self, took: Duration, plan: Value) {
        self.reconciled_with(took, plan, None);
    }

    /// [`Status::reconciled`] with more about it (merged into `lastReconcile`).
    pub fn reconciled_with(&self, took: Duration, plan: Value, detail: Option<Value>) {
        self.count("ok", took);
        let mut g = self.lock();
        g.ready = true;
        g.last_result = Some("ok");
        g.last_error = None;
        g.last_detail = detail;
        g.plan = Some(plan);
    }

    /// Records a failed reconcile (`kind`: what failed, e.g. `resolve`, `acknowledge`, `taint`).
    pub fn failed(&self, took: Duration, kind: &str, error: String) {
        self.count("error", took);
        self.metrics
            .errors
            .get_or_create(&KindLabel { kind: kind.into() })
            .inc();
        let mut g = self.lock();
        g.last_result = Some("error");
        g.last_error = Some(error);
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
            "plan": g.plan,
        })
    }

    /// The `/metrics` text (Prometheus exposition by `prometheus-client`).
    pub fn metrics(&self) -> String {
        // The client counts its requests itself; bring the counters up to its totals.
        for ((verb, resource), n) in self.api.snapshot() {
            let c = self
                .metrics
                .api_requests
                .get_or_create(&RequestLabel { verb, resource });
            let have = c.get();
            if n > have {
                c.inc_by(n.saturating_sub(have));
            }
        }
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

/// The response to one request.
pub fn respond(status: &Status, path: &str) -> Response<Full<Bytes>> {
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

/// Serves until the task is dropped.
pub async fn serve(listener: TcpListener, status: Arc<Status>) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let st = status.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                let st = st.clone();
                async move { Ok::<_, Infallible>(respond(&st, req.uri().path())) }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_after_a_success() {
        let s = Status::default();
        assert_eq!(respond(&s, "/healthz").status(), 200);
        assert_eq!(respond(&s, "/readyz").status(), 503);
        s.failed(Duration::from_millis(5), "resolve", "no Site".into());
        assert_eq!(respond(&s, "/readyz").status(), 503);
        s.set_adopted("u/a/-");
        s.set_watch("node/n1", true);
        s.reconciled(Duration::from_millis(5), json!({"nodes": []}));
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
            m.contains("unbounded_mtu_errors_total{kind=\"resolve\"} 1"),
            "{m}"
        );
        assert_eq!(respond(&s, "/nope").status(), 404);
        assert_eq!(d["brokenAssignment"], Value::Null);
        // A broken assignment is reported until an assignment is adopted.
        s.set_broken_assignment(&BrokenAssignment {
            node_uid: "u".into(),
            node_name: "n1".into(),
            resource_version: "1".into(),
            site: "a".into(),
            site_label: None,
            pool_label: "missing".into(),
            sites: Vec::new(),
        });
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
        s.set_broken_assignment(&BrokenAssignment {
            node_uid: "u".into(),
            node_name: "n1".into(),
            resource_version: "1".into(),
            site: "a".into(),
            site_label: None,
            pool_label: "missing".into(),
            sites: Vec::new(),
        });
        s.set_adopted("u/a/-");
        assert_eq!(s.document()["brokenAssignment"], Value::Null);
        // `--manifests` mode: the node, its underlay, what the dataplane carries, and the
        // writes of the last pass.
        s.set_node("n1", Some(1450));
        s.applied_mtu("device", "vxlan0", 1400);
        s.reconciled_with(
            Duration::from_millis(3),
            json!({}),
            Some(json!({"writes": 7, "values": 12, "dryRun": false})),
        );
        let d = s.document();
        assert_eq!(d["node"], "n1");
        assert_eq!(d["underlayMTU"], 1450);
        assert_eq!(d["lastReconcile"]["result"], "ok");
        assert_eq!(d["lastReconcile"]["writes"], 7);
        let m = s.metrics();
        assert!(
            m.contains("unbounded_mtu_mtu_applied_bytes{item=\"device\",name=\"vxlan0\"} 1400"),
            "{m}"
        );
        assert!(m.ends_with("# EOF\n"), "{m}");
        let api = ApiMetrics::default();
        api.record(&http::Method::GET, "/api/v1/nodes", Some("watch=true"));
        let s = Status::with_api(api);
        assert!(
            s.metrics()
                .contains("unbounded_mtu_api_requests_total{verb=\"watch\",resource=\"nodes\"} 1")
        );
    }
}
