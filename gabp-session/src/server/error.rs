//! [`CallError`]: what a handler answers when it fails (SPEC/1.0 gabp.md §8, registry.md §3).

use std::any::Any;
use std::fmt;

use gabp_types::{ErrorCode, ErrorObject};
use serde_json::{json, Map, Value};

/// The error every handler returns (tools, resources, state, custom methods) and every extractor
/// ([`FromContext`](super::FromContext)) fails with. It becomes the response's error object: code `-32402`
/// (Tool Execution Failed) unless the handler picks its own with [`CallError::with_code`].
///
/// Any `std::error::Error` converts into it with `?`, taking the error's message; an [`ErrorObject`] converts
/// whole, code and data included.
///
/// ```
/// use gabp_session::server::CallError;
/// use gabp_types::{ErrorCode, ErrorObject};
///
/// fn parse(n: &str) -> Result<u8, CallError> {
///     Ok(n.parse::<u8>()?) // a ParseIntError becomes a -32402 CallError
/// }
/// assert_eq!(parse("300").unwrap_err().code(), ErrorCode::TOOL_EXECUTION_FAILED);
///
/// let busy = CallError::new("the world is loading")
///     .with_code(ErrorCode::TOOL_UNAVAILABLE)
///     .retryable(true);
/// assert_eq!(busy.to_error_object().retryable(), Some(true));
///
/// let missing = CallError::from(ErrorObject::new(ErrorCode::RESOURCE_NOT_FOUND, "no such chunk"));
/// assert_eq!(missing.code(), ErrorCode::RESOURCE_NOT_FOUND);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct CallError {
    error: ErrorObject,
}

impl CallError {
    /// A `-32402` error with `message`.
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        CallError {
            error: ErrorObject::new(ErrorCode::TOOL_EXECUTION_FAILED, message),
        }
    }

    /// Uses `code` instead of `-32402`.
    #[must_use]
    pub fn with_code(mut self, code: impl Into<ErrorCode>) -> Self {
        self.error.code = code.into();
        self
    }

    /// Attaches `data` (an object is merged with `retryable` when both are set).
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.error.data = Some(data);
        self
    }

    /// Sets `data.retryable`.
    #[must_use]
    pub fn retryable(mut self, retryable: bool) -> Self {
        let data = self
            .error
            .data
            .take()
            .unwrap_or_else(|| Value::Object(Map::new()));
        let data = match data {
            Value::Object(mut map) => {
                map.insert("retryable".into(), Value::Bool(retryable));
                Value::Object(map)
            }
            other => json!({ "retryable": retryable, "detail": other }),
        };
        self.error.data = Some(data);
        self
    }

    /// The error code.
    #[must_use]
    pub fn code(&self) -> ErrorCode {
        self.error.code
    }

    /// The error object sent to the bridge.
    #[must_use]
    pub fn to_error_object(&self) -> ErrorObject {
        self.error.clone()
    }

    /// The error object sent to the bridge.
    #[must_use]
    pub fn into_error_object(self) -> ErrorObject {
        self.error
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for CallError {
    fn from(e: E) -> Self {
        // An error object is taken whole; any other error by its message.
        let mut slot = Some(e);
        if let Some(error) = (&mut slot as &mut dyn Any).downcast_mut::<Option<ErrorObject>>() {
            if let Some(error) = error.take() {
                return CallError { error };
            }
        }
        CallError::new(slot.map(|e| e.to_string()).unwrap_or_default())
    }
}

impl From<CallError> for ErrorObject {
    fn from(e: CallError) -> Self {
        e.error
    }
}
