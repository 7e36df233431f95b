//! How the offline commands print: aligned tables for people (narrow by default, wide on asking,
//! with or without column headers), JSON or YAML documents for scripts, and the diagnostics block
//! every table ends with.

use anyhow::Result;
use mtu_solver::report::DiagOut;
use topology_core::diag::Diagnostic;

/// Lines of a narrow table stay within this many columns on ordinary names.
pub const NARROW: usize = 120;

/// How tables are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableStyle {
    /// Column headers above the rows.
    pub headers: bool,
    /// The long columns too (`-o wide`): every next hop, the full source of each bound,
    /// diagnostics one per line.
    pub wide: bool,
}

impl Default for TableStyle {
    fn default() -> Self {
        TableStyle {
            headers: true,
            wide: false,
        }
    }
}

/// A document format for scripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataFormat {
    /// JSON, pretty-printed.
    Json,
    /// YAML.
    Yaml,
}

/// How a command prints its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Tables for people.
    Table(TableStyle),
    /// A document for scripts.
    Data(DataFormat),
}

/// Writes a serializable value as JSON or YAML to standard output.
pub fn write_data<T: serde::Serialize>(value: &T, format: DataFormat) -> Result<()> {
    use std::io::Write;
    let stdout = std::io::stdout();
    let mut lock = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match format {
        DataFormat::Yaml => {
            let s = serde_saphyr::to_string(value)
                .map_err(|e| anyhow::anyhow!("cannot write YAML: {e}"))?;
            lock.write_all(s.as_bytes())?;
        }
        DataFormat::Json => {
            serde_json::to_writer_pretty(&mut lock, value)?;
            lock.write_all(b"\n")?;
        }
    }
    lock.flush()?;
    Ok(())
}

/// Renders rows as aligned columns, the header line first when the style has headers.
pub fn table(headers: &[&str], rows: &[Vec<String>], style: TableStyle) -> String {
    let mut widths: Vec<usize> = headers
        .iter()
        .map(|h| if style.headers { h.chars().count() } else { 0 })
        .collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let mut s = String::new();
    let line = |cells: &mut dyn Iterator<Item = &str>, s: &mut String| {
        let mut parts = Vec::new();
        for (i, c) in cells.enumerate() {
            let w = widths.get(i).copied().unwrap_or(0);
            parts.push(format!("{c:<w$}"));
        }
        s.push_str(parts.join("  ").trim_end());
        s.push('\n');
    };
    if style.headers {
        line(&mut headers.iter().copied(), &mut s);
    }
    for r in rows {
        line(&mut r.iter().map(String::as_str), &mut s);
    }
    s
}

/// `text` broken at spaces into lines of at most `width` characters (a longer word stands on a
/// line of its own).
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let len = line.chars().count();
        if len > 0 && len + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// A bound's full source in a narrow table while it takes at most this many characters.
const SOURCE: usize = 64;

/// What binds a value: its full source in a wide table, and in a narrow one while it is short
/// (`underlay of w1 1500 (default) − GENEVE overhead 58`); otherwise the term's name
/// (`link to w2`, `SitePeering/ab spec.tunnelMTU`).
pub fn bound(term: &str, source: &str, style: TableStyle) -> String {
    if style.wide || source.chars().count() <= SOURCE {
        source.to_string()
    } else {
        term.to_string()
    }
}

/// Next hops listed in a narrow table while they take at most this many characters.
const HOPS: usize = 12;

/// A list of next hops: all of them in a wide table and in a narrow one while they are short
/// (`h1,h2`); otherwise the first and how many more (`edge-1 +2`).
pub fn hops<S: AsRef<str>>(via: &[S], style: TableStyle) -> String {
    let all = via
        .iter()
        .map(AsRef::as_ref)
        .collect::<Vec<&str>>()
        .join(",");
    match via {
        [] => "-".to_string(),
        [first, rest @ ..] if !style.wide && all.chars().count() > HOPS => {
            format!("{} +{}", first.as_ref(), rest.len())
        }
        _ => all,
    }
}

