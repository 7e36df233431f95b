//! Label and field selectors as the API server reads them (`k=v`, `k==v`, `k!=v`,
//! `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, comma-separated requirements that all hold; field
//! selectors on `metadata.name` and `metadata.namespace` with `=`, `==` and `!=`).

use serde_json::Value;

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    Absent(String),
}

/// A parsed label selector; the empty selector selects everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

/// A selector the server refuses (`400 BadRequest`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadSelector(pub String);

impl LabelSelector {
    /// Parses a `labelSelector` query parameter.
    pub fn parse(text: &str) -> Result<LabelSelector, BadSelector> {
        split_top_level(text)
            .into_iter()
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(requirement)
            .collect::<Result<Vec<_>, _>>()
            .map(LabelSelector)
    }

    /// Whether an object's labels satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        let label = |k: &str| {
            object
                .pointer("/metadata/labels")
                .and_then(|l| l.get(k))
                .and_then(Value::as_str)
        };
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => label(k) == Some(v.as_str()),
            Requirement::NotEquals(k, v) => label(k) != Some(v.as_str()),
            Requirement::In(k, vs) => label(k).is_some_and(|l| vs.iter().any(|v| v == l)),
            Requirement::NotIn(k, vs) => label(k).is_none_or(|l| vs.iter().all(|v| v != l)),
            Requirement::Exists(k) => label(k).is_some(),
            Requirement::Absent(k) => label(k).is_none(),
        })
    }
}

/// Commas outside parentheses separate requirements.
fn split_top_level(text: &str) -> Vec<&str> {
    let (mut parts, mut depth, mut start) = (Vec::new(), 0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn requirement(r: &str) -> Result<Requirement, BadSelector> {
    let bad = || BadSelector(format!("unable to parse requirement: {r:?}"));
    if let Some(k) = r.strip_prefix('!') {
        return Ok(Requirement::Absent(key(k.trim()).ok_or_else(bad)?));
    }
    for (op, make) in [
        (
            " notin ",
            Requirement::NotIn as fn(String, Vec<String>) -> Requirement,
        ),
        (" in ", Requirement::In),
    ] {
        if let Some((k, set)) = r.split_once(op) {
            let set = set
                .trim()
                .strip_prefix('(')
                .and_then(|s| s.strip_suffix(')'))
                .ok_or_else(bad)?;
            let values = set.split(',').map(|v| v.trim().to_string()).collect();
            return Ok(make(key(k.trim()).ok_or_else(bad)?, values));
        }
    }
    for (op, make) in [
        (
            "!=",
            Requirement::NotEquals as fn(String, String) -> Requirement,
        ),
        ("==", Requirement::Equals),
        ("=", Requirement::Equals),
    ] {
        if let Some((k, v)) = r.split_once(op) {
            return Ok(make(key(k.trim()).ok_or_else(bad)?, v.trim().to_string()));
        }
    }
    Ok(Requirement::Exists(key(r).ok_or_else(bad)?))
}

fn key(k: &str) -> Option<String> {
    let ok = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    ok.then(|| k.to_string())
}

/// A parsed field selector (only the metadata fields every kind supports).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(String, bool, String)>);

impl FieldSelector {
    /// Parses a `fieldSelector` query parameter.
    pub fn parse(text: &str) -> Result<FieldSelector, BadSelector> {
        text.split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(|r| {
                let (field, equal, value) = if let Some((f, v)) = r.split_once("!=") {
                    (f, false, v)
                } else if let Some((f, v)) = r.split_once("==").or_else(|| r.split_once('=')) {
                    (f, true, v)
                } else {
                    return Err(BadSelector(format!("invalid field selector: {r:?}")));
                };
                match field.trim() {
                    f @ ("metadata.name" | "metadata.namespace") => {
                        Ok((f.to_string(), equal, value.trim().to_string()))
                    }
                    f => Err(BadSelector(format!("field label not supported: {f}"))),
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map(FieldSelector)
    }

    /// Whether an object's fields satisfy every requirement.
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let pointer = format!("/{}", field.replace('.', "/"));
            let have = object
                .pointer(&pointer)
                .and_then(Value::as_str)
                .unwrap_or("");
            (have == value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labelled(labels: Value) -> Value {
        json!({"metadata": {"name": "n1", "labels": labels}})
    }

    #[test]
    fn label_requirements() {
        let o = labelled(json!({"site": "a", "pool": "p"}));
        let holds = |s: &str| LabelSelector::parse(s).map(|l| l.matches(&o));
        assert_eq!(holds("site in (a, b)"), Ok(true));
        assert_eq!(holds("site in (b,c)"), Ok(false));
        assert_eq!(holds("site notin (b),pool"), Ok(true));
        assert_eq!(holds("site=a,pool!=p"), Ok(false));
        assert_eq!(holds("site==a"), Ok(true));
        assert_eq!(holds("!zone"), Ok(true));
        assert_eq!(holds("!site"), Ok(false));
        assert_eq!(holds(""), Ok(true));
        assert!(LabelSelector::parse("site in a").is_err());
        assert!(LabelSelector::parse("si te=a").is_err());
    }

    #[test]
    fn field_requirements() {
        let o = labelled(json!({}));
        let holds = |s: &str| FieldSelector::parse(s).map(|f| f.matches(&o));
        assert_eq!(holds("metadata.name=n1"), Ok(true));
        assert_eq!(holds("metadata.name!=n1"), Ok(false));
        assert_eq!(holds("metadata.name==n2"), Ok(false));
        assert!(FieldSelector::parse("spec.nodeName=n1").is_err());
    }
}
