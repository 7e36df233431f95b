//! Assignment adoption of a Node whose `gateway-pool` label names a GatewayPool that does not
//! exist (`agent.md` Start 3 and 4; the seed's "GatewayPool label that didn't exist" case),
//! against the scripted API server: a label naming an existing pool decides after one GET of
//! that pool; a label naming a missing pool falls through to one LIST and membership (`"true"`
//! on a gateway its pool's status lists adopts that pool); with nothing backing it the assignment
//! is broken: never acknowledged, reported on `/status` and in the log, retried with a backoff
//! until the label changes, which ends the agent with exit code 3.

mod support;

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use support::{
    End, Mock, NODE, NODES, OWN, POD, POOLS, Reply, SITE_LABEL, SITES, event, node, own_node as n1,
    site, status,
};
use unbounded_mtu::agent::Exit;
use unbounded_mtu::agent::adopt::{AdoptError, Attempt, try_adopt};
use unbounded_mtu::agent::startup::{self, Adoption};
use unbounded_mtu::agent::status::Status;
use unbounded_mtu::k8s::{Backoff, api_status};

fn pool(name: &str, spec: Value, status_nodes: Value) -> Value {
    json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "GatewayPool",
           "metadata": {"name": name, "resourceVersion": "5"}, "spec": spec,
           "status": {"nodes": status_nodes}})
}

/// Pools of which none takes n1: PO's status lists another gateway, PS selects a label n1 lacks.
fn pools_without_n1() -> Vec<Value> {
    vec![
        pool(
            "PO",
            json!({"type": "External", "nodeSelector": {"gw": "o"}}),
            json!([{"name": "g9", "siteName": "a", "internalIPs": ["10.0.0.9"]}]),
        ),
        pool(
            "PS",
            json!({"type": "Internal", "nodeSelector": {"gw": "yes"}}),
            json!([]),
        ),
    ]
}

/// PH, whose status lists n1.
fn ph() -> Value {
    pool(
        "PH",
        json!({"type": "Internal", "nodeSelector": {"gw": "hub"}}),
        json!([{"name": "n1", "siteName": "a", "internalIPs": ["10.0.0.5"]}]),
    )
}

fn pool_path(name: &str) -> String {
    format!("{POOLS}/{name}")
}

fn not_found(name: &str) -> Reply {
    Reply::Json(
        404,
        status(
            404,
            "NotFound",
            &format!("gatewaypools.net.unbounded-cloud.io \"{name}\" not found"),
        ),
    )
}

/// LISTs and held WATCHes of every kind; the own Node's GET.
fn serve(mock: &Mock, own: &Value, objects: &[Value]) {
    mock.on("GET", NODE, vec![Reply::Json(200, own.clone())]);
    support::serve_collections(mock, objects);
    mock.on("PATCH", POD, vec![support::pod_patched("agent-x")]);
}

/// Runs the agent (dry run, own Pod `ns/agent-x`) with its HTTP server on a free port.
async fn start_agent(
    mock: &Mock,
) -> (
    tokio::task::JoinHandle<Result<Exit, unbounded_mtu::agent::failure::Failure>>,
    std::net::SocketAddr,
    Arc<Status>,
    tokio::sync::oneshot::Sender<()>,
) {
    let status = Arc::new(Status::default());
    let http = support::serve_status(status.clone()).await;
    let args = support::agent_args(&["--dry-run"]);
    let (run, stop_tx) = support::spawn_agent(mock, args, status.clone(), None);
    (run, http, status, stop_tx)
}

fn own_watches(mock: &Mock) -> Vec<support::Recorded> {
    mock.requests()
        .into_iter()
        .filter(|r| {
            r.path == NODES && r.is_watch() && r.param("fieldSelector").as_deref() == Some(OWN)
        })
        .collect()
}

