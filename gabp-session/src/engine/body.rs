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
    match stand_in(response.id, body.len(), max) {
        None => body,
        Some(error) => to_body(&error).unwrap_or_default(),
    }
}

/// Writes an answer straight into `writer`'s buffer, as [`encode`] serializes it, without a body of its own.
/// `Err` is what to queue instead, nothing written: the `-32603` standing in for an answer over the size
/// limit, or the answer itself when the writer refused it.
pub(super) fn write(
    writer: &mut FrameWriter,
    response: Response,
    max: usize,
) -> Result<(), Response> {
    let id = response.id;
    let sent =
        gabp_types::encode::with_envelope(&response, |body| match stand_in(id, body.len(), max) {
            Some(error) => Err(Some(error)),
            None => writer.start_send_slice(body).map_err(|_| None),
        });
    match sent {
        Ok(Ok(())) => Ok(()),
        Ok(Err(Some(error))) => Err(error),
        _ => Err(response),
    }
}

/// The `-32603` error standing in for answer `id` of `len` bytes when that is over the size limit.
fn stand_in(id: MessageId, len: usize, max: usize) -> Option<Response> {
    if len <= max {
        return None;
    }
    tracing::warn!(len, max, "an answer exceeds maxMessageSize");
    let error = ErrorObject::new(
        ErrorCode::INTERNAL_ERROR,
        format!("the answer of {len} bytes exceeds the maximum message size of {max} bytes"),
    )
    .with_data(serde_json::json!({ "maxMessageSize": max }));
    Some(Response::error(id, error))
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

    #[tokio::test]
    async fn an_answer_is_written_as_encoded_and_one_over_the_limit_gives_its_stand_in() {
        use futures::StreamExt;
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (_, mut writer) = gabp_transport::Connection::new(ours).into_split();
        let mut peer = gabp_transport::Connection::new(theirs);
        let fits = Response::success(MessageId::new_v4(), json!({"a": "b"}));
        let max = encode(fits.clone(), usize::MAX).len();
        assert!(write(&mut writer, fits.clone(), max).is_ok());
        let big = Response::success(MessageId::new_v4(), json!({"a": "b".repeat(max)}));
        let Err(stand_in) = write(&mut writer, big.clone(), max) else {
            panic!("an answer over the limit was written")
        };
        assert_eq!(to_body(&stand_in).unwrap(), encode(big, max));
        futures::SinkExt::flush(&mut writer).await.unwrap();
        let frame = peer.next().await.unwrap().unwrap();
        assert_eq!(frame.into_body().unwrap(), encode(fits, max));
        drop(writer);
        assert!(peer.next().await.is_none(), "nothing else was written");
    }
}
