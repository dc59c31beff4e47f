//! The two decoders: strict (what `gabp validate` and conformance checks use) and lenient (how we read peers).
//!
//! Both take the bytes of one message body and return a [`Message`] or a [`DecodeError`] that names the JSON
//! pointer of the offending value and the GABP error code the receiving side should answer with.
//!
//! ```
//! use gabp_types::decode::{decode, DecodeMode};
//! use gabp_types::ErrorCode;
//!
//! let body = br#"{"v":"gabp/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"request",
//!                "method":"tools/call","params":{"name":"inventory.get"}}"#;
//! let err = decode(body, DecodeMode::Strict).unwrap_err();
//! assert_eq!(err.code(), ErrorCode::INVALID_PARAMS);
//! assert_eq!(err.pointer(), "/params/name");
//! assert_eq!(err.id().unwrap().as_str(), "550e8400-e29b-41d4-a716-446655440000");
//! ```

mod error;
mod fast;
mod hello;
mod params;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub use self::error::DecodeError;
pub use self::params::{
    check_params, check_result, check_result_in, tools_call_members, ToolsCallMembers,
};
use self::params::{typed, typed_answer};
use crate::json_kind::json_type_name;
use crate::methods::{self, Method};
use crate::pointer::escape_pointer;
use crate::{
    Attention, ChannelName, ErrorCode, ErrorObject, Event, Message, MessageId, MessageKind,
    MethodName, Outcome, Params, Request, Response, Timestamp, PROTOCOL_VERSION,
};

/// How strictly to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum DecodeMode {
    /// Everything the schemas require: no unknown fields, canonical names, UUID `launchId`, valid timestamps.
    #[default]
    Strict,
    /// Liberal reading of peers (SPEC/1.0/gabp.md §3.5): unknown top-level fields are ignored;
    /// `tools/call` may carry `parameters` instead of `arguments` (`arguments` wins when both are present);
    /// `"error": null` beside a `result` and `"result": null` beside an `error` are ignored; `launchId` may be any
    /// string; channel names need only be non-empty; an invalid event `timestamp` is dropped; the payload of a
    /// `tools/changed` event is not checked.
    Lenient,
}

/// The liberal reading of a response that carries both members (SPEC/1.0 gabp.md §3.5): `"error": null` beside
/// a `result` is dropped, and so is `"result": null` beside an `error` object.
fn drop_null_beside_other(map: &mut Map<String, Value>) {
    if map.get("error") == Some(&Value::Null) && map.contains_key("result") {
        map.remove("error");
    } else if map.get("result") == Some(&Value::Null)
        && map.get("error").is_some_and(Value::is_object)
    {
        map.remove("result");
    }
}

/// Decodes one message body.
pub fn decode(body: &[u8], mode: DecodeMode) -> Result<Message, DecodeError> {
    if let Some(message) = fast::decode(body, mode) {
        return Ok(message);
    }
    let value = parse(body)?;
    decode_value(value, mode)
}

/// Where the `result` of a plain success response lies in `body`, and the id it answers; `None` for anything
/// else. A plain success response has exactly the members `v`, `id`, `type` and `result`; both decoders read
/// it as [`Outcome::Result`] of the JSON in that range, so a caller can decode the result straight from the
/// body's text into its own type, without a tree of values. Anything else (an error, unknown or repeated
/// members) goes through [`decode`].
///
/// ```
/// use gabp_types::decode::success_result;
///
/// let body = br#"{"v":"gabp/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"response","result":{"ok":true}}"#;
/// let (id, range) = success_result(body).unwrap();
/// assert_eq!(id.as_str(), "550e8400-e29b-41d4-a716-446655440000");
/// assert_eq!(&body[range], br#"{"ok":true}"#);
/// ```
pub fn success_result(body: &[u8]) -> Option<(MessageId, std::ops::Range<usize>)> {
    fast::success(body)
}

