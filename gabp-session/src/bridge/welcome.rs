//! Reading a welcome liberally.

use std::collections::HashSet;

use gabp_types::methods::WelcomeResult;
use gabp_types::{MethodName, Uri};
use serde_json::{Map, Value};

use crate::Error;

/// Reads a welcome: strictly if it is valid; otherwise once more after dropping what a liberal reader can do
/// without (unknown fields, methods and resources that are not valid names or URIs, repeated list items,
/// invalid extensions and limits). The fields a welcome needs (`agentId`, `app`, `capabilities`,
/// `schemaVersion`) must still be valid.
pub(crate) fn parse_welcome(value: Value) -> Result<WelcomeResult, Error> {
    let first = match serde_json::from_value::<WelcomeResult>(value.clone()) {
        Ok(welcome) => return Ok(welcome),
        Err(e) => e,
    };
    let Value::Object(map) = value else {
        return Err(Error::InvalidWelcome {
            reason: first.to_string(),
        });
    };
    let repaired = repair(map);
    match serde_json::from_value::<WelcomeResult>(Value::Object(repaired)) {
        Ok(welcome) => {
            tracing::debug!(error = %first, "read a non-conformant welcome liberally");
            Ok(welcome)
        }
        Err(_) => Err(Error::InvalidWelcome {
            reason: first.to_string(),
        }),
    }
}

fn keep_known(map: &mut Map<String, Value>, known: &[&str]) {
    map.retain(|k, v| known.contains(&k.as_str()) && !v.is_null());
}

fn unique_strings(list: Value, valid: impl Fn(&str) -> bool) -> Value {
    let Value::Array(items) = list else {
        return Value::Array(Vec::new());
    };
    let mut seen = HashSet::new();
    Value::Array(
        items
            .into_iter()
            .filter(|item| {
                item.as_str()
                    .is_some_and(|s| valid(s) && seen.insert(s.to_owned()))
            })
            .collect(),
    )
}

fn repair(mut map: Map<String, Value>) -> Map<String, Value> {
    keep_known(
        &mut map,
        &[
            "agentId",
            "app",
            "capabilities",
            "schemaVersion",
            "serverInfo",
        ],
    );
    if let Some(Value::Object(app)) = map.get_mut("app") {
        keep_known(app, &["name", "version"]);
    }
    if let Some(server) = map.get_mut("serverInfo") {
        match server {
            Value::Object(info) => {
                keep_known(info, &["name", "version", "author"]);
                info.retain(|_, v| v.is_string());
            }
            _ => {
                map.remove("serverInfo");
            }
        }
    }
    if let Some(Value::Object(caps)) = map.get_mut("capabilities") {
        keep_known(
            caps,
            &["methods", "events", "resources", "extensions", "limits"],
        );
        if let Some(methods) = caps.remove("methods") {
            caps.insert(
                "methods".into(),
                unique_strings(methods, |s| MethodName::new(s).is_ok()),
            );
        }
        if let Some(events) = caps.remove("events") {
            caps.insert("events".into(), unique_strings(events, |s| !s.is_empty()));
        }
        if let Some(resources) = caps.remove("resources") {
            caps.insert(
                "resources".into(),
                unique_strings(resources, |s| Uri::new(s).is_ok()),
            );
        }
        if let Some(Value::Object(ext)) = caps.get_mut("extensions") {
            ext.retain(|k, v| gabp_types::format::is_extension_key(k) && v.is_object());
        } else {
            caps.remove("extensions");
        }
        if let Some(Value::Object(limits)) = caps.get_mut("limits") {
            keep_known(
                limits,
                &["maxMessageSize", "maxConcurrentRequests", "requestTimeout"],
            );
            limits.retain(|k, v| {
                let min = if k == "maxMessageSize" { 1024 } else { 1 };
                v.as_u64().is_some_and(|n| n >= min)
            });
        } else {
            caps.remove("limits");
        }
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn valid_welcome_reads_as_is() {
        let w = parse_welcome(json!({
            "agentId": "a", "app": {"name": "g", "version": "1"},
            "capabilities": {"methods": ["tools/list"]}, "schemaVersion": "1.0"
        }))
        .unwrap();
        assert!(w.capabilities.has_method("tools/list"));
    }

    #[test]
    fn non_conformant_welcome_is_repaired() {
        let w = parse_welcome(json!({
            "agentId": "a", "app": {"name": "g", "version": "1", "build": 7},
            "capabilities": {
                "methods": ["tools/list", "tools/list", "Bad.Name", 3],
                "events": ["player.move", ""],
                "limits": {"maxMessageSize": 10, "maxConcurrentRequests": 8, "other": 1},
                "extensions": {"Bad": {}, "good": {}},
                "tools": []
            },
            "schemaVersion": "1.0", "serverInfo": {"name": "m", "pid": 4}, "sessionId": "x"
        }))
        .unwrap();
        assert_eq!(w.capabilities.methods.as_ref().unwrap().len(), 1);
        assert!(w.capabilities.has_event("player.move"));
        let limits = w.capabilities.limits.unwrap();
        assert!(limits.max_message_size.is_none());
        assert_eq!(limits.max_concurrent_requests.map(|m| m.get()), Some(8));
        assert!(w.capabilities.extensions.unwrap().get("good").is_some());
    }

    #[test]
    fn missing_essentials_stay_an_error() {
        let e = parse_welcome(json!({"agentId": "a", "capabilities": {}, "schemaVersion": "1.0"}))
            .unwrap_err();
        assert!(matches!(e, Error::InvalidWelcome { .. }));
        assert!(parse_welcome(json!("hello")).is_err());
    }
}
