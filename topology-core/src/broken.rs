//! What can be said of a document that does not parse: the exact point of the problem, a fix for
//! the common causes, and the object it was meant to be.
//!
//! A YAML parser reports where its scanner gave up, which is not always where the problem is: a
//! plain scalar is reported at its start when a tab on the next line ends it. A tab is by far the
//! most common cause (YAML allows no tabs in indentation, editors insert them), so the point is
//! moved to the tab and the fix is named. The object is recovered by a lenient scan of the text
//! for its top-level `kind` and its `metadata.name`, so the finding names `Node/w1` rather than
//! `document 7`.

/// A document that does not parse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DocError {
    /// 1-based line of the problem.
    pub line: u32,
    /// 1-based column of the problem (in characters); 0 when only the line is known.
    pub column: u32,
    /// What is wrong, and how to fix it when the cause is a common one.
    pub message: String,
    /// `Kind/name` (or `Kind` alone) of the object the document was meant to be, when a lenient
    /// scan finds it.
    pub object: Option<String>,
}

/// Describes the failed parse of `chunk` (whose first line is `first_line` of its source): the
/// parser stopped at 1-based `line` and `column` (0: unknown) saying `said`.
pub fn describe(chunk: &str, first_line: u32, line: u32, column: u32, said: &str) -> DocError {
    let rel = line.saturating_sub(first_line);
    let tab = find_tab(chunk, rel, column, said);
    let (line, column, fix) = match tab {
        Some(t) => (
            first_line.saturating_add(t.line),
            t.column,
            Some(if t.indentation {
                "YAML does not allow tabs for indentation: indent with spaces"
            } else {
                "YAML does not allow a tab here: use spaces"
            }),
        ),
        None => (line, column, None),
    };
    let mut message = format!("not valid YAML/JSON: {said}");
    if let Some(fix) = fix {
        message.push_str("; ");
        message.push_str(fix);
    }
    DocError {
        line,
        column,
        message,
        object: lenient_identity(chunk),
    }
}

/// A tab found in a chunk: its 0-based line within the chunk, its 1-based column, and whether it
/// is in the line's leading whitespace.
struct Tab {
    line: u32,
    column: u32,
    indentation: bool,
}

/// The tab that made the parse fail, if one did: when the parser names a tab, the first tab on
/// its line or on the few lines after it (a scalar is reported where it starts, the tab that
/// ends it may follow); otherwise a tab right at the reported point.
fn find_tab(chunk: &str, rel_line: u32, column: u32, said: &str) -> Option<Tab> {
    let names_tab = said.to_ascii_lowercase().contains("tab");
    let start = usize::try_from(rel_line).ok()?;
    let look = if names_tab { 4 } else { 1 };
    for (i, text) in chunk.lines().enumerate().skip(start).take(look) {
        let on_reported_line = i == start;
        let found = text.chars().enumerate().find(|(c, ch)| {
            *ch == '\t'
                && (names_tab
                    || (on_reported_line && {
                        // The reported column (1-based) or the character just after it.
                        let c1 = u32::try_from(*c).unwrap_or(u32::MAX).saturating_add(1);
                        c1 == column || c1 == column.saturating_add(1)
                    }))
        });
        if let Some((c, _)) = found {
            let indentation = text.chars().take(c).all(|ch| ch == ' ' || ch == '\t');
            return Some(Tab {
                line: u32::try_from(i).ok()?,
                column: u32::try_from(c).ok()?.saturating_add(1),
                indentation,
            });
        }
    }
    None
}

/// `Kind/name` of the object a broken document was meant to be, or `Kind` alone, from a lenient
/// scan: the first top-level `kind:` and the `name:` directly under a top-level `metadata:`
/// (block or flow style), or the first `"kind"` and `"name"` of a JSON text. A `List` names no
/// one object.
pub fn lenient_identity(chunk: &str) -> Option<String> {
    let (kind, name) = if chunk.trim_start().starts_with(['{', '[']) {
        (json_string_after(chunk, "\"kind\""), json_name(chunk))
    } else {
        (yaml_kind(chunk), yaml_name(chunk))
    };
    let kind = kind.filter(|k| !k.ends_with("List") && is_word(k))?;
    Some(match name {
        Some(n) => format!("{kind}/{n}"),
        None => kind,
    })
}

/// Whether `s` looks like a kind: letters and digits only.
fn is_word(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric())
}

/// A scalar as written after `key:`: unquoted, without a trailing comment.
fn scalar(rest: &str) -> Option<String> {
    let v = rest.split(" #").next().unwrap_or("").trim();
    let v = v.trim_matches(|c| c == '"' || c == '\'');
    (!v.is_empty() && !v.contains(['{', '[', ':', ' '])).then(|| v.to_string())
}

