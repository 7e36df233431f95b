//! Diagnostics: what the decoder and validator found wrong, with stable codes and `file:line`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::sync::Arc;

/// Severity of a diagnostic, ordered as output sorts them (errors first); serialized by its
/// output name ([`Severity::as_str`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Severity {
    /// Something is wrong; the affected value fails closed.
    Error,
    /// Something is probably wrong; the input is still used as written.
    Warning,
    /// Worth knowing; nothing is wrong.
    Note,
}

impl Severity {
    /// The lowercase name used in output.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

macro_rules! codes {
    ($($variant:ident => $text:literal, $sev:ident, $doc:literal;)*) => {
        /// Stable diagnostic codes: `E-` errors (the object or field is read as absent or fails
        /// closed), `W-` warnings and `N-` notes; scripts match on them.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum Code {
            $(#[doc = $doc] $variant,)*
        }
        impl Code {
            /// The stable text of the code, e.g. `E-CAP-RANGE`.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $text,)* }
            }
            /// The severity this code always has.
            pub fn severity(self) -> Severity {
                match self { $(Code::$variant => Severity::$sev,)* }
            }
            /// Every code, for documentation and tests.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)*];
        }
    };
}

codes! {
    Decode => "E-DECODE", Error, "a document is not valid YAML/JSON or not an object";
    FieldType => "E-FIELD-TYPE", Error, "a known field has the wrong type";
    Cidr => "E-CIDR", Error, "a CIDR or address does not parse";
    CapRange => "E-CAP-RANGE", Error, "`tunnelMTU` outside 576..9000 (not 0); counts as 576";
    UnderlayRange => "E-UNDERLAY-RANGE", Error, "an underlay annotation outside 576..65535 or not an integer; counts as 576";
    PathMtu => "E-PATH-MTU", Error, "a `path-mtu` annotation entry that does not parse or whose value is outside 576..65535; counts as 576 for the peer it names, dropped when it names none";
    Protocol => "E-PROTOCOL", Error, "unknown `tunnelProtocol`";
    Duplicate => "E-DUPLICATE", Error, "two different objects of one kind share a name; every copy is ignored";
    CidrOverlap => "E-CIDR-OVERLAP", Error, "two Sites' node CIDRs, or two Sites' pod blocks, overlap";
    MissingName => "E-MISSING-NAME", Error, "an object has no `metadata.name`; it is ignored";
    UnknownOwnKind => "E-UNKNOWN-KIND", Error, "a kind of this project's API group that the model does not define (the message names the nearest kind); the object is skipped";
    UnknownVersion => "E-UNKNOWN-VERSION", Error, "a version other than `v1alpha1` of this project's API group; the object is skipped";
    NotServed => "E-NOT-SERVED", Error, "a kind the API server does not serve (its LIST answered 404: the CRD is not installed), read from a cluster; the object is the resource (`sites.net.unbounded-cloud.io`), and its objects are read as absent";
    MissingSite => "W-MISSING-SITE", Warning, "a relationship names a Site that does not exist";
    MissingPool => "W-MISSING-POOL", Warning, "a relationship, or a Node's `gateway-pool` label, names a pool that does not exist";
    TooFewMembers => "W-TOO-FEW-MEMBERS", Warning, "a relationship is left with too few existing members";
    DuplicateMember => "W-DUPLICATE-MEMBER", Warning, "a member is listed twice";
    NoSite => "W-NO-SITE", Warning, "a node belongs to no Site";
    PathMtuPeer => "W-PATH-MTU-PEER", Warning, "a `path-mtu` annotation entry names a node that does not exist (or the node itself); ignored";
    MultiSite => "W-MULTI-SITE", Warning, "a node matches several Sites";
    MultiPool => "W-MULTI-POOL", Warning, "a node matches several pools";
    ProtocolConflict => "W-PROTOCOL-CONFLICT", Warning, "objects of one tier disagree on a link's protocol";
    Ipv6Below1280 => "W-IPV6-BELOW-1280", Warning, "a value below 1280 on a node with IPv6 pod CIDRs";
    PublishedStale => "W-PUBLISHED-STALE", Warning, "a gateway's published forwarding MTU (its GatewayPoolNode's `forwarding-mtus` annotation) differs from what this input would publish for that prefix: the gateway has not caught up, or the input is not what the cluster runs";
    CidrHostBits => "W-CIDR-HOST-BITS", Warning, "a CIDR has host bits set and was normalised";
    DefaultRoute => "W-DEFAULT-ROUTE", Warning, "a `routedCidrs` entry of prefix length 0; dropped, the overlay never carries a default route";
    UnknownField => "W-UNKNOWN-FIELD", Warning, "a key that the kind's upstream schema does not define at its level (in `spec`, at the top level, in a GatewayPool's `status`); ignored, read as absent; the message names the nearest defined field when one is close";
    UnknownKind => "N-UNKNOWN-KIND", Note, "a skipped kind of another API group, or without one (the message names the nearest kind this tool reads when one is close)";
    DuplicateIdentical => "N-DUPLICATE-IDENTICAL", Note, "copies of one object with the same kind, name and content (a file read twice over, overlapping exports); they count as one";
    CapZero => "N-CAP-ZERO", Note, "a `tunnelMTU` of 0, read as unset";
    SkippedFile => "N-SKIPPED-FILE", Note, "files of a directory given with `-f` that are not manifests by their name (not ending .yaml, .yml or .json in any letter case); not read";
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

/// A text that is no diagnostic code.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not a diagnostic code (E-CAP-RANGE, W-MISSING-SITE, ...)")]
pub struct ParseCodeError {
    /// The text that was given.
    pub text: String,
}

impl std::str::FromStr for Code {
    type Err = ParseCodeError;

    /// The stable text of a code ([`Code::as_str`]), exactly.
    fn from_str(s: &str) -> Result<Code, ParseCodeError> {
        Code::ALL
            .iter()
            .copied()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| ParseCodeError {
                text: s.to_string(),
            })
    }
}

