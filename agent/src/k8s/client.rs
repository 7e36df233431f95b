//! Building the kube client.

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
    /// A kubeconfig file.
    pub kubeconfig: Option<String>,
    /// The in-cluster service account.
    pub in_cluster: bool,
}

/// A client from a kubeconfig file, the in-cluster environment, or (neither) the usual inference.
pub async fn client(src: &Source) -> Result<Client> {
    let mut cfg = if src.in_cluster {
        Config::incluster().context("in-cluster configuration")?
    } else if let Some(p) = &src.kubeconfig {
        let kc = Kubeconfig::read_from(Path::new(p))
            .with_context(|| format!("cannot read kubeconfig {p}"))?;
        Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
            .await
            .with_context(|| format!("kubeconfig {p}"))?
    } else {
        Config::infer()
            .await
            .context("no Kubernetes configuration found")?
    };
    cfg.read_timeout = Some(READ_TIMEOUT);
    Client::try_from(cfg).context("cannot build the Kubernetes client")
}
