//! The read-only live source of the offline commands: one LIST of every kind, decoded like files.

use super::api::{self, api_status};
use super::client::{self, Source};
use super::kinds::ResourceKind;
use super::store::PAGE_SIZE;
use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, ListParams};
use topology_core::decode::Decoded;
use topology_core::vocab::Kind;

/// The `source` of objects read from the API.
pub const SOURCE: &str = "cluster";

/// Lists every kind once and decodes the objects (a malformed object is a diagnostic, not a
/// failure). A kind whose resource does not exist (CRD not installed) counts as empty.
pub async fn list_decoded(client: &Client) -> Result<Decoded> {
    let mut decoded = Decoded::default();
    for kind in ResourceKind::ALL {
        if kind.kind == Kind::Node {
            for n in list_nodes(client).await? {
                decoded.add_json(SOURCE, n);
            }
            continue;
        }
        match api::list_values(client, kind).await {
            Ok(items) => {
                for it in items {
                    decoded.add_json(SOURCE, it);
                }
            }
            Err(e) if api_status(&e).is_some_and(|s| s.code == 404) => {
                tracing::warn!(resource = %kind, "the resource does not exist; read as empty");
            }
            Err(e) => return Err(e).with_context(|| format!("cannot list {kind}")),
        }
    }
    Ok(decoded)
}

/// Every Node (through k8s-openapi), as JSON with `apiVersion` and `kind`.
pub async fn list_nodes(client: &Client) -> Result<Vec<serde_json::Value>> {
    let nodes: Api<Node> = Api::all(client.clone());
    let mut out = Vec::new();
    let mut lp = ListParams::default().limit(PAGE_SIZE);
    loop {
        let page = nodes.list(&lp).await.context("cannot list nodes")?;
        for n in page.items {
            let v = serde_json::to_value(&n).context("cannot encode a Node")?;
            out.push(api::typed(ResourceKind::of(Kind::Node), v));
        }
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => return Ok(out),
        }
    }
}

/// Connects as `src` says and lists everything, on a runtime of its own (the offline commands are
/// synchronous).
pub fn load(src: &Source) -> Result<Decoded> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    rt.block_on(async {
        let c = client::client(src).await?;
        list_decoded(&c).await
    })
}
