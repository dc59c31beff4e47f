//! The envelope: one [`Message`] enum of [`Request`], [`Response`] and [`Event`].

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::{ChannelName, ErrorObject, MessageId, MethodName, Params, ResultValue, Timestamp};

/// The wire version every message carries in `v`.
pub const PROTOCOL_VERSION: &str = "gabp/1";

/// Any GABP message.
///
/// Serializing a `Message` always yields a strictly valid envelope when its parts are valid (names are
/// validated on construction). Deserializing goes through the lenient decoder
/// ([`crate::decode::decode_value`] with [`crate::decode::DecodeMode::Lenient`]); use
/// [`crate::decode::decode`] to choose the mode and get typed errors with JSON pointers and GABP codes.
///
/// ```
/// use gabp_types::{Message, MethodName, Request};
///
/// let request = Request::new(MethodName::new("tools/list")?, None);
/// let json = serde_json::to_string(&Message::from(request.clone()))?;
/// let back: Message = serde_json::from_str(&json)?;
/// assert_eq!(back, Message::Request(request));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// `type: "request"`.
    Request(Request),
    /// `type: "response"`.
    Response(Response),
    /// `type: "event"`.
    Event(Event),
}

/// The kind of a message, as in its `type` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MessageKind {
    /// A request.
    Request,
    /// A response.
    Response,
    /// An event.
    Event,
}

impl MessageKind {
    /// The wire name (`request`, `response`, `event`).
    pub fn as_str(self) -> &'static str {
        match self {
            MessageKind::Request => "request",
            MessageKind::Response => "response",
            MessageKind::Event => "event",
        }
    }
}

impl Message {
    /// The message's id.
    pub fn id(&self) -> MessageId {
        match self {
            Message::Request(r) => r.id,
            Message::Response(r) => r.id,
            Message::Event(e) => e.id,
        }
    }

    /// The message's kind.
    pub fn kind(&self) -> MessageKind {
        match self {
            Message::Request(_) => MessageKind::Request,
            Message::Response(_) => MessageKind::Response,
            Message::Event(_) => MessageKind::Event,
        }
    }

    /// Serializes the message to compact JSON bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        // Serializing our own types into a Vec cannot fail: every map key is a string and no Serialize impl
        // here returns an error.
        crate::encode::with_envelope(self, <[u8]>::to_vec).unwrap_or_default()
    }
}

impl From<Request> for Message {
    fn from(r: Request) -> Self {
        Message::Request(r)
    }
}

impl From<Response> for Message {
    fn from(r: Response) -> Self {
        Message::Response(r)
    }
}

impl From<Event> for Message {
    fn from(e: Event) -> Self {
        Message::Event(e)
    }
}

/// A request: `method` with optional `params`.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// Unique id; the response carries the same id.
    pub id: MessageId,
    /// The method to invoke.
    pub method: MethodName,
    /// The parameters, when present (`params` is always an object on the wire), as their JSON text.
    pub params: Option<Params>,
}

impl Request {
    /// A request with a fresh random id.
    pub fn new(method: MethodName, params: Option<Map<String, Value>>) -> Self {
        Request::with_raw_params(method, params.map(Params::from))
    }

    /// A request with a fresh random id and params already in their wire form.
    pub fn with_raw_params(method: MethodName, params: Option<Params>) -> Self {
        Request {
            id: MessageId::new_v4(),
            method,
            params,
        }
    }

    /// A request whose params are the serialization of `params`, which must serialize to a JSON object
    /// (anything else is an error). The params are written straight to JSON text, with no tree of values.
    pub fn with_params<P: Serialize>(
        method: MethodName,
        params: &P,
    ) -> Result<Self, serde_json::Error> {
        Ok(Request::with_raw_params(
            method,
            Some(Params::from_serialize(params)?),
        ))
    }

