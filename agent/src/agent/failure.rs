//! The agent's failures, one enum per step. The step of a failure (not its text) decides the
//! `errors_total{step}` label, what `/status` shows and whether an Event is posted; every failed
//! step is retried by the next reconcile, which redoes every step.

use std::fmt;

/// A step of the agent whose failures are counted and reported apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Step {
    /// Reading the cluster's objects (manifest files).
    Input,
    /// Resolving the node's plan.
    Resolve,
    /// Detecting the underlay MTU from the kernel.
    Detect,
    /// Writing the plan to the kernel.
    Dataplane,
    /// Writing to the API what the node decided: the underlay and forwarding MTUs, the
    /// acknowledgment, the gateway taint's removal.
    Publish,
    /// Reading the API: adoption, lists and watches.
    Api,
}

impl Step {
    /// Every step, in order (the metric is initialised to 0 for each).
    pub const ALL: [Step; 6] = [
        Step::Input,
        Step::Resolve,
        Step::Detect,
        Step::Dataplane,
        Step::Publish,
        Step::Api,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Input => "input",
            Step::Resolve => "resolve",
            Step::Detect => "detect",
            Step::Dataplane => "dataplane",
            Step::Publish => "publish",
            Step::Api => "api",
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Reading the manifests failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot read the manifests")]
pub struct InputError(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// The node has no plan.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// The node is not in the topology.
    #[error("node {0} is not in the topology (no Node object, or it belongs to no Site)")]
    NoNode(String),
    /// The node has no address to derive its tunnel identity from.
    #[error("node {0} has no address")]
    NoAddress(String),
}

/// Writing to the kernel (or reading it for detection) failed.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The adapter's error (errno classified by number).
    #[error(transparent)]
    Dataplane(#[from] dataplane_linux::Error),
    /// The blocking task that talks to the kernel did not finish.
    #[error("the dataplane task failed")]
    Task(#[source] tokio::task::JoinError),
}

/// Writing to the API failed.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The underlay MTU or path MTU annotation on the own Node.
    #[error("cannot publish the underlay or path MTUs on Node {node}")]
    Node {
        /// The node.
        node: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// The forwarding MTUs annotation on the own GatewayPoolNode.
    #[error("cannot publish forwarding MTUs on GatewayPoolNode {name}")]
    Forwarding {
        /// The GatewayPoolNode.
        name: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// The acknowledgment on the own Pod.
    #[error("cannot write the acknowledgment on Pod {pod}")]
    Acknowledge {
        /// `namespace/name`.
        pod: String,
        /// Why.
        #[source]
        source: kube::Error,
    },
    /// Removing the gateway taint from the own Node.
    #[error("cannot remove the gateway taint")]
    Taint(#[source] kube::Error),
}

/// Reading the API failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// The startup watch of the own Node failed.
    #[error("the own-Node watch failed")]
    StartupWatch(#[source] tokio::task::JoinError),
    /// Every cache stopped.
    #[error("every cache stopped")]
    CachesStopped,
}

/// A failed step.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// See [`InputError`].
    #[error(transparent)]
    Input(#[from] InputError),
    /// See [`ResolveError`].
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// Underlay detection.
    #[error("underlay detection")]
    Detect(#[source] KernelError),
    /// Applying the plan.
    #[error("dataplane")]
    Dataplane(#[source] KernelError),
    /// See [`PublishError`].
    #[error(transparent)]
    Publish(#[from] PublishError),
    /// See [`ApiError`].
    #[error(transparent)]
    Api(#[from] ApiError),
}

impl Failure {
    /// The step that failed.
    pub fn step(&self) -> Step {
        match self {
            Failure::Input(_) => Step::Input,
            Failure::Resolve(_) => Step::Resolve,
            Failure::Detect(_) => Step::Detect,
            Failure::Dataplane(_) => Step::Dataplane,
            Failure::Publish(_) => Step::Publish,
            Failure::Api(_) => Step::Api,
        }
    }

    /// The failure and its causes on one line, each once, an API server's answer in kubectl's
    /// words.
    pub fn text(&self) -> String {
        crate::k8s::error::one_line(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_come_from_the_type_and_text_names_every_cause_once() {
        let f = Failure::Detect(KernelError::Dataplane(dataplane_linux::Error::Netlink(
            "closed".into(),
        )));
        assert_eq!(f.step(), Step::Detect);
        assert!(f.text().starts_with("underlay detection: "), "{}", f.text());
        let r = Failure::from(ResolveError::NoNode("n1".into()));
        assert_eq!(r.step(), Step::Resolve);
        assert_eq!(
            r.text(),
            "node n1 is not in the topology (no Node object, or it belongs to no Site)"
        );
    }
}
