//! The tolerant decoder: `(source name, bytes)` in, raw objects with per-field locations and
//! diagnostics out. A key the kind's upstream schema does not define is reported
//! (`W-UNKNOWN-FIELD`, see [`crate::schema`]) and ignored; a field of the wrong type is reported and
//! read as absent; a document that fails to decode costs only itself.

use crate::diag::{Code, Diagnostic, SourceLoc};
use crate::mtu::{MAX_CAP, MAX_UNDERLAY, MIN_MTU};
use crate::schema;
use crate::tree::{self, Node, Value};
use ipnet::IpNet;
use std::net::IpAddr;
use std::sync::Arc;

/// The kinds this project reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
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
        f.write_str(self.as_str())
    }
}

/// `tunnelProtocol` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Protocol {
    /// WireGuard
    WireGuard,
    /// GENEVE
    Geneve,
    /// VXLAN
    Vxlan,
    /// IP in IP
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
        f.write_str(self.as_str())
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

/// A `tunnelMTU` as read: valid, or invalid (fails closed to 576).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawCap {
    /// The effective value (576 when invalid).
    pub mtu: u32,
    /// The value as written, when it was invalid.
    pub invalid: Option<String>,
    /// Where it was written.
    pub loc: Option<SourceLoc>,
}

/// An underlay annotation as read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawUnderlay {
    /// The effective value (576 when invalid).
    pub mtu: u32,
    /// The value as written, when it was invalid.
    pub invalid: Option<String>,
}

/// Metadata every raw object has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Meta {
    /// `metadata.name`.
    pub name: String,
    /// Where the object starts.
    pub loc: Option<SourceLoc>,
    /// Findings about this object's own fields (they come and go with the object).
    pub diags: Vec<Diagnostic>,
}

/// A Site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawSite {
    /// Metadata.
    pub meta: Meta,
    /// `spec.nodeCidrs`, canonical.
    pub node_cidrs: Vec<IpNet>,
    /// `spec.podCidrAssignments[].cidrBlocks`, canonical.
    pub pod_blocks: Vec<IpNet>,
    /// `spec.manageCniPlugin` (default true).
    pub manage_cni: bool,
    /// `spec.localCidrs`, canonical.
    pub local_cidrs: Vec<IpNet>,
    /// `spec.tunnelProtocol` (`None` = Auto).
    pub protocol: Option<Protocol>,
    /// `spec.tunnelMTU`.
    pub cap: Option<RawCap>,
}

/// `GatewayPool.status.nodes[]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawStatusNode {
    /// `name`.
    pub name: String,
    /// `siteName`.
    pub site_name: Option<String>,
    /// `internalIPs`.
    pub internal_ips: Vec<IpAddr>,
    /// `externalIPs`.
    pub external_ips: Vec<IpAddr>,
    /// `podCIDRs`.
    pub pod_cidrs: Vec<IpNet>,
    /// `gatewayWireguardPort`.
    pub wg_port: Option<u16>,
    /// Where the entry starts.
    pub loc: Option<SourceLoc>,
}

/// A GatewayPool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawPool {
    /// Metadata.
    pub meta: Meta,
    /// `spec.type` is `Internal`.
    pub internal: bool,
    /// `spec.nodeSelector` pairs.
    pub node_selector: Vec<(String, String)>,
    /// `spec.routedCidrs`, canonical.
    pub routed_cidrs: Vec<IpNet>,
    /// `spec.tunnelProtocol` (`None` = Auto).
    pub protocol: Option<Protocol>,
    /// `spec.tunnelMTU`.
    pub cap: Option<RawCap>,
    /// `status.nodes`.
    pub status_nodes: Vec<RawStatusNode>,
}

/// A `v1` Node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawNode {
    /// Metadata.
    pub meta: Meta,
    /// `metadata.labels`.
    pub labels: Vec<(String, String)>,
    /// `mtu.unbounded-cloud.io/underlay-mtu`.
    pub underlay: Option<RawUnderlay>,
    /// `mtu.unbounded-cloud.io/underlay-mtu-max`.
    pub underlay_max: Option<RawUnderlay>,
    /// `status.addresses` of type `InternalIP`.
    pub internal_ips: Vec<IpAddr>,
    /// `status.addresses` of type `ExternalIP`.
    pub external_ips: Vec<IpAddr>,
    /// `spec.podCIDRs` (or `spec.podCIDR`).
    pub pod_cidrs: Vec<IpNet>,
}

/// A SiteNodeSlice entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawSliceNode {
    /// `name`.
    pub name: String,
    /// `internalIPs`.
    pub internal_ips: Vec<IpAddr>,
    /// `podCIDRs`.
    pub pod_cidrs: Vec<IpNet>,
    /// Where the entry starts.
    pub loc: Option<SourceLoc>,
}