/// The seed's case: a label naming a missing pool that nothing backs. No acknowledgment, the
/// broken assignment on `/status`, throttled retries (each one GET of the named pool and one
/// LIST), the startup watch from the first GET; an unrelated change of the Node changes nothing,
/// a change of the label ends the agent with exit code 3.
#[tokio::test(start_paused = true)]
async fn a_label_naming_a_missing_pool_is_never_acknowledged_and_its_change_is_exit_3() {
    let mock = Mock::start().await;
    serve(
        &mock,
        &n1("100", "missing"),
        &[
            site("a", "10.0.0.0/16"),
            pools_without_n1()[0].clone(),
            pools_without_n1()[1].clone(),
        ],
    );
    mock.on("GET", &pool_path("missing"), vec![not_found("missing")]);
    let ch = mock.live_channel();
    mock.on_watch_selected(NODES, OWN, vec![Reply::Live(ch)]);
    let (run, http, _status, _stop) = start_agent(&mock).await;

    // Three attempts, 1 s then 2 s apart (up to 20 % jitter): throttled, no storm.
    assert!(
        support::until(|| mock.requests_to("GET", NODE).len() >= 3, 100_000).await,
        "{:#?}",
        mock.requests()
    );
    let gets = mock.requests_to("GET", NODE);
    for (pair, base) in gets.windows(2).zip([1u64, 2]) {
        let (gap, base) = (pair[1].at - pair[0].at, Duration::from_secs(base));
        assert!(gap >= base && gap <= base * 2, "gap {gap:?} for {base:?}");
    }
    // Each attempt: one GET of the named pool (404), then one LIST of GatewayPools.
    let attempts = gets.len();
    assert!(support::until(|| mock.requests_to("GET", POOLS).len() >= attempts, 1000).await);
    let pool_gets = mock.requests_to("GET", &pool_path("missing")).len();
    let pool_lists = mock.requests_to("GET", POOLS).len();
    assert!(
        (attempts..=attempts + 1).contains(&pool_gets) && pool_lists >= pool_gets - 1,
        "{attempts} attempts, {pool_gets} pool GETs, {pool_lists} LISTs"
    );
    assert!(mock.requests_to("GET", POOLS).iter().all(|r| !r.is_watch()));
    // The rest runs on the real clock: a paused clock jumps to the next timer whenever the
    // runtime waits for the mock's (real) sockets, which on a loaded machine would fire the
    // timeouts below before the events arrive.
    tokio::time::resume();

    let doc = support::status_document(http).await;
    assert_eq!(doc["adoptedAssignment"], Value::Null, "{doc}");
    assert_eq!(doc["ready"], false);
    assert_eq!(doc["brokenAssignment"]["poolLabel"], "missing", "{doc}");
    assert_eq!(doc["brokenAssignment"]["site"], "a");
    let reason = doc["brokenAssignment"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("\"missing\", which does not exist")
            && reason.contains("status.nodes or nodeSelector"),
        "{reason}"
    );
    assert_eq!(doc["activeWatches"], json!(["node/n1 (startup)"]), "{doc}");

    // One startup watch, from the first GET, and nothing else: no cache, no acknowledgment
    // (only the Warning Events on its Pod, tests/rbac.rs).
    let ws = own_watches(&mock);
    assert_eq!(ws.len(), 1, "{ws:#?}");
    assert_eq!(ws[0].param("resourceVersion").as_deref(), Some("100"));
    assert!(
        mock.requests()
            .iter()
            .filter(|r| !r.path.starts_with("/apis/events.k8s.io/"))
            .all(|r| r.method == "GET" && !(r.is_watch() && r.path != NODES)),
        "{:#?}",
        mock.requests()
    );
    assert!(mock.requests_to("PATCH", POD).is_empty());

    // An unrelated change (same labels) is no reason to restart.
    let mut touched = n1("101", "missing");
    touched["metadata"]["annotations"] = json!({"x": "y"});
    mock.push(ch, event("MODIFIED", touched));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!run.is_finished());

    // The label changes: exit code 3, still without an acknowledgment.
    mock.push(ch, event("MODIFIED", n1("102", "")));
    let exit = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the agent ended")
        .expect("join")
        .expect("run");
    assert!(
        matches!(&exit, Exit::AssignmentChanged(why) if why.contains("gateway-pool")),
        "{exit:?}"
    );
    assert_eq!(exit.code(), 3);
    assert!(mock.requests_to("PATCH", POD).is_empty());
    assert!(mock.requests().iter().all(|r| r.method != "PATCH"));
}

