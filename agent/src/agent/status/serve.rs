//! The agent's HTTP servers: the pod port (`/healthz`, `/readyz`, `/metrics`) and `/status`,
//! each a listener serving the endpoints it is for.

use super::{Liveness, Status};
use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

fn reply(code: u16, ctype: &str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() =
        http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = http::HeaderValue::from_str(ctype) {
        r.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    r
}

/// Which endpoints a listener serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Endpoints {
    /// `/healthz`, `/readyz` and `/metrics`: the pod port.
    Probes,
    /// `/status` alone: localhost by default.
    Status,
    /// Everything (`--status-address` equal to `--listen`).
    All,
}

impl Endpoints {
    fn serves(self, path: &str) -> bool {
        match self {
            Endpoints::All => true,
            Endpoints::Status => path == "/status",
            Endpoints::Probes => path != "/status",
        }
    }
}

/// The response to one request, every endpoint served.
pub fn respond(status: &Status, path: &str) -> Response<Full<Bytes>> {
    respond_on(status, Endpoints::All, path)
}

/// The response to one request on a listener that serves `endpoints` (404 for the others).
pub fn respond_on(status: &Status, endpoints: Endpoints, path: &str) -> Response<Full<Bytes>> {
    if !endpoints.serves(path) {
        return reply(404, "text/plain", "not found\n".into());
    }
    match path {
        "/healthz" => match status.liveness() {
            Liveness::Live => reply(200, "text/plain", "ok\n".into()),
            Liveness::Stalled { since, limit } => {
                let why = format!(
                    "stalled: no reconcile started or finished for {} s (allowed: {} s)",
                    since.as_secs(),
                    limit.as_secs()
                );
                tracing::warn!("/healthz: {why}");
                reply(503, "text/plain", format!("{why}\n"))
            }
        },
        "/readyz" if status.ready() => reply(200, "text/plain", "ready\n".into()),
        "/readyz" => reply(
            503,
            "text/plain",
            "not ready: no successful reconcile yet\n".into(),
        ),
        "/status" => reply(200, "application/json", format!("{}\n", status.document())),
        "/metrics" => reply(
            200,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            status.metrics(),
        ),
        _ => reply(404, "text/plain", "not found\n".into()),
    }
}

/// Why the HTTP servers could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// An address that does not parse as `IP:PORT`.
    #[error("{flag} {value}: not an address such as 127.0.0.1:9842")]
    Address {
        /// The flag that carried it.
        flag: &'static str,
        /// What it said.
        value: String,
    },
    /// The pod port could not be bound.
    #[error("cannot listen on {addr}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The running HTTP servers; dropping them stops them.
