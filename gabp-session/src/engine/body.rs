//! Message bodies of exactly their size (SPEC/1.0 transport.md: one JSON message per frame), and the answers
//! the engine writes itself: a panicked handler's, and one standing in for an answer over the size limit.

use bytes::Bytes;
use gabp_types::encode::Envelope;
use gabp_types::{ErrorCode, ErrorObject, Message, MessageId, Response};

/// Writes a message as compact JSON into a body of exactly its size.
pub(crate) fn to_body<E: Envelope + ?Sized>(message: &E) -> Result<Bytes, serde_json::Error> {
    gabp_types::encode::with_envelope(message, Bytes::copy_from_slice)
}

pub(super) fn panicked(id: MessageId) -> Response {
    Response::error(
        id,
        ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            "internal error: the request panicked",
        ),
    )
}

/// Serializes an answer; one over the size limit is replaced by a `-32603` error with the same id.
pub(super) fn encode(response: Response, max: usize) -> Bytes {
    let id = response.id;
    let body = to_body(&Message::Response(response)).unwrap_or_default();
    if body.len() <= max {
        return body;
    }
    tracing::warn!(len = body.len(), max, "an answer exceeds maxMessageSize");
    let error = ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        format!(
            "the answer of {} bytes exceeds the maximum message size of {max} bytes",
            body.len()
        ),
    )
    .with_data(serde_json::json!({ "maxMessageSize": max }));
    to_body(&Message::Response(Response::error(id, error))).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bodies_are_exact() {
        let response = Response::success(MessageId::new_v4(), json!({"a": [1, 2, 3]}));
        let body = to_body(&response).unwrap();
        assert_eq!(body, serde_json::to_vec(&response).unwrap());
    }
}
