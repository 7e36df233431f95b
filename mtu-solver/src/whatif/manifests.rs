//! What mutations change, written for an operator: for each changed object a JSON merge patch
//! (RFC 7386) in the shape of a partial manifest, and the changes that are no object's
//! ([`Unwritten`]). Found by comparing the input before with the input the mutations made
//! ([`apply_all`](super::apply_all)), so the manifests say what a what-if resolved, by the one
//! rule that applies mutations.

use super::input::Input;
use super::yaml;
use crate::raw::raw_cap;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use topology_core::decode::{RawCap, RawNode, RawObject, RawPathMtus, RawRelation, RawUnderlay};
use topology_core::vocab::{
    API_GROUP, API_VERSION, Kind, PATH_MTU_ANNOTATION, UNDERLAY_ANNOTATION, UNDERLAY_MAX_ANNOTATION,
};

/// The changes a list of mutations makes to a cluster, as an operator writes them: one
/// [`Manifest`] per changed object, sorted by kind (as [`Kind`] orders them) then name, and the
/// changes that no manifest can carry ([`Unwritten`]).
///
/// A manifest is a JSON merge patch (RFC 7386) that is also a partial manifest: `apiVersion`,
/// `kind`, `metadata.name` and only the fields the mutations changed, with the decoder's field
/// names and label and annotation keys. Fields it does not name (a Node's other labels, a
/// peering's `healthCheckSettings`) stay as they are; a removed cap or annotation is `null`,
/// which a merge patch deletes; a list (`spec.sites`, `spec.gatewayPools`) is written whole, as
/// a merge patch replaces lists.
///
/// Apply each manifest on its own, the file naming the object and holding the patch:
///
/// ```text
/// kubectl patch -f node-gw1.yaml --type merge --patch-file node-gw1.yaml
/// ```
///
/// One object per file: `kubectl patch` takes a file's first document as the patch of every
/// object `-f` names, so the stream of [`Manifests::to_yaml`] is for reading and recording,
/// never a `--patch-file`. Not `kubectl apply --server-side`: an applied partial manifest
/// creates the object when it does not exist, and server-side apply has no way to unset a
/// field that another manager set (the agent's annotations, a cap written with `kubectl
/// apply`), so a `null` would not remove it.
///
/// What the mutations map to:
///
/// | mutation | written |
/// |---|---|
/// | `set`, `clear` | the object's `spec.tunnelMTU` (`null` when cleared) |
/// | `enable`, `disable` | the relation's `spec.enabled` |
/// | `add-member`, `remove-member` | the relation's `spec.sites` or `spec.gatewayPools`, whole |
/// | `demote`, `promote` | the Node's `net.unbounded-cloud.io/gateway-pool` label (`""` for a worker); a pool's `status.nodes` is [`Unwritten::PoolStatus`] |
/// | `underlay` | the Node's `mtu.unbounded-cloud.io/underlay-mtu` annotation |
/// | `path` | the Node's `mtu.unbounded-cloud.io/path-mtu` annotation, whole (`null` when empty) |
/// | `agent-mtu` | [`Unwritten::AgentMtu`]: a setting of the agent, not an object |
///
/// The agent owns the `underlay-mtu` and `path-mtu` annotations on its own Node and writes them
/// again when what it detects or probes changes; an operator's lasting bound on a node's
/// underlay is `mtu.unbounded-cloud.io/underlay-mtu-max`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifests {
    objects: Vec<Manifest>,
    unwritten: Vec<Unwritten>,
}

/// One changed object: its kind, its name and the merge patch that changes it
/// ([`Manifests`] says how it is written and applied).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Manifest {
    kind: Kind,
    name: String,
    patch: Value,
}

