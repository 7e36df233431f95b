//! Caches kept by kube-runtime: a `watcher` (LIST with paging, WATCH from the list's resource
//! version with bookmarks, `410 Gone` → relist) over `DynamicObject`s feeds a `reflector` store,
//! which swaps a completed relist in at once (readers never see a half-applied relist). Every
//! change and every failed request is announced on a queue.
//!
//! The store keeps each object compact ([`Cached`]): its metadata, and its other fields as JSON
//! text, read where they are used. A `serde_json::Value` tree costs several times its text (a
//! map and a string per key), and the agent reads an object's fields only when it changed: the
//! turn's intake keeps what it decoded of the others.

use super::api::PAGE_SIZE;
use super::backoff::Backoff;
use super::error::describe_watcher;
use super::kinds::ResourceKind;
use super::metrics::classify;
use futures::{StreamExt, TryStreamExt};
use kube::Client;
use kube::api::Api;
use kube::core::{ApiResource, DynamicObject, ObjectMeta, PartialObjectMeta};
use kube::runtime::reflector::store::Writer;
use kube::runtime::reflector::{self, Lookup, ObjectRef};
use kube::runtime::watcher::{self, Event};
use kube::runtime::{WatchStreamExt, watcher as watch_stream};
use serde_json::Value;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Objects of one kind by name.
pub type Objects = BTreeMap<String, Value>;

/// A random watch timeout in [600, 1200) seconds (twice the usual range).
pub fn watch_timeout() -> u32 {
    fastrand::u32(600..1200)
}

/// What a store held at one moment, for answers kept while it holds the same: the store (each
/// gets its own number) and how often its contents had changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Version {
    store: u64,
    changes: u64,
}

/// The number of the next store made.
static STORES: AtomicU64 = AtomicU64::new(0);

/// An object as a store keeps it: what the store indexes it by, and the object as compact
/// JSON text (`apiVersion` and `kind` filled in where a list left them out, `managedFields` left
/// out: nothing reads it, and it is often the largest part of a Node's metadata), read where it
/// is used.
#[derive(Clone, Debug)]
pub struct Cached {
    name: Box<str>,
    resource_version: Option<Box<str>>,
    uid: Option<Box<str>>,
    text: Box<str>,
}

/// The object as [`Cached`] writes it.
#[derive(serde::Serialize)]
struct Whole<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    kind: &'a str,
    metadata: &'a ObjectMeta,
    #[serde(flatten)]
    fields: &'a Value,
}

impl Cached {
    /// What a store of `kind` keeps of `o`.
    pub fn of(kind: ResourceKind, o: &DynamicObject) -> Cached {
        let mut metadata = o.metadata.clone();
        metadata.managed_fields = None;
        let own = (kind.api_version(), kind.kind.as_str().to_string());
        let (api_version, kind_name) = match &o.types {
            Some(t) => (t.api_version.as_str(), t.kind.as_str()),
            None => (own.0.as_str(), own.1.as_str()),
        };
        let whole = Whole {
            api_version,
            kind: kind_name,
            metadata: &metadata,
            fields: &o.data,
        };
        let boxed = |s: &Option<String>| s.as_deref().map(Box::from);
        Cached {
            name: metadata.name.as_deref().unwrap_or_default().into(),
            resource_version: boxed(&metadata.resource_version),
            uid: boxed(&metadata.uid),
            text: serde_json::to_string(&whole)
                .unwrap_or_else(|_| "{}".into())
                .into_boxed_str(),
        }
    }

    /// Its name (the store holds only named objects).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The object, read.
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }
}

impl Lookup for Cached {
    type DynamicType = ApiResource;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn name(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(&self.name))
    }

    fn namespace(&self) -> Option<Cow<'_, str>> {
        None
    }

    fn resource_version(&self) -> Option<Cow<'_, str>> {
        self.resource_version.as_deref().map(Cow::Borrowed)
    }

    fn uid(&self) -> Option<Cow<'_, str>> {
        self.uid.as_deref().map(Cow::Borrowed)
    }
}

/// The cache of one kind: a kube-runtime reflector store, plus the objects it cannot hold.
pub struct Store {
    kind: ResourceKind,
    /// Its number and how often its contents changed ([`Version`]).
    id: u64,
    changes: AtomicU64,
    reader: reflector::Store<Cached>,
    writer: Mutex<Writer<Cached>>,
    /// Objects without `metadata.name` (the reflector keys objects by name): kept whole so that
    /// the decoder reports them, as it does for such objects in files. `buffer` collects them
    /// during a LIST, `listed` holds those of the last completed one.
    nameless: Mutex<Nameless>,
    synced: AtomicBool,
}

