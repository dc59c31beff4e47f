//! Writing a recording: [`Redactor`] turns a frame's body into the JSON of a message record, and
//! [`RecordWriter`] writes the lines (SPEC/1.0 recording.md §2 and §3).

use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::OnceLock;

use memchr::memmem;

use serde_json::Value;

use crate::format::{Direction, Header, Record, HELLO_REDACTED, REDACTED};
use crate::RecordingError;

/// Removes secrets from messages before they are written (SPEC/1.0 recording.md §3): the token members of
/// `session/hello`, every occurrence of a session token in a string, and the user's JSON pointers.
#[derive(Clone, Default)]
pub struct Redactor {
    tokens: Vec<String>,
    /// A searcher per token, built once: every message is searched.
    searchers: Vec<memmem::Finder<'static>>,
    pointers: Vec<String>,
}

/// The searcher for the method whose params are always redacted.
fn hello_searcher() -> &'static memmem::Finder<'static> {
    static HELLO: OnceLock<memmem::Finder<'static>> = OnceLock::new();
    HELLO.get_or_init(|| memmem::Finder::new(b"session/hello"))
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("tokens", &self.tokens.len())
            .field("pointers", &self.pointers)
            .finish()
    }
}

impl Redactor {
    /// Redacts the `tokens` wherever they appear, and the values at `pointers` in every message.
    #[must_use]
    pub fn new(tokens: Vec<String>, pointers: Vec<String>) -> Self {
        let tokens: Vec<String> = tokens.into_iter().filter(|t| !t.is_empty()).collect();
        let searchers = tokens
            .iter()
            .map(|t| memmem::Finder::new(t.as_bytes()).into_owned())
            .collect();
        Redactor {
            tokens,
            searchers,
            pointers,
        }
    }

    /// The user's pointers.
    #[must_use]
    pub fn pointers(&self) -> &[String] {
        &self.pointers
    }

