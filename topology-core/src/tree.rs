//! A small spanned value tree for YAML and JSON documents, and the stream splitter.
//!
//! YAML parsers stop at the first syntax error, so a stream is split into documents here (at
//! `---` lines, keeping each one's line offset) and each document is parsed on its own: a broken
//! document costs only itself. A parser per document costs its own buffers, so a stream is first
//! parsed whole with one parser, and that pass is kept only where it provably gives what the
//! documents parsed one by one give ([`DocParser::parse_whole`]). The tree keeps a 1-based line
//! for every node and map key. Limits keep hostile input cheap: nesting depth, alias expansion (a
//! budget of nodes per document), and no recursion on input-controlled depth beyond
//! [`MAX_DEPTH`].

use crate::broken::{self, DocError};
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
    /// The root node, or why the document does not parse.
    pub result: Result<Node, DocError>,
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

/// Whether a stream (valid UTF-8) may be parsed whole ([`DocParser::parse_whole`]) rather than
/// chunk by chunk: it has no directive line (`%YAML`, `%TAG`: a chunk would see one without the
/// document it belongs to) and no carriage return outside a `\r\n` pair (the parser counts a
/// lone one as a line break, the splitter does not, so lines would differ).
pub fn whole_pass_applies(text: &str) -> bool {
    let bytes = text.as_bytes();
    // Most streams have neither byte (a fast search); otherwise look at each.
    if !bytes.contains(&b'%') && !bytes.contains(&b'\r') {
        return true;
    }
    let mut prev = b'\n';
    for &b in bytes {
        if (prev == b'\n' && b == b'%') || (prev == b'\r' && b != b'\n') {
            return false;
        }
        prev = b;
    }
    prev != b'\r'
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
    let mut parser = DocParser::default();
    for (first_line, chunk) in split_documents(text) {
        parser.parse_chunk(chunk, first_line, &mut |d| docs.push(d));
    }
    docs
}

/// Builds the documents of chunks from `saphyr-parser` events. Its buffers (the open
/// collections' children, the anchors) are kept from chunk to chunk, so a stream of many small
/// documents allocates little beyond the trees it returns: each collection's children are
/// gathered on a shared stack and moved into a vector of exactly their number when it closes.
#[derive(Default)]
pub struct DocParser {
    /// The open collections, outermost first.
    stack: Vec<Frame>,
    /// The finished items of the open sequences, innermost last.
    items: Vec<Node>,
    /// The finished entries of the open maps, innermost last.
    entries: Vec<Entry>,
    /// The anchored nodes of the current document by anchor id.
    anchors: rustc_hash::FxHashMap<usize, Node>,
    /// Nodes the current document may still produce (aliases expanded).
    budget: usize,
    /// The current document's root, once finished.
    root: Option<Node>,
    /// Whether a document is open.
    in_doc: bool,
    /// In a whole-stream pass, how many chunk boundaries the parse has passed.
    passed: usize,
}

/// An open collection: its line, its anchor (0 for none) and where its children start.
struct Frame {
    line: u32,
    anchor: usize,
    kind: FrameKind,
}

enum FrameKind {
    /// A sequence whose items start at this index of [`DocParser::items`].
    Seq(usize),
    /// A map whose entries start at this index of [`DocParser::entries`], and the key read
    /// whose value is pending.
    Map(usize, Option<(String, u32)>),
}

/// Why a chunk's parse stopped: the 1-based line, the 1-based column (0 when the parser gave
/// none) and the message.
struct Stop {
    line: u32,
    column: u32,
    message: String,
}

impl Stop {
    fn at(line: u32, message: impl Into<String>) -> Stop {
        Stop {
            line,
            column: 0,
            message: message.into(),
        }
    }
}

