//! Serializing through one reused buffer per thread, so that what is kept of a serialization (a message body,
//! params) costs one allocation of exactly its size instead of a growing buffer's several; and the envelopes
//! written without serde's escaping of the member names and values that never need it.

use std::cell::RefCell;
use std::io::Write as _;

use serde::Serialize;

use crate::{
    ChannelName, Event, Message, MessageId, Outcome, Request, Response, ResultValue, Timestamp,
};

/// A buffer that grew past this is given back after use, so no thread keeps a large one.
const KEEP: usize = 64 * 1024;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Serializes `value` as compact JSON into this thread's buffer and hands the bytes to `take`, which keeps
/// what it needs (a copy of exactly their size).
///
/// ```
/// let body = gabp_types::encode::with_json(&[1, 2], |json| json.to_vec()).unwrap();
/// assert_eq!(body, b"[1,2]");
/// ```
///
/// # Errors
///
/// When `value` does not serialize (a map with keys that are not strings, a `Serialize` that fails).
pub fn with_json<T, R>(value: &T, take: impl FnOnce(&[u8]) -> R) -> Result<R, serde_json::Error>
where
    T: Serialize + ?Sized,
{
    with_scratch(|buf| serde_json::to_writer(buf, value), take)
}

/// Writes `envelope` as compact JSON into this thread's buffer and hands the bytes to `take`: the same bytes
/// as [`with_json`] gives, with less work.
///
/// ```
/// use gabp_types::{MessageId, Response};
///
/// let response = Response::success(MessageId::new_v4(), serde_json::json!({"ok": true}));
/// let fast = gabp_types::encode::with_envelope(&response, <[u8]>::to_vec).unwrap();
/// assert_eq!(fast, serde_json::to_vec(&response).unwrap());
/// ```
///
/// # Errors
///
/// Never in practice: a result, an error and a payload are JSON values, which always serialize; kept for
/// symmetry with [`with_json`].
pub fn with_envelope<E, R>(
    envelope: &E,
    take: impl FnOnce(&[u8]) -> R,
) -> Result<R, serde_json::Error>
where
    E: Envelope + ?Sized,
{
    with_scratch(|buf| envelope.write_json(buf), take)
}

/// Runs `write` on this thread's buffer, emptied, then `take` on what it wrote, while the buffer is still borrowed.
/// A call made from inside `write` (a `Serialize` impl that serializes through here), or while the thread ends
/// and its buffer is gone (a thread-local's destructor), gets a fresh buffer.
pub(crate) fn with_scratch<R>(
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), serde_json::Error>,
    take: impl FnOnce(&[u8]) -> R,
) -> Result<R, serde_json::Error> {
    let mut job = Some((write, take));
    let kept = SCRATCH.try_with(|scratch| {
        let mut buf = scratch.try_borrow_mut().ok()?;
        let (write, take) = job.take()?;
        buf.clear();
        let written = write(&mut buf).map(|()| take(&buf));
        if buf.capacity() > KEEP {
            *buf = Vec::new();
        }
        Some(written)
    });
    match (kept, job) {
        (Ok(Some(written)), _) => written,
        (_, Some((write, take))) => {
            let mut buf = Vec::new();
            write(&mut buf).map(|()| take(&buf))
        }
        // The buffer was used, so the first arm matched.
        (_, None) => Err(serde::ser::Error::custom(
            "the serialization buffer was lost",
        )),
    }
}

/// A GABP message (SPEC/1.0 gabp.md §3) that writes itself as compact JSON: byte for byte what its
/// `Serialize` impl gives `serde_json`, with the member names, `v`, `type` and the id written as they are
/// (they never need escapes).
pub trait Envelope: Serialize {
    /// Appends the message's JSON to `out`.
    ///
    /// # Errors
    ///
    /// When a value inside does not serialize.
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error>;
}

impl Envelope for Message {
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        match self {
            Message::Request(r) => r.write_json(out),
            Message::Response(r) => r.write_json(out),
            Message::Event(e) => e.write_json(out),
        }
    }
}

impl Envelope for Request {
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        head(out, &self.id, "request");
        out.extend_from_slice(br#","method":"#);
        string(out, self.method.as_str())?;
        if let Some(params) = &self.params {
            out.extend_from_slice(br#","params":"#);
            out.extend_from_slice(params.as_json().as_bytes());
        }
        out.push(b'}');
        Ok(())
    }
}

impl Envelope for Response {
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        head(out, &self.id, "response");
        match &self.outcome {
            Outcome::Result(v) => {
                out.extend_from_slice(br#","result":"#);
                result_value(out, v)?;
            }
            Outcome::Error(e) => {
                out.extend_from_slice(br#","error":"#);
                serde_json::to_writer(&mut *out, e)?;
            }
        }
        out.push(b'}');
        Ok(())
    }
}

impl Envelope for Event {
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        let members = EventMembers {
            id: &self.id,
            channel: &self.channel,
            seq: self.seq,
            timestamp: self.timestamp.as_ref(),
        };
        event(out, &members, |out| {
            serde_json::to_writer(out, &self.payload)
        })
    }
}

/// An event's members but its payload (SPEC/1.0 gabp.md §3.4).
#[derive(Debug, Clone, Copy)]
pub struct EventMembers<'a> {
    /// The event's id.
    pub id: &'a MessageId,
    /// Its channel.
    pub channel: &'a ChannelName,
    /// Its sequence number on the channel.
    pub seq: u64,
    /// When it occurred, if the publisher says.
    pub timestamp: Option<&'a Timestamp>,
}

