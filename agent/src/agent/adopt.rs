//! Assignment adoption, once per process: the node's UID, Site and pool, fixed for the life of
//! the process.

use crate::k8s::api::{self, typed};
use crate::k8s::{Backoff, ResourceKind};
use anyhow::{Context, Result};
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::Api;
use serde_json::Value;
use topology_core::decode::{Decoded, Kind, POOL_LABEL_KEY, SITE_LABEL_KEY};
use topology_core::model::Topology;

/// The annotation on the agent's own Pod that acknowledges the adopted assignment.
pub const ACK_ANNOTATION: &str = "mtu.unbounded-cloud.io/adopted-assignment";

/// What the agent runs on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assignment {
    /// The Node's UID.
    pub node_uid: String,
    /// Its Site.
    pub site: String,
    /// Its pool (`None` = worker).
    pub pool: Option<String>,
}

impl Assignment {
    /// `<node UID>/<Site>/<pool or ->`.
    pub fn annotation_value(&self) -> String {
        format!(
            "{}/{}/{}",
            self.node_uid,
            self.site,
            self.pool.as_deref().unwrap_or("-")
        )
    }
}

/// The adopted assignment and what the startup watch compares against.
#[derive(Clone, Debug)]
pub struct Adopted {
    /// The assignment.
    pub assignment: Assignment,
    /// The Node's name.
    pub node_name: String,
    /// Resource version of the validating GET (the startup watch starts there).
    pub resource_version: String,
    /// The site label at adoption (absent: the Site came from `nodeCidrs`).
    pub site_label: Option<String>,
    /// The pool label at adoption (absent: the pool came from the one GatewayPool LIST).
    pub pool_label: Option<String>,
    /// The Node as JSON.
    pub node: Value,
    /// The Sites listed at adoption (to revalidate a Site that came from `nodeCidrs`).
    pub sites: Vec<Value>,
}

/// A label of a raw Node.
pub fn label<'a>(node: &'a Value, key: &str) -> Option<&'a str> {
    node.pointer("/metadata/labels")
        .and_then(|l| l.get(key))
        .and_then(Value::as_str)
}

/// Membership of `node` as `model.md` defines it, from the Sites (and pools, when given) listed:
/// its Site name and pool name, if any.
pub fn membership(
    node: &Value,
    sites: &[Value],
    pools: &[Value],
) -> (Option<String>, Option<String>) {
    let mut d = Decoded::default();
    d.add_json(
        "adoption",
        typed(ResourceKind::of(Kind::Node), node.clone()),
    );
    for s in sites {
        d.add_json("adoption", typed(ResourceKind::of(Kind::Site), s.clone()));
    }
    for p in pools {
        d.add_json(
            "adoption",
            typed(ResourceKind::of(Kind::GatewayPool), p.clone()),
        );
    }
    let topo = Topology::build(d.objects.iter(), d.diagnostics);
    let Some(name) = api::name_of(node) else {
        return (None, None);
    };
    let Some(id) = topo.node_id(name) else {
        return (None, None);
    };
    let info = topo.node(id);
    let site = topo.site(info.site).name.to_string();
    let pool = info.pool().map(|p| topo.pool(p).name.to_string());
    (Some(site), pool)
}

/// The pool a pool label states: empty means a worker.
pub fn pool_from_label(v: &str) -> Option<String> {
    (!v.is_empty()).then(|| v.to_string())
}

/// One adoption attempt: GET the own Node, LIST Sites; when the Node has no pool label, exactly
/// one LIST of GatewayPools. `Ok(None)` when the Node has no Site yet.
pub async fn try_adopt(client: &Client, node_name: &str) -> Result<Option<Adopted>> {
    let nodes: Api<Node> = Api::all(client.clone());
    let node = nodes
        .get(node_name)
        .await
        .with_context(|| format!("cannot get Node {node_name}"))?;
    let rv = node.metadata.resource_version.clone().unwrap_or_default();
    let uid = node.metadata.uid.clone().unwrap_or_default();
    let node = typed(
        ResourceKind::of(Kind::Node),
        serde_json::to_value(&node).context("cannot encode the Node")?,
    );
    let (sites, _) = api::list_all(client, ResourceKind::of(Kind::Site), &[])
        .await
        .context("cannot list Sites")?;
    let (site, _) = membership(&node, &sites, &[]);
    let Some(site) = site else { return Ok(None) };
    let pool_label = label(&node, POOL_LABEL_KEY).map(str::to_string);
    let pool = match &pool_label {
        Some(v) => pool_from_label(v),
        None => {
            let (pools, _) = api::list_all(client, ResourceKind::of(Kind::GatewayPool), &[])
                .await
                .context("cannot list GatewayPools")?;
            membership(&node, &sites, &pools).1
        }
    };
    Ok(Some(Adopted {
        assignment: Assignment {
            node_uid: uid,
            site,
            pool,
        },
        node_name: node_name.to_string(),
        resource_version: rv,
        site_label: label(&node, SITE_LABEL_KEY).map(str::to_string),
        pool_label,
        node,
        sites,
    }))
}

/// Adopts the assignment, waiting (with `backoff` between attempts) while the Node has no Site or
/// cannot be read. Cancel by dropping the future.
pub async fn adopt(client: &Client, node_name: &str, mut backoff: Backoff) -> Adopted {
    loop {
        match try_adopt(client, node_name).await {
            Ok(Some(a)) => {
                tracing::info!(assignment = %a.assignment.annotation_value(), "adopted the assignment");
                return a;
            }
            Ok(None) => {
                tracing::warn!(node = node_name, "the Node belongs to no Site yet; waiting")
            }
            Err(e) => {
                tracing::warn!(node = node_name, error = %format!("{e:#}"), "adoption failed; retrying")
            }
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(labels: Value, ip: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u1", "labels": labels},
               "status": {"addresses": [{"type": "InternalIP", "address": ip}, {"type": "ExternalIP", "address": "1.2.3.4"}]}})
    }

    fn site(name: &str, cidr: &str) -> Value {
        json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "Site", "metadata": {"name": name}, "spec": {"nodeCidrs": [cidr]}})
    }

    #[test]
    fn site_by_label_else_cidrs_and_pool_by_selector() {
        let sites = [site("a", "10.0.0.0/16"), site("b", "10.1.0.0/16")];
        assert_eq!(
            membership(&node(json!({}), "10.1.0.5"), &sites, &[])
                .0
                .as_deref(),
            Some("b")
        );
        let labelled = node(json!({"net.unbounded-cloud.io/site": "a"}), "10.1.0.5");
        assert_eq!(membership(&labelled, &sites, &[]).0.as_deref(), Some("a"));
        assert_eq!(
            membership(&node(json!({}), "192.168.0.1"), &sites, &[]),
            (None, None)
        );
        let pool = json!({"apiVersion": "net.unbounded-cloud.io/v1alpha1", "kind": "GatewayPool", "metadata": {"name": "p"},
                          "spec": {"nodeSelector": {"gw": "yes"}}});
        let gw = node(json!({"gw": "yes"}), "10.0.0.9");
        assert_eq!(
            membership(&gw, &sites, std::slice::from_ref(&pool)),
            (Some("a".into()), Some("p".into()))
        );
        assert_eq!(pool_from_label(""), None);
        let a = Assignment {
            node_uid: "u".into(),
            site: "a".into(),
            pool: None,
        };
        assert_eq!(a.annotation_value(), "u/a/-");
    }
}
