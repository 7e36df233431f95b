//! The CNI configuration's `mtu` (JSON `.conflist` or single `.conf`), pure text transforms.
//! Plugins that carry an `mtu` field, and every `bridge` plugin, are the ones managed.

use serde_json::Value;

fn relevant(plugin: &Value) -> bool {
    plugin.get("mtu").is_some() || plugin.get("type").and_then(Value::as_str) == Some("bridge")
}

fn plugins_mut(doc: &mut Value) -> Vec<&mut Value> {
    if doc.get("plugins").is_some_and(Value::is_array) {
        match doc.get_mut("plugins") {
            Some(Value::Array(list)) => list.iter_mut().filter(|p| relevant(p)).collect(),
            _ => Vec::new(),
        }
    } else if relevant(doc) {
        vec![doc]
    } else {
        Vec::new()
    }
}

/// The common `mtu` of the managed plugins: `Ok(Some(m))` when all carry `m`, `Ok(None)` when
/// they disagree or one lacks it; an error when the text is not JSON or no plugin is managed.
pub fn read_mtu(text: &str) -> Result<Option<u32>, String> {
    let mut doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let plugins = plugins_mut(&mut doc);
    if plugins.is_empty() {
        return Err("no plugin with an `mtu` field and no bridge plugin".into());
    }
    let mut common: Option<u32> = None;
    for p in plugins {
        let m = p
            .get("mtu")
            .and_then(Value::as_u64)
            .and_then(|m| u32::try_from(m).ok());
        match (m, common) {
            (None, _) => return Ok(None),
            (Some(m), None) => common = Some(m),
            (Some(m), Some(c)) if m != c => return Ok(None),
            _ => {}
        }
    }
    Ok(common)
}

/// Returns the text with `mtu` set in every managed plugin (key order preserved).
pub fn set_mtu(text: &str, mtu: u32) -> Result<String, String> {
    let mut doc: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let plugins = plugins_mut(&mut doc);
    if plugins.is_empty() {
        return Err("no plugin with an `mtu` field and no bridge plugin".into());
    }
    for p in plugins {
        if let Value::Object(map) = p {
            map.insert("mtu".into(), Value::from(mtu));
        }
    }
    let mut out = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
    out.push('\n');
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIST: &str = r#"{"cniVersion":"1.0.0","name":"pods","plugins":[
        {"type":"bridge","bridge":"cni0","isGateway":true,"ipam":{"type":"host-local"}},
        {"type":"portmap","capabilities":{"portMappings":true}},
        {"type":"tuning","mtu":1400}]}"#;

    #[test]
    fn conflist_round_trip() {
        assert_eq!(read_mtu(LIST), Ok(None));
        let out = set_mtu(LIST, 1350).unwrap();
        assert_eq!(read_mtu(&out), Ok(Some(1350)));
        let doc: Value = serde_json::from_str(&out).unwrap();
        assert!(doc["plugins"][1].get("mtu").is_none());
        assert_eq!(doc["plugins"][0]["mtu"], 1350);
        // Key order kept: "type" first.
        assert!(out.find("\"type\"").unwrap() < out.find("\"bridge\": \"cni0\"").unwrap());
    }

    #[test]
    fn single_conf_and_errors() {
        let conf = r#"{"cniVersion":"0.4.0","name":"x","type":"bridge","mtu":1500}"#;
        assert_eq!(read_mtu(conf), Ok(Some(1500)));
        assert!(read_mtu(r#"{"type":"loopback"}"#).is_err());
        assert!(read_mtu("not json").is_err());
    }
}
