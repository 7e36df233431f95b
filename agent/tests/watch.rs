//! The reflectors' requests against the scripted API server: one request per backoff step, no
//! request storm after a `410 Gone`, a dropped connection or a quiet end of a watch, failures
//! reported with their HTTP status, `Retry-After` honoured, and every request counted once with
//! its status code.

mod support;

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use support::{End, Mock, Recorded, Reply, event, site};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use topology_core::vocab::Kind;
use unbounded_mtu::k8s::metrics::ApiMetrics;
use unbounded_mtu::k8s::store::{Change, ReflectOptions, Store, reflect};
use unbounded_mtu::k8s::{Backoff, ResourceKind};

fn sites() -> String {
    support::path(ResourceKind::of(Kind::Site))
}

/// A client built as the agent builds it (kube's default configuration, retries included, which
/// `build` turns off), without client-side timeouts, counting into `metrics`.
fn client(mock: &Mock, metrics: &ApiMetrics) -> kube::Client {
    let mut cfg = kube::Config::new(mock.url().parse().expect("url"));
    cfg.connect_timeout = None;
    cfg.read_timeout = None;
    cfg.write_timeout = None;
    unbounded_mtu::k8s::client::build(cfg, metrics).expect("client")
}

/// A Sites reflector on `client`; its changes arrive on the receiver.
fn start(client: kube::Client) -> (JoinHandle<()>, mpsc::UnboundedReceiver<Change>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let store = Arc::new(Store::new(ResourceKind::of(Kind::Site)));
    let task = tokio::spawn(reflect(
        client,
        store,
        ReflectOptions::default(),
        tx,
        Backoff::watch(),
    ));
    (task, rx)
}

fn lists(mock: &Mock) -> Vec<Recorded> {
    mock.requests_to("GET", &sites())
        .into_iter()
        .filter(|r| !r.is_watch())
        .collect()
}

fn watches(mock: &Mock) -> Vec<Recorded> {
    mock.requests_to("GET", &sites())
        .into_iter()
        .filter(|r| r.is_watch())
        .collect()
}

fn gaps(reqs: &[Recorded]) -> Vec<Duration> {
    reqs.windows(2).map(|w| w[1].at - w[0].at).collect()
}

fn unavailable() -> Reply {
    Reply::Json(
        503,
        support::status(503, "ServiceUnavailable", "try again later"),
    )
}

