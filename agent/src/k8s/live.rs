//! The read-only live source of the offline commands: one LIST of every kind, decoded like files.

use super::api::{self, ListFailed, api_status};
use super::client::{self, Source};
use super::error::{ClusterError, RequestError, Server};
use super::kinds::ResourceKind;
use super::metrics::ApiMetrics;
use k8s_openapi::api::core::v1::Node;
use kube::{Client, Resource};
use topology_core::decode::Decoded;
use topology_core::diag::{Code, Diagnostic, SourceLoc};
use topology_core::vocab::Kind;

/// The `source` of objects read from the API.
pub const SOURCE: &str = "cluster";

/// Lists every kind once and decodes the objects (a malformed object is a diagnostic, not a
/// failure). A kind the server does not serve (its LIST answers 404: the CRD is not installed) is
/// an `E-NOT-SERVED` error diagnostic and its objects are read as absent: a missing CRD must not
/// read as a cluster without such objects. Any other failed request fails the whole read, named
/// by `server`'s URL, and so does a server that serves none of the kinds (not an API server).
pub async fn list_decoded(client: &Client, server: &Server) -> Result<Decoded, ClusterError> {
    let mut decoded = Decoded::default();
    let mut not_served_count = 0;
    for kind in ResourceKind::ALL {
        let listed = match kind.kind {
            Kind::Node => list_nodes(client).await,
            _ => api::list_values(client, kind).await,
        };
        match listed {
            Ok(items) => {
                for it in items {
                    decoded.add_json(SOURCE, it);
                }
            }
            Err(f) if api_status(&f.error).is_some_and(|s| s.code == 404) => {
                decoded.diagnostics.push(not_served(kind));
                not_served_count += 1;
            }
            Err(f) => return Err(RequestError::new(server, f.method, &f.path, f.error).into()),
        }
    }
    if not_served_count == ResourceKind::ALL.len() {
        return Err(ClusterError::NothingServed {
            server: server.to_string(),
        });
    }
    Ok(decoded)
}

/// The `E-NOT-SERVED` diagnostic of `kind`, named by its resource.
pub fn not_served(kind: ResourceKind) -> Diagnostic {
    let hint = match kind.kind {
        Kind::Node => "is this a Kubernetes API server?",
        _ => "is the CRD installed?",
    };
    Diagnostic::new(
        Code::NotServed,
        kind.resource(),
        "",
        format!(
            "the server does not serve {}/{} (404): {hint} Its objects are read as absent",
            kind.resource(),
            kind.api_resource().version
        ),
        Some(SourceLoc::at_line(SOURCE.into(), 0)),
    )
}

/// Every Node (through k8s-openapi), as JSON with `apiVersion` and `kind`.
pub async fn list_nodes(client: &Client) -> Result<Vec<serde_json::Value>, ListFailed> {
    let url_path = Node::url_path(&(), None);
    let nodes: Vec<Node> = api::list_all(client, url_path.clone()).await?;
    nodes
        .iter()
        .map(|n| {
            serde_json::to_value(n)
                .map(|v| api::typed(ResourceKind::of(Kind::Node), v))
                .map_err(|e| ListFailed {
                    method: http::Method::GET,
                    path: url_path.clone(),
                    error: kube::Error::SerdeError(e),
                })
        })
        .collect()
}

/// Connects as `src` says and lists everything, on a runtime of its own (the offline commands are
/// synchronous).
pub fn load(src: &Source) -> Result<Decoded, ClusterError> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| ClusterError::Runtime { error })?;
    rt.block_on(async {
        let cfg = client::config(src).await?;
        let server = Server::new(cfg.cluster_url.clone());
        let c = client::build(cfg, &ApiMetrics::default())?;
        list_decoded(&c, &server).await
    })
}
