//! The reconcile loop against the scripted API server with a fake dataplane that fails on
//! purpose: a failed dataplane step or publication marks the state dirty and the next reconcile
//! redoes it; the acknowledgment and a gateway's forwarding MTUs are written only after a
//! successful apply.

mod support;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use support::{FakeApplier, GPN, Mock, NODE, POD, Reply, node_patched, own_node, site};
use topology_core::vocab::Kind;
use unbounded_mtu::agent::applier::Applier;
use unbounded_mtu::agent::status::Status;
use unbounded_mtu::k8s::ResourceKind;

/// Starts the agent (own Pod `ns/agent-x`, not a dry run, `extra` flags) with `fake` as its
/// dataplane; dropping the returned sender stops it.
fn start_with(
    mock: &Mock,
    fake: Arc<dyn Applier>,
    extra: &[&str],
) -> tokio::sync::oneshot::Sender<()> {
    let args = support::agent_args(extra);
    support::spawn_agent(mock, args, Arc::new(Status::default()), Some(fake)).1
}

fn start(mock: &Mock, fake: Arc<dyn Applier>) -> tokio::sync::oneshot::Sender<()> {
    start_with(mock, fake, &[])
}

/// The own Node `own` (by GET, and listed with Site `a` and `objects`), the startup watch (held)
/// and the answer to the acknowledgment.
fn serve_agent(mock: &Mock, own: Value, objects: &[Value]) {
    mock.on("GET", NODE, vec![Reply::Json(200, own.clone())]);
    support::hold_startup_watch(mock);
    mock.on("PATCH", POD, vec![support::pod_patched("agent-x")]);
    let mut listed = vec![site("a", "10.0.0.0/16"), own];
    listed.extend_from_slice(objects);
    support::serve_collections(mock, &listed);
}

/// A worker of Site `a` whose Node PATCHes (publications) succeed.
fn worker_cluster(mock: &Mock) {
    serve_agent(mock, own_node("100", ""), &[]);
}

async fn wait(mut f: impl FnMut() -> bool) -> bool {
    for _ in 0..1000 {
        if f() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    f()
}

#[tokio::test]
async fn a_failed_dataplane_step_is_redone_and_acknowledged_only_after_success() {
    let mock = Mock::start().await;
    worker_cluster(&mock);
    mock.on("PATCH", NODE, vec![node_patched()]);
    let fake = FakeApplier::failing_first(2);
    let _stop = start_with(&mock, fake.clone(), &["--underlay-mtu", "1450"]);
    assert!(
        wait(|| !mock.requests_to("PATCH", POD).is_empty()).await,
        "{:#?}",
        mock.requests()
    );
    // Two failures, then the success that allowed the acknowledgment: the loop redid the step
    // although nothing changed in between.
    assert_eq!(fake.calls.load(Ordering::SeqCst), 3);
    // The underlay MTU was published on the own Node after the successful apply.
    let patches = mock.requests_to("PATCH", NODE);
    assert!(
        patches
            .iter()
            .any(|r| r.body.contains("mtu.unbounded-cloud.io/underlay-mtu")
                && r.body.contains("1450")),
        "{patches:#?}"
    );
}

#[tokio::test]
async fn a_failed_publication_is_redone_with_the_dataplane() {
    let mock = Mock::start().await;
    worker_cluster(&mock);
    // The first publication fails (server error), the next ones succeed.
    mock.on(
        "PATCH",
        NODE,
        vec![
            Reply::Json(500, json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 500, "reason": "InternalError", "message": "injected"})),
            node_patched(),
        ],
    );
    let fake = FakeApplier::failing_first(0);
    let _stop = start_with(&mock, fake.clone(), &["--detect-underlay"]);
    assert!(
        wait(|| !mock.requests_to("PATCH", POD).is_empty()).await,
        "{:#?}",
        mock.requests()
    );
    // The failed publication marked the state dirty: the retry redid the dataplane step too.
    assert!(fake.calls.load(Ordering::SeqCst) >= 2);
    assert!(mock.requests_to("PATCH", NODE).len() >= 2);
}

#[tokio::test]
async fn a_gateway_publishes_forwarding_mtus_only_after_a_successful_apply() {
    let mock = Mock::start().await;
    mock.on("PATCH", GPN, vec![support::gpn_patched()]);
    mock.on("PATCH", NODE, vec![node_patched()]);
    let objects = support::gateway_objects();
    serve_agent(&mock, own_node("100", "P"), &objects);
    let fake = FakeApplier::failing_first(1);
    let _stop = start(&mock, fake.clone());
    assert!(
        wait(|| !mock.requests_to("PATCH", GPN).is_empty()).await,
        "{:#?}",
        mock.requests()
    );
    // Published once, after the second (successful) apply; never after the failed one.
    assert_eq!(fake.calls.load(Ordering::SeqCst), 2);
    let body: Value = serde_json::from_str(&mock.requests_to("PATCH", GPN)[0].body).unwrap();
    let value = body["metadata"]["annotations"]["mtu.unbounded-cloud.io/forwarding-mtus"]
        .as_str()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(value).unwrap(),
        json!({"10.1.0.0/16": 1442, "10.200.0.0/16": 1442})
    );
}

