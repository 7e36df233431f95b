//! The field names of the unbounded kinds, level by level, so the decoder can report a key that
//! the kind does not define (`W-UNKNOWN-FIELD`) and name the nearest defined one.
//!
//! The table is the whole upstream schema, including fields the resolver never reads, so real
//! manifests stay quiet. It is written from the Go types of Azure/unbounded
//! `api/net/v1alpha1/types.go` as of commit d5c71eee (2026-04-27); the CRDs generated from them,
//! `deploy/net/crd/*.yaml`, list the same properties. When upstream adds a field, add it here.
//! What is checked:
//!
//! - the top level of every unbounded kind (`apiVersion`, `kind`, `metadata`, then `spec` and
//!   `status`, or SiteNodeSlice's own top-level fields);
//! - `spec`, with its nested objects and lists of objects, in full;
//! - `status` only where the resolver reads it (GatewayPool `status` and `status.nodes[]`): status
//!   is written by controllers, which may be newer than this table, and elsewhere a key there
//!   changes no result. A top-level `status` is accepted on every kind for the same reason.
//!
//! Not checked: `metadata` (standard Kubernetes object metadata), maps with free keys
//! (`nodeSelector`, GatewayPoolNode `status.routes`), and core `v1` Nodes.
//!
//! Work is bounded: one lookup in a short list per key, and the walk follows the table (at most
//! four levels deep), never the input's own depth. A suggestion is searched for unknown keys only,
//! and only for keys short enough to be a misspelling of some name here.

use crate::tree::{Node, Value};
use crate::vocab::Kind;