/// A SiteNodeSlice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawSlice {
    /// Metadata.
    pub meta: Meta,
    /// `siteName`.
    pub site_name: Option<String>,
    /// `nodes`.
    pub nodes: Vec<RawSliceNode>,
}

/// A GatewayPoolNode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawGatewayPoolNode {
    /// Metadata.
    pub meta: Meta,
    /// `spec.nodeName`, else `metadata.name`.
    pub node_name: String,
    /// The `mtu.unbounded-cloud.io/forwarding-mtus` annotation.
    pub published: Vec<(IpNet, u32)>,
}

/// A member name with where it was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The name.
    pub name: String,
    /// The field path, e.g. `spec.sites[1]`.
    pub field: String,
    /// Where.
    pub loc: Option<SourceLoc>,
}

/// A SitePeering, SiteGatewayPoolAssignment or GatewayPoolPeering.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawRelation {
    /// Metadata.
    pub meta: Meta,
    /// `spec.enabled` (default true).
    pub enabled: bool,
    /// `spec.sites` (peerings, assignments).
    pub sites: Vec<Member>,
    /// `spec.gatewayPools` (assignments, pool peerings).
    pub pools: Vec<Member>,
    /// `spec.meshNodes` (SitePeering; default true).
    pub mesh_nodes: bool,
    /// `spec.tunnelProtocol` (`None` = Auto).
    pub protocol: Option<Protocol>,
    /// `spec.tunnelMTU`.
    pub cap: Option<RawCap>,
}

/// One decoded object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RawObject {
    /// Site
    Site(RawSite),
    /// GatewayPool
    Pool(RawPool),
    /// Node
    Node(RawNode),
    /// SiteNodeSlice
    Slice(RawSlice),
    /// GatewayPoolNode
    GatewayPoolNode(RawGatewayPoolNode),
    /// SitePeering
    SitePeering(RawRelation),
    /// SiteGatewayPoolAssignment
    Assignment(RawRelation),
    /// GatewayPoolPeering
    PoolPeering(RawRelation),
}

impl RawObject {
    /// The object's kind.
    pub fn kind(&self) -> Kind {
        match self {
            RawObject::Site(_) => Kind::Site,
            RawObject::Pool(_) => Kind::GatewayPool,
            RawObject::Node(_) => Kind::Node,
            RawObject::Slice(_) => Kind::SiteNodeSlice,
            RawObject::GatewayPoolNode(_) => Kind::GatewayPoolNode,
            RawObject::SitePeering(_) => Kind::SitePeering,
            RawObject::Assignment(_) => Kind::SiteGatewayPoolAssignment,
            RawObject::PoolPeering(_) => Kind::GatewayPoolPeering,
        }
    }

    /// The object's metadata.
    pub fn meta(&self) -> &Meta {
        match self {
            RawObject::Site(o) => &o.meta,
            RawObject::Pool(o) => &o.meta,
            RawObject::Node(o) => &o.meta,
            RawObject::Slice(o) => &o.meta,
            RawObject::GatewayPoolNode(o) => &o.meta,
            RawObject::SitePeering(o) | RawObject::Assignment(o) | RawObject::PoolPeering(o) => {
                &o.meta
            }
        }
    }

    /// Mutable metadata.
    pub fn meta_mut(&mut self) -> &mut Meta {
        match self {
            RawObject::Site(o) => &mut o.meta,
            RawObject::Pool(o) => &mut o.meta,
            RawObject::Node(o) => &mut o.meta,
            RawObject::Slice(o) => &mut o.meta,
            RawObject::GatewayPoolNode(o) => &mut o.meta,
            RawObject::SitePeering(o) | RawObject::Assignment(o) | RawObject::PoolPeering(o) => {
                &mut o.meta
            }
        }
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        &self.meta().name
    }

    /// `Kind/name`.
    pub fn label(&self) -> String {
        format!("{}/{}", self.kind(), self.name())
    }
}

/// What decoding a set of sources produced.
#[derive(Clone, Debug, Default)]
pub struct Decoded {
    /// Objects of the recognised kinds, in input order.
    pub objects: Vec<RawObject>,
    /// Findings that belong to no object (documents that failed, skipped kinds).
    pub diagnostics: Vec<Diagnostic>,
}

