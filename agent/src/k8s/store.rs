//! Reflector-style stores: a LIST fills a new map that replaces the old one in one step (readers
//! never see a half-applied relist), watch events update it incrementally, and every change is
//! announced on a queue.

use super::api::{self, WatchQuery, name_of, rv_of, typed};
use super::backoff::Backoff;
use super::kinds::ResourceKind;
use futures::StreamExt;
use kube::Client;
use kube::core::WatchEvent;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use tokio::sync::mpsc;

/// Objects of one kind by name.
pub type Objects = BTreeMap<String, Value>;

/// The cache of one kind.
#[derive(Debug)]
pub struct Store {
    kind: ResourceKind,
    objects: RwLock<Arc<Objects>>,
    synced: AtomicBool,
}

impl Store {
    /// An empty, unsynced store.
    pub fn new(kind: ResourceKind) -> Store {
        Store {
            kind,
            objects: RwLock::new(Arc::new(Objects::new())),
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

    /// A consistent snapshot.
    pub fn snapshot(&self) -> Arc<Objects> {
        match self.objects.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Replaces everything (a relist): one atomic swap.
    pub fn replace(&self, items: Vec<Value>) {
        let mut map = Objects::new();
        for (i, it) in items.into_iter().enumerate() {
            // A nameless object keeps a key of its own (the decoder reports it).
            let key = match name_of(&it) {
                Some(n) if !n.is_empty() => n.to_string(),
                _ => format!("\u{0}{i}"),
            };
            map.insert(key, it);
        }
        let new = Arc::new(map);
        match self.objects.write() {
            Ok(mut g) => *g = new,
            Err(p) => *p.into_inner() = new,
        }
        self.synced.store(true, Ordering::Release);
    }

    /// Applies one watch event; returns whether the contents changed.
    pub fn apply(&self, ev: &WatchEvent<Value>) -> bool {
        let mut guard = match self.objects.write() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        let map = Arc::make_mut(&mut guard);
        match ev {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                let o = typed(self.kind, o.clone());
                let key = name_of(&o).unwrap_or_default().to_string();
                map.insert(key, o);
                true
            }
            WatchEvent::Deleted(o) => map.remove(name_of(o).unwrap_or_default()).is_some(),
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => false,
        }
    }
}

/// What a reflector reports on its queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The initial (or a re-) LIST replaced the store.
    Listed(ResourceKind),
    /// A watch event changed it.
    Updated(ResourceKind),
}

/// What a reflector reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReflectOptions {
    /// `labelSelector` of its LISTs and WATCHes.
    pub label_selector: Option<String>,
    /// Metadata only (`PartialObjectMetadata`).
    pub metadata_only: bool,
}

/// Keeps `store` in sync with the API until the task is dropped or aborted: LIST, then WATCH from
/// the list's resource version; a closed stream resumes from the last resource version seen, a
/// `410 Gone` relists; every reconnect waits for `backoff` first.
pub async fn reflect(
    client: Client,
    store: Arc<Store>,
    opts: ReflectOptions,
    changes: mpsc::UnboundedSender<Change>,
    mut backoff: Backoff,
) {
    let kind = store.kind();
    let ReflectOptions {
        label_selector,
        metadata_only,
    } = opts;
    let accept = metadata_only.then_some(api::META_LIST_ACCEPT);
    let list_query: Vec<(&str, String)> = label_selector
        .iter()
        .map(|l| ("labelSelector", l.clone()))
        .collect();
    let mut rv: Option<String> = None;
    loop {
        let from = match rv.take() {
            Some(v) => v,
            None => match api::list_all_accept(&client, kind, &list_query, accept).await {
                Ok((items, list_rv)) => {
                    store.replace(items);
                    if changes.send(Change::Listed(kind)).is_err() {
                        return;
                    }
                    list_rv
                }
                Err(e) => {
                    tracing::warn!(resource = %kind, error = %e, status = ?api::api_status(&e), "LIST failed");
                    if api::api_status(&e).is_some_and(|s| s.code == 404) && !store.synced() {
                        // The resource does not exist (CRD not installed): an empty, synced cache
                        // so the agent is not held back; the LIST is retried after the backoff.
                        store.replace(Vec::new());
                        if changes.send(Change::Listed(kind)).is_err() {
                            return;
                        }
                    }
                    tokio::time::sleep(backoff.next_delay()).await;
                    continue;
                }
            },
        };
        let q = WatchQuery {
            resource_version: from.clone(),
            label_selector: label_selector.clone(),
            field_selector: None,
            timeout_seconds: api::watch_timeout(),
            metadata_only,
        };
        let mut last = from;
        let mut relist = false;
        match api::watch(&client, kind, &q).await {
            Ok(mut events) => {
                while let Some(ev) = events.next().await {
                    match ev {
                        Ok(WatchEvent::Error(s)) => {
                            tracing::info!(resource = %kind, code = s.code, reason = %s.reason, "watch error");
                            relist = s.code == 410;
                            break;
                        }
                        Ok(ev) => {
                            backoff.reset();
                            let new_rv = match &ev {
                                WatchEvent::Added(o)
                                | WatchEvent::Modified(o)
                                | WatchEvent::Deleted(o) => rv_of(o).map(str::to_string),
                                WatchEvent::Bookmark(b) => {
                                    Some(b.metadata.resource_version.clone())
                                }
                                WatchEvent::Error(_) => None,
                            };
                            if let Some(v) = new_rv {
                                last = v;
                            }
                            if store.apply(&ev) && changes.send(Change::Updated(kind)).is_err() {
                                return;
                            }
                        }
                        Err(e) => {
                            tracing::info!(resource = %kind, error = %e, "watch stream failed");
                            relist = api::api_status(&e).is_some_and(|s| s.code == 410);
                            break;
                        }
                    }
                }
            }
            Err(e) => {
                tracing::warn!(resource = %kind, error = %e, status = ?api::api_status(&e), "WATCH failed");
                relist = api::api_status(&e).is_some_and(|s| s.code == 410);
            }
        }
        if !relist {
            rv = Some(last);
        }
        tokio::time::sleep(backoff.next_delay()).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use topology_core::decode::Kind;

    #[test]
    fn relist_swaps_and_snapshots_stay_consistent() {
        let s = Store::new(ResourceKind::of(Kind::Site));
        assert!(!s.synced());
        s.replace(vec![
            json!({"metadata": {"name": "a"}}),
            json!({"metadata": {"name": "b"}}),
        ]);
        let before = s.snapshot();
        s.replace(vec![json!({"metadata": {"name": "c"}})]);
        assert_eq!(before.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(s.snapshot().keys().collect::<Vec<_>>(), ["c"]);
        assert!(s.apply(&WatchEvent::Added(json!({"metadata": {"name": "d"}}))));
        assert!(s.apply(&WatchEvent::Deleted(json!({"metadata": {"name": "c"}}))));
        let now = s.snapshot();
        assert_eq!(now.keys().collect::<Vec<_>>(), ["d"]);
        assert_eq!(now["d"]["kind"], "Site");
        assert!(s.synced());
    }
}
