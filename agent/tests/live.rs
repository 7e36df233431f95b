//! The live source against the scripted API server: `resolve --kubeconfig` equals `resolve -f` on
//! the same objects, malformed objects are diagnostics, reflectors relist atomically, the agent
//! acknowledges its first reconcile and closes the startup watch, and the binary's exit codes.

mod support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;
use std::time::Duration;
use support::{
    End, Mock, NODE, NODES, OWN, POD, POOL_LABEL, Reply, SITE_LABEL, event, node, own_node, site,
};
use tokio::sync::mpsc;
use topology_core::vocab::Kind;
use unbounded_mtu::agent::status::Status;
use unbounded_mtu::k8s::store::{Change, ReflectOptions, Store, reflect};
use unbounded_mtu::k8s::{Backoff, ResourceKind};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Location-free output: explanation and diagnostic sources name files and lines in one mode and
/// the cluster in the other.
fn normalize(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                if k == "source"
                    && let Value::String(s) = x
                {
                    let head = s.split(" at ").next().unwrap_or_default().to_string();
                    let is_loc = head == "cluster"
                        || head.rsplit_once(':').is_some_and(|(_, n)| {
                            !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())
                        });
                    *s = if is_loc { String::new() } else { head };
                } else {
                    normalize(x);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(normalize),
        _ => {}
    }
}

/// [`support::run_bin`] for argument lists built as strings.
async fn run_bin(args: Vec<String>, env: &[(&str, &str)]) -> Output {
    support::run_bin(args, env).await
}

fn json_out(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "status {:?}, stderr {}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    let mut v: Value = serde_json::from_slice(&o.stdout).expect("JSON output");
    normalize(&mut v);
    v
}

