//! The one reconcile loop in both modes: the dry run plans exactly what the same flags apply,
//! `--underlay-mtu` means the same everywhere, the Node's deletion removes the owned kernel
//! state before exit 4, a stop during a long apply lets the write step finish, a peer without a
//! Site label keeps its underlay annotation, and the agent logs in API mode (text and JSON).

mod support;

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use support::{End, FakeApplier, Mock, NODE, NODES, OWN, POD, Reply, node, own_node, site};
use unbounded_mtu::agent::Exit;
use unbounded_mtu::agent::applier::{self, Applier};
use unbounded_mtu::agent::run::{self, Stop};
use unbounded_mtu::agent::source::Files;
use unbounded_mtu::agent::status::Status;
use unbounded_mtu::settings;

/// Sites a (10.0.0.0/16) and b peered; n1 in a (its own annotation 1300), wb in b.
const CLUSTER: &str = r#"
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: a}
spec: {nodeCidrs: ["10.0.0.0/16"]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: Site
metadata: {name: b}
spec: {nodeCidrs: ["10.1.0.0/16"]}
---
apiVersion: net.unbounded-cloud.io/v1alpha1
kind: SitePeering
metadata: {name: ab}
spec: {sites: [a, b]}
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {net.unbounded-cloud.io/site: a}
  annotations: {mtu.unbounded-cloud.io/underlay-mtu: "1300"}
status: {addresses: [{type: InternalIP, address: 10.0.0.5}]}
spec: {podCIDRs: ["10.9.0.0/24"]}
---
apiVersion: v1
kind: Node
metadata: {name: wb, labels: {net.unbounded-cloud.io/site: b}}
status: {addresses: [{type: InternalIP, address: 10.1.0.5}]}
spec: {podCIDRs: ["10.9.1.0/24"]}
"#;

fn manifests() -> std::path::PathBuf {
    let dir = support::tmpdir("one-loop");
    std::fs::write(dir.join("cluster.yaml"), CLUSTER).expect("write");
    dir
}

/// One pass of the manifests loop with `extra` flags through `applier` (the settings' own when
/// `None`); returns the `/status` plan.
async fn manifests_once(
    dir: &std::path::Path,
    extra: &[&str],
    applier: Option<Arc<dyn Applier>>,
) -> Value {
    let dir = dir.display().to_string();
    let mut args = vec!["--node-name", "n1", "--manifests", &dir, "--once"];
    args.extend_from_slice(extra);
    let s = settings::Agent::from_args(&support::parse_agent_args(&args)).expect("settings");
    let applier = applier.unwrap_or_else(|| applier::for_settings(&s));
    let status = Status::default();
    let settings::Source::Manifests { paths, poll } = &s.source else {
        panic!("manifests")
    };
    let mut files = Files::new(paths.clone(), *poll);
    let exit = run::run(
        &s,
        &mut files,
        applier,
        &status,
        Stop::on(std::future::pending()),
    )
    .await
    .expect("one pass");
    assert_eq!(exit, Exit::Done);
    status.document()["plan"].clone()
}

fn link_mtu(plan: &Value) -> &Value {
    &plan["nodes"][0]["links"][0]["mtu"]
}

#[tokio::test]
async fn manifests_dry_run_plans_what_the_same_flags_apply() {
    let dir = manifests();
    for extra in [&["--underlay-mtu", "1400"][..], &[][..]] {
        let fake = Arc::new(FakeApplier::default());
        let applied = manifests_once(&dir, extra, Some(fake.clone())).await;
        let mut dry_flags = extra.to_vec();
        dry_flags.push("--dry-run");
        let dry = manifests_once(&dir, &dry_flags, None).await;
        assert_eq!(applied, dry, "{extra:?}");
        assert_eq!(fake.applied.lock().unwrap().len(), 1);
    }
    // `--underlay-mtu` is the agent's own underlay, as if detected: it replaces the node's own
    // annotation (1300), in the dry run as in the apply. 1400 − GENEVE 58.
    let plan = manifests_once(&dir, &["--underlay-mtu", "1400", "--dry-run"], None).await;
    assert_eq!(link_mtu(&plan), 1342, "{plan:#}");
    // Detected: the fake reports 1350.
    let fake = Arc::new(FakeApplier {
        underlay: Some(1350),
        ..FakeApplier::default()
    });
    let plan = manifests_once(&dir, &["--detect-underlay"], Some(fake)).await;
    assert_eq!(link_mtu(&plan), 1292, "{plan:#}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A worker n1 of Site a with peer n2 (annotation 1400) listed in a's slice.
fn api_cluster(mock: &Mock, n2_labels: Value) {
    mock.on("GET", NODE, vec![Reply::Json(200, own_node("100", ""))]);
    mock.on("PATCH", POD, vec![support::pod_patched("agent-x")]);
    mock.on("PATCH", NODE, vec![support::node_patched()]);
    let mut n2 = node("n2", "u9", "3", n2_labels, "10.0.0.6");
    n2["metadata"]["annotations"] = json!({"mtu.unbounded-cloud.io/underlay-mtu": "1400"});
    let slice = json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "SiteNodeSlice",
        "metadata": {"name": "a-0"}, "siteName": "a",
        "nodes": [{"name": "n2", "internalIPs": ["10.0.0.6"], "podCIDRs": ["10.200.2.0/24"]}]});
    support::serve_collections(
        mock,
        &[site("a", "10.0.0.0/16"), own_node("100", ""), n2, slice],
    );
}

async fn api_plan(extra: &[&str], applier: Option<Arc<dyn Applier>>, n2_labels: Value) -> Value {
    let mock = Mock::start().await;
    api_cluster(&mock, n2_labels);
    support::hold_startup_watch(&mock);
    let status = Arc::new(Status::default());
    let (_task, stop) =
        support::spawn_agent(&mock, support::agent_args(extra), status.clone(), applier);
    assert!(
        support::until(|| !status.document()["plan"].is_null(), 5000).await,
        "{:#?}",
        mock.requests()
    );
    let _ = stop.send(());
    status.document()["plan"].clone()
}

#[tokio::test]
async fn api_dry_run_plans_what_the_same_flags_apply() {
    let labelled = json!({support::SITE_LABEL: "a"});
    let fake = Arc::new(FakeApplier::default());
    let applied = api_plan(
        &["--underlay-mtu", "1450"],
        Some(fake.clone()),
        labelled.clone(),
    )
    .await;
    let dry = api_plan(&["--underlay-mtu", "1450", "--dry-run"], None, labelled).await;
    assert_eq!(applied, dry);
    // min(own 1450, n2's annotation 1400) − GENEVE 58.
    assert_eq!(link_mtu(&applied), 1342, "{applied:#}");
}

#[tokio::test]
async fn a_peer_without_a_site_label_keeps_its_underlay_annotation() {
    // n2 belongs to Site a by its address (nodeCidrs), not by a label: the watch by Site label
    // does not return it, so the agent widens the watch to every Node's metadata.
    let mock = Mock::start().await;
    api_cluster(&mock, json!({}));
    support::hold_startup_watch(&mock);
    let status = Arc::new(Status::default());
    let (_task, stop) = support::spawn_agent(
        &mock,
        support::agent_args(&["--dry-run"]),
        status.clone(),
        None,
    );
    assert!(support::until(|| !status.document()["plan"].is_null(), 5000).await);
    let plan = status.document()["plan"].clone();
    assert_eq!(link_mtu(&plan), 1342, "n2's 1400 honoured: {plan:#}");
    let watches = status.document()["activeWatches"].to_string();
    assert!(watches.contains("metadata, all"), "{watches}");
    assert!(
        mock.requests().iter().any(|r| r.path == NODES
            && r.param("labelSelector").is_none()
            && r.param("fieldSelector").is_none()),
        "an unrestricted Node metadata request"
    );
    let _ = stop.send(());
}

#[tokio::test]
async fn the_nodes_deletion_removes_the_owned_kernel_state_before_exit_4() {
    let mock = Mock::start().await;
    api_cluster(&mock, json!({support::SITE_LABEL: "a"}));
    let deleted = support::event(
        "DELETED",
        node(
            "n1",
            "u1",
            "101",
            json!({support::SITE_LABEL: "a"}),
            "10.0.0.5",
        ),
    );
    // The startup watch stays open until the acknowledgment; the deletion arrives on it.
    support::refuse_acknowledgment(&mock);
    mock.on_watch_selected(NODES, OWN, vec![Reply::Watch(vec![deleted], End::Hold)]);
    let fake = Arc::new(FakeApplier::default());
    let (task, _stop) = support::spawn_agent(
        &mock,
        support::agent_args(&[]),
        Arc::new(Status::default()),
        Some(fake.clone()),
    );
    let exit = tokio::time::timeout(Duration::from_secs(10), task)
        .await
        .expect("in time")
        .expect("joined")
        .expect("an exit");
    assert_eq!(exit, Exit::NodeDeleted);
    assert_eq!(fake.removals.load(Ordering::SeqCst), 1);
}

/// A dataplane whose apply takes `slow`, recording when it finished.
struct Slow {
    slow: Duration,
    finished: std::sync::Mutex<Option<std::time::Instant>>,
}

impl Applier for Slow {
    fn detect_underlay(
        &self,
        _: &dataplane_linux::DesiredState,
        _: &[std::net::IpAddr],
    ) -> dataplane_linux::Result<Option<u32>> {
        Ok(None)
    }

    fn apply(
        &self,
        _: &dataplane_linux::DesiredState,
    ) -> dataplane_linux::Result<applier::Applied> {
        std::thread::sleep(self.slow);
        *self.finished.lock().unwrap() = Some(std::time::Instant::now());
        Ok(applier::Applied {
            in_kernel: true,
            ..Default::default()
        })
    }

    fn remove_owned(&self) -> dataplane_linux::Result<applier::Applied> {
        Ok(applier::Applied::default())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_during_a_long_apply_lets_it_finish_then_ends_with_done() {
    let dir = manifests();
    let d = dir.display().to_string();
    let s = settings::Agent::from_args(&support::parse_agent_args(&[
        "--node-name",
        "n1",
        "--manifests",
        &d,
    ]))
    .expect("settings");
    let slow = Arc::new(Slow {
        slow: Duration::from_millis(1500),
        finished: Default::default(),
    });
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let stop = Stop::on(async move {
        let _ = rx.await;
    });
    let status = Arc::new(Status::default());
    let (st, sl, applier) = (status.clone(), s.clone(), slow.clone());
    let task = tokio::spawn(async move {
        let settings::Source::Manifests { paths, poll } = &sl.source else {
            panic!("manifests")
        };
        let mut files = Files::new(paths.clone(), *poll);
        run::run(&sl, &mut files, applier, &st, stop).await
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let stopped_at = std::time::Instant::now();
    let _ = tx.send(());
    let exit = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("stopped within 5 s")
        .expect("joined")
        .expect("no failure");
    assert_eq!(exit, Exit::Done);
    let finished = slow.finished.lock().unwrap().expect("the apply finished");
    assert!(finished > stopped_at, "the write step in progress finished");
    assert_eq!(status.document()["lastReconcile"]["result"], "ok");
    let _ = std::fs::remove_dir_all(dir);
}

/// The binary in API mode (as the DaemonSet runs it) logs to standard error, as text by default
/// and as one JSON object per line with `--log-format json`; `RUST_LOG` filters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_logs_in_api_mode() {
    for (format, rust_log) in [("text", "info"), ("json", "info"), ("text", "error")] {
        let mock = Mock::start().await;
        api_cluster(&mock, json!({support::SITE_LABEL: "a"}));
        support::hold_startup_watch(&mock);
        let dir = support::tmpdir("logs");
        let kc = mock.kubeconfig(&dir);
        let mut cmd = support::agent_command(&kc);
        cmd.args(["--once", "--log-format", format])
            .env("RUST_LOG", rust_log)
            .stderr(std::process::Stdio::piped());
        let out = tokio::time::timeout(Duration::from_secs(30), cmd.output())
            .await
            .expect("in time")
            .expect("ran");
        assert!(out.status.success(), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        if rust_log == "error" {
            assert!(err.trim().is_empty(), "RUST_LOG=error: {err}");
            continue;
        }
        assert!(err.contains("adopted the assignment"), "{err}");
        assert!(err.contains("reconciled"), "{err}");
        if format == "json" {
            for line in err.lines() {
                let v: Value = serde_json::from_str(line).expect("one JSON object per line");
                assert!(v.get("level").is_some(), "{line}");
            }
        }
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// An unreachable API server is in the log and on `/status` (and counted as an `api` error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_api_server_is_in_the_log_and_on_status() {
    let mut cfg = kube::Config::new("http://127.0.0.1:1".parse().expect("url"));
    cfg.connect_timeout = Some(Duration::from_millis(200));
    let client = unbounded_mtu::k8s::client::build(cfg, &Default::default()).expect("client");
    let args = support::agent_args(&["--dry-run"]);
    let s = Arc::new(settings::Agent::from_args(&args).expect("settings"));
    let status = Arc::new(Status::default());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let stop = Stop::on(async move {
        let _ = rx.await;
    });
    let applier = applier::for_settings(&s);
    let task = tokio::spawn(run::run_api(client, s, status.clone(), stop, applier));
    assert!(
        support::until(
            || !status.document()["apiErrors"]["adoption"].is_null(),
            5000
        )
        .await,
        "{}",
        status.document()
    );
    assert!(
        status
            .metrics()
            .contains("unbounded_mtu_errors_total{step=\"api\"} 1"),
        "{}",
        status.metrics()
    );
    let _ = tx.send(());
    let exit = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("stops")
        .expect("joined")
        .expect("no failure");
    assert_eq!(exit, Exit::Done);
    // The binary says it in its log.
    let dir = support::tmpdir("dead-api");
    let kc = dir.join("kubeconfig");
    std::fs::write(
        &kc,
        "apiVersion: v1\nkind: Config\nclusters:\n- name: dead\n  cluster:\n    server: http://127.0.0.1:1\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context:\n    cluster: dead\n    user: u\ncurrent-context: c\n",
    )
    .expect("kubeconfig");
    let mut cmd = support::agent_command(&kc);
    cmd.stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    child.start_kill().expect("kill");
    let out = child.wait_with_output().await.expect("output");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("adoption failed"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}
