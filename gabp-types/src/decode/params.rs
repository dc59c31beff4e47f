//! The params of a request and the result of a response, checked against the types of their method:
//! [`check_params`] and [`check_result`].

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{json_type_name, DecodeError, DecodeMode};
use crate::methods::{self, Method};
use crate::{without_json_position, ErrorCode};

/// Escapes a JSON pointer reference token (RFC 6901).
pub(super) fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Deserializes `T` from a borrowed value, mapping a failure to `code` with the pointer of the failing value.
///
/// The fast path deserializes directly; only a failure pays for a second, path-tracking pass that finds the
/// pointer.
pub(super) fn typed<T: DeserializeOwned>(
    value: &Value,
    base: &str,
    code: ErrorCode,
) -> Result<T, DecodeError> {
    T::deserialize(value).or_else(|_| {
        serde_path_to_error::deserialize::<_, T>(value).map_err(|e| path_error(e, base, code))
    })
}

/// Like [`typed`] for a params object, without cloning the map into a `Value`.
fn typed_map<T: DeserializeOwned>(map: &Map<String, Value>) -> Result<T, DecodeError> {
    T::deserialize(crate::strict::BorrowedMap(map)).or_else(|_| {
        serde_path_to_error::deserialize::<_, T>(crate::strict::BorrowedMap(map))
            .map_err(|e| path_error(e, "/params", ErrorCode::INVALID_PARAMS))
    })
}

/// `tools/call` params, checked without building [`methods::ToolsCallParams`]: this is the hot path of every
/// session, and deserializing the typed struct would copy the whole `arguments` object just to drop it.
fn check_tools_call(params: Option<&Map<String, Value>>) -> Result<(), DecodeError> {
    let invalid = |pointer: &str, reason: String| {
        DecodeError::new(ErrorCode::INVALID_PARAMS, pointer, reason)
    };
    let Some(p) = params else {
        return Err(invalid(
            "/params",
            format!("`{}` requires params", methods::ToolsCall::NAME),
        ));
    };
    let mut has_name = false;
    for (key, value) in p {
        match (key.as_str(), value) {
            ("name", Value::String(name)) if crate::format::is_registry_name(name) => {
                has_name = true
            }
            ("name", Value::String(name)) => {
                return Err(invalid(
                    "/params/name",
                    format!(
                        "tool name {name:?} does not match {}",
                        crate::format::NAME_PATTERN
                    ),
                ))
            }
            ("name", other) => {
                return Err(invalid(
                    "/params/name",
                    format!(
                        "invalid type: {}, expected a tool name string",
                        json_type_name(other)
                    ),
                ))
            }
            ("arguments", Value::Object(_)) => {}
            ("arguments", other) => {
                return Err(invalid(
                    "/params/arguments",
                    format!(
                        "invalid type: {}, expected an object",
                        json_type_name(other)
                    ),
                ))
            }
            (other, _) => {
                return Err(invalid(
                    "/params",
                    format!("unknown field `{other}`, expected `name` or `arguments`"),
                ))
            }
        }
    }
    if has_name {
        Ok(())
    } else {
        Err(invalid("/params", "missing field `name`".to_owned()))
    }
}

fn path_error(
    e: serde_path_to_error::Error<serde_json::Error>,
    base: &str,
    code: ErrorCode,
) -> DecodeError {
    use serde_path_to_error::Segment;
    let mut pointer = base.to_owned();
    for segment in e.path().iter() {
        match segment {
            Segment::Seq { index } => {
                pointer.push('/');
                pointer.push_str(&index.to_string());
            }
            Segment::Map { key } => {
                pointer.push('/');
                pointer.push_str(&escape_pointer(key));
            }
            Segment::Enum { variant } => {
                pointer.push('/');
                pointer.push_str(&escape_pointer(variant));
            }
            Segment::Unknown => {}
        }
    }
    let reason = e.into_inner().to_string();
    DecodeError::new(code, pointer, without_json_position(&reason))
}

