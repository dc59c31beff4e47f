//! [`CodecError`]: the one error of this crate, for reading frames and messages and for writing them.

use std::{fmt, io};

use bytes::Bytes;
use gabp_types::decode::DecodeError;
use gabp_types::{ErrorCode, ErrorObject, MessageId, Response};
use serde_json::json;

/// Why a `Content-Length` value was refused. Part of [`CodecError::InvalidContentLength`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum InvalidLength {
    /// The value is empty (or only whitespace).
    Empty,
    /// The value carries a sign (`-5`, `+5`); lengths are unsigned decimal numbers.
    Signed,
    /// The value is not a decimal number (`0x10`, `1e3`, `5 5`, ...).
    NonNumeric,
    /// The value does not fit in 64 bits.
    Overflow,
}

impl fmt::Display for InvalidLength {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InvalidLength::Empty => "the value is empty",
            InvalidLength::Signed => "the value is signed",
            InvalidLength::NonNumeric => "the value is not a decimal number",
            InvalidLength::Overflow => "the value does not fit in 64 bits",
        })
    }
}

/// Why a header line was refused. Part of [`CodecError::MalformedHeader`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MalformedHeader {
    /// A header line ends in a bare `\n` instead of `\r\n`.
    BareLineFeed,
    /// A header line has no `:` separating name and value.
    MissingColon,
    /// A header name is empty or contains whitespace or control characters.
    InvalidName,
}

impl fmt::Display for MalformedHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MalformedHeader::BareLineFeed => "a header line ends in a bare LF instead of CRLF",
            MalformedHeader::MissingColon => "a header line has no `:`",
            MalformedHeader::InvalidName => {
                "a header name is empty or contains whitespace or control characters"
            }
        })
    }
}

