//! A response's `result` as a caller receives it (SPEC/1.0 gabp.md §3.3).

use std::ops::Range;

use bytes::Bytes;
use gabp_types::decode::{decode, result_reads, success_result, DecodeError, DecodeMode};
use gabp_types::{ErrorObject, Message, Outcome};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The `result` of a success: where it lies in the frame's body (a plain response, read without a tree of
/// values), or the value the general decoder read.
#[derive(Debug, Clone)]
pub(crate) enum CallResult {
    /// The JSON text of the result: `body[range]`, known to read as a JSON value.
    Text { body: Bytes, range: Range<usize> },
    /// The result of a success written as gabp-rs writes it, `body[range]`, not read yet: decoding it into a
    /// type reads it whole; [`CallResult::read`] checks it.
    Unread { body: Bytes, range: Range<usize> },
    /// The result read by the general decoder.
    Value(Value),
}

/// A response that carries no result.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The peer answered with an error.
    Error(ErrorObject),
    /// A frame with the call's id that is not a valid response: why.
    Invalid(String),
}

impl CallResult {
    /// The result read as `T`, straight from its text when there is one. An unread text is read here: its UTF-8
    /// whole, its JSON as far as `T` reads it (the syntax of what `T` skips too, not what only a JSON value
    /// refuses there: a number beyond `f64`, a lone surrogate escape, nesting deeper than 128, serde_json's
    /// private marker names).
    pub(crate) fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match self {
            CallResult::Text { body, range } => serde_json::from_slice(text(body, range)),
            CallResult::Unread { body, range } => std::str::from_utf8(text(body, range))
                .map_err(serde::de::Error::custom)
                .and_then(serde_json::from_str),
            CallResult::Value(value) => T::deserialize(value),
        }
    }

    /// Whether the result's text has not been read yet.
    pub(crate) fn is_unread(&self) -> bool {
        matches!(self, CallResult::Unread { .. })
    }

    /// The result, read whole: an unread text that does not read as a JSON value makes the whole body read as
    /// the general decoder reads it, which says what the call settles for.
    pub(crate) fn read(self) -> Result<CallResult, Failure> {
        match self {
            CallResult::Unread { body, range } if result_reads(text(&body, &range)) => {
                Ok(CallResult::Text { body, range })
            }
            CallResult::Unread { body, .. } => settle(body),
            read => Ok(read),
        }
    }

    /// The result as a JSON value. An unread text is read once, straight into the value: a value reads what
    /// the check in [`CallResult::read`] passes, and what it reads beyond that (nesting past 64 levels,
    /// serde_json's marker names) the general decoder reads the same way; only text a value does not read
    /// goes that longer way.
    pub(crate) fn into_value(self) -> Value {
        if self.is_unread() {
            if let Ok(value) = self.decode::<Value>() {
                return value;
            }
        }
        match self.read() {
            Ok(CallResult::Value(value)) => value,
            // Read whole above, so it reads; should it not, the caller sees `null` rather than a panic.
            Ok(read) => read.decode().unwrap_or_else(|e| {
                tracing::warn!(error = %e, "a result the decoder accepted does not read");
                Value::Null
            }),
            Err(failure) => {
                tracing::warn!(?failure, "a result taken as a value does not read");
                Value::Null
            }
        }
    }
}

/// A response's outcome as its caller receives it.
pub(crate) fn answer(outcome: Outcome) -> Result<CallResult, Failure> {
    match outcome {
        Outcome::Result(value) => Ok(CallResult::Value(value.into_value())),
        Outcome::Error(error) => Err(Failure::Error(error)),
    }
}

/// What a response `body` (one carrying a waiting call's id) settles, read by the general decoder: its result,
/// the peer's error, or why it is not a valid response.
fn settle(body: Bytes) -> Result<CallResult, Failure> {
    if let Some((_, range)) = success_result(&body) {
        return Ok(CallResult::Text { body, range });
    }
    match decode(&body, DecodeMode::Lenient) {
        Ok(Message::Response(response)) => answer(response.outcome),
        Ok(message) => Err(Failure::Invalid(format!(
            "a {} where a response was expected",
            message.kind().as_str()
        ))),
        Err(error) => invalid(&error),
    }
}

/// A frame with a waiting call's id that the decoder refused, even reading liberally (SPEC/1.0 gabp.md §3.5): it
/// fails the call with the decoder's reason.
pub(crate) fn invalid(error: &DecodeError) -> Result<CallResult, Failure> {
    Err(Failure::Invalid(error.to_string()))
}

