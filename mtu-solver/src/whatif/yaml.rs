//! A JSON value written as a block-style YAML document, as an operator reads a manifest:
//! `apiVersion`, `kind` and `metadata` first (and `name` first in `metadata`), other keys in
//! byte order, so the text does not depend on how `serde_json` orders a map. A string is
//! written plain only when every YAML reader (YAML 1.1's `yes`/`no` included, as kubectl's
//! reader is) takes it as that string; otherwise double-quoted.

use serde_json::{Map, Value};
use std::fmt::Write;

/// Keys written before the others, in this order.
const FIRST: [&str; 4] = ["apiVersion", "kind", "metadata", "name"];

/// Writes `value` as one YAML document (no `---`) to `out`.
pub(super) fn document(value: &Value, out: &mut String) {
    match value {
        Value::Object(m) if !m.is_empty() => map(m, 0, out),
        v => {
            scalar(v, out);
            out.push('\n');
        }
    }
}

/// The keys of `m` in writing order.
fn ordered(m: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<(&String, &Value)> = m.iter().collect();
    entries.sort_by_key(|(k, _)| {
        let rank = FIRST.iter().position(|f| f == k).unwrap_or(FIRST.len());
        (rank, k.as_str())
    });
    entries
}

/// A map's entries at `indent` spaces, one a line; a non-empty map or list below its key.
fn map(m: &Map<String, Value>, indent: usize, out: &mut String) {
    for (k, v) in ordered(m) {
        pad(indent, out);
        string(k, out);
        out.push(':');
        match v {
            Value::Object(inner) if !inner.is_empty() => {
                out.push('\n');
                map(inner, indent.saturating_add(2), out);
            }
            Value::Array(items) if !items.is_empty() => {
                out.push('\n');
                list(items, indent, out);
            }
            v => {
                out.push(' ');
                scalar(v, out);
                out.push('\n');
            }
        }
    }
}

/// A list's items at `indent` spaces, `- ` each; an item that is a map or a list in flow
/// style (JSON, which YAML reads).
fn list(items: &[Value], indent: usize, out: &mut String) {
    for item in items {
        pad(indent, out);
        out.push_str("- ");
        scalar(item, out);
        out.push('\n');
    }
}

/// A value on one line: strings as [`string`], maps and lists in flow style.
fn scalar(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                scalar(item, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, item)) in ordered(m).into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                string(k, out);
                out.push_str(": ");
                scalar(item, out);
            }
            out.push('}');
        }
    }
}

/// A string plain when [`plain`] allows, else double-quoted with YAML's escapes.
fn string(s: &str, out: &mut String) {
    if plain(s) {
        out.push_str(s);
        return;
    }
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}') => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Whether `s` reads as itself unquoted in YAML 1.1 and 1.2: a letter, then letters, digits
/// and `.`, `_`, `/`, `-` (no number, date, indicator or comment can start so), and no word
/// a reader takes as a boolean or null.
fn plain(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-'))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
        )
}

fn pad(indent: usize, out: &mut String) {
    out.extend(std::iter::repeat_n(' ', indent));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(v: &Value) -> String {
        let mut out = String::new();
        document(v, &mut out);
        out
    }

    #[test]
    fn a_patch_reads_as_an_operator_writes_it() {
        let v = json!({
            "spec": {"sites": ["a", "b"], "tunnelMTU": null, "enabled": false},
            "metadata": {"labels": {"net.unbounded-cloud.io/gateway-pool": ""}, "name": "n1"},
            "kind": "Node",
            "apiVersion": "v1",
        });
        assert_eq!(
            text(&v),
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n    \
             net.unbounded-cloud.io/gateway-pool: \"\"\nspec:\n  enabled: false\n  sites:\n  \
             - a\n  - b\n  tunnelMTU: null\n"
        );
    }

    #[test]
    fn strings_a_reader_would_take_for_something_else_are_quoted() {
        for s in [
            "1450",
            "",
            "yes",
            "No",
            "ON",
            "null",
            "true",
            "1e3",
            "0x10",
            "-a",
            "a: b",
            "a #b",
            "*x",
            "n2=1400,n3=1380",
            "10-0-0-1",
            "~",
            "a b",
        ] {
            let mut out = String::new();
            string(s, &mut out);
            assert!(out.starts_with('"'), "{s:?} written as {out}");
        }
        for s in ["gw1", "net.unbounded-cloud.io/site", "a_b", "Site"] {
            let mut out = String::new();
            string(s, &mut out);
            assert_eq!(out, s);
        }
        let mut out = String::new();
        string("a\"b\\c\u{1}", &mut out);
        assert_eq!(out, "\"a\\\"b\\\\c\\u0001\"");
    }
}