impl Serialize for Code {
    /// As its stable text ([`Code::as_str`]).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Code, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Where a value came from: a source name (file path, `-`, or an API object), a 1-based line
/// and, where one point matters (a document that does not parse), a 1-based column.
/// Serialized as an object of those three fields (its text, [`fmt::Display`], does not parse
/// back: a source name may hold `:`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SourceLoc {
    /// The source name given to the decoder.
    pub source: Arc<str>,
    /// 1-based line; 0 when the source has no lines (objects read from an API server).
    pub line: u32,
    /// 1-based column; 0 when the whole line (or object) is meant.
    pub column: u32,
}

impl SourceLoc {
    /// Line `line` of `source`, no column.
    pub fn at_line(source: Arc<str>, line: u32) -> SourceLoc {
        SourceLoc {
            source,
            line,
            column: 0,
        }
    }
}

impl fmt::Display for SourceLoc {
    /// `file`, `file:line` or `file:line:column`, as compilers and editors write them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.column) {
            (0, _) => f.write_str(&self.source),
            (line, 0) => write!(f, "{}:{line}", self.source),
            (line, column) => write!(f, "{}:{line}:{column}", self.source),
        }
    }
}

/// One finding of the decoder, the validator or the resolver. Serialized with its fields' names
/// (`severity`, `code`, `object`, `field`, `message`, `source`), the code as its text.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Severity (always `code.severity()`).
    pub severity: Severity,
    /// Stable code.
    pub code: Code,
    /// `Kind/name`, `document N` when the object has no kind or name, a resource
    /// (`sites.net.unbounded-cloud.io`) for a kind a cluster does not serve, or `-`.
    pub object: String,
    /// Dotted field path with list indexes (`spec.sites[1]`), empty for the whole object.
    pub field: String,
    /// Human-readable explanation.
    pub message: String,
    /// `file:line`, when known.
    pub source: Option<SourceLoc>,
}

impl Diagnostic {
    /// A diagnostic with the severity of its code.
    pub fn new(
        code: Code,
        object: impl Into<String>,
        field: impl Into<String>,
        message: impl Into<String>,
        source: Option<SourceLoc>,
    ) -> Self {
        Diagnostic {
            severity: code.severity(),
            code,
            object: object.into(),
            field: field.into(),
            message: message.into(),
            source,
        }
    }

    /// The output order: severity, code, object, field (then message and source for stability).
    pub fn sort_key(&self) -> (Severity, &str, &str, &str, &str) {
        (
            self.severity,
            self.code.as_str(),
            &self.object,
            &self.field,
            &self.message,
        )
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(src) = &self.source {
            write!(f, "{src}: ")?;
        }
        write!(f, "{} {} {}", self.severity, self.code, self.object)?;
        if !self.field.is_empty() {
            write!(f, " {}", self.field)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// The output order of two diagnostics: by [`Diagnostic::sort_key`], then by source.
pub fn output_order(a: &Diagnostic, b: &Diagnostic) -> std::cmp::Ordering {
    a.sort_key()
        .cmp(&b.sort_key())
        .then_with(|| a.source.cmp(&b.source))
}

/// Sorts diagnostics into output order ([`output_order`], stable) and removes exact
/// duplicates.
pub fn sort_diagnostics(diags: &mut Vec<Diagnostic>) {
    diags.sort_by(output_order);
    diags.dedup();
}
