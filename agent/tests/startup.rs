//! Adoption, the startup-only own-Node watch, the acknowledgment and taint removal, against the
//! scripted API server (kube's real client over HTTP on 127.0.0.1).

mod support;

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use support::{
    End, Mock, NODE, NODES, POOL_LABEL, POOLS, Reply, SITE_LABEL, SITES, error_event, event, node,
    site, status,
};
use tokio::sync::watch;
use unbounded_mtu::agent::adopt::{ACK_ANNOTATION, try_adopt};
use unbounded_mtu::agent::node_watch::{Verdict, WatchEnd, watch_own_node};
use unbounded_mtu::agent::startup::{self, Adoption};
use unbounded_mtu::agent::status::Status;
use unbounded_mtu::agent::taint::{RetryPolicy, TaintOutcome, remove_gateway_taint};
use unbounded_mtu::k8s::{Backoff, api_status};

fn n1(uid: &str, rv: &str, labels: Value) -> Value {
    node("n1", uid, rv, labels, "10.0.0.5")
}

fn bookmark(rv: &str) -> Value {
    event(
        "BOOKMARK",
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"resourceVersion": rv}}),
    )
}

fn watches(mock: &Mock) -> Vec<support::Recorded> {
    mock.requests()
        .into_iter()
        .filter(|r| r.path == NODES && r.is_watch())
        .collect()
}

/// Adoption with a labelled Site and no pool label lists pools once; returns the mock.
async fn adopted_mock(labels: Value) -> (Mock, unbounded_mtu::agent::adopt::Adopted) {
    let mock = support::adoption_mock(n1("u1", "100", labels)).await;
    mock.collection(POOLS, vec![], "8");
    let a = try_adopt(&mock.client(), "n1")
        .await
        .expect("adopt")
        .adopted()
        .expect("a Site");
    (mock, a)
}