impl DocParser {
    /// Parses one chunk that starts at 1-based line `first_line` (see [`split_document_bytes`])
    /// and hands each of its documents to `emit`; an error ends the chunk with a failed
    /// document.
    pub fn parse_chunk(&mut self, chunk: &str, first_line: u32, emit: &mut impl FnMut(ParsedDoc)) {
        if let Err(stop) = self.run(chunk, first_line, &[], emit) {
            let error = broken::describe(chunk, first_line, stop.line, stop.column, &stop.message);
            emit(ParsedDoc { result: Err(error) });
        }
    }

    /// Parses a whole stream with one parser, handing each document to `emit`, and tells
    /// whether that equals parsing it chunk by chunk (`boundaries`: the first lines of the
    /// chunks after the first, ascending). It does when the parse has no error and, at each
    /// boundary, the parser starts a document (`---`) before any other event there: a parser
    /// at such a start is where a fresh one would be (anchors and lines aside, which are
    /// handled, and directives and lone carriage returns, which [`whole_pass_applies`] rules
    /// out). Content that runs into a boundary (an empty block scalar is located at the `---`
    /// line it ends at; at the end of a chunk, at its header) does not. When it returns
    /// `false`, the caller discards what was emitted and parses the chunks.
    pub fn parse_whole(
        &mut self,
        text: &str,
        boundaries: &[u32],
        emit: &mut impl FnMut(ParsedDoc),
    ) -> bool {
        let done = self.run(text, 1, boundaries, emit).is_ok();
        done && self.passed == boundaries.len()
    }

    /// Parses `text`, which starts at 1-based line `first_line`, handing each finished
    /// document to `emit`; stops at the first error, or at the first event at or past one of
    /// `boundaries` that is not the document start there.
    fn run(
        &mut self,
        text: &str,
        first_line: u32,
        boundaries: &[u32],
        emit: &mut impl FnMut(ParsedDoc),
    ) -> Result<(), Stop> {
        self.reset();
        let line_base = first_line.saturating_sub(1);
        let abs = |l: usize| -> u32 {
            u32::try_from(l)
                .unwrap_or(u32::MAX)
                .saturating_add(line_base)
        };
        for next in Parser::new_from_str(text) {
            let (event, span) = next.map_err(|e| Stop {
                line: abs(e.marker().line()),
                column: u32::try_from(e.marker().col())
                    .unwrap_or(u32::MAX)
                    .saturating_add(1),
                message: e.info().to_string(),
            })?;
            let line = abs(span.start.line());
            self.pass_boundary(boundaries, &event, line)?;
            if !self.event(event, line, emit)? {
                break;
            }
        }
        if self.in_doc
            && let Some(node) = self.root.take()
        {
            emit(ParsedDoc { result: Ok(node) });
        }
        Ok(())
    }

    /// Counts the boundary at `line` passed when `event` is the document start there; any
    /// other event at or past the next boundary, but the ends of the previous document's
    /// collections and of the document, stops the pass.
    fn pass_boundary(
        &mut self,
        boundaries: &[u32],
        event: &Event<'_>,
        line: u32,
    ) -> Result<(), Stop> {
        let Some(&next) = boundaries.get(self.passed) else {
            return Ok(());
        };
        match event {
            _ if line < next => Ok(()),
            Event::DocumentStart(true) if line == next => {
                self.passed = self.passed.saturating_add(1);
                Ok(())
            }
            // The previous document closing at the marker (their lines are not kept).
            Event::SequenceEnd | Event::MappingEnd | Event::DocumentEnd if line == next => Ok(()),
            _ => Err(Stop::at(
                line,
                "the parser did not start a document at this `---`",
            )),
        }
    }

    /// Forgets everything of the previous chunk (its buffers keep their capacity).
    fn reset(&mut self) {
        self.passed = 0;
        self.stack.clear();
        self.items.clear();
        self.entries.clear();
        self.anchors.clear();
        self.budget = MAX_NODES;
        self.root = None;
        self.in_doc = false;
    }

