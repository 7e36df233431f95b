//! Building the kube client.

use super::metrics::ApiMetrics;
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

/// A client for `cfg` whose requests are counted in `metrics`.
pub fn build(cfg: Config, metrics: &ApiMetrics) -> Result<Client> {
    let m = metrics.clone();
    let count = tower::util::MapRequestLayer::new(move |req: http::Request<kube::client::Body>| {
        m.record(req.method(), req.uri().path(), req.uri().query());
        req
    });
    let builder =
        kube::client::ClientBuilder::try_from(cfg).context("cannot build the Kubernetes client")?;
    Ok(builder.with_layer(&count).build())
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
    Ok(cfg)
}