/// The id of a success response written exactly as gabp-rs writes it (the encoder's members, in its order), and
/// where its `result` lies in `body`, without reading the result: not even its UTF-8 is checked. A reader checks
/// the UTF-8 itself, then reads as far as it needs (decoding into a type checks the syntax of what the type
/// skips, not what only a JSON value refuses: see [`result_reads`]); should that read fail, the body is what
/// [`decode`] and [`success_result`] say of it. `None` for a body written any other way.
///
/// ```
/// use gabp_types::decode::{success_result, written_success};
///
/// let body = br#"{"v":"gabp/1","id":"550e8400-e29b-41d4-a716-446655440000","type":"response","result":{"ok":"#;
/// let mut body = body.to_vec();
/// body.extend_from_slice(b"}");
/// let (_, range) = written_success(&body).unwrap();
/// assert_eq!(&body[range], br#"{"ok":"#);
/// assert_eq!(success_result(&body), None);
/// ```
pub fn written_success(body: &[u8]) -> Option<(MessageId, std::ops::Range<usize>)> {
    fast::written_success(body)
}

/// Whether `text`, the `result` of a success response, reads as [`success_result`] requires of it: UTF-8 that a
/// `serde_json::Value` reads. (A result nested deeper than 64 levels does not, though [`decode`] may read it.)
pub fn result_reads(text: &[u8]) -> bool {
    fast::result_reads(text)
}

/// Decodes one message body strictly.
pub fn decode_strict(body: &[u8]) -> Result<Message, DecodeError> {
    decode(body, DecodeMode::Strict)
}

/// Decodes one message body leniently.
pub fn decode_lenient(body: &[u8]) -> Result<Message, DecodeError> {
    decode(body, DecodeMode::Lenient)
}

/// Decodes a body and, when it is a success response, also checks its `result` against the result schema of
/// `method` (the request method it answers; unknown methods' results are not checked).
pub fn decode_response_to(
    body: &[u8],
    method: &str,
    mode: DecodeMode,
) -> Result<Message, DecodeError> {
    let message = decode(body, mode)?;
    if let Message::Response(Response {
        id,
        outcome: Outcome::Result(result),
    }) = &message
    {
        check_result_in(method, result, mode)
            .map_err(|e| e.with_kind(Some(MessageKind::Response)).with_id(Some(*id)))?;
    }
    Ok(message)
}

fn parse(body: &[u8]) -> Result<Value, DecodeError> {
    if let Err(e) = std::str::from_utf8(body) {
        return Err(DecodeError::new(
            ErrorCode::PARSE_ERROR,
            "",
            format!("body is not valid UTF-8 (byte {})", e.valid_up_to()),
        ));
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(DecodeError::new(
            ErrorCode::PARSE_ERROR,
            "",
            "body is empty",
        ));
    }
    serde_json::from_slice(body)
        .map_err(|e| DecodeError::new(ErrorCode::PARSE_ERROR, "", format!("body is not JSON: {e}")))
}

const REQUEST_FIELDS: &[&str] = &["v", "id", "type", "method", "params"];
const RESPONSE_FIELDS: &[&str] = &["v", "id", "type", "result", "error"];
const EVENT_FIELDS: &[&str] = &["v", "id", "type", "channel", "seq", "payload", "timestamp"];

/// Decodes an already parsed JSON value.
pub fn decode_value(value: Value, mode: DecodeMode) -> Result<Message, DecodeError> {
    let Value::Object(mut map) = value else {
        return Err(DecodeError::new(
            ErrorCode::INVALID_REQUEST,
            "",
            format!(
                "a message must be a JSON object, not {}",
                json_type_name(&value)
            ),
        ));
    };
    let id = map
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| MessageId::parse(s).ok());
    let kind = match map.get("type").and_then(Value::as_str) {
        Some("request") => Some(MessageKind::Request),
        Some("response") => Some(MessageKind::Response),
        Some("event") => Some(MessageKind::Event),
        _ => None,
    };
    envelope(&mut map, mode, id).map_err(|e| e.with_kind(kind).with_id(id))
}