/// A change the mutations made that no object's manifest carries.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unwritten {
    /// The agent's `mtu` setting on every node (its `--mtu` flag, environment `MTU`; 0 is
    /// none): set where the agent is deployed (its DaemonSet), not in an object.
    AgentMtu {
        /// The value.
        mtu: u32,
    },
    /// Gateways left (or joined) a GatewayPool's `status.nodes`. The pool's controller writes
    /// that status, from the Node labels a manifest sets: it is a status subresource, and its
    /// entries carry fields the resolver does not read (`wireGuardPublicKey`,
    /// `healthEndpoints`), so no partial manifest can write the list.
    PoolStatus {
        /// The GatewayPool.
        pool: String,
        /// The gateways taken out, by name.
        removed: Vec<String>,
        /// The gateways added, by name.
        added: Vec<String>,
    },
}

impl fmt::Display for Unwritten {
    /// One line: what changes and where an operator changes it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unwritten::AgentMtu { mtu: 0 } => f.write_str(
                "the agent's mtu setting (--mtu, environment MTU) is cleared on every node",
            ),
            Unwritten::AgentMtu { mtu } => write!(
                f,
                "the agent's mtu setting (--mtu, environment MTU) is {mtu} on every node"
            ),
            Unwritten::PoolStatus {
                pool,
                removed,
                added,
            } => {
                write!(f, "GatewayPool/{pool} status.nodes (its controller's)")?;
                if !removed.is_empty() {
                    write!(f, " without {}", removed.join(", "))?;
                }
                if !added.is_empty() {
                    write!(f, " with {}", added.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

impl Unwritten {
    /// Where it is listed: the agent's setting first, then pools by name.
    fn order(&self) -> (u8, &str) {
        match self {
            Unwritten::AgentMtu { .. } => (0, ""),
            Unwritten::PoolStatus { pool, .. } => (1, pool),
        }
    }
}

impl Manifests {
    /// The changed objects' manifests, by kind then name. Free.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Kind, Mutation};
    /// let change = [
    ///     Mutation::Underlay { node: "wb".into(), mtu: 9000 },
    ///     Mutation::SetCap { kind: Kind::SitePeering, name: "ab".into(), mtu: 1300 },
    ///     Mutation::Underlay { node: "wa".into(), mtu: 9000 },
    /// ];
    /// let manifests = resolver.manifests(&change)?;
    /// let names: Vec<_> = manifests.objects().iter().map(|m| (m.kind(), m.name())).collect();
    /// assert_eq!(names, [(Kind::SitePeering, "ab"), (Kind::Node, "wa"), (Kind::Node, "wb")]);
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn objects(&self) -> &[Manifest] {
        &self.objects
    }

    /// The changes no manifest carries: the agent's setting first, then pools' status by name.
    /// Free.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Mutation, Unwritten};
    /// let manifests = resolver.manifests(&[Mutation::AgentMtu(1300)])?;
    /// assert!(manifests.objects().is_empty());
    /// assert_eq!(manifests.unwritten(), [Unwritten::AgentMtu { mtu: 1300 }]);
    /// assert_eq!(
    ///     manifests.unwritten()[0].to_string(),
    ///     "the agent's mtu setting (--mtu, environment MTU) is 1300 on every node"
    /// );
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn unwritten(&self) -> &[Unwritten] {
        &self.unwritten
    }

    /// Whether the mutations changed nothing. Free.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Kind, Mutation};
    /// // The peering's cap is 1400 already.
    /// let same = Mutation::SetCap { kind: Kind::SitePeering, name: "ab".into(), mtu: 1400 };
    /// assert!(resolver.manifests(&[same])?.is_empty());
    /// assert!(!resolver.manifests(&[Mutation::AgentMtu(1300)])?.is_empty());
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty() && self.unwritten.is_empty()
    }

    /// Every manifest as one multi-document YAML stream (`---` between documents), after a
    /// comment line per [`Unwritten`] change. For reading and recording: apply each
    /// [`Manifest::to_yaml`] on its own ([`Manifests`] says why). Costs writing every
    /// manifest.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Kind, Mutation};
    /// let change = [
    ///     Mutation::AgentMtu(1300),
    ///     Mutation::SetCap { kind: Kind::SitePeering, name: "ab".into(), mtu: 1300 },
    /// ];
    /// let stream = resolver.manifests(&change)?.to_yaml();
    /// assert!(stream.starts_with("# not an object: the agent's mtu setting"), "{stream}");
    /// let peering = "kind: SitePeering\nmetadata:\n  name: ab\nspec:\n  tunnelMTU: 1300\n";
    /// assert!(stream.ends_with(peering), "{stream}");
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        for u in &self.unwritten {
            out.push_str("# not an object: ");
            out.push_str(&u.to_string().replace('\n', " "));
            out.push('\n');
        }
        for (i, m) in self.objects.iter().enumerate() {
            if i > 0 {
                out.push_str("---\n");
            }
            yaml::document(&m.patch, &mut out);
        }
        out
    }

    /// The manifests that make `before`'s cluster into `after`'s, where `after` is `before`
    /// changed by mutations ([`apply_all`](super::apply_all)): the same objects in the same
    /// places, so each object is compared with the one at its index.
    pub(super) fn between(before: &Input, after: &Input) -> Manifests {
        let mut patches: BTreeMap<(Kind, String), Map<String, Value>> = BTreeMap::new();
        let mut unwritten = Vec::new();
        if before.settings.cfg_mtu != after.settings.cfg_mtu {
            unwritten.push(Unwritten::AgentMtu {
                mtu: after.settings.cfg_mtu,
            });
        }
        for (b, a) in before.objects.iter().zip(&after.objects) {
            let patch = patches.entry((a.kind(), a.name().to_string())).or_default();
            changed_fields(b, a, patch, &mut unwritten);
        }
        underlay_overrides(before, after, &mut patches);
        unwritten.sort_by(|a, b| a.order().cmp(&b.order()));
        unwritten.dedup();
        let objects = patches
            .into_iter()
            .filter(|(_, p)| !p.is_empty())
            .map(|((kind, name), p)| Manifest::new(kind, name, p))
            .collect();
        Manifests { objects, unwritten }
    }
}

impl Manifest {
    /// The object's kind. Free.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Kind, Mutation};
    /// let manifests = resolver.manifests(&[Mutation::Underlay { node: "wa".into(), mtu: 9000 }])?;
    /// assert_eq!(manifests.objects()[0].kind(), Kind::Node);
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The object's name. Free.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::Mutation;
    /// let manifests = resolver.manifests(&[Mutation::Underlay { node: "wa".into(), mtu: 9000 }])?;
    /// assert_eq!(manifests.objects()[0].name(), "wa");
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The merge patch as JSON, `apiVersion`, `kind` and `metadata.name` included: what a
    /// Kubernetes client sends as a merge patch (`application/merge-patch+json`). Free.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::{Kind, Mutation};
    /// let clear = Mutation::ClearCap { kind: Kind::SitePeering, name: "ab".into() };
    /// let manifests = resolver.manifests(&[clear])?;
    /// let patch = manifests.objects()[0].patch();
    /// assert_eq!(patch["metadata"]["name"], "ab");
    /// // A merge patch deletes what it sets to null.
    /// assert!(patch["spec"]["tunnelMTU"].is_null());
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn patch(&self) -> &Value {
        &self.patch
    }

    /// The patch as one YAML document: the file of `kubectl patch -f FILE --type merge
    /// --patch-file FILE`. Costs writing the patch.
    ///
    /// ```
    /// # let resolver = mtu_solver::doc_cluster::resolver();
    /// use mtu_solver::Mutation;
    /// let manifests = resolver.manifests(&[Mutation::Underlay { node: "wa".into(), mtu: 9000 }])?;
    /// assert_eq!(manifests.objects()[0].to_yaml(), "\
    /// apiVersion: v1
    /// kind: Node
    /// metadata:
    ///   name: wa
    ///   annotations:
    ///     mtu.unbounded-cloud.io/underlay-mtu: \"9000\"
    /// ");
    /// # Ok::<(), mtu_solver::Error>(())
    /// ```
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        yaml::document(&self.patch, &mut out);
        out
    }

    /// The manifest of `kind`/`name` whose changed fields are `fields`.
    fn new(kind: Kind, name: String, fields: Map<String, Value>) -> Manifest {
        let mut doc = Map::new();
        let api_version = match kind {
            Kind::Node => "v1".to_string(),
            _ => format!("{API_GROUP}/{API_VERSION}"),
        };
        doc.insert("apiVersion".into(), Value::String(api_version));
        doc.insert("kind".into(), Value::String(kind.as_str().into()));
        set(&mut doc, &["metadata", "name"], Value::String(name.clone()));
        merge(&mut doc, fields);
        Manifest {
            kind,
            name,
            patch: Value::Object(doc),
        }
    }
}