/// What a field holds, as far as the check goes.
#[derive(Clone, Copy, Debug)]
enum Below {
    /// A scalar, a list of scalars, or something not checked (a map with free keys, a
    /// controller-written status): nothing below it is looked at.
    Open,
    /// An object with these fields.
    Object(&'static [Field]),
    /// A list of objects with these fields.
    List(&'static [Field]),
}

/// One defined field.
#[derive(Clone, Copy, Debug)]
struct Field {
    name: &'static str,
    below: Below,
}

const fn open(name: &'static str) -> Field {
    Field {
        name,
        below: Below::Open,
    }
}

const fn object(name: &'static str, fields: &'static [Field]) -> Field {
    Field {
        name,
        below: Below::Object(fields),
    }
}

const fn list(name: &'static str, fields: &'static [Field]) -> Field {
    Field {
        name,
        below: Below::List(fields),
    }
}

// types.go: HealthCheckSettings.
const HEALTH_CHECK: &[Field] = &[
    open("enabled"),
    open("detectMultiplier"),
    open("receiveInterval"),
    open("transmitInterval"),
];

// types.go: NodeBlockSizes.
const NODE_BLOCK_SIZES: &[Field] = &[open("ipv4"), open("ipv6")];

// types.go: PodCidrAssignment.
const POD_CIDR_ASSIGNMENT: &[Field] = &[
    open("assignmentEnabled"),
    open("cidrBlocks"),
    object("nodeBlockSizes", NODE_BLOCK_SIZES),
    open("nodeRegex"),
    open("priority"),
];

// types.go: SiteSpec.
const SITE_SPEC: &[Field] = &[
    open("nodeCidrs"),
    list("podCidrAssignments", POD_CIDR_ASSIGNMENT),
    open("manageCniPlugin"),
    open("nonMasqueradeCIDRs"),
    open("localCidrs"),
    object("healthCheckSettings", HEALTH_CHECK),
    open("tunnelProtocol"),
    open("tunnelMTU"),
];

// types.go: NodeInfo (SiteNodeSlice.nodes[]).
const SLICE_NODE: &[Field] = &[
    open("name"),
    open("wireGuardPublicKey"),
    open("internalIPs"),
    open("podCIDRs"),
];

// types.go: GatewayPoolSpec (`nodeSelector` is a map of label to value: free keys).
const POOL_SPEC: &[Field] = &[
    open("type"),
    open("nodeSelector"),
    open("routedCidrs"),
    object("healthCheckSettings", HEALTH_CHECK),
    open("tunnelProtocol"),
    open("tunnelMTU"),
];

// types.go: GatewayNodeInfo (GatewayPool.status.nodes[]).
const POOL_STATUS_NODE: &[Field] = &[
    open("name"),
    open("siteName"),
    open("internalIPs"),
    open("externalIPs"),
    open("healthEndpoints"),
    open("wireGuardPublicKey"),
    open("gatewayWireguardPort"),
    open("podCIDRs"),
];

// types.go: GatewayPoolStatus.
const POOL_STATUS: &[Field] = &[
    list("nodes", POOL_STATUS_NODE),
    open("nodeCount"),
    open("connectedSites"),
    open("reachableSites"),
];

// types.go: GatewayNodeSpec.
const GATEWAY_POOL_NODE_SPEC: &[Field] = &[open("nodeName"), open("gatewayPool"), open("site")];

// types.go: SitePeeringSpec.
const SITE_PEERING_SPEC: &[Field] = &[
    open("enabled"),
    open("sites"),
    open("meshNodes"),
    object("healthCheckSettings", HEALTH_CHECK),
    open("tunnelProtocol"),
    open("tunnelMTU"),
];

// types.go: SiteGatewayPoolAssignmentSpec.
const ASSIGNMENT_SPEC: &[Field] = &[
    open("enabled"),
    open("sites"),
    open("gatewayPools"),
    object("healthCheckSettings", HEALTH_CHECK),
    open("tunnelProtocol"),
    open("tunnelMTU"),
];

// types.go: GatewayPoolPeeringSpec.
const POOL_PEERING_SPEC: &[Field] = &[
    open("enabled"),
    open("gatewayPools"),
    object("healthCheckSettings", HEALTH_CHECK),
    open("tunnelProtocol"),
    open("tunnelMTU"),
];

// Top levels: metav1.TypeMeta (`apiVersion`, `kind`), metav1.ObjectMeta (`metadata`), then the
// kind's own fields. `status` is accepted on every kind and, except on GatewayPool, not checked
// (SiteStatus, SitePeeringStatus and GatewayNodeStatus are controller-written and unread; the
// other kinds define none).
const SITE: &[Field] = &[
    open("apiVersion"),
    open("kind"),
    open("metadata"),
    object("spec", SITE_SPEC),
    open("status"),
];

// types.go: SiteNodeSlice has no spec; its fields are top-level.
const SITE_NODE_SLICE: &[Field] = &[
    open("apiVersion"),
    open("kind"),
    open("metadata"),
    open("siteName"),
    open("sliceIndex"),
    list("nodes", SLICE_NODE),
    open("nodeCount"),
    open("status"),
];

const GATEWAY_POOL: &[Field] = &[
    open("apiVersion"),
    open("kind"),
    open("metadata"),
    object("spec", POOL_SPEC),
    object("status", POOL_STATUS),
];

const GATEWAY_POOL_NODE: &[Field] = &[
    open("apiVersion"),
    open("kind"),
    open("metadata"),
    object("spec", GATEWAY_POOL_NODE_SPEC),
    open("status"),
];

const SITE_PEERING: &[Field] = &[
    open("apiVersion"),
    open("kind"),
    open("metadata"),
    object("spec", SITE_PEERING_SPEC),
    open("status"),
];

const ASSIGNMENT: &[Field] = &[
    open("apiVersion"),
    open("kind"),
    open("metadata"),
    object("spec", ASSIGNMENT_SPEC),
    open("status"),
];

const POOL_PEERING: &[Field] = &[
    open("apiVersion"),
    open("kind"),
    open("metadata"),
    object("spec", POOL_PEERING_SPEC),
    open("status"),
];

/// The top-level fields of a kind; `None` for core `v1` Nodes, which are not checked.
fn top_level(kind: Kind) -> Option<&'static [Field]> {
    match kind {
        Kind::Site => Some(SITE),
        Kind::SiteNodeSlice => Some(SITE_NODE_SLICE),
        Kind::GatewayPool => Some(GATEWAY_POOL),
        Kind::GatewayPoolNode => Some(GATEWAY_POOL_NODE),
        Kind::SitePeering => Some(SITE_PEERING),
        Kind::SiteGatewayPoolAssignment => Some(ASSIGNMENT),
        Kind::GatewayPoolPeering => Some(POOL_PEERING),
        Kind::Node => None,
    }
}

/// A key that its level does not define.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownField {
    /// The field path of the key, dotted with list indexes (`spec.podCidrAssignments[0].x`); a
    /// key that is very long or holds control characters is shortened and escaped.
    pub field: String,
    /// The 1-based line of the key (0 when the source has no lines).
    pub line: u32,
    /// The defined field at that level nearest to the key, when one is close.
    pub suggestion: Option<&'static str>,
}

