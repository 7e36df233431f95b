//! The domain vocabulary: the kinds this project reads, tunnel protocols, pool types, the API
//! group and version, and the label and annotation names nodes carry. The decoder, the model, the
//! solver and the agent all name these things the same way through this module.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::sync::Arc;

/// The API group of this project's kinds.
pub const API_GROUP: &str = "net.unbounded-cloud.io";

/// The API groups whose kinds are read: [`API_GROUP`] and its shorter spelling.
pub const READ_API_GROUPS: [&str; 2] = [API_GROUP, "unbounded-cloud.io"];

/// The API version of this project's kinds.
pub const API_VERSION: &str = "v1alpha1";

/// Label naming a node's Site.
pub const SITE_LABEL_KEY: &str = "net.unbounded-cloud.io/site";

/// Label naming a node's gateway pool (empty: a worker).
pub const POOL_LABEL_KEY: &str = "net.unbounded-cloud.io/gateway-pool";

/// Annotation: a node's detected underlay MTU.
pub const UNDERLAY_ANNOTATION: &str = "mtu.unbounded-cloud.io/underlay-mtu";

/// Annotation: an operator's bound on a node's underlay MTU.
pub const UNDERLAY_MAX_ANNOTATION: &str = "mtu.unbounded-cloud.io/underlay-mtu-max";

/// Annotation: what the underlay path from a node to particular peers carries, as its agent's
/// probes found it (`PEER=MTU` entries, comma-separated).
pub const PATH_MTU_ANNOTATION: &str = "mtu.unbounded-cloud.io/path-mtu";

/// Annotation on a GatewayPoolNode: what the gateway published.
pub const FORWARDING_ANNOTATION: &str = "mtu.unbounded-cloud.io/forwarding-mtus";

/// The kinds this project reads. Serialized as written in manifests ([`Kind::as_str`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kind {
    /// `Site`
    Site,
    /// `SiteNodeSlice`
    SiteNodeSlice,
    /// `GatewayPool`
    GatewayPool,
    /// `GatewayPoolNode`
    GatewayPoolNode,
    /// `SitePeering`
    SitePeering,
    /// `SiteGatewayPoolAssignment`
    SiteGatewayPoolAssignment,
    /// `GatewayPoolPeering`
    GatewayPoolPeering,
    /// core `v1` `Node`
    Node,
}

impl Kind {
    /// The kind as written in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Site => "Site",
            Kind::SiteNodeSlice => "SiteNodeSlice",
            Kind::GatewayPool => "GatewayPool",
            Kind::GatewayPoolNode => "GatewayPoolNode",
            Kind::SitePeering => "SitePeering",
            Kind::SiteGatewayPoolAssignment => "SiteGatewayPoolAssignment",
            Kind::GatewayPoolPeering => "GatewayPoolPeering",
            Kind::Node => "Node",
        }
    }

    /// Every kind, the unbounded ones first.
    pub const ALL: [Kind; 8] = [
        Kind::Site,
        Kind::SiteNodeSlice,
        Kind::GatewayPool,
        Kind::GatewayPoolNode,
        Kind::SitePeering,
        Kind::SiteGatewayPoolAssignment,
        Kind::GatewayPoolPeering,
        Kind::Node,
    ];

    /// Parses a kind name case-insensitively (as the CLI accepts it).
    pub fn parse_ci(s: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(s))
    }
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// `tunnelProtocol` values. Serialized by their names in output ([`Protocol::as_str`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Protocol {
    /// WireGuard
    WireGuard,
    /// GENEVE
    #[serde(rename = "GENEVE")]
    Geneve,
    /// VXLAN
    #[serde(rename = "VXLAN")]
    Vxlan,
    /// IP in IP
    #[serde(rename = "IPIP")]
    Ipip,
    /// No encapsulation
    None,
}

impl Protocol {
    /// The name as written in manifests and output.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::WireGuard => "WireGuard",
            Protocol::Geneve => "GENEVE",
            Protocol::Vxlan => "VXLAN",
            Protocol::Ipip => "IPIP",
            Protocol::None => "None",
        }
    }

    /// Parses a protocol name (`Auto` is not a protocol; see [`parse_setting`]).
    pub fn parse(s: &str) -> Option<Protocol> {
        match s {
            "WireGuard" | "wireguard" | "Wireguard" => Some(Protocol::WireGuard),
            "GENEVE" | "Geneve" | "geneve" => Some(Protocol::Geneve),
            "VXLAN" | "Vxlan" | "vxlan" => Some(Protocol::Vxlan),
            "IPIP" | "Ipip" | "ipip" => Some(Protocol::Ipip),
            "None" | "none" => Some(Protocol::None),
            _ => None,
        }
    }
}

impl std::fmt::Display for Protocol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// An object of one of the kinds this project reads, by kind and name: written, and serialized,
/// as `Kind/name` (`SitePeering/ab`, `Node/n1`), and parsed back from that text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectRef {
    /// Its kind.
    pub kind: Kind,
    /// Its `metadata.name`.
    pub name: Arc<str>,
}

impl ObjectRef {
    /// The object `name` of `kind`.
    pub fn new(kind: Kind, name: impl Into<Arc<str>>) -> ObjectRef {
        ObjectRef {
            kind,
            name: name.into(),
        }
    }
}

impl std::fmt::Display for ObjectRef {
    /// `Kind/name`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.kind.as_str(), self.name)
    }
}

/// A text that is not `Kind/name` with a kind this project reads and a name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not KIND/NAME with a kind this project reads (Site, GatewayPool, Node, ...)")]
pub struct ParseObjectRefError {
    /// The text that was given.
    pub text: String,
}

impl std::str::FromStr for ObjectRef {
    type Err = ParseObjectRefError;

    /// `Kind/name`, the kind spelt as [`Kind::as_str`] writes it; the name is everything after
    /// the first `/` and not empty.
    fn from_str(s: &str) -> Result<ObjectRef, ParseObjectRefError> {
        let err = || ParseObjectRefError {
            text: s.to_string(),
        };
        let (kind, name) = s.split_once('/').ok_or_else(err)?;
        let kind = Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == kind)
            .ok_or_else(err)?;
        if name.is_empty() {
            return Err(err());
        }
        Ok(ObjectRef::new(kind, name))
    }
}

impl Serialize for ObjectRef {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ObjectRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ObjectRef, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Parses a `tunnelProtocol` setting: `Some(None)` for `Auto`.
pub fn parse_setting(s: &str) -> Option<Option<Protocol>> {
    if s == "Auto" || s == "auto" || s.is_empty() {
        Some(None)
    } else {
        Protocol::parse(s).map(Some)
    }
}

/// `GatewayPool` `spec.type` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PoolType {
    /// `External` (the default): across public addresses a gateway is reached at its ExternalIP.
    External,
    /// `Internal`
    Internal,
}

impl PoolType {
    /// The name as written in manifests.
    pub fn as_str(self) -> &'static str {
        match self {
            PoolType::External => "External",
            PoolType::Internal => "Internal",
        }
    }

    /// Parses a written `spec.type`; an empty value is the default, `External`.
    pub fn parse(s: &str) -> Option<PoolType> {
        match s {
            "" | "External" => Some(PoolType::External),
            "Internal" => Some(PoolType::Internal),
            _ => None,
        }
    }
}

impl std::fmt::Display for PoolType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
