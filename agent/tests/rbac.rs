//! RBAC lists exactly what the agent calls. The agent runs in API mode against the scripted API
//! server through the paths that make requests (a gateway whose first applies fail, a worker that
//! still carries the gateway taint, a broken assignment); every request is recorded. Then the
//! ServiceAccount's rules in the kustomize base `deploy/` are checked both ways: every recorded
//! request is allowed, and every verb on every resource they grant is used by a recorded request.
//! `docs/operations.md`'s RBAC table is checked against the same rules. The Warning Events the
//! agent posts on its own Pod (a broken assignment, a failed apply) are checked here too.

mod support;

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;
use support::{
    ApiRequest, FakeApplier, GPN, Mock, NODE, NODES, POOLS, Recorded, Reply, own_node, site,
};
use unbounded_mtu::agent::applier::Applier;
use unbounded_mtu::agent::status::{EVENT_CONTROLLER, Status};
use unbounded_mtu::cli::AgentArgs;

const POD_NAME: &str = "agent-x";
const POD_UID: &str = "0b5e4b2e-pod-uid";

/// The DaemonSet of the kustomize base.
fn daemonset(objects: &[Value]) -> &Value {
    objects
        .iter()
        .find(|o| o["kind"] == "DaemonSet")
        .expect("a DaemonSet in deploy/")
}

/// The namespace the agent's Pods run in: where its own Pod and its Events are.
fn agent_namespace() -> String {
    daemonset(&support::deploy_objects())["metadata"]["namespace"]
        .as_str()
        .expect("the DaemonSet's namespace")
        .to_string()
}

fn pod_path(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/pods/{POD_NAME}")
}

fn events_path(ns: &str) -> String {
    format!("/apis/events.k8s.io/v1/namespaces/{ns}/events")
}

/// The agent's arguments as the DaemonSet gives them (its own Pod by the downward API), not a
/// dry run: the dataplane is the fake the scenario passes.
fn args(ns: &str) -> AgentArgs {
    support::parse_agent_args(&[
        "--node-name",
        "n1",
        "--pod-name",
        POD_NAME,
        "--pod-namespace",
        ns,
        "--pod-uid",
        POD_UID,
    ])
}

/// What every scenario's agent reads and writes: its own Node `own` (by GET, and listed with
/// Site `a` and `objects`), the startup watch (held), and the answers to its writes (its Pod,
/// its Node, its GatewayPoolNode, Events).
fn serve_agent(mock: &Mock, ns: &str, own: Value, objects: &[Value]) {
    mock.on("GET", NODE, vec![Reply::Json(200, own.clone())]);
    support::hold_startup_watch(mock);
    let mut listed = vec![site("a", "10.0.0.0/16"), own];
    listed.extend_from_slice(objects);
    support::serve_collections(mock, &listed);
    mock.on("PATCH", &pod_path(ns), vec![support::pod_patched(POD_NAME)]);
    mock.on("PATCH", NODE, vec![support::node_patched()]);
    mock.on("PATCH", GPN, vec![support::gpn_patched()]);
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "e", "namespace": ns}});
    mock.on(
        "POST",
        &events_path(ns),
        vec![Reply::Json(201, event.clone())],
    );
    mock.on_prefix(
        "PATCH",
        &format!("{}/", events_path(ns)),
        vec![Reply::Json(200, event)],
    );
}