    /// Deserializes the params into `P` (an absent `params` reads as `{}`).
    pub fn params_as<P: serde::de::DeserializeOwned>(&self) -> Result<P, serde_json::Error> {
        match &self.params {
            Some(params) => params.decode(),
            None => serde_json::from_str("{}"),
        }
    }
}

/// The two outcomes a response can carry.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// `result`: the method succeeded (any JSON value, `null` included; it derefs to a [`Value`]).
    Result(ResultValue),
    /// `error`: the method failed.
    Error(ErrorObject),
}

/// A response to a request, carrying exactly one of `result` and `error`.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request this answers.
    pub id: MessageId,
    /// The result or the error.
    pub outcome: Outcome,
}

impl Response {
    /// A success response.
    pub fn success(id: MessageId, result: Value) -> Self {
        Response::with_result(id, ResultValue::from(result))
    }

    /// A success response whose result may be JSON text ([`ResultValue::from_serialize`]), written as it is.
    pub fn with_result(id: MessageId, result: ResultValue) -> Self {
        Response {
            id,
            outcome: Outcome::Result(result),
        }
    }

    /// An error response.
    pub fn error(id: MessageId, error: ErrorObject) -> Self {
        Response {
            id,
            outcome: Outcome::Error(error),
        }
    }

    /// The result, if the response is a success.
    pub fn result(&self) -> Option<&Value> {
        match &self.outcome {
            Outcome::Result(v) => Some(v),
            Outcome::Error(_) => None,
        }
    }

    /// The error, if the response is a failure.
    pub fn error_object(&self) -> Option<&ErrorObject> {
        match &self.outcome {
            Outcome::Result(_) => None,
            Outcome::Error(e) => Some(e),
        }
    }

    /// Converts into `Result<result, error>`.
    pub fn into_result(self) -> Result<Value, ErrorObject> {
        match self.outcome {
            Outcome::Result(v) => Ok(v.into_value()),
            Outcome::Error(e) => Err(e),
        }
    }
}

/// An event published on a channel.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Unique id of this event.
    pub id: MessageId,
    /// The channel it was published on.
    pub channel: ChannelName,
    /// Sequence number, per channel, from 0.
    pub seq: u64,
    /// The event's data.
    pub payload: Value,
    /// When the event occurred (RFC 3339), if the publisher says.
    pub timestamp: Option<Timestamp>,
}

impl Event {
    /// An event with a fresh random id and no timestamp.
    pub fn new(channel: ChannelName, seq: u64, payload: Value) -> Self {
        Event {
            id: MessageId::new_v4(),
            channel,
            seq,
            payload,
            timestamp: None,
        }
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Message::Request(r) => r.serialize(serializer),
            Message::Response(r) => r.serialize(serializer),
            Message::Event(e) => e.serialize(serializer),
        }
    }
}

impl Serialize for Request {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(if self.params.is_some() { 5 } else { 4 }))?;
        map.serialize_entry("v", PROTOCOL_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("type", "request")?;
        map.serialize_entry("method", &self.method)?;
        if let Some(params) = &self.params {
            map.serialize_entry("params", params)?;
        }
        map.end()
    }
}

impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("v", PROTOCOL_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("type", "response")?;
        match &self.outcome {
            Outcome::Result(v) => map.serialize_entry("result", v)?,
            Outcome::Error(e) => map.serialize_entry("error", e)?,
        }
        map.end()
    }
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map =
            serializer.serialize_map(Some(if self.timestamp.is_some() { 7 } else { 6 }))?;
        map.serialize_entry("v", PROTOCOL_VERSION)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("type", "event")?;
        map.serialize_entry("channel", &self.channel)?;
        map.serialize_entry("seq", &self.seq)?;
        map.serialize_entry("payload", &self.payload)?;
        if let Some(ts) = &self.timestamp {
            map.serialize_entry("timestamp", ts)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Message {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        crate::decode::decode_value(value, crate::decode::DecodeMode::Lenient)
            .map_err(serde::de::Error::custom)
    }
}