#[derive(Default)]
struct Nameless {
    buffer: Vec<Value>,
    listed: Vec<Value>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("kind", &self.kind)
            .field("objects", &self.reader.len())
            .field("synced", &self.synced())
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl Store {
    /// An empty, unsynced store.
    pub fn new(kind: ResourceKind) -> Store {
        let writer = Writer::new(kind.api_resource());
        Store {
            kind,
            id: STORES.fetch_add(1, Ordering::Relaxed),
            changes: AtomicU64::new(0),
            reader: writer.as_reader(),
            writer: Mutex::new(writer),
            nameless: Mutex::default(),
            synced: AtomicBool::new(false),
        }
    }

    /// Its kind.
    pub fn kind(&self) -> ResourceKind {
        self.kind
    }

    /// Whether the initial LIST has completed.
    pub fn synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// A consistent snapshot: every object as JSON (`apiVersion` and `kind` filled in) by name;
    /// nameless objects under keys of their own that no name can take. Built on each call and
    /// not kept: the reflector's store is the one copy that lives on.
    pub fn snapshot(&self) -> Arc<Objects> {
        Arc::new(self.held().values())
    }

    /// The object of this name, if the store holds one.
    pub fn get(&self, name: &str) -> Option<Arc<Cached>> {
        self.reader
            .get(&ObjectRef::new_with(name, self.kind.api_resource()))
    }

    /// Its version now. Read before the contents it stands for: a change in between makes a
    /// later version, never an earlier one.
    pub fn version(&self) -> Version {
        Version {
            store: self.id,
            changes: self.changes.load(Ordering::Acquire),
        }
    }

    /// What the store holds now, its objects shared with it (nothing is copied).
    pub fn held(&self) -> Held {
        Held {
            kind: self.kind,
            version: self.version(),
            objects: self.reader.state(),
            nameless: lock(&self.nameless).listed.clone(),
        }
    }

    /// Applies one watcher event; returns whether the contents changed (a completed LIST always
    /// counts as a change), which also moves the store's [`Version`] on.
    pub fn apply(&self, ev: &Event<DynamicObject>) -> bool {
        let changed = self.apply_event(ev);
        if changed {
            self.changes.fetch_add(1, Ordering::AcqRel);
        }
        changed
    }

    fn apply_event(&self, ev: &Event<DynamicObject>) -> bool {
        let write = |ev: Event<Cached>| lock(&self.writer).apply_watcher_event(&ev);
        match ev {
            Event::Init => {
                lock(&self.nameless).buffer.clear();
                write(Event::Init);
                false
            }
            Event::InitApply(o) if o.metadata.name.is_none() => {
                lock(&self.nameless).buffer.push(value_of(self.kind, o));
                false
            }
            Event::InitDone => {
                write(Event::InitDone);
                let mut n = lock(&self.nameless);
                n.listed = std::mem::take(&mut n.buffer);
                self.synced.store(true, Ordering::Release);
                true
            }
            Event::Apply(o) if o.metadata.name.is_none() => {
                lock(&self.nameless).listed.push(value_of(self.kind, o));
                true
            }
            // A nameless deletion names nothing to delete.
            Event::Delete(o) if o.metadata.name.is_none() => false,
            Event::Delete(o) => {
                let present = self
                    .get(o.metadata.name.as_deref().unwrap_or_default())
                    .is_some();
                write(Event::Delete(Cached::of(self.kind, o)));
                present
            }
            Event::InitApply(o) => {
                write(Event::InitApply(Cached::of(self.kind, o)));
                false
            }
            Event::Apply(o) => {
                write(Event::Apply(Cached::of(self.kind, o)));
                true
            }
        }
    }
}

/// An object as JSON with `apiVersion` and `kind` filled in (list items of core kinds omit
/// them). The reflector already read it as a `DynamicObject`, so no other check is needed.
fn value_of(kind: ResourceKind, o: &DynamicObject) -> Value {
    let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        m.entry("apiVersion")
            .or_insert_with(|| Value::String(kind.api_version()));
        m.entry("kind")
            .or_insert_with(|| Value::String(kind.kind.as_str().to_string()));
    }
    v
}

/// What a store held at one moment: its objects, shared with the store (the reflector replaces
/// an object's `Arc` whenever the object changes, and never changes one in place), and the
/// nameless objects.
#[derive(Clone, Debug)]
pub struct Held {
    kind: ResourceKind,
    version: Version,
    objects: Vec<Arc<Cached>>,
    nameless: Vec<Value>,
}

