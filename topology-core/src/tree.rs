//! A small spanned value tree for YAML and JSON documents, and the stream splitter.
//!
//! YAML parsers stop at the first syntax error, so a stream is split into documents here (at
//! `---` lines, keeping each one's line offset) and each document is parsed on its own: a broken
//! document costs only itself. The tree keeps a 1-based line for every node and map key. Limits
//! keep hostile input cheap: nesting depth, alias expansion (a budget of nodes per document), and
//! no recursion on input-controlled depth beyond [`MAX_DEPTH`].

use saphyr_parser::{Event, Parser, ScalarStyle};
use std::borrow::Cow;

/// Deepest nesting accepted in one document.
pub const MAX_DEPTH: usize = 64;
/// Most nodes one document may produce, aliases expanded (alias bombs stop here).
pub const MAX_NODES: usize = 2_000_000;

/// A scalar or collection value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`, `~` or empty.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer that fits i128.
    Int(i128),
    /// A float, or an integer literal too large for i128.
    Float(f64),
    /// A string.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping with its keys (in input order) and the key lines.
    Map(Vec<Entry>),
}

/// A map entry: key, the key's line, and the value.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The key as text (non-scalar keys are rendered as `?`).
    pub key: String,
    /// 1-based line of the key (0 when unknown).
    pub line: u32,
    /// The value.
    pub node: Node,
}

/// A value with the 1-based line where it starts (0 when the source has no lines).
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// 1-based line of the value.
    pub line: u32,
    /// The value.
    pub value: Value,
}

impl Node {
    /// A node without a line (from JSON read over an API).
    pub fn unlined(value: Value) -> Self {
        Node { line: 0, value }
    }

    /// The value of key `key` when this is a map (first occurrence).
    pub fn get(&self, key: &str) -> Option<&Entry> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|e| e.key == key),
            _ => None,
        }
    }

    /// A short name of the value's type for messages.
    pub fn type_name(&self) -> &'static str {
        match self.value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "number",
            Value::Str(_) => "string",
            Value::Seq(_) => "list",
            Value::Map(_) => "object",
        }
    }

    /// Counts nodes (iteratively) for the alias budget.
    fn size(&self) -> usize {
        let mut count = 0usize;
        let mut stack: Vec<&Node> = vec![self];
        while let Some(n) = stack.pop() {
            count = count.saturating_add(1);
            match &n.value {
                Value::Seq(items) => stack.extend(items.iter()),
                Value::Map(entries) => stack.extend(entries.iter().map(|e| &e.node)),
                _ => {}
            }
        }
        count
    }
}

impl From<serde_json::Value> for Node {
    /// Converts JSON (e.g. a Kubernetes `DynamicObject`) into an unlined tree.
    fn from(v: serde_json::Value) -> Self {
        json_to_node(v, 0)
    }
}

fn json_to_node(v: serde_json::Value, depth: usize) -> Node {
    use serde_json::Value as J;
    if depth > MAX_DEPTH {
        return Node::unlined(Value::Null);
    }
    let value = match v {
        J::Null => Value::Null,
        J::Bool(b) => Value::Bool(b),
        J::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Int(i128::from(i))
            } else if let Some(u) = n.as_u64() {
                Value::Int(i128::from(u))
            } else {
                Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        J::String(s) => Value::Str(s),
        J::Array(a) => Value::Seq(
            a.into_iter()
                .map(|x| json_to_node(x, depth.saturating_add(1)))
                .collect(),
        ),
        J::Object(o) => Value::Map(
            o.into_iter()
                .map(|(key, x)| Entry {
                    key,
                    line: 0,
                    node: json_to_node(x, depth.saturating_add(1)),
                })
                .collect(),
        ),
    };
    Node::unlined(value)
}

/// One parsed document or the reason it failed.
#[derive(Debug)]
pub struct ParsedDoc {
    /// The root node, or the parse error (with its 1-based line).
    pub result: Result<Node, (u32, String)>,
}

