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

use std::fmt;

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::methods::{self, Method};
use crate::{
    without_json_position, Attention, ChannelName, ErrorCode, ErrorObject, Event, Message,
    MessageId, MessageKind, MethodName, Outcome, Request, Response, Timestamp, PROTOCOL_VERSION,
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
    /// `"error": null` beside a `result` is ignored; `launchId` may be any string; channel names need only be
    /// non-empty; an invalid event `timestamp` is dropped.
    Lenient,
}

/// Why a message body was refused.
///
/// Boxed inside, so `Result<Message, DecodeError>` stays small on the hot path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DecodeError(Box<DecodeErrorInner>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct DecodeErrorInner {
    code: ErrorCode,
    pointer: String,
    reason: String,
    id: Option<MessageId>,
    kind: Option<MessageKind>,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.pointer.is_empty() {
            write!(f, "{} [{}]", self.0.reason, self.0.code.0)
        } else {
            write!(
                f,
                "{}: {} [{}]",
                self.0.pointer, self.0.reason, self.0.code.0
            )
        }
    }
}

impl DecodeError {
    fn new(code: ErrorCode, pointer: impl Into<String>, reason: impl Into<String>) -> Self {
        DecodeError(Box::new(DecodeErrorInner {
            code,
            pointer: pointer.into(),
            reason: reason.into(),
            id: None,
            kind: None,
        }))
    }

    fn with_id(mut self, id: Option<MessageId>) -> Self {
        self.0.id = id;
        self
    }

    /// The code the receiver should answer with (-32700, -32600, -32200, -32201, -32202, -32203, -32602).
    pub fn code(&self) -> ErrorCode {
        self.0.code
    }

    /// JSON pointer (RFC 6901) of the offending value; empty for the whole document.
    pub fn pointer(&self) -> &str {
        &self.0.pointer
    }

    /// What is wrong, in words.
    pub fn reason(&self) -> &str {
        &self.0.reason
    }

    /// The message's `type`, when it names one of the three kinds. A receiver never answers an invalid
    /// response or event (so two peers can never bounce error replies at each other).
    pub fn kind(&self) -> Option<MessageKind> {
        self.0.kind
    }

    /// The message's id, when it could be read as a UUID (an answer then carries it; otherwise the nil id).
    pub fn id(&self) -> Option<MessageId> {
        self.0.id
    }

    /// The error object to answer with: the code, a message naming the pointer and the reason, and
    /// `data: {pointer}`.
    pub fn to_error_object(&self) -> ErrorObject {
        let mut data = Map::new();
        data.insert("pointer".into(), Value::String(self.0.pointer.clone()));
        if self.0.code == ErrorCode::INVALID_PARAMS {
            data.insert(
                "errors".into(),
                serde_json::json!([{ "path": self.0.pointer, "message": self.0.reason }]),
            );
        }
        ErrorObject::new(self.0.code, self.to_string()).with_data(Value::Object(data))
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
        check_result(method, result).map_err(|mut e| {
            e.0.kind = Some(MessageKind::Response);
            e.with_id(Some(*id))
        })?;
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

/// The JSON type name of a value, for messages.
pub(crate) fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

const REQUEST_FIELDS: &[&str] = &["v", "id", "type", "method", "params"];
const RESPONSE_FIELDS: &[&str] = &["v", "id", "type", "result", "error"];
const EVENT_FIELDS: &[&str] = &["v", "id", "type", "channel", "seq", "payload", "timestamp"];
const ENVELOPE_FIELDS: &[&str] = &[
    "v",
    "id",
    "type",
    "method",
    "params",
    "result",
    "error",
    "channel",
    "seq",
    "payload",
    "timestamp",
];

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
    envelope(&mut map, mode, id).map_err(|mut e| {
        e.0.kind = kind;
        e.with_id(id)
    })
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
    if mode == DecodeMode::Lenient
        && kind == 1
        && map.get("error") == Some(&Value::Null)
        && map.contains_key("result")
    {
        map.remove("error");
    }
    if map.len() > allowed.len() || map.keys().any(|k| !allowed.contains(&k.as_str())) {
        let mut unknown = Vec::new();
        for key in map.keys() {
            if allowed.contains(&key.as_str()) {
                continue;
            }
            if ENVELOPE_FIELDS.contains(&key.as_str()) {
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
    match kind {
        0 => request(map, mode, id).map(Message::Request),
        1 => response(map, id).map(Message::Response),
        _ => event(map, mode, id).map(Message::Event),
    }
}

fn request(
    map: &mut Map<String, Value>,
    mode: DecodeMode,
    id: MessageId,
) -> Result<Request, DecodeError> {
    request_from(map.remove("method"), map.remove("params"), mode, id)
}

/// A request from its `method` and `params` fields (`None`: absent).
fn request_from(
    method: Option<Value>,
    params: Option<Value>,
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
    let mut params = match params {
        None => None,
        Some(Value::Object(p)) => Some(p),
        Some(other) => {
            return Err(DecodeError::new(
                ErrorCode::INVALID_PARAMS,
                "/params",
                format!("`params` must be an object, not {}", json_type_name(&other)),
            ))
        }
    };
    if mode == DecodeMode::Lenient && method.as_str() == methods::ToolsCall::NAME {
        if let Some(p) = params.as_mut() {
            if let Some(parameters) = p.remove("parameters") {
                p.entry("arguments").or_insert(parameters);
            }
        }
    }
    check_params(method.as_str(), params.as_ref(), mode)?;
    Ok(Request { id, method, params })
}

fn response(map: &mut Map<String, Value>, id: MessageId) -> Result<Response, DecodeError> {
    response_from(map.remove("result"), map.remove("error"), id)
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
            (Some(result), None) => Outcome::Result(result),
            (None, Some(error)) => {
                let error: ErrorObject = typed(&error, "/error", ErrorCode::INVALID_FIELD_VALUE)?;
                Outcome::Error(error)
            }
        };
    Ok(Response { id, outcome })
}

fn event(
    map: &mut Map<String, Value>,
    mode: DecodeMode,
    id: MessageId,
) -> Result<Event, DecodeError> {
    let fields = EventFields {
        channel: map.remove("channel"),
        seq: map.remove("seq"),
        payload: map.remove("payload"),
        timestamp: map.remove("timestamp"),
    };
    event_from(fields, mode, id)
}

/// The fields of an event beyond the envelope (`None`: absent).
struct EventFields {
    channel: Option<Value>,
    seq: Option<Value>,
    payload: Option<Value>,
    timestamp: Option<Value>,
}

/// An event from its fields.
fn event_from(fields: EventFields, mode: DecodeMode, id: MessageId) -> Result<Event, DecodeError> {
    let EventFields {
        channel,
        seq,
        payload,
        timestamp,
    } = fields;
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
        typed::<Attention>(&payload, "/payload", ErrorCode::INVALID_FIELD_VALUE)?;
    }
    Ok(Event {
        id,
        channel,
        seq,
        payload,
        timestamp,
    })
}

/// The fast path of [`decode`]: the envelope is read straight into borrowed fields instead of a
/// `serde_json::Value` map, saving an allocation for every key and for `v`, `id` and `type` (about half the
/// allocations of reading a small request or response). It only takes the plain case: every field once, each
/// allowed for the message's `type`, `v` right, a readable `id`, no `"error": null` beside a `result`, and
/// fields that the shared helpers accept. Anything else (unknown or repeated fields, wrong types, any error)
/// returns `None` and goes through the general path, which then produces exactly the message or the error it
/// always did; for the plain case both paths call the same helpers with the same values.
mod fast {
    use std::borrow::Cow;

    use serde::{Deserialize, Deserializer};
    use serde_json::Value;

    use super::{event_from, request_from, response_from, DecodeMode, EventFields};
    use crate::{Message, MessageId, PROTOCOL_VERSION};

    /// Every field a message may have; `deny_unknown_fields` and the derive's duplicate check send anything
    /// else to the general path.
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Envelope<'a> {
        #[serde(borrow)]
        v: Cow<'a, str>,
        #[serde(borrow)]
        id: Cow<'a, str>,
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
        #[serde(default, deserialize_with = "present")]
        method: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        params: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        result: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        error: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        channel: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        seq: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        payload: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        timestamp: Option<Value>,
    }

    /// A field that is present, `null` included (`Option<Value>` alone would read `null` as absent).
    fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
        Value::deserialize(deserializer).map(Some)
    }