/// Writes the event of `members` and `payload` as compact JSON into this thread's buffer and hands the bytes to
/// `take`: written as [`Event`]'s envelope is, the payload's text as it stands, so no tree of values when the
/// payload is text ([`ResultValue::from_serialize`]). A payload made from a value gives the bytes
/// [`with_envelope`] gives for the same [`Event`].
///
/// ```
/// use gabp_types::encode::{with_event, with_envelope, EventMembers};
/// use gabp_types::{ChannelName, Event, ResultValue};
///
/// let channel = ChannelName::new("player/move").unwrap();
/// let event = Event::new(channel.clone(), 7, serde_json::json!({"x": 1}));
/// let members = EventMembers { id: &event.id, channel: &channel, seq: 7, timestamp: None };
/// let payload = ResultValue::from_serialize(&serde_json::json!({"x": 1})).unwrap();
/// let body = with_event(&members, &payload, <[u8]>::to_vec).unwrap();
/// assert_eq!(body, with_envelope(&event, <[u8]>::to_vec).unwrap());
/// ```
///
/// # Errors
///
/// Never in practice, as [`with_envelope`].
pub fn with_event<R>(
    members: &EventMembers<'_>,
    payload: &ResultValue,
    take: impl FnOnce(&[u8]) -> R,
) -> Result<R, serde_json::Error> {
    with_scratch(
        |out| event(out, members, |out| result_value(out, payload)),
        take,
    )
}

