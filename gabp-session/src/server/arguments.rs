//! The arguments of a `tools/call` on their way to a handler: read once from the request's text, checked
//! against `inputSchema` (SPEC/1.0 gabp.md §4.5), decoded into the handler's type.

use gabp_types::ErrorCode;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

use super::error::CallError;

/// The arguments as the router hands them to a handler.
pub(crate) enum Arguments<'a> {
    /// Straight from the request's text (a JSON object): the tool's type checks everything its schema says.
    Raw(&'a str),
    /// Parsed and already checked by the tool's validator.
    Value(Value),
}

impl Arguments<'_> {
    /// Decodes the arguments into the handler's type.
    pub(crate) fn decode<In: DeserializeOwned>(self) -> Result<In, CallError> {
        match self {
            Arguments::Raw(raw) => serde_json::from_str(raw),
            Arguments::Value(value) => serde_json::from_value(value),
        }
        .map_err(|e| invalid_arguments(&e))
    }
}

fn invalid_arguments(e: &serde_json::Error) -> CallError {
    let message = e.to_string();
    let message = gabp_types::without_json_position(&message);
    CallError::new(format!("invalid arguments: {message}"))
        .with_code(ErrorCode::INVALID_PARAMS)
        .with_data(json!({ "errors": [{ "path": "/params/arguments", "message": message }] }))
}

/// Keywords that a schema derived by schemars states only when serde enforces the same rule on decoding:
/// a schema made of these alone is checked by decoding into the type, with no validator pass.
const STRUCTURAL: &[&str] = &[
    "$schema",
    "$id",
    "$ref",
    "$defs",
    "definitions",
    "title",
    "description",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "oneOf",
    "anyOf",
    "allOf",
    "nullable",
];

/// The range serde enforces for an integer `format`, as schemars writes it.
fn integer_range(format: &str) -> Option<(f64, f64)> {
    Some(match format {
        "uint8" => (0.0, f64::from(u8::MAX)),
        "int8" => (f64::from(i8::MIN), f64::from(i8::MAX)),
        "uint16" => (0.0, f64::from(u16::MAX)),
        "int16" => (f64::from(i16::MIN), f64::from(i16::MAX)),
        "uint32" => (0.0, f64::from(u32::MAX)),
        "int32" => (f64::from(i32::MIN), f64::from(i32::MAX)),
        // Wider types: only the sign bound is ever written.
        "uint64" | "uint128" | "uint" => (0.0, f64::INFINITY),
        "int64" | "int128" | "int" => (f64::NEG_INFINITY, f64::INFINITY),
        _ => return None,
    })
}

/// Whether decoding into the type enforces everything `schema` (derived from that type) states: only
/// structural keywords, integer formats, and the bounds of those formats.
pub(crate) fn checked_by_type(schema: &Value) -> bool {
    match schema {
        Value::Bool(_) => true,
        Value::Array(items) => items.iter().all(checked_by_type),
        Value::Object(map) => object_checked_by_type(map),
        _ => true,
    }
}

fn object_checked_by_type(map: &Map<String, Value>) -> bool {
    let range = match map.get("format") {
        None => None,
        Some(Value::String(format)) => match integer_range(format) {
            Some(range) => Some(range),
            // "float" and "double" are what serde reads as f32 and f64.
            None if format == "float" || format == "double" => Some((f64::MIN, f64::MAX)),
            None => return false,
        },
        Some(_) => return false,
    };
    map.iter().all(|(key, value)| match key.as_str() {
        "format" => true,
        "minimum" => range.is_some_and(|(min, _)| value.as_f64() == Some(min)),
        "maximum" => range.is_some_and(|(_, max)| value.as_f64() == Some(max)),
        "properties" | "$defs" | "definitions" => value
            .as_object()
            .is_some_and(|m| m.values().all(checked_by_type)),
        // Documentation only.
        "examples" | "default" | "const" | "enum" => true,
        key if STRUCTURAL.contains(&key) => checked_by_type(value),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;
    use serde::Deserialize;

    use crate::server::tool::schema_for;

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Plain {
        name: String,
        count: u8,
        big: u64,
        ratio: f64,
        tags: Vec<String>,
        inner: Option<Inner>,
        mode: Mode,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        x: i32,
    }

    #[derive(Debug, Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Mode {
        Fast,
        Slow { by: u16 },
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Constrained {
        #[schemars(range(min = 1, max = 10))]
        level: u8,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Patterned {
        #[schemars(regex(pattern = r"^[a-z]+$"))]
        name: String,
    }

    #[test]
    fn derived_structural_schemas_are_checked_by_the_type() {
        assert!(
            checked_by_type(&schema_for::<Plain>()),
            "{}",
            schema_for::<Plain>()
        );
        assert!(checked_by_type(&schema_for::<Value>()));
        assert!(checked_by_type(&schema_for::<Map<String, Value>>()));
    }

    #[test]
    fn constraints_serde_does_not_enforce_need_the_validator() {
        assert!(!checked_by_type(&schema_for::<Constrained>()));
        assert!(!checked_by_type(&schema_for::<Patterned>()));
        assert!(!checked_by_type(
            &json!({"type": "string", "format": "email"})
        ));
        assert!(!checked_by_type(
            &json!({"type": "integer", "format": "uint8", "minimum": 1})
        ));
        assert!(!checked_by_type(
            &json!({"properties": {"a": {"minLength": 2}}})
        ));
    }

    #[test]
    fn raw_and_parsed_arguments_decode_alike() {
        let raw = r#"{"x": 7}"#;
        let from_raw: Inner = Arguments::Raw(raw).decode().unwrap();
        let from_value: Inner = Arguments::Value(json!({"x": 7})).decode().unwrap();
        assert_eq!((from_raw.x, from_value.x), (7, 7));
        let err = Arguments::Raw(raw).decode::<Plain>().unwrap_err();
        let err = err.into_error_object();
        assert_eq!(err.code, ErrorCode::INVALID_PARAMS);
        assert!(!err.message.contains("line"), "{}", err.message);
    }
}