impl Decoded {
    /// Decodes one more source into this set.
    pub fn add_source(&mut self, source: &str, bytes: &[u8]) {
        let source: Arc<str> = Arc::from(source);
        let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
        let mut doc_no = 0usize;
        for (first_line, chunk) in tree::split_document_bytes(bytes) {
            let docs = match std::str::from_utf8(chunk) {
                Ok(text) => tree::parse_document_chunk(text, first_line),
                Err(e) => {
                    let line = chunk
                        .get(..e.valid_up_to())
                        .map(|b| b.iter().filter(|&&c| c == b'\n').count())
                        .unwrap_or(0);
                    let line = first_line.saturating_add(u32::try_from(line).unwrap_or(u32::MAX));
                    vec![tree::ParsedDoc {
                        line: first_line,
                        result: Err((line, "not UTF-8 text".to_string())),
                    }]
                }
            };
            for doc in docs {
                doc_no = doc_no.saturating_add(1);
                let doc_label = format!("document {doc_no}");
                match doc.result {
                    Ok(root) => self.add_node(&source, &doc_label, root),
                    Err((line, msg)) => self.diagnostics.push(Diagnostic::new(
                        Code::Decode,
                        doc_label,
                        "",
                        format!("not valid YAML/JSON: {msg}"),
                        Some(SourceLoc {
                            source: source.clone(),
                            line,
                        }),
                    )),
                }
            }
        }
    }

    /// Adds one object (or `List`) given as JSON, e.g. a Kubernetes `DynamicObject`.
    pub fn add_json(&mut self, source: &str, value: serde_json::Value) {
        let source: Arc<str> = Arc::from(source);
        self.add_node(&source, "object", Node::from(value));
    }

    fn add_node(&mut self, source: &Arc<str>, doc_label: &str, root: Node) {
        let loc = |line: u32| SourceLoc {
            source: source.clone(),
            line,
        };
        let Value::Map(_) = &root.value else {
            if root.value != Value::Null {
                self.diagnostics.push(Diagnostic::new(
                    Code::Decode,
                    doc_label,
                    "",
                    format!("a document must be an object, found a {}", root.type_name()),
                    Some(loc(root.line)),
                ));
            }
            return;
        };
        let kind = match root.get("kind").map(|e| &e.node.value) {
            Some(Value::Str(k)) => k.clone(),
            _ => {
                self.diagnostics.push(Diagnostic::new(
                    Code::Decode,
                    doc_label,
                    "kind",
                    "the document has no `kind`",
                    Some(loc(root.line)),
                ));
                return;
            }
        };
        let api_version = match root.get("apiVersion").map(|e| &e.node.value) {
            Some(Value::Str(v)) => Some(v.clone()),
            _ => None,
        };
        if kind == "List" || (kind.ends_with("List") && root.get("items").is_some()) {
            match root.get("items").map(|e| (&e.node.value, e.node.line)) {
                Some((Value::Seq(items), _)) => {
                    for (i, item) in items.clone().into_iter().enumerate() {
                        self.add_node(source, &format!("{doc_label} items[{i}]"), item);
                    }
                }
                Some((Value::Null, _)) | None => {}
                Some((other, line)) => {
                    let found = Node {
                        line,
                        value: other.clone(),
                    }
                    .type_name();
                    self.diagnostics.push(Diagnostic::new(
                        Code::FieldType,
                        format!("{kind} ({doc_label})"),
                        "items",
                        format!("expected a list, found {found}; nothing in it is read"),
                        Some(loc(line)),
                    ));
                }
            }
            return;
        }
        let group = match api_version.as_deref() {
            Some(v) => v.rsplit_once('/').map(|(g, _)| g).unwrap_or(""),
            None => "?",
        };
        let name = root
            .get("metadata")
            .and_then(|m| m.node.get("name"))
            .and_then(|n| match &n.node.value {
                Value::Str(s) if !s.is_empty() => Some(s.clone()),
                _ => None,
            });
        let ours = group == "net.unbounded-cloud.io" || group == "unbounded-cloud.io";
        let recognised = match (kind.as_str(), ours, group) {
            ("Node", _, "") => Some(Kind::Node),
            ("Node", _, "?") => Some(Kind::Node),
            (k, true, _) | (k, false, "?") => {
                Kind::parse_ci(k).filter(|k| *k != Kind::Node && k.as_str() == kind)
            }
            _ => None,
        };
        let Some(kind_id) = recognised else {
            let object = match &name {
                Some(n) => format!("{kind}/{n}"),
                None => "-".to_string(),
            };
            // The kinds read in this group, for a suggestion; none for a foreign group.
            let readable = Kind::ALL.into_iter().filter(|k| match group {
                "?" => true,
                "" => *k == Kind::Node,
                _ => ours && *k != Kind::Node,
            });
            let hint = schema::nearest(&kind, readable.map(Kind::as_str))
                .map(|k| format!(" (did you mean {k}?)"))
                .unwrap_or_default();
            let why = if ours || group == "?" {
                format!("kind {kind} is not one this tool reads; skipped{hint}")
            } else {
                format!(
                    "kind {kind} of API group {} is not one this tool reads; skipped{hint}",
                    if group.is_empty() { "core" } else { group }
                )
            };
            self.diagnostics.push(Diagnostic::new(
                Code::UnknownKind,
                object,
                "",
                why,
                Some(loc(root.line)),
            ));
            return;
        };
        let Some(name) = name else {
            self.diagnostics.push(Diagnostic::new(
                Code::MissingName,
                format!("{kind} ({doc_label})"),
                "metadata.name",
                "the object has no name; it is ignored",
                Some(loc(root.line)),
            ));
            return;
        };
        let mut cx = Cx {
            source: source.clone(),
            object: format!("{}/{}", kind_id.as_str(), name),
            diags: Vec::new(),
            prefix: String::new(),
            reported: Vec::new(),
        };
        cx.unknown_fields(kind_id, &root);
        let meta_loc = Some(loc(root.line));
        let obj = cx.object_of(kind_id, &root, name, meta_loc);
        self.objects.push(obj);
    }
}