/// `{"v":…,"id":…,"type":"event","channel":…,"seq":…,"payload":…[,"timestamp":…]}`, the payload written by
/// `payload`.
fn event(
    out: &mut Vec<u8>,
    members: &EventMembers<'_>,
    payload: impl FnOnce(&mut Vec<u8>) -> Result<(), serde_json::Error>,
) -> Result<(), serde_json::Error> {
    head(out, members.id, "event");
    out.extend_from_slice(br#","channel":"#);
    string(out, members.channel.as_str())?;
    // Writing to a Vec cannot fail.
    let _ = write!(out, r#","seq":{},"payload":"#, members.seq);
    payload(out)?;
    if let Some(ts) = members.timestamp {
        out.extend_from_slice(br#","timestamp":"#);
        string(out, ts.as_str())?;
    }
    out.push(b'}');
    Ok(())
}

/// A result or payload: its text when it has one, else its value.
fn result_value(out: &mut Vec<u8>, v: &ResultValue) -> Result<(), serde_json::Error> {
    match v.json_text() {
        Some(json) => {
            out.extend_from_slice(json.as_bytes());
            Ok(())
        }
        None => serde_json::to_writer(out, &**v),
    }
}

/// How every envelope starts, up to its id (SPEC/1.0 gabp.md §3); the decoder matches it as bytes.
pub(crate) const HEAD: &[u8] = br#"{"v":"gabp/1","id":""#;

/// `{"v":"gabp/1","id":"<id>","type":"<kind>"`: an id is hex digits and hyphens.
fn head(out: &mut Vec<u8>, id: &MessageId, kind: &str) {
    out.extend_from_slice(HEAD);
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(br#"","type":""#);
    out.extend_from_slice(kind.as_bytes());
    out.push(b'"');
}

/// A JSON string: as it is when nothing in it needs an escape (names are validated so), else through
/// serde_json, which escapes exactly `"`, `\` and the characters below U+0020.
pub(crate) fn string(out: &mut Vec<u8>, s: &str) -> Result<(), serde_json::Error> {
    if !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        serde_json::to_writer(out, s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_carries_the_protocol_version() {
        let expected = format!(r#"{{"v":"{}","id":""#, crate::PROTOCOL_VERSION);
        assert_eq!(HEAD, expected.as_bytes());
    }

    /// A value whose serialization serializes another value through the same buffer.
    struct Nested;

    impl Serialize for Nested {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let inner =
                with_json(&"inner", |json| json.len()).map_err(serde::ser::Error::custom)?;
            s.serialize_u64(inner as u64)
        }
    }

    #[test]
    fn nested_serialization_does_not_share_the_buffer() {
        let json = with_json(&[Nested], <[u8]>::to_vec).unwrap();
        assert_eq!(json, b"[7]");
    }

    #[test]
    fn envelopes_are_written_as_serde_writes_them() {
        use crate::{ChannelName, ErrorCode, ErrorObject, MethodName, Params, Timestamp};
        use serde_json::json;

        let say = MethodName::new("game/say").unwrap();
        let mut event = Event::new(
            ChannelName::new("world/tick").unwrap(),
            7,
            json!([1, "two"]),
        );
        let plain = event.clone();
        event.timestamp = Some(Timestamp::new("2026-11-27T05:00:00Z").unwrap());
        let messages = [
            Message::Request(Request::new(say.clone(), None)),
            Message::Request(Request::with_raw_params(
                say,
                Some(Params::from_serialize(&json!({"name": "a/b", "arguments": {}})).unwrap()),
            )),
            Message::Request(Request::new(
                MethodName::new("game/say").unwrap(),
                json!({"text": "\"q\"\\\u{1}é\n"}).as_object().cloned(),
            )),
            Message::Response(Response::success(
                MessageId::new_v4(),
                json!({"k": "\u{7f}\""}),
            )),
            Message::Response(Response::success(
                MessageId::new_v4(),
                json!({"b": [true, false, null, -1, 2.5, 1e300, u64::MAX, {}, []], "a\n": {"x": "long enough to take eight bytes at a time \u{1F600}"}, "": ""}),
            )),
            Message::Response(Response::error(
                MessageId::new_v4(),
                ErrorObject::new(ErrorCode::INTERNAL_ERROR, "bad \"thing\"").with_data(json!(1)),
            )),
            // Text, members in the order it gives them (not sorted).
            Message::Response(Response::with_result(
                MessageId::new_v4(),
                crate::ResultValue::from_serialize(&(
                    json!({"z": 1}),
                    "a long string with nothing to escape in it",
                    2.5f32,
                ))
                .unwrap(),
            )),
            Message::Event(event),
            Message::Event(plain),
        ];
        for message in messages {
            let fast = with_envelope(&message, <[u8]>::to_vec).unwrap();
            assert_eq!(
                String::from_utf8(fast).unwrap(),
                serde_json::to_string(&message).unwrap()
            );
        }
    }

    /// An event written from its parts is the event's envelope, with a payload in text or in value form.
    #[test]
    fn events_from_their_parts_are_their_envelopes() {
        use crate::{ChannelName, Timestamp};
        use serde_json::json;

        let payload = json!({"b": [1, "two\n"], "a": {"x": 2.5}});
        let mut event = Event::new(ChannelName::new("world/tick").unwrap(), 7, payload.clone());
        for timestamp in [None, Some(Timestamp::from_unix_millis(1_704_186_600_123))] {
            event.timestamp = timestamp;
            let members = EventMembers {
                id: &event.id,
                channel: &event.channel,
                seq: 7,
                timestamp: event.timestamp.as_ref(),
            };
            let envelope = serde_json::to_vec(&event).unwrap();
            for payload in [
                ResultValue::from(payload.clone()),
                ResultValue::from_serialize(&payload).unwrap(),
            ] {
                let parts = with_event(&members, &payload, <[u8]>::to_vec).unwrap();
                assert_eq!(
                    String::from_utf8(parts).unwrap(),
                    String::from_utf8(envelope.clone()).unwrap()
                );
            }
        }
    }

    #[test]
    fn strings_that_need_escapes_are_escaped() {
        for s in ["plain/name", "\"q\"", "back\\slash", "\u{1}\n", "é\u{7f}"] {
            let mut out = Vec::new();
            string(&mut out, s).unwrap();
            assert_eq!(out, serde_json::to_vec(s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn a_large_buffer_is_not_kept() {
        let big = "x".repeat(KEEP * 2);
        assert_eq!(with_json(&big, <[u8]>::len).unwrap(), KEEP * 2 + 2);
        SCRATCH.with(|s| assert!(s.borrow().capacity() <= KEEP));
    }

    // Linux runs thread-locals' destructors in reverse order of registration.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_thread_that_ends_still_serializes() {
        /// A thread-local whose destructor serializes, run after this thread's buffer is gone.
        struct SerializesOnDrop(std::sync::mpsc::Sender<std::thread::Result<Vec<u8>>>);

        impl Drop for SerializesOnDrop {
            fn drop(&mut self) {
                let gone = SCRATCH.try_with(|_| ()).is_err();
                let written = std::panic::catch_unwind(|| {
                    assert!(gone, "the buffer was still there");
                    with_json(&[1, 2], <[u8]>::to_vec).unwrap()
                });
                let _ = self.0.send(written);
            }
        }

        thread_local! {
            static LAST: RefCell<Option<SerializesOnDrop>> = const { RefCell::new(None) };
        }

        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Registered first, so destroyed after the buffer.
            LAST.with(|last| *last.borrow_mut() = Some(SerializesOnDrop(tx)));
            assert_eq!(with_json(&"x", <[u8]>::len).unwrap(), 3);
        })
        .join()
        .unwrap();
        let written = rx
            .recv()
            .unwrap()
            .expect("serializing in a thread-local's destructor");
        assert_eq!(written, b"[1,2]");
    }
}
