//! The fast path of [`decode`](super::decode): the envelope is read straight into borrowed fields instead of a
//! `serde_json::Value` map, saving an allocation for every key and for `v`, `id` and `type` (about half the
//! allocations of reading a small request or response). It only takes the plain case: every field once, each
//! allowed for the message's `type`, `v` right, a readable `id`, no `"error": null` beside a `result`, and
//! fields that the shared helpers accept. Anything else (unknown or repeated fields, wrong types, any error)
//! returns `None` and goes through the general path, which then produces exactly the message or the error it
//! always did; for the plain case both paths call the same helpers with the same values.
//!
//! Before that, a `tools/call` request or a success response written exactly as gabp-rs writes it (`v`, `id`,
//! `type`, then `method` and `params` or `result`, compact) is matched as bytes, and only its params or result
//! is parsed.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{event_from, request_named, response_from, DecodeMode, ParamsField};
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
    if let Some(call) = plain_call(body) {
        return Some(call);
    }
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
            let fields = [e.channel, e.seq, e.payload, e.timestamp];
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
    if let Some(found) = plain_success(body) {
        return Some(found);
    }
    let text = std::str::from_utf8(body).ok()?;
    let s: Success<'_> = serde_json::from_str(text).ok()?;
    if s.v != PROTOCOL_VERSION || s.kind != "response" {
        return None;
    }
    if !value_reads(s.result.get()) {
        return None;
    }
    let id = MessageId::parse(&s.id).ok()?;
    Some((id, range_in(body, s.result.get().as_bytes())?))
}

/// Where `part`, which borrows from `body`, lies in it: the distance between the two.
fn range_in(body: &[u8], part: &[u8]) -> Option<std::ops::Range<usize>> {
    let start = (part.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    let range = start..start.checked_add(part.len())?;
    (body.get(range.clone()) == Some(part)).then_some(range)
}

/// What follows the id of a `tools/call` request written that way, up to its params.
const CALL: &[u8] = br#"","type":"request","method":"tools/call","params":"#;
/// What follows the id of a success response written that way, up to its result.
const SUCCESS: &[u8] = br#"","type":"response","result":"#;

/// A body written as the encoder's `HEAD`, an id, `kind`, one last member's value and `}`: its id and that value's text,
/// whitespace around it aside. `None` for a body written any other way; the value is not read here (not even
/// its UTF-8).
fn written_plainly<'a>(body: &'a [u8], kind: &[u8]) -> Option<(MessageId, &'a [u8])> {
    let rest = body.strip_prefix(crate::encode::HEAD)?;
    let (id, rest) = rest.split_at_checked(crate::id::ID_LEN)?;
    let value = trim(trim(rest.strip_prefix(kind)?).strip_suffix(b"}")?);
    // A quote or backslash in the id fails the UUID check: the id's text is the string's value.
    let id = MessageId::from_ascii(id)?;
    Some((id, value))
}

/// `bytes` without JSON whitespace at either end (RFC 8259 §2: space, tab, line feed, carriage return).
fn trim(bytes: &[u8]) -> &[u8] {
    let space = |b: &u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let start = bytes.iter().position(|b| !space(b)).unwrap_or(bytes.len());
    let end = bytes
        .iter()
        .rposition(|b| !space(b))
        .map_or(start, |last| last + 1);
    &bytes[start..end]
}

/// A `tools/call` request as bridges write it: the envelope is matched as bytes and the params are read once,
/// by the check of their members, which parses them whole. What both decoders would read, for a request that
/// the check accepts; anything else takes the other paths.
fn plain_call(body: &[u8]) -> Option<Message> {
    let (id, text) = written_plainly(body, CALL)?;
    let text = std::str::from_utf8(text).ok()?;
    if !text.starts_with('{') {
        return None;
    }
    // Dropped unless the check, which parses the text whole, accepts it.
    let mut params = Some(crate::Params::from_checked(text));
    super::params::check_tools_call(params.as_mut()).ok()?;
    let method = MethodName::tools_call();
    Some(Message::Request(crate::Request { id, method, params }))
}

/// A success response as gabp-rs writes it: the envelope is matched as bytes, the result read once.
fn plain_success(body: &[u8]) -> Option<(MessageId, std::ops::Range<usize>)> {
    let (id, result) = written_plainly(body, SUCCESS)?;
    if !result_reads(result) {
        return None;
    }
    Some((id, range_in(body, result)?))
}