/// Writes into `patch` the fields of `before` that `after` changed, and into `unwritten` the
/// changes no manifest carries. Only the fields a mutation can change are compared: caps,
/// relations' `enabled` and members, Node labels and MTU annotations, pools' `status.nodes`.
fn changed_fields(
    before: &RawObject,
    after: &RawObject,
    patch: &mut Map<String, Value>,
    unwritten: &mut Vec<Unwritten>,
) {
    if let (Some(b), Some(a)) = (raw_cap(before), raw_cap(after))
        && !same_cap(b.as_ref(), a.as_ref())
    {
        set(patch, &["spec", "tunnelMTU"], cap_value(a.as_ref()));
    }
    match (before, after) {
        (RawObject::Node(b), RawObject::Node(a)) => node_fields(b, a, patch),
        (RawObject::SitePeering(b), RawObject::SitePeering(a))
        | (RawObject::Assignment(b), RawObject::Assignment(a))
        | (RawObject::PoolPeering(b), RawObject::PoolPeering(a)) => relation_fields(b, a, patch),
        (RawObject::Pool(b), RawObject::Pool(a)) => {
            let names = |p: &[topology_core::decode::RawStatusNode]| -> Vec<String> {
                p.iter().map(|n| n.name.clone()).collect()
            };
            let (was, is) = (names(&b.status_nodes), names(&a.status_nodes));
            let removed: Vec<String> = was.iter().filter(|n| !is.contains(n)).cloned().collect();
            let added: Vec<String> = is.iter().filter(|n| !was.contains(n)).cloned().collect();
            if !removed.is_empty() || !added.is_empty() {
                unwritten.push(Unwritten::PoolStatus {
                    pool: a.meta.name.clone(),
                    removed,
                    added,
                });
            }
        }
        _ => {}
    }
}