impl Held {
    /// The kind held.
    pub fn kind(&self) -> ResourceKind {
        self.kind
    }

    /// The store's version when it was read: the same version, the same contents.
    pub fn version(&self) -> Version {
        self.version
    }

    /// The named objects, in no particular order.
    pub fn objects(&self) -> &[Arc<Cached>] {
        &self.objects
    }

    /// The objects without a name, whole.
    pub fn nameless(&self) -> &[Value] {
        &self.nameless
    }

    /// One of its objects as JSON (`apiVersion` and `kind` filled in).
    pub fn value(&self, o: &Cached) -> Value {
        o.value()
    }

    /// Every object as JSON by name; nameless objects under keys of their own that no name can
    /// take.
    pub fn values(&self) -> Objects {
        let mut map = Objects::new();
        for o in &self.objects {
            map.insert(o.name().to_string(), self.value(o));
        }
        for (i, v) in self.nameless.iter().enumerate() {
            map.insert(format!("\u{0}{i}"), v.clone());
        }
        map
    }

    /// Every object as JSON, read one at a time: the named ones, then the nameless ones.
    pub fn each(&self) -> impl Iterator<Item = Value> + '_ {
        self.objects
            .iter()
            .map(|o| o.value())
            .chain(self.nameless.iter().cloned())
    }
}

/// A failed LIST or WATCH of a reflector.
#[derive(Debug, thiserror::Error)]
#[error("cannot list or watch {kind}")]
pub struct ApiError {
    /// The kind.
    pub kind: ResourceKind,
    /// The HTTP status of the answer, when one came (`None`: unreachable, a broken stream, an
    /// undecodable answer).
    pub code: Option<u16>,
    /// What kube-runtime's watcher reported.
    #[source]
    pub source: watcher::Error,
}

impl ApiError {
    /// The error of `kind`'s watcher, with its HTTP status.
    pub fn new(kind: ResourceKind, source: watcher::Error) -> ApiError {
        let code = match &source {
            watcher::Error::InitialListFailed(e)
            | watcher::Error::WatchStartFailed(e)
            | watcher::Error::WatchFailed(e) => match e {
                kube::Error::Api(s) => Some(s.code),
                _ => None,
            },
            watcher::Error::WatchError(s) => Some(s.code),
            watcher::Error::NoResourceVersion => None,
        };
        ApiError { kind, code, source }
    }

    /// Whether the initial LIST found no such resource (`404`: its CRD is not installed).
    pub fn resource_missing(&self) -> bool {
        matches!(self.source, watcher::Error::InitialListFailed(_)) && self.code == Some(404)
    }
}

/// What a reflector reports on its queue.
#[derive(Clone, Debug)]
pub enum Change {
    /// The initial (or a re-) LIST replaced the store.
    Listed(ResourceKind),
    /// A watch event changed it.
    Updated(ResourceKind),
    /// A LIST or WATCH failed; the next attempt follows after the backoff.
    Failed(ResourceKind, Arc<ApiError>),
}

impl PartialEq for Change {
    /// Failures compare by kind and HTTP status.
    fn eq(&self, other: &Change) -> bool {
        match (self, other) {
            (Change::Listed(a), Change::Listed(b)) | (Change::Updated(a), Change::Updated(b)) => {
                a == b
            }
            (Change::Failed(a, e), Change::Failed(b, f)) => a == b && e.code == f.code,
            _ => false,
        }
    }
}

impl Eq for Change {}

/// What a reflector reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReflectOptions {
    /// `labelSelector` of its LISTs and WATCHes.
    pub label_selector: Option<String>,
    /// Metadata only (`PartialObjectMetadata`).
    pub metadata_only: bool,
}

/// A metadata-only object as a `DynamicObject` with no other fields (`kind`
/// `PartialObjectMetadata` as the server sent it).
fn metadata_object(p: PartialObjectMeta<DynamicObject>) -> DynamicObject {
    DynamicObject {
        types: p.types,
        metadata: p.metadata,
        data: Value::Object(serde_json::Map::new()),
    }
}

fn map_event<A, B>(ev: Event<A>, f: impl Fn(A) -> B) -> Event<B> {
    match ev {
        Event::Apply(o) => Event::Apply(f(o)),
        Event::Delete(o) => Event::Delete(f(o)),
        Event::Init => Event::Init,
        Event::InitApply(o) => Event::InitApply(f(o)),
        Event::InitDone => Event::InitDone,
    }
}

