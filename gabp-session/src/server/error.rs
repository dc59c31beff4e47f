//! [`ToolError`]: what a tool handler answers when it fails (SPEC/1.0 gabp.md §8, registry.md §3).

use std::fmt;

use gabp_types::{ErrorCode, ErrorObject};
use serde_json::{json, Map, Value};

/// The error a tool handler returns. It becomes the response's error object: code `-32402` (Tool Execution
/// Failed) unless the tool picks its own with [`ToolError::with_code`].
///
/// Any `std::error::Error` converts into it with `?`, taking the error's message.
///
/// ```
/// use gabp_session::server::ToolError;
/// use gabp_types::ErrorCode;
///
/// fn parse(n: &str) -> Result<u8, ToolError> {
///     Ok(n.parse::<u8>()?) // a ParseIntError becomes a -32402 ToolError
/// }
/// assert_eq!(parse("300").unwrap_err().code(), ErrorCode::TOOL_EXECUTION_FAILED);
///
/// let busy = ToolError::new("the world is loading")
///     .with_code(ErrorCode::TOOL_UNAVAILABLE)
///     .retryable(true);
/// assert_eq!(busy.to_error_object().retryable(), Some(true));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    error: ErrorObject,
}

impl ToolError {
    /// A `-32402` error with `message`.
    #[must_use]
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
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

    pub(crate) fn into_error_object(self) -> ErrorObject {
        self.error
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for ToolError {
    fn from(e: E) -> Self {
        ToolError::new(e.to_string())
    }
}

impl From<ToolError> for ErrorObject {
    fn from(e: ToolError) -> Self {
        e.error
    }
}