/// Whether two caps read the same, wherever they were written.
fn same_cap(a: Option<&RawCap>, b: Option<&RawCap>) -> bool {
    a.map(|c| (c.mtu, &c.invalid)) == b.map(|c| (c.mtu, &c.invalid))
}

/// A `tunnelMTU` as written: its value, the text it was written as when invalid (a number when
/// it is one), `null` when there is none.
fn cap_value(cap: Option<&RawCap>) -> Value {
    match cap {
        None => Value::Null,
        Some(RawCap {
            invalid: Some(text),
            ..
        }) => text
            .trim()
            .parse::<i64>()
            .map_or_else(|_| Value::String(text.clone()), Value::from),
        Some(c) => Value::from(c.mtu),
    }
}

/// A relation's changed `spec.enabled` and member lists (each written whole).
fn relation_fields(b: &RawRelation, a: &RawRelation, patch: &mut Map<String, Value>) {
    if b.enabled != a.enabled {
        set(patch, &["spec", "enabled"], Value::Bool(a.enabled));
    }
    let names = |m: &[topology_core::decode::Member]| -> Vec<Value> {
        m.iter().map(|x| Value::String(x.name.clone())).collect()
    };
    for (was, is, field) in [
        (&b.sites, &a.sites, "sites"),
        (&b.pools, &a.pools, "gatewayPools"),
    ] {
        let is = names(is);
        if names(was) != is {
            set(patch, &["spec", field], Value::Array(is));
        }
    }
}

