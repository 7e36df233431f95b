//! The tolerant decoder: `(source name, bytes)` in, raw objects with per-field locations and
//! diagnostics out. A key the kind's upstream schema does not define is reported
//! (`W-UNKNOWN-FIELD`, see [`crate::schema`]) and ignored; a field of the wrong type is reported and
//! read as absent; a document that fails to decode costs only itself.
//!
//! This module turns sources into documents and documents into objects of a recognised kind;
//! `object` reads one object, dispatching to a reader per kind (`site`, `pool`, `node`,
//! `relation`) built on the typed field accessors of `fields`.

mod fields;
mod intern;
mod node;
mod object;
mod pool;
mod raw;
mod relation;
mod site;

pub use raw::{
    Addrs, Cidrs, Member, Meta, RawCap, RawGatewayPoolNode, RawNode, RawObject, RawPathEntry,
    RawPathMtus, RawPool, RawRelation, RawSite, RawSlice, RawSliceNode, RawStatusNode, RawUnderlay,
    site_label,
};

use crate::broken::DocError;
use crate::diag::{Code, Diagnostic, SourceLoc};
use crate::schema;
use crate::tree::{self, Node, Value};
use crate::vocab::{API_GROUP, API_VERSION, Kind, READ_API_GROUPS};
use fields::Cx;
use std::fmt;
use std::sync::Arc;

/// What decoding a set of sources produced.
#[derive(Clone, Debug, Default)]
pub struct Decoded {
    /// Objects of the recognised kinds, in input order.
    pub objects: Vec<RawObject>,
    /// Findings that belong to no object (documents that failed, skipped kinds).
    pub diagnostics: Vec<Diagnostic>,
    /// Label keys and values, shared between the objects that repeat them.
    strings: intern::Interner,
}

impl Decoded {
    /// Decodes one more source into this set.
    ///
    /// A source is split into chunks at `---` lines so that a broken document costs only
    /// itself. Parsing each chunk with a parser of its own costs a parser per document, so the
    /// whole source is first parsed with one; when that might not equal the chunk-by-chunk
    /// parse (an error, a `---` line the parser did not take as a document start right away)
    /// what it added is dropped and the chunks are parsed one by one.
    pub fn add_source(&mut self, source: &str, bytes: &[u8]) {
        let source: Arc<str> = Arc::from(source);
        let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
        let chunks = tree::split_document_bytes(bytes);
        // About one object per document: one allocation of the final size rather than every
        // smaller copy left behind, freed but resident, as the list grows.
        self.objects.reserve(chunks.len());
        let mut parser = tree::DocParser::default();
        if let Ok(text) = std::str::from_utf8(bytes)
            && tree::whole_pass_applies(text)
        {
            let boundaries: Vec<u32> = chunks.iter().skip(1).map(|(line, _)| *line).collect();
            let (objects, diagnostics) = (self.objects.len(), self.diagnostics.len());
            let mut doc_no = 0usize;
            let mut emit = |doc| self.add_doc(&source, &mut doc_no, doc);
            if parser.parse_whole(text, &boundaries, &mut emit) {
                return;
            }
            self.objects.truncate(objects);
            self.diagnostics.truncate(diagnostics);
        }
        let mut doc_no = 0usize;
        for (first_line, chunk) in chunks {
            let mut emit = |doc| self.add_doc(&source, &mut doc_no, doc);
            parse_chunk(&mut parser, first_line, chunk, &mut emit);
        }
    }

    /// Adds the next document of a source (`doc_no` counts them): its objects, or why it
    /// failed, naming the object it was meant to be when a lenient scan recovers it.
    fn add_doc(&mut self, source: &Arc<str>, doc_no: &mut usize, doc: tree::ParsedDoc) {
        *doc_no = doc_no.saturating_add(1);
        let label = DocLabel::Document(*doc_no);
        match doc.result {
            Ok(root) => self.add_node(source, label, root),
            Err(e) => self.diagnostics.push(Diagnostic::new(
                Code::Decode,
                match e.object {
                    Some(o) if o.contains('/') => o,
                    Some(kind) => format!("{kind} ({label})"),
                    None => label.to_string(),
                },
                "",
                e.message,
                Some(SourceLoc {
                    source: source.clone(),
                    line: e.line,
                    column: e.column,
                }),
            )),
        }
    }

