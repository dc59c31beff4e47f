//! Message bodies serialized through one reused buffer per thread, so that a body costs exactly one
//! allocation of its own size (SPEC/1.0 transport.md: one JSON message per frame), and the answers the engine
//! writes itself: a panicked handler's, and one standing in for an answer over the size limit.

use std::cell::RefCell;

use bytes::Bytes;
use gabp_types::{ErrorCode, ErrorObject, Message, MessageId, Response};
use serde::Serialize;

/// A scratch buffer that grew past this is given back after use, so no thread keeps a large one.
const KEEP: usize = 64 * 1024;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Serializes `value` as compact JSON into a body of exactly its size.
pub(crate) fn to_body<T: Serialize + ?Sized>(value: &T) -> Result<Bytes, serde_json::Error> {
    SCRATCH.with(|scratch| match scratch.try_borrow_mut() {
        Ok(mut buf) => {
            buf.clear();
            let written =
                serde_json::to_writer(&mut *buf, value).map(|()| Bytes::copy_from_slice(&buf));
            if buf.capacity() > KEEP {
                *buf = Vec::new();
            }
            written
        }
        // Only reentrant serialization (a `Serialize` impl that sends a message) lands here.
        Err(_) => serde_json::to_vec(value).map(Bytes::from),
    })
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
    fn bodies_are_exact_and_the_scratch_stays_small() {
        let body = to_body(&json!({"a": [1, 2, 3]})).unwrap();
        assert_eq!(&body[..], br#"{"a":[1,2,3]}"#);
        let big = "x".repeat(KEEP * 2);
        assert_eq!(to_body(&big).unwrap().len(), big.len() + 2);
        SCRATCH.with(|s| assert!(s.borrow().capacity() <= KEEP));
    }
}
