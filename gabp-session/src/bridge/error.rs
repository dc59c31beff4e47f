//! [`BridgeError`]: every way a bridge call can fail, typed.

use std::error::Error as StdError;
use std::time::Duration;

use gabp_transport::TransportError;
use gabp_types::{ErrorCode, ErrorObject};
use serde_json::Value;

/// Lib.GAB's code for a failed authentication (ours is -32101).
pub const LIBGAB_AUTHENTICATION_FAILED: ErrorCode = ErrorCode(-31000);
/// Lib.GAB's code for a request before the session is established (ours is -32100).
pub const LIBGAB_NOT_ESTABLISHED: ErrorCode = ErrorCode(-31001);
/// Lib.GAB's code for an unknown tool (ours is -32400).
pub const LIBGAB_TOOL_NOT_FOUND: ErrorCode = ErrorCode(-31002);

/// Why a bridge call (or connecting) failed.
///
/// Errors the mod answered with are mapped to typed variants by code, ours and Lib.GAB's alike
/// (-31000, -31001 and -31002 read as -32101, -32100 and -32400); every such variant keeps the whole
/// [`ErrorObject`] (message, `data`, `retryable`). Errors raised on this side say so in their
/// documentation: a local [`BridgeError::Timeout`] is not the mod's [`BridgeError::ToolTimeout`], and
/// [`BridgeError::NotAdvertised`] and [`BridgeError::Rejected`] never sent anything.
///
/// No variant ever contains the session token.
///
/// ```
/// use gabp_session::bridge::BridgeError;
/// use gabp_types::{ErrorCode, ErrorObject};
///
/// let libgab = BridgeError::from_remote(ErrorObject::new(-31000, "Invalid token"), "session/hello", None);
/// assert!(matches!(libgab, BridgeError::AuthenticationFailed { .. }));
/// assert_eq!(libgab.code(), Some(ErrorCode(-31000)));
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
    /// The mod refused the token (-32101, or Lib.GAB's -31000). The mod closes the connection.
    #[error("the mod refused the token: {error}")]
    AuthenticationFailed {
        /// The mod's error.
        error: ErrorObject,
    },
    /// The mod says the session is not established (-32100, or Lib.GAB's -31001).
    #[error("not authenticated: {error}")]
    NotAuthenticated {
        /// The mod's error.
        error: ErrorObject,
    },
    /// The mod does not know the method (-32601).
    #[error("method {method} not found: {error}")]
    MethodNotFound {
        /// The method that was called.
        method: String,
        /// The mod's error.
        error: ErrorObject,
    },
    /// The params, or a tool's arguments, failed their schema (-32602).
    #[error("invalid params: {error}")]
    InvalidParams {
        /// Each failure the mod listed in `data.errors` (empty if it listed none).
        errors: Vec<ParamError>,
        /// The mod's error.
        error: ErrorObject,
    },
    /// The mod does not know the tool (-32400, or Lib.GAB's -31002).
    #[error("tool {tool} not found: {error}")]
    ToolNotFound {
        /// The tool that was called.
        tool: String,
        /// The mod's error.
        error: ErrorObject,
    },
    /// The tool exists but is unavailable, for example blocked by attention (-32401).
    #[error("tool {tool} unavailable: {error}")]
    ToolUnavailable {
        /// The tool that was called.
        tool: String,
        /// The mod's error.
        error: ErrorObject,
    },
    /// The tool ran and returned an error (-32402).
    #[error("tool {tool} failed: {error}")]
    ToolFailed {
        /// The tool that was called.
        tool: String,
        /// The mod's error.
        error: ErrorObject,
    },
    /// The tool exceeded the mod's time limit (-32403). Compare [`BridgeError::Timeout`].
    #[error("tool {tool} timed out in the mod: {error}")]
    ToolTimeout {
        /// The tool that was called.
        tool: String,
        /// The mod's error.
        error: ErrorObject,
    },
    /// The mod does not know the resource (-32300).
    #[error("resource not found: {error}")]
    ResourceNotFound {
        /// The mod's error.
        error: ErrorObject,
    },
    /// Any other error the mod answered with, a tool's own code included.
    #[error("{method} failed: {error}")]
    Remote {
        /// The method that was called.
        method: String,
        /// The mod's error.
        error: ErrorObject,
    },
    /// No response arrived within the call's time limit (local). The request may still run in the mod;
    /// its late response is discarded.
    #[error("no response to {method} within {after:?}")]
    Timeout {
        /// The method that was called.
        method: String,
        /// The time limit.
        after: Duration,
    },
    /// The connection ended before the call was answered, or there is no connection (before the first
    /// handshake completes, while reconnecting, or after it was lost). Every pending call fails with this at once when the connection ends.
    #[error("disconnected from the mod")]
    Disconnected,
    /// The mod broke the framing (SPEC/1.0 transport.md §1.2, §7), so the connection was closed; every call
    /// pending on it fails with this. The fault says at which byte the broken frame starts and shows the
    /// start of the header seen there (a `Content-Length` counted in UTF-16 code units, say, leaves the end
    /// of a body in front of the next header).
    #[error("the mod broke the framing: {fault}")]
    Framing {
        /// Where and how.
        fault: gabp_transport::FrameFault,
    },
    /// The bridge was closed ([`Bridge::close`](crate::bridge::Bridge::close),
    /// [`Bridge::goodbye`](crate::bridge::Bridge::goodbye), or every handle dropped).
    #[error("the bridge is closed")]
    Closed,
    /// The welcome did not advertise the method, so nothing was sent (local; see
    /// [`BridgeBuilder::check_advertised`](crate::bridge::BridgeBuilder::check_advertised)).
    #[error("the mod does not advertise {method}; nothing was sent")]
    NotAdvertised {
        /// The method that was refused.
        method: String,
    },
    /// A layer refused the call before it was sent (local; nothing was sent). The layer's own error is the
    /// source; [`BridgeError::rejection`] downcasts it.
    #[error("refused before sending: {source}")]
    Rejected {
        /// The layer's error.
        #[source]
        source: Box<dyn StdError + Send + Sync>,
    },
    /// The request could not be built: an invalid method or tool name, arguments that are not a JSON
    /// object, params that do not serialize (local; nothing was sent).
    #[error("invalid request: {reason}")]
    InvalidRequest {
        /// What is wrong.
        reason: String,
    },
    /// The request is larger than the connection's message size limit (local; nothing was sent).
    #[error("request of {len} bytes exceeds the maximum message size of {limit} bytes")]
    TooLarge {
        /// The serialized length.
        len: usize,
        /// The limit (the smaller of ours and the mod's `maxMessageSize`).
        limit: usize,
    },
    /// The mod answered with something this side cannot use.
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// The connection could not be established.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// No attempt to reach the mod succeeded before the deadline of
    /// [`ConnectRetry`](crate::bridge::ConnectRetry) (local).
    #[error(
        "no mod reachable at {endpoint} within {waited:.1?} ({attempts} attempts); last: {last}"
    )]
    Unreachable {
        /// What was being reached: the endpoint, as text.
        endpoint: String,
        /// How many attempts were made.
        attempts: u32,
        /// How long they took in all.
        waited: Duration,
        /// The error of the last attempt.
        #[source]
        last: Box<BridgeError>,
    },
    /// `bridge.json` could not be found or read ([`Bridge::discover`](crate::bridge::Bridge::discover)).
    #[error(transparent)]
    Config(TransportError),
}

