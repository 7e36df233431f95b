//! Raw requests: LIST (paged, tolerant), WATCH (newline-delimited events), and API status.

use super::kinds::{ResourceKind, with_query};
use futures::{Stream, StreamExt};
use kube::Client;
use kube::core::{DynamicObject, WatchEvent};
use serde_json::Value;

/// The API status of a failed request (`code`, `reason`), when the server sent one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiStatus {
    /// HTTP status code.
    pub code: u16,
    /// `reason` (e.g. `Conflict`, `Forbidden`, `Invalid`, `NotFound`, `Expired`).
    pub reason: String,
    /// Message.
    pub message: String,
}

/// The API status of a kube error, if it carries one.
pub fn api_status(e: &kube::Error) -> Option<ApiStatus> {
    match e {
        kube::Error::Api(s) => Some(ApiStatus {
            code: s.code,
            reason: s.reason.clone(),
            message: s.message.clone(),
        }),
        _ => None,
    }
}

/// The API status of an `anyhow` error chain, if any link is a kube API error.
pub fn api_status_any(e: &anyhow::Error) -> Option<ApiStatus> {
    e.chain()
        .find_map(|c| c.downcast_ref::<kube::Error>().and_then(api_status))
}

/// `Accept` of a metadata-only LIST.
pub const META_LIST_ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
/// `Accept` of a metadata-only WATCH (and GET).
pub const META_ACCEPT: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// A raw GET returning JSON.
pub async fn get_json(client: &Client, path_and_query: &str) -> Result<Value, kube::Error> {
    get_json_accept(client, path_and_query, None).await
}

/// A raw GET returning JSON, with an `Accept` header when given.
pub async fn get_json_accept(
    client: &Client,
    path_and_query: &str,
    accept: Option<&str>,
) -> Result<Value, kube::Error> {
    let mut req = http::Request::get(path_and_query);
    if let Some(a) = accept {
        req = req.header(http::header::ACCEPT, a);
    }
    let req = req.body(Vec::new()).map_err(kube::Error::HttpError)?;
    client.request::<Value>(req).await
}

/// One full LIST: every item (with `apiVersion` and `kind` filled in when the server left them
/// out) and the list's resource version. Items are raw JSON: one malformed object cannot fail the
/// LIST; the decoder turns it into a diagnostic.
pub async fn list_all(
    client: &Client,
    kind: ResourceKind,
    query: &[(&str, String)],
) -> Result<(Vec<Value>, String), kube::Error> {
    list_all_accept(client, kind, query, None).await
}

/// As [`list_all`], with an `Accept` header (e.g. [`META_LIST_ACCEPT`]).
pub async fn list_all_accept(
    client: &Client,
    kind: ResourceKind,
    query: &[(&str, String)],
    accept: Option<&str>,
) -> Result<(Vec<Value>, String), kube::Error> {
    let mut items = Vec::new();
    let mut cont: Option<String> = None;
    loop {
        let mut q: Vec<(&str, String)> = query.to_vec();
        q.push(("limit", "500".to_string()));
        if let Some(c) = &cont {
            q.push(("continue", c.clone()));
        }
        let list = get_json_accept(client, &with_query(&kind.path(), &q), accept).await?;
        let rv = list
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(Value::Array(page)) = list.get("items") {
            for item in page {
                items.push(typed(kind, item.clone()));
            }
        }
        cont = list
            .pointer("/metadata/continue")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        if cont.is_none() {
            return Ok((items, rv));
        }
    }
}

/// Fills in `apiVersion` and `kind` when missing (list items of core kinds omit them) and reads
/// the object as a `DynamicObject`; an object that does not read as one (e.g. a `metadata` of the
/// wrong shape) is kept as it came, for the decoder to report.
pub fn typed(kind: ResourceKind, mut item: Value) -> Value {
    if let Value::Object(m) = &mut item {
        m.entry("apiVersion")
            .or_insert_with(|| Value::String(kind.api_version()));
        m.entry("kind")
            .or_insert_with(|| Value::String(kind.kind.as_str().to_string()));
    }
    match serde_json::from_value::<DynamicObject>(item.clone()) {
        Ok(o) => serde_json::to_value(&o).unwrap_or(item),
        Err(_) => item,
    }
}

/// `metadata.name` of a raw object.
pub fn name_of(v: &Value) -> Option<&str> {
    v.pointer("/metadata/name").and_then(Value::as_str)
}

/// `metadata.resourceVersion` of a raw object.
pub fn rv_of(v: &Value) -> Option<&str> {
    v.pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
}

/// Parameters of a watch.
#[derive(Clone, Debug, Default)]
pub struct WatchQuery {
    /// Start from this resource version.
    pub resource_version: String,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// Server-side timeout in seconds.
    pub timeout_seconds: u32,
    /// Metadata only (`PartialObjectMetadata`).
    pub metadata_only: bool,
}

impl WatchQuery {
    /// The query pairs.
    pub fn pairs(&self) -> Vec<(&'static str, String)> {
        let mut q = vec![("watch", "true".to_string())];
        if let Some(f) = &self.field_selector {
            q.push(("fieldSelector", f.clone()));
        }
        if let Some(l) = &self.label_selector {
            q.push(("labelSelector", l.clone()));
        }
        q.push(("resourceVersion", self.resource_version.clone()));
        q.push(("allowWatchBookmarks", "true".to_string()));
        q.push(("timeoutSeconds", self.timeout_seconds.to_string()));
        q
    }
}

/// A random watch timeout in [600, 1200) seconds (twice the usual range).
pub fn watch_timeout() -> u32 {
    fastrand::u32(600..1200)
}

/// Starts a raw WATCH; the stream ends when the server closes it.
pub async fn watch(
    client: &Client,
    kind: ResourceKind,
    q: &WatchQuery,
) -> Result<impl Stream<Item = Result<WatchEvent<Value>, kube::Error>> + use<>, kube::Error> {
    let mut req = http::Request::get(with_query(&kind.path(), &q.pairs()));
    if q.metadata_only {
        req = req.header(http::header::ACCEPT, META_ACCEPT);
    }
    let req = req.body(Vec::new()).map_err(kube::Error::HttpError)?;
    let s = client.request_events::<Value>(req).await?;
    Ok(s.boxed())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use topology_core::decode::Kind;

    #[test]
    fn typed_reads_dynamic_objects_and_keeps_malformed_ones() {
        let k = ResourceKind::of(Kind::Node);
        let n = typed(
            k,
            json!({"metadata": {"name": "n1"}, "spec": {"podCIDRs": ["10.0.0.0/24"]}}),
        );
        assert_eq!(n["kind"], "Node");
        assert_eq!(n["apiVersion"], "v1");
        assert_eq!(n["spec"]["podCIDRs"][0], "10.0.0.0/24");
        let bad = json!({"apiVersion": "x/v1", "kind": "Site", "metadata": {"name": 7}});
        assert_eq!(typed(ResourceKind::of(Kind::Site), bad.clone()), bad);
    }
}