fn yaml_kind(chunk: &str) -> Option<String> {
    chunk
        .lines()
        .find_map(|l| l.strip_prefix("kind:"))
        .and_then(scalar)
}

/// The `name:` under a top-level `metadata:`, at the first indentation below it.
fn yaml_name(chunk: &str) -> Option<String> {
    let mut lines = chunk.lines().skip_while(|l| !l.starts_with("metadata:"));
    let first = lines.next()?;
    let inline = first.trim_start_matches("metadata:").trim();
    if inline.starts_with('{') {
        return flow_name(inline);
    }
    let mut indent = None;
    for l in lines {
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        let width = l.len().saturating_sub(l.trim_start_matches(' ').len());
        if width == 0 {
            return None;
        }
        let level = *indent.get_or_insert(width);
        if width == level
            && let Some(rest) = l.trim_start_matches(' ').strip_prefix("name:")
        {
            return scalar(rest);
        }
    }
    None
}

/// `name` of a flow mapping such as `{name: w1, labels: {...}}`.
fn flow_name(flow: &str) -> Option<String> {
    let inner = flow.trim_start_matches('{');
    inner.split(',').find_map(|part| {
        part.trim()
            .strip_prefix("name:")
            .and_then(|v| scalar(v.trim_end_matches('}')))
    })
}

/// The string value after the first `key` of a JSON text (`"kind": "Site"`).
fn json_string_after(text: &str, key: &str) -> Option<String> {
    let at = text.find(key)?;
    let rest = text.get(at.saturating_add(key.len())..)?.trim_start();
    let rest = rest.strip_prefix(':')?.trim_start().strip_prefix('"')?;
    let end = rest.find('"')?;
    rest.get(..end).map(str::to_string)
}

/// The first `"name"` after `"metadata"` in a JSON text.
fn json_name(text: &str) -> Option<String> {
    let at = text.find("\"metadata\"")?;
    json_string_after(text.get(at..)?, "\"name\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tab_after_a_scalar_is_located_at_the_tab_with_its_fix() {
        // The scanner reports the plain scalar `b` (line 6) that the tab on line 7 ends.
        let chunk =
            "apiVersion: v1\nkind: Node\nmetadata:\n  name: n9\n  labels:\n    a: b\n\tfoo: bar\n";
        let e = describe(chunk, 1, 6, 8, "while scanning a plain scalar, found a tab");
        assert_eq!((e.line, e.column), (7, 1));
        assert!(
            e.message
                .ends_with("YAML does not allow tabs for indentation: indent with spaces"),
            "{}",
            e.message
        );
        assert_eq!(e.object.as_deref(), Some("Node/n9"));
    }

    #[test]
    fn a_tab_after_a_colon_is_named_even_when_the_parser_does_not() {
        let chunk = "---\nkind: Site\nmetadata: {name: east}\nspec:\n  tunnelMTU:\t1400\n";
        // Line 14 of its source: the chunk starts at line 10.
        let e = describe(
            chunk,
            10,
            14,
            12,
            "':' must be followed by a valid YAML whitespace",
        );
        assert_eq!((e.line, e.column), (14, 13));
        assert!(
            e.message.ends_with("a tab here: use spaces"),
            "{}",
            e.message
        );
        assert_eq!(e.object.as_deref(), Some("Site/east"));
    }

    #[test]
    fn other_errors_keep_the_parser_point() {
        let chunk = "kind: Node\nmetadata:\n  name: x\nspec: [1, 2\n";
        let e = describe(chunk, 1, 5, 1, "did not find expected ',' or ']'");
        assert_eq!((e.line, e.column), (5, 1));
        assert_eq!(
            e.message,
            "not valid YAML/JSON: did not find expected ',' or ']'"
        );
    }

    #[test]
    fn the_object_is_recovered_leniently() {
        assert_eq!(
            lenient_identity(
                "{\"apiVersion\": \"v1\", \"kind\": \"Node\", \"metadata\": {\"name\": \"w1\"},"
            ),
            Some("Node/w1".to_string())
        );
        assert_eq!(
            lenient_identity("kind: GatewayPool # a pool\nspec: {\n"),
            Some("GatewayPool".to_string())
        );
        assert_eq!(
            lenient_identity("kind: Site\nmetadata:\n  labels:\n    name: no\n  name: \"a\"\n"),
            Some("Site/a".to_string())
        );
        assert_eq!(lenient_identity("kind: List\nitems:\n- kind: Node\n"), None);
        assert_eq!(lenient_identity("a: [\n"), None);
        assert_eq!(lenient_identity("kind: {x\n"), None);
    }
}