/// Errors of [`FrameCodec`](crate::FrameCodec) and [`MessageCodec`](crate::MessageCodec).
///
/// Three kinds, by where they appear:
///
/// - **Fatal for the stream**: the decoders' own errors, from the header variants
///   ([`CodecError::MissingContentLength`] to [`CodecError::MalformedHeader`]), the truncated ones and
///   [`CodecError::Io`]. After one, the position of the next frame is unknown and the connection must be closed
///   (GABP: after a best-effort `-32700` answer to a header error, and no answer when the stream ended inside a
///   frame, see [`CodecError::is_truncated`]).
/// - **Per frame**: [`CodecError::Oversized`] and [`CodecError::Invalid`], in the `Err` of an item of
///   [`MessageCodec`](crate::MessageCodec). The stream goes on; the error carries the answer the receiver
///   owes: [`CodecError::code`], [`CodecError::id`] (the message's id when it could be read as a UUID, else
///   the nil id), [`CodecError::to_error_object`], and [`CodecError::to_response`] builds it.
/// - **Encoding**: [`CodecError::BodyTooLarge`], [`CodecError::Serialize`] and [`CodecError::Io`]. Nothing
///   was written, so the stream stays usable.
///
/// | frame | code | id |
/// |---|---|---|
/// | body not UTF-8, not JSON, or empty | -32700 | nil |
/// | JSON, but not a valid envelope | -32600, -32202, -32203 | the message's, else nil |
/// | `v` is not `gabp/1` | -32200 | the message's, else nil |
/// | unknown `type` | -32201 | the message's, else nil |
/// | params invalid for the method | -32602 | the message's |
/// | body over the size limit | -32600, `data.maxMessageSize` | nil |
///
/// # Example
///
/// ```
/// use gabp_codec::{CodecError, MessageCodec};
/// use gabp_types::ErrorCode;
/// use tokio_util::codec::Decoder;
///
/// let mut codec = MessageCodec::new().with_max_body_size(16);
/// let mut buf = bytes::BytesMut::from(
///     &b"Content-Length: 3\r\n\r\n{]]Content-Length: 20\r\n\r\n{\"pad\":\"0123456789\"}"[..],
/// );
///
/// let Some(Err(not_json)) = codec.decode(&mut buf)? else { panic!("a per-frame error") };
/// assert_eq!(not_json.code(), ErrorCode::PARSE_ERROR);
/// assert!(not_json.id().is_nil());
///
/// let Some(Err(too_big)) = codec.decode(&mut buf)? else { panic!("a per-frame error") };
/// assert!(matches!(too_big, CodecError::Oversized { declared: 20, limit: 16 }));
/// let answer = too_big.to_error_object();
/// assert_eq!(answer.code, ErrorCode::INVALID_REQUEST);
/// assert_eq!(answer.data.unwrap()["maxMessageSize"], 16);
/// # Ok::<(), CodecError>(())
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The header block ended without a `Content-Length` header.
    #[error("header block has no Content-Length header")]
    MissingContentLength,
    /// A `Content-Length` value is empty, signed, non-numeric, or overflows 64 bits.
    #[error("invalid Content-Length: {reason}")]
    InvalidContentLength {
        /// What is wrong with the value.
        reason: InvalidLength,
    },
    /// Two `Content-Length` headers in one header block announce different lengths. (Repeating the
    /// same length is accepted.)
    #[error("conflicting Content-Length headers: {first} and {second}")]
    ConflictingContentLength {
        /// The length of the first `Content-Length` header.
        first: u64,
        /// The length of the later, different `Content-Length` header.
        second: u64,
    },
    /// The header block, including the blank line that ends it, is longer than the limit.
    #[error("header block exceeds {limit} bytes")]
    HeaderTooLarge {
        /// The header block limit of the codec.
        limit: usize,
    },
    /// A header line is not `Name: value\r\n`.
    #[error("malformed header: {reason}")]
    MalformedHeader {
        /// What is wrong with the line.
        reason: MalformedHeader,
    },
    /// The stream ended inside a header block.
    #[error("stream ended inside a frame header ({buffered} bytes buffered)")]
    TruncatedHeader {
        /// How many bytes of the incomplete header block had arrived.
        buffered: usize,
    },
    /// The stream ended inside a body (possibly an oversized one being skipped).
    #[error("stream ended inside a frame body ({received} of {expected} bytes received)")]
    TruncatedBody {
        /// The announced body length.
        expected: u64,
        /// How many body bytes had arrived.
        received: u64,
    },
    /// Per frame: the header announced a body over the limit; the body was skipped, never buffered.
    #[error("message of {declared} bytes exceeds the maximum message size of {limit} bytes")]
    Oversized {
        /// The length the `Content-Length` header announced.
        declared: u64,
        /// The body limit (`maxMessageSize`).
        limit: usize,
    },
    /// Per frame: the body is not a valid message in the codec's
    /// [`DecodeMode`](gabp_types::decode::DecodeMode).
    #[error("invalid message: {error}")]
    Invalid {
        /// Why the body was refused: code, JSON pointer, reason and id.
        error: DecodeError,
        /// The refused body, for logs and diagnostics.
        body: Bytes,
    },
    /// Encoding: the body (or the serialized message) is longer than the limit. Nothing was written.
    #[error("body of {len} bytes exceeds the maximum message size of {limit} bytes")]
    BodyTooLarge {
        /// The length of the refused body.
        len: usize,
        /// The body limit of the codec.
        limit: usize,
    },
    /// Encoding: the message could not be serialized. Nothing was written.
    #[error("cannot serialize message: {0}")]
    Serialize(#[source] serde_json::Error),
    /// Reading or writing the underlying transport failed.
    #[error("i/o error: {0}")]
    Io(#[from] io::Error),
}

impl CodecError {
    /// Whether the stream ended inside a frame ([`CodecError::TruncatedHeader`],
    /// [`CodecError::TruncatedBody`]). The peer has stopped sending, so there is nothing to answer:
    /// SPEC/1.0 transport.md §7 closes the connection without a reply.
    ///
    /// ```
    /// use gabp_codec::CodecError;
    ///
    /// assert!(CodecError::TruncatedBody { expected: 10, received: 9 }.is_truncated());
    /// assert!(!CodecError::MissingContentLength.is_truncated());
    /// ```
    #[must_use]
    pub fn is_truncated(&self) -> bool {
        matches!(
            self,
            CodecError::TruncatedHeader { .. } | CodecError::TruncatedBody { .. }
        )
    }

    /// The error code the receiver answers with: the table above for a frame, `-32700` for a broken
    /// header (SPEC/1.0 transport.md §7), `-32603` for this side's own encoding or i/o failure.
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        match self {
            CodecError::Oversized { .. } => ErrorCode::INVALID_REQUEST,
            CodecError::Invalid { error, .. } => error.code(),
            CodecError::MissingContentLength
            | CodecError::InvalidContentLength { .. }
            | CodecError::ConflictingContentLength { .. }
            | CodecError::HeaderTooLarge { .. }
            | CodecError::MalformedHeader { .. }
            | CodecError::TruncatedHeader { .. }
            | CodecError::TruncatedBody { .. } => ErrorCode::PARSE_ERROR,
            CodecError::BodyTooLarge { .. } | CodecError::Serialize(_) | CodecError::Io(_) => {
                ErrorCode::INTERNAL_ERROR
            }
        }
    }

    /// The id the answer carries: the message's id when it could be read as a UUID, else the nil id.
    #[must_use]
    pub fn id(&self) -> MessageId {
        match self {
            CodecError::Invalid { error, .. } => error.id().unwrap_or_else(MessageId::nil),
            _ => MessageId::nil(),
        }
    }

    /// The error object to answer with. For an oversized frame: `-32600` with
    /// `data: {"maxMessageSize": limit}`; for an invalid one, the decoder's; otherwise
    /// [`CodecError::code`] and this error's text.
    #[must_use]
    pub fn to_error_object(&self) -> ErrorObject {
        match self {
            CodecError::Oversized { limit, .. } => {
                ErrorObject::new(ErrorCode::INVALID_REQUEST, self.to_string())
                    .with_data(json!({ "maxMessageSize": limit }))
            }
            CodecError::Invalid { error, .. } => error.to_error_object(),
            _ => ErrorObject::new(self.code(), self.to_string()),
        }
    }

    /// The error response to send back: [`CodecError::to_error_object`] under [`CodecError::id`].
    ///
    /// ```
    /// use gabp_codec::CodecError;
    /// use gabp_types::ErrorCode;
    ///
    /// let error = CodecError::Oversized { declared: 2_000_000, limit: 1_048_576 };
    /// let response = error.to_response();
    /// assert!(response.id.is_nil());
    /// assert_eq!(response.error_object().map(|e| e.code), Some(ErrorCode::INVALID_REQUEST));
    /// ```
    #[must_use]
    pub fn to_response(&self) -> Response {
        Response::error(self.id(), self.to_error_object())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_header_and_the_numbers() {
        let error = CodecError::InvalidContentLength {
            reason: InvalidLength::Signed,
        };
        assert_eq!(
            error.to_string(),
            "invalid Content-Length: the value is signed"
        );
        let error = CodecError::ConflictingContentLength {
            first: 3,
            second: 4,
        };
        assert_eq!(
            error.to_string(),
            "conflicting Content-Length headers: 3 and 4"
        );
        assert_eq!(error.code(), ErrorCode::PARSE_ERROR);
        let error = CodecError::BodyTooLarge { len: 9, limit: 8 };
        assert_eq!(
            error.to_string(),
            "body of 9 bytes exceeds the maximum message size of 8 bytes"
        );
        assert_eq!(error.to_response().id, MessageId::nil());
    }
}