    /// Adds one object (or `List`) given as JSON, e.g. a Kubernetes `DynamicObject`.
    pub fn add_json(&mut self, source: &str, value: serde_json::Value) {
        let source: Arc<str> = Arc::from(source);
        self.add_node(&source, DocLabel::Object, Node::from(value));
    }

    /// Adds one document: a `List`'s items one by one, an object of a recognised kind as a
    /// [`RawObject`]; anything else is a finding.
    fn add_node(&mut self, source: &Arc<str>, label: DocLabel<'_>, root: Node) {
        let loc = |line: u32| SourceLoc::at_line(source.clone(), line);
        let Value::Map(_) = &root.value else {
            if root.value != Value::Null {
                self.diagnostics.push(Diagnostic::new(
                    Code::Decode,
                    label.to_string(),
                    "",
                    format!("a document must be an object, found a {}", root.type_name()),
                    Some(loc(root.line)),
                ));
            }
            return;
        };
        let kind = match root.get("kind").map(|e| &e.node.value) {
            Some(Value::Str(k)) => k.as_str(),
            _ => {
                self.diagnostics.push(Diagnostic::new(
                    Code::Decode,
                    label.to_string(),
                    "kind",
                    "the document has no `kind`",
                    Some(loc(root.line)),
                ));
                return;
            }
        };
        if kind == "List" || (kind.ends_with("List") && root.get("items").is_some()) {
            let kind = kind.to_string();
            self.add_list_items(source, label, &kind, root);
            return;
        }
        let (group, version) = api_version(&root);
        let name = object_name(&root);
        let kind_id = match recognise(kind, group, version) {
            Recognised::Kind(k) => k,
            Recognised::UnknownVersion(k) => {
                self.skip_unknown_version(k, version, name, loc(root.line));
                return;
            }
            Recognised::No => {
                self.skip_unknown_kind(kind, group, name, loc(root.line));
                return;
            }
        };
        let Some(name) = name else {
            self.diagnostics.push(Diagnostic::new(
                Code::MissingName,
                format!("{kind} ({label})"),
                "metadata.name",
                "the object has no name; it is ignored",
                Some(loc(root.line)),
            ));
            return;
        };
        let cx = Cx::new(source, kind_id, name);
        let obj = cx.read_object(
            kind_id,
            &root,
            name.to_string(),
            Some(loc(root.line)),
            &mut self.strings,
        );
        self.objects.push(obj);
    }

    /// Adds each item of a `List` (`kind` ends in `List`) as a document of its own; the items
    /// move out of the list.
    fn add_list_items(&mut self, source: &Arc<str>, label: DocLabel<'_>, kind: &str, root: Node) {
        let items = match root.value {
            Value::Map(entries) => entries.into_iter().find(|e| e.key == "items"),
            _ => None,
        };
        let Some(items) = items else {
            return;
        };
        match items.node.value {
            Value::Seq(items) => {
                for (i, item) in items.into_iter().enumerate() {
                    self.add_node(source, DocLabel::Item(&label, i), item);
                }
            }
            Value::Null => {}
            _ => {
                let found = items.node.type_name();
                self.diagnostics.push(Diagnostic::new(
                    Code::FieldType,
                    format!("{kind} ({label})"),
                    "items",
                    format!("expected a list, found {found}; nothing in it is read"),
                    Some(SourceLoc::at_line(source.clone(), items.node.line)),
                ));
            }
        }
    }

