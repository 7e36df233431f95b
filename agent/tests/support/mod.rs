//! A scripted Kubernetes API on 127.0.0.1 (hyper, HTTP/1.1) for kube's real `Client`: it serves
//! LISTs, GETs, PATCHes and WATCH streams (newline-delimited JSON events) from per-route reply
//! queues, records every request (method, path, query, body, time), can close streams, send watch
//! errors, HTTP errors and `410 Gone`, and counts the watch streams still open.

#![allow(dead_code)]

use bytes::Bytes;
use futures::{Stream, StreamExt, stream};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::time::Instant;
use unbounded_mtu::agent::Exit;
use unbounded_mtu::agent::applier::{Applied, Applier};
use unbounded_mtu::agent::status::Status;
use unbounded_mtu::cli::AgentArgs;

/// How a watch stream ends after its scripted events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The server closes the stream.
    Close,
    /// The stream stays open until the client goes away.
    Hold,
    /// The server closes the stream normally after this long (a watch reaching its timeout).
    After(std::time::Duration),
    /// The connection breaks: the response body fails before its end.
    Drop,
}

/// One scripted reply.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A JSON body with a status code.
    Json(u16, Value),
    /// A watch stream: these events (each `{"type": ..., "object": ...}`), then `End`.
    Watch(Vec<Value>, End),
    /// A watch stream fed by the test through `Mock::push` on this channel number; held open.
    Live(usize),
    /// A `Status` answer with this code and a `Retry-After` of this many seconds.
    RetryAfter(u16, u64),
}

/// A recorded request.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// Method.
    pub method: String,
    /// Path.
    pub path: String,
    /// Raw query.
    pub query: String,
    /// Body text.
    pub body: String,
    /// `Accept` header.
    pub accept: String,
    /// When (tokio's clock: paused time counts).
    pub at: Instant,
}

impl Recorded {
    /// A decoded query parameter.
    pub fn param(&self, key: &str) -> Option<String> {
        self.query.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k == key).then(|| decode(v))
        })
    }

    /// Whether this is a WATCH.
    pub fn is_watch(&self) -> bool {
        self.param("watch").as_deref() == Some("true")
    }
}

use test_utils::apiserver::percent_decode as decode;

struct Route {
    method: String,
    path: String,
    watch: bool,
    field_selector: Option<String>,
    replies: VecDeque<Reply>,
    /// The front reply was served as the (repeating) last one.
    served: bool,
    /// `path` is a prefix: the route answers every path under it (exact routes win).
    prefix: bool,
}

#[derive(Default)]
struct State {
    routes: Vec<Route>,
    log: Vec<Recorded>,
    live: Vec<Option<mpsc::UnboundedReceiver<Bytes>>>,
    live_tx: Vec<mpsc::UnboundedSender<Bytes>>,
}

/// The mock API server.
#[derive(Clone)]
pub struct Mock {
    /// Its address.
    pub addr: SocketAddr,
    state: Arc<Mutex<State>>,
    open_watches: Arc<Mutex<HashMap<String, usize>>>,
}