    /// Applies one event at 1-based `line`; `Ok(false)` at the end of the stream.
    fn event(
        &mut self,
        event: Event<'_>,
        line: u32,
        emit: &mut impl FnMut(ParsedDoc),
    ) -> Result<bool, Stop> {
        let finished = match event {
            Event::StreamStart | Event::Nothing => None,
            Event::StreamEnd => return Ok(false),
            Event::DocumentStart(_) => {
                self.in_doc = true;
                self.root = None;
                self.anchors.clear();
                self.budget = MAX_NODES;
                None
            }
            Event::DocumentEnd => {
                if self.in_doc
                    && let Some(node) = self.root.take()
                {
                    emit(ParsedDoc { result: Ok(node) });
                }
                self.in_doc = false;
                None
            }
            Event::Alias(id) => Some((self.alias(id, line)?, 0)),
            Event::Scalar(text, style, anchor, tag) => {
                self.budget = self.budget.saturating_sub(1);
                let tag_suffix = tag.as_ref().map(|t| t.suffix.as_str());
                let value = resolve_scalar(text, style, tag_suffix);
                Some((Node { line, value }, anchor))
            }
            Event::SequenceStart(anchor, _) => {
                self.open(line, anchor, FrameKind::Seq(self.items.len()))?;
                None
            }
            Event::MappingStart(anchor, _) => {
                self.open(line, anchor, FrameKind::Map(self.entries.len(), None))?;
                None
            }
            Event::SequenceEnd | Event::MappingEnd => self.close(),
        };
        if self.budget == 0 {
            return Err(Stop::at(
                line,
                format!("document exceeds {MAX_NODES} nodes"),
            ));
        }
        if let Some((node, anchor)) = finished {
            if anchor != 0 {
                self.anchors.insert(anchor, node.clone());
            }
            self.attach(node);
        }
        Ok(true)
    }

    /// A copy of the node anchored as `id`, at `line`, charged to the alias budget.
    fn alias(&mut self, id: usize, line: u32) -> Result<Node, Stop> {
        let Some(node) = self.anchors.get(&id) else {
            return Err(Stop::at(line, "alias to an unknown anchor"));
        };
        let size = node.size();
        if size > self.budget {
            return Err(Stop::at(
                line,
                format!("alias expansion exceeds {MAX_NODES} nodes (an alias bomb?)"),
            ));
        }
        self.budget = self.budget.saturating_sub(size);
        let mut n = node.clone();
        n.line = line;
        Ok(n)
    }

    /// Opens a collection, within the nesting limit.
    fn open(&mut self, line: u32, anchor: usize, kind: FrameKind) -> Result<(), Stop> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(Stop::at(
                line,
                format!("nesting deeper than {MAX_DEPTH} levels"),
            ));
        }
        self.budget = self.budget.saturating_sub(1);
        self.stack.push(Frame { line, anchor, kind });
        Ok(())
    }

    /// Closes the innermost collection: its children move into a vector of their own.
    fn close(&mut self) -> Option<(Node, usize)> {
        let frame = self.stack.pop()?;
        let value = match frame.kind {
            FrameKind::Seq(first) => Value::Seq(tail(&mut self.items, first)),
            FrameKind::Map(first, _) => Value::Map(tail(&mut self.entries, first)),
        };
        Some((
            Node {
                line: frame.line,
                value,
            },
            frame.anchor,
        ))
    }

    /// Puts a finished node where it belongs: the root, the next item of a sequence, or a map's
    /// key (rendered as text) or value.
    fn attach(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some(Frame {
                kind: FrameKind::Seq(_),
                ..
            }) => self.items.push(node),
            Some(Frame {
                kind: FrameKind::Map(_, pending_key),
                ..
            }) => match pending_key.take() {
                None => {
                    let line = node.line;
                    *pending_key = Some((key_text(node.value), line));
                }
                Some((key, line)) => self.entries.push(Entry { key, line, node }),
            },
        }
    }
}

/// A map key as text: a string as itself, other scalars rendered, collections as `?`.
fn key_text(value: Value) -> String {
    match value {
        Value::Str(s) => s,
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => String::new(),
        Value::Float(f) => f.to_string(),
        Value::Seq(_) | Value::Map(_) => "?".to_string(),
    }
}