#[tokio::test]
async fn heavy_watches_stop_only_after_the_dataplane_state_without_them_is_applied() {
    let mock = Mock::start().await;
    worker_cluster(&mock);
    mock.on("PATCH", NODE, vec![node_patched()]);
    let assignments = support::path(ResourceKind::of(Kind::SiteGatewayPoolAssignment));
    let ch = mock.live_channel();
    mock.replace_watch(&assignments, vec![Reply::Live(ch)]);
    let heavy: Vec<String> = [
        Kind::GatewayPool,
        Kind::GatewayPoolNode,
        Kind::GatewayPoolPeering,
    ]
    .into_iter()
    .map(|k| support::path(ResourceKind::of(k)))
    .collect();
    let dp = Arc::new(FakeApplier::default());
    let stop_tx = start(&mock, dp.clone());
    assert!(
        wait(|| !mock.requests_to("PATCH", POD).is_empty()).await,
        "first reconcile"
    );
    let touched = mock
        .requests()
        .iter()
        .filter(|r| heavy.contains(&r.path))
        .count();
    assert_eq!(
        touched, 0,
        "a worker whose Site no assignment lists reads no heavy kind"
    );
    let assignment = json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "SiteGatewayPoolAssignment",
        "metadata": {"name": "as", "resourceVersion": "50"}, "spec": {"sites": ["a"], "gatewayPools": ["p"]}});
    mock.push(ch, support::event("ADDED", assignment.clone()));
    let first = dp.calls.load(Ordering::SeqCst);
    assert!(
        wait(|| heavy.iter().all(|p| mock.open_watches_on(p, None) == 1)).await,
        "started"
    );
    // The input with the assignment and the heavy caches is applied (a change of the input
    // that cannot reach the plan would apply nothing, and leave nothing behind to remove).
    assert!(
        wait(|| dp.calls.load(Ordering::SeqCst) > first).await,
        "applied with the heavy kinds"
    );
    // The assignment goes away while the dataplane fails: the watches must stay, since the
    // state that depended on them could not be removed yet.
    dp.failing.store(true, Ordering::SeqCst);
    let before = dp.calls.load(Ordering::SeqCst);
    mock.push(ch, support::event("DELETED", assignment));
    assert!(
        wait(|| dp.calls.load(Ordering::SeqCst) > before).await,
        "a reconcile ran"
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(
        heavy.iter().all(|p| mock.open_watches_on(p, None) == 1),
        "stopped before the dataplane state was removed"
    );
    // Once the dataplane succeeds, they stop (no restart of the process).
    dp.failing.store(false, Ordering::SeqCst);
    assert!(
        wait(|| heavy.iter().all(|p| mock.open_watches_on(p, None) == 0)).await,
        "{:#?}",
        mock.requests()
    );
    let _ = stop_tx.send(());
}

#[tokio::test]
async fn watch_timeouts_lie_in_600_1200_and_startup_events_are_not_lost() {
    let mock = Mock::start().await;
    // Site b (its peering with a, its worker wb) becomes visible only with the Site itself.
    let net = "net.unbounded-cloud.io/v1alpha1";
    serve_agent(
        &mock,
        own_node("100", ""),
        &[
            json!({"apiVersion": net, "kind": "SitePeering",
                "metadata": {"name": "ab", "resourceVersion": "1"}, "spec": {"sites": ["a", "b"]}}),
            json!({"apiVersion": net, "kind": "SiteNodeSlice",
                "metadata": {"name": "b-0", "resourceVersion": "1"}, "siteName": "b",
                "nodes": [{"name": "wb", "internalIPs": ["10.1.0.5"], "podCIDRs": ["10.9.1.0/24"]}]}),
            support::node(
                "wb",
                "uwb",
                "1",
                json!({support::SITE_LABEL: "b"}),
                "10.1.0.5",
            ),
        ],
    );
    mock.on("PATCH", NODE, vec![node_patched()]);
    // Sites arrive on a live watch: one event is sent at once, while the agent is starting.
    let sites = support::path(ResourceKind::of(Kind::Site));
    let ch = mock.live_channel();
    mock.replace_watch(&sites, vec![Reply::Live(ch)]);
    mock.push(ch, support::event("ADDED", site("b", "10.1.0.0/16")));
    let status = Arc::new(Status::default());
    let (_task, stop_tx) = support::spawn_agent(
        &mock,
        support::agent_args(&[]),
        status.clone(),
        Some(Arc::new(FakeApplier::default())),
    );
    let has_b = || status.document()["plan"].to_string().contains("\"wb\"");
    assert!(
        wait(has_b).await,
        "the Site sent during start-up never reached a reconcile: {}",
        status.document()
    );
    let watches: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|r| r.is_watch())
        .collect();
    assert!(watches.len() >= 4, "{watches:#?}");
    for w in &watches {
        let t: u64 = w
            .param("timeoutSeconds")
            .expect("every watch sets timeoutSeconds")
            .parse()
            .unwrap();
        assert!((600..1200).contains(&t), "{} timeoutSeconds={t}", w.path);
    }
    let _ = stop_tx.send(());
}

#[tokio::test]
async fn requests_of_a_worker_without_assignments() {
    let mock = Mock::start().await;
    worker_cluster(&mock);
    mock.on("PATCH", NODE, vec![node_patched()]);
    let stop_tx = start(&mock, Arc::new(FakeApplier::default()));
    assert!(wait(|| !mock.requests_to("PATCH", POD).is_empty()).await);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let start = mock.requests();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for r in &start {
        let verb = if r.is_watch() {
            "WATCH".to_string()
        } else {
            r.method.clone()
        };
        *counts.entry(format!("{verb} {}", r.path)).or_default() += 1;
    }
    eprintln!("requests at start ({}):", start.len());
    for (k, v) in &counts {
        eprintln!("  {v:>2}  {k}");
    }
    assert!(
        counts.keys().all(|k| !k.contains("gatewaypools")
            && !k.contains("gatewaypoolpeerings")
            && !k.contains("gatewaypoolnodes")),
        "{counts:#?}"
    );
    // Steady state: nothing but the held watches; no request in a quiet second.
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    let steady = mock.requests().len() - start.len();
    eprintln!("requests in one second of steady state: {steady}");
    assert_eq!(steady, 0);
    let _ = stop_tx.send(());
}
