//! [`DecodeError`]: why a message body was refused, and the error object that answers it.

use std::fmt;

use serde_json::{Map, Value};

use crate::{ErrorCode, ErrorObject, MessageId, MessageKind};

/// Why a message body was refused.
///
/// Boxed inside, so `Result<Message, DecodeError>` stays small on the hot path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct DecodeError(Box<DecodeErrorInner>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct DecodeErrorInner {
    code: ErrorCode,
    pointer: String,
    reason: String,
    id: Option<MessageId>,
    kind: Option<MessageKind>,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.pointer.is_empty() {
            write!(f, "{} [{}]", self.0.reason, self.0.code.0)
        } else {
            write!(
                f,
                "{}: {} [{}]",
                self.0.pointer, self.0.reason, self.0.code.0
            )
        }
    }
}

impl DecodeError {
    /// Every code a refusal carries; the decoders refuse a body with no other (SPEC/1.0 gabp.md §8).
    pub const CODES: [ErrorCode; 7] = [
        ErrorCode::PARSE_ERROR,
        ErrorCode::INVALID_REQUEST,
        ErrorCode::INVALID_PARAMS,
        ErrorCode::PROTOCOL_VERSION_MISMATCH,
        ErrorCode::INVALID_MESSAGE_TYPE,
        ErrorCode::MISSING_REQUIRED_FIELD,
        ErrorCode::INVALID_FIELD_VALUE,
    ];

    pub(super) fn new(
        code: ErrorCode,
        pointer: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        DecodeError(Box::new(DecodeErrorInner {
            code,
            pointer: pointer.into(),
            reason: reason.into(),
            id: None,
            kind: None,
        }))
    }

    pub(super) fn with_id(mut self, id: Option<MessageId>) -> Self {
        self.0.id = id;
        self
    }

    pub(super) fn with_kind(mut self, kind: Option<MessageKind>) -> Self {
        self.0.kind = kind;
        self
    }

    /// The code the receiver should answer with (-32700, -32600, -32200, -32201, -32202, -32203, -32602).
    pub fn code(&self) -> ErrorCode {
        self.0.code
    }

    /// JSON pointer (RFC 6901) of the offending value; empty for the whole document.
    pub fn pointer(&self) -> &str {
        &self.0.pointer
    }

    /// What is wrong, in words.
    pub fn reason(&self) -> &str {
        &self.0.reason
    }

    /// The message's `type`, when it names one of the three kinds. A receiver never answers an invalid
    /// response or event (so two peers can never bounce error replies at each other).
    pub fn kind(&self) -> Option<MessageKind> {
        self.0.kind
    }

    /// The message's id, when it could be read as a UUID (an answer then carries it; otherwise the nil id).
    pub fn id(&self) -> Option<MessageId> {
        self.0.id
    }

    /// The error object to answer with: the code, a message naming the pointer and the reason, and
    /// `data: {pointer}`.
    pub fn to_error_object(&self) -> ErrorObject {
        let mut data = Map::new();
        data.insert("pointer".into(), Value::String(self.0.pointer.clone()));
        if self.0.code == ErrorCode::INVALID_PARAMS {
            data.insert(
                "errors".into(),
                serde_json::json!([{ "path": self.0.pointer, "message": self.0.reason }]),
            );
        }
        ErrorObject::new(self.0.code, self.to_string()).with_data(Value::Object(data))
    }
}
