//! The agent's HTTP endpoints: `/healthz` (live), `/readyz` (after the first successful
//! reconcile), `/status` (JSON), `/metrics` (Prometheus text).

use crate::node_agent::Shared;
use http_body_util::Full;
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;

fn respond(status: StatusCode, ctype: &str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    if let Ok(v) = hyper::header::HeaderValue::from_str(ctype) {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

/// Answers one request.
pub fn handle(shared: &Shared, path: &str) -> Response<Full<Bytes>> {
    match path {
        "/healthz" => respond(StatusCode::OK, "text/plain", "ok\n".into()),
        "/readyz" => {
            if shared.ready.load(Ordering::SeqCst) {
                respond(StatusCode::OK, "text/plain", "ready\n".into())
            } else {
                respond(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "text/plain",
                    "not ready: no successful reconcile yet\n".into(),
                )
            }
        }
        "/status" => {
            let body = shared
                .status
                .lock()
                .map(|s| serde_json::to_string_pretty(&*s).unwrap_or_default())
                .unwrap_or_default();
            respond(StatusCode::OK, "application/json", body)
        }
        "/metrics" => respond(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            shared.metrics.encode(),
        ),
        _ => respond(StatusCode::NOT_FOUND, "text/plain", "not found\n".into()),
    }
}

/// Binds `addr` and serves until the runtime stops. Returns the bound address.
pub async fn serve(addr: SocketAddr, shared: Arc<Shared>) -> std::io::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let shared = shared.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
                    let shared = shared.clone();
                    async move { Ok::<_, Infallible>(handle(&shared, req.uri().path())) }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), svc)
                    .await;
            });
        }
    });
    Ok(local)
}
