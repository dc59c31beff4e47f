//! gabp-rs errors as the Python exceptions of `gabp.errors`, each carrying the GABP code, message and data
//! (SPEC/1.0 gabp.md §8), and Python exceptions raised by a tool as the error object the mod answers with.

use gabp_session::server::CallError;
use gabp_session::Error;
use gabp_types::ErrorCode;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyModule;
use serde_json::Value;

use crate::json::{from_python, to_python, type_name};

static ERRORS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// An exception of class `class` (a name in `gabp.errors`) with `message`, `code` and `data`.
fn raise(
    py: Python<'_>,
    class: &str,
    message: String,
    code: Option<i64>,
    data: Option<&Value>,
) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let module = ERRORS.get_or_try_init(py, || {
            PyModule::import(py, "gabp.errors").map(Bound::unbind)
        })?;
        let class = module.bind(py).getattr(class)?;
        let data = match data {
            Some(data) => Some(to_python(py, data)?),
            None => None,
        };
        Ok(PyErr::from_value(class.call1((message, code, data))?))
    })();
    made.unwrap_or_else(|e| e)
}

/// A value handed to gabp itself is not valid: `gabp.InvalidArgument` (a `ValueError`).
pub(crate) fn config_error(py: Python<'_>, message: impl Into<String>) -> PyErr {
    raise(py, "InvalidArgument", message.into(), None, None)
}

/// The call was used in a way its object does not allow now (a mod that has started, a closed bridge):
/// `gabp.StateError` (a `RuntimeError`).
pub(crate) fn state_error(py: Python<'_>, message: impl Into<String>) -> PyErr {
    raise(py, "StateError", message.into(), None, None)
}

/// The exception for a gabp-rs error: the mod's own errors by their code, the rest by what went wrong here.
pub(crate) fn to_py(py: Python<'_>, error: &Error) -> PyErr {
    let class = match error {
        Error::AuthenticationFailed { .. } => "AuthenticationFailed",
        Error::NotAuthenticated { .. } => "NotAuthenticated",
        Error::MethodNotFound { .. } => "MethodNotFound",
        Error::InvalidParams { .. } => "InvalidParams",
        Error::ToolNotFound { .. } => "ToolNotFound",
        Error::ToolUnavailable { .. } => "ToolUnavailable",
        Error::ToolFailed { .. } => "ToolFailed",
        Error::ToolTimeout { .. } => "ToolTimeout",
        Error::ResourceNotFound { .. } => "ResourceNotFound",
        Error::Remote { .. } => "RemoteError",
        Error::Timeout { .. } => "Timeout",
        Error::Disconnected | Error::Closed | Error::Transport(_) | Error::Unreachable { .. } => {
            "Disconnected"
        }
        Error::Framing { .. }
        | Error::InvalidResponse { .. }
        | Error::InvalidResult { .. }
        | Error::InvalidWelcome { .. } => "ProtocolError",
        Error::NotAdvertised { .. } => "NotSupported",
        _ => "InvalidArgument",
    };
    let object = error.error_object();
    raise(
        py,
        class,
        error.to_string(),
        error.code().map(|c| c.0),
        object.and_then(|o| o.data.as_ref()),
    )
}

/// What a mod answers for an exception its tool raised: a `gabp.GabpError` with a code keeps its code,
/// message and data (so `raise gabp.InvalidParams("x must be positive")` is -32602); any other exception is
/// -32402, its type and message.
pub(crate) fn to_call_error(py: Python<'_>, error: &PyErr) -> CallError {
    let value = error.value(py);
    let gabp_error = ERRORS
        .get(py)
        .and_then(|m| m.bind(py).getattr("GabpError").ok())
        .is_some_and(|class| value.is_instance(&class).unwrap_or(false));
    let message = value.str().map(|s| s.to_string()).unwrap_or_default();
    if gabp_error {
        let code = value
            .getattr("code")
            .and_then(|c| c.extract::<Option<i64>>())
            .ok()
            .flatten();
        if let Some(code) = code {
            let mut call_error =
                CallError::new(non_empty(message, value)).with_code(ErrorCode(code));
            if let Ok(data) = value.getattr("data") {
                if !data.is_none() {
                    if let Ok(data) = from_python(&data, &"the error's data") {
                        call_error = call_error.with_data(data);
                    }
                }
            }
            return call_error;
        }
    }
    let kind = type_name(value);
    CallError::new(if message.is_empty() {
        kind
    } else {
        format!("{kind}: {message}")
    })
}

fn non_empty(message: String, value: &Bound<'_, PyAny>) -> String {
    if message.is_empty() {
        type_name(value)
    } else {
        message
    }
}

/// Makes sure `gabp.errors` is loaded, so that [`to_call_error`] can tell its classes apart.
pub(crate) fn load(py: Python<'_>) -> PyResult<()> {
    ERRORS.get_or_try_init(py, || {
        PyModule::import(py, "gabp.errors").map(Bound::unbind)
    })?;
    Ok(())
}