/// `client`, with the WATCH requests sent through it starting at least `gap` apart. kube-runtime's
/// watcher reconnects at once when the server ends a watch normally; this keeps a server that
/// ends every watch immediately from drawing a request storm, while a watch that ran to its
/// timeout reconnects without delay.
fn paced(client: Client, gap: Duration) -> Client {
    let namespace = client.default_namespace().to_string();
    let last: Arc<tokio::sync::Mutex<Option<Instant>>> = Arc::default();
    let service = tower::service_fn(move |req: http::Request<kube::client::Body>| {
        let client = client.clone();
        let last = last.clone();
        async move {
            let (verb, _) = classify(req.method(), req.uri().path(), req.uri().query());
            if verb == "watch" {
                let mut last = last.lock().await;
                if let Some(t) = *last {
                    tokio::time::sleep_until(t + gap).await;
                }
                *last = Some(Instant::now());
            }
            client.send(req).await
        }
    });
    Client::new(service, namespace)
}

/// One backoff shared by the successive watchers of a reflector, which also remembers its last
/// delay (kube-runtime's `StreamBackoff` takes the backoff by value and sleeps inside the stream).
#[derive(Clone)]
struct SharedBackoff(Arc<Mutex<(Backoff, Duration)>>);

impl Iterator for SharedBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let mut g = lock(&self.0);
        let d = g.0.next_delay();
        g.1 = d;
        Some(d)
    }
}

impl kube::runtime::utils::Backoff for SharedBackoff {
    fn reset(&mut self) {
        lock(&self.0).0.reset();
    }
}

impl SharedBackoff {
    fn last_delay(&self) -> Duration {
        lock(&self.0).1
    }
}