impl Mock {
    /// Starts a server on 127.0.0.1 on the current runtime.
    pub async fn start() -> Mock {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let mock = Mock {
            addr,
            state: Arc::default(),
            open_watches: Arc::default(),
        };
        let m = mock.clone();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                let m = m.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req| {
                        let m = m.clone();
                        async move { Ok::<_, Infallible>(m.handle(req).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), svc)
                        .await;
                });
            }
        });
        mock
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kube client for this server (no client-side timeouts or retries, so paused time only
    /// moves through the code under test's own sleeps).
    pub fn client(&self) -> kube::Client {
        let mut cfg = kube::Config::new(self.url().parse().expect("url"));
        cfg.connect_timeout = None;
        cfg.read_timeout = None;
        cfg.write_timeout = None;
        cfg.default_retry = false;
        kube::Client::try_from(cfg).expect("client")
    }

    /// Writes a kubeconfig naming this server; returns its path.
    pub fn kubeconfig(&self, dir: &std::path::Path) -> std::path::PathBuf {
        let p = dir.join("kubeconfig");
        std::fs::write(&p, test_utils::apiserver::kubeconfig(&self.url()))
            .expect("write kubeconfig");
        p
    }

    /// Queues replies for `method path` (non-watch requests). The last reply repeats.
    pub fn on(&self, method: &str, path: &str, replies: Vec<Reply>) {
        self.add(method, path, false, replies);
    }

    /// Queues replies for WATCH requests on `path`. The last reply repeats.
    pub fn on_watch(&self, path: &str, replies: Vec<Reply>) {
        self.add("GET", path, true, replies);
    }

    /// Queues replies for WATCH requests on `path` with this `fieldSelector` (they take
    /// precedence over `on_watch`). The last reply repeats.
    pub fn on_watch_selected(&self, path: &str, field_selector: &str, replies: Vec<Reply>) {
        self.add_route("GET", path, true, Some(field_selector.to_string()), replies);
    }

    /// Queues replies for `method` requests on every path that starts with `prefix` (for objects
    /// whose names the client makes up, such as Events); exact routes take precedence. The last
    /// reply repeats.
    pub fn on_prefix(&self, method: &str, prefix: &str, replies: Vec<Reply>) {
        let mut st = self.state.lock().expect("lock");
        st.routes.push(Route {
            method: method.into(),
            path: prefix.into(),
            watch: false,
            field_selector: None,
            replies: replies.into(),
            served: false,
            prefix: true,
        });
    }

    /// Replaces the replies for WATCH requests on `path` (without a field selector).
    pub fn replace_watch(&self, path: &str, replies: Vec<Reply>) {
        {
            let mut st = self.state.lock().expect("lock");
            st.routes
                .retain(|r| !(r.path == path && r.watch && r.field_selector.is_none()));
        }
        self.on_watch(path, replies);
    }

    fn add(&self, method: &str, path: &str, watch: bool, replies: Vec<Reply>) {
        self.add_route(method, path, watch, None, replies);
    }

    fn add_route(
        &self,
        method: &str,
        path: &str,
        watch: bool,
        field_selector: Option<String>,
        replies: Vec<Reply>,
    ) {
        let mut st = self.state.lock().expect("lock");
        if let Some(r) = st.routes.iter_mut().find(|r| {
            !r.prefix
                && r.method == method
                && r.path == path
                && r.watch == watch
                && r.field_selector == field_selector
        }) {
            if r.served {
                r.replies.pop_front();
                r.served = false;
            }
            r.replies.extend(replies);
        } else {
            st.routes.push(Route {
                method: method.into(),
                path: path.into(),
                watch,
                field_selector,
                replies: replies.into(),
                served: false,
                prefix: false,
            });
        }
    }

    /// A LIST of `items` at `path` (resource version `rv`) and a held, empty WATCH.
    pub fn collection(&self, path: &str, items: Vec<Value>, rv: &str) {
        self.on("GET", path, vec![Reply::Json(200, list(items, rv))]);
        self.on_watch(path, vec![Reply::Watch(vec![], End::Hold)]);
    }

    /// A new live channel number for `Reply::Live`.
    pub fn live_channel(&self) -> usize {
        let mut st = self.state.lock().expect("lock");
        let (tx, rx) = mpsc::unbounded_channel();
        st.live.push(Some(rx));
        st.live_tx.push(tx);
        st.live.len() - 1
    }

    /// Sends one event on a live watch.
    pub fn push(&self, channel: usize, event: Value) {
        let st = self.state.lock().expect("lock");
        let _ = st.live_tx[channel].send(line(&event));
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.lock().expect("lock").log.clone()
    }

    /// Requests matching `method` and `path`.
    pub fn requests_to(&self, method: &str, path: &str) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == method && r.path == path)
            .collect()
    }

    /// Watch streams the server still holds open.
    pub fn open_watches(&self) -> usize {
        self.open_watches.lock().expect("lock").values().sum()
    }

    /// Watch streams still open on `path` with this `fieldSelector` (`None`: without one).
    pub fn open_watches_on(&self, path: &str, field_selector: Option<&str>) -> usize {
        let key = format!("{path}|{}", field_selector.unwrap_or(""));
        self.open_watches
            .lock()
            .expect("lock")
            .get(&key)
            .copied()
            .unwrap_or(0)
    }

    async fn handle(
        &self,
        req: Request<Incoming>,
    ) -> Response<UnsyncBoxBody<Bytes, std::io::Error>> {
        let method = req.method().to_string();
        let accept = req
            .headers()
            .get("accept")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let path = req.uri().path().to_string();
        let query = req.uri().query().unwrap_or_default().to_string();
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let rec = Recorded {
            method: method.clone(),
            path: path.clone(),
            query,
            body: String::from_utf8_lossy(&body).into_owned(),
            accept,
            at: Instant::now(),
        };
        let watch = rec.is_watch();
        let selector = rec.param("fieldSelector");
        let key = format!("{path}|{}", selector.clone().unwrap_or_default());
        let reply = {
            let mut st = self.state.lock().expect("lock");
            st.log.push(rec);
            let matches =
                |r: &Route| !r.prefix && r.method == method && r.path == path && r.watch == watch;
            let idx = st
                .routes
                .iter()
                .position(|r| {
                    matches(r) && r.field_selector.is_some() && r.field_selector == selector
                })
                .or_else(|| {
                    st.routes
                        .iter()
                        .position(|r| matches(r) && r.field_selector.is_none())
                })
                .or_else(|| {
                    st.routes.iter().position(|r| {
                        r.prefix
                            && r.method == method
                            && r.watch == watch
                            && path.starts_with(r.path.as_str())
                    })
                });
            let r = idx.and_then(|i| st.routes.get_mut(i)).and_then(|r| {
                if r.replies.len() > 1 {
                    r.replies.pop_front()
                } else {
                    r.served = true;
                    r.replies.front().cloned()
                }
            });
            match r {
                Some(Reply::Live(n)) => match st.live.get_mut(n).and_then(Option::take) {
                    Some(rx) => Ok(rx),
                    None => Err(Reply::Json(
                        500,
                        status(500, "InternalError", "live channel already used"),
                    )),
                },
                Some(r) => Err(r),
                None => Err(Reply::Json(
                    404,
                    status(404, "NotFound", &format!("{method} {path} is not scripted")),
                )),
            }
        };
        match reply {
            Ok(rx) => self.stream(
                key,
                stream::unfold(
                    rx,
                    |mut rx| async move { rx.recv().await.map(|b| (Ok(b), rx)) },
                )
                .boxed(),
            ),
            Err(Reply::Json(code, v)) => Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .body(full(v.to_string()))
                .expect("response"),
            Err(Reply::RetryAfter(code, secs)) => Response::builder()
                .status(code)
                .header("content-type", "application/json")
                .header("retry-after", secs.to_string())
                .body(full(
                    status(code, "TooManyRequests", "come back later").to_string(),
                ))
                .expect("response"),
            Err(Reply::Watch(events, end)) => {
                let lines: Vec<Result<Bytes, std::io::Error>> =
                    events.iter().map(|e| Ok(line(e))).collect();
                let s = stream::iter(lines);
                match end {
                    End::Close => self.stream(key, s.boxed()),
                    End::Hold => self.stream(key, s.chain(stream::pending()).boxed()),
                    End::After(d) => self.stream(
                        key,
                        s.chain(
                            stream::once(tokio::time::sleep(d)).filter_map(|()| async { None }),
                        )
                        .boxed(),
                    ),
                    End::Drop => self.stream(
                        key,
                        s.chain(stream::once(async {
                            // After the events have reached the client.
                            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                            Err(std::io::Error::other("connection dropped"))
                        }))
                        .boxed(),
                    ),
                }
            }
            Err(Reply::Live(_)) => unreachable!(),
        }
    }

    fn stream(
        &self,
        key: String,
        s: Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>>,
    ) -> Response<UnsyncBoxBody<Bytes, std::io::Error>> {
        *self
            .open_watches
            .lock()
            .expect("lock")
            .entry(key.clone())
            .or_default() += 1;
        let guarded = Guarded {
            inner: s,
            key,
            count: self.open_watches.clone(),
        };
        Response::builder()
            .status(200)
            .header("content-type", "application/json")
            .body(StreamBody::new(guarded.map(|b| b.map(Frame::data))).boxed_unsync())
            .expect("response")
    }
}