    /// A document of a kind this tool does not read: `E-UNKNOWN-KIND` in this project's API
    /// group [`API_GROUP`] (a kind it should define: a misspelling, or input for another version
    /// of the tool), `N-UNKNOWN-KIND` in any other group (the shorter spelling of ours
    /// included) or without one; the message suggests the nearest kind read in its group.
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
        let (code, why) = if group == API_GROUP {
            (
                Code::UnknownOwnKind,
                format!("API group {group} defines no kind {kind}; the object is skipped{hint}"),
            )
        } else if group == "?" {
            (
                Code::UnknownKind,
                format!("kind {kind} is not one this tool reads; skipped{hint}"),
            )
        } else {
            (
                Code::UnknownKind,
                format!(
                    "kind {kind} of API group {} is not one this tool reads; skipped{hint}",
                    if group.is_empty() { "core" } else { group }
                ),
            )
        };
        self.diagnostics
            .push(Diagnostic::new(code, object, "", why, Some(loc)));
    }

    /// `E-UNKNOWN-VERSION`: a kind of this project's group in a version other than the one
    /// this tool reads; its fields may mean something else there, so the object is skipped.
    fn skip_unknown_version(
        &mut self,
        kind: Kind,
        version: &str,
        name: Option<&str>,
        loc: SourceLoc,
    ) {
        let object = match name {
            Some(n) => format!("{kind}/{n}"),
            None => "-".to_string(),
        };
        self.diagnostics.push(Diagnostic::new(
            Code::UnknownVersion,
            object,
            "apiVersion",
            format!(
                "{kind} version {version:?} is not one this tool reads (only {API_GROUP}/{API_VERSION}); the object is skipped"
            ),
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

/// Parses one chunk of a source, handing its documents to `emit`; a chunk that is not UTF-8 is
/// one failed document, located at the line of its first invalid byte.
fn parse_chunk(
    parser: &mut tree::DocParser,
    first_line: u32,
    chunk: &[u8],
    emit: &mut impl FnMut(tree::ParsedDoc),
) {
    match std::str::from_utf8(chunk) {
        Ok(text) => parser.parse_chunk(text, first_line, emit),
        Err(e) => {
            let line = chunk
                .get(..e.valid_up_to())
                .map(|b| b.iter().filter(|&&c| c == b'\n').count())
                .unwrap_or(0);
            let line = first_line.saturating_add(u32::try_from(line).unwrap_or(u32::MAX));
            emit(tree::ParsedDoc {
                result: Err(DocError {
                    line,
                    column: 0,
                    message: "not UTF-8 text".to_string(),
                    object: None,
                }),
            });
        }
    }
}

/// Names a document in the findings that belong to no object, rendered only when one is
/// reported: `document 3` (the third of a source), `object` (one given as JSON), or
/// `document 3 items[2]` (an item of a `List`).
#[derive(Clone, Copy)]
enum DocLabel<'a> {
    Document(usize),
    Object,
    Item(&'a DocLabel<'a>, usize),
}

impl fmt::Display for DocLabel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DocLabel::Document(n) => write!(f, "document {n}"),
            DocLabel::Object => f.write_str("object"),
            DocLabel::Item(list, i) => write!(f, "{list} items[{i}]"),
        }
    }
}

/// The API group and version of a document's `apiVersion`: group `""` for the core group
/// (`v1`), `"?"` when the document has no `apiVersion`.
fn api_version(root: &Node) -> (&str, &str) {
    match root.get("apiVersion").map(|e| &e.node.value) {
        Some(Value::Str(v)) => v.rsplit_once('/').unwrap_or(("", v)),
        _ => ("?", ""),
    }
}

/// `metadata.name`, when it is a non-empty string.
fn object_name(root: &Node) -> Option<&str> {
    root.get("metadata")
        .and_then(|m| m.node.get("name"))
        .and_then(|n| match &n.node.value {
            Value::Str(s) if !s.is_empty() => Some(s.as_str()),
            _ => None,
        })
}

/// How a document of kind `kind` in API group `group` and `version` is read.
enum Recognised {
    /// As this kind.
    Kind(Kind),
    /// A kind of this project's group in a version this tool does not read.
    UnknownVersion(Kind),
    /// Not at all: an unknown kind, or a kind of another group.
    No,
}

/// The kind a document is read as: a `Node` of the core group, or one of this project's kinds
/// (exact spelling) in its groups (in [`API_GROUP`] only at [`API_VERSION`], the one version
/// it defines); without an `apiVersion` either.
fn recognise(kind: &str, group: &str, version: &str) -> Recognised {
    let ours = READ_API_GROUPS.contains(&group);
    let found = match (kind, ours, group) {
        ("Node", _, "" | "?") => Some(Kind::Node),
        (k, true, _) | (k, false, "?") => {
            Kind::parse_ci(k).filter(|k| *k != Kind::Node && k.as_str() == kind)
        }
        _ => None,
    };
    match found {
        Some(k) if group == API_GROUP && version != API_VERSION => Recognised::UnknownVersion(k),
        Some(k) => Recognised::Kind(k),
        None => Recognised::No,
    }
}
