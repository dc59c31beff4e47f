//! The errors a mod answers with: codes to [`Error`] variants, and what the variants carry.

use gabp_types::{ErrorCode, ErrorObject};
use serde_json::Value;

use super::Error;

/// Lib.GAB's code for a failed authentication (ours is -32101).
pub const LIBGAB_AUTHENTICATION_FAILED: ErrorCode = ErrorCode(-31000);
/// Lib.GAB's code for a request before the session is established (ours is -32100).
pub const LIBGAB_NOT_ESTABLISHED: ErrorCode = ErrorCode(-31001);
/// Lib.GAB's code for an unknown tool (ours is -32400).
pub const LIBGAB_TOOL_NOT_FOUND: ErrorCode = ErrorCode(-31002);

/// One failure listed in the `data.errors` of an invalid-params error (-32602).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParamError {
    /// JSON pointer of the failing value (`/arguments/x`), or empty.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl Error {
    /// Maps an error the mod answered to `method` (and, for `tools/call`, `tool`) to its typed variant. A tool
    /// code answered to another method (`env/step` blocked by attention: -32401) names the method as the tool.
    pub fn from_remote(error: ErrorObject, method: &str, tool: Option<&str>) -> Error {
        let tool = || tool.unwrap_or(method).to_owned();
        match error.code {
            ErrorCode::AUTHENTICATION_FAILED | LIBGAB_AUTHENTICATION_FAILED => {
                Error::AuthenticationFailed { error }
            }
            ErrorCode::AUTHENTICATION_REQUIRED | LIBGAB_NOT_ESTABLISHED => {
                Error::NotAuthenticated { error }
            }
            ErrorCode::METHOD_NOT_FOUND => Error::MethodNotFound {
                method: method.to_owned(),
                error,
            },
            ErrorCode::INVALID_PARAMS => Error::InvalidParams {
                errors: param_errors(error.data.as_ref()),
                error,
            },
            ErrorCode::TOOL_NOT_FOUND | LIBGAB_TOOL_NOT_FOUND => Error::ToolNotFound {
                tool: tool(),
                error,
            },
            ErrorCode::TOOL_UNAVAILABLE => Error::ToolUnavailable {
                tool: tool(),
                error,
            },
            ErrorCode::TOOL_EXECUTION_FAILED => Error::ToolFailed {
                tool: tool(),
                error,
            },
            ErrorCode::TOOL_TIMEOUT => Error::ToolTimeout {
                tool: tool(),
                error,
            },
            ErrorCode::RESOURCE_NOT_FOUND => Error::ResourceNotFound { error },
            _ => Error::Remote {
                method: method.to_owned(),
                error,
            },
        }
    }

    /// The error object the mod answered with, for the variants that carry one.
    pub fn error_object(&self) -> Option<&ErrorObject> {
        match self {
            Error::AuthenticationFailed { error }
            | Error::NotAuthenticated { error }
            | Error::MethodNotFound { error, .. }
            | Error::InvalidParams { error, .. }
            | Error::ToolNotFound { error, .. }
            | Error::ToolUnavailable { error, .. }
            | Error::ToolFailed { error, .. }
            | Error::ToolTimeout { error, .. }
            | Error::ResourceNotFound { error }
            | Error::Remote { error, .. } => Some(error),
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
    /// `data.retryable` when it says, else `true` for [`Error::Timeout`], [`Error::Disconnected`],
    /// [`Error::ToolTimeout`] and [`Error::Unreachable`].
    pub fn is_retryable(&self) -> bool {
        if let Some(flag) = self.error_object().and_then(ErrorObject::retryable) {
            return flag;
        }
        matches!(
            self,
            Error::Timeout { .. }
                | Error::Disconnected
                | Error::ToolTimeout { .. }
                | Error::Unreachable { .. }
        )
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
            let a = Error::from_remote(ErrorObject::new(ours, "x"), "tools/call", Some("a/b"));
            let b = Error::from_remote(ErrorObject::new(theirs, "x"), "tools/call", Some("a/b"));
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
        let Error::InvalidParams { errors, .. } =
            Error::from_remote(error, "tools/call", Some("a/b"))
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
        let e = Error::from_remote(
            ErrorObject::new(-32403, "slow"),
            "tools/call",
            Some("demo/sleep"),
        );
        assert!(matches!(&e, Error::ToolTimeout { tool, .. } if tool == "demo/sleep"));
        assert!(e.is_retryable());
        let e = Error::from_remote(
            ErrorObject::new(-32050, "custom").with_data(json!({"retryable": false})),
            "x/y",
            None,
        );
        assert!(matches!(&e, Error::Remote { method, .. } if method == "x/y"));
        assert!(!e.is_retryable());
        assert!(e.is_remote());
        assert!(!Error::Disconnected.is_remote());
        let e = Error::from_remote(ErrorObject::new(-32401, "blocked"), "env/step", None);
        assert_eq!(
            e.to_string(),
            "tool env/step unavailable: error -32401: blocked"
        );
    }

    #[test]
    fn local_errors_carry_no_error_object_and_are_not_retryable() {
        let local = [
            Error::MissingToken,
            Error::DynamicToolsDisabled,
            Error::UnknownChannel("a/b".into()),
            Error::InvalidWelcome { reason: "x".into() },
        ];
        for e in local {
            assert!(
                e.code().is_none() && !e.is_remote() && !e.is_retryable(),
                "{e:?}"
            );
        }
    }
}