struct Guarded {
    inner: Pin<Box<dyn Stream<Item = Result<Bytes, std::io::Error>> + Send>>,
    key: String,
    count: Arc<Mutex<HashMap<String, usize>>>,
}

impl Stream for Guarded {
    type Item = Result<Bytes, std::io::Error>;
    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, std::io::Error>>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Ok(mut m) = self.count.lock()
            && let Some(n) = m.get_mut(&self.key)
        {
            *n = n.saturating_sub(1);
        }
    }
}

fn full(text: String) -> UnsyncBoxBody<Bytes, std::io::Error> {
    Full::new(Bytes::from(text))
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

fn line(v: &Value) -> Bytes {
    Bytes::from(format!("{v}\n"))
}

/// A list body.
pub fn list(items: Vec<Value>, rv: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": rv}, "items": items})
}

/// A `Status` body.
pub fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code, "reason": reason, "message": message})
}

/// A watch event.
pub fn event(ty: &str, object: Value) -> Value {
    json!({"type": ty, "object": object})
}

/// A watch `ERROR` event carrying a Status.
pub fn error_event(code: u16, reason: &str) -> Value {
    event("ERROR", status(code, reason, "scripted"))
}

/// A Node object.
pub fn node(name: &str, uid: &str, rv: &str, labels: Value, ip: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "uid": uid, "resourceVersion": rv, "labels": labels},
        "status": {"addresses": [{"type": "InternalIP", "address": ip}]}
    })
}

