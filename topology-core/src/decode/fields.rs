//! Reading fields of one object: typed accessors by dotted path that report a field of the wrong
//! type (`E-FIELD-TYPE`) or an invalid value with the object, the field and its line, and read it
//! as absent.

use super::raw::RawCap;
use crate::diag::{Code, Diagnostic, SourceLoc};
use crate::mtu::{MAX_CAP, MIN_MTU};
use crate::tree::{Node, Value};
use crate::vocab::{Protocol, parse_setting};
use ipnet::IpNet;
use std::borrow::Cow;
use std::fmt::{self, Write as _};
use std::net::IpAddr;
use std::sync::Arc;

/// Shortens user text quoted in messages (a 10 MB value must not become a 10 MB message).
pub(super) fn short(s: &str) -> String {
    const MAX: usize = 80;
    if s.len() <= MAX {
        return format!("{s:?}");
    }
    let cut = (0..=MAX)
        .rev()
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{:?}… ({} bytes)", s.get(..cut).unwrap_or(""), s.len())
}

/// Field extraction context for one object: reports with object, field and line.
pub(super) struct Cx {
    /// The source the object was read from.
    pub(super) source: Arc<str>,
    /// `Kind/name`, the object every finding names.
    pub(super) object: String,
    /// Findings so far.
    pub(super) diags: Vec<Diagnostic>,
    /// Prepended to field paths while reading list entries (`nodes[2].`).
    pub(super) prefix: String,
    /// Paths already reported as not being objects.
    pub(super) reported: Vec<String>,
}

impl Cx {
    pub(super) fn loc(&self, line: u32) -> Option<SourceLoc> {
        Some(SourceLoc::at_line(self.source.clone(), line))
    }

    /// Reports a finding about `field` (a path below the current entry's prefix, rendered only
    /// here) at `line`.
    pub(super) fn report(
        &mut self,
        code: Code,
        field: impl fmt::Display,
        line: u32,
        message: impl Into<String>,
    ) {
        let loc = self.loc(line);
        let field = format!("{}{field}", self.prefix);
        self.diags.push(Diagnostic::new(
            code,
            self.object.clone(),
            field,
            message,
            loc,
        ));
    }

    pub(super) fn wrong_type(&mut self, field: impl fmt::Display, node: &Node, want: &str) {
        let msg = format!(
            "expected {want}, found {}; the field is read as absent",
            node.type_name()
        );
        self.report(Code::FieldType, field, node.line, msg);
    }