#[cfg(test)]
/// Splits a stream into chunks at `---` document markers (column 0), keeping line offsets.
/// Each chunk starts at its marker line, so parsers see the marker and lines stay true.
pub fn split_documents(text: &str) -> Vec<(u32, &str)> {
    let mut chunks = Vec::new();
    let mut start_byte = 0usize;
    let mut start_line = 1u32;
    let mut line_no = 1u32;
    let mut offset = 0usize;
    for line in text.split_inclusive('\n') {
        if line_no > 1 && is_doc_start(line) {
            if let Some(chunk) = text.get(start_byte..offset) {
                chunks.push((start_line, chunk));
            }
            start_byte = offset;
            start_line = line_no;
        }
        offset = offset.saturating_add(line.len());
        line_no = line_no.saturating_add(1);
    }
    if let Some(chunk) = text.get(start_byte..) {
        chunks.push((start_line, chunk));
    }
    chunks
}

/// Splits raw bytes into documents at `---` lines, keeping line offsets, so a document that is
/// not UTF-8 costs only itself.
pub fn split_document_bytes(bytes: &[u8]) -> Vec<(u32, &[u8])> {
    let mut chunks = Vec::new();
    let mut start_byte = 0usize;
    let mut start_line = 1u32;
    let mut line_no = 1u32;
    let mut offset = 0usize;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let marker = line.strip_prefix(b"---").is_some_and(|rest| {
            rest.is_empty() || matches!(rest.first(), Some(b' ' | b'\t' | b'\r' | b'\n'))
        });
        if line_no > 1 && marker {
            if let Some(chunk) = bytes.get(start_byte..offset) {
                chunks.push((start_line, chunk));
            }
            start_byte = offset;
            start_line = line_no;
        }
        offset = offset.saturating_add(line.len());
        line_no = line_no.saturating_add(1);
    }
    if let Some(chunk) = bytes.get(start_byte..) {
        chunks.push((start_line, chunk));
    }
    chunks
}

/// Parses one chunk that starts at 1-based line `first_line` (see [`split_documents`]).
pub fn parse_document_chunk(chunk: &str, first_line: u32) -> Vec<ParsedDoc> {
    let mut docs = Vec::new();
    parse_chunk(chunk, first_line, &mut docs);
    docs
}

#[cfg(test)]
fn is_doc_start(line: &str) -> bool {
    let rest = match line.strip_prefix("---") {
        Some(r) => r,
        None => return false,
    };
    rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n'])
}

#[cfg(test)]
/// Parses every document of a YAML or JSON stream. Never panics; a document that fails costs
/// only itself. Empty documents (comments only) are dropped.
pub fn parse_stream(text: &str) -> Vec<ParsedDoc> {
    let mut docs = Vec::new();
    for (first_line, chunk) in split_documents(text) {
        parse_chunk(chunk, first_line, &mut docs);
    }
    docs
}

struct Frame {
    line: u32,
    anchor: usize,
    kind: FrameKind,
}

enum FrameKind {
    Seq(Vec<Node>),
    Map {
        entries: Vec<Entry>,
        pending_key: Option<(String, u32)>,
    },
}