/// Decodes `(source name, bytes)` pairs.
pub fn decode<'a>(sources: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Decoded {
    let mut d = Decoded::default();
    for (name, bytes) in sources {
        d.add_source(name, bytes);
    }
    d
}

/// Shortens user text quoted in messages (a 10 MB value must not become a 10 MB message).
fn short(s: &str) -> String {
    const MAX: usize = 80;
    if s.len() <= MAX {
        return format!("{s:?}");
    }
    let cut = (0..=MAX)
        .rev()
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{:?}… ({} bytes)", s.get(..cut).unwrap_or(""), s.len())
}

/// Field extraction context for one object: reports with object, field and line.
struct Cx {
    source: Arc<str>,
    object: String,
    diags: Vec<Diagnostic>,
    /// Prepended to field paths while reading list entries (`nodes[2].`).
    prefix: String,
    /// Paths already reported as not being objects.
    reported: Vec<String>,
}

const SITE_LABEL: &str = "net.unbounded-cloud.io/site";
/// Annotation: a node's detected underlay MTU.
pub const UNDERLAY_ANNOTATION: &str = "mtu.unbounded-cloud.io/underlay-mtu";
/// Annotation: an operator's bound on a node's underlay MTU.
pub const UNDERLAY_MAX_ANNOTATION: &str = "mtu.unbounded-cloud.io/underlay-mtu-max";
/// Annotation on a GatewayPoolNode: what the gateway published.
pub const FORWARDING_ANNOTATION: &str = "mtu.unbounded-cloud.io/forwarding-mtus";
/// Label naming a node's Site.
pub const SITE_LABEL_KEY: &str = SITE_LABEL;
/// Label naming a node's gateway pool (empty: a worker).
pub const POOL_LABEL_KEY: &str = "net.unbounded-cloud.io/gateway-pool";

impl Cx {
    fn loc(&self, line: u32) -> Option<SourceLoc> {
        Some(SourceLoc {
            source: self.source.clone(),
            line,
        })
    }

    fn report(&mut self, code: Code, field: &str, line: u32, message: impl Into<String>) {
        let loc = self.loc(line);
        let field = format!("{}{field}", self.prefix);
        self.diags.push(Diagnostic::new(
            code,
            self.object.clone(),
            field,
            message,
            loc,
        ));
    }

    /// `W-UNKNOWN-FIELD` for every key the kind's upstream schema does not define; the keys
    /// themselves are never read, so they count as absent.
    fn unknown_fields(&mut self, kind: Kind, root: &Node) {
        for u in schema::unknown_fields(kind, root) {
            let hint = u
                .suggestion
                .map(|s| format!(" (did you mean `{s}`?)"))
                .unwrap_or_default();
            let msg = format!("{kind} has no field `{}`; it is ignored{hint}", u.field);
            self.report(Code::UnknownField, &u.field, u.line, msg);
        }
    }

    fn wrong_type(&mut self, field: &str, node: &Node, want: &str) {
        let msg = format!(
            "expected {want}, found {}; the field is read as absent",
            node.type_name()
        );
        self.report(Code::FieldType, field, node.line, msg);
    }

