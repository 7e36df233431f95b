//! What the agent reports, and where. The state the loop and the start steps record (here);
//! the HTTP servers that show it, started before anything else (`serve.rs`): `/healthz` (the
//! loop is live), `/readyz` (false until the first successful reconcile) and `/metrics`
//! (Prometheus text) on the pod port (`--listen`), and `/status` (JSON: this node's whole plan
//! and the topology around it) on localhost unless `--status-address` says otherwise; and in API
//! mode the reports that need an operator (a broken assignment, a failed apply) as Kubernetes
//! Events on the agent's own Pod (`events.rs`).

mod events;
mod serve;

pub use events::{EVENT_CONTROLLER, Events, Report};
pub use serve::{Endpoints, ServeError, Servers, respond, respond_on, serve, serve_on, start};

use super::adopt::BrokenAssignment;
use super::failure::{Failure, Step};
use super::metrics::{ItemLabel, Metrics, PeerLabel, ResultLabel, StepLabel};
use crate::k8s::metrics::ApiMetrics;
use mtu_solver::report::ResolveOut;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

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
    /// The path MTUs this node plans with, when it owns its `path-mtu` annotation.
    paths: Option<BTreeMap<String, u32>>,
    /// The last plan (typed: serialised when `/status` is read).
    plan: Option<Arc<ResolveOut>>,
    /// The last background probe run (`--probe-interval`).
    probes: Option<Value>,
    /// How long the loop may go without progress once it runs (`None`: it does not run yet).
    stall_after: Option<Duration>,
    /// When a reconcile last started or finished.
    progress_at: Option<Instant>,
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

    /// Records this node's name, the underlay MTU it uses for itself and, when it owns its
    /// `path-mtu` annotation, the path MTUs it plans with (peer → MTU).
    pub fn set_node(
        &self,
        node: &str,
        underlay: Option<u32>,
        paths: Option<&BTreeMap<String, u32>>,
    ) {
        let mut g = self.lock();
        g.node = Some(node.to_string());
        g.underlay = underlay;
        g.paths = paths.cloned();
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

    /// From now on the loop must start or finish a reconcile at least every `after`, or
    /// `/healthz` fails. Before the loop runs (adoption and the other start steps, which retry
    /// on their own and report on `/status`) the agent is live.
    pub fn expect_progress(&self, after: Duration) {
        let mut g = self.lock();
        g.stall_after = Some(after);
        g.progress_at = Some(Instant::now());
    }

    /// A reconcile started (one that finished says so by its result).
    pub fn progressed(&self) {
        self.lock().progress_at = Some(Instant::now());
    }

    /// Whether the loop is live: it does not run yet, or it started or finished a reconcile
    /// within the time it is allowed.
    pub fn liveness(&self) -> Liveness {
        let g = self.lock();
        match (g.stall_after, g.progress_at) {
            (Some(limit), Some(at)) if at.elapsed() > limit => Liveness::Stalled {
                since: at.elapsed(),
                limit,
            },
            _ => Liveness::Live,
        }
    }

    /// Records a turn for a change of the input that cannot reach the node's plan (counted as
    /// a reconcile with result `unreached`; the last reconcile and its plan stand).
    pub fn unreached(&self, took: Duration) {
        self.count("unreached", took);
        self.progressed();
    }

    /// Records a successful reconcile and its plan; the agent becomes ready.
    pub fn reconciled(&self, took: Duration, plan: Arc<ResolveOut>) {
        self.reconciled_with(took, plan, None);
    }

    /// [`Status::reconciled`] with more about it (merged into `lastReconcile`).
    pub fn reconciled_with(&self, took: Duration, plan: Arc<ResolveOut>, detail: Option<Value>) {
        self.count("ok", took);
        let mut g = self.lock();
        g.progress_at = Some(Instant::now());
        g.ready = true;
        g.last_result = Some("ok");
        g.last_error = None;
        g.last_detail = detail;
        g.plan = Some(plan);
    }

    /// Records a repair of owned kernel state that someone else changed (it wrote something).
    pub fn repaired(&self) {
        self.metrics.repairs.inc();
        self.progressed();
    }

    /// Records a failed reconcile: counted by its step, shown as the last error.
    pub fn failed(&self, took: Duration, failure: &Failure) {
        self.count("error", took);
        self.count_error(failure.step());
        let mut g = self.lock();
        g.progress_at = Some(Instant::now());
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
            "pathMTUs": g.paths,
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

/// What `/healthz` answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// The loop made progress within the time it is allowed, or does not run yet.
    Live,
    /// No reconcile started or finished for `since`, longer than `limit`.
    Stalled {
        /// Since the last progress.
        since: Duration,
        /// How long the loop may go without.
        limit: Duration,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty_plan() -> Arc<ResolveOut> {
        Arc::new(ResolveOut {
            api_version: mtu_solver::report::ApiVersion::V1alpha1,
            kind: mtu_solver::report::DocumentKind::Resolution,
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
        s.set_node("n1", Some(1450), None);
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
}
