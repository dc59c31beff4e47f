//! The fast path of [`decode`](super::decode): the envelope is read straight into borrowed fields instead of a
//! `serde_json::Value` map, saving an allocation for every key and for `v`, `id` and `type` (about half the
//! allocations of reading a small request or response). It only takes the plain case: every field once, each
//! allowed for the message's `type`, `v` right, a readable `id`, no `"error": null` beside a `result`, and
//! fields that the shared helpers accept. Anything else (unknown or repeated fields, wrong types, any error)
//! returns `None` and goes through the general path, which then produces exactly the message or the error it
//! always did; for the plain case both paths call the same helpers with the same values.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{event_from, request_from, response_from, DecodeMode, EventFields, ParamsField};
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
    #[serde(default, borrow, deserialize_with = "present_raw")]
    params: Option<&'a RawValue>,
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

/// `params`, kept as its text.
fn present_raw<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<&'de RawValue>, D::Error> {
    <&'de RawValue>::deserialize(deserializer).map(Some)
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
            request_from(e.method, e.params.map(ParamsField::Raw), mode, id)
                .ok()
                .map(Message::Request)
        }
        "response" => {
            let others = [&e.method, &e.channel, &e.seq, &e.payload];
            if others.iter().any(|f| f.is_some()) || e.params.is_some() || e.timestamp.is_some() {
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
            let others = [&e.method, &e.result, &e.error];
            if others.iter().any(|f| f.is_some()) || e.params.is_some() {
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