fn check<M: Method>(params: Option<&Map<String, Value>>) -> Result<(), DecodeError> {
    match params {
        None if M::PARAMS_REQUIRED => Err(DecodeError::new(
            ErrorCode::INVALID_PARAMS,
            "/params",
            format!("`{}` requires params", M::NAME),
        )),
        None => Ok(()),
        Some(p) => typed_map::<M::Params>(p).map(drop),
    }
}

/// Checks the params of a request for `method` as the decoder would in `mode`: core methods' params against
/// their types (`tools/call` on its fast path), any other method's params are any object. A sender uses it
/// with [`DecodeMode::Strict`] to make sure what it is about to send is conformant.
///
/// ```
/// use gabp_types::decode::{check_params, DecodeMode};
/// use gabp_types::ErrorCode;
///
/// let params = serde_json::json!({"name": "world/get_block", "parameters": {}});
/// let err = check_params("tools/call", params.as_object(), DecodeMode::Strict).unwrap_err();
/// assert_eq!(err.code(), ErrorCode::INVALID_PARAMS);
/// assert!(check_params("tools/list", None, DecodeMode::Strict).is_ok());
/// assert!(check_params("custom/thing", params.as_object(), DecodeMode::Strict).is_ok());
/// ```
///
/// # Errors
///
/// A [`DecodeError`] with code -32602 and the JSON pointer of the offending value.
pub fn check_params(
    method: &str,
    params: Option<&Map<String, Value>>,
    mode: DecodeMode,
) -> Result<(), DecodeError> {
    use methods::*;
    match method {
        // Never quotes a value: any may be a token (SPEC/1.0 security.md §6).
        SessionHello::NAME => super::hello::check_hello(params, mode),
        SessionPing::NAME => check::<SessionPing>(params),
        SessionGoodbye::NAME => check::<SessionGoodbye>(params),
        ToolsList::NAME => check::<ToolsList>(params),
        ToolsCall::NAME => check_tools_call(params),
        EventsSubscribe::NAME => check::<EventsSubscribe>(params),
        EventsUnsubscribe::NAME => check::<EventsUnsubscribe>(params),
        ResourcesList::NAME => check::<ResourcesList>(params),
        ResourcesRead::NAME => check::<ResourcesRead>(params),
        StateGet::NAME => check::<StateGet>(params),
        StateSet::NAME => check::<StateSet>(params),
        AttentionCurrent::NAME => check::<AttentionCurrent>(params),
        AttentionAck::NAME => check::<AttentionAck>(params),
        _ => Ok(()),
    }
}

fn result_of<M: Method>(result: &Value) -> Result<(), DecodeError> {
    typed::<M::Result>(result, "/result", ErrorCode::INVALID_FIELD_VALUE).map(drop)
}

/// Checks a success `result` against the result schema of `method`; results of unknown methods (and of
/// `tools/call`, whose result is the tool's own) are accepted as they are.
pub fn check_result(method: &str, result: &Value) -> Result<(), DecodeError> {
    use methods::*;
    match method {
        SessionHello::NAME => result_of::<SessionHello>(result),
        SessionPing::NAME => result_of::<SessionPing>(result),
        SessionGoodbye::NAME => result_of::<SessionGoodbye>(result),
        ToolsList::NAME => result_of::<ToolsList>(result),
        EventsSubscribe::NAME => result_of::<EventsSubscribe>(result),
        EventsUnsubscribe::NAME => result_of::<EventsUnsubscribe>(result),
        ResourcesList::NAME => result_of::<ResourcesList>(result),
        ResourcesRead::NAME => result_of::<ResourcesRead>(result),
        StateGet::NAME => result_of::<StateGet>(result),
        StateSet::NAME => result_of::<StateSet>(result),
        AttentionCurrent::NAME => result_of::<AttentionCurrent>(result),
        AttentionAck::NAME => result_of::<AttentionAck>(result),
        _ => Ok(()),
    }
}
