//! Errors from a cluster, through the binary against the scripted API server: a server's refusal
//! reads as kubectl words it (never a `Debug` dump), a kind the server does not serve is an
//! error diagnostic (not an empty list), a refused connection names the server and the flags
//! that choose another, an unknown context lists the contexts that exist, a kubeconfig path is
//! named once, and the agent prints each error once.

mod support;

use serde_json::{Value, json};
use std::path::Path;
use std::process::Output;
use std::time::Duration;
use support::{Mock, Reply};
use topology_core::vocab::Kind;
use unbounded_mtu::k8s::ResourceKind;

/// What a `Debug` dump of kube's errors would show.
const DEBUG_TEXT: [&str; 4] = ["ErrorResponse {", "Status {", "Some(", "ApiError:"];

/// Standard error, which must be exactly one line.
fn one_line(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(
        err.lines().count(),
        1,
        "one line on standard error: {err:?}"
    );
    for d in DEBUG_TEXT {
        assert!(!err.contains(d), "no Debug text ({d}): {err}");
    }
    err.trim_end().to_string()
}

fn fixture(name: &str) -> Vec<Value> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(format!("{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(p).expect("fixture")).expect("fixture JSON")
}

/// Serves every kind as `support::serve_collections` does, except `missing`, which stays
/// unscripted.
fn serve_all_but(mock: &Mock, objects: &[Value], missing: ResourceKind) {
    for rk in ResourceKind::ALL.into_iter().filter(|k| *k != missing) {
        let items: Vec<Value> = objects
            .iter()
            .filter(|o| o["kind"].as_str().and_then(Kind::parse_ci) == Some(rk.kind))
            .cloned()
            .collect();
        mock.collection(&support::path(rk), items, "42");
    }
}

/// A kubeconfig with contexts `a` and `b` (current `a`), both on `server`.
fn two_contexts(dir: &Path, server: &str) -> std::path::PathBuf {
    let p = dir.join("kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: k\n  cluster:\n    server: {server}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: a\n  context: {{cluster: k, user: u}}\n- name: b\n  context: {{cluster: k, user: u}}\ncurrent-context: a\n"
    );
    std::fs::write(&p, text).expect("write kubeconfig");
    p
}

/// A port of 127.0.0.1 that nothing listens on.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_list_reads_like_kubectl_and_exits_2() {
    let mock = Mock::start().await;
    let sites = support::path(ResourceKind::of(Kind::Site));
    let message = "sites.net.unbounded-cloud.io is forbidden: User \"x\" cannot list resource \"sites\" in API group \"net.unbounded-cloud.io\" at the cluster scope";
    serve_all_but(&mock, &[], ResourceKind::of(Kind::Site));
    mock.on(
        "GET",
        &sites,
        vec![Reply::Json(403, support::status(403, "Forbidden", message))],
    );
    let dir = support::tmpdir("forbidden");
    let kc = mock.kubeconfig(&dir);
    let kc = kc.display().to_string();
    for command in ["resolve", "graph"] {
        let out = support::run_bin(&[command, "--kubeconfig", &kc], &[]).await;
        assert_eq!(out.status.code(), Some(2), "{command}");
        assert!(out.stdout.is_empty(), "{command}");
        assert_eq!(
            one_line(&out),
            format!(
                "unbounded-mtu: Error from server (Forbidden): {message} (GET {}{sites}?limit=500)",
                mock.url()
            ),
            "{command}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_the_server_does_not_serve_is_an_error_diagnostic() {
    let objects = fixture("04-transit-chain");
    let mock = Mock::start().await;
    let missing = ResourceKind::of(Kind::GatewayPoolPeering);
    serve_all_but(&mock, &objects, missing);
    // As an API server answers for a group it does not serve: a 404 whose body is no `Status`.
    mock.on(
        "GET",
        &support::path(missing),
        vec![Reply::Json(404, json!("404 page not found"))],
    );
    let dir = support::tmpdir("not-served");
    let kc = mock.kubeconfig(&dir).display().to_string();

    let out = support::run_bin(&["resolve", "--kubeconfig", &kc, "-o", "json"], &[]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(one_line(&out).contains("--fail-on"));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("the result is printed");
    let diags = doc["diagnostics"].as_array().expect("diagnostics");
    let not_served: Vec<&Value> = diags
        .iter()
        .filter(|d| d["code"] == "E-NOT-SERVED")
        .collect();
    assert_eq!(not_served.len(), 1, "{diags:#?}");
    let d = not_served[0];
    assert_eq!(d["severity"], "error");
    assert_eq!(d["object"], "gatewaypoolpeerings.net.unbounded-cloud.io");
    assert_eq!(
        d["message"],
        "the server does not serve gatewaypoolpeerings.net.unbounded-cloud.io/v1alpha1 (404): is the CRD installed? Its objects are read as absent"
    );
    // The other kinds were read: every Node of the fixture resolved.
    let nodes = doc["nodes"].as_array().expect("nodes");
    assert_eq!(nodes.len(), 5, "{nodes:#?}");

    // The table names it too, and `--fail-on none` exits 0 with the same result.
    let table = support::run_bin(&["resolve", "--kubeconfig", &kc, "--fail-on", "none"], &[]).await;
    assert_eq!(table.status.code(), Some(0));
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.lines().any(|l| l.starts_with("error")
            && l.contains("E-NOT-SERVED")
            && l.contains("gatewaypoolpeerings.net.unbounded-cloud.io")),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_serves_none_of_the_kinds_exits_2() {
    let mock = Mock::start().await;
    let dir = support::tmpdir("nothing-served");
    let kc = mock.kubeconfig(&dir).display().to_string();
    let out = support::run_bin(&["resolve", "--kubeconfig", &kc], &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        one_line(&out),
        format!(
            "unbounded-mtu: {} serves none of the kinds this tool reads (every LIST answered 404): is it a Kubernetes API server?",
            mock.url()
        )
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_connection_names_the_server_and_the_flags_that_choose_another() {
    let dir = support::tmpdir("refused");
    let server = format!("http://127.0.0.1:{}", closed_port());
    let kc = two_contexts(&dir, &server).display().to_string();
    for command in ["resolve", "explain", "graph"] {
        let mut args = vec![command, "--kubeconfig", kc.as_str()];
        if command == "explain" {
            args.extend(["--node", "w1"]);
        }
        let out = support::run_bin(&args, &[]).await;
        assert_eq!(out.status.code(), Some(2), "{command}");
        assert_eq!(
            one_line(&out),
            format!(
                "unbounded-mtu: cannot connect to {server} (connection refused): is the cluster reachable? Choose another with --context NAME or --kubeconfig PATH"
            ),
            "{command}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_context_lists_the_contexts_that_exist() {
    let dir = support::tmpdir("context");
    let kc = two_contexts(&dir, "http://127.0.0.1:1")
        .display()
        .to_string();
    let out = support::run_bin(&["resolve", "--kubeconfig", &kc, "--context", "nope"], &[]).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        one_line(&out),
        format!("unbounded-mtu: context \"nope\" is not in {kc}; its contexts: a, b")
    );
    // Found through $KUBECONFIG, as kubectl finds it.
    let out = support::run_bin(&["resolve", "--context", "nope"], &[("KUBECONFIG", &kc)]).await;
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        one_line(&out),
        format!("unbounded-mtu: context \"nope\" is not in {kc}; its contexts: a, b")
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kubeconfig_path_is_named_once() {
    let dir = support::tmpdir("path-once");
    let missing = dir.join("no-such-kubeconfig").display().to_string();
    let broken = dir.join("broken-kubeconfig");
    std::fs::write(&broken, "clusters: [\n").expect("write");
    let broken = broken.display().to_string();
    let known = two_contexts(&dir, "http://127.0.0.1:1")
        .display()
        .to_string();
    let cases: [(&[&str], &str); 3] = [
        (&["resolve", "--kubeconfig", &missing], &missing),
        (&["resolve", "--kubeconfig", &broken], &broken),
        (
            &["resolve", "--kubeconfig", &known, "--context", "x"],
            &known,
        ),
    ];
    for (args, path) in cases {
        let out = support::run_bin(args, &[]).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let line = one_line(&out);
        assert_eq!(line.matches(path).count(), 1, "{line}");
    }
    let line = one_line(&support::run_bin(&["resolve", "--kubeconfig", &missing], &[]).await);
    assert!(
        line.starts_with(&format!(
            "unbounded-mtu: cannot read kubeconfig {missing}: "
        )),
        "{line}"
    );

    // The agent names it once too, on one line of its own.
    let out = support::run_bin(
        &[
            "agent",
            "--dry-run",
            "--listen",
            "127.0.0.1:0",
            "--status-address",
            "off",
            "--kubeconfig",
            &missing,
        ],
        &[("NODE_NAME", "n1")],
    )
    .await;
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches(missing.as_str()).count(), 1, "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Standard error of the agent after it ran for `secs` seconds against `kubeconfig`, with
/// `RUST_LOG` set to `rust_log` (unset: `None`).
async fn agent_log(kubeconfig: &Path, secs: u64, rust_log: Option<&str>) -> String {
    agent_log_with(kubeconfig, secs, rust_log, &[]).await
}

/// [`agent_log`] with more of the agent's environment.
async fn agent_log_with(
    kubeconfig: &Path,
    secs: u64,
    rust_log: Option<&str>,
    env: &[(&str, &str)],
) -> String {
    let mut cmd = support::agent_command(kubeconfig);
    cmd.args(["--status-address", "off"])
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .stderr(std::process::Stdio::piped());
    if let Some(l) = rust_log {
        cmd.env("RUST_LOG", l);
    }
    let child = cmd.spawn().expect("the agent starts");
    let pid = child.id().expect("pid");
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let killed = tokio::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .await
        .expect("kill");
    assert!(killed.success());
    let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
        .await
        .expect("exited")
        .expect("output");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_logs_each_api_error_once_in_kubectls_words() {
    let mock = Mock::start().await;
    let message = "nodes \"n1\" is forbidden: User \"system:serviceaccount:x:y\" cannot get resource \"nodes\" in API group \"\" at the cluster scope";
    mock.on(
        "GET",
        "/api/v1/nodes/n1",
        vec![Reply::Json(403, support::status(403, "Forbidden", message))],
    );
    let dir = support::tmpdir("agent-errors");
    let log = agent_log(&mock.kubeconfig(&dir), 2, None).await;
    let failures: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("adoption failed"))
        .collect();
    assert!(!failures.is_empty(), "{log}");
    let expected = format!("cannot get the own Node: Error from server (Forbidden): {message}");
    for l in &failures {
        assert_eq!(l.matches("Error from server").count(), 1, "{l}");
        assert!(
            l.contains(&expected.replace('"', "\\\"")) || l.contains(&expected),
            "{l}"
        );
        for d in DEBUG_TEXT {
            assert!(!l.contains(d), "no Debug text ({d}): {l}");
        }
    }
    let _ = std::fs::remove_dir_all(dir);

    // A refused connection: one warning per attempt naming the server, no second report of the
    // same error by kube's client layer (also with the DaemonSet's `RUST_LOG=info`), no cause
    // repeated.
    let dir = support::tmpdir("agent-refused");
    let server = format!("http://127.0.0.1:{}", closed_port());
    let log = agent_log(&two_contexts(&dir, &server), 2, Some("info")).await;
    let failures: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("adoption failed"))
        .collect();
    assert!(!failures.is_empty(), "{log}");
    for l in &failures {
        assert!(
            l.contains(&format!(
                "cannot get the own Node: cannot connect to {server} (connection refused)"
            )),
            "{l}"
        );
        assert_eq!(l.matches("connection refused").count(), 1, "{l}");
        assert!(!l.contains("client error"), "{l}");
    }
    assert!(
        !log.lines().any(|l| l.contains("kube_client")),
        "kube's client layer reports the same failure again: {log}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_the_client_cannot_read_is_logged_in_bounded_lines() {
    use unbounded_mtu::agent::logging::LINE_LIMIT;
    for format in ["text", "json"] {
        let own = support::node(
            "n1",
            "u1",
            "1",
            json!({support::SITE_LABEL: "a", support::POOL_LABEL: ""}),
            "10.0.0.5",
        );
        let mock = support::adoption_mock(own).await;
        // A 5 MB SitePeering whose metadata is no object: the client cannot read the LIST, and
        // kube's client logs the whole body it could not read.
        let unreadable = json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1",
            "kind": "SitePeering", "metadata": "not an object",
            "spec": {"sites": ["a", "b"], "note": "x".repeat(5 << 20)}});
        mock.collection(
            &support::path(ResourceKind::of(Kind::SitePeering)),
            vec![unreadable],
            "9",
        );
        let dir = support::tmpdir(&format!("bounded-log-{format}"));
        let log = agent_log_with(
            &mock.kubeconfig(&dir),
            3,
            Some("info"),
            &[("LOG_FORMAT", format)],
        )
        .await;
        let _ = std::fs::remove_dir_all(dir);
        assert!(
            log.len() < 200 * LINE_LIMIT,
            "{format}: {} bytes",
            log.len()
        );
        for l in log.lines() {
            assert!(
                l.len() < LINE_LIMIT,
                "{format}: a line of {} bytes",
                l.len()
            );
            if format == "json" {
                assert!(
                    serde_json::from_str::<Value>(l).is_ok(),
                    "a JSON line stays JSON: {l}"
                );
            }
        }
        let cut: Vec<&str> = log.lines().filter(|l| l.contains("cut: ")).collect();
        assert!(!cut.is_empty(), "{format}: no line was cut: {log}");
        for l in cut {
            let size: usize = l
                .rsplit("cut: ")
                .next()
                .and_then(|t| t.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            assert!(size > 5 << 20, "{format}: the cut states the size: {l}");
        }
    }
}