    pub(super) fn decode(body: &[u8], mode: DecodeMode) -> Option<Message> {
        let text = std::str::from_utf8(body).ok()?;
        let e: Envelope<'_> = serde_json::from_str(text).ok()?;
        if e.v != PROTOCOL_VERSION {
            return None;
        }
        let id = MessageId::parse(&e.id).ok()?;
        match &*e.kind {
            "request" => {
                let others = [&e.result, &e.error, &e.channel, &e.seq, &e.payload];
                if others.iter().any(|f| f.is_some()) || e.timestamp.is_some() {
                    return None;
                }
                request_from(e.method, e.params, mode, id)
                    .ok()
                    .map(Message::Request)
            }
            "response" => {
                let others = [&e.method, &e.params, &e.channel, &e.seq, &e.payload];
                if others.iter().any(|f| f.is_some()) || e.timestamp.is_some() {
                    return None;
                }
                if e.result.is_some() && e.error.is_some() {
                    // Both present (`"error": null` is tolerated when lenient): the general path decides.
                    return None;
                }
                response_from(e.result, e.error, id)
                    .ok()
                    .map(Message::Response)
            }
            "event" => {
                let others = [&e.method, &e.params, &e.result, &e.error];
                if others.iter().any(|f| f.is_some()) {
                    return None;
                }
                let fields = EventFields {
                    channel: e.channel,
                    seq: e.seq,
                    payload: e.payload,
                    timestamp: e.timestamp,
                };
                event_from(fields, mode, id).ok().map(Message::Event)
            }
            _ => None,
        }
    }
}

/// Escapes a JSON pointer reference token (RFC 6901).
fn escape_pointer(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Deserializes `T` from a borrowed value, mapping a failure to `code` with the pointer of the failing value.
///
/// The fast path deserializes directly; only a failure pays for a second, path-tracking pass that finds the
/// pointer.
fn typed<T: DeserializeOwned>(
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
        SessionHello::NAME => {
            check::<SessionHello>(params)?;
            if mode == DecodeMode::Strict {
                let launch_id = params
                    .and_then(|p| p.get("launchId"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !crate::format::is_hyphenated_uuid(launch_id) {
                    return Err(DecodeError::new(
                        ErrorCode::INVALID_PARAMS,
                        "/params/launchId",
                        format!("`launchId` must be a hyphenated UUID, got {launch_id:?}"),
                    ));
                }
            }
            Ok(())
        }
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
