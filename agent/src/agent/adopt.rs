//! Assignment adoption, once per process: the node's UID, Site and pool, fixed for the life of
//! the process.

use crate::k8s::ResourceKind;
use crate::k8s::api::{self, typed};
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, DynamicObject};
use serde_json::Value;
use topology_core::decode::Decoded;
use topology_core::model::Topology;
use topology_core::vocab::{Kind, POOL_LABEL_KEY, SITE_LABEL_KEY};

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
    /// The pool label at adoption (absent, or naming a missing pool: the pool came from the one
    /// GatewayPool LIST).
    pub pool_label: Option<String>,
    /// The Node as JSON.
    pub node: Value,
    /// The Sites listed at adoption, to revalidate a Site that came from `nodeCidrs`; empty when
    /// the Node has a Site label.
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

/// A pool label that names a GatewayPool which does not exist, while no pool's `status.nodes` or
/// `nodeSelector` takes the node either (`agent.md` Start 3). The agent does not acknowledge it:
/// it reports it and retries until the label changes (the startup watch then ends the process).
#[derive(Clone, Debug)]
pub struct BrokenAssignment {
    /// The Node's UID.
    pub node_uid: String,
    /// The Node's name.
    pub node_name: String,
    /// Resource version of the GET that found it (the startup watch starts there).
    pub resource_version: String,
    /// The node's Site.
    pub site: String,
    /// The site label (absent: the Site came from `nodeCidrs`).
    pub site_label: Option<String>,
    /// The pool label's value: the name of the missing GatewayPool.
    pub pool_label: String,
    /// The Sites listed, to revalidate a Site that came from `nodeCidrs`; empty when the Node
    /// has a Site label.
    pub sites: Vec<Value>,
}

impl BrokenAssignment {
    /// Why the assignment is broken, in one sentence.
    pub fn reason(&self) -> String {
        format!(
            "the {POOL_LABEL_KEY} label names GatewayPool {:?}, which does not exist, and no \
             GatewayPool's status.nodes or nodeSelector takes the node; not acknowledged until \
             the label changes",
            self.pool_label
        )
    }

    /// What the startup watch compares the Node against while the assignment is broken: any
    /// change of the pool label (as of its UID or Site) ends the process.
    pub fn baseline(&self) -> Baseline {
        Baseline {
            node_uid: self.node_uid.clone(),
            node_name: self.node_name.clone(),
            resource_version: self.resource_version.clone(),
            site: self.site.clone(),
            site_label: self.site_label.clone(),
            pool_label: Some(self.pool_label.clone()),
            pool: PoolBasis::Broken,
            sites: self.sites.clone(),
        }
    }
}

/// The pool side of what the startup watch compares against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PoolBasis {
    /// The adopted pool (`None`: a worker).
    Adopted(Option<String>),
    /// The assignment is broken: the pool label named a missing pool.
    Broken,
}

/// What the startup watch compares the own Node against: the Node as the adoption GET read it.
#[derive(Clone, Debug)]
pub struct Baseline {
    /// The Node's UID.
    pub node_uid: String,
    /// The Node's name.
    pub node_name: String,
    /// Resource version of that GET (the watch starts there).
    pub resource_version: String,
    /// The node's Site.
    pub site: String,
    /// The site label then (absent: the Site came from `nodeCidrs`).
    pub site_label: Option<String>,
    /// The pool label then.
    pub pool_label: Option<String>,
    /// The pool adopted, or the broken state.
    pub pool: PoolBasis,
    /// The Sites listed then.
    pub sites: Vec<Value>,
}

impl Adopted {
    /// What the startup watch compares the Node against.
    pub fn baseline(&self) -> Baseline {
        Baseline {
            node_uid: self.assignment.node_uid.clone(),
            node_name: self.node_name.clone(),
            resource_version: self.resource_version.clone(),
            site: self.assignment.site.clone(),
            site_label: self.site_label.clone(),
            pool_label: self.pool_label.clone(),
            pool: PoolBasis::Adopted(self.assignment.pool.clone()),
            sites: self.sites.clone(),
        }
    }
}

/// What one adoption attempt found.
#[derive(Clone, Debug)]
pub enum Attempt {
    /// The assignment, adopted.
    Adopted(Box<Adopted>),
    /// The Node belongs to no Site yet.
    NoSite,
    /// The pool label names a missing pool and no pool takes the node.
    Broken(Box<BrokenAssignment>),
}