/// One failure listed in the `data.errors` of an invalid-params error (-32602).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParamError {
    /// JSON pointer of the failing value (`/arguments/x`), or empty.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// The mod answered with something this side cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A frame carrying a pending call's id is not a valid response.
    #[error("invalid response to {method}: {reason}")]
    InvalidResponse {
        /// The method that was called.
        method: String,
        /// What is wrong.
        reason: String,
    },
    /// A success result does not have the shape of the method's result type.
    #[error("invalid result of {method}: {reason}")]
    InvalidResult {
        /// The method that was called.
        method: String,
        /// What is wrong.
        reason: String,
    },
    /// The welcome is not a valid welcome, even read liberally.
    #[error("invalid welcome: {reason}")]
    InvalidWelcome {
        /// What is wrong.
        reason: String,
    },
}

impl BridgeError {
    /// Maps an error the mod answered to `method` (and, for `tools/call`, `tool`) to its typed variant.
    pub fn from_remote(error: ErrorObject, method: &str, tool: Option<&str>) -> BridgeError {
        let tool = || tool.unwrap_or_default().to_owned();
        match error.code {
            ErrorCode::AUTHENTICATION_FAILED | LIBGAB_AUTHENTICATION_FAILED => {
                BridgeError::AuthenticationFailed { error }
            }
            ErrorCode::AUTHENTICATION_REQUIRED | LIBGAB_NOT_ESTABLISHED => {
                BridgeError::NotAuthenticated { error }
            }
            ErrorCode::METHOD_NOT_FOUND => BridgeError::MethodNotFound {
                method: method.to_owned(),
                error,
            },
            ErrorCode::INVALID_PARAMS => BridgeError::InvalidParams {
                errors: param_errors(error.data.as_ref()),
                error,
            },
            ErrorCode::TOOL_NOT_FOUND | LIBGAB_TOOL_NOT_FOUND => BridgeError::ToolNotFound {
                tool: tool(),
                error,
            },
            ErrorCode::TOOL_UNAVAILABLE => BridgeError::ToolUnavailable {
                tool: tool(),
                error,
            },
            ErrorCode::TOOL_EXECUTION_FAILED => BridgeError::ToolFailed {
                tool: tool(),
                error,
            },
            ErrorCode::TOOL_TIMEOUT => BridgeError::ToolTimeout {
                tool: tool(),
                error,
            },
            ErrorCode::RESOURCE_NOT_FOUND => BridgeError::ResourceNotFound { error },
            _ => BridgeError::Remote {
                method: method.to_owned(),
                error,
            },
        }
    }

