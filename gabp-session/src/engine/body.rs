//! Message bodies of exactly their size (SPEC/1.0 transport.md: one JSON message per frame), and the answers
//! the engine writes itself: a panicked handler's, and one standing in for an answer over the size limit.

use bytes::Bytes;
use gabp_transport::FrameWriter;
use gabp_types::encode::Envelope;
use gabp_types::{ErrorCode, ErrorObject, MessageId, Response};

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
    let body = to_body(&response).unwrap_or_default();
    if body.len() <= max {
        return body;
    }
    to_body(&oversized(response.id, body.len(), max)).unwrap_or_default()
}

/// Writes an answer straight into `writer`'s buffer, as [`encode`] serializes it, without a body of its own.
/// `Err` gives the answer back with nothing written: one over the size limit, or one the writer refused.
pub(super) fn write(
    writer: &mut FrameWriter,
    response: Response,
    max: usize,
) -> Result<(), Response> {
    let sent = gabp_types::encode::with_envelope(&response, |body| {
        body.len() <= max && writer.start_send_slice(body).is_ok()
    });
    match sent {
        Ok(true) => Ok(()),
        _ => Err(response),
    }
}

/// The `-32603` error standing in for an answer of `len` bytes, over the size limit.
fn oversized(id: MessageId, len: usize, max: usize) -> Response {
    tracing::warn!(len, max, "an answer exceeds maxMessageSize");
    let error = ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        format!("the answer of {len} bytes exceeds the maximum message size of {max} bytes"),
    )
    .with_data(serde_json::json!({ "maxMessageSize": max }));
    Response::error(id, error)
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
