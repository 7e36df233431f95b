//! Building the kube client.

use super::metrics::{ApiMetrics, classify};
use anyhow::{Context, Result};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};
use std::path::Path;
use std::time::Duration;

/// Client-side read timeout: longer than the longest watch timeout (1200 s), so the server always
/// ends a watch first.
pub const READ_TIMEOUT: Duration = Duration::from_secs(1320);

/// Where the client's configuration comes from.
#[derive(Clone, Debug, Default)]
pub struct Source {
    /// A kubeconfig file; empty: `$KUBECONFIG`, then `~/.kube/config`.
    pub kubeconfig: Option<String>,
    /// The in-cluster service account.
    pub in_cluster: bool,
    /// The kubeconfig context (default: the current one).
    pub context: Option<String>,
}

/// A client from a kubeconfig file, the in-cluster environment, or (neither) the usual inference.
pub async fn client(src: &Source) -> Result<Client> {
    client_with_metrics(src, &ApiMetrics::default()).await
}

/// As [`client`], counting every request in `metrics`.
pub async fn client_with_metrics(src: &Source, metrics: &ApiMetrics) -> Result<Client> {
    build(config(src).await?, metrics)
}

/// The longest `Retry-After` honoured: a longer one is cut to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// A client for `cfg` whose requests are counted in `metrics`. kube's own retry layer is turned
/// off: the callers' backoffs are the only retries, and each request is counted once.
pub fn build(mut cfg: Config, metrics: &ApiMetrics) -> Result<Client> {
    cfg.default_retry = false;
    let builder =
        kube::client::ClientBuilder::try_from(cfg).context("cannot build the Kubernetes client")?;
    Ok(builder
        .with_layer(&CountLayer {
            metrics: metrics.clone(),
        })
        .build())
}

/// Counts every request with its response status in [`ApiMetrics`], and holds back a `429` or
/// `503` answer that carries `Retry-After: SECONDS` for that long (at most [`MAX_RETRY_AFTER`])
/// before handing it to the caller, so that the caller's next request (after its own backoff)
/// comes no sooner than the server asked.
#[derive(Clone, Debug)]
pub struct CountLayer {
    /// Where requests are counted.
    pub metrics: ApiMetrics,
}

impl<S> tower::Layer<S> for CountLayer {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            metrics: self.metrics.clone(),
        }
    }
}

/// The service of [`CountLayer`].
#[derive(Clone, Debug)]
pub struct Counted<S> {
    inner: S,
    metrics: ApiMetrics,
}

impl<S, B> tower::Service<http::Request<kube::client::Body>> for Counted<S>
where
    S: tower::Service<http::Request<kube::client::Body>, Response = http::Response<B>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    B: Send + 'static,
{
    type Response = http::Response<B>;
    type Error = S::Error;
    type Future = futures::future::BoxFuture<'static, Result<http::Response<B>, S::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<kube::client::Body>) -> Self::Future {
        let (verb, resource) = classify(req.method(), req.uri().path(), req.uri().query());
        let metrics = self.metrics.clone();
        let response = self.inner.call(req);
        Box::pin(async move {
            let res = response.await;
            let status = res.as_ref().ok().map(http::Response::status);
            metrics.count(verb, resource, status);
            if let Ok(r) = &res
                && let Some(wait) = retry_after(r)
            {
                tokio::time::sleep(wait).await;
            }
            res
        })
    }
}

/// The `Retry-After` (in seconds) of a `429` or `503` answer, capped at [`MAX_RETRY_AFTER`].
pub fn retry_after<B>(r: &http::Response<B>) -> Option<Duration> {
    let status = r.status();
    if status != http::StatusCode::TOO_MANY_REQUESTS
        && status != http::StatusCode::SERVICE_UNAVAILABLE
    {
        return None;
    }
    let secs: u64 = r
        .headers()
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(secs).min(MAX_RETRY_AFTER))
}

/// The client configuration, with the read timeout above the longest watch timeout.
pub async fn config(src: &Source) -> Result<Config> {
    let options = KubeConfigOptions {
        context: src.context.clone(),
        ..KubeConfigOptions::default()
    };
    let mut cfg = if src.in_cluster {
        Config::incluster().context("in-cluster configuration")?
    } else if let Some(p) = src.kubeconfig.as_deref().filter(|p| !p.is_empty()) {
        let kc = Kubeconfig::read_from(Path::new(p))
            .with_context(|| format!("cannot read kubeconfig {p}"))?;
        Config::from_custom_kubeconfig(kc, &options)
            .await
            .with_context(|| format!("kubeconfig {p}"))?
    } else if src.kubeconfig.is_some() || src.context.is_some() {
        // As kubectl: `$KUBECONFIG` (its files merged), then `~/.kube/config`.
        Config::from_kubeconfig(&options)
            .await
            .context("kubeconfig ($KUBECONFIG, else ~/.kube/config)")?
    } else {
        Config::infer()
            .await
            .context("no Kubernetes configuration found")?
    };
    cfg.read_timeout = Some(READ_TIMEOUT);
    cfg.default_retry = false;
    Ok(cfg)
}