impl Attempt {
    /// The adopted assignment, if this attempt adopted one.
    pub fn adopted(self) -> Option<Adopted> {
        match self {
            Attempt::Adopted(a) => Some(*a),
            Attempt::NoSite | Attempt::Broken(_) => None,
        }
    }
}

/// A request of an adoption attempt failed; the attempt is retried.
#[derive(Debug, thiserror::Error)]
pub enum AdoptError {
    /// The GET of the own Node.
    #[error("cannot get the own Node")]
    GetNode(#[source] kube::Error),
    /// The Node did not encode as JSON.
    #[error("cannot encode the Node")]
    EncodeNode(#[source] serde_json::Error),
    /// The LIST of Sites.
    #[error("cannot list Sites")]
    ListSites(#[source] kube::Error),
    /// The GET of the GatewayPool the label names (any error but 404, which means "missing").
    #[error("cannot get GatewayPool {pool}")]
    GetPool {
        /// The pool the label names.
        pool: String,
        /// The error, with the API status when there is one.
        #[source]
        source: kube::Error,
    },
    /// The LIST of GatewayPools.
    #[error("cannot list GatewayPools")]
    ListPools(#[source] kube::Error),
}

/// Whether GatewayPool `name` exists: one GET (404: it does not).
async fn pool_exists(client: &Client, name: &str) -> Result<bool, AdoptError> {
    let pools: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &ResourceKind::of(Kind::GatewayPool).api_resource(),
    );
    match pools.get(name).await {
        Ok(_) => Ok(true),
        Err(e) if api::api_status(&e).is_some_and(|s| s.code == 404) => Ok(false),
        Err(source) => Err(AdoptError::GetPool {
            pool: name.to_string(),
            source,
        }),
    }
}

/// One adoption attempt (`agent.md` Start 3): GET the own Node, LIST Sites; the pool label
/// decides when it names an existing pool (one GET of that pool) and an empty value means a
/// worker; otherwise (no label, or a label naming a missing pool) exactly one LIST of
/// GatewayPools and membership as `model.md` says. A label naming a missing pool that no pool's
/// status or selector backs is a broken assignment.
pub async fn try_adopt(client: &Client, node_name: &str) -> Result<Attempt, AdoptError> {
    let nodes: Api<Node> = Api::all(client.clone());
    let node = nodes.get(node_name).await.map_err(AdoptError::GetNode)?;
    let rv = node.metadata.resource_version.clone().unwrap_or_default();
    let uid = node.metadata.uid.clone().unwrap_or_default();
    let node = typed(
        ResourceKind::of(Kind::Node),
        serde_json::to_value(&node).map_err(AdoptError::EncodeNode)?,
    );
    let sites = api::list_values(client, ResourceKind::of(Kind::Site))
        .await
        .map_err(|f| AdoptError::ListSites(f.error))?;
    let (site, _) = membership(&node, &sites, &[]);
    let Some(site) = site else {
        return Ok(Attempt::NoSite);
    };
    let pool_label = label(&node, POOL_LABEL_KEY).map(str::to_string);
    let pool = match pool_label.as_deref() {
        Some("") => None,
        Some(name) if pool_exists(client, name).await? => Some(name.to_string()),
        _ => {
            let pools = api::list_values(client, ResourceKind::of(Kind::GatewayPool))
                .await
                .map_err(|f| AdoptError::ListPools(f.error))?;
            membership(&node, &sites, &pools).1
        }
    };
    let site_label = label(&node, SITE_LABEL_KEY).map(str::to_string);
    // The startup watch revalidates the Site by the listed Sites only when it came from
    // `nodeCidrs`; a labelled Node's Site is its label, and at scale the list is large.
    let sites = if site_label.is_some() {
        Vec::new()
    } else {
        sites
    };
    if pool.is_none()
        && let Some(missing) = pool_label.as_deref().filter(|l| !l.is_empty())
    {
        return Ok(Attempt::Broken(Box::new(BrokenAssignment {
            node_uid: uid,
            node_name: node_name.to_string(),
            resource_version: rv,
            site,
            site_label,
            pool_label: missing.to_string(),
            sites,
        })));
    }
    Ok(Attempt::Adopted(Box::new(Adopted {
        assignment: Assignment {
            node_uid: uid,
            site,
            pool,
        },
        node_name: node_name.to_string(),
        resource_version: rv,
        site_label,
        pool_label,
        node,
        sites,
    })))
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
