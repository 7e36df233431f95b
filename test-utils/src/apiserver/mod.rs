//! A stateful fake Kubernetes API server on 127.0.0.1 (hyper, HTTP/1.1) for kube's real
//! `Client`: it holds objects, serves LISTs (in pages, honouring label and field selectors,
//! metadata-only when the client asks for `PartialObjectMetadata`), GETs, merge PATCHes and
//! WATCH streams that resume from any resource version a LIST returned, and counts the load
//! it serves: requests by verb, watch events and bytes delivered. Tests and benchmarks change
//! the objects through [`ApiServer::put`], [`ApiServer::update`] and [`ApiServer::delete`] as
//! controllers and kubelets would; every open watch whose selection the change concerns sees
//! it.

mod selector;
mod world;

pub use selector::{BadSelector, FieldSelector, LabelSelector};

use bytes::Bytes;
use futures::stream;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::net::TcpListener;
use world::{Answer, World};

/// The load a server served since it started or was last reset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Load {
    /// Every request.
    pub requests: u64,
    /// LISTs (each page counts).
    pub lists: u64,
    /// WATCHes opened.
    pub watches: u64,
    /// GETs of one object.
    pub gets: u64,
    /// PATCHes.
    pub patches: u64,
    /// Watch events delivered.
    pub events: u64,
    /// Bytes of response bodies delivered (LIST, GET and PATCH bodies, watch events).
    pub bytes: u64,
}

/// The running server; it stops with the runtime it was started on.
#[derive(Clone)]
pub struct ApiServer {
    addr: SocketAddr,
    world: Arc<Mutex<World>>,
}

type Body = UnsyncBoxBody<Bytes, Infallible>;

impl ApiServer {
    /// Starts a server on a free port of 127.0.0.1 on the current runtime, serving the
    /// collections of these kinds (`(apiVersion, kind)`, cluster-scoped: answered empty until
    /// something is put in them) and objects (each in the collection its apiVersion, kind and
    /// namespace name).
    pub async fn start(
        collections: &[(&str, &str)],
        objects: impl IntoIterator<Item = Value>,
    ) -> std::io::Result<ApiServer> {
        let mut world = World::default();
        for (api_version, kind) in collections {
            let example = serde_json::json!({"apiVersion": api_version, "kind": kind,
                "metadata": {"name": "x"}});
            if let Some(path) = collection_of(&example) {
                world.declare(&path, api_version, kind);
            }
        }
        for o in objects {
            world.put(o);
        }
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let server = ApiServer {
            addr: listener.local_addr()?,
            world: Arc::new(Mutex::new(world)),
        };
        let world = server.world.clone();
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let world = world.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| serve(world.clone(), req));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(tcp), service)
                        .await;
                });
            }
        });
        Ok(server)
    }

    /// Its base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Writes a kubeconfig for it to `path` (what an agent's `--kubeconfig` reads).
    pub fn write_kubeconfig(&self, path: &std::path::Path) -> std::io::Result<()> {
        std::fs::write(path, kubeconfig(&self.url()))
    }

    fn world(&self) -> MutexGuard<'_, World> {
        // A panic while the lock was held poisons it; the state is still what it was.
        self.world.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Creates or replaces an object; `false` when it has no apiVersion, kind or name.
    pub fn put(&self, object: Value) -> bool {
        self.world().put(object)
    }

    /// Changes the object `name` of the collection `path` with `edit` (a new resource version);
    /// `false` when there is none.
    pub fn update(&self, path: &str, name: &str, edit: impl FnOnce(&mut Value)) -> bool {
        self.world().update(path, name, edit)
    }

    /// The object `name` of the collection `path` (`/api/v1/nodes`), as the server holds it
    /// now (the writes of PATCHes included).
    pub fn get(&self, path: &str, name: &str) -> Option<Value> {
        self.world().held(path, name)
    }

    /// Deletes the object `name` of the collection `path`; `false` when there is none.
    pub fn delete(&self, path: &str, name: &str) -> bool {
        self.world().delete(path, name)
    }

    /// The load served so far.
    pub fn load(&self) -> Load {
        self.world().load
    }

    /// Counts the load from zero again.
    pub fn reset_load(&self) {
        self.world().load = Load::default();
    }
}

/// A kubeconfig naming `server` (an API server's base URL) without credentials.
pub fn kubeconfig(server: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters: [{{name: fake, cluster: {{server: \"{server}\"}}}}]\n\
         users: [{{name: fake, user: {{}}}}]\n\
         contexts: [{{name: fake, context: {{cluster: fake, user: fake}}}}]\ncurrent-context: fake\n"
    )
}

/// The collection path of an object as the server files it.
pub fn collection_of(object: &Value) -> Option<String> {
    world::collection_of(object)
}

async fn serve(
    world: Arc<Mutex<World>>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let accept = parts
        .headers
        .get(hyper::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let request = world::Request {
        method: parts.method.as_str(),
        path: parts.uri.path(),
        query: parts.uri.query().unwrap_or_default(),
        accept: &accept,
        body: &body,
    };
    let mut w = world.lock().unwrap_or_else(|p| p.into_inner());
    let answer = w.answer(&request);
    let response = match answer {
        Answer::Json(code, value) => {
            let bytes = serde_json::to_vec(&value).unwrap_or_default();
            w.load.bytes += bytes.len() as u64;
            drop(w);
            json_response(code, Bytes::from(bytes))
        }
        Answer::Watch(rx, timeout) => {
            drop(w);
            watch_response(rx, timeout)
        }
    };
    Ok(response)
}

fn json_response(code: u16, bytes: Bytes) -> Response<Body> {
    let mut r = Response::new(Full::new(bytes).boxed_unsync());
    *r.status_mut() = hyper::StatusCode::from_u16(code).unwrap_or(hyper::StatusCode::OK);
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

/// The watch's events as a chunked body, ended when the client's timeout passes.
fn watch_response(
    rx: tokio::sync::mpsc::UnboundedReceiver<Bytes>,
    timeout: Option<std::time::Duration>,
) -> Response<Body> {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let events = stream::unfold(rx, move |mut rx| async move {
        let next = match deadline {
            Some(d) => tokio::select! {
                e = rx.recv() => e,
                () = tokio::time::sleep_until(d) => None,
            },
            None => rx.recv().await,
        };
        next.map(|line| (Ok::<_, Infallible>(Frame::data(line)), rx))
    });
    let mut r = Response::new(BodyExt::boxed_unsync(StreamBody::new(events)));
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

/// A query parameter's value percent-decoded (`+` is a space), as servers read it.
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