#[tokio::test(start_paused = true)]
async fn a_503_on_the_initial_list_is_one_request_per_backoff_step() {
    let mock = Mock::start().await;
    mock.on("GET", &sites(), vec![unavailable()]);
    let metrics = ApiMetrics::default();
    let (task, _rx) = start(client(&mock, &metrics));
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let ls = lists(&mock);
    // At 0, then 1 s (+ up to 1 s of jitter) later, then 2 s (+ up to 2 s) after that.
    assert!((2..=3).contains(&ls.len()), "{:?}", gaps(&ls));
    let g = gaps(&ls);
    assert!(
        g[0] >= Duration::from_secs(1) && g[0] <= Duration::from_secs(2),
        "{g:?}"
    );
    if let Some(g1) = g.get(1) {
        assert!(*g1 >= Duration::from_secs(2), "{g:?}");
    }
    tokio::time::sleep(Duration::from_secs(60)).await;
    let g = gaps(&lists(&mock));
    assert!(g.len() >= 5, "{g:?}");
    for (d, base) in g.iter().zip([1, 2, 4, 8, 16]) {
        let base = Duration::from_secs(base);
        assert!(*d >= base && *d <= base * 2, "doubling: {g:?}");
    }
    // Each attempt is one request: kube's retries are off.
    assert_eq!(
        metrics.snapshot(),
        vec![(
            ("list".into(), "sites".into(), "503".into()),
            lists(&mock).len() as u64
        )]
    );
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn a_410_watch_event_relists_once_after_the_backoff() {
    let mock = Mock::start().await;
    mock.on(
        "GET",
        &sites(),
        vec![
            Reply::Json(200, support::list(vec![site("a", "10.0.0.0/16")], "1")),
            Reply::Json(200, support::list(vec![site("b", "10.1.0.0/16")], "5")),
        ],
    );
    mock.on_watch(
        &sites(),
        vec![
            Reply::Watch(vec![support::error_event(410, "Expired")], End::Close),
            Reply::Watch(vec![], End::Hold),
        ],
    );
    let (task, mut rx) = start(client(&mock, &ApiMetrics::default()));
    tokio::time::sleep(Duration::from_secs(30)).await;
    let (ls, ws) = (lists(&mock), watches(&mock));
    assert_eq!((ls.len(), ws.len()), (2, 2), "no request storm");
    let relist = ls[1].at - ws[0].at;
    assert!(
        relist >= Duration::from_secs(1) && relist <= Duration::from_secs(2),
        "{relist:?}"
    );
    assert_eq!(ws[1].param("resourceVersion").as_deref(), Some("5"));
    let mut codes = Vec::new();
    while let Ok(c) = rx.try_recv() {
        if let Change::Failed(_, e) = c {
            codes.push(e.code);
        }
    }
    assert_eq!(codes, [Some(410)]);
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn a_dropped_watch_connection_reconnects_once_after_the_backoff() {
    let mock = Mock::start().await;
    mock.on(
        "GET",
        &sites(),
        vec![Reply::Json(200, support::list(vec![], "1"))],
    );
    let mut c = site("c", "10.2.0.0/16");
    c["metadata"]["resourceVersion"] = json!("4");
    mock.on_watch(
        &sites(),
        vec![
            Reply::Watch(vec![event("ADDED", c)], End::Drop),
            Reply::Watch(vec![], End::Hold),
        ],
    );
    let (task, mut rx) = start(client(&mock, &ApiMetrics::default()));
    tokio::time::sleep(Duration::from_secs(30)).await;
    let (ls, ws) = (lists(&mock), watches(&mock));
    assert_eq!((ls.len(), ws.len()), (1, 2), "no relist, no storm");
    let g = gaps(&ws);
    assert!(
        g[0] >= Duration::from_secs(1) && g[0] <= Duration::from_millis(1200),
        "{g:?}"
    );
    assert_eq!(ws[1].param("resourceVersion").as_deref(), Some("4"));
    // kube-client ends a watch whose connection breaks (an unexpected EOF) like one the server
    // closed: resumed, not reported as a failure.
    while let Ok(c) = rx.try_recv() {
        assert!(!matches!(c, Change::Failed(..)), "{c:?}");
    }
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn quiet_watch_ends_reconnect_at_the_base_delay_without_doubling() {
    let mock = Mock::start().await;
    mock.on(
        "GET",
        &sites(),
        vec![Reply::Json(200, support::list(vec![], "1"))],
    );
    // The server ends every watch at once, normally.
    mock.on_watch(&sites(), vec![Reply::Watch(vec![], End::Close)]);
    let (task, mut rx) = start(client(&mock, &ApiMetrics::default()));
    tokio::time::sleep(Duration::from_millis(6500)).await;
    let g = gaps(&watches(&mock));
    assert!((5..=6).contains(&g.len()), "{g:?}");
    for d in &g {
        assert!(
            *d >= Duration::from_secs(1) && *d <= Duration::from_millis(1200),
            "the base delay each time: {g:?}"
        );
    }
    assert_eq!(lists(&mock).len(), 1);
    while let Ok(c) = rx.try_recv() {
        assert!(
            !matches!(c, Change::Failed(..)),
            "a quiet end is no failure"
        );
    }
    task.abort();
}

// Real time: under paused time the client does not see the delayed end of the body.
#[tokio::test]
async fn a_watch_that_ran_to_its_end_reconnects_at_once() {
    let mock = Mock::start().await;
    mock.on(
        "GET",
        &sites(),
        vec![Reply::Json(200, support::list(vec![], "1"))],
    );
    mock.on_watch(
        &sites(),
        vec![
            Reply::Watch(vec![], End::After(Duration::from_secs(2))),
            Reply::Watch(vec![], End::Hold),
        ],
    );
    let (task, _rx) = start(client(&mock, &ApiMetrics::default()));
    assert!(
        support::until_real(|| watches(&mock).len() == 2, Duration::from_secs(10)).await,
        "reconnected"
    );
    let g = gaps(&watches(&mock));
    assert!(
        g[0] >= Duration::from_secs(2) && g[0] < Duration::from_millis(2800),
        "{g:?}"
    );
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn failures_are_reported_with_their_status_code() {
    // A 5xx answer.
    let mock = Mock::start().await;
    mock.on("GET", &sites(), vec![unavailable()]);
    let (task, mut rx) = start(client(&mock, &ApiMetrics::default()));
    match rx.recv().await {
        Some(Change::Failed(k, e)) => {
            assert_eq!(k, ResourceKind::of(Kind::Site));
            assert_eq!(e.code, Some(503));
        }
        other => panic!("{other:?}"),
    }
    task.abort();

    // No API server at all.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    drop(listener);
    let mut cfg = kube::Config::new(format!("http://{addr}").parse().expect("url"));
    cfg.read_timeout = None;
    let client = unbounded_mtu::k8s::client::build(cfg, &ApiMetrics::default()).expect("client");
    let (task, mut rx) = start(client);
    match rx.recv().await {
        Some(Change::Failed(_, e)) => assert_eq!(e.code, None, "{e:?}"),
        other => panic!("{other:?}"),
    }
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured() {
    let mock = Mock::start().await;
    mock.on(
        "GET",
        &sites(),
        vec![
            Reply::RetryAfter(429, 7),
            Reply::Json(200, support::list(vec![], "1")),
        ],
    );
    mock.on_watch(&sites(), vec![Reply::Watch(vec![], End::Hold)]);
    let (task, _rx) = start(client(&mock, &ApiMetrics::default()));
    tokio::time::sleep(Duration::from_secs(20)).await;
    let g = gaps(&lists(&mock));
    assert_eq!(g.len(), 1, "{g:?}");
    assert!(g[0] >= Duration::from_secs(7), "{g:?}");
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn every_request_is_counted_once_with_its_code() {
    let mock = Mock::start().await;
    mock.on(
        "GET",
        &sites(),
        vec![
            unavailable(),
            Reply::Json(200, support::list(vec![site("a", "10.0.0.0/16")], "1")),
        ],
    );
    mock.on_watch(&sites(), vec![Reply::Watch(vec![], End::Hold)]);
    let metrics = ApiMetrics::default();
    let (task, _rx) = start(client(&mock, &metrics));
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(
        metrics.snapshot(),
        vec![
            (("list".into(), "sites".into(), "200".into()), 1),
            (("list".into(), "sites".into(), "503".into()), 1),
            (("watch".into(), "sites".into(), "200".into()), 1),
        ]
    );
    task.abort();
}

#[tokio::test(start_paused = true)]
async fn a_503_window_with_retry_after_is_counted_request_by_request() {
    let mock = Mock::start().await;
    mock.on(
        "GET",
        &sites(),
        vec![
            Reply::RetryAfter(503, 2),
            Reply::RetryAfter(503, 1),
            Reply::Json(200, support::list(vec![site("a", "10.0.0.0/16")], "1")),
        ],
    );
    mock.on_watch(
        &sites(),
        vec![
            Reply::RetryAfter(503, 1),
            Reply::RetryAfter(503, 3),
            Reply::RetryAfter(503, 1),
            Reply::Watch(vec![], End::Close),
            Reply::Watch(vec![], End::Hold),
        ],
    );
    let metrics = ApiMetrics::default();
    let (task, _rx) = start(client(&mock, &metrics));
    tokio::time::sleep(Duration::from_secs(120)).await;
    let served = mock.requests();
    let (lists, watches) = (
        served.iter().filter(|r| !r.is_watch()).count(),
        served.iter().filter(|r| r.is_watch()).count(),
    );
    assert_eq!(
        (lists, watches),
        (3, 5),
        "the server served every scripted answer"
    );
    // What the metric says, request by request, against what the server answered.
    assert_eq!(
        metrics.snapshot(),
        vec![
            (("list".into(), "sites".into(), "200".into()), 1),
            (("list".into(), "sites".into(), "503".into()), 2),
            (("watch".into(), "sites".into(), "200".into()), 2),
            (("watch".into(), "sites".into(), "503".into()), 3),
        ]
    );
    task.abort();
}
