//! [`BridgeRequest`]: one outgoing request on a bridge's call path, as every layer sees it before it is sent.

use std::borrow::Cow;
use std::sync::LazyLock;
use std::time::Duration;

use gabp_types::methods::{Method, ProgressToken, ToolsCall};
use gabp_types::{MethodName, Params};
use serde::Serialize;
use serde_json::{json, Value};

use super::extensions::Extensions;
use crate::Error;

/// How the caller of a call reads its result.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub(crate) enum Reading {
    /// Whole, before the call returns: the result is handed on (to layers, as a value).
    #[default]
    Whole,
    /// Into the caller's own type, which checks what it reads (or it is not read at all): the call may return
    /// it unread.
    AsType,
}

/// One outgoing request on a bridge's call path: what every layer sees before it is sent.
///
/// ```
/// use gabp_session::bridge::BridgeRequest;
/// use serde_json::json;
/// use std::time::Duration;
///
/// let request = BridgeRequest::tool_call("world/get_block", json!({"x": 1, "y": 2, "z": 3}))?
///     .with_timeout(Duration::from_secs(5));
/// assert_eq!(request.method(), "tools/call");
/// assert_eq!(request.tool_name().as_deref(), Some("world/get_block"));
/// assert_eq!(request.timeout(), Some(Duration::from_secs(5)));
/// # Ok::<(), gabp_session::Error>(())
/// ```
#[derive(Debug)]
pub struct BridgeRequest {
    method: MethodName,
    params: Option<Params>,
    timeout: Option<Duration>,
    extensions: Extensions,
    /// The params were written here and already conform (SPEC/1.0 gabp.md §4.5): no second check.
    conforms: bool,
    /// How the result is read: only the bridge's own typed calls on the path without layers read it as a type.
    reading: Reading,
}

impl BridgeRequest {
    /// A request for `method` with optional params.
    pub fn new(method: MethodName, params: Option<Params>) -> Self {
        BridgeRequest {
            method,
            params,
            timeout: None,
            extensions: Extensions::new(),
            conforms: false,
            reading: Reading::Whole,
        }
    }

    /// A request for `method` whose params are `params` (`null` for none, else a JSON object).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] for an invalid method name or params that are not an object.
    pub fn from_json(method: &str, params: Value) -> Result<Self, Error> {
        let method = MethodName::new(method).map_err(|e| Error::invalid_request(e.to_string()))?;
        let params = match params {
            Value::Null => None,
            Value::Object(map) => Some(Params::from_map(&map)),
            other => {
                return Err(Error::invalid_request(format!(
                    "params must be a JSON object or null, not {other}"
                )))
            }
        };
        Ok(BridgeRequest::new(method, params))
    }

    /// A request for the core method `M` with typed params. Params that serialize to `{}` are left out when
    /// `M` does not require them.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] when the params do not serialize to a JSON object.
    pub fn typed<M: Method>(params: &M::Params) -> Result<Self, Error> {
        let method =
            MethodName::from_static(M::NAME).map_err(|e| Error::invalid_request(e.to_string()))?;
        let params = to_params(params)?;
        let params = if params.as_json() == "{}" && !M::PARAMS_REQUIRED {
            None
        } else {
            Some(params)
        };
        Ok(BridgeRequest::new(method, params))
    }