/// A field path built on the way down and rendered only for a key that is reported.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

/// Longest key quoted whole in a field path.
const MAX_KEY_CHARS: usize = 80;

impl Path<'_> {
    fn render(&self) -> String {
        let mut parts: Vec<&Path<'_>> = Vec::new();
        let mut cur = self;
        loop {
            match cur {
                Path::Root => break,
                Path::Key(up, _) | Path::Index(up, _) => {
                    parts.push(cur);
                    cur = up;
                }
            }
        }
        let mut out = String::new();
        for p in parts.iter().rev() {
            match p {
                Path::Root => {}
                Path::Key(_, key) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    let mut chars = key.chars();
                    out.extend(
                        chars
                            .by_ref()
                            .take(MAX_KEY_CHARS)
                            .flat_map(char::escape_debug),
                    );
                    if chars.next().is_some() {
                        out.push('…');
                    }
                }
                Path::Index(_, i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        out
    }
}

/// Every key of `root` (an object of `kind`) that the kind's upstream schema does not define at
/// its level, in input order. Core `v1` Nodes and everything under an unchecked field give none;
/// a value of an unexpected type is not looked into (the decoder reports the fields it reads).
pub fn unknown_fields(kind: Kind, root: &Node) -> Vec<UnknownField> {
    let mut out = Vec::new();
    if let Some(fields) = top_level(kind) {
        check_object(fields, root, &Path::Root, &mut out);
    }
    out
}

/// Checks the keys of `node` against `fields`. Recursion follows the table, so its depth is the
/// table's (at most four levels), whatever the input's nesting.
fn check_object(
    fields: &'static [Field],
    node: &Node,
    path: &Path<'_>,
    out: &mut Vec<UnknownField>,
) {
    let Value::Map(entries) = &node.value else {
        return;
    };
    for e in entries {
        let here = Path::Key(path, &e.key);
        let Some(field) = fields.iter().find(|f| f.name == e.key) else {
            out.push(UnknownField {
                field: here.render(),
                line: e.line,
                suggestion: nearest(&e.key, fields.iter().map(|f| f.name)),
            });
            continue;
        };
        match field.below {
            Below::Open => {}
            Below::Object(sub) => check_object(sub, &e.node, &here, out),
            Below::List(sub) => {
                if let Value::Seq(items) = &e.node.value {
                    for (i, item) in items.iter().enumerate() {
                        check_object(sub, item, &Path::Index(&here, i), out);
                    }
                }
            }
        }
    }
}

/// Longest word for which a suggestion is searched: well beyond the longest name here, so a
/// long key costs nothing beyond counting this many characters.
const MAX_SUGGEST_CHARS: usize = 64;

/// The candidate nearest to `word` by edit distance, ignoring ASCII letter case (`tunnelMtu` is
/// `tunnelMTU` at distance 0), when it is close: at most a third of the word's length (at least
/// 1) edits away. Ties go to the earlier candidate. A word longer than 64 characters gets none.
pub fn nearest<'c>(word: &str, candidates: impl IntoIterator<Item = &'c str>) -> Option<&'c str> {
    nearest_all(word, candidates, 1).into_iter().next()
}