    /// A layer's refusal: the call was not sent. See [`BridgeError::rejection`].
    pub fn rejected(source: impl Into<Box<dyn StdError + Send + Sync>>) -> BridgeError {
        BridgeError::Rejected {
            source: source.into(),
        }
    }

    /// The layer's error of a [`BridgeError::Rejected`], if it is an `E`.
    ///
    /// ```
    /// use gabp_session::bridge::BridgeError;
    ///
    /// #[derive(Debug, thiserror::Error)]
    /// #[error("blocked")]
    /// struct Blocked;
    ///
    /// let e = BridgeError::rejected(Blocked);
    /// assert!(e.rejection::<Blocked>().is_some());
    /// ```
    pub fn rejection<E: StdError + 'static>(&self) -> Option<&E> {
        match self {
            BridgeError::Rejected { source } => source.downcast_ref::<E>(),
            _ => None,
        }
    }

    /// The error object the mod answered with, for the variants that carry one.
    pub fn error_object(&self) -> Option<&ErrorObject> {
        match self {
            BridgeError::AuthenticationFailed { error }
            | BridgeError::NotAuthenticated { error }
            | BridgeError::MethodNotFound { error, .. }
            | BridgeError::InvalidParams { error, .. }
            | BridgeError::ToolNotFound { error, .. }
            | BridgeError::ToolUnavailable { error, .. }
            | BridgeError::ToolFailed { error, .. }
            | BridgeError::ToolTimeout { error, .. }
            | BridgeError::ResourceNotFound { error }
            | BridgeError::Remote { error, .. } => Some(error),
            _ => None,
        }
    }

    /// The code the mod answered with, as sent (Lib.GAB's codes stay as they are).
    pub fn code(&self) -> Option<ErrorCode> {
        self.error_object().map(|e| e.code)
    }

    /// Whether the mod answered this call with an error (as opposed to a local or connection failure).
    pub fn is_remote(&self) -> bool {
        self.error_object().is_some()
    }

    /// Whether the failure says nothing about the request itself and a retry may succeed: the mod's
    /// `data.retryable` when it says, else `true` for [`BridgeError::Timeout`],
    /// [`BridgeError::Disconnected`], [`BridgeError::ToolTimeout`] and [`BridgeError::Unreachable`].
    pub fn is_retryable(&self) -> bool {
        if let Some(flag) = self.error_object().and_then(ErrorObject::retryable) {
            return flag;
        }
        matches!(
            self,
            BridgeError::Timeout { .. }
                | BridgeError::Disconnected
                | BridgeError::ToolTimeout { .. }
                | BridgeError::Unreachable { .. }
        )
    }

    pub(crate) fn invalid_request(reason: impl Into<String>) -> BridgeError {
        BridgeError::InvalidRequest {
            reason: reason.into(),
        }
    }
}