#[derive(Debug)]
pub struct Servers {
    /// Where `/healthz`, `/readyz` and `/metrics` are served (the pod port).
    pub probes: SocketAddr,
    /// Every address where `/status` is served: none when it is off (or its address could not
    /// be bound and the pod port is not on loopback).
    pub status: Vec<SocketAddr>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Servers {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn parse_addr(flag: &'static str, value: &str) -> Result<SocketAddr, ServeError> {
    value.parse().map_err(|_| ServeError::Address {
        flag,
        value: value.to_string(),
    })
}

/// Binds and serves the pod port (`listen`: health and metrics) and `/status` (`status_address`:
/// its own listener; the pod port's when the two addresses are equal; none for `off`). A pod
/// port on a loopback address (tests, agents started by hand) serves `/status` as well, since
/// nothing there leaves the host. Failing to bind the pod port is fatal (the probes need it);
/// failing to bind the status address is not (the agent still does its work, and logs why
/// `/status` is missing).
pub async fn start(
    listen: &str,
    status_address: &str,
    status: Arc<Status>,
) -> Result<Servers, ServeError> {
    let listen_addr = parse_addr("--listen", listen)?;
    let status_addr = match status_address.trim() {
        "off" | "" => None,
        a => Some(parse_addr("--status-address", a)?),
    };
    // Port 0 asks for a fresh port each time, so two such addresses are two listeners.
    let shared = status_addr == Some(listen_addr) && listen_addr.port() != 0;
    let on_probes = if shared || (status_addr.is_some() && listen_addr.ip().is_loopback()) {
        Endpoints::All
    } else {
        Endpoints::Probes
    };
    let bind = |addr| async move {
        TcpListener::bind(addr)
            .await
            .and_then(|l| Ok((l.local_addr()?, l)))
            .map_err(|source| ServeError::Bind { addr, source })
    };
    // Both listeners are bound before either serves, so once the probes answer, `/status` is
    // there too (or its failure is logged).
    let (probes, listener) = bind(listen_addr).await?;
    let own_status = match status_addr.filter(|_| !shared) {
        Some(addr) => match bind(addr).await {
            Ok(bound) => Some(bound),
            Err(e) => {
                tracing::warn!(error = %format!("{:#}", anyhow::Error::new(e)),
                    "/status is not served there (the agent goes on without it)");
                None
            }
        },
        None => None,
    };
    let mut tasks = vec![tokio::spawn(serve_on(listener, status.clone(), on_probes))];
    let mut status_at = Vec::new();
    if on_probes == Endpoints::All {
        status_at.push(probes);
        tracing::info!(bound = %probes, "serving /healthz /readyz /metrics /status");
    } else {
        tracing::info!(bound = %probes, "serving /healthz /readyz /metrics");
    }
    if let Some((bound, l)) = own_status {
        tasks.push(tokio::spawn(serve_on(l, status.clone(), Endpoints::Status)));
        status_at.push(bound);
        tracing::info!(%bound, "serving /status");
    }
    Ok(Servers {
        probes,
        status: status_at,
        tasks,
    })
}

/// Serves every endpoint until the task is dropped.
pub async fn serve(listener: TcpListener, status: Arc<Status>) {
    serve_on(listener, status, Endpoints::All).await;
}

/// Serves `endpoints` until the task is dropped.
pub async fn serve_on(listener: TcpListener, status: Arc<Status>, endpoints: Endpoints) {
    loop {
        let Ok((tcp, _)) = listener.accept().await else {
            continue;
        };
        let st = status.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                let st = st.clone();
                async move { Ok::<_, Infallible>(respond_on(&st, endpoints, req.uri().path())) }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), svc)
                .await
            {
                tracing::debug!(error = %e, "status connection ended");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pod_port_does_not_serve_status_and_the_status_listener_serves_nothing_else() {
        let s = Status::default();
        for path in ["/healthz", "/readyz", "/metrics"] {
            assert_ne!(
                respond_on(&s, Endpoints::Probes, path).status(),
                404,
                "{path}"
            );
            assert_eq!(
                respond_on(&s, Endpoints::Status, path).status(),
                404,
                "{path}"
            );
        }
        assert_eq!(respond_on(&s, Endpoints::Probes, "/status").status(), 404);
        assert_eq!(respond_on(&s, Endpoints::Status, "/status").status(), 200);
        assert_eq!(respond_on(&s, Endpoints::All, "/status").status(), 200);
        assert_eq!(respond_on(&s, Endpoints::All, "/healthz").status(), 200);
    }

    /// The first line of the response to `GET path` at `addr`.
    async fn get(addr: SocketAddr, path: &str) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).await.expect("read");
        out.lines().next().unwrap_or_default().to_string()
    }

    #[tokio::test]
    async fn start_binds_status_apart_shared_or_not_at_all() {
        let st = Arc::new(Status::default());
        // Every address: /status only on its own listener.
        let apart = start("0.0.0.0:0", "127.0.0.1:0", st.clone())
            .await
            .expect("start");
        assert_eq!(apart.status.len(), 1);
        let status_at = apart.status[0];
        assert!(status_at.ip().is_loopback());
        let probes = SocketAddr::from(([127, 0, 0, 1], apart.probes.port()));
        assert!(get(probes, "/status").await.contains(" 404 "));
        assert!(get(probes, "/healthz").await.contains(" 200 "));
        assert!(get(status_at, "/status").await.contains(" 200 "));
        // The same address: one listener serves everything.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a port")
            .port();
        let same = format!("0.0.0.0:{port}");
        let shared = start(&same, &same, st.clone()).await.expect("start");
        assert_eq!(shared.status, [shared.probes]);
        let at = SocketAddr::from(([127, 0, 0, 1], port));
        assert!(get(at, "/status").await.contains(" 200 "));
        // A pod port on loopback leaks nothing: it serves /status too.
        let local = start("127.0.0.1:0", "127.0.0.1:0", st.clone())
            .await
            .expect("start");
        assert_eq!(local.status.len(), 2);
        assert!(get(local.probes, "/status").await.contains(" 200 "));
        // Off: nowhere, not even on a loopback pod port.
        let off = start("127.0.0.1:0", "off", st.clone())
            .await
            .expect("start");
        assert!(off.status.is_empty());
        assert!(get(off.probes, "/status").await.contains(" 404 "));
        // The status address taken already: the agent still starts, without that listener.
        let busy = start("0.0.0.0:0", &status_at.to_string(), st.clone())
            .await
            .expect("start");
        assert!(busy.status.is_empty());
        let bad = start("127.0.0.1:0", "localhost", st.clone()).await;
        assert!(
            matches!(
                bad,
                Err(ServeError::Address {
                    flag: "--status-address",
                    ..
                })
            ),
            "{bad:?}"
        );
        let probes_busy = start(&apart.probes.to_string(), "off", st).await;
        assert!(
            matches!(probes_busy, Err(ServeError::Bind { .. })),
            "{probes_busy:?}"
        );
    }
}