    /// The JSON text to record for a frame's `body`: the body itself when nothing in it needs redacting and it
    /// holds no line break, else the message re-serialized without them.
    ///
    /// # Errors
    ///
    /// [`RecordingError::BodyNotJson`] for a body that is not UTF-8 JSON, [`RecordingError::BodyNotObject`] for
    /// JSON that is not an object.
    pub fn message_json<'a>(&self, body: &'a [u8]) -> Result<Cow<'a, [u8]>, RecordingError> {
        let must_parse = !self.pointers.is_empty()
            || memchr::memchr2(b'\n', b'\r', body).is_some()
            || hello_searcher().find(body).is_some()
            || self.searchers.iter().any(|t| t.find(body).is_some());
        if !must_parse {
            let raw: &serde_json::value::RawValue =
                serde_json::from_slice(body).map_err(RecordingError::BodyNotJson)?;
            if !raw.get().starts_with('{') {
                return Err(RecordingError::BodyNotObject);
            }
            return Ok(Cow::Borrowed(raw.get().as_bytes()));
        }
        let mut value: Value = serde_json::from_slice(body).map_err(RecordingError::BodyNotJson)?;
        if !value.is_object() {
            return Err(RecordingError::BodyNotObject);
        }
        self.redact(&mut value);
        serde_json::to_vec(&value)
            .map(Cow::Owned)
            .map_err(RecordingError::BodyNotJson)
    }

    /// Redacts `message` in place.
    pub fn redact(&self, message: &mut Value) {
        let hello = message.get("method").and_then(Value::as_str) == Some("session/hello")
            && message.get("type").and_then(Value::as_str) == Some("request");
        if hello {
            for pointer in HELLO_REDACTED {
                if let Some(slot) = message.pointer_mut(pointer) {
                    *slot = Value::String(REDACTED.to_owned());
                }
            }
        }
        for pointer in &self.pointers {
            if let Some(slot) = message.pointer_mut(pointer) {
                *slot = Value::String(REDACTED.to_owned());
            }
        }
        if !self.tokens.is_empty() {
            self.scrub(message);
        }
    }

    fn scrub(&self, value: &mut Value) {
        match value {
            Value::String(text) => {
                for token in &self.tokens {
                    if text.contains(token.as_str()) {
                        *text = text.replace(token.as_str(), REDACTED);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub(v)),
            Value::Object(members) => members.values_mut().for_each(|v| self.scrub(v)),
            _ => {}
        }
    }
}

/// Writes the lines of a recording to `W`, each ending in a newline.
#[derive(Debug)]
pub struct RecordWriter<W> {
    out: W,
}

impl<W: Write> RecordWriter<W> {
    /// A writer to `out` (buffer it: every line is one `write_all`).
    pub fn new(out: W) -> Self {
        RecordWriter { out }
    }

    /// Writes the header line.
    ///
    /// # Errors
    ///
    /// A write error.
    pub fn header(&mut self, header: &Header) -> io::Result<()> {
        self.line(header)
    }

    /// Writes a record.
    ///
    /// # Errors
    ///
    /// A write error.
    pub fn record(&mut self, record: &Record) -> io::Result<()> {
        self.line(record)
    }

    /// Writes a message record whose `message` is the JSON text `json` (from [`Redactor::message_json`]).
    ///
    /// # Errors
    ///
    /// A write error.
    pub fn message_json(
        &mut self,
        elapsed_us: u64,
        connection: u64,
        direction: Direction,
        json: &[u8],
    ) -> io::Result<()> {
        write!(
            self.out,
            "{{\"kind\":\"message\",\"elapsedUs\":{elapsed_us},\"connection\":{connection},\"direction\":\"{}\",\"message\":",
            direction.as_str()
        )?;
        self.out.write_all(json)?;
        self.out.write_all(b"}\n")
    }

    /// Flushes the output.
    ///
    /// # Errors
    ///
    /// A write error.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The output.
    pub fn into_inner(self) -> W {
        self.out
    }

    fn line(&mut self, value: &impl serde::Serialize) -> io::Result<()> {
        let mut line = serde_json::to_vec(value).map_err(io::Error::other)?;
        line.push(b'\n');
        self.out.write_all(&line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const TOKEN: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn a_plain_body_is_recorded_as_it_was() {
        let body = br#"{"v":"gabp/1",  "type":"request","id":"x","method":"session/ping"}"#;
        let r = Redactor::new(vec![TOKEN.into()], vec![]);
        assert_eq!(r.message_json(body).unwrap().as_ref(), &body[..]);
    }

    #[test]
    fn hello_tokens_and_pointers_are_redacted() {
        let r = Redactor::new(vec![TOKEN.into()], vec!["/params/secret".into()]);
        let hello = json!({"v": "gabp/1", "type": "request", "id": "x", "method": "session/hello",
            "params": {"token": "other-token-not-known-to-the-redactor", "auth": {"key": 1}}});
        let out: Value =
            serde_json::from_slice(&r.message_json(hello.to_string().as_bytes()).unwrap()).unwrap();
        assert_eq!(out["params"]["token"], REDACTED);
        assert_eq!(out["params"]["auth"], REDACTED);
        let echo = json!({"v": "gabp/1", "type": "response", "id": "x",
            "result": {"text": format!("token={TOKEN}!"), "secret": 5}});
        let echo = serde_json::to_vec(&echo).unwrap();
        let out: Value = serde_json::from_slice(&r.message_json(&echo).unwrap()).unwrap();
        assert_eq!(out["result"]["text"], format!("token={REDACTED}!"));
        assert_eq!(out["result"]["secret"], 5, "the pointer is /params/secret");
        let params = br#"{"params":{"secret":"s"}}"#;
        let out: Value = serde_json::from_slice(&r.message_json(params).unwrap()).unwrap();
        assert_eq!(out["params"]["secret"], REDACTED);
    }

    #[test]
    fn line_breaks_never_reach_the_file() {
        let r = Redactor::default();
        let out = r.message_json(b"{\n\"v\": \"gabp/1\"\r\n}").unwrap();
        assert!(!out.contains(&b'\n') && !out.contains(&b'\r'));
    }

    #[test]
    fn what_is_not_a_message() {
        let r = Redactor::default();
        let refused = |body: &[u8]| r.message_json(body).unwrap_err();
        for body in [&b"[1]"[..], b"[1]\n"] {
            let error = refused(body);
            assert!(matches!(error, RecordingError::BodyNotObject), "{error:?}");
            assert_eq!(error.to_string(), "not a JSON object");
        }
        for body in [&b"nope"[..], b"\xff", b"{\"v\":", b"nope\n"] {
            let error = refused(body);
            assert!(matches!(error, RecordingError::BodyNotJson(_)), "{error:?}");
            assert!(error.to_string().starts_with("not JSON: "), "{error}");
        }
    }

    #[test]
    fn message_lines_read_back_as_records() {
        let mut w = RecordWriter::new(Vec::new());
        w.message_json(7, 1, Direction::BridgeToMod, br#"{"v":"gabp/1"}"#)
            .unwrap();
        let line = w.into_inner();
        let record: Record = serde_json::from_slice(&line).unwrap();
        assert_eq!(record.elapsed_us(), 7);
        assert_eq!(record.connection(), 1);
    }
}