/// Keeps `store` in sync with the API until the task is dropped or aborted, with kube-runtime's
/// watcher: LIST (pages of [`PAGE_SIZE`]), then WATCH from the list's resource version with
/// bookmarks and a timeout drawn from [`watch_timeout`] (once per reflector: the watcher keeps
/// one configuration); a watch that ends resumes from the last resource version seen, `410 Gone`
/// relists. After every failed request the next one waits for `backoff`, which is reset by
/// anything the stream delivers (a listed object, an event, a completed LIST). A kind whose
/// resource does not exist (`404` on the initial LIST: its CRD is not installed) counts as
/// listed and empty until a later LIST finds it.
pub async fn reflect(
    client: Client,
    store: Arc<Store>,
    opts: ReflectOptions,
    changes: mpsc::UnboundedSender<Change>,
    backoff: Backoff,
) {
    let kind = store.kind();
    let resource = kind.api_resource();
    let client = paced(client, backoff.base());
    let mut config = watcher::Config::default()
        .page_size(PAGE_SIZE)
        .timeout(watch_timeout());
    if let Some(l) = &opts.label_selector {
        config = config.labels(l);
    }
    let backoff = SharedBackoff(Arc::new(Mutex::new((backoff, Duration::ZERO))));
    loop {
        let events = if opts.metadata_only {
            let api = Api::<PartialObjectMeta<DynamicObject>>::all_with(client.clone(), &resource);
            watch_stream(api, config.clone())
                .map_ok(|ev| map_event(ev, metadata_object))
                .boxed()
        } else {
            let api = Api::<DynamicObject>::all_with(client.clone(), &resource);
            watch_stream(api, config.clone()).boxed()
        };
        // `Init` starts every LIST attempt, also one that fails: applied here and kept from the
        // backoff, which would otherwise be reset before each LIST and never grow.
        let init_store = store.clone();
        let events = events
            .try_filter(move |ev| {
                let init = matches!(ev, Event::Init);
                if init {
                    init_store.apply(ev);
                }
                futures::future::ready(!init)
            })
            .backoff(backoff.clone());
        let mut events = std::pin::pin!(events);
        while let Some(ev) = events.next().await {
            let mut relist = false;
            let change = match ev {
                Ok(ev) => {
                    let changed = store.apply(&ev);
                    match ev {
                        Event::InitDone => Some(Change::Listed(kind)),
                        _ if changed => Some(Change::Updated(kind)),
                        _ => None,
                    }
                }
                Err(e) => {
                    let e = Arc::new(ApiError::new(kind, e));
                    tracing::warn!(resource = %kind, code = ?e.code, error = %describe_watcher(&e.source), "LIST or WATCH failed");
                    if e.resource_missing() && !store.synced() {
                        tracing::warn!(resource = %kind, "the resource does not exist; an empty cache until it does");
                        store.apply(&Event::Init);
                        store.apply(&Event::InitDone);
                        if changes.send(Change::Listed(kind)).is_err() {
                            return;
                        }
                    }
                    // kube-runtime relists after a `410 Gone` watch event, but retries a WATCH
                    // request answered `410` from the same expired version: a new watcher
                    // relists instead.
                    relist = matches!(e.source, watcher::Error::WatchStartFailed(_))
                        && e.code == Some(410);
                    Some(Change::Failed(kind, e))
                }
            };
            if let Some(c) = change
                && changes.send(c).is_err()
            {
                return;
            }
            if relist {
                break;
            }
        }
        tokio::time::sleep(backoff.last_delay()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use topology_core::vocab::Kind;

    fn obj(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn relist_swaps_and_snapshots_stay_consistent() {
        let s = Store::new(ResourceKind::of(Kind::Site));
        assert!(!s.synced());
        let list = |names: &[&str]| {
            s.apply(&Event::Init);
            for n in names {
                s.apply(&Event::InitApply(obj(json!({"metadata": {"name": n}}))));
            }
            s.apply(&Event::InitDone)
        };
        assert!(list(&["a", "b"]));
        let before = s.snapshot();
        s.apply(&Event::Init);
        s.apply(&Event::InitApply(obj(json!({"metadata": {"name": "c"}}))));
        // A relist in progress is not seen.
        assert_eq!(s.snapshot().keys().collect::<Vec<_>>(), ["a", "b"]);
        s.apply(&Event::InitDone);
        assert_eq!(before.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(s.snapshot().keys().collect::<Vec<_>>(), ["c"]);
        assert!(s.apply(&Event::Apply(obj(json!({"metadata": {"name": "d"}})))));
        assert!(s.apply(&Event::Delete(obj(json!({"metadata": {"name": "c"}})))));
        assert!(!s.apply(&Event::Delete(obj(json!({"metadata": {"name": "c"}})))));
        let now = s.snapshot();
        assert_eq!(now.keys().collect::<Vec<_>>(), ["d"]);
        assert_eq!(now["d"]["kind"], "Site");
        assert!(s.synced());
    }

    #[test]
    fn an_object_is_kept_as_it_reads_without_managed_fields() {
        let node = obj(json!({"metadata": {
            "name": "n1", "resourceVersion": "7", "uid": "u1",
            "labels": {"a": "b"},
            "managedFields": [{"manager": "kubelet", "operation": "Update"}]},
            "spec": {"podCIDRs": ["10.0.0.0/24"]}}));
        let c = Cached::of(ResourceKind::of(Kind::Node), &node);
        assert_eq!(c.name(), "n1");
        assert_eq!(c.resource_version().as_deref(), Some("7"));
        assert_eq!(c.uid().as_deref(), Some("u1"));
        let v = c.value();
        assert_eq!(
            v["apiVersion"], "v1",
            "filled in for a list item of a core kind"
        );
        assert_eq!(v["kind"], "Node");
        assert_eq!(v["metadata"]["labels"], json!({"a": "b"}));
        assert!(v.pointer("/metadata/managedFields").is_none());
        assert_eq!(v["spec"], json!({"podCIDRs": ["10.0.0.0/24"]}));
        let site = obj(json!({"apiVersion": "example.com/v9", "kind": "Other",
            "metadata": {"name": "s"}, "spec": {"tunnelMTU": 1400}}));
        let v = Cached::of(ResourceKind::of(Kind::Site), &site).value();
        assert_eq!(
            (v["apiVersion"].as_str(), v["kind"].as_str()),
            (Some("example.com/v9"), Some("Other")),
            "the types an object came with are kept, for the decoder to judge"
        );
        assert_eq!(v["spec"]["tunnelMTU"], 1400);
    }

    #[test]
    fn nameless_objects_are_kept_for_the_decoder() {
        let s = Store::new(ResourceKind::of(Kind::Site));
        s.apply(&Event::Init);
        s.apply(&Event::InitApply(obj(json!({"metadata": {"name": "a"}}))));
        s.apply(&Event::InitApply(obj(json!({"metadata": {}, "spec": {}}))));
        s.apply(&Event::InitDone);
        let snap = s.snapshot();
        assert_eq!(snap.len(), 2);
        let nameless = snap.get("\u{0}0").unwrap_or_else(|| panic!("{snap:?}"));
        assert_eq!(nameless["kind"], "Site");
        assert!(nameless.pointer("/metadata/name").is_none());
    }
}
