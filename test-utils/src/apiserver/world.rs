//! What the fake API server holds and answers, without I/O: the objects of each collection at
//! a cluster-wide resource version, every change kept in order (so a watch resumes from any
//! resource version a LIST returned), the open watches with their selectors, and the load
//! served (requests, watch events, bytes).

use super::Load;
use super::selector::{FieldSelector, LabelSelector};
use bytes::Bytes;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::sync::mpsc;

/// What a request is answered with.
pub(crate) enum Answer {
    /// A JSON body and its status code.
    Json(u16, Value),
    /// A watch stream: newline-delimited events from this receiver, ended by the server after
    /// the timeout the client asked for.
    Watch(mpsc::UnboundedReceiver<Bytes>, Option<Duration>),
}

/// One change of one object: `old` before it, `new` after it (`None`: absent).
struct Change {
    rv: u64,
    old: Option<Value>,
    new: Option<Value>,
}

/// The objects of one collection path, by name, and every change to them in order.
struct Collection {
    api_version: String,
    kind: String,
    objects: BTreeMap<String, Value>,
    history: Vec<Change>,
}

/// An open watch.
struct Watcher {
    collection: String,
    labels: LabelSelector,
    fields: FieldSelector,
    metadata_only: bool,
    tx: mpsc::UnboundedSender<Bytes>,
}

/// The server's state.
#[derive(Default)]
pub(crate) struct World {
    rv: u64,
    collections: BTreeMap<String, Collection>,
    watchers: Vec<Watcher>,
    pub(crate) load: Load,
}

/// A parsed request.
pub(crate) struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub accept: &'a str,
    pub body: &'a [u8],
}

impl Request<'_> {
    fn param(&self, key: &str) -> Option<String> {
        self.query.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k == key).then(|| super::percent_decode(v))
        })
    }

    fn metadata_only(&self) -> bool {
        self.accept.contains("as=PartialObjectMetadata")
    }
}

/// The collection path of an object: `/api/v1` for the core group, `/apis/GROUP/VERSION`
/// otherwise, then `namespaces/NS` when namespaced, then the lower-case plural of its kind.
pub(crate) fn collection_of(object: &Value) -> Option<String> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let root = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    let plural = format!("{}s", kind.to_ascii_lowercase());
    Some(
        match object
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
        {
            Some(ns) => format!("{root}/namespaces/{ns}/{plural}"),
            None => format!("{root}/{plural}"),
        },
    )
}

fn name_of(object: &Value) -> Option<String> {
    Some(object.pointer("/metadata/name")?.as_str()?.to_string())
}

fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Status", "status": "Failure", "code": code,
        "reason": reason, "message": message, "metadata": {}})
}

fn partial(object: &Value) -> Value {
    json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata",
        "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({}))})
}

/// RFC 7386 JSON merge patch.
fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

impl World {
    /// Declares a collection (empty until objects are put into it).
    pub(crate) fn declare(&mut self, path: &str, api_version: &str, kind: &str) {
        self.collections
            .entry(path.to_string())
            .or_insert_with(|| Collection {
                api_version: api_version.to_string(),
                kind: kind.to_string(),
                objects: BTreeMap::new(),
                history: Vec::new(),
            });
    }