/// A Site object.
pub fn site(name: &str, cidr: &str) -> Value {
    json!({
        "apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "Site",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {"nodeCidrs": [cidr], "podCidrAssignments": [{"cidrBlocks": ["10.200.0.0/16"]}]}
    })
}

/// Yields to the runtime until `f` holds (at most `n` rounds; paused time does not move).
pub async fn until(mut f: impl FnMut() -> bool, n: usize) -> bool {
    for _ in 0..n {
        if f() {
            return true;
        }
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    f()
}

/// Polls `f` every 10 ms of real time until it holds or `limit` has passed; whether it held.
pub async fn until_real(mut f: impl FnMut() -> bool, limit: std::time::Duration) -> bool {
    let end = std::time::Instant::now() + limit;
    while std::time::Instant::now() < end {
        if f() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    f()
}

/// `unbounded-mtu agent ARGS...`, as the agent's parsed arguments.
pub fn parse_agent_args(args: &[&str]) -> AgentArgs {
    use clap::Parser;
    let argv = ["unbounded-mtu", "agent"]
        .into_iter()
        .chain(args.iter().copied());
    match unbounded_mtu::cli::Cli::try_parse_from(argv)
        .expect("args")
        .command
    {
        unbounded_mtu::cli::Command::Agent(a) => a,
        other => panic!("{other:?}"),
    }
}

/// `unbounded-mtu agent --node-name n1 --pod-name agent-x --pod-namespace ns` plus `extra`, as
/// the agent's parsed arguments.
pub fn agent_args(extra: &[&str]) -> AgentArgs {
    let mut args = vec![
        "--node-name",
        "n1",
        "--pod-name",
        "agent-x",
        "--pod-namespace",
        "ns",
    ];
    args.extend_from_slice(extra);
    parse_agent_args(&args)
}

/// A new directory under the system's temporary directory, named by `tag`, this process and a
/// random number.
pub fn tmpdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!(
        "unbounded-mtu-{tag}-{}-{}",
        std::process::id(),
        fastrand::u64(..)
    ));
    std::fs::create_dir_all(&d).expect("tmpdir");
    d
}

/// The agent's own settings in the environment, which a test's binary must not inherit.
pub const AGENT_ENV: [&str; 9] = [
    "LISTEN_ADDRESS",
    "NODE_NAME",
    "POD_NAME",
    "POD_NAMESPACE",
    "KUBECONFIG",
    "KUBECONFIG_PATH",
    "MANIFESTS",
    "DRY_RUN",
    "ONCE",
];

