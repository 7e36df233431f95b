//! The tolerant decoder: `(source name, bytes)` in, raw objects with per-field locations and
//! diagnostics out. A key the kind's upstream schema does not define is reported
//! (`W-UNKNOWN-FIELD`, see [`crate::schema`]) and ignored; a field of the wrong type is reported and
//! read as absent; a document that fails to decode costs only itself.
//!
//! This module turns sources into documents and documents into objects of a recognised kind;
//! `object` reads one object, dispatching to a reader per kind (`site`, `pool`, `node`,
//! `relation`) built on the typed field accessors of `fields`.

mod fields;
mod node;
mod object;
mod pool;
mod raw;
mod relation;
mod site;

pub use raw::{
    Member, Meta, RawCap, RawGatewayPoolNode, RawNode, RawObject, RawPool, RawRelation, RawSite,
    RawSlice, RawSliceNode, RawStatusNode, RawUnderlay, site_label,
};

use crate::diag::{Code, Diagnostic, SourceLoc};
use crate::schema;
use crate::tree::{self, Node, Value};
use crate::vocab::{Kind, READ_API_GROUPS};
use fields::Cx;
use std::sync::Arc;

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
            for doc in parse_chunk(first_line, chunk) {
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

    /// Adds one document: a `List`'s items one by one, an object of a recognised kind as a
    /// [`RawObject`]; anything else is a finding.
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
        if kind == "List" || (kind.ends_with("List") && root.get("items").is_some()) {
            self.add_list_items(source, doc_label, &kind, &root);
            return;
        }
        let group = api_group(&root);
        let name = object_name(&root);
        let Some(kind_id) = recognise(&kind, group) else {
            self.skip_unknown_kind(&kind, group, name.as_deref(), loc(root.line));
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
        let cx = Cx::new(source, kind_id, &name);
        let obj = cx.read_object(kind_id, &root, name, Some(loc(root.line)));
        self.objects.push(obj);
    }

    /// Adds each item of a `List` (`kind` ends in `List`) as a document of its own.
    fn add_list_items(&mut self, source: &Arc<str>, doc_label: &str, kind: &str, root: &Node) {
        match root.get("items").map(|e| (&e.node.value, e.node.line)) {
            Some((Value::Seq(items), _)) => {
                for (i, item) in items.iter().cloned().enumerate() {
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
                    Some(SourceLoc {
                        source: source.clone(),
                        line,
                    }),
                ));
            }
        }
    }

    /// `N-UNKNOWN-KIND` for a document of a kind this tool does not read, suggesting the nearest
    /// kind read in its API group.
    fn skip_unknown_kind(&mut self, kind: &str, group: &str, name: Option<&str>, loc: SourceLoc) {
        let object = match name {
            Some(n) => format!("{kind}/{n}"),
            None => "-".to_string(),
        };
        let ours = READ_API_GROUPS.contains(&group);
        // The kinds read in this group, for a suggestion; none for a foreign group.
        let readable = Kind::ALL.into_iter().filter(|k| match group {
            "?" => true,
            "" => *k == Kind::Node,
            _ => ours && *k != Kind::Node,
        });
        let hint = schema::nearest(kind, readable.map(Kind::as_str))
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
            Some(loc),
        ));
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

/// Parses one chunk of a source; a chunk that is not UTF-8 is one failed document, located at
/// the line of its first invalid byte.
fn parse_chunk(first_line: u32, chunk: &[u8]) -> Vec<tree::ParsedDoc> {
    match std::str::from_utf8(chunk) {
        Ok(text) => tree::parse_document_chunk(text, first_line),
        Err(e) => {
            let line = chunk
                .get(..e.valid_up_to())
                .map(|b| b.iter().filter(|&&c| c == b'\n').count())
                .unwrap_or(0);
            let line = first_line.saturating_add(u32::try_from(line).unwrap_or(u32::MAX));
            vec![tree::ParsedDoc {
                result: Err((line, "not UTF-8 text".to_string())),
            }]
        }
    }
}

/// The API group of a document's `apiVersion`: `""` for the core group (`v1`), `"?"` when the
/// document has no `apiVersion`.
fn api_group(root: &Node) -> &str {
    match root.get("apiVersion").map(|e| &e.node.value) {
        Some(Value::Str(v)) => v.rsplit_once('/').map(|(g, _)| g).unwrap_or(""),
        _ => "?",
    }
}

/// `metadata.name`, when it is a non-empty string.
fn object_name(root: &Node) -> Option<String> {
    root.get("metadata")
        .and_then(|m| m.node.get("name"))
        .and_then(|n| match &n.node.value {
            Value::Str(s) if !s.is_empty() => Some(s.clone()),
            _ => None,
        })
}

/// The kind a document of kind `kind` in API group `group` is read as: a `Node` of the core group,
/// or one of this project's kinds (exact spelling) in its groups; without an `apiVersion` either.
fn recognise(kind: &str, group: &str) -> Option<Kind> {
    let ours = READ_API_GROUPS.contains(&group);
    match (kind, ours, group) {
        ("Node", _, "") => Some(Kind::Node),
        ("Node", _, "?") => Some(Kind::Node),
        (k, true, _) | (k, false, "?") => {
            Kind::parse_ci(k).filter(|k| *k != Kind::Node && k.as_str() == kind)
        }
        _ => None,
    }
}
