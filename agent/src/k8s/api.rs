//! API status of failed requests, a LIST that tolerates malformed objects, and raw objects.

use super::kinds::ResourceKind;
use kube::api::ListParams;
use kube::core::{DynamicObject, ObjectList};
use kube::{Client, Resource};
use serde_json::Value;

/// Items per LIST page (the tolerant LIST here and the reflectors' watchers).
pub const PAGE_SIZE: u32 = 500;

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

impl ApiStatus {
    /// The parts of kube's `Status` that say what failed.
    pub fn of(s: &kube::core::Status) -> ApiStatus {
        ApiStatus {
            code: s.code,
            reason: s.reason.clone(),
            message: s.message.clone(),
        }
    }
}

/// The API status of a kube error, if it carries one.
pub fn api_status(e: &kube::Error) -> Option<ApiStatus> {
    match e {
        kube::Error::Api(s) => Some(ApiStatus::of(s)),
        _ => None,
    }
}

/// The API status of an `anyhow` error chain, if any link is a kube API error.
pub fn api_status_any(e: &anyhow::Error) -> Option<ApiStatus> {
    e.chain()
        .find_map(|c| c.downcast_ref::<kube::Error>().and_then(api_status))
}

/// A LIST page that failed: the request as kube built it, and kube's error.
#[derive(Debug, thiserror::Error)]
#[error("{method} {path}")]
pub struct ListFailed {
    /// The request's method.
    pub method: http::Method,
    /// The request's path and query (`/apis/...?limit=500`).
    pub path: String,
    /// kube's error.
    #[source]
    pub error: kube::Error,
}

/// Every object at the collection `url_path` (LISTs of [`PAGE_SIZE`] following continue
/// tokens). The requests are built by kube's `Request`, so a failed one is named as sent.
pub async fn list_all<T>(client: &Client, url_path: String) -> Result<Vec<T>, ListFailed>
where
    T: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let request = kube::core::Request::new(url_path);
    let mut lp = ListParams::default().limit(PAGE_SIZE);
    let mut items = Vec::new();
    loop {
        let req = match request.list(&lp) {
            Ok(r) => r,
            Err(e) => {
                return Err(ListFailed {
                    method: http::Method::GET,
                    path: request.url_path.clone(),
                    error: kube::Error::BuildRequest(e),
                });
            }
        };
        let (method, path) = (req.method().clone(), req.uri().to_string());
        let page: ObjectList<T> = client.request(req).await.map_err(|error| ListFailed {
            method,
            path,
            error,
        })?;
        items.extend(page.items);
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp = lp.continue_token(&c),
            _ => return Ok(items),
        }
    }
}

/// Every object of `kind`, with `apiVersion` and `kind` filled in. Items stay raw JSON: one
/// malformed object (a `metadata` of the wrong shape, which `DynamicObject` cannot read) cannot
/// fail the LIST; the decoder turns it into a diagnostic, as it does for the same object in a
/// file.
pub async fn list_values(client: &Client, kind: ResourceKind) -> Result<Vec<Value>, ListFailed> {
    let url_path = DynamicObject::url_path(&kind.api_resource(), None);
    let items: Vec<Value> = list_all(client, url_path).await?;
    Ok(items.into_iter().map(|it| typed(kind, it)).collect())
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use topology_core::vocab::Kind;

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