/// Up to `max` candidates at the smallest edit distance from `word`, under the same rule as
/// [`nearest`], in the order given (`node wx does not exist; did you mean wa, wb?`).
pub fn nearest_all<'c>(
    word: &str,
    candidates: impl IntoIterator<Item = &'c str>,
    max: usize,
) -> Vec<&'c str> {
    let w: Vec<char> = lower(word, MAX_SUGGEST_CHARS.saturating_add(1));
    if w.len() > MAX_SUGGEST_CHARS {
        return Vec::new();
    }
    let limit = (w.len() / 3).max(1);
    let mut best: Option<usize> = None;
    let mut out: Vec<&'c str> = Vec::new();
    for c in candidates {
        let cand = lower(c, MAX_SUGGEST_CHARS.saturating_add(1));
        // The distance is at least the difference in length.
        if cand.len().abs_diff(w.len()) > limit {
            continue;
        }
        let d = distance(&w, &cand);
        if d > limit {
            continue;
        }
        match best {
            Some(b) if d > b => {}
            Some(b) if d == b => {
                if out.len() < max {
                    out.push(c);
                }
            }
            _ => {
                best = Some(d);
                out.clear();
                if max > 0 {
                    out.push(c);
                }
            }
        }
    }
    out
}

/// `; did you mean a, b?` for a non-empty list of names (the end of an error that names what
/// does exist), nothing for an empty one.
pub fn did_you_mean<S: AsRef<str>>(names: &[S]) -> String {
    if names.is_empty() {
        return String::new();
    }
    let list: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    format!("; did you mean {}?", list.join(", "))
}