/// Runs the agent against `mock` until `done` holds (at most 30 s), then stops it and waits for
/// it to end (its last Events included); returns the recorded requests.
async fn drive(
    mock: &Mock,
    ns: &str,
    applier: Arc<dyn Applier>,
    done: impl Fn(&Mock) -> bool,
) -> Vec<Recorded> {
    let (run, stop_tx) =
        support::spawn_agent(mock, args(ns), Arc::new(Status::default()), Some(applier));
    let mut reached = false;
    for _ in 0..3000 {
        if done(mock) {
            reached = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = stop_tx.send(());
    let end = tokio::time::timeout(Duration::from_secs(10), run)
        .await
        .expect("the agent stopped")
        .expect("the agent task");
    assert!(
        reached,
        "the scenario did not complete: {end:?}\n{:#?}",
        mock.requests()
    );
    mock.requests()
}

fn has(mock: &Mock, method: &str, path: &str) -> bool {
    !mock.requests_to(method, path).is_empty()
}

fn event_patches(mock: &Mock, ns: &str) -> Vec<Recorded> {
    let prefix = format!("{}/", events_path(ns));
    mock.requests()
        .into_iter()
        .filter(|r| r.method == "PATCH" && r.path.starts_with(&prefix))
        .collect()
}

/// A gateway (pool P, found by the adoption GET) whose first two applies fail, then publishes
/// its underlay MTU on its Node and its forwarding MTUs on its GatewayPoolNode.
async fn gateway_with_failing_applies(ns: &str) -> (Mock, Vec<Recorded>) {
    let mock = Mock::start().await;
    let objects = support::gateway_objects();
    let pool = objects
        .iter()
        .find(|o| o["kind"] == "GatewayPool")
        .cloned()
        .unwrap();
    mock.on("GET", &format!("{POOLS}/P"), vec![Reply::Json(200, pool)]);
    serve_agent(&mock, ns, own_node("100", "P"), &objects);
    let fake = FakeApplier::failing_first(2);
    let recorded = drive(&mock, ns, fake, |m| {
        has(m, "PATCH", GPN) && has(m, "PATCH", &pod_path(ns))
    })
    .await;
    (mock, recorded)
}

/// A worker whose Node still carries the gateway taint: after the acknowledgment, the taint is
/// read (GET) and removed (PATCH).
async fn worker_with_gateway_taint(ns: &str) -> (Mock, Vec<Recorded>) {
    let mock = Mock::start().await;
    serve_agent(
        &mock,
        ns,
        support::with_gateway_taint(own_node("100", "")),
        &[],
    );
    let fake = FakeApplier::failing_first(0);
    let recorded = drive(&mock, ns, fake, |m| {
        m.requests_to("PATCH", NODE)
            .iter()
            .any(|r| r.body.contains("taints"))
    })
    .await;
    (mock, recorded)
}

/// A Node whose pool label names a GatewayPool that does not exist (the adoption GET answers
/// 404) and that no pool takes (the LIST): a broken assignment, retried until it has been
/// reported twice.
async fn broken_assignment(ns: &str) -> (Mock, Vec<Recorded>) {
    let mock = Mock::start().await;
    mock.on(
        "GET",
        &format!("{POOLS}/missing"),
        vec![Reply::Json(
            404,
            support::status(404, "NotFound", "gatewaypools \"missing\" not found"),
        )],
    );
    serve_agent(&mock, ns, own_node("100", "missing"), &[]);
    let fake = FakeApplier::failing_first(0);
    let recorded = drive(&mock, ns, fake, |m| !event_patches(m, ns).is_empty()).await;
    (mock, recorded)
}

/// One granted (API group, resource, verb), in a namespace (a Role) or cluster-wide.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Grant {
    namespace: Option<String>,
    group: String,
    resource: String,
    verb: String,
}

impl Grant {
    fn allows(&self, r: &ApiRequest) -> bool {
        self.group == r.group
            && self.resource == r.resource
            && self.verb == r.verb
            && (self.namespace.is_none() || self.namespace == r.namespace)
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|s| s.as_str().expect("a string").to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Every grant of the roles bound to the DaemonSet's ServiceAccount.
fn grants(objects: &[Value]) -> Vec<Grant> {
    let ds = daemonset(objects);
    let ns = ds["metadata"]["namespace"].as_str().expect("namespace");
    let sa = ds["spec"]["template"]["spec"]["serviceAccountName"]
        .as_str()
        .expect("the DaemonSet names its ServiceAccount");
    assert!(
        objects.iter().any(|o| o["kind"] == "ServiceAccount"
            && o["metadata"]["name"] == sa
            && o["metadata"]["namespace"] == ns),
        "ServiceAccount {ns}/{sa} is in deploy/"
    );
    let mut out = Vec::new();
    for b in objects.iter().filter(|o| {
        matches!(
            o["kind"].as_str(),
            Some("ClusterRoleBinding" | "RoleBinding")
        )
    }) {
        let bound = b["subjects"].as_array().is_some_and(|ss| {
            ss.iter()
                .any(|s| s["kind"] == "ServiceAccount" && s["name"] == sa && s["namespace"] == ns)
        });
        if !bound {
            continue;
        }
        let binding_ns = (b["kind"] == "RoleBinding").then(|| {
            b["metadata"]["namespace"]
                .as_str()
                .expect("a RoleBinding's namespace")
                .to_string()
        });
        let role_kind = b["roleRef"]["kind"].as_str().expect("roleRef.kind");
        let role_name = &b["roleRef"]["name"];
        let role = objects
            .iter()
            .find(|o| {
                o["kind"] == role_kind
                    && o["metadata"]["name"] == *role_name
                    && (role_kind == "ClusterRole"
                        || o["metadata"]["namespace"].as_str() == binding_ns.as_deref())
            })
            .unwrap_or_else(|| panic!("the {role_kind} {role_name} bound by {b} is in deploy/"));
        for rule in role["rules"].as_array().expect("rules") {
            assert!(
                rule.get("resourceNames").is_none() && rule.get("nonResourceURLs").is_none(),
                "{rule}"
            );
            for group in strings(&rule["apiGroups"]) {
                for resource in strings(&rule["resources"]) {
                    for verb in strings(&rule["verbs"]) {
                        assert!(
                            ![&group, &resource, &verb].iter().any(|s| s.contains('*')),
                            "no wildcards: {rule}"
                        );
                        out.push(Grant {
                            namespace: binding_ns.clone(),
                            group: group.clone(),
                            resource: resource.clone(),
                            verb,
                        });
                    }
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_rbac_rule_is_used_by_a_recorded_request_and_every_request_is_allowed() {
    let objects = support::deploy_objects();
    let ns = agent_namespace();
    let grants = grants(&objects);
    let (_, gateway) = gateway_with_failing_applies(&ns).await;
    let (_, worker) = worker_with_gateway_taint(&ns).await;
    let (_, broken) = broken_assignment(&ns).await;
    let requests: BTreeSet<ApiRequest> = gateway
        .iter()
        .chain(&worker)
        .chain(&broken)
        .map(ApiRequest::of)
        .collect();
    let refused: Vec<&ApiRequest> = requests
        .iter()
        .filter(|r| !grants.iter().any(|g| g.allows(r)))
        .collect();
    assert!(
        refused.is_empty(),
        "requests the ServiceAccount may not make: {refused:#?}"
    );
    let unused: Vec<&Grant> = grants
        .iter()
        .filter(|g| !requests.iter().any(|r| g.allows(r)))
        .collect();
    assert!(
        unused.is_empty(),
        "granted but never requested: {unused:#?}\nrequests: {requests:#?}"
    );
    // Node metadata of other nodes is read by LIST and WATCH only, metadata-only and by label.
    let peers: Vec<&Recorded> = gateway
        .iter()
        .filter(|r| r.path == NODES && r.param("labelSelector").is_some())
        .collect();
    assert!(!peers.is_empty());
    assert!(
        peers
            .iter()
            .all(|r| r.accept.contains("as=PartialObjectMetadata")),
        "{peers:#?}"
    );
}

/// The rows of the table in `docs/operations.md`'s "RBAC" section: (group, resource, scope) →
/// verbs, with `core` for the core group and `cluster` or `namespace` as the scope.
fn documented_rbac() -> BTreeMap<(String, String, String), BTreeSet<String>> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/operations.md");
    let text = std::fs::read_to_string(&path).expect("docs/operations.md");
    let section = text
        .split("\n## ")
        .find(|s| s.starts_with("RBAC"))
        .expect("an RBAC section");
    let mut rows = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() < 4 || cells[0] == "API group" || cells[0].starts_with("---") {
            continue;
        }
        let strip = |s: &str| s.trim_matches('`').to_string();
        let group = match strip(cells[0]).as_str() {
            "core" => String::new(),
            g => g.to_string(),
        };
        let verbs = cells[2].split(',').map(|v| strip(v.trim())).collect();
        let prev = rows.insert((group, strip(cells[1]), cells[3].to_string()), verbs);
        assert!(prev.is_none(), "one row per resource and scope: {line}");
    }
    rows
}

#[test]
fn the_rbac_table_in_the_operations_guide_is_the_rules_in_deploy() {
    let mut granted: BTreeMap<(String, String, String), BTreeSet<String>> = BTreeMap::new();
    for g in grants(&support::deploy_objects()) {
        let scope = if g.namespace.is_some() {
            "namespace"
        } else {
            "cluster"
        };
        granted
            .entry((g.group, g.resource, scope.to_string()))
            .or_default()
            .insert(g.verb);
    }
    assert_eq!(documented_rbac(), granted);
}

fn json_body(r: &Recorded) -> Value {
    serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("{e}: {}", r.body))
}

/// The Event was about the agent's own Pod (by UID too, which `kubectl describe pod` matches),
/// a Warning from the agent, in the Pod's namespace.
fn assert_about_the_pod(ev: &Value, ns: &str) {
    assert_eq!(
        ev["regarding"],
        json!({"apiVersion": "v1", "kind": "Pod", "name": POD_NAME, "namespace": ns, "uid": POD_UID}),
        "{ev:#}"
    );
    assert_eq!(ev["type"], "Warning");
    assert_eq!(ev["reportingController"], EVENT_CONTROLLER);
    assert_eq!(ev["reportingInstance"], POD_NAME);
    assert_eq!(ev["metadata"]["namespace"], ns);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_assignment_is_a_warning_event_on_the_pod_repeated_as_a_series() {
    let ns = agent_namespace();
    let (mock, _) = broken_assignment(&ns).await;
    let posts = mock.requests_to("POST", &events_path(&ns));
    assert_eq!(posts.len(), 1, "one Event, then its series: {posts:#?}");
    let ev = json_body(&posts[0]);
    assert_about_the_pod(&ev, &ns);
    assert_eq!(ev["reason"], "BrokenAssignment");
    assert_eq!(ev["action"], "Adopt");
    let note = ev["note"].as_str().expect("a note");
    assert!(
        note.starts_with("Node n1: ") && note.contains("\"missing\""),
        "{note}"
    );
    let name = ev["metadata"]["name"].as_str().expect("a name");
    let patch = &event_patches(&mock, &ns)[0];
    assert_eq!(patch.path, format!("{}/{name}", events_path(&ns)));
    assert_eq!(json_body(patch)["series"]["count"], 2);
    assert!(
        !has(&mock, "PATCH", &pod_path(&ns)),
        "a broken assignment is never acknowledged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_apply_is_a_warning_event_on_the_pod_and_a_success_posts_none() {
    let ns = agent_namespace();
    let (mock, recorded) = gateway_with_failing_applies(&ns).await;
    let posts = mock.requests_to("POST", &events_path(&ns));
    assert_eq!(posts.len(), 1, "{posts:#?}");
    let ev = json_body(&posts[0]);
    assert_about_the_pod(&ev, &ns);
    assert_eq!(ev["reason"], "ApplyFailed");
    assert_eq!(ev["action"], "Apply");
    assert!(
        ev["note"]
            .as_str()
            .is_some_and(|n| n.contains("injected failure 0")),
        "{ev:#}"
    );
    // The second failure repeats the same Event (its series); the success that follows adds
    // none, and comes after both.
    let patches = event_patches(&mock, &ns);
    assert_eq!(patches.len(), 1, "{patches:#?}");
    assert_eq!(json_body(&patches[0])["series"]["count"], 2);
    let at = |method: &str, path: &str| {
        recorded
            .iter()
            .position(|r| r.method == method && r.path.starts_with(path))
            .expect("recorded")
    };
    assert!(at("PATCH", &events_path(&ns)) < at("PATCH", &pod_path(&ns)));
}