fn missing(field: &str) -> DecodeError {
    DecodeError::new(
        ErrorCode::MISSING_REQUIRED_FIELD,
        format!("/{field}"),
        format!("required field `{field}` is missing"),
    )
}

fn envelope(
    map: &mut Map<String, Value>,
    mode: DecodeMode,
    id: Option<MessageId>,
) -> Result<Message, DecodeError> {
    match map.get("v") {
        None => return Err(missing("v")),
        Some(Value::String(v)) if v == PROTOCOL_VERSION => {}
        Some(other) => {
            return Err(DecodeError::new(
                ErrorCode::PROTOCOL_VERSION_MISMATCH,
                "/v",
                format!("unsupported protocol version {other}, expected \"{PROTOCOL_VERSION}\""),
            ))
        }
    }
    let (kind, allowed) = match map.get("type") {
        None => return Err(missing("type")),
        Some(Value::String(t)) => match t.as_str() {
            "request" => (0, REQUEST_FIELDS),
            "response" => (1, RESPONSE_FIELDS),
            "event" => (2, EVENT_FIELDS),
            _ => {
                return Err(DecodeError::new(
                    ErrorCode::INVALID_MESSAGE_TYPE,
                    "/type",
                    format!("unknown message type {t:?} (expected request, response or event)"),
                ))
            }
        },
        Some(other) => {
            return Err(DecodeError::new(
                ErrorCode::INVALID_MESSAGE_TYPE,
                "/type",
                format!("`type` must be a string, not {}", json_type_name(other)),
            ))
        }
    };
    let id = match (map.get("id"), id) {
        (None, _) => return Err(missing("id")),
        (Some(_), Some(id)) => id,
        (Some(other), None) => {
            return Err(DecodeError::new(
                ErrorCode::INVALID_FIELD_VALUE,
                "/id",
                format!("`id` must be a hyphenated UUID string, got {other}"),
            ))
        }
    };
    let type_name = ["request", "response", "event"][kind];
    if mode == DecodeMode::Lenient && kind == 1 {
        drop_null_beside_other(map);
    }
    if map.len() > allowed.len() || map.keys().any(|k| !allowed.contains(&k.as_str())) {
        let mut unknown = Vec::new();
        for key in map.keys() {
            if allowed.contains(&key.as_str()) {
                continue;
            }
            let envelope = [REQUEST_FIELDS, RESPONSE_FIELDS, EVENT_FIELDS];
            if envelope.iter().any(|fields| fields.contains(&key.as_str())) {
                return Err(DecodeError::new(
                    ErrorCode::INVALID_REQUEST,
                    format!("/{}", escape_pointer(key)),
                    format!("field `{key}` is not allowed in a {type_name}"),
                ));
            }
            unknown.push(key.clone());
        }
        if !unknown.is_empty() {
            if mode == DecodeMode::Strict {
                return Err(DecodeError::new(
                    ErrorCode::INVALID_REQUEST,
                    format!("/{}", escape_pointer(&unknown[0])),
                    format!("unknown field `{}` in a {type_name}", unknown[0]),
                ));
            }
            for key in unknown {
                map.remove(&key);
            }
        }
    }
    let mut take = |field: &str| map.remove(field);
    match kind {
        0 => {
            let params = take("params").map(ParamsField::Value);
            request_from(take("method"), params, mode, id).map(Message::Request)
        }
        1 => response_from(take("result"), take("error"), id).map(Message::Response),
        _ => {
            let fields = [
                take("channel"),
                take("seq"),
                take("payload"),
                take("timestamp"),
            ];
            event_from(fields, mode, id).map(Message::Event)
        }
    }
}

/// The `params` field as read: a value of the general path or raw text of the fast one.
pub(super) enum ParamsField<'a> {
    Value(Value),
    Raw(&'a RawValue),
}