fn parse_chunk(chunk: &str, first_line: u32, out: &mut Vec<ParsedDoc>) {
    let line_base = first_line.saturating_sub(1);
    let abs = |l: usize| -> u32 {
        u32::try_from(l)
            .unwrap_or(u32::MAX)
            .saturating_add(line_base)
    };
    let mut parser = Parser::new_from_str(chunk);
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: rustc_hash::FxHashMap<usize, Node> = rustc_hash::FxHashMap::default();
    let mut budget = MAX_NODES;
    let mut root: Option<Node> = None;
    let mut in_doc = false;
    loop {
        let (event, span) = match parser.next() {
            None => break,
            Some(Ok(ev)) => ev,
            Some(Err(e)) => {
                let line = abs(e.marker().line());
                out.push(ParsedDoc {
                    result: Err((line, e.info().to_string())),
                });
                return;
            }
        };
        let line = abs(span.start.line());
        let finished: Option<(Node, usize)> = match event {
            Event::StreamStart | Event::Nothing => None,
            Event::StreamEnd => break,
            Event::DocumentStart(_) => {
                in_doc = true;
                root = None;
                anchors.clear();
                budget = MAX_NODES;
                None
            }
            Event::DocumentEnd => {
                if in_doc {
                    if let Some(node) = root.take() {
                        out.push(ParsedDoc { result: Ok(node) });
                    } else {
                        // An empty document: nothing to report.
                    }
                }
                in_doc = false;
                None
            }
            Event::Alias(id) => match anchors.get(&id) {
                Some(node) => {
                    let size = node.size();
                    if size > budget {
                        out.push(ParsedDoc {
                            result: Err((
                                line,
                                format!(
                                    "alias expansion exceeds {MAX_NODES} nodes (an alias bomb?)"
                                ),
                            )),
                        });
                        return;
                    }
                    budget = budget.saturating_sub(size);
                    let mut n = node.clone();
                    n.line = line;
                    Some((n, 0))
                }
                None => {
                    out.push(ParsedDoc {
                        result: Err((line, "alias to an unknown anchor".to_string())),
                    });
                    return;
                }
            },
            Event::Scalar(text, style, anchor, tag) => {
                budget = budget.saturating_sub(1);
                let tag_suffix = tag.as_ref().map(|t| t.suffix.clone());
                Some((
                    Node {
                        line,
                        value: resolve_scalar(text, style, tag_suffix.as_deref()),
                    },
                    anchor,
                ))
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                if stack.len() >= MAX_DEPTH {
                    out.push(ParsedDoc {
                        result: Err((line, format!("nesting deeper than {MAX_DEPTH} levels"))),
                    });
                    return;
                }
                budget = budget.saturating_sub(1);
                let kind = if matches!(event, Event::SequenceStart(..)) {
                    FrameKind::Seq(Vec::new())
                } else {
                    FrameKind::Map {
                        entries: Vec::new(),
                        pending_key: None,
                    }
                };
                stack.push(Frame { line, anchor, kind });
                None
            }
            Event::SequenceEnd | Event::MappingEnd => match stack.pop() {
                Some(frame) => {
                    let value = match frame.kind {
                        FrameKind::Seq(items) => Value::Seq(items),
                        FrameKind::Map { entries, .. } => Value::Map(entries),
                    };
                    Some((
                        Node {
                            line: frame.line,
                            value,
                        },
                        frame.anchor,
                    ))
                }
                None => None,
            },
        };
        if budget == 0 {
            out.push(ParsedDoc {
                result: Err((line, format!("document exceeds {MAX_NODES} nodes"))),
            });
            return;
        }
        if let Some((node, anchor)) = finished {
            if anchor != 0 {
                anchors.insert(anchor, node.clone());
            }
            match stack.last_mut() {
                None => root = Some(node),
                Some(frame) => match &mut frame.kind {
                    FrameKind::Seq(items) => items.push(node),
                    FrameKind::Map {
                        entries,
                        pending_key,
                    } => match pending_key.take() {
                        None => {
                            let key = match node.value {
                                Value::Str(s) => s,
                                Value::Int(i) => i.to_string(),
                                Value::Bool(b) => b.to_string(),
                                Value::Null => String::new(),
                                Value::Float(f) => f.to_string(),
                                Value::Seq(_) | Value::Map(_) => "?".to_string(),
                            };
                            *pending_key = Some((key, node.line));
                        }
                        Some((key, kline)) => entries.push(Entry {
                            key,
                            line: kline,
                            node,
                        }),
                    },
                },
            }
        }
    }
    if in_doc && let Some(node) = root.take() {
        out.push(ParsedDoc { result: Ok(node) });
    }
}

/// Resolves a scalar by the YAML 1.2 core schema, plus the YAML 1.1 booleans that kubectl's
/// YAML reader accepts (`yes`, `no`, `on`, `off`).
fn resolve_scalar(text: Cow<'_, str>, style: ScalarStyle, tag: Option<&str>) -> Value {
    match tag {
        Some("str") => return Value::Str(text.into_owned()),
        Some("int") => {
            if let Some(v) = parse_int(&text) {
                return v;
            }
        }
        Some("bool") | Some("null") | Some("float") => {}
        _ => {}
    }
    if style != ScalarStyle::Plain {
        return Value::Str(text.into_owned());
    }
    let t: &str = &text;
    match t {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" => {
            return Value::Bool(true);
        }
        "false" | "False" | "FALSE" | "no" | "No" | "NO" | "off" | "Off" | "OFF" => {
            return Value::Bool(false);
        }
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => {
            return Value::Float(f64::INFINITY);
        }
        "-.inf" | "-.Inf" | "-.INF" => return Value::Float(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return Value::Float(f64::NAN),
        _ => {}
    }
    if let Some(v) = parse_int(t) {
        return v;
    }
    if looks_like_float(t)
        && let Ok(f) = t.parse::<f64>()
    {
        return Value::Float(f);
    }
    Value::Str(text.into_owned())
}