fn text<'a>(body: &'a Bytes, range: &Range<usize>) -> &'a [u8] {
    body.get(range.clone()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[test]
    fn text_and_value_read_alike() {
        let body = Bytes::from_static(br#"{"result":{"value":"x","n":[1,2]}}"#);
        let text = CallResult::Text {
            body: body.clone(),
            range: 10..body.len() - 1,
        };
        let value = CallResult::Value(json!({"value": "x", "n": [1, 2]}));
        #[derive(Deserialize, PartialEq, Debug)]
        struct R {
            value: String,
            n: Vec<u8>,
        }
        assert_eq!(text.decode::<R>().unwrap(), value.decode::<R>().unwrap());
        assert_eq!(text.into_value(), value.into_value());
    }

    const ID: &str = "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11";

    fn unread(body: String) -> CallResult {
        let body = Bytes::from(body);
        let (_, range) =
            gabp_types::decode::written_success(&body).expect("written as gabp-rs writes");
        CallResult::Unread { body, range }
    }

    #[test]
    fn null_result_beside_error_is_read_as_the_error() {
        let libgab = format!(
            r#"{{"v":"gabp/1","id":"{ID}","type":"response","result":null,"error":{{"code":-32000,"message":"x"}}}}"#
        );
        let read = settle(Bytes::from(libgab.clone()));
        assert!(matches!(read, Err(Failure::Error(e)) if e.code.0 == -32000));
        assert!(matches!(unread(libgab).read(), Err(Failure::Error(e)) if e.code.0 == -32000));
        let both = format!(
            r#"{{"v":"gabp/1","id":"{ID}","type":"response","result":1,"error":{{"code":-32000,"message":"x"}}}}"#
        );
        assert!(matches!(unread(both).read(), Err(Failure::Invalid(_))));
    }

    /// An unread result is read whole by whoever reads it: a typed decode, or `read`, which falls back on the
    /// general decoder for what the plain check refuses.
    #[test]
    fn an_unread_result_is_checked_when_read() {
        let plain = |result: &str| {
            format!(r#"{{"v":"gabp/1","id":"{ID}","type":"response","result":{result}}}"#)
        };
        let ok = unread(plain(r#"{"n":1}"#));
        assert_eq!(ok.decode::<Value>().unwrap(), json!({"n": 1}));
        assert_eq!(ok.clone().into_value(), json!({"n": 1}));
        assert!(matches!(ok.read(), Ok(CallResult::Text { .. })));
        // Not JSON: a typed decode fails, and reading it whole says why.
        let broken = unread(plain(r#"{"n":}"#));
        assert!(broken.decode::<Value>().is_err());
        assert_eq!(broken.clone().into_value(), Value::Null);
        assert!(matches!(broken.read(), Err(Failure::Invalid(_))));
        // Not UTF-8.
        let mut bytes = plain(r#""ab""#).into_bytes();
        let at = bytes.len() - 3;
        bytes[at] = 0xff;
        let body = Bytes::from(bytes);
        let (_, range) = gabp_types::decode::written_success(&body).unwrap();
        let latin = CallResult::Unread { body, range };
        assert!(latin.decode::<String>().is_err());
        assert!(matches!(latin.read(), Err(Failure::Invalid(_))));
        // A member after `result` the general decoder reads: a result, as that decoder read it.
        let extra = unread(plain(r#"{"n":1},"x":2"#));
        assert!(extra.decode::<Value>().is_err());
        assert_eq!(extra.clone().into_value(), json!({"n": 1}));
        assert!(matches!(extra.read(), Ok(CallResult::Value(v)) if v == json!({"n": 1})));
        // Deeper than the plain check reads, valid all the same, and the same value either way.
        let deep = format!("{}1{}", "[".repeat(80), "]".repeat(80));
        let Ok(CallResult::Value(general)) = unread(plain(&deep)).read() else {
            panic!("the general decoder reads 80 levels");
        };
        assert_eq!(unread(plain(&deep)).into_value(), general);
        // serde_json's raw value marker: read as the JSON in the string, by either way.
        let marked = plain(r#"[{"$serde_json::private::RawValue":"[1,2]"}]"#);
        let Ok(CallResult::Value(general)) = settle(Bytes::from(marked.clone())) else {
            panic!("the general decoder reads the marker");
        };
        assert_eq!(unread(marked).into_value(), general);
    }

    #[test]
    fn a_range_outside_the_body_reads_as_null_not_a_panic() {
        let body = Bytes::from_static(b"{}");
        let result = CallResult::Text { body, range: 5..9 };
        assert!(result.decode::<Value>().is_err());
        assert_eq!(result.into_value(), Value::Null);
    }
}