/// A Node's changed labels (a removed one `null`) and MTU annotations.
fn node_fields(b: &RawNode, a: &RawNode, patch: &mut Map<String, Value>) {
    let labels =
        |n: &RawNode| -> BTreeMap<Arc<str>, Arc<str>> { n.labels.iter().cloned().collect() };
    let (was, is) = (labels(b), labels(a));
    for (k, v) in &is {
        if was.get(k) != Some(v) {
            set(
                patch,
                &["metadata", "labels", k],
                Value::String(v.to_string()),
            );
        }
    }
    for k in was.keys().filter(|k| !is.contains_key(*k)) {
        set(patch, &["metadata", "labels", k], Value::Null);
    }
    for (was, is, key) in [
        (&b.underlay, &a.underlay, UNDERLAY_ANNOTATION),
        (&b.underlay_max, &a.underlay_max, UNDERLAY_MAX_ANNOTATION),
    ] {
        if was != is {
            set(
                patch,
                &["metadata", "annotations", key],
                underlay_value(is.as_ref()),
            );
        }
    }
    if b.path_mtu != a.path_mtu {
        set(
            patch,
            &["metadata", "annotations", PATH_MTU_ANNOTATION],
            path_value(a.path_mtu.as_deref()),
        );
    }
}

/// An underlay annotation's value as written (its invalid text when invalid), `null` when
/// absent.
fn underlay_value(u: Option<&RawUnderlay>) -> Value {
    match u {
        None => Value::Null,
        Some(RawUnderlay {
            invalid: Some(text),
            ..
        }) => Value::String(text.clone()),
        Some(u) => Value::String(u.mtu.to_string()),
    }
}

/// A `path-mtu` annotation's value: its entries as `PEER=MTU`, comma-separated, in order (an
/// invalid one as written); `null` when it has none.
fn path_value(p: Option<&RawPathMtus>) -> Value {
    let Some(p) = p.filter(|p| !p.entries.is_empty()) else {
        return Value::Null;
    };
    let entries: Vec<String> = p
        .entries
        .iter()
        .map(|e| match &e.invalid {
            Some(text) => format!("{}={text}", e.peer),
            None => format!("{}={}", e.peer, e.mtu),
        })
        .collect();
    Value::String(entries.join(","))
}

/// The underlay MTUs given in the settings (what `underlay NODE=MTU` sets) that changed, as the
/// Nodes' `underlay-mtu` annotation: the value given, or, where none is given any more, the
/// Node object's own annotation (`null` without one).
fn underlay_overrides(
    before: &Input,
    after: &Input,
    patches: &mut BTreeMap<(Kind, String), Map<String, Value>>,
) {
    let (was, is) = (
        &before.settings.underlay_overrides,
        &after.settings.underlay_overrides,
    );
    for node in was.keys().chain(is.keys()) {
        if was.get(node) == is.get(node) {
            continue;
        }
        let value = match is.get(node) {
            Some(v) => Value::String(v.to_string()),
            None => underlay_value(after.objects.iter().find_map(|o| match o {
                RawObject::Node(n) if n.meta.name == *node => n.underlay.as_ref(),
                _ => None,
            })),
        };
        let patch = patches.entry((Kind::Node, node.clone())).or_default();
        set(
            patch,
            &["metadata", "annotations", UNDERLAY_ANNOTATION],
            value,
        );
    }
}

/// Sets the field at `path` (one key per level: annotation keys hold dots) to `value`,
/// making the maps on the way.
fn set(map: &mut Map<String, Value>, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = map;
    for key in parents {
        let slot = at
            .entry((*key).to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !slot.is_object() {
            *slot = Value::Object(Map::new());
        }
        let Value::Object(inner) = slot else {
            return;
        };
        at = inner;
    }
    at.insert((*last).to_string(), value);
}

/// Merges the fields of `from` into `into`, maps key by key.
fn merge(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (k, v) in from {
        match (into.get_mut(&k), v) {
            (Some(Value::Object(existing)), Value::Object(more)) => merge(existing, more),
            (_, v) => {
                into.insert(k, v);
            }
        }
    }
}