#[tokio::test(start_paused = true)]
async fn own_node_watch_selects_by_name_starts_at_get_rv_and_backs_off() {
    let (mock, adopted) = adopted_mock(json!({SITE_LABEL: "a", POOL_LABEL: ""})).await;
    assert_eq!(adopted.resource_version, "100");
    assert!(
        adopted.sites.is_empty(),
        "a labelled Node's Site is its label: the listed Sites are not kept"
    );
    mock.on_watch(
        NODES,
        vec![
            Reply::Watch(vec![], End::Close),
            Reply::Watch(vec![], End::Close),
            Reply::Json(500, status(500, "InternalError", "boom")),
            Reply::Watch(vec![error_event(500, "InternalError")], End::Close),
            Reply::Watch(vec![bookmark("150")], End::Close),
            Reply::Watch(
                vec![event(
                    "MODIFIED",
                    n1("u2", "160", json!({SITE_LABEL: "a", POOL_LABEL: ""})),
                )],
                End::Hold,
            ),
        ],
    );
    let (_cancel, rx) = watch::channel(false);
    let end = watch_own_node(mock.client(), adopted.baseline(), rx, Backoff::watch()).await;
    let WatchEnd::Verdict(v) = end else {
        panic!("{end:?}")
    };
    assert_eq!(v.exit_code(), Some(3), "{v:?}");

    let ws = watches(&mock);
    assert_eq!(
        ws.len(),
        6,
        "one watch per scripted reply, no storm: {ws:#?}"
    );
    for w in &ws {
        assert_eq!(
            w.param("fieldSelector").as_deref(),
            Some("metadata.name=n1")
        );
        let t: u32 = w
            .param("timeoutSeconds")
            .and_then(|t| t.parse().ok())
            .expect("timeout");
        assert!((600..1200).contains(&t));
    }
    assert_eq!(
        ws[0].param("resourceVersion").as_deref(),
        Some("100"),
        "starts from the GET"
    );
    assert_eq!(
        ws[5].param("resourceVersion").as_deref(),
        Some("150"),
        "resumes from the bookmark"
    );
    // 1 s doubling (with a jitter of up to one step), reset after a stream that delivered an
    // event.
    let gaps: Vec<Duration> = ws.windows(2).map(|w| w[1].at - w[0].at).collect();
    for (gap, base) in gaps.iter().zip([1u64, 2, 4, 8, 1]) {
        let base = Duration::from_secs(base);
        assert!(
            *gap >= base && *gap <= base * 2,
            "gap {gap:?} for step {base:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn gone_revalidates_with_a_get_then_deletion_is_exit_4() {
    let (mock, adopted) = adopted_mock(json!({SITE_LABEL: "a", POOL_LABEL: ""})).await;
    mock.on(
        "GET",
        NODE,
        vec![
            Reply::Json(
                200,
                n1("u1", "300", json!({SITE_LABEL: "a", POOL_LABEL: ""})),
            ),
            Reply::Json(404, status(404, "NotFound", "nodes \"n1\" not found")),
        ],
    );
    mock.on_watch(
        NODES,
        vec![Reply::Watch(vec![error_event(410, "Expired")], End::Close)],
    );
    let (_cancel, rx) = watch::channel(false);
    let end = watch_own_node(mock.client(), adopted.baseline(), rx, Backoff::watch()).await;
    assert_eq!(end, WatchEnd::Verdict(Verdict::Deleted));
    assert_eq!(Verdict::Deleted.exit_code(), Some(4));
    let ws = watches(&mock);
    assert_eq!(ws.len(), 2);
    assert_eq!(
        ws[1].param("resourceVersion").as_deref(),
        Some("300"),
        "resumes from the revalidating GET"
    );
    assert!(
        ws[1].at - ws[0].at >= Duration::from_secs(1),
        "backoff before revalidating"
    );
}

#[tokio::test(start_paused = true)]
async fn deleted_event_is_exit_4_and_site_or_pool_label_change_is_exit_3() {
    let labels = json!({SITE_LABEL: "a", POOL_LABEL: ""});
    let (mock, adopted) = adopted_mock(labels.clone()).await;
    mock.on_watch(
        NODES,
        vec![Reply::Watch(
            vec![event("DELETED", n1("u1", "101", labels.clone()))],
            End::Hold,
        )],
    );
    let (_c, rx) = watch::channel(false);
    let end = watch_own_node(mock.client(), adopted.baseline(), rx, Backoff::watch()).await;
    assert_eq!(end, WatchEnd::Verdict(Verdict::Deleted));

    for changed in [
        json!({SITE_LABEL: "b", POOL_LABEL: ""}),
        json!({SITE_LABEL: "a", POOL_LABEL: "p"}),
    ] {
        let (mock, adopted) = adopted_mock(labels.clone()).await;
        let unrelated = n1(
            "u1",
            "101",
            json!({SITE_LABEL: "a", POOL_LABEL: "", "other": "x"}),
        );
        mock.on_watch(
            NODES,
            vec![Reply::Watch(
                vec![
                    event("MODIFIED", unrelated),
                    event("MODIFIED", n1("u1", "102", changed)),
                ],
                End::Hold,
            )],
        );
        let (_c, rx) = watch::channel(false);
        let end = watch_own_node(mock.client(), adopted.baseline(), rx, Backoff::watch()).await;
        let WatchEnd::Verdict(v) = end else {
            panic!("{end:?}")
        };
        assert_eq!(v.exit_code(), Some(3));
    }
}

#[tokio::test(start_paused = true)]
async fn cancelling_closes_the_watch() {
    let (mock, adopted) = adopted_mock(json!({SITE_LABEL: "a", POOL_LABEL: ""})).await;
    mock.on_watch(NODES, vec![Reply::Watch(vec![], End::Hold)]);
    let (cancel, rx) = watch::channel(false);
    let task = tokio::spawn(watch_own_node(
        mock.client(),
        adopted.baseline(),
        rx,
        Backoff::watch(),
    ));
    assert!(
        support::until(
            || mock.open_watches_on(NODES, Some("metadata.name=n1")) == 1,
            1000
        )
        .await
    );
    cancel.send(true).expect("send");
    assert_eq!(task.await.expect("join"), WatchEnd::Cancelled);
    assert!(
        support::until(
            || mock.open_watches_on(NODES, Some("metadata.name=n1")) == 0,
            1000
        )
        .await
    );
    assert_eq!(watches(&mock).len(), 1);
}

#[tokio::test]
async fn an_empty_pool_label_means_worker_without_gateway_pool_request() {
    let mock = support::adoption_mock(n1("u1", "100", json!({POOL_LABEL: ""}))).await;
    let a = try_adopt(&mock.client(), "n1")
        .await
        .expect("adopt")
        .adopted()
        .expect("site");
    assert_eq!(a.assignment.site, "a", "Site from nodeCidrs");
    assert_eq!(a.assignment.pool, None);
    assert!(
        !a.sites.is_empty(),
        "the listed Sites are kept to revalidate a Site from nodeCidrs"
    );
    assert!(
        mock.requests().iter().all(|r| !r.path.starts_with(POOLS)),
        "{:#?}",
        mock.requests()
    );
    assert_eq!(mock.requests().len(), 2, "one GET, one LIST of Sites");
}

#[tokio::test]
async fn without_pool_label_exactly_one_gateway_pool_list() {
    let mut n = n1("u1", "100", json!({"gw": "yes"}));
    n["status"]["addresses"]
        .as_array_mut()
        .expect("addresses")
        .push(json!({"type": "ExternalIP", "address": "1.2.3.4"}));
    let mock = support::adoption_mock(n).await;
    let pool = json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "GatewayPool",
                      "metadata": {"name": "p1"}, "spec": {"nodeSelector": {"gw": "yes"}}});
    mock.collection(POOLS, vec![pool], "8");
    let a = try_adopt(&mock.client(), "n1")
        .await
        .expect("adopt")
        .adopted()
        .expect("site");
    assert_eq!(a.assignment.pool.as_deref(), Some("p1"));
    assert_eq!(a.assignment.annotation_value(), "u1/a/p1");
    let pools: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|r| r.path == POOLS)
        .collect();
    assert_eq!(pools.len(), 1);
    assert!(!pools[0].is_watch());
}

