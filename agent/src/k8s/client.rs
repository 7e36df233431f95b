//! Building the kube client.

use super::error::{ClusterError, ConnectFailed, Server};
use super::metrics::{ApiMetrics, classify};
use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};
use kube::{Client, Config};
use std::path::PathBuf;
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
pub async fn client(src: &Source) -> Result<Client, ClusterError> {
    client_with_metrics(src, &ApiMetrics::default()).await
}

/// As [`client`], counting every request in `metrics`.
pub async fn client_with_metrics(
    src: &Source,
    metrics: &ApiMetrics,
) -> Result<Client, ClusterError> {
    build(config(src).await?, metrics)
}

/// The longest `Retry-After` honoured: a longer one is cut to this.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(600);

/// A client for `cfg` whose requests are counted in `metrics`. kube's own retry layer is turned
/// off: the callers' backoffs are the only retries, and each request is counted once.
pub fn build(mut cfg: Config, metrics: &ApiMetrics) -> Result<Client, ClusterError> {
    cfg.default_retry = false;
    let server = Server::new(cfg.cluster_url.clone()).to_string();
    let builder = kube::client::ClientBuilder::try_from(cfg)
        .map_err(|error| ClusterError::Build { error })?;
    Ok(builder
        .with_layer(&CountLayer {
            metrics: metrics.clone(),
            server,
        })
        .build())
}

/// Counts every request with its response status in [`ApiMetrics`], and holds back a `429` or
/// `503` answer that carries `Retry-After: SECONDS` for that long (at most [`MAX_RETRY_AFTER`])
/// before handing it to the caller, so that the caller's next request (after its own backoff)
/// comes no sooner than the server asked. A request that could not connect fails with
/// [`ConnectFailed`], which names the server (kube's connection error does not).
#[derive(Clone, Debug)]
pub struct CountLayer {
    /// Where requests are counted.
    pub metrics: ApiMetrics,
    /// The server's URL, for [`ConnectFailed`].
    pub server: String,
}

impl<S> tower::Layer<S> for CountLayer {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            metrics: self.metrics.clone(),
            server: self.server.clone(),
        }
    }
}

/// The service of [`CountLayer`].
#[derive(Clone, Debug)]
pub struct Counted<S> {
    inner: S,
    metrics: ApiMetrics,
    server: String,
}

impl<S, B> tower::Service<http::Request<kube::client::Body>> for Counted<S>
where
    S: tower::Service<http::Request<kube::client::Body>, Response = http::Response<B>>,
    S::Future: Send + 'static,
    S::Error: Into<tower::BoxError> + Send + 'static,
    B: Send + 'static,
{
    type Response = http::Response<B>;
    type Error = tower::BoxError;
    type Future = futures::future::BoxFuture<'static, Result<http::Response<B>, tower::BoxError>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), tower::BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<kube::client::Body>) -> Self::Future {
        let (verb, resource) = classify(req.method(), req.uri().path(), req.uri().query());
        let metrics = self.metrics.clone();
        let server = self.server.clone();
        let response = self.inner.call(req);
        Box::pin(async move {
            let res = response
                .await
                .map_err(|e| ConnectFailed::wrap(e.into(), server));
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
pub async fn config(src: &Source) -> Result<Config, ClusterError> {
    let mut cfg = if src.in_cluster {
        Config::incluster().map_err(|error| ClusterError::InCluster { error })?
    } else if src.kubeconfig.is_some() || src.context.is_some() {
        from_kubeconfig(src).await?
    } else {
        Config::infer()
            .await
            .map_err(|error| ClusterError::Infer { error })?
    };
    cfg.read_timeout = Some(READ_TIMEOUT);
    cfg.default_retry = false;
    Ok(cfg)
}

/// The configuration of a kubeconfig: the file given, else (as kubectl) the files of
/// `$KUBECONFIG` merged, else `~/.kube/config`; the context asked for, else the current one,
/// which must be one of its contexts.
async fn from_kubeconfig(src: &Source) -> Result<Config, ClusterError> {
    let paths = kubeconfig_paths(src)?;
    let path = paths_text(&paths);
    let mut merged = Kubeconfig::default();
    for p in &paths {
        merged = merged
            .merge(read_kubeconfig(p)?)
            .map_err(|error| ClusterError::Kubeconfig {
                path: path.clone(),
                error,
            })?;
    }
    let (name, current) = match (&src.context, &merged.current_context) {
        (Some(c), _) => (Some(c.clone()), false),
        (None, c) => (c.clone(), true),
    };
    if let Some(name) = name
        && !merged.contexts.iter().any(|c| c.name == name)
    {
        return Err(ClusterError::UnknownContext {
            name,
            current,
            path,
            contexts: merged.contexts.iter().map(|c| c.name.clone()).collect(),
        });
    }
    let options = KubeConfigOptions {
        context: src.context.clone(),
        ..KubeConfigOptions::default()
    };
    Config::from_custom_kubeconfig(merged, &options)
        .await
        .map_err(|error| ClusterError::Kubeconfig { path, error })
}

/// The kubeconfig files to read: `--kubeconfig PATH`; else those of `$KUBECONFIG`; else
/// `~/.kube/config`.
fn kubeconfig_paths(src: &Source) -> Result<Vec<PathBuf>, ClusterError> {
    if let Some(p) = src.kubeconfig.as_deref().filter(|p| !p.is_empty()) {
        return Ok(vec![PathBuf::from(p)]);
    }
    let from_env: Vec<PathBuf> = std::env::var_os("KUBECONFIG")
        .map(|v| {
            std::env::split_paths(&v)
                .filter(|p| !p.as_os_str().is_empty())
                .collect()
        })
        .unwrap_or_default();
    if !from_env.is_empty() {
        return Ok(from_env);
    }
    std::env::home_dir()
        .map(|h| vec![h.join(".kube").join("config")])
        .ok_or(ClusterError::NoKubeconfig)
}

/// The files as messages name them: one path, or several joined as `$KUBECONFIG` joins them.
fn paths_text(paths: &[PathBuf]) -> String {
    match paths {
        [one] => one.display().to_string(),
        many => std::env::join_paths(many)
            .map(|j| format!("$KUBECONFIG ({})", j.to_string_lossy()))
            .unwrap_or_else(|_| "$KUBECONFIG".to_string()),
    }
}

/// One kubeconfig file; a message names the file once (kube's own error names it again).
fn read_kubeconfig(p: &std::path::Path) -> Result<Kubeconfig, ClusterError> {
    Kubeconfig::read_from(p).map_err(|e| match e {
        KubeconfigError::ReadConfig(error, _) => ClusterError::ReadKubeconfig {
            path: p.display().to_string(),
            error,
        },
        error => ClusterError::Kubeconfig {
            path: p.display().to_string(),
            error,
        },
    })
}