/// At most `max` characters of `s`, ASCII letters lowercased.
fn lower(s: &str, max: usize) -> Vec<char> {
    s.chars()
        .take(max)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// Edit distance counting insertions, deletions, substitutions and transpositions of two
/// neighbours (`spce` is one edit from `spec`): the optimal string alignment distance, three rows.
fn distance(a: &[char], b: &[char]) -> usize {
    let width = b.len().saturating_add(1);
    // Rows i-2, i-1 and i of the table, 0-based by prefix length.
    let mut before: Vec<usize> = Vec::with_capacity(width);
    let mut prev: Vec<usize> = (0..width).collect();
    let mut cur: Vec<usize> = Vec::with_capacity(width);
    let mut last_a: Option<char> = None;
    for (i, &ca) in a.iter().enumerate() {
        cur.clear();
        cur.push(i.saturating_add(1));
        let mut last_b: Option<char> = None;
        for (j, &cb) in b.iter().enumerate() {
            let diagonal = prev.get(j).copied().unwrap_or(usize::MAX);
            let up = prev.get(j.saturating_add(1)).copied().unwrap_or(usize::MAX);
            let left = cur.last().copied().unwrap_or(usize::MAX);
            let mut best = diagonal
                .saturating_add(usize::from(ca != cb))
                .min(up.saturating_add(1))
                .min(left.saturating_add(1));
            if ca != cb && last_a == Some(cb) && last_b == Some(ca) {
                let swapped = j
                    .checked_sub(1)
                    .and_then(|k| before.get(k))
                    .map_or(usize::MAX, |d| d.saturating_add(1));
                best = best.min(swapped);
            }
            cur.push(best);
            last_b = Some(cb);
        }
        last_a = Some(ca);
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev.last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::parse_stream;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn nearest_all_keeps_every_name_at_the_best_distance() {
        let names = ["wa", "wb", "gc", "wab"];
        assert_eq!(nearest_all("wx", names, 3), vec!["wa", "wb"]);
        assert_eq!(nearest_all("wx", names, 1), vec!["wa"]);
        assert_eq!(nearest("wab", names), Some("wab"));
        assert!(nearest_all("zzzz", names, 3).is_empty());
    }

    #[test]
    fn edit_distance() {
        assert_eq!(distance(&chars("kitten"), &chars("sitting")), 3);
        assert_eq!(distance(&chars(""), &chars("abc")), 3);
        assert_eq!(distance(&chars("abc"), &chars("")), 3);
        assert_eq!(distance(&chars("gatewaypool"), &chars("gatewaypools")), 1);
        assert_eq!(distance(&chars("spce"), &chars("spec")), 1);
        assert_eq!(distance(&chars("ab"), &chars("ba")), 1);
        assert_eq!(distance(&chars("abc"), &chars("ca")), 3);
        assert_eq!(distance(&chars("tunnelmtu"), &chars("tunnelmtu")), 0);
    }

    #[test]
    fn nearest_ignores_case_and_keeps_to_close_names() {
        let names = ["enabled", "gatewayPools", "tunnelProtocol", "tunnelMTU"];
        assert_eq!(nearest("tunnelMtu", names), Some("tunnelMTU"));
        assert_eq!(nearest("gatewayPool", names), Some("gatewayPools"));
        assert_eq!(nearest("tunelProtocol", names), Some("tunnelProtocol"));
        assert_eq!(nearest("enable", names), Some("enabled"));
        assert_eq!(nearest("colour", names), None);
        assert_eq!(nearest("x", names), None);
        assert_eq!(nearest(&"tunnelMTU".repeat(100), names), None);
        assert_eq!(
            nearest("GatewayPoolz", ["Site", "GatewayPool", "GatewayPoolNode"]),
            Some("GatewayPool")
        );
    }

    fn unknown(text: &str, kind: Kind) -> Vec<(String, u32, Option<&'static str>)> {
        let docs = parse_stream(text);
        let root = match docs.into_iter().next().map(|d| d.result) {
            Some(Ok(root)) => root,
            other => panic!("not a document: {other:?}"),
        };
        unknown_fields(kind, &root)
            .into_iter()
            .map(|u| (u.field, u.line, u.suggestion))
            .collect()
    }

    /// Paths are dotted with list indexes; lines are the keys' own; only defined levels are
    /// looked into.
    #[test]
    fn paths_lines_and_levels() {
        let got = unknown(
            "kind: Site
metadata: {name: a, anything: goes}
spec:
  nodeCidr: []
  podCidrAssignments:
    - cidrBlocks: []
    - cidrBlock: []
      nodeBlockSizes: {ipv4: 24, ipv8: 1}
  healthCheckSettings: {enabled: true, interval: 3}
status: {conditions: []}
extra: 1
",
            Kind::Site,
        );
        assert_eq!(
            got,
            [
                ("spec.nodeCidr".to_string(), 4, Some("nodeCidrs")),
                (
                    "spec.podCidrAssignments[1].cidrBlock".to_string(),
                    7,
                    Some("cidrBlocks")
                ),
                (
                    "spec.podCidrAssignments[1].nodeBlockSizes.ipv8".to_string(),
                    8,
                    Some("ipv4")
                ),
                ("spec.healthCheckSettings.interval".to_string(), 9, None),
                ("extra".to_string(), 11, None),
            ]
        );
    }

    /// Nodes are not checked; a GatewayPool's status is, a Site's is not.
    #[test]
    fn what_is_not_checked() {
        assert_eq!(
            unknown("kind: Node\nspec: {podCidr: x}\nfoo: 1\n", Kind::Node),
            []
        );
        assert_eq!(
            unknown(
                "kind: GatewayPool\nspec: {nodeSelector: {any: key}}\nstatus:\n  nodes: [{name: g, podCidrs: []}]\n",
                Kind::GatewayPool
            ),
            [("status.nodes[0].podCidrs".to_string(), 4, Some("podCIDRs"))]
        );
    }

    #[test]
    fn long_and_odd_keys_are_shortened_in_paths() {
        let key = "k".repeat(200);
        let got = unknown(
            &format!("kind: SitePeering\nspec: {{{key}: 1, \"a\\tb\": 2}}\n"),
            Kind::SitePeering,
        );
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, format!("spec.{}…", "k".repeat(80)));
        assert_eq!(got[1].0, "spec.a\\tb");
    }
}