/// Runs the binary with `args` to its end (at most 60 s): none of [`AGENT_ENV`] nor `RUST_LOG`
/// inherited, `env` set.
pub async fn run_bin<S: AsRef<std::ffi::OsStr>>(
    args: impl IntoIterator<Item = S>,
    env: &[(&str, &str)],
) -> std::process::Output {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_unbounded-mtu"));
    cmd.args(args);
    for k in AGENT_ENV {
        cmd.env_remove(k);
    }
    cmd.env_remove("RUST_LOG");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.kill_on_drop(true);
    tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("the binary finished in time")
        .expect("the binary ran")
}

/// The binary as `agent --dry-run --listen 127.0.0.1:0 --kubeconfig KUBECONFIG` for node n1,
/// none of [`AGENT_ENV`] inherited, standard output discarded, killed when dropped.
pub fn agent_command(kubeconfig: &std::path::Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_unbounded-mtu"));
    cmd.args([
        "agent",
        "--dry-run",
        "--listen",
        "127.0.0.1:0",
        "--kubeconfig",
    ])
    .arg(kubeconfig);
    for k in AGENT_ENV {
        cmd.env_remove(k);
    }
    cmd.env("NODE_NAME", "n1")
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// One plain HTTP/1.1 GET against the agent's server; the whole response, headers included.
pub async fn http_get(addr: SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
    s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes())
        .await
        .expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("read");
    out
}

/// The own Node of [`agent_args`], its collection, and the field selector of its startup watch.
pub const NODE: &str = "/api/v1/nodes/n1";
pub const NODES: &str = "/api/v1/nodes";
pub const OWN: &str = "metadata.name=n1";
/// The own Pod of [`agent_args`], which the acknowledgment patches.
pub const POD: &str = "/api/v1/namespaces/ns/pods/agent-x";
pub const SITES: &str = "/apis/net.unbounded-cloud.io/v1alpha1/sites";
pub const POOLS: &str = "/apis/net.unbounded-cloud.io/v1alpha1/gatewaypools";
/// The GatewayPoolNode a gateway n1 publishes its forwarding MTUs on.
pub const GPN: &str = "/apis/net.unbounded-cloud.io/v1alpha1/gatewaypoolnodes/gpn-n1";
pub const SITE_LABEL: &str = "net.unbounded-cloud.io/site";
pub const POOL_LABEL: &str = "net.unbounded-cloud.io/gateway-pool";

/// The own Node n1 (uid `u1`, InternalIP 10.0.0.5) in Site `a` at resource version `rv`, with
/// the gateway-pool label `pool_label`.
pub fn own_node(rv: &str, pool_label: &str) -> Value {
    node(
        "n1",
        "u1",
        rv,
        json!({SITE_LABEL: "a", POOL_LABEL: pool_label}),
        "10.0.0.5",
    )
}

/// `node` carrying the gateway taint (which the agent of a worker removes).
pub fn with_gateway_taint(mut node: Value) -> Value {
    node["spec"] =
        json!({"taints": [{"key": "net.unbounded-cloud.io/gateway-node", "effect": "NoSchedule"}]});
    node
}

/// The reply to a PATCH of the agent's own Pod `name` (its acknowledgment).
pub fn pod_patched(name: &str) -> Reply {
    Reply::Json(
        200,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}}),
    )
}

/// The reply to a PATCH of the own Node (a publication or the taint removal).
pub fn node_patched() -> Reply {
    Reply::Json(200, node("n1", "u1", "101", json!({}), "10.0.0.5"))
}

/// The reply to a PATCH of the own GatewayPoolNode `gpn-n1` (the forwarding MTUs).
pub fn gpn_patched() -> Reply {
    Reply::Json(
        200,
        json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "GatewayPoolNode",
            "metadata": {"name": "gpn-n1"}}),
    )
}

/// A server with what adoption reads first: the own Node `own` by GET and Site `a`
/// (10.0.0.0/16) in the Sites' LIST.
pub async fn adoption_mock(own: Value) -> Mock {
    let mock = Mock::start().await;
    mock.on("GET", NODE, vec![Reply::Json(200, own)]);
    mock.collection(SITES, vec![site("a", "10.0.0.0/16")], "7");
    mock
}