/// Reads `data.errors` (`[{path, message}]`) leniently: items that are not objects are skipped, missing
/// fields read as empty.
fn param_errors(data: Option<&Value>) -> Vec<ParamError> {
    let Some(items) = data.and_then(|d| d.get("errors")).and_then(Value::as_array) else {
        return Vec::new();
    };
    items
        .iter()
        .filter_map(Value::as_object)
        .map(|item| {
            let text = |key: &str| match item.get(key) {
                Some(Value::String(s)) => s.clone(),
                Some(other) if !other.is_null() => other.to_string(),
                _ => String::new(),
            };
            ParamError {
                path: text("path"),
                message: text("message"),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ours_and_libgab_codes_map_to_the_same_variants() {
        let pairs = [(-32101, -31000), (-32100, -31001), (-32400, -31002)];
        for (ours, theirs) in pairs {
            let a =
                BridgeError::from_remote(ErrorObject::new(ours, "x"), "tools/call", Some("a/b"));
            let b =
                BridgeError::from_remote(ErrorObject::new(theirs, "x"), "tools/call", Some("a/b"));
            assert_eq!(
                std::mem::discriminant(&a),
                std::mem::discriminant(&b),
                "{ours} vs {theirs}"
            );
            assert_eq!(b.code(), Some(ErrorCode(theirs)));
        }
    }

    #[test]
    fn invalid_params_lists_errors() {
        let error = ErrorObject::new(-32602, "bad").with_data(json!({
            "errors": [{"path": "/x", "message": "not an integer"}, 7, {"message": "no path"}]
        }));
        let BridgeError::InvalidParams { errors, .. } =
            BridgeError::from_remote(error, "tools/call", Some("a/b"))
        else {
            panic!("not InvalidParams")
        };
        assert_eq!(errors.len(), 2);
        assert_eq!(errors[0].path, "/x");
        assert_eq!(errors[0].message, "not an integer");
        assert_eq!(errors[1].path, "");
    }

    #[test]
    fn tool_errors_name_the_tool_and_other_codes_stay_remote() {
        let e = BridgeError::from_remote(
            ErrorObject::new(-32403, "slow"),
            "tools/call",
            Some("demo/sleep"),
        );
        assert!(matches!(&e, BridgeError::ToolTimeout { tool, .. } if tool == "demo/sleep"));
        assert!(e.is_retryable());
        let e = BridgeError::from_remote(
            ErrorObject::new(-32050, "custom").with_data(json!({"retryable": false})),
            "x/y",
            None,
        );
        assert!(matches!(&e, BridgeError::Remote { method, .. } if method == "x/y"));
        assert!(!e.is_retryable());
        assert!(e.is_remote());
        assert!(!BridgeError::Disconnected.is_remote());
    }
}
