//! A response's `result` as a caller receives it (SPEC/1.0 gabp.md §3.3).

use std::ops::Range;

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The `result` of a success: where it lies in the frame's body (a plain response, read without a tree of
/// values), or the value the general decoder read.
#[derive(Debug, Clone)]
pub(crate) enum CallResult {
    /// The JSON text of the result: `body[range]`.
    Text { body: Bytes, range: Range<usize> },
    /// The result read by the general decoder.
    Value(Value),
}

impl CallResult {
    /// The result read as `T`, straight from its text when there is one.
    pub(crate) fn decode<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match self {
            CallResult::Text { body, range } => serde_json::from_slice(text(body, range)),
            CallResult::Value(value) => T::deserialize(value),
        }
    }

    /// The result as a JSON value.
    pub(crate) fn into_value(self) -> Value {
        match self {
            CallResult::Value(value) => value,
            // The decoder found valid, shallow JSON in this range (`success_result`), so it reads; should it
            // not, the caller sees `null` rather than a panic.
            CallResult::Text { body, range } => serde_json::from_slice(text(&body, &range))
                .unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "a result the decoder accepted does not read");
                    Value::Null
                }),
        }
    }
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

    #[test]
    fn a_range_outside_the_body_reads_as_null_not_a_panic() {
        let body = Bytes::from_static(b"{}");
        let result = CallResult::Text { body, range: 5..9 };
        assert!(result.decode::<Value>().is_err());
        assert_eq!(result.into_value(), Value::Null);
    }
}