    /// `path` is dotted (`spec.tunnelMTU`); returns the node when present and not null.
    fn at<'n>(&mut self, root: &'n Node, path: &str) -> Option<&'n Node> {
        let mut cur = root;
        let mut walked = String::new();
        for part in path.split('.') {
            if !walked.is_empty() {
                if let Value::Map(_) | Value::Null = cur.value {
                } else {
                    let full = format!("{}{walked}", self.prefix);
                    if !self.reported.contains(&full) {
                        self.reported.push(full);
                        let msg = format!(
                            "expected an object, found {}; everything under it is read as absent",
                            cur.type_name()
                        );
                        self.report(Code::FieldType, &walked.clone(), cur.line, msg);
                    }
                    return None;
                }
                walked.push('.');
            }
            walked.push_str(part);
            cur = &cur.get(part)?.node;
        }
        if cur.value == Value::Null {
            None
        } else {
            Some(cur)
        }
    }

    fn map_at<'n>(&mut self, root: &'n Node, path: &str) -> Option<&'n Node> {
        let n = self.at(root, path)?;
        match n.value {
            Value::Map(_) => Some(n),
            _ => {
                self.wrong_type(path, n, "an object");
                None
            }
        }
    }

    fn str_at(&mut self, root: &Node, path: &str) -> Option<String> {
        let n = self.at(root, path)?;
        match &n.value {
            Value::Str(s) => Some(s.clone()),
            _ => {
                self.wrong_type(path, n, "a string");
                None
            }
        }
    }

    fn bool_at(&mut self, root: &Node, path: &str, default: bool) -> bool {
        let Some(n) = self.at(root, path) else {
            return default;
        };
        match n.value {
            Value::Bool(b) => b,
            _ => {
                self.wrong_type(path, n, "a boolean");
                default
            }
        }
    }

    fn seq_at<'n>(&mut self, root: &'n Node, path: &str) -> &'n [Node] {
        let Some(n) = self.at(root, path) else {
            return &[];
        };
        match &n.value {
            Value::Seq(items) => items,
            _ => {
                self.wrong_type(path, n, "a list");
                &[]
            }
        }
    }

    fn str_list(&mut self, root: &Node, path: &str) -> Vec<(String, String, u32)> {
        let items = self.seq_at(root, path);
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let field = format!("{path}[{i}]");
            match &item.value {
                Value::Str(s) => out.push((s.clone(), field, item.line)),
                _ => self.wrong_type(&field, item, "a string"),
            }
        }
        out
    }

    fn members(&mut self, root: &Node, path: &str) -> Vec<Member> {
        self.str_list(root, path)
            .into_iter()
            .map(|(name, field, line)| Member {
                name,
                field,
                loc: self.loc(line),
            })
            .collect()
    }

    fn cidr(&mut self, text: &str, field: &str, line: u32) -> Option<IpNet> {
        match text.trim().parse::<IpNet>() {
            Ok(net) => {
                let canon = net.trunc();
                if canon != net {
                    self.report(
                        Code::CidrHostBits,
                        field,
                        line,
                        format!("{text} has host bits set; read as {canon}"),
                    );
                }
                Some(canon)
            }
            Err(_) => {
                self.report(
                    Code::Cidr,
                    field,
                    line,
                    format!("{} is not a CIDR prefix", short(text)),
                );
                None
            }
        }
    }

    fn cidr_list(&mut self, root: &Node, path: &str) -> Vec<IpNet> {
        let items = self.str_list(root, path);
        items
            .into_iter()
            .filter_map(|(s, field, line)| self.cidr(&s, &field, line))
            .collect()
    }

    /// `spec.routedCidrs` of a GatewayPool without default routes: a prefix of length 0 would
    /// capture every destination of every node that learns it (`W-DEFAULT-ROUTE`), so the
    /// overlay never carries one.
    fn routed_cidrs(&mut self, root: &Node) -> Vec<IpNet> {
        let path = "spec.routedCidrs";
        let items = self.str_list(root, path);
        let mut out = Vec::with_capacity(items.len());
        for (s, field, line) in items {
            let Some(net) = self.cidr(&s, &field, line) else {
                continue;
            };
            if net.prefix_len() == 0 {
                self.report(
                    Code::DefaultRoute,
                    &field,
                    line,
                    format!(
                        "{net} is a default route; it is neither advertised nor routed (the overlay never carries a default route: it would capture the host's own traffic)"
                    ),
                );
                continue;
            }
            out.push(net);
        }
        out
    }

    fn ip_list(&mut self, root: &Node, path: &str) -> Vec<IpAddr> {
        let items = self.str_list(root, path);
        let mut out = Vec::new();
        for (s, field, line) in items {
            match s.trim().parse::<IpAddr>() {
                Ok(a) => out.push(a),
                Err(_) => self.report(
                    Code::Cidr,
                    &field,
                    line,
                    format!("{} is not an IP address", short(&s)),
                ),
            }
        }
        out
    }

    fn protocol(&mut self, root: &Node, path: &str) -> Option<Protocol> {
        let n = self.at(root, path)?;
        let line = n.line;
        let text = match &n.value {
            Value::Str(s) => s.clone(),
            _ => {
                self.wrong_type(path, n, "a protocol name");
                return None;
            }
        };
        match parse_setting(&text) {
            Some(p) => p,
            None => {
                self.report(
                    Code::Protocol,
                    path,
                    line,
                    format!(
                        "unknown tunnelProtocol {} (WireGuard, GENEVE, VXLAN, IPIP, None or Auto); read as Auto", short(&text)
                    ),
                );
                None
            }
        }
    }

    fn cap(&mut self, root: &Node, path: &str) -> Option<RawCap> {
        let n = self.at(root, path)?;
        let line = n.line;
        let (value, written): (Option<i128>, String) = match &n.value {
            Value::Int(i) => (Some(*i), i.to_string()),
            Value::Float(f) if f.is_infinite() => {
                (None, "a number too large for any integer".to_string())
            }
            #[allow(clippy::cast_possible_truncation)]
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e30 => {
                (Some(*f as i128), format!("{f}"))
            }
            _ => {
                self.wrong_type(path, n, "an integer");
                return None;
            }
        };
        match value {
            Some(0) => {
                self.report(Code::CapZero, path, line, "tunnelMTU 0 is read as unset");
                None
            }
            Some(v) if (i128::from(MIN_MTU)..=i128::from(MAX_CAP)).contains(&v) => Some(RawCap {
                mtu: u32::try_from(v).unwrap_or(MIN_MTU),
                invalid: None,
                loc: self.loc(line),
            }),
            _ => {
                self.report(
                    Code::CapRange,
                    path,
                    line,
                    format!(
                        "tunnelMTU {written} is outside {MIN_MTU}..{MAX_CAP}; it counts as {MIN_MTU} (fail closed)"
                    ),
                );
                Some(RawCap {
                    mtu: MIN_MTU,
                    invalid: Some(written),
                    loc: self.loc(line),
                })
            }
        }
    }

    fn string_map(&mut self, root: &Node, path: &str) -> Vec<(String, String, u32)> {
        let Some(m) = self.map_at(root, path) else {
            return Vec::new();
        };
        let Value::Map(entries) = &m.value else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            let field = format!("{path}.{}", e.key);
            match &e.node.value {
                Value::Str(s) => out.push((e.key.clone(), s.clone(), e.line)),
                Value::Null => out.push((e.key.clone(), String::new(), e.line)),
                Value::Int(i) => out.push((e.key.clone(), i.to_string(), e.line)),
                Value::Bool(b) => out.push((e.key.clone(), b.to_string(), e.line)),
                _ => self.wrong_type(&field, &e.node, "a string"),
            }
        }
        out
    }

    fn underlay(&mut self, value: &str, field: &str, line: u32) -> RawUnderlay {
        match value.trim().parse::<i64>() {
            Ok(v) if (i64::from(MIN_MTU)..=i64::from(MAX_UNDERLAY)).contains(&v) => RawUnderlay {
                mtu: u32::try_from(v).unwrap_or(MIN_MTU),
                invalid: None,
            },
            _ => {
                self.report(
                    Code::UnderlayRange,
                    field,
                    line,
                    format!(
                        "{} is not an integer in {MIN_MTU}..{MAX_UNDERLAY}; it counts as {MIN_MTU} (fail closed)", short(value)
                    ),
                );
                RawUnderlay {
                    mtu: MIN_MTU,
                    invalid: Some(value.to_string()),
                }
            }
        }
    }

    fn object_of(
        mut self,
        kind: Kind,
        root: &Node,
        name: String,
        loc: Option<SourceLoc>,
    ) -> RawObject {
        let mut meta = Meta {
            name,
            loc,
            diags: Vec::new(),
        };
        let obj = match kind {
            Kind::Site => {
                let node_cidrs = self.cidr_list(root, "spec.nodeCidrs");
                let mut pod_blocks = Vec::new();
                let assignments = self.seq_at(root, "spec.podCidrAssignments");
                for (i, a) in assignments.iter().enumerate() {
                    let path = format!("spec.podCidrAssignments[{i}]");
                    match a.value {
                        Value::Map(_) => {
                            let blocks = self.seq_at(a, "cidrBlocks");
                            for (j, b) in blocks.iter().enumerate() {
                                let field = format!("{path}.cidrBlocks[{j}]");
                                match &b.value {
                                    Value::Str(s) => {
                                        if let Some(net) = self.cidr(s, &field, b.line) {
                                            pod_blocks.push(net);
                                        }
                                    }
                                    _ => self.wrong_type(&field, b, "a string"),
                                }
                            }
                        }
                        _ => self.wrong_type(&path, a, "an object"),
                    }
                }
                RawObject::Site(RawSite {
                    node_cidrs,
                    pod_blocks,
                    manage_cni: self.bool_at(root, "spec.manageCniPlugin", true),
                    local_cidrs: self.cidr_list(root, "spec.localCidrs"),
                    protocol: self.protocol(root, "spec.tunnelProtocol"),
                    cap: self.cap(root, "spec.tunnelMTU"),
                    meta: Meta::default_like(),
                })
            }
            Kind::GatewayPool => {
                let internal = match self.str_at(root, "spec.type").as_deref() {
                    None | Some("") | Some("External") => false,
                    Some("Internal") => true,
                    Some(other) => {
                        let line = self.at(root, "spec.type").map(|n| n.line).unwrap_or(0);
                        self.report(
                            Code::FieldType,
                            "spec.type",
                            line,
                            format!(
                                "unknown pool type {} (External or Internal); read as External",
                                short(other)
                            ),
                        );
                        false
                    }
                };
                let node_selector = self
                    .string_map(root, "spec.nodeSelector")
                    .into_iter()
                    .map(|(k, v, _)| (k, v))
                    .collect();
                let mut status_nodes = Vec::new();
                let entries = self.seq_at(root, "status.nodes");
                for (i, e) in entries.iter().enumerate() {
                    let path = format!("status.nodes[{i}]");
                    if !matches!(e.value, Value::Map(_)) {
                        self.wrong_type(&path, e, "an object");
                        continue;
                    }
                    self.prefix = format!("{path}.");
                    let Some(name) = self.str_at(e, "name") else {
                        self.report(
                            Code::FieldType,
                            "name",
                            e.line,
                            "a status node needs a name; the entry is ignored",
                        );
                        self.prefix.clear();
                        continue;
                    };
                    let wg_port = match self.at(e, "gatewayWireguardPort") {
                        Some(Node {
                            value: Value::Int(p),
                            ..
                        }) => u16::try_from(*p).ok(),
                        Some(n) => {
                            self.wrong_type("gatewayWireguardPort", n, "a port number");
                            None
                        }
                        None => None,
                    };
                    status_nodes.push(RawStatusNode {
                        site_name: self.str_at(e, "siteName"),
                        internal_ips: self.ip_list(e, "internalIPs"),
                        external_ips: self.ip_list(e, "externalIPs"),
                        pod_cidrs: self.cidr_list(e, "podCIDRs"),
                        wg_port,
                        loc: self.loc(e.line),
                        name,
                    });
                    self.prefix.clear();
                }
                RawObject::Pool(RawPool {
                    internal,
                    node_selector,
                    routed_cidrs: self.routed_cidrs(root),
                    protocol: self.protocol(root, "spec.tunnelProtocol"),
                    cap: self.cap(root, "spec.tunnelMTU"),
                    status_nodes,
                    meta: Meta::default_like(),
                })
            }
            Kind::Node => {
                let labels: Vec<(String, String)> = self
                    .string_map(root, "metadata.labels")
                    .into_iter()
                    .map(|(k, v, _)| (k, v))
                    .collect();
                let annotations = self.string_map(root, "metadata.annotations");
                let mut underlay = None;
                let mut underlay_max = None;
                for (k, v, line) in &annotations {
                    if k == UNDERLAY_ANNOTATION {
                        underlay =
                            Some(self.underlay(v, &format!("metadata.annotations.{k}"), *line));
                    } else if k == UNDERLAY_MAX_ANNOTATION {
                        underlay_max =
                            Some(self.underlay(v, &format!("metadata.annotations.{k}"), *line));
                    }
                }
                let mut internal_ips = Vec::new();
                let mut external_ips = Vec::new();
                let addrs = self.seq_at(root, "status.addresses");
                for (i, a) in addrs.iter().enumerate() {
                    let path = format!("status.addresses[{i}]");
                    let ty = self.str_at(a, "type");
                    let Some(addr) = self.str_at(a, "address") else {
                        continue;
                    };
                    let list = match ty.as_deref() {
                        Some("InternalIP") => &mut internal_ips,
                        Some("ExternalIP") => &mut external_ips,
                        _ => continue,
                    };
                    match addr.trim().parse::<IpAddr>() {
                        Ok(ip) => list.push(ip),
                        Err(_) => self.report(
                            Code::Cidr,
                            &format!("{path}.address"),
                            a.line,
                            format!("{} is not an IP address", short(&addr)),
                        ),
                    }
                }
                let mut pod_cidrs = self.cidr_list(root, "spec.podCIDRs");
                if pod_cidrs.is_empty()
                    && let Some(s) = self.str_at(root, "spec.podCIDR")
                {
                    let line = self.at(root, "spec.podCIDR").map(|n| n.line).unwrap_or(0);
                    if let Some(net) = self.cidr(&s, "spec.podCIDR", line) {
                        pod_cidrs.push(net);
                    }
                }
                RawObject::Node(RawNode {
                    labels,
                    underlay,
                    underlay_max,
                    internal_ips,
                    external_ips,
                    pod_cidrs,
                    meta: Meta::default_like(),
                })
            }
            Kind::SiteNodeSlice => {
                let site_name = self.str_at(root, "siteName");
                let mut nodes = Vec::new();
                let entries = self.seq_at(root, "nodes");
                for (i, e) in entries.iter().enumerate() {
                    let path = format!("nodes[{i}]");
                    if !matches!(e.value, Value::Map(_)) {
                        self.wrong_type(&path, e, "an object");
                        continue;
                    }
                    self.prefix = format!("{path}.");
                    let Some(name) = self.str_at(e, "name") else {
                        self.report(
                            Code::FieldType,
                            "name",
                            e.line,
                            "a slice entry needs a name; the entry is ignored",
                        );
                        self.prefix.clear();
                        continue;
                    };
                    nodes.push(RawSliceNode {
                        internal_ips: self.ip_list(e, "internalIPs"),
                        pod_cidrs: self.cidr_list(e, "podCIDRs"),
                        loc: self.loc(e.line),
                        name,
                    });
                    self.prefix.clear();
                }
                RawObject::Slice(RawSlice {
                    site_name,
                    nodes,
                    meta: Meta::default_like(),
                })
            }
            Kind::GatewayPoolNode => {
                let node_name = self
                    .str_at(root, "spec.nodeName")
                    .unwrap_or_else(|| meta.name.clone());
                let annotations = self.string_map(root, "metadata.annotations");
                let mut published = Vec::new();
                for (k, v, line) in &annotations {
                    if k != FORWARDING_ANNOTATION {
                        continue;
                    }
                    let field = format!("metadata.annotations.{k}");
                    match serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(v) {
                        Ok(map) => {
                            for (prefix, mtu) in map {
                                let Some(net) = self.cidr(&prefix, &field, *line) else {
                                    continue;
                                };
                                match mtu.as_u64().and_then(|m| u32::try_from(m).ok()) {
                                    Some(m) => published.push((net, m)),
                                    None => self.report(
                                        Code::FieldType,
                                        &field,
                                        *line,
                                        format!("published MTU for {prefix} is not a non-negative integer"),
                                    ),
                                }
                            }
                        }
                        Err(e) => self.report(
                            Code::FieldType,
                            &field,
                            *line,
                            format!("expected a JSON object of prefix to MTU: {e}"),
                        ),
                    }
                }
                published.sort();
                published.dedup_by_key(|p| p.0);
                RawObject::GatewayPoolNode(RawGatewayPoolNode {
                    node_name,
                    published,
                    meta: Meta::default_like(),
                })
            }
            Kind::SitePeering | Kind::SiteGatewayPoolAssignment | Kind::GatewayPoolPeering => {
                let sites = if kind == Kind::GatewayPoolPeering {
                    Vec::new()
                } else {
                    self.members(root, "spec.sites")
                };
                let pools = if kind == Kind::SitePeering {
                    Vec::new()
                } else {
                    self.members(root, "spec.gatewayPools")
                };
                let rel = RawRelation {
                    enabled: self.bool_at(root, "spec.enabled", true),
                    sites,
                    pools,
                    mesh_nodes: kind != Kind::SitePeering
                        || self.bool_at(root, "spec.meshNodes", true),
                    protocol: self.protocol(root, "spec.tunnelProtocol"),
                    cap: self.cap(root, "spec.tunnelMTU"),
                    meta: Meta::default_like(),
                };
                match kind {
                    Kind::SitePeering => RawObject::SitePeering(rel),
                    Kind::SiteGatewayPoolAssignment => RawObject::Assignment(rel),
                    _ => RawObject::PoolPeering(rel),
                }
            }
        };
        meta.diags = std::mem::take(&mut self.diags);
        let mut obj = obj;
        *obj.meta_mut() = meta;
        obj
    }
}

impl Meta {
    fn default_like() -> Meta {
        Meta {
            name: String::new(),
            loc: None,
            diags: Vec::new(),
        }
    }
}

/// The Site label of a raw node, if any.
pub fn site_label(node: &RawNode) -> Option<&str> {
    node.labels
        .iter()
        .find(|(k, _)| k == SITE_LABEL)
        .map(|(_, v)| v.as_str())
}