    /// A `tools/call` of tool `name` with `arguments` (`null` for none, else a JSON object).
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] for an invalid tool name or arguments that are not an object.
    pub fn tool_call(name: &str, arguments: Value) -> Result<Self, Error> {
        // The name is checked once, by the request's builder, and before the arguments.
        match arguments {
            Value::Null => BridgeRequest::tool_call_params::<Value>(name, None),
            Value::Object(args) => BridgeRequest::tool_call_as(name, &args),
            other => {
                check_tool_name(name)?;
                Err(Error::invalid_request(format!(
                    "tool arguments must be a JSON object or null, not {other}"
                )))
            }
        }
    }

    /// A `tools/call` request for tool `name` with typed `arguments`, which must serialize to a JSON object;
    /// the params are written straight to their JSON text.
    ///
    /// # Errors
    ///
    /// [`Error::InvalidRequest`] when `name` is not a valid tool name or the arguments do not serialize
    /// to an object.
    pub fn tool_call_as<A: Serialize + ?Sized>(name: &str, arguments: &A) -> Result<Self, Error> {
        BridgeRequest::tool_call_params(name, Some(arguments))
    }

    /// A `tools/call` request whose params carry `_meta.progressToken` (SPEC/1.0 extensions.md §progress).
    ///
    /// # Errors
    ///
    /// As [`BridgeRequest::tool_call`].
    pub fn tool_call_with_progress(
        name: &str,
        arguments: Value,
        token: &ProgressToken,
    ) -> Result<Self, Error> {
        let arguments = match arguments {
            Value::Null => json!({}),
            v @ Value::Object(_) => v,
            other => {
                return Err(Error::invalid_request(format!(
                    "tool arguments must be a JSON object or null, not {other}"
                )))
            }
        };
        BridgeRequest::from_json(
            ToolsCall::NAME,
            json!({ "name": name, "arguments": arguments, "_meta": { "progressToken": token } }),
        )
    }

    fn tool_call_params<A: Serialize + ?Sized>(
        name: &str,
        arguments: Option<&A>,
    ) -> Result<Self, Error> {
        check_tool_name(name)?;
        let params = Params::tool_call(name, arguments)
            .map_err(|e| Error::invalid_request(e.to_string()))?;
        // Checked once per process rather than once per call.
        static TOOLS_CALL: LazyLock<Result<MethodName, gabp_types::Error>> =
            LazyLock::new(|| MethodName::from_static(ToolsCall::NAME));
        let method = TOOLS_CALL
            .clone()
            .map_err(|e| Error::invalid_request(e.to_string()))?;
        let mut request = BridgeRequest::new(method, Some(params));
        request.conforms = true;
        Ok(request)
    }

    /// The method.
    pub fn method(&self) -> &MethodName {
        &self.method
    }

    /// The params.
    pub fn params(&self) -> Option<&Params> {
        self.params.as_ref()
    }

    /// The params, mutably (a layer may rewrite them; they are checked again before they are sent).
    pub fn params_mut(&mut self) -> &mut Option<Params> {
        self.conforms = false;
        &mut self.params
    }

    /// For a `tools/call`, the tool's name.
    pub fn tool_name(&self) -> Option<Cow<'_, str>> {
        if self.method.as_str() != ToolsCall::NAME {
            return None;
        }
        self.params.as_ref()?.str_member("name")
    }

    /// This call's time limit, if it has its own (else the bridge's default).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// Sets this call's time limit.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Sets or clears this call's time limit.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
    }

    /// The request's extensions.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The request's extensions, mutably.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.extensions
    }

    pub(crate) fn into_parts(self) -> (MethodName, Option<Params>, Option<Duration>) {
        (self.method, self.params, self.timeout)
    }

    /// Whether the params were written by this crate and conform already.
    pub(crate) fn conforms(&self) -> bool {
        self.conforms
    }

    pub(crate) fn reading(&self) -> Reading {
        self.reading
    }

    pub(crate) fn set_reading(&mut self, reading: Reading) {
        self.reading = reading;
    }
}

pub(crate) fn to_params<T: Serialize + ?Sized>(value: &T) -> Result<Params, Error> {
    Params::from_serialize(value)
        .map_err(|e| Error::invalid_request(format!("params do not serialize to an object: {e}")))
}

/// A tool name matches the name pattern (SPEC/1.0 registry.md §1.1); anything else is refused before the request is
/// built.
fn check_tool_name(name: &str) -> Result<(), Error> {
    if gabp_types::format::is_registry_name(name) {
        return Ok(());
    }
    Err(Error::invalid_request(format!(
        "tool name {name:?} does not match {}",
        gabp_types::format::NAME_PATTERN
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use gabp_types::methods::{SessionPing, ToolsList};
    use serde_json::json;

    #[test]
    fn typed_requests_leave_out_empty_optional_params() {
        let ping = BridgeRequest::typed::<SessionPing>(&Default::default()).unwrap();
        assert!(ping.params().is_none());
        let list = BridgeRequest::typed::<ToolsList>(&Default::default()).unwrap();
        assert_eq!(list.method(), "tools/list");
        assert!(list.params().is_none());
    }

    #[test]
    fn tool_calls_validate_name_and_arguments() {
        assert!(BridgeRequest::tool_call("Bad Name", Value::Null).is_err());
        assert!(BridgeRequest::tool_call("Bad Name", json!({})).is_err());
        assert!(BridgeRequest::tool_call("a/b", json!(5)).is_err());
        // A bad name is what is reported, whatever the arguments.
        let both = BridgeRequest::tool_call("Bad Name", json!(5)).unwrap_err();
        assert!(both.to_string().contains("Bad Name"), "{both}");
        let r = BridgeRequest::tool_call("a/b", Value::Null).unwrap();
        assert_eq!(r.tool_name().as_deref(), Some("a/b"));
        assert_eq!(r.params().unwrap().as_json(), r#"{"name":"a/b"}"#);
        #[derive(Serialize)]
        struct At {
            x: i64,
        }
        let typed = BridgeRequest::tool_call_as("a/b", &At { x: 1 }).unwrap();
        assert_eq!(
            typed.params().unwrap().as_json(),
            r#"{"name":"a/b","arguments":{"x":1}}"#
        );
        assert!(BridgeRequest::tool_call_as("a/b", &[1, 2]).is_err());
        assert!(BridgeRequest::tool_call_as("a/b", &"{").is_err());
        assert!(BridgeRequest::tool_call_as("a/b", &None::<At>).is_err());
        assert!(BridgeRequest::tool_call_as("a/bc", &json!({}))
            .unwrap()
            .conforms());
        let mut rewritten = BridgeRequest::tool_call_as("a/b", &At { x: 1 }).unwrap();
        assert!(rewritten.conforms());
        *rewritten.params_mut() = None;
        assert!(!rewritten.conforms(), "rewritten params are checked again");
        assert!(!BridgeRequest::from_json("tools/call", json!({}))
            .unwrap()
            .conforms());
        assert!(BridgeRequest::from_json("x/y", json!([1])).is_err());
        assert!(BridgeRequest::from_json("x/y", Value::Null)
            .unwrap()
            .params()
            .is_none());
    }
}
