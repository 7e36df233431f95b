//! The acknowledgment: the adopted assignment written on the agent's own Pod.

use super::adopt::{ACK_ANNOTATION, Assignment};
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

/// Writes `mtu.unbounded-cloud.io/adopted-assignment` on the Pod (a merge PATCH).
pub async fn acknowledge(
    client: &Client,
    namespace: &str,
    pod: &str,
    a: &Assignment,
) -> Result<(), kube::Error> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), namespace);
    let patch = json!({"metadata": {"annotations": {ACK_ANNOTATION: a.annotation_value()}}});
    pods.patch(pod, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}