/// The first acknowledgment among `reqs` (a PATCH of the own Pod [`POD`]): its position and the
/// assignment it writes in the `adopted-assignment` annotation.
pub fn acknowledgment(reqs: &[Recorded]) -> (usize, Value) {
    let at = reqs
        .iter()
        .position(|r| r.method == "PATCH" && r.path == POD)
        .expect("ack");
    let ack: Value = serde_json::from_str(&reqs[at].body).expect("json");
    (
        at,
        ack["metadata"]["annotations"]["mtu.unbounded-cloud.io/adopted-assignment"].clone(),
    )
}

/// The acknowledgment (a PATCH of the own Pod) answered with a server error, so the startup watch
/// of the own Node stays open and an event on it still reaches the agent.
pub fn refuse_acknowledgment(mock: &Mock) {
    mock.on(
        "PATCH",
        POD,
        vec![Reply::Json(500, status(500, "InternalError", "held"))],
    );
}

/// The own-Node startup watch, held open without events.
pub fn hold_startup_watch(mock: &Mock) {
    mock.on_watch_selected(NODES, OWN, vec![Reply::Watch(vec![], End::Hold)]);
}

/// Gateway n1 of pool `P` (Internal, Site a) serving Site b (10.1.0.0/16) with its worker wb:
/// the pool, the assignment, n1's GatewayPoolNode `gpn-n1`, Site b, its slice and wb's Node.
/// Over GENEVE on 1500 underlays, n1 publishes 1442 for Site b's node and pod prefixes.
pub fn gateway_objects() -> Vec<Value> {
    let net = "net.unbounded-cloud.io/v1alpha1";
    vec![
        site("b", "10.1.0.0/16"),
        json!({"apiVersion": net, "kind": "GatewayPool",
            "metadata": {"name": "P", "resourceVersion": "1"}, "spec": {"type": "Internal"},
            "status": {"nodes": [{"name": "n1", "internalIPs": ["10.0.0.5"]}]}}),
        json!({"apiVersion": net, "kind": "SiteGatewayPoolAssignment",
            "metadata": {"name": "as", "resourceVersion": "1"},
            "spec": {"sites": ["b"], "gatewayPools": ["P"]}}),
        json!({"apiVersion": net, "kind": "GatewayPoolNode",
            "metadata": {"name": "gpn-n1", "resourceVersion": "1"}, "spec": {"nodeName": "n1"}}),
        json!({"apiVersion": net, "kind": "SiteNodeSlice",
            "metadata": {"name": "b-0", "resourceVersion": "1"}, "siteName": "b",
            "nodes": [{"name": "wb", "internalIPs": ["10.1.0.5"], "podCIDRs": ["10.9.1.0/24"]}]}),
        node("wb", "uwb", "1", json!({SITE_LABEL: "b"}), "10.1.0.5"),
    ]
}

/// A dataplane for tests: records every desired state it is given, fails the first `fail`
/// applies and every apply while `failing` is set, detects `underlay`, and counts removals.
#[derive(Default)]
pub struct FakeApplier {
    pub calls: AtomicUsize,
    pub fail: AtomicUsize,
    pub failing: std::sync::atomic::AtomicBool,
    pub underlay: Option<u32>,
    pub applied: Mutex<Vec<dataplane_linux::DesiredState>>,
    pub removals: AtomicUsize,
}

impl FakeApplier {
    /// A fake that fails its first `fail` applies.
    pub fn failing_first(fail: usize) -> Arc<FakeApplier> {
        Arc::new(FakeApplier {
            fail: AtomicUsize::new(fail),
            ..FakeApplier::default()
        })
    }
}

impl Applier for FakeApplier {
    fn detect_underlay(
        &self,
        _: &dataplane_linux::DesiredState,
        _: &[std::net::IpAddr],
    ) -> dataplane_linux::Result<Option<u32>> {
        Ok(self.underlay)
    }