/// Whether a result's text is UTF-8 that [`value_reads`].
pub(super) fn result_reads(text: &[u8]) -> bool {
    std::str::from_utf8(text).is_ok_and(value_reads)
}

/// A success response as gabp-rs writes it, its result not read.
pub(super) fn written_success(body: &[u8]) -> Option<(MessageId, std::ops::Range<usize>)> {
    let (id, result) = written_plainly(body, SUCCESS)?;
    Some((id, range_in(body, result)?))
}

/// Nesting the plain path reads; deeper results take the general path.
const DEPTH: usize = 64;

/// Whether a `serde_json::Value` reads `raw`, as both decoders do, nested at most [`DEPTH`] deep. A raw value
/// only has its syntax checked: a number beyond the range of `f64`, a lone surrogate escape and nesting beyond
/// serde_json's limit pass, and `Value` refuses them.
fn value_reads(raw: &str) -> bool {
    crate::success::reads_as_value(raw, DEPTH).is_ok()
}

#[cfg(test)]
mod tests {
    use super::{plain_call, plain_success, value_reads, DEPTH};
    use crate::{Message, MethodName, Request, Response};
    use serde_json::Value;

    #[test]
    fn what_gabp_rs_writes_is_matched_as_bytes() {
        let params = serde_json::json!({"name": "demo/echo", "arguments": {"value": "x"}});
        let call = Request::with_params(MethodName::tools_call(), &params).unwrap();
        let id = call.id;
        let body = Message::from(call.clone()).to_vec();
        assert_eq!(plain_call(&body), Some(Message::Request(call)));
        let answer = Message::from(Response::success(id, params)).to_vec();
        let (found, range) = plain_success(&answer).expect("matched");
        assert_eq!(
            (found, &answer[range]),
            (
                id,
                &br#"{"arguments":{"value":"x"},"name":"demo/echo"}"#[..]
            )
        );
        // Another method, an error, or another order of members is read by the other paths.
        let ping = Request::new(MethodName::new("session/ping").unwrap(), None);
        assert_eq!(plain_call(&Message::from(ping).to_vec()), None);
        let error = Response::error(
            id,
            crate::ErrorObject::new(crate::ErrorCode::INTERNAL_ERROR, "no"),
        );
        assert_eq!(plain_success(&Message::from(error).to_vec()), None);
        let (v, swapped) = (
            r#""v":"gabp/1","id":"#,
            format!(r#""id":"{id}","v":"gabp/1""#),
        );
        let reordered =
            String::from_utf8(body)
                .unwrap()
                .replacen(&format!(r#"{v}"{id}""#), &swapped, 1);
        assert!(reordered.starts_with(r#"{"id""#));
        assert_eq!(plain_call(reordered.as_bytes()), None);
    }

    #[test]
    fn results_read_as_a_value_reads_them() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(value_reads(&deep(DEPTH)));
        assert!(!value_reads(&deep(DEPTH + 1)));
        let wide = format!("[{}]", ["[]"; 100].join(","));
        assert!(value_reads(&wide));
        // Brackets inside strings, escaped quotes included, do not nest.
        let quoted = format!(r#"[{{"a":"{}\"{{{{"}}]"#, "[".repeat(200));
        assert!(value_reads(&quoted));
        let token = r#"{"$serde_json::private::RawValue":"[1,"}"#;
        for refused in [
            "1e400",
            r#""\ud800""#,
            r#"{"\udc00":1}"#,
            "[1,]",
            "1 2",
            "",
            token,
        ] {
            assert!(!value_reads(refused), "{refused}");
            assert!(serde_json::from_str::<Value>(refused).is_err(), "{refused}");
        }
        for read in [
            "1e308",
            r#""\ud83d\ude00""#,
            r#"{"a":1,"a":2}"#,
            "-0",
            "null",
        ] {
            assert!(value_reads(read), "{read}");
        }
        // Read by `Value` as the JSON in the string, not as an object: left to the general path.
        let token = r#"[{"\u0024serde_json::private::RawValue":"[1,2]"}]"#;
        let read = serde_json::from_str::<Value>(token).unwrap();
        assert_eq!(read, serde_json::json!([[1, 2]]));
        assert!(!value_reads(token));
    }
}