fn parse_int(t: &str) -> Option<Value> {
    let (neg, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    if digits.is_empty() {
        return None;
    }
    let (radix, body) = if let Some(h) = digits.strip_prefix("0x") {
        (16, h)
    } else if let Some(o) = digits.strip_prefix("0o") {
        (8, o)
    } else {
        (10, digits)
    };
    if body.is_empty() || !body.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    match i128::from_str_radix(body, radix) {
        Ok(v) => Some(Value::Int(if neg { v.saturating_neg() } else { v })),
        // Too large for i128: keep it as a (huge) number, not a string.
        Err(_) => Some(Value::Float(if neg {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        })),
    }
}

fn looks_like_float(t: &str) -> bool {
    let body = t.strip_prefix(['-', '+']).unwrap_or(t);
    !body.is_empty()
        && body.chars().any(|c| c.is_ascii_digit())
        && body
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '-' | '+'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_at_markers_keeping_lines() {
        let text = "a: 1\n---\nb: 2\n--- # c\nc: 3\n";
        let chunks = split_documents(text);
        assert_eq!(chunks.len(), 3);
        assert_eq!(chunks[0].0, 1);
        assert_eq!(chunks[1].0, 2);
        assert_eq!(chunks[2].0, 4);
    }

    #[test]
    fn lines_are_absolute() {
        let docs = parse_stream("---\na: 1\n---\nb:\n  c: [1, 2]\n");
        assert_eq!(docs.len(), 2);
        let Ok(n) = &docs[1].result else { panic!() };
        let b = n.get("b").unwrap();
        assert_eq!(b.line, 4);
        assert_eq!(b.node.get("c").unwrap().line, 5);
    }

    #[test]
    fn broken_middle_document_costs_only_itself() {
        let docs = parse_stream("a: 1\n---\nb: [unclosed\n---\nc: 3\n");
        assert_eq!(docs.len(), 3);
        assert!(docs[0].result.is_ok());
        assert!(docs[1].result.is_err());
        assert!(docs[2].result.is_ok());
    }

    #[test]
    fn scalars_resolve() {
        let docs = parse_stream(
            "a: 1400\nb: '1400'\nc: true\nd: ~\ne: 1.5\nf: 99999999999999999999999999999999999999999999\n",
        );
        let Ok(n) = &docs[0].result else { panic!() };
        assert_eq!(n.get("a").unwrap().node.value, Value::Int(1400));
        assert_eq!(n.get("b").unwrap().node.value, Value::Str("1400".into()));
        assert_eq!(n.get("c").unwrap().node.value, Value::Bool(true));
        assert_eq!(n.get("d").unwrap().node.value, Value::Null);
        assert_eq!(n.get("e").unwrap().node.value, Value::Float(1.5));
        assert!(matches!(n.get("f").unwrap().node.value, Value::Float(f) if f.is_infinite()));
    }

    #[test]
    fn alias_bomb_is_bounded() {
        let mut s = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..30 {
            let p = i - 1;
            s.push_str(&format!(
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
            ));
        }
        let docs = parse_stream(&s);
        assert_eq!(docs.len(), 1);
        assert!(docs[0].result.is_err());
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let s = "[".repeat(100_000);
        let docs = parse_stream(&s);
        assert!(docs.iter().all(|d| d.result.is_err()));
    }

    #[test]
    fn json_parses_with_lines() {
        let docs = parse_stream("{\n  \"kind\": \"Site\",\n  \"spec\": {\"tunnelMTU\": 1300}\n}\n");
        let Ok(n) = &docs[0].result else { panic!() };
        assert_eq!(n.get("spec").unwrap().line, 3);
    }
}