fn fixture(name: &str) -> Vec<Value> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(p).expect("fixture")).expect("fixture JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_resolve_equals_resolve_on_files() {
    for ex in [
        "03-hub-and-spoke",
        "04-transit-chain",
        "06-routed-local-published",
    ] {
        let objects = fixture(ex);
        let mock = Mock::start().await;
        support::serve_collections(&mock, &objects);
        let dir = support::tmpdir("live");
        let kc = mock.kubeconfig(&dir);
        let live = run_bin(
            vec![
                "resolve".into(),
                "--kubeconfig".into(),
                kc.display().to_string(),
                "-o".into(),
                "json".into(),
            ],
            &[],
        )
        .await;
        let files = run_bin(
            vec![
                "resolve".into(),
                "-f".into(),
                // The manifest itself: a directory would add a note for its README.
                repo()
                    .join("examples")
                    .join(ex)
                    .join("cluster.yaml")
                    .display()
                    .to_string(),
                "-o".into(),
                "json".into(),
            ],
            &[],
        )
        .await;
        let (live, files) = (json_out(&live), json_out(&files));
        assert!(!live["nodes"].as_array().expect("nodes").is_empty());
        assert_eq!(live, files, "{ex}");
        // Read-only: only GETs, every kind listed once, no watch.
        let reqs = mock.requests();
        assert!(
            reqs.iter().all(|r| r.method == "GET" && !r.is_watch()),
            "{reqs:#?}"
        );
        assert_eq!(reqs.len(), 8);
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_objects_are_diagnostics_in_both_modes() {
    let mut objects = fixture("04-transit-chain");
    let g = "net.unbounded-cloud.io/v1alpha1";
    objects.push(json!({"apiVersion": g, "kind": "Site", "metadata": {"name": "bad"}, "spec": {"nodeCidrs": "10.9.0.0/16", "tunnelMTU": "big"}}));
    objects.push(json!({"apiVersion": g, "kind": "SitePeering", "metadata": {"name": "ghost"}, "spec": {"sites": ["SA", "nowhere"]}}));
    objects.push(
        json!({"apiVersion": g, "kind": "GatewayPoolPeering", "metadata": {"name": 7}, "spec": 3}),
    );
    let mock = Mock::start().await;
    support::serve_collections(&mock, &objects);
    let dir = support::tmpdir("malformed");
    let file = dir.join("all.json");
    std::fs::write(
        &file,
        serde_json::to_vec_pretty(&json!({"apiVersion": "v1", "kind": "List", "items": objects}))
            .expect("json"),
    )
    .expect("write");
    let kc = mock.kubeconfig(&dir);
    let live = json_out(
        &run_bin(
            vec![
                "resolve".into(),
                "--kubeconfig".into(),
                kc.display().to_string(),
                "-o".into(),
                "json".into(),
                // The errors are the point here: the result is compared, not refused.
                "--fail-on".into(),
                "none".into(),
            ],
            &[],
        )
        .await,
    );
    let files = json_out(
        &run_bin(
            vec![
                "resolve".into(),
                "-f".into(),
                file.display().to_string(),
                "-o".into(),
                "json".into(),
                // The errors are the point here: the result is compared, not refused.
                "--fail-on".into(),
                "none".into(),
            ],
            &[],
        )
        .await,
    );
    assert_eq!(live["nodes"], files["nodes"]);
    // A nameless object is labelled by its place in the input: `(document 1 items[19])` in a
    // file, `(object)` from the API.
    let unplaced = |v: &Value| -> Vec<Value> {
        let mut ds = v["diagnostics"].as_array().cloned().unwrap_or_default();
        for d in &mut ds {
            if let Some(o) = d["object"].as_str()
                && let Some((head, _)) = o.split_once(" (")
            {
                d["object"] = json!(head);
            }
        }
        ds
    };
    assert_eq!(unplaced(&live), unplaced(&files));
    let codes: Vec<&str> = live["diagnostics"]
        .as_array()
        .expect("diags")
        .iter()
        .filter_map(|d| d["code"].as_str())
        .collect();
    assert!(codes.contains(&"E-FIELD-TYPE"), "{codes:?}");
    assert!(codes.contains(&"W-MISSING-SITE"), "{codes:?}");

    // In process: the LIST of each kind succeeded.
    let decoded = unbounded_mtu::k8s::live::list_decoded(&mock.client(), &server(&mock))
        .await
        .expect("listed");
    assert!(decoded.objects.iter().any(|o| o.name() == "bad"));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(start_paused = true)]
async fn reflector_resumes_relists_on_gone_and_swaps() {
    let mock = Mock::start().await;
    let sites = support::path(ResourceKind::of(Kind::Site));
    let mut a = site("a", "10.0.0.0/16");
    a["metadata"]["resourceVersion"] = json!("1");
    let mut c = site("c", "10.2.0.0/16");
    c["metadata"]["resourceVersion"] = json!("2");
    let mut a_del = a.clone();
    a_del["metadata"]["resourceVersion"] = json!("3");
    mock.on(
        "GET",
        &sites,
        vec![
            Reply::Json(200, support::list(vec![a.clone()], "1")),
            Reply::Json(200, support::list(vec![site("b", "10.1.0.0/16")], "5")),
        ],
    );
    mock.on_watch(
        &sites,
        vec![
            Reply::Watch(vec![event("ADDED", c), event("DELETED", a_del)], End::Close),
            Reply::Watch(vec![support::error_event(410, "Expired")], End::Close),
            Reply::Watch(vec![], End::Hold),
        ],
    );
    let store = Arc::new(Store::new(ResourceKind::of(Kind::Site)));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(reflect(
        mock.client(),
        store.clone(),
        ReflectOptions::default(),
        tx,
        Backoff::watch(),
    ));
    let mut seen = Vec::new();
    let mut failed = Vec::new();
    while seen.len() < 4 {
        match rx.recv().await.expect("change") {
            Change::Failed(_, e) => failed.push(e.code),
            c => seen.push(c),
        }
    }
    let k = ResourceKind::of(Kind::Site);
    assert_eq!(
        seen,
        vec![
            Change::Listed(k),
            Change::Updated(k),
            Change::Updated(k),
            Change::Listed(k)
        ]
    );
    assert_eq!(failed, [Some(410)], "the 410 event is reported");
    assert!(
        support::until(
            || mock.requests().iter().filter(|r| r.is_watch()).count() == 3,
            1000
        )
        .await
    );
    assert_eq!(
        store.snapshot().keys().collect::<Vec<_>>(),
        ["b"],
        "the relist replaced everything at once"
    );
    let ws: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|r| r.is_watch())
        .collect();
    let rvs: Vec<_> = ws
        .iter()
        .map(|w| w.param("resourceVersion").unwrap_or_default())
        .collect();
    assert_eq!(
        rvs,
        ["1", "3", "5"],
        "resume from the last event, relist after 410"
    );
    assert!(
        ws[1].at - ws[0].at >= Duration::from_secs(1),
        "no immediate reconnect"
    );
    assert_eq!(mock.requests().iter().filter(|r| !r.is_watch()).count(), 2);
    task.abort();
}

/// The own Node `own`, Site `a`, and a worker n2 of `a` (listed in a SiteNodeSlice; its Node
/// carries the underlay annotation 1400).
fn agent_mock(mock: &Mock, own: Value) {
    mock.on("GET", NODE, vec![Reply::Json(200, own.clone())]);
    let mut n2 = node("n2", "u9", "3", json!({SITE_LABEL: "a"}), "10.0.0.6");
    n2["metadata"]["annotations"] = json!({"mtu.unbounded-cloud.io/underlay-mtu": "1400"});
    let slice = json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "SiteNodeSlice",
        "metadata": {"name": "a-0"}, "siteName": "a",
        "nodes": [{"name": "n2", "internalIPs": ["10.0.0.6"], "podCIDRs": ["10.200.2.0/24"]}]});
    support::serve_collections(mock, &[site("a", "10.0.0.0/16"), own, n2, slice]);
}

