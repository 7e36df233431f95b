//! `resolve -o json|yaml`: one document (`apiVersion`, `kind: Resolution`, `nodes`,
//! `diagnostics`) written node by node. Each node is serialized on the thread that planned it,
//! in the document's own layout (pretty JSON indented to its place in `nodes`; a YAML sequence
//! item), so the streamed document is byte for byte the one a serializer writes of the whole
//! [`ResolveOut`] (`tests/streaming.rs` compares them).

use super::{Job, stdout};
use crate::output::DataFormat;
use anyhow::{Result, anyhow};
use mtu_solver::report::{ApiVersion, DiagOut, DocumentKind, NodeOut, ResolveOut};
use serde::Serialize;
use std::io::Write;
use topology_core::diag::Diagnostic;

/// Nodes per chunk: one node's document can reach hundreds of kilobytes on a large cluster
/// (a megabyte or more at 65,000 nodes), and a few chunks are in flight.
const CHUNK: usize = 2;

/// The document's `apiVersion`.
const API_VERSION: ApiVersion = ApiVersion::V1alpha1;

/// The document's kind.
const KIND: DocumentKind = DocumentKind::Resolution;

/// Writes the document; returns the diagnostics it lists.
pub(super) fn write(job: &Job<'_>, format: DataFormat) -> Result<Vec<Diagnostic>> {
    let mut out = stdout();
    if job.nodes.is_empty() {
        // Nothing to stream: the document's empty layout is the serializer's.
        let diags = job.stream(CHUNK, |_| (), |()| Ok(()))?;
        let doc = ResolveOut {
            api_version: API_VERSION,
            kind: KIND,
            nodes: Vec::new(),
            diagnostics: diags.iter().map(DiagOut::from).collect(),
        };
        crate::output::write_data(&doc, format)?;
        return Ok(diags);
    }
    match format {
        DataFormat::Json => out.write_all(json_head()?.as_bytes())?,
        DataFormat::Yaml => out.write_all(yaml_head()?.as_bytes())?,
    }
    let mut first = true;
    let diags = job.stream(
        CHUNK,
        |mut p| node(&p.out(), format),
        |piece| {
            let piece = piece?;
            if format == DataFormat::Json && !std::mem::take(&mut first) {
                out.write_all(b",\n")?;
            }
            Ok(out.write_all(&piece)?)
        },
    )?;
    let tail = match format {
        DataFormat::Json => json_tail(&diags)?,
        DataFormat::Yaml => yaml_tail(&diags)?,
    };
    out.write_all(tail.as_bytes())?;
    out.flush()?;
    Ok(diags)
}

/// One node's part of the document.
fn node(n: &NodeOut, format: DataFormat) -> Result<Vec<u8>> {
    match format {
        DataFormat::Json => {
            let mut buf = Vec::with_capacity(1 << 14);
            buf.extend_from_slice(NODE_INDENT);
            let mut ser = serde_json::Serializer::with_formatter(&mut buf, Nested::at(2));
            n.serialize(&mut ser)?;
            Ok(buf)
        }
        DataFormat::Yaml => {
            let nodes = [n];
            let text = yaml(&Nodes { nodes: &nodes })?;
            text.strip_prefix("nodes:\n")
                .map(|item| item.as_bytes().to_vec())
                .ok_or_else(|| anyhow!("unexpected YAML layout of a node: {text:.40}"))
        }
    }
}

/// A node's depth in the JSON document: inside the top object and its `nodes` array.
const NODE_INDENT: &[u8] = b"    ";

/// serde_json's pretty layout (two spaces a level) for a value that sits `level` levels deep
/// in a larger document: the same bytes the whole document's serializer writes for it.
struct Nested {
    level: usize,
    has_value: bool,
}

impl Nested {
    fn at(level: usize) -> Self {
        Nested {
            level,
            has_value: false,
        }
    }

    fn newline<W: ?Sized + std::io::Write>(&self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b"\n")?;
        for _ in 0..self.level {
            w.write_all(b"  ")?;
        }
        Ok(())
    }

    fn open<W: ?Sized + std::io::Write>(&mut self, w: &mut W, b: &[u8]) -> std::io::Result<()> {
        self.level += 1;
        self.has_value = false;
        w.write_all(b)
    }

    fn close<W: ?Sized + std::io::Write>(&mut self, w: &mut W, b: &[u8]) -> std::io::Result<()> {
        self.level -= 1;
        if self.has_value {
            self.newline(w)?;
        }
        w.write_all(b)
    }

    fn item<W: ?Sized + std::io::Write>(&self, w: &mut W, first: bool) -> std::io::Result<()> {
        if !first {
            w.write_all(b",")?;
        }
        self.newline(w)
    }
}

impl serde_json::ser::Formatter for Nested {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"[")
    }

    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"]")
    }

    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }

    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }

    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.open(w, b"{")
    }

    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.close(w, b"}")
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.item(w, first)
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }

    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, _: &mut W) -> std::io::Result<()> {
        self.has_value = true;
        Ok(())
    }
}

/// `{`, `apiVersion`, `kind` and the opening of a non-empty `nodes` array.
fn json_head() -> Result<String> {
    Ok(format!(
        "{{\n  \"apiVersion\": {},\n  \"kind\": {},\n  \"nodes\": [\n",
        serde_json::to_string(&API_VERSION)?,
        serde_json::to_string(&KIND)?
    ))
}

/// The close of `nodes`, the diagnostics and the close of the document.
fn json_tail(diags: &[Diagnostic]) -> Result<String> {
    let list: Vec<DiagOut> = diags.iter().map(DiagOut::from).collect();
    let mut text = Vec::new();
    list.serialize(&mut serde_json::Serializer::with_formatter(
        &mut text,
        Nested::at(1),
    ))?;
    let text = String::from_utf8(text)?;
    Ok(format!("\n  ],\n  \"diagnostics\": {text}\n}}\n"))
}

/// The head of the YAML document, with the key of a non-empty `nodes` sequence.
fn yaml_head() -> Result<String> {
    let head = yaml(&Head {
        api_version: API_VERSION,
        kind: KIND,
    })?;
    Ok(head + "nodes:\n")
}

/// The `diagnostics` key and its sequence.
fn yaml_tail(diags: &[Diagnostic]) -> Result<String> {
    let diagnostics: Vec<DiagOut> = diags.iter().map(DiagOut::from).collect();
    yaml(&Diagnostics { diagnostics })
}

fn yaml<T: Serialize>(value: &T) -> Result<String> {
    serde_saphyr::to_string(value).map_err(|e| anyhow!("cannot write YAML: {e}"))
}

/// The document's first keys.
#[derive(Serialize)]
struct Head {
    #[serde(rename = "apiVersion")]
    api_version: ApiVersion,
    kind: DocumentKind,
}

/// `nodes` as the document holds it, for one node at a time.
#[derive(Serialize)]
struct Nodes<'a> {
    nodes: &'a [&'a NodeOut],
}

/// The document's last key.
#[derive(Serialize)]
struct Diagnostics {
    diagnostics: Vec<DiagOut>,
}