#[tokio::test(start_paused = true)]
async fn a_node_without_site_is_waited_for_with_backoff() {
    let mock = Mock::start().await;
    mock.on(
        "GET",
        NODE,
        vec![Reply::Json(200, n1("u1", "100", json!({POOL_LABEL: ""})))],
    );
    mock.on(
        "GET",
        SITES,
        vec![
            Reply::Json(200, support::list(vec![], "1")),
            Reply::Json(200, support::list(vec![], "2")),
            Reply::Json(200, support::list(vec![site("a", "10.0.0.0/16")], "3")),
        ],
    );
    let status = Arc::new(Status::default());
    let adoption = startup::adopt(&mock.client(), "n1", &status, Backoff::watch())
        .await
        .expect("adoption");
    let Adoption::Adopted(a, _watch) = adoption else {
        panic!("{adoption:?}")
    };
    assert_eq!(a.assignment.annotation_value(), "u1/a/-");
    assert_eq!(status.document()["adoptedAssignment"], "u1/a/-");
    let lists: Vec<_> = mock.requests_to("GET", SITES);
    assert_eq!(lists.len(), 3);
    assert!(lists[1].at - lists[0].at >= Duration::from_secs(1));
    assert!(lists[2].at - lists[1].at >= Duration::from_secs(2));
}

fn tainted(rv: &str) -> Value {
    let mut n = n1("u1", rv, json!({POOL_LABEL: ""}));
    n["spec"] = json!({"taints": [
        {"key": "net.unbounded-cloud.io/gateway-node", "effect": "NoSchedule"},
        {"key": "other", "effect": "NoExecute"}
    ]});
    n
}

