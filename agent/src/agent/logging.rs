//! The agent's log: standard error in every mode, text or one JSON object per line, filtered by
//! `RUST_LOG`; the agent's warnings (a broken assignment, failed reconciles, API errors) are its
//! log. Every line is bounded ([`LINE_LIMIT`]): a client library that logs a response body it
//! could not read (kube's does, whole, at `WARN`) would otherwise write lines of many megabytes,
//! which log pipelines drop or split. A JSON line stays one JSON object: its long strings are cut.

use crate::cli::LogFormat;
use std::borrow::Cow;
use std::io::Write;
use tracing_subscriber::fmt::MakeWriter;

/// Muted in every log filter: kube's client layer, which logs every failed request at `error`
/// without saying what the request was for. The agent reports each of those failures itself,
/// with its step and retry, so the same error is not printed twice. A `RUST_LOG` directive for
/// this target replaces it.
pub const MUTED_LOG_TARGETS: &str = "kube_client::client::builder=off";

/// The longest line the log holds, newline included; a longer one is cut, its size stated.
pub const LINE_LIMIT: usize = 8 * 1024;

/// In a JSON line longer than [`LINE_LIMIT`], the longest string kept whole.
const STRING_LIMIT: usize = 2 * 1024;

/// The log filter: [`MUTED_LOG_TARGETS`], then `RUST_LOG` (`info` when unset or invalid).
fn filter() -> tracing_subscriber::EnvFilter {
    use tracing_subscriber::EnvFilter;
    let user = std::env::var("RUST_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "info".to_string());
    EnvFilter::try_new(format!("{MUTED_LOG_TARGETS},{user}"))
        .unwrap_or_else(|_| EnvFilter::new(format!("{MUTED_LOG_TARGETS},info")))
}

/// Logs to standard error in `format`, every line bounded, filtered by [`MUTED_LOG_TARGETS`] and
/// then `RUST_LOG` (`info` when unset or invalid).
pub fn init(format: LogFormat) {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_writer(Bounded { format });
    // Fails only when a subscriber is installed already; that one logs then.
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
    };
}

/// Standard error, one bounded line per event: the formatter writes an event's line into a
/// [`Line`], which writes it bounded when it is dropped.
struct Bounded {
    format: LogFormat,
}

impl<'a> MakeWriter<'a> for Bounded {
    type Writer = Line;

    fn make_writer(&'a self) -> Line {
        Line {
            format: self.format,
            bytes: Vec::new(),
        }
    }
}

/// One event's line, as the formatter writes it.
struct Line {
    format: LogFormat,
    bytes: Vec<u8>,
}

impl Write for Line {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.bytes.is_empty() {
            return;
        }
        // Nowhere to report a failed write of the log itself.
        let _ = std::io::stderr().write_all(&bound(&self.bytes, self.format));
    }
}

/// `line` (newline-terminated) at most [`LINE_LIMIT`] bytes long: as it is when it fits; a JSON
/// line with its long strings cut (each says how long it was), still one object; any other line
/// cut on a character boundary, saying how long it was.
pub fn bound(line: &[u8], format: LogFormat) -> Cow<'_, [u8]> {
    if line.len() <= LINE_LIMIT {
        return Cow::Borrowed(line);
    }
    if format == LogFormat::Json
        && let Some(cut) = bound_json(line)
    {
        return Cow::Owned(cut);
    }
    let note = format!("… [log line cut: {} bytes]\n", line.len());
    let mut end = LINE_LIMIT.saturating_sub(note.len());
    // Back to the start of a UTF-8 character (continuation bytes are 0b10xx_xxxx).
    while end > 0 && line.get(end).is_some_and(|b| b & 0xC0 == 0x80) {
        end -= 1;
    }
    let mut out = line.get(..end).unwrap_or_default().to_vec();
    out.extend_from_slice(note.as_bytes());
    Cow::Owned(out)
}

/// A JSON line whose strings are cut to fit [`LINE_LIMIT`], shorter limits tried in turn; `None`
/// when it is not JSON or does not fit even so.
fn bound_json(line: &[u8]) -> Option<Vec<u8>> {
    let value: serde_json::Value = serde_json::from_slice(line.trim_ascii_end()).ok()?;
    [STRING_LIMIT, 256, 32].into_iter().find_map(|limit| {
        let mut v = value.clone();
        cut_strings(&mut v, limit);
        let mut out = serde_json::to_vec(&v).ok()?;
        out.push(b'\n');
        (out.len() <= LINE_LIMIT).then_some(out)
    })
}

/// Cuts every string in `v` longer than `limit` bytes, saying how long it was.
fn cut_strings(v: &mut serde_json::Value, limit: usize) {
    use serde_json::Value;
    match v {
        Value::String(s) if s.len() > limit => {
            let len = s.len();
            let mut end = limit;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            s.truncate(end);
            s.push_str(&format!("… [cut: {len} bytes]"));
        }
        Value::Array(items) => items.iter_mut().for_each(|i| cut_strings(i, limit)),
        Value::Object(m) => m.values_mut().for_each(|i| cut_strings(i, limit)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_that_fits_is_left_alone() {
        let line = b"2026-12-05T20:00:00Z  INFO reconciled writes=3\n";
        assert!(matches!(bound(line, LogFormat::Text), Cow::Borrowed(_)));
        assert!(matches!(bound(line, LogFormat::Json), Cow::Borrowed(_)));
    }

    #[test]
    fn a_long_text_line_is_cut_on_a_character_boundary_saying_how_long_it_was() {
        let line = format!("WARN kube_client: {}\n", "é".repeat(3_000_000));
        let out = bound(line.as_bytes(), LogFormat::Text);
        assert!(out.len() <= LINE_LIMIT, "{}", out.len());
        let text = std::str::from_utf8(&out).expect("UTF-8 kept whole");
        assert!(
            text.ends_with(&format!("… [log line cut: {} bytes]\n", line.len())),
            "{}",
            &text[text.len() - 60..]
        );
        assert!(text.starts_with("WARN kube_client: éé"));
    }

    #[test]
    fn a_long_json_line_stays_one_object_with_its_long_strings_cut() {
        let message = format!("{}, Error(\"invalid type\")", "x".repeat(5 << 20));
        let line = format!(
            "{}\n",
            serde_json::json!({"timestamp": "t", "level": "WARN",
                "fields": {"message": message},
                "target": "kube_client::client"})
        );
        let out = bound(line.as_bytes(), LogFormat::Json);
        assert!(out.len() <= LINE_LIMIT, "{}", out.len());
        assert_eq!(out.last(), Some(&b'\n'));
        let v: serde_json::Value = serde_json::from_slice(&out).expect("still JSON");
        assert_eq!(v["level"], "WARN");
        assert_eq!(v["target"], "kube_client::client");
        let cut = v["fields"]["message"].as_str().unwrap_or_default();
        assert!(
            cut.ends_with(&format!("… [cut: {} bytes]", message.len())),
            "{}",
            &cut[cut.len().saturating_sub(40)..]
        );
        // Many long strings: cut shorter until the line fits.
        let many: Vec<String> = (0..50)
            .map(|i| format!("{i}{}", "y".repeat(4000)))
            .collect();
        let line = format!("{}\n", serde_json::json!({"fields": {"many": many}}));
        let out = bound(line.as_bytes(), LogFormat::Json);
        assert!(out.len() <= LINE_LIMIT, "{}", out.len());
        assert!(serde_json::from_slice::<serde_json::Value>(&out).is_ok());
    }
}