/// The same case through the binary: the warning in its log, no acknowledgment, exit code 3
/// when the label changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_logs_a_broken_assignment_and_exits_3_when_its_label_changes() {
    let mock = Mock::start().await;
    serve(
        &mock,
        &n1("100", "missing"),
        &[site("a", "10.0.0.0/16"), pools_without_n1()[0].clone()],
    );
    mock.on("GET", &pool_path("missing"), vec![not_found("missing")]);
    let ch = mock.live_channel();
    mock.on_watch_selected(NODES, OWN, vec![Reply::Live(ch)]);
    let dir = support::tmpdir("adoption");
    let kc = mock.kubeconfig(&dir);
    let child = support::agent_command(&kc)
        .env("POD_NAME", "agent-x")
        .env("POD_NAMESPACE", "ns")
        .env("RUST_LOG", "warn")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    assert!(
        support::until(|| mock.open_watches_on(NODES, Some(OWN)) == 1, 20_000).await,
        "the startup watch opened: {:#?}",
        mock.requests()
    );
    assert!(
        support::until(|| mock.requests_to("GET", NODE).len() >= 2, 20_000).await,
        "a retry"
    );
    mock.push(ch, event("MODIFIED", n1("101", "PH")));
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("exited")
        .expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("WARN") && stderr.contains("broken assignment"),
        "{stderr}"
    );
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(mock.requests_to("PATCH", POD).is_empty());
    let _ = std::fs::remove_dir_all(dir);
}

/// `"true"`, as live upstream gateways carry it, names no pool: one GET of it (404), one LIST,
/// and PH's status takes the node. The agent adopts and acknowledges `u1/a/PH`; the startup
/// watch sees the same `"true"` label as no change.
#[tokio::test]
async fn label_true_with_the_pool_status_listing_the_node_adopts_that_pool() {
    let mock = Mock::start().await;
    let own = n1("100", "true");
    serve(
        &mock,
        &own,
        &[
            site("a", "10.0.0.0/16"),
            own.clone(),
            ph(),
            pools_without_n1()[1].clone(),
        ],
    );
    mock.on("GET", &pool_path("true"), vec![not_found("true")]);
    let mut touched = n1("101", "true");
    touched["metadata"]["annotations"] = json!({"x": "y"});
    mock.on_watch_selected(
        NODES,
        OWN,
        vec![Reply::Watch(vec![event("MODIFIED", touched)], End::Hold)],
    );
    let (run, http, _status, stop) = start_agent(&mock).await;
    assert!(
        support::until(|| !mock.requests_to("PATCH", POD).is_empty(), 10_000).await,
        "{:#?}",
        mock.requests()
    );
    let reqs = mock.requests();
    let (_, acknowledged) = support::acknowledgment(&reqs);
    assert_eq!(acknowledged, "u1/a/PH");
    // Before the startup watch (adoption): one GET of "true", one LIST of pools.
    let watch_at = reqs
        .iter()
        .position(|r| r.is_watch() && r.param("fieldSelector").as_deref() == Some(OWN))
        .expect("startup watch");
    let adoption = &reqs[..watch_at];
    assert_eq!(
        adoption
            .iter()
            .filter(|r| r.path == pool_path("true"))
            .count(),
        1
    );
    assert_eq!(adoption.iter().filter(|r| r.path == POOLS).count(), 1);
    let doc = support::status_document(http).await;
    assert_eq!(doc["adoptedAssignment"], "u1/a/PH", "{doc}");
    assert_eq!(doc["brokenAssignment"], Value::Null);
    assert!(
        !run.is_finished(),
        "the unchanged label did not end the agent"
    );
    stop.send(()).expect("stop");
    let exit = run.await.expect("join").expect("run");
    assert_eq!(exit.code(), 0);
}

/// A label naming an existing pool decides after one GET of that pool: no LIST.
#[tokio::test]
async fn a_label_naming_an_existing_pool_is_adopted_after_one_get_of_it() {
    let mock = support::adoption_mock(n1("100", "p1")).await;
    mock.on(
        "GET",
        &pool_path("p1"),
        vec![Reply::Json(
            200,
            pool("p1", json!({"type": "Internal"}), json!([])),
        )],
    );
    let a = try_adopt(&mock.client(), "n1")
        .await
        .expect("adopt")
        .adopted()
        .expect("adopted");
    assert_eq!(a.assignment.annotation_value(), "u1/a/p1");
    let reqs: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        reqs,
        [
            format!("GET {NODE}"),
            format!("GET {SITES}"),
            format!("GET {}", pool_path("p1"))
        ],
        "one GET of the pool, no LIST"
    );
}