impl ParamsField<'_> {
    fn into_params(self) -> Result<Params, &'static str> {
        match self {
            ParamsField::Value(Value::Object(map)) => Ok(Params::from_map(&map)),
            ParamsField::Value(other) => Err(json_type_name(&other)),
            ParamsField::Raw(raw) if raw.get().starts_with('{') => {
                Params::from_raw(raw.to_owned()).map_err(|_| "an object")
            }
            ParamsField::Raw(raw) => Err(crate::params::raw_type_name(raw.get())),
        }
    }
}

/// A request from its `method` and `params` fields (`None`: absent).
fn request_from(
    method: Option<Value>,
    params: Option<ParamsField<'_>>,
    mode: DecodeMode,
    id: MessageId,
) -> Result<Request, DecodeError> {
    let method = match method {
        None => return Err(missing("method")),
        Some(Value::String(m)) => MethodName::new(m).map_err(|e| {
            DecodeError::new(ErrorCode::INVALID_FIELD_VALUE, "/method", e.to_string())
        })?,
        Some(other) => {
            return Err(DecodeError::new(
                ErrorCode::INVALID_FIELD_VALUE,
                "/method",
                format!("`method` must be a string, not {}", json_type_name(&other)),
            ))
        }
    };
    request_named(method, params, mode, id)
}

/// A request of a valid `method` from its `params` field (`None`: absent).
fn request_named(
    method: MethodName,
    params: Option<ParamsField<'_>>,
    mode: DecodeMode,
    id: MessageId,
) -> Result<Request, DecodeError> {
    let mut params = match params.map(ParamsField::into_params).transpose() {
        Ok(params) => params,
        Err(type_name) => {
            return Err(DecodeError::new(
                ErrorCode::INVALID_PARAMS,
                "/params",
                format!("`params` must be an object, not {type_name}"),
            ))
        }
    };
    // The check of `tools/call` params records where their `arguments` lie, for the mod (SPEC/1.0 gabp.md §4.5).
    let check = |params: &mut Option<Params>| match method.as_str() {
        methods::ToolsCall::NAME => params::check_tools_call(params.as_mut()),
        other => check_params(other, params.as_ref(), mode),
    };
    let checked = check(&mut params);
    // Lib.GAB names the arguments `parameters` (SPEC/1.0 gabp.md §3.5), a member the check refuses: only then is
    // it looked for, renamed, and the params checked again.
    let libgab = checked.is_err()
        && mode == DecodeMode::Lenient
        && method.as_str() == methods::ToolsCall::NAME
        && rename_parameters(&mut params);
    if libgab {
        check(&mut params)?;
    } else {
        checked?;
    }
    Ok(Request { id, method, params })
}

/// Renames a `parameters` member to `arguments` (kept if both are there); `false` when there is none.
fn rename_parameters(params: &mut Option<Params>) -> bool {
    let Some(p) = params.as_mut().filter(|p| p.member("parameters").is_some()) else {
        return false;
    };
    let mut map = p.to_map();
    if let Some(parameters) = map.remove("parameters") {
        map.entry("arguments").or_insert(parameters);
    }
    *p = Params::from_map(&map);
    true
}

/// A response from its `result` and `error` fields (`None`: absent).
fn response_from(
    result: Option<Value>,
    error: Option<Value>,
    id: MessageId,
) -> Result<Response, DecodeError> {
    let outcome =
        match (result, error) {
            (Some(_), Some(_)) => {
                return Err(DecodeError::new(
                    ErrorCode::INVALID_REQUEST,
                    "",
                    "a response carries exactly one of `result` and `error`, not both",
                ))
            }
            (None, None) => return Err(DecodeError::new(
                ErrorCode::MISSING_REQUIRED_FIELD,
                "",
                "a response carries exactly one of `result` and `error`, and this one has neither",
            )),
            (Some(result), None) => Outcome::Result(result.into()),
            (None, Some(error)) => {
                let error: ErrorObject = typed(&error, "/error", ErrorCode::INVALID_FIELD_VALUE)?;
                Outcome::Error(error)
            }
        };
    Ok(Response { id, outcome })
}