#[tokio::test]
async fn first_reconcile_acknowledges_then_closes_the_startup_watch() {
    let mock = Mock::start().await;
    agent_mock(&mock, support::with_gateway_taint(own_node("100", "")));
    mock.on("PATCH", POD, vec![support::pod_patched("agent-x")]);
    mock.on("PATCH", NODE, vec![support::node_patched()]);
    support::hold_startup_watch(&mock);
    let args = support::agent_args(&["--dry-run"]);
    let status = Arc::new(Status::default());
    let http = support::serve_status(status.clone()).await;
    assert!(
        support::http_get(http, "/readyz")
            .await
            .starts_with("HTTP/1.1 503")
    );
    let (run, stop_tx) = support::spawn_agent(&mock, args, status, None);
    let sel = Some(OWN);
    assert!(
        support::until(|| mock.requests_to("PATCH", NODE).len() == 1, 5000).await,
        "{:#?}",
        mock.requests()
    );
    // The startup watch is gone; the cache watches stay.
    assert!(support::until(|| mock.open_watches_on(NODES, sel) == 0, 1000).await);
    assert_eq!(mock.open_watches_on(NODES, None), 1);
    let reqs = mock.requests();
    let (ack_at, acknowledged) = support::acknowledgment(&reqs);
    assert_eq!(acknowledged, "u1/a/-");
    let own_watches: Vec<usize> = reqs
        .iter()
        .enumerate()
        .filter(|(_, r)| r.is_watch() && r.param("fieldSelector").as_deref() == sel)
        .map(|(i, _)| i)
        .collect();
    assert_eq!(own_watches.len(), 1);
    assert!(own_watches[0] < ack_at);
    assert_eq!(
        reqs[own_watches[0]].param("resourceVersion").as_deref(),
        Some("100")
    );
    let taint_at = reqs
        .iter()
        .position(|r| r.method == "PATCH" && r.path == NODE)
        .expect("taint");
    assert!(taint_at > ack_at);
    // No GatewayPool request at adoption: the pool label said worker (the cache lists them).
    assert!(
        reqs[..own_watches[0]]
            .iter()
            .all(|r| !r.path.ends_with("/gatewaypools"))
    );
    let ready = support::http_get(http, "/readyz").await;
    assert!(ready.starts_with("HTTP/1.1 200"), "{ready}");
    let doc = support::status_document(http).await;
    assert_eq!(doc["adoptedAssignment"], "u1/a/-");
    assert!(
        !doc["activeWatches"].to_string().contains("startup"),
        "{doc}"
    );
    assert_eq!(doc["plan"]["nodes"][0]["name"], "n1");
    stop_tx.send(()).expect("stop");
    let exit = run.await.expect("join").expect("run");
    assert_eq!(exit.code(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_binary_exit_codes() {
    let labels = json!({SITE_LABEL: "a", POOL_LABEL: ""});
    let cases = [
        (
            event(
                "MODIFIED",
                node("n1", "u2", "101", labels.clone(), "10.0.0.5"),
            ),
            3,
        ),
        (
            event(
                "MODIFIED",
                node(
                    "n1",
                    "u1",
                    "101",
                    json!({SITE_LABEL: "a", POOL_LABEL: "p"}),
                    "10.0.0.5",
                ),
            ),
            3,
        ),
        (
            event(
                "DELETED",
                node("n1", "u1", "101", labels.clone(), "10.0.0.5"),
            ),
            4,
        ),
    ];
    for (ev, code) in cases {
        let mock = Mock::start().await;
        agent_mock(&mock, own_node("100", ""));
        mock.on_watch_selected(NODES, OWN, vec![Reply::Watch(vec![ev], End::Hold)]);
        let dir = support::tmpdir("bin");
        let kc = mock.kubeconfig(&dir);
        let out = run_bin(
            vec![
                "agent".into(),
                "--kubeconfig".into(),
                kc.display().to_string(),
                "--dry-run".into(),
                "--listen".into(),
                "127.0.0.1:0".into(),
            ],
            &[("NODE_NAME", "n1")],
        )
        .await;
        assert_eq!(
            out.status.code(),
            Some(code),
            "stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_binary_once_prints_the_plan_and_acknowledges() {
    let mock = Mock::start().await;
    agent_mock(
        &mock,
        node("n1", "u1", "100", json!({SITE_LABEL: "a"}), "10.0.0.5"),
    );
    support::hold_startup_watch(&mock);
    let pods = "/api/v1/namespaces/ns/pods/p";
    mock.on("PATCH", pods, vec![support::pod_patched("p")]);
    let dir = support::tmpdir("once");
    let kc = mock.kubeconfig(&dir);
    let out = run_bin(
        vec![
            "agent".into(),
            "--kubeconfig".into(),
            kc.display().to_string(),
        ],
        &[
            ("NODE_NAME", "n1"),
            ("POD_NAME", "p"),
            ("POD_NAMESPACE", "ns"),
            ("DRY_RUN", "true"),
            ("ONCE", "true"),
            ("LISTEN_ADDRESS", "127.0.0.1:0"),
        ],
    )
    .await;
    let plan = json_out(&out);
    assert_eq!(plan["nodes"][0]["name"], "n1");
    assert_eq!(plan["nodes"][0]["links"][0]["peer"], "n2");
    // n2's underlay annotation (1400) came from the metadata-only Node watch: 1400 − GENEVE 58.
    assert_eq!(plan["nodes"][0]["links"][0]["mtu"], 1342, "{plan:#}");
    let node_lists: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|r| r.path == NODES && r.param("labelSelector").is_some())
        .collect();
    assert!(!node_lists.is_empty());
    for r in &node_lists {
        assert_eq!(
            r.param("labelSelector").as_deref(),
            Some("net.unbounded-cloud.io/site in (a)")
        );
        assert!(
            r.accept.contains("as=PartialObjectMetadata"),
            "{}",
            r.accept
        );
    }
    assert!(
        mock.requests()
            .iter()
            .filter(|r| r.path == NODES)
            .all(|r| r.param("labelSelector").is_some() || r.param("fieldSelector").is_some()),
        "no unrestricted Node request"
    );
    // No GatewayPool LIST at adoption: without the label, exactly one.
    let reqs = mock.requests();
    let first_watch = reqs.iter().position(|r| r.is_watch()).expect("a watch");
    let pool_lists = reqs[..first_watch]
        .iter()
        .filter(|r| r.path.ends_with("/gatewaypools"))
        .count();
    assert_eq!(pool_lists, 1);
    assert_eq!(mock.requests_to("PATCH", pods).len(), 1);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn heavy_kinds_are_watched_only_while_an_assignment_lists_the_site() {
    let mock = Mock::start().await;
    agent_mock(&mock, own_node("100", ""));
    support::hold_startup_watch(&mock);
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
    // No own Pod: nothing to acknowledge.
    let args = support::parse_agent_args(&["--node-name", "n1", "--dry-run"]);
    let status = Arc::new(Status::default());
    let (run, stop_tx) = support::spawn_agent(&mock, args, status.clone(), None);
    assert!(
        support::until(|| status.ready(), 5000).await,
        "first reconcile"
    );
    let touched = |m: &Mock| {
        m.requests()
            .iter()
            .filter(|r| heavy.contains(&r.path))
            .count()
    };
    assert_eq!(
        touched(&mock),
        0,
        "a worker whose Site no assignment lists reads no heavy kind"
    );

    let assignment = json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "SiteGatewayPoolAssignment",
        "metadata": {"name": "as", "resourceVersion": "50"}, "spec": {"sites": ["a"], "gatewayPools": ["p"]}});
    mock.push(ch, event("ADDED", assignment.clone()));
    assert!(
        support::until(
            || heavy.iter().all(|p| mock.open_watches_on(p, None) == 1),
            5000
        )
        .await,
        "{:#?}",
        mock.requests()
    );
    for p in &heavy {
        assert_eq!(
            mock.requests_to("GET", p)
                .iter()
                .filter(|r| !r.is_watch())
                .count(),
            1,
            "{p}"
        );
    }
    mock.push(ch, event("DELETED", assignment));
    assert!(
        support::until(
            || heavy.iter().all(|p| mock.open_watches_on(p, None) == 0),
            5000
        )
        .await
    );
    stop_tx.send(()).expect("stop");
    assert_eq!(run.await.expect("join").expect("run").code(), 0);
}

#[tokio::test]
async fn list_pages_follow_continue_tokens() {
    let mock = Mock::start().await;
    let sites = support::path(ResourceKind::of(Kind::Site));
    let mut page1 = support::list(vec![site("a", "10.0.0.0/16")], "9");
    page1["metadata"]["continue"] = json!("tok 1");
    mock.on(
        "GET",
        &sites,
        vec![
            Reply::Json(200, page1),
            Reply::Json(200, support::list(vec![site("b", "10.1.0.0/16")], "10")),
        ],
    );
    let items = unbounded_mtu::k8s::api::list_values(&mock.client(), ResourceKind::of(Kind::Site))
        .await
        .expect("listed");
    assert_eq!(items.len(), 2);
    let reqs = mock.requests_to("GET", &sites);
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].param("limit").as_deref(), Some("500"));
    assert_eq!(reqs[0].param("continue"), None);
    assert_eq!(reqs[1].param("continue").as_deref(), Some("tok 1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_binary_exits_0_on_sigterm() {
    let mock = Mock::start().await;
    agent_mock(&mock, own_node("100", ""));
    support::hold_startup_watch(&mock);
    let dir = support::tmpdir("term");
    let kc = mock.kubeconfig(&dir);
    let mut child = support::agent_command(&kc).spawn().expect("spawn");
    assert!(
        support::until(|| mock.open_watches_on(NODES, Some(OWN)) == 1, 10_000).await,
        "the agent started"
    );
    let pid = child.id().expect("pid").to_string();
    let killed = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await
        .expect("kill");
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("exited")
        .expect("wait");
    assert_eq!(status.code(), Some(0));
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn the_client_layer_counts_requests_by_verb_and_resource() {
    let mock = Mock::start().await;
    support::serve_collections(&mock, &[site("a", "10.0.0.0/16")]);
    let metrics = unbounded_mtu::k8s::metrics::ApiMetrics::default();
    let mut cfg = kube::Config::new(mock.url().parse().expect("url"));
    cfg.default_retry = false;
    let client = unbounded_mtu::k8s::client::build(cfg, &metrics).expect("client");
    let decoded = unbounded_mtu::k8s::live::list_decoded(&client, &server(&mock))
        .await
        .expect("listed");
    assert_eq!(decoded.objects.len(), 1);
    let counts = metrics.snapshot();
    assert_eq!(counts.len(), 8, "{counts:?}");
    assert!(
        counts
            .iter()
            .all(|((verb, _, code), n)| verb == "list" && code == "200" && *n == 1)
    );
    assert!(
        counts
            .iter()
            .any(|((_, r, _), _)| r == "sitegatewaypoolassignments")
    );
}

/// A kind the server does not serve (404: its CRD is not installed) is an `E-NOT-SERVED` error
/// naming the resource; the other kinds are read.
#[tokio::test]
async fn a_kind_whose_resource_does_not_exist_is_an_error_diagnostic() {
    let mock = Mock::start().await;
    // Only Sites and Nodes exist; every other LIST answers 404.
    mock.collection(
        &support::path(ResourceKind::of(Kind::Site)),
        vec![site("a", "10.0.0.0/16")],
        "1",
    );
    mock.collection(
        NODES,
        vec![node("n1", "u1", "2", json!({SITE_LABEL: "a"}), "10.0.0.5")],
        "2",
    );
    let decoded = unbounded_mtu::k8s::live::list_decoded(&mock.client(), &server(&mock))
        .await
        .expect("listed");
    assert_eq!(decoded.objects.len(), 2);
    assert_eq!(mock.requests().len(), 8);
    let missing: Vec<(&str, &str)> = decoded
        .diagnostics
        .iter()
        .map(|d| (d.code.as_str(), d.object.as_str()))
        .collect();
    assert_eq!(
        missing,
        [
            ("E-NOT-SERVED", "sitenodeslices.net.unbounded-cloud.io"),
            ("E-NOT-SERVED", "gatewaypools.net.unbounded-cloud.io"),
            ("E-NOT-SERVED", "gatewaypoolnodes.net.unbounded-cloud.io"),
            ("E-NOT-SERVED", "sitepeerings.net.unbounded-cloud.io"),
            (
                "E-NOT-SERVED",
                "sitegatewaypoolassignments.net.unbounded-cloud.io"
            ),
            ("E-NOT-SERVED", "gatewaypoolpeerings.net.unbounded-cloud.io"),
        ]
    );
    assert!(
        decoded
            .diagnostics
            .iter()
            .all(|d| d.severity == topology_core::diag::Severity::Error)
    );
}

/// The mock's URL as the live source names it in errors.
fn server(mock: &Mock) -> unbounded_mtu::k8s::error::Server {
    unbounded_mtu::k8s::error::Server::new(mock.url().parse().expect("url"))
}

#[tokio::test(start_paused = true)]
async fn reflector_relists_when_the_watch_request_itself_is_gone() {
    let mock = Mock::start().await;
    let sites = support::path(ResourceKind::of(Kind::Site));
    mock.on(
        "GET",
        &sites,
        vec![
            Reply::Json(200, support::list(vec![], "1")),
            Reply::Json(200, support::list(vec![site("b", "10.1.0.0/16")], "7")),
        ],
    );
    mock.on_watch(
        &sites,
        vec![
            Reply::Json(
                410,
                support::status(410, "Expired", "too old resource version"),
            ),
            Reply::Watch(vec![], End::Hold),
        ],
    );
    let store = Arc::new(Store::new(ResourceKind::of(Kind::Site)));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(reflect(
        mock.client(),
        store.clone(),
        ReflectOptions::default(),
        tx,
        Backoff::watch(),
    ));
    let k = ResourceKind::of(Kind::Site);
    assert_eq!(rx.recv().await, Some(Change::Listed(k)));
    match rx.recv().await {
        Some(Change::Failed(_, e)) => assert_eq!(e.code, Some(410)),
        other => panic!("{other:?}"),
    }
    assert_eq!(rx.recv().await, Some(Change::Listed(k)));
    assert_eq!(store.snapshot().keys().collect::<Vec<_>>(), ["b"]);
    assert!(
        support::until(
            || mock.requests().iter().filter(|r| r.is_watch()).count() == 2,
            1000
        )
        .await
    );
    let ws: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|r| r.is_watch())
        .collect();
    assert_eq!(ws[1].param("resourceVersion").as_deref(), Some("7"));
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_manifests_once_prints_what_resolve_prints_for_the_node() {
    let ex = repo()
        .join("examples/04-transit-chain")
        .display()
        .to_string();
    let agent = run_bin(
        vec![
            "agent".into(),
            "--node-name".into(),
            "wa".into(),
            "--manifests".into(),
            ex.clone(),
            "--dry-run".into(),
            "--once".into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
        ],
        &[],
    )
    .await;
    let resolve = run_bin(
        vec![
            "resolve".into(),
            "-f".into(),
            ex,
            "--node".into(),
            "wa".into(),
            "-o".into(),
            "json".into(),
        ],
        &[],
    )
    .await;
    assert_eq!(json_out(&agent), json_out(&resolve));
}

/// `--kubeconfig` without a value reads `$KUBECONFIG` (then `~/.kube/config`), and `--context`
/// selects a context of it, as kubectl does: the current context names a server that refuses
/// connections, the `mock` context the scripted API server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubeconfig_defaults_to_the_environment_and_context_selects() {
    let objects = fixture("04-transit-chain");
    let mock = Mock::start().await;
    support::serve_collections(&mock, &objects);
    let dir = support::tmpdir("context");
    let kc = dir.join("config");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: dead\n  cluster:\n    server: http://127.0.0.1:1\n- name: mock\n  cluster:\n    server: {}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: dead\n  context:\n    cluster: dead\n    user: u\n- name: mock\n  context:\n    cluster: mock\n    user: u\ncurrent-context: dead\n",
            mock.url()
        ),
    )
    .expect("write kubeconfig");
    let kc_env = kc.display().to_string();
    let files = json_out(
        &run_bin(
            vec![
                "resolve".into(),
                "-f".into(),
                repo()
                    .join("examples/04-transit-chain/cluster.yaml")
                    .display()
                    .to_string(),
                "-o".into(),
                "json".into(),
            ],
            &[],
        )
        .await,
    );
    for args in [
        vec!["resolve", "--kubeconfig", "--context", "mock", "-o", "json"],
        vec!["resolve", "--context", "mock", "-o", "json"],
    ] {
        let out = run_bin(
            args.iter().map(|s| s.to_string()).collect(),
            &[("KUBECONFIG", kc_env.as_str())],
        )
        .await;
        assert_eq!(json_out(&out), files, "{args:?}");
    }
    // The current context (the dead server) without --context: an error, once per cause.
    let out = run_bin(
        vec!["resolve".into(), "--kubeconfig".into()],
        &[("KUBECONFIG", kc_env.as_str())],
    )
    .await;
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(dir);
}