/// A failed GET of the named pool (not a 404) is an error, retried: neither "missing" nor a
/// LIST; the API status is kept.
#[tokio::test]
async fn a_failed_get_of_the_named_pool_is_an_error_not_a_missing_pool() {
    let mock = support::adoption_mock(n1("100", "p1")).await;
    mock.on(
        "GET",
        &pool_path("p1"),
        vec![Reply::Json(403, status(403, "Forbidden", "no"))],
    );
    let e = try_adopt(&mock.client(), "n1").await.expect_err("fails");
    let AdoptError::GetPool { pool, source } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(pool, "p1");
    assert_eq!(api_status(source).map(|s| s.code), Some(403));
    assert!(mock.requests_to("GET", POOLS).is_empty());
}

/// Without a label nothing is broken: no pool takes the node, so it is a worker.
#[tokio::test]
async fn without_a_label_and_no_pool_taking_the_node_it_is_a_worker() {
    let mock = support::adoption_mock(node(
        "n1",
        "u1",
        "100",
        json!({SITE_LABEL: "a"}),
        "10.0.0.5",
    ))
    .await;
    mock.collection(POOLS, pools_without_n1(), "8");
    let a = try_adopt(&mock.client(), "n1").await.expect("adopt");
    assert!(
        matches!(&a, Attempt::Adopted(a) if a.assignment.pool.is_none()),
        "{a:?}"
    );
}

/// A broken assignment is repaired without a label change (the pool's status comes to list the
/// node): adopted at the next attempt, no exit; the watch of the broken state is closed and the
/// startup watch starts again from the adopting GET; `/status` no longer reports it broken.
#[tokio::test(start_paused = true)]
async fn a_broken_assignment_repaired_by_the_pool_status_is_adopted_at_the_next_attempt() {
    let mock = Mock::start().await;
    mock.on(
        "GET",
        NODE,
        vec![
            Reply::Json(200, n1("100", "missing")),
            Reply::Json(200, n1("200", "missing")),
        ],
    );
    mock.collection(SITES, vec![site("a", "10.0.0.0/16")], "7");
    mock.on("GET", &pool_path("missing"), vec![not_found("missing")]);
    mock.on(
        "GET",
        POOLS,
        vec![
            Reply::Json(200, support::list(pools_without_n1(), "8")),
            Reply::Json(200, support::list(vec![ph()], "9")),
        ],
    );
    mock.on_watch_selected(NODES, OWN, vec![Reply::Watch(vec![], End::Hold)]);
    let status = Arc::new(Status::default());
    let client = mock.client();
    let st = status.clone();
    let task =
        tokio::spawn(async move { startup::adopt(&client, "n1", &st, Backoff::watch()).await });
    assert!(
        support::until(
            || status.document()["brokenAssignment"]["poolLabel"] == "missing",
            1000
        )
        .await
    );
    let adoption = task.await.expect("join").expect("adoption");
    let Adoption::Adopted(a, watch) = adoption else {
        panic!("{adoption:?}")
    };
    assert_eq!(a.assignment.annotation_value(), "u1/a/PH");
    assert!(watch.running());
    let doc = status.document();
    assert_eq!(doc["brokenAssignment"], Value::Null, "{doc}");
    assert_eq!(doc["adoptedAssignment"], "u1/a/PH");
    assert!(
        support::until(|| own_watches(&mock).len() == 2, 1000).await,
        "{:#?}",
        own_watches(&mock)
    );
    let ws = own_watches(&mock);
    assert_eq!(ws[0].param("resourceVersion").as_deref(), Some("100"));
    assert_eq!(ws[1].param("resourceVersion").as_deref(), Some("200"));
    assert!(
        support::until(|| mock.open_watches_on(NODES, Some(OWN)) == 1, 1000).await,
        "the broken state's watch is closed"
    );
    drop(watch);
    assert!(support::until(|| mock.open_watches_on(NODES, Some(OWN)) == 0, 1000).await);
}