    fn apply(&self, desired: &dataplane_linux::DesiredState) -> dataplane_linux::Result<Applied> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n < self.fail.load(Ordering::SeqCst) || self.failing.load(Ordering::SeqCst) {
            return Err(dataplane_linux::Error::Netlink(format!(
                "injected failure {n}"
            )));
        }
        self.applied.lock().unwrap().push(desired.clone());
        Ok(Applied {
            writes: 1,
            in_kernel: true,
            ..Applied::default()
        })
    }

    fn remove_owned(&self) -> dataplane_linux::Result<Applied> {
        self.removals.fetch_add(1, Ordering::SeqCst);
        Ok(Applied::default())
    }
}

/// Starts the agent in API mode against `mock` on this runtime, reporting to `status`, with
/// `applier` (the real kernel's, or the dry run's, as the arguments say, without one). Sending
/// on (or dropping) the returned sender stops it.
pub fn spawn_agent(
    mock: &Mock,
    args: AgentArgs,
    status: Arc<Status>,
    applier: Option<Arc<dyn Applier>>,
) -> (
    tokio::task::JoinHandle<Result<Exit, unbounded_mtu::agent::failure::Failure>>,
    tokio::sync::oneshot::Sender<()>,
) {
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let client = mock.client();
    let settings = Arc::new(unbounded_mtu::settings::Agent::from_args(&args).expect("settings"));
    let applier = applier.unwrap_or_else(|| unbounded_mtu::agent::applier::for_settings(&settings));
    let stop = unbounded_mtu::agent::run::Stop::on(async move {
        let _ = stop_rx.await;
    });
    let task = tokio::spawn(unbounded_mtu::agent::run::run_api(
        client, settings, status, stop, applier,
    ));
    (task, stop_tx)
}

/// Serves `status` (`/status`, `/readyz`, …) on a free port of 127.0.0.1; returns the address.
pub async fn serve_status(status: Arc<Status>) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(unbounded_mtu::agent::status::serve(listener, status));
    addr
}

/// The `/status` document served at `addr`.
pub async fn status_document(addr: SocketAddr) -> Value {
    let body = http_get(addr, "/status").await;
    serde_json::from_str(body.split("\r\n\r\n").nth(1).expect("body")).expect("json")
}

/// The collection path of `kind` (cluster-scoped), as kube builds it.
pub fn path(kind: unbounded_mtu::k8s::ResourceKind) -> String {
    use kube::Resource;
    kube::core::DynamicObject::url_path(&kind.api_resource(), None)
}

/// Serves every kind the agent lists and watches: each collection holds the `objects` of its kind
/// (at resource version 42), the rest empty.
pub fn serve_collections(mock: &Mock, objects: &[Value]) {
    use topology_core::vocab::Kind;
    use unbounded_mtu::k8s::ResourceKind;
    for rk in ResourceKind::ALL {
        let items: Vec<Value> = objects
            .iter()
            .filter(|o| {
                o["kind"]
                    .as_str()
                    .and_then(Kind::parse_ci)
                    .map(|k| path(ResourceKind::of(k)))
                    == Some(path(rk))
            })
            .cloned()
            .collect();
        mock.collection(&path(rk), items, "42");
    }
}

/// The documents of a YAML file (every document, in order) as JSON values.
pub fn yaml_documents(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    // One parse per document: a multi-document parse has a document budget that the standard
    // cluster (thousands of documents) exceeds.
    let mut docs: Vec<String> = vec![String::new()];
    for line in text.lines() {
        if line == "---" || line.starts_with("--- ") {
            docs.push(String::new());
        } else if let Some(d) = docs.last_mut() {
            d.push_str(line);
            d.push('\n');
        }
    }
    docs.iter()
        .filter(|d| !d.trim().is_empty())
        .map(|d| {
            serde_saphyr::from_str::<Value>(d).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        })
        .filter(|v| !v.is_null())
        .collect()
}