/// The diagnostics block every command's table output ends with (`no diagnostics` when there
/// are none). Wide: one line per diagnostic. Narrow: severity, code, object and field on a line,
/// then where it was found and the message below it, wrapped.
pub fn diagnostics_table(diags: &[Diagnostic], style: TableStyle) -> String {
    let rows: Vec<DiagOut> = diags.iter().map(DiagOut::from).collect();
    findings_table(&rows, style)
}

/// [`diagnostics_table`] of diagnostics as a document carries them.
pub fn findings_table<'a>(
    diags: impl IntoIterator<Item = &'a DiagOut>,
    style: TableStyle,
) -> String {
    let diags: Vec<&DiagOut> = diags.into_iter().collect();
    if diags.is_empty() {
        return "no diagnostics\n".to_string();
    }
    let cells = |d: &DiagOut| {
        vec![
            d.severity.to_string(),
            d.code.to_string(),
            d.object.clone(),
            d.field.clone(),
            d.source.clone().unwrap_or_default(),
        ]
    };
    let headers = ["SEVERITY", "CODE", "OBJECT", "FIELD", "SOURCE", "MESSAGE"];
    if style.wide {
        let rows: Vec<Vec<String>> = diags
            .iter()
            .map(|d| {
                let mut r = cells(d);
                r.push(d.message.clone());
                r
            })
            .collect();
        return table(&headers, &rows, style);
    }
    let rows: Vec<Vec<String>> = diags
        .iter()
        .map(|d| {
            let mut r = cells(d);
            r.truncate(4);
            r
        })
        .collect();
    let aligned = table(&headers[..4], &rows, style);
    let mut lines = aligned.lines();
    let mut s = String::new();
    if style.headers {
        s.push_str(lines.next().unwrap_or(""));
        s.push('\n');
    }
    // The message is indented under the code column.
    let indent = "SEVERITY  ".len();
    for (d, line) in diags.iter().zip(lines) {
        s.push_str(line);
        s.push('\n');
        let text = match &d.source {
            Some(at) => format!("{at}: {}", d.message),
            None => d.message.clone(),
        };
        for l in wrap(&text, NARROW - indent) {
            s.push_str(&" ".repeat(indent));
            s.push_str(&l);
            s.push('\n');
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_keeps_every_word_within_the_width() {
        let text = "0.0.0.0/0 is a default route; it is neither advertised nor routed (the overlay never carries a default route)";
        let lines = wrap(text, 40);
        assert!(lines.iter().all(|l| l.chars().count() <= 40), "{lines:?}");
        assert_eq!(lines.join(" "), text);
        assert_eq!(wrap("a-very-long-word b", 5), ["a-very-long-word", "b"]);
    }

    #[test]
    fn hops_are_counted_in_narrow_tables() {
        let via = [
            "edge-1".to_string(),
            "edge-2".to_string(),
            "edge-3".to_string(),
        ];
        let narrow = TableStyle::default();
        let wide = TableStyle {
            wide: true,
            ..narrow
        };
        assert_eq!(hops(&via, narrow), "edge-1 +2");
        assert_eq!(hops(&via, wide), "edge-1,edge-2,edge-3");
        assert_eq!(hops(&via[..1], narrow), "edge-1");
        assert_eq!(hops(&["h1", "h2"], narrow), "h1,h2");
    }

    #[test]
    fn headers_can_be_left_out() {
        let rows = vec![vec!["a".to_string(), "1".to_string()]];
        let with = table(&["NAME", "MTU"], &rows, TableStyle::default());
        let without = table(
            &["NAME", "MTU"],
            &rows,
            TableStyle {
                headers: false,
                wide: false,
            },
        );
        assert_eq!(with, "NAME  MTU\na     1\n");
        assert_eq!(without, "a  1\n");
    }
}