    /// `path` is dotted (`spec.tunnelMTU`); returns the node when present and not null.
    pub(super) fn at<'n>(&mut self, root: &'n Node, path: &str) -> Option<&'n Node> {
        let mut cur = root;
        // The bytes of `path` walked so far, `None` before the first part.
        let mut walked: Option<usize> = None;
        for part in path.split('.') {
            if let Some(end) = walked {
                if !matches!(cur.value, Value::Map(_) | Value::Null) {
                    self.not_an_object(path.get(..end).unwrap_or(path), cur);
                    return None;
                }
                walked = Some(end.saturating_add(1).saturating_add(part.len()));
            } else {
                walked = Some(part.len());
            }
            cur = &cur.get(part)?.node;
        }
        if cur.value == Value::Null {
            None
        } else {
            Some(cur)
        }
    }

    /// `E-FIELD-TYPE` for a path through a value that is not an object, once per path.
    fn not_an_object(&mut self, walked: &str, cur: &Node) {
        let full = format!("{}{walked}", self.prefix);
        if self.reported.contains(&full) {
            return;
        }
        self.reported.push(full);
        let msg = format!(
            "expected an object, found {}; everything under it is read as absent",
            cur.type_name()
        );
        self.report(Code::FieldType, walked, cur.line, msg);
    }

    pub(super) fn map_at<'n>(&mut self, root: &'n Node, path: &str) -> Option<&'n Node> {
        let n = self.at(root, path)?;
        match n.value {
            Value::Map(_) => Some(n),
            _ => {
                self.wrong_type(path, n, "an object");
                None
            }
        }
    }

    pub(super) fn str_at<'n>(&mut self, root: &'n Node, path: &str) -> Option<&'n str> {
        let n = self.at(root, path)?;
        match &n.value {
            Value::Str(s) => Some(s),
            _ => {
                self.wrong_type(path, n, "a string");
                None
            }
        }
    }

    pub(super) fn bool_at(&mut self, root: &Node, path: &str, default: bool) -> bool {
        let Some(n) = self.at(root, path) else {
            return default;
        };
        match n.value {
            Value::Bool(b) => b,
            _ => {
                self.wrong_type(path, n, "a boolean");
                default
            }
        }
    }

    pub(super) fn seq_at<'n>(&mut self, root: &'n Node, path: &str) -> &'n [Node] {
        let Some(n) = self.at(root, path) else {
            return &[];
        };
        match &n.value {
            Value::Seq(items) => items,
            _ => {
                self.wrong_type(path, n, "a list");
                &[]
            }
        }
    }

    /// The strings of the list at `path` with their index and line; an entry that is not a
    /// string is reported (`path[i]`) and left out.
    pub(super) fn str_list<'n>(
        &mut self,
        root: &'n Node,
        path: &str,
    ) -> Vec<(&'n str, usize, u32)> {
        let items = self.seq_at(root, path);
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            match &item.value {
                Value::Str(s) => out.push((s.as_str(), i, item.line)),
                _ => self.wrong_type(format_args!("{path}[{i}]"), item, "a string"),
            }
        }
        out
    }

    pub(super) fn cidr(
        &mut self,
        text: &str,
        field: impl fmt::Display,
        line: u32,
    ) -> Option<IpNet> {
        match text.trim().parse::<IpNet>() {
            Ok(net) => {
                let canon = net.trunc();
                if canon != net {
                    self.report(
                        Code::CidrHostBits,
                        field,
                        line,
                        format!("{text} has host bits set; read as {canon}"),
                    );
                }
                Some(canon)
            }
            Err(_) => {
                self.report(
                    Code::Cidr,
                    field,
                    line,
                    format!("{} is not a CIDR prefix", short(text)),
                );
                None
            }
        }
    }

    pub(super) fn cidr_list(&mut self, root: &Node, path: &str) -> Vec<IpNet> {
        let items = self.str_list(root, path);
        items
            .into_iter()
            .filter_map(|(s, i, line)| self.cidr(s, format_args!("{path}[{i}]"), line))
            .collect()
    }

    pub(super) fn ip_list(&mut self, root: &Node, path: &str) -> Vec<IpAddr> {
        let items = self.str_list(root, path);
        let mut out = Vec::with_capacity(items.len());
        for (s, i, line) in items {
            match s.trim().parse::<IpAddr>() {
                Ok(a) => out.push(a),
                Err(_) => self.report(
                    Code::Cidr,
                    format_args!("{path}[{i}]"),
                    line,
                    format!("{} is not an IP address", short(s)),
                ),
            }
        }
        out
    }

    pub(super) fn protocol(&mut self, root: &Node, path: &str) -> Option<Protocol> {
        let n = self.at(root, path)?;
        let line = n.line;
        let text = match &n.value {
            Value::Str(s) => s,
            _ => {
                self.wrong_type(path, n, "a protocol name");
                return None;
            }
        };
        match parse_setting(text) {
            Some(p) => p,
            None => {
                self.report(
                    Code::Protocol,
                    path,
                    line,
                    format!(
                        "unknown tunnelProtocol {} (WireGuard, GENEVE, VXLAN, IPIP, None or Auto); read as Auto", short(text)
                    ),
                );
                None
            }
        }
    }

    pub(super) fn cap(&mut self, root: &Node, path: &str) -> Option<RawCap> {
        let n = self.at(root, path)?;
        let line = n.line;
        let (value, written): (Option<i128>, String) = match &n.value {
            Value::Int(i) => (Some(*i), i.to_string()),
            Value::Float(f) if f.is_infinite() => {
                (None, "a number too large for any integer".to_string())
            }
            #[allow(clippy::cast_possible_truncation)]
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 1e30 => {
                (Some(*f as i128), format!("{f}"))
            }
            _ => return Some(self.unreadable_cap(path, n)),
        };
        match value {
            Some(0) => {
                self.report(Code::CapZero, path, line, "tunnelMTU 0 is read as unset");
                None
            }
            Some(v) if (i128::from(MIN_MTU)..=i128::from(MAX_CAP)).contains(&v) => Some(RawCap {
                mtu: u32::try_from(v).unwrap_or(MIN_MTU),
                invalid: None,
                loc: self.loc(line),
            }),
            _ => {
                self.report(
                    Code::CapRange,
                    path,
                    line,
                    format!(
                        "tunnelMTU {written} is outside {MIN_MTU}..{MAX_CAP}; it counts as {MIN_MTU} (fail closed)"
                    ),
                );
                Some(RawCap {
                    mtu: MIN_MTU,
                    invalid: Some(written),
                    loc: self.loc(line),
                })
            }
        }
    }

    /// A `tunnelMTU` of the wrong type (a quoted number, a list, a map, a fraction): an API
    /// server would refuse the object, so it was not written for a cluster as it stands. It is
    /// `E-FIELD-TYPE` and fails closed like an out-of-range cap: reading it as absent would let
    /// values rise (`mtu.md` §7).
    fn unreadable_cap(&mut self, path: &str, n: &Node) -> RawCap {
        let (written, what, fix) = match &n.value {
            Value::Str(text) => {
                let fix = match text.trim().parse::<u32>() {
                    Ok(v) => format!("write it unquoted: tunnelMTU: {v}"),
                    Err(_) => format!("write an integer in {MIN_MTU}..{MAX_CAP}, unquoted"),
                };
                let written = short(text);
                let what = format!("the string {written}");
                (written, what, fix)
            }
            _ => {
                let written = format!("a {}", n.type_name());
                let fix =
                    format!("write one integer in {MIN_MTU}..{MAX_CAP}, e.g. tunnelMTU: 1400");
                (written.clone(), written, fix)
            }
        };
        self.report(
            Code::FieldType,
            path,
            n.line,
            format!(
                "tunnelMTU is {what}, not an integer: an API server would refuse this object ({fix}); it counts as {MIN_MTU} (fail closed)"
            ),
        );
        RawCap {
            mtu: MIN_MTU,
            invalid: Some(written),
            loc: self.loc(n.line),
        }
    }

    /// The entries of the map at `path` whose values are scalars, as text (null as empty,
    /// integers and booleans rendered), with the key's line; any other value is reported
    /// (`path.key`) and left out.
    pub(super) fn string_map<'n>(
        &mut self,
        root: &'n Node,
        path: &str,
    ) -> Vec<(&'n str, Cow<'n, str>, u32)> {
        let Some(m) = self.map_at(root, path) else {
            return Vec::new();
        };
        let Value::Map(entries) = &m.value else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            let key = e.key.as_str();
            match &e.node.value {
                Value::Str(s) => out.push((key, Cow::Borrowed(s.as_str()), e.line)),
                Value::Null => out.push((key, Cow::Borrowed(""), e.line)),
                Value::Int(i) => out.push((key, Cow::Owned(i.to_string()), e.line)),
                Value::Bool(b) => out.push((key, Cow::Owned(b.to_string()), e.line)),
                _ => self.wrong_type(format_args!("{path}.{key}"), &e.node, "a string"),
            }
        }
        out
    }

    /// Reads each entry of the list at `path` with `read`, field paths prefixed by the entry's
    /// (`nodes[2].`); an entry that is not an object is reported and skipped, as is one that
    /// `read` rejects.
    pub(super) fn entries<T>(
        &mut self,
        root: &Node,
        path: &str,
        mut read: impl FnMut(&mut Cx, &Node) -> Option<T>,
    ) -> Vec<T> {
        let items = self.seq_at(root, path);
        let mut out = Vec::with_capacity(items.len());
        for (i, e) in items.iter().enumerate() {
            if !matches!(e.value, Value::Map(_)) {
                self.wrong_type(format_args!("{path}[{i}]"), e, "an object");
                continue;
            }
            self.prefix.clear();
            // Writing into a `String` cannot fail.
            let _ = write!(self.prefix, "{path}[{i}].");
            out.extend(read(self, e));
            self.prefix.clear();
        }
        out
    }
}