#[tokio::test(start_paused = true)]
async fn taint_removal_retries_conflicts_only() {
    let mock = Mock::start().await;
    mock.on(
        "GET",
        NODE,
        vec![
            Reply::Json(200, tainted("10")),
            Reply::Json(200, tainted("11")),
            Reply::Json(200, tainted("12")),
        ],
    );
    let conflict = Reply::Json(409, status(409, "Conflict", "the object has been modified"));
    mock.on(
        "PATCH",
        NODE,
        vec![
            conflict.clone(),
            conflict,
            Reply::Json(200, n1("u1", "13", json!({}))),
        ],
    );
    let out = remove_gateway_taint(&mock.client(), "n1", RetryPolicy::default())
        .await
        .expect("removed");
    assert_eq!(out, TaintOutcome::Removed { attempts: 3 });
    let patches = mock.requests_to("PATCH", NODE);
    assert_eq!(patches.len(), 3);
    for (p, rv) in patches.iter().zip(["10", "11", "12"]) {
        let body: Value = serde_json::from_str(&p.body).expect("json");
        assert_eq!(
            body["metadata"]["resourceVersion"], rv,
            "guarded by the resource version read"
        );
        assert_eq!(
            body["spec"]["taints"],
            json!([{"key": "other", "effect": "NoExecute"}])
        );
    }
    assert!(patches[1].at - patches[0].at >= Duration::from_millis(100));
    assert!(patches[2].at - patches[1].at >= Duration::from_millis(200));

    // Conflicts forever: five attempts, then the conflict is returned with its status.
    let mock = Mock::start().await;
    mock.on("GET", NODE, vec![Reply::Json(200, tainted("10"))]);
    mock.on(
        "PATCH",
        NODE,
        vec![Reply::Json(409, status(409, "Conflict", "again"))],
    );
    let e = remove_gateway_taint(&mock.client(), "n1", RetryPolicy::default())
        .await
        .expect_err("gives up");
    assert_eq!(
        api_status(&e).map(|s| (s.code, s.reason)),
        Some((409, "Conflict".into()))
    );
    assert_eq!(mock.requests_to("PATCH", NODE).len(), 5);
}

#[tokio::test(start_paused = true)]
async fn taint_removal_stops_at_once_on_admission_denial() {
    for (code, reason) in [(403, "Forbidden"), (422, "Invalid")] {
        let mock = Mock::start().await;
        mock.on("GET", NODE, vec![Reply::Json(200, tainted("10"))]);
        mock.on(
            "PATCH",
            NODE,
            vec![Reply::Json(
                code,
                status(code, reason, "admission webhook denied the request"),
            )],
        );
        let start = tokio::time::Instant::now();
        let e = remove_gateway_taint(&mock.client(), "n1", RetryPolicy::default())
            .await
            .expect_err("denied");
        let st = api_status(&e).expect("API status kept");
        assert_eq!((st.code, st.reason.as_str()), (code, reason));
        assert!(st.message.contains("admission webhook"));
        assert_eq!(mock.requests_to("PATCH", NODE).len(), 1);
        assert_eq!(
            tokio::time::Instant::now() - start,
            Duration::ZERO,
            "no retry delay"
        );
    }
    // A node without the taint is not patched.
    let mock = Mock::start().await;
    mock.on(
        "GET",
        NODE,
        vec![Reply::Json(200, n1("u1", "10", json!({})))],
    );
    let out = remove_gateway_taint(&mock.client(), "n1", RetryPolicy::default())
        .await
        .expect("absent");
    assert_eq!(out, TaintOutcome::Absent);
    assert!(mock.requests_to("PATCH", NODE).is_empty());
}

#[test]
fn ack_annotation_name() {
    assert_eq!(ACK_ANNOTATION, "mtu.unbounded-cloud.io/adopted-assignment");
}