/// An event from its `channel`, `seq`, `payload` and `timestamp` fields (`None`: absent).
fn event_from(
    [channel, seq, payload, timestamp]: [Option<Value>; 4],
    mode: DecodeMode,
    id: MessageId,
) -> Result<Event, DecodeError> {
    let channel = match channel {
        None => return Err(missing("channel")),
        Some(Value::String(c)) => {
            let name = if mode == DecodeMode::Strict {
                ChannelName::new(c)
            } else {
                ChannelName::new_lenient(c)
            };
            name.map_err(|e| {
                DecodeError::new(ErrorCode::INVALID_FIELD_VALUE, "/channel", e.to_string())
            })?
        }
        Some(other) => {
            return Err(DecodeError::new(
                ErrorCode::INVALID_FIELD_VALUE,
                "/channel",
                format!("`channel` must be a string, not {}", json_type_name(&other)),
            ))
        }
    };
    let seq = match seq {
        None => return Err(missing("seq")),
        Some(v) => v.as_u64().ok_or_else(|| {
            DecodeError::new(
                ErrorCode::INVALID_FIELD_VALUE,
                "/seq",
                format!("`seq` must be an integer >= 0, got {v}"),
            )
        })?,
    };
    let Some(payload) = payload else {
        return Err(missing("payload"));
    };
    let timestamp = match timestamp {
        None => None,
        Some(Value::String(t)) => match Timestamp::new(t) {
            Ok(t) => Some(t),
            Err(e) if mode == DecodeMode::Strict => {
                return Err(DecodeError::new(
                    ErrorCode::INVALID_FIELD_VALUE,
                    "/timestamp",
                    e.to_string(),
                ))
            }
            Err(_) => None,
        },
        Some(other) if mode == DecodeMode::Strict => {
            return Err(DecodeError::new(
                ErrorCode::INVALID_FIELD_VALUE,
                "/timestamp",
                format!(
                    "`timestamp` must be an RFC 3339 string, not {}",
                    json_type_name(&other)
                ),
            ))
        }
        Some(_) => None,
    };
    if channel.is_attention() {
        typed_answer::<Attention>(&payload, "/payload", mode)?;
    }
    // SPEC/1.0 extensions.md §tools-changed: checked when writing; read from peers as sent.
    if mode == DecodeMode::Strict && channel.as_str() == methods::TOOLS_CHANGED_CHANNEL {
        typed::<methods::ToolsChangedPayload>(
            &payload,
            "/payload",
            ErrorCode::INVALID_FIELD_VALUE,
        )?;
    }
    // SPEC/1.0 extensions.md §time-control: checked when writing; read from peers as sent.
    if mode == DecodeMode::Strict && channel.as_str() == methods::TIME_CHANGED_CHANNEL {
        typed_answer::<methods::TimeState>(&payload, "/payload", mode)?;
    }
    // SPEC/1.0 extensions.md §progress: checked when writing; read from peers as sent.
    if mode == DecodeMode::Strict && channel.as_str() == methods::PROGRESS_CHANNEL {
        let progress = typed::<methods::ProgressPayload>(
            &payload,
            "/payload",
            ErrorCode::INVALID_FIELD_VALUE,
        )?;
        let negative = |pointer: &str| {
            DecodeError::new(
                ErrorCode::INVALID_FIELD_VALUE,
                pointer,
                "must be a number >= 0".to_owned(),
            )
        };
        if progress.progress < 0.0 {
            return Err(negative("/payload/progress"));
        }
        if progress.total.is_some_and(|t| t < 0.0) {
            return Err(negative("/payload/total"));
        }
    }
    Ok(Event {
        id,
        channel,
        seq,
        payload,
        timestamp,
    })
}

#[cfg(test)]
mod tests;