/// The elements of `buffer` from `first` on, moved into a vector of exactly their number.
fn tail<T>(buffer: &mut Vec<T>, first: usize) -> Vec<T> {
    buffer.drain(first.min(buffer.len())..).collect()
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
    // The character check first: it stops at the first letter of a word, the digit search would
    // read all of it.
    !body.is_empty()
        && body
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'-' | b'+'))
        && body.bytes().any(|c| c.is_ascii_digit())
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

    /// The documents of `text` parsed whole, when that pass applies and equals the chunks.
    fn parse_whole_stream(text: &str) -> Option<Vec<ParsedDoc>> {
        if !whole_pass_applies(text) {
            return None;
        }
        let boundaries: Vec<u32> = split_documents(text).iter().skip(1).map(|c| c.0).collect();
        let mut docs = Vec::new();
        let mut parser = DocParser::default();
        parser
            .parse_whole(text, &boundaries, &mut |d| docs.push(d))
            .then_some(docs)
    }

    fn results(docs: &[ParsedDoc]) -> Vec<&Result<Node, DocError>> {
        docs.iter().map(|d| &d.result).collect()
    }

    #[test]
    fn whole_pass_equals_the_chunks_or_declines() {
        let ok = "---\na: 1\nb: [x, &k y, *k]\n---\nc: {d: 2}\n---\n- e\n";
        let whole = parse_whole_stream(ok).expect("a plain stream is parsed whole");
        assert_eq!(results(&whole), results(&parse_stream(ok)));
        for declined in [
            // An error anywhere.
            "a: 1\n---\nb: [unclosed\n---\nc: 3\n",
            // An empty block scalar ends at the marker when parsed whole, at its header alone.
            "a: |\n---\nb: 1\n",
            "--- >\n---\nb: 1\n",
            // An alias to an anchor of an earlier document.
            "a: &x 1\n---\nb: *x\n",
            // An empty document: its null sits on the next marker.
            "a: 1\n---\n---\nb: 1\n",
        ] {
            assert!(parse_whole_stream(declined).is_none(), "{declined:?}");
        }
    }

    #[test]
    fn whole_pass_rules_out_directives_and_lone_carriage_returns() {
        assert!(whole_pass_applies("a: 1\r\n---\r\nb: 50%\n"));
        assert!(!whole_pass_applies("%YAML 1.2\n---\na: 1\n"));
        assert!(!whole_pass_applies(
            "a: 1\n...\n%TAG ! tag:x,2000:\n---\nb: 1\n"
        ));
        assert!(!whole_pass_applies("a: 1\rb: 2\n"));
        assert!(!whole_pass_applies("a: 1\r"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Streams of fragments around markers: whenever the whole pass is taken, it gives what
        /// the chunks give.
        #[test]
        fn whole_pass_never_differs(parts in proptest::collection::vec(0usize..FRAGMENTS.len(), 0..24)) {
            let text: String = parts.iter().filter_map(|i| FRAGMENTS.get(*i).copied()).collect();
            if let Some(whole) = parse_whole_stream(&text) {
                let chunks = parse_stream(&text);
                proptest::prop_assert_eq!(results(&whole), results(&chunks));
            }
        }
    }

    const FRAGMENTS: &[&str] = &[
        "---\n",
        "--- ",
        "--- |\n",
        "--- >-\n",
        "...\n",
        "a: 1\n",
        "b:\n",
        "  c: x\n",
        "- d\n",
        "-\n",
        "e: |\n",
        "e: |+\n",
        "  text\n",
        "\n",
        "f: [1,\n",
        "  2]\n",
        "g: 'q\n",
        "h: \"q\n",
        "  r\"\n",
        "k: &a 1\n",
        "l: *a\n",
        "# c\n",
        "? m\n",
        ": n\n",
        "o: !!str 5\n",
        "{p: 1}\n",
        "[q]\n",
        "s\n",
        "\t\n",
        "\r\n",
    ];
}