    /// Creates or replaces an object in its collection (declared on the way); `false` when it
    /// has no apiVersion, kind or name.
    pub(crate) fn put(&mut self, object: Value) -> bool {
        let (Some(path), Some(name)) = (collection_of(&object), name_of(&object)) else {
            return false;
        };
        let api_version = object["apiVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let kind = object["kind"].as_str().unwrap_or_default().to_string();
        self.declare(&path, &api_version, &kind);
        self.change(&path, &name, Some(object));
        true
    }

    /// Changes an object in place with `edit`; `false` when there is no such object.
    pub(crate) fn update(&mut self, path: &str, name: &str, edit: impl FnOnce(&mut Value)) -> bool {
        let Some(mut object) = self
            .collections
            .get(path)
            .and_then(|c| c.objects.get(name))
            .cloned()
        else {
            return false;
        };
        edit(&mut object);
        self.change(path, name, Some(object));
        true
    }

    /// The object `name` of the collection `path`, as held now.
    pub(crate) fn held(&self, path: &str, name: &str) -> Option<Value> {
        self.collections
            .get(path)
            .and_then(|c| c.objects.get(name))
            .cloned()
    }

    /// Deletes an object; `false` when there is no such object.
    pub(crate) fn delete(&mut self, path: &str, name: &str) -> bool {
        let held = self
            .collections
            .get(path)
            .is_some_and(|c| c.objects.contains_key(name));
        if held {
            self.change(path, name, None);
        }
        held
    }

    /// Records one change at the next resource version and sends it to the watches it
    /// concerns.
    fn change(&mut self, path: &str, name: &str, new: Option<Value>) {
        self.rv += 1;
        let rv = self.rv;
        let Some(c) = self.collections.get_mut(path) else {
            return;
        };
        let new = new.map(|mut o| {
            o["metadata"]["resourceVersion"] = json!(rv.to_string());
            if o.pointer("/metadata/uid").is_none() {
                o["metadata"]["uid"] = json!(format!("uid-{name}"));
            }
            o
        });
        let old = match &new {
            Some(o) => c.objects.insert(name.to_string(), o.clone()),
            None => c.objects.remove(name),
        };
        let change = Change { rv, old, new };
        let load = &mut self.load;
        self.watchers.retain(|w| {
            if w.collection != path {
                return !w.tx.is_closed();
            }
            match w.event(&change) {
                Some(line) => send(load, &w.tx, line),
                None => !w.tx.is_closed(),
            }
        });
        c.history.push(change);
    }

    /// Answers one request.
    pub(crate) fn answer(&mut self, req: &Request<'_>) -> Answer {
        self.load.requests += 1;
        let path = req.path.strip_suffix("/status").unwrap_or(req.path);
        let is_collection = self.collections.contains_key(path);
        match (req.method, is_collection) {
            ("GET", true) if req.param("watch").as_deref() == Some("true") => {
                self.load.watches += 1;
                self.watch(path, req)
            }
            ("GET", true) => {
                self.load.lists += 1;
                self.list(path, req)
            }
            ("GET", false) => {
                self.load.gets += 1;
                self.get(path, req)
            }
            ("PATCH", false) => {
                self.load.patches += 1;
                self.patch(path, req)
            }
            _ => Answer::Json(
                405,
                status(
                    405,
                    "MethodNotAllowed",
                    "the fake API server does not serve this",
                ),
            ),
        }
    }

    fn selectors(req: &Request<'_>) -> Result<(LabelSelector, FieldSelector), Answer> {
        let bad =
            |e: super::selector::BadSelector| Answer::Json(400, status(400, "BadRequest", &e.0));
        let labels = LabelSelector::parse(&req.param("labelSelector").unwrap_or_default());
        let fields = FieldSelector::parse(&req.param("fieldSelector").unwrap_or_default());
        Ok((labels.map_err(bad)?, fields.map_err(bad)?))
    }

    /// A LIST, in pages of `limit` when asked: the continue token carries the first page's
    /// resource version, which every page reports, so that a watch from it sees every change
    /// made while the pages were read.
    fn list(&mut self, path: &str, req: &Request<'_>) -> Answer {
        let (labels, fields) = match Self::selectors(req) {
            Ok(s) => s,
            Err(a) => return a,
        };
        let (snapshot, after) = match req.param("continue").filter(|c| !c.is_empty()) {
            Some(token) => match token.split_once(':') {
                Some((rv, name)) => (rv.parse().unwrap_or(self.rv), Some(name.to_string())),
                None => return Answer::Json(400, status(400, "BadRequest", "bad continue token")),
            },
            None => (self.rv, None),
        };
        let limit = req
            .param("limit")
            .and_then(|l| l.parse::<usize>().ok())
            .filter(|l| *l > 0)
            .unwrap_or(usize::MAX);
        let Some(c) = self.collections.get(path) else {
            return Answer::Json(404, status(404, "NotFound", path));
        };
        let metadata_only = req.metadata_only();
        let mut items = Vec::new();
        let (mut next, mut last) = (None, None);
        let from = after
            .as_deref()
            .map_or(std::ops::Bound::Unbounded, std::ops::Bound::Excluded);
        for (name, o) in c
            .objects
            .range::<str, _>((from, std::ops::Bound::Unbounded))
            .filter(|(_, o)| labels.matches(o) && fields.matches(o))
        {
            if items.len() == limit {
                next = Some(format!("{snapshot}:{}", last.unwrap_or_default()));
                break;
            }
            last = Some(name.as_str());
            items.push(if metadata_only { partial(o) } else { o.clone() });
        }
        let mut metadata = json!({"resourceVersion": snapshot.to_string()});
        if let Some(n) = next {
            metadata["continue"] = json!(n);
        }
        let (api_version, kind) = if metadata_only {
            (
                "meta.k8s.io/v1".to_string(),
                "PartialObjectMetadataList".to_string(),
            )
        } else {
            (c.api_version.clone(), format!("{}List", c.kind))
        };
        Answer::Json(
            200,
            json!({"apiVersion": api_version, "kind": kind, "metadata": metadata, "items": items}),
        )
    }

    /// A WATCH from the resource version asked (every current object as ADDED from `""` or
    /// `"0"`), then live, until the client goes away or its timeout passes.
    fn watch(&mut self, path: &str, req: &Request<'_>) -> Answer {
        let (labels, fields) = match Self::selectors(req) {
            Ok(s) => s,
            Err(a) => return a,
        };
        let (tx, rx) = mpsc::unbounded_channel();
        let watcher = Watcher {
            collection: path.to_string(),
            labels,
            fields,
            metadata_only: req.metadata_only(),
            tx,
        };
        let Some(c) = self.collections.get(path) else {
            return Answer::Json(404, status(404, "NotFound", path));
        };
        match req
            .param("resourceVersion")
            .filter(|v| !v.is_empty() && v != "0")
        {
            Some(from) => {
                let from: u64 = from.parse().unwrap_or(0);
                let start = c.history.partition_point(|ch| ch.rv <= from);
                for ch in &c.history[start..] {
                    if let Some(line) = watcher.event(ch) {
                        send(&mut self.load, &watcher.tx, line);
                    }
                }
            }
            None => {
                for o in c.objects.values() {
                    let ch = Change {
                        rv: 0,
                        old: None,
                        new: Some(o.clone()),
                    };
                    if let Some(line) = watcher.event(&ch) {
                        send(&mut self.load, &watcher.tx, line);
                    }
                }
            }
        }
        self.watchers.push(watcher);
        let timeout = req
            .param("timeoutSeconds")
            .and_then(|t| t.parse().ok())
            .map(Duration::from_secs);
        Answer::Watch(rx, timeout)
    }

    fn object(&self, path: &str) -> Option<(&str, &str, &Value)> {
        let (collection, name) = path.rsplit_once('/')?;
        let (key, c) = self.collections.get_key_value(collection)?;
        let (name, o) = c.objects.get_key_value(name)?;
        Some((key.as_str(), name.as_str(), o))
    }

    fn get(&self, path: &str, req: &Request<'_>) -> Answer {
        match self.object(path) {
            Some((_, _, o)) if req.metadata_only() => Answer::Json(200, partial(o)),
            Some((_, _, o)) => Answer::Json(200, o.clone()),
            None => Answer::Json(404, status(404, "NotFound", &format!("{path} not found"))),
        }
    }

    /// A PATCH, read as a JSON merge patch (the only kind the agent sends).
    fn patch(&mut self, path: &str, req: &Request<'_>) -> Answer {
        let Ok(patch) = serde_json::from_slice::<Value>(req.body) else {
            return Answer::Json(400, status(400, "BadRequest", "the patch is no JSON"));
        };
        let Some((collection, name, o)) = self.object(path) else {
            return Answer::Json(404, status(404, "NotFound", &format!("{path} not found")));
        };
        let (collection, name, mut o) = (collection.to_string(), name.to_string(), o.clone());
        merge(&mut o, &patch);
        self.change(&collection, &name, Some(o));
        match self.object(path) {
            Some((_, _, o)) => Answer::Json(200, o.clone()),
            None => Answer::Json(500, status(500, "InternalError", "patched object vanished")),
        }
    }
}

/// Sends one event line; counts it when the watch is still open. Returns whether it is.
fn send(load: &mut Load, tx: &mpsc::UnboundedSender<Bytes>, line: Bytes) -> bool {
    let len = line.len() as u64;
    if tx.send(line).is_err() {
        return false;
    }
    load.events += 1;
    load.bytes += len;
    true
}

impl Watcher {
    /// The event this watch sees of a change: an object entering its selection is ADDED, one
    /// leaving it DELETED, one staying in it MODIFIED.
    fn event(&self, ch: &Change) -> Option<Bytes> {
        let selected = |o: &Option<Value>| {
            o.as_ref()
                .is_some_and(|o| self.labels.matches(o) && self.fields.matches(o))
        };
        let (ty, object) = match (selected(&ch.old), selected(&ch.new)) {
            (false, true) => ("ADDED", ch.new.clone()?),
            (true, true) => ("MODIFIED", ch.new.clone()?),
            (true, false) => {
                let mut gone = ch.new.clone().or_else(|| ch.old.clone())?;
                gone["metadata"]["resourceVersion"] = json!(ch.rv.to_string());
                ("DELETED", gone)
            }
            (false, false) => return None,
        };
        let object = if self.metadata_only {
            partial(&object)
        } else {
            object
        };
        let mut line = serde_json::to_vec(&json!({"type": ty, "object": object})).ok()?;
        line.push(b'\n');
        Some(Bytes::from(line))
    }
}
