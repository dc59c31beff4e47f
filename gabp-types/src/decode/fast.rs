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

use super::{event_from, request_named, response_from, DecodeMode, EventFields, ParamsField};
use crate::{Message, MessageId, MethodName, PROTOCOL_VERSION};

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
    /// A `method` that is not a string (`null` included) fails here and takes the general path.
    #[serde(default, borrow, deserialize_with = "present_str")]
    method: Option<Cow<'a, str>>,
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

/// A field that is present and a string, borrowed unless it has escapes.
fn present_str<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Cow<'de, str>>, D::Error> {
    deserializer.deserialize_str(crate::params::Text).map(Some)
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
            // The methods of SPEC/1.0 are kept without a copy of their name; an invalid name takes the
            // general path, which says why.
            let name = e.method?;
            let method = MethodName::known(&name).or_else(|| MethodName::new(name).ok())?;
            request_named(method, e.params.map(ParamsField::Raw), mode, id)
                .ok()
                .map(Message::Request)
        }
        "response" => {
            let others = [&e.channel, &e.seq, &e.payload];
            if others.iter().any(|f| f.is_some())
                || e.method.is_some()
                || e.params.is_some()
                || e.timestamp.is_some()
            {
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
            let others = [&e.result, &e.error];
            if others.iter().any(|f| f.is_some()) || e.method.is_some() || e.params.is_some() {
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

/// A plain success response: exactly `v`, `id`, `type` and `result`, each once. Anything else is not read
/// here (`deny_unknown_fields` and the derive's duplicate check refuse it).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Success<'a> {
    #[serde(borrow)]
    v: Cow<'a, str>,
    #[serde(borrow)]
    id: Cow<'a, str>,
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    result: &'a RawValue,
}

pub(super) fn success(body: &[u8]) -> Option<(MessageId, std::ops::Range<usize>)> {
    let text = std::str::from_utf8(body).ok()?;
    let s: Success<'_> = serde_json::from_str(text).ok()?;
    if s.v != PROTOCOL_VERSION || s.kind != "response" {
        return None;
    }
    // serde_json skips a raw value without its nesting limit: a deeply nested result goes to the general path,
    // which refuses what is nested too deeply.
    if !nested_at_most(s.result.get().as_bytes(), SHALLOW) {
        return None;
    }
    let id = MessageId::parse(&s.id).ok()?;
    // `result` borrows from `text`: its place in the body is the distance between the two.
    let start = (s.result.get().as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
    let range = start..start + s.result.get().len();
    (text.get(range.clone()) == Some(s.result.get())).then_some((id, range))
}

/// Nesting that is read here; deeper results take the general path.
const SHALLOW: usize = 64;

/// Whether the arrays and objects of the JSON `text` nest at most `limit` deep.
fn nested_at_most(text: &[u8], limit: usize) -> bool {
    // No deeper than the brackets that open: a count the compiler vectorizes settles most texts without the
    // scan below, which follows strings byte by byte.
    let opening = text.iter().filter(|&&b| b == b'[' || b == b'{').count();
    if opening <= limit {
        return true;
    }
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &b in text {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return false;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::nested_at_most;

    #[test]
    fn nesting_is_measured_past_the_count_of_brackets() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(nested_at_most(deep(4).as_bytes(), 4));
        assert!(!nested_at_most(deep(5).as_bytes(), 4));
        // More brackets than the limit, none deeper than it: the scan decides.
        let wide = format!("[{}]", ["[]"; 10].join(","));
        assert!(nested_at_most(wide.as_bytes(), 2));
        assert!(!nested_at_most(wide.as_bytes(), 1));
        // Brackets inside strings, escaped quotes included, do not nest.
        let quoted = r#"[{"a":"[[[[\"{{{{"}]"#;
        assert!(nested_at_most(quoted.as_bytes(), 2));
        assert!(!nested_at_most(quoted.as_bytes(), 1));
    }
}