/// The repository's `deploy/` directory.
pub fn deploy_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// The objects of the kustomize base `deploy/kustomization.yaml`: every document of every file
/// its `resources` list, in order, with its `namespace` set on the namespaced objects (the only
/// transformation the base asks of kustomize besides the image tag).
pub fn deploy_objects() -> Vec<Value> {
    let dir = deploy_dir();
    let k = yaml_documents(&dir.join("kustomization.yaml"))
        .into_iter()
        .next()
        .expect("a kustomization");
    let namespace = k["namespace"].as_str().map(str::to_string);
    let mut out = Vec::new();
    for r in k["resources"].as_array().expect("resources") {
        let file = r.as_str().expect("a resource path");
        for mut o in yaml_documents(&dir.join(file)) {
            let cluster_scoped = matches!(
                o["kind"].as_str(),
                Some("ClusterRole" | "ClusterRoleBinding" | "Namespace")
            );
            if let (Some(ns), false) = (&namespace, cluster_scoped) {
                o["metadata"]["namespace"] = json!(ns);
            }
            out.push(o);
        }
    }
    out.extend(generated_config_maps(&dir, &k, namespace.as_deref()));
    out
}

/// The ConfigMaps a kustomization's `configMapGenerator` makes from `envs` files (`KEY=VALUE`
/// lines, `#` comments), named as written: kustomize adds a hash of the contents to the name
/// and to every reference, which `kubectl kustomize` shows in CI.
fn generated_config_maps(dir: &std::path::Path, k: &Value, namespace: Option<&str>) -> Vec<Value> {
    let mut out = Vec::new();
    for g in k["configMapGenerator"].as_array().into_iter().flatten() {
        let mut data = serde_json::Map::new();
        for file in g["envs"].as_array().into_iter().flatten() {
            let text = std::fs::read_to_string(dir.join(file.as_str().expect("an env file")))
                .expect("read the env file");
            for line in text.lines().map(str::trim) {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (key, value) = line.split_once('=').expect("KEY=VALUE");
                data.insert(key.to_string(), json!(value));
            }
        }
        let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": g["name"]}, "data": data});
        if let Some(ns) = namespace {
            o["metadata"]["namespace"] = json!(ns);
        }
        out.push(o);
    }
    out
}

/// The allocator's variables the DaemonSet gives the agent (`MIMALLOC_*`), in manifest order:
/// tests that measure the agent run it with them, as the DaemonSet does.
pub fn daemonset_allocator_env() -> Vec<(String, String)> {
    let objects = deploy_objects();
    let ds = objects
        .iter()
        .find(|o| o["kind"] == "DaemonSet")
        .expect("a DaemonSet");
    ds["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .expect("env")
        .iter()
        .filter_map(|e| {
            let name = e["name"].as_str()?;
            let value = e["value"].as_str()?;
            name.starts_with("MIMALLOC_")
                .then(|| (name.to_string(), value.to_string()))
        })
        .collect()
}

/// What RBAC sees of a recorded request: API group, namespace, resource and verb.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ApiRequest {
    /// `""` for the core group.
    pub group: String,
    /// The namespace of a namespaced request.
    pub namespace: Option<String>,
    /// The resource (plural).
    pub resource: String,
    /// `get`, `list`, `watch`, `create`, `patch`, `update`, `delete`.
    pub verb: String,
}

impl ApiRequest {
    /// Classifies a recorded request path (`/api/v1/...` or `/apis/GROUP/VERSION/...`).
    pub fn of(r: &Recorded) -> ApiRequest {
        let segs: Vec<&str> = r.path.split('/').filter(|s| !s.is_empty()).collect();
        let (group, rest) = match segs.as_slice() {
            ["api", _version, rest @ ..] => (String::new(), rest),
            ["apis", group, _version, rest @ ..] => (group.to_string(), rest),
            _ => panic!("not an API path: {}", r.path),
        };
        let (namespace, rest) = match rest {
            ["namespaces", ns, rest @ ..] if !rest.is_empty() => (Some(ns.to_string()), rest),
            _ => (None, rest),
        };
        let resource = rest.first().expect("a resource").to_string();
        let named = rest.len() > 1;
        let verb = match (r.method.as_str(), named) {
            ("GET", _) if r.is_watch() => "watch",
            ("GET", true) => "get",
            ("GET", false) => "list",
            ("POST", _) => "create",
            ("PATCH", _) => "patch",
            ("PUT", _) => "update",
            ("DELETE", _) => "delete",
            (m, _) => panic!("unexpected method {m} on {}", r.path),
        };
        ApiRequest {
            group,
            namespace,
            resource,
            verb: verb.to_string(),
        }
    }
}
