//! [`BridgeResponse`]: the mod's answer to a [`BridgeRequest`](super::BridgeRequest) as the call path hands it
//! on, and the error a caller sees for an answer that is an error or cannot be read.

use std::sync::OnceLock;

use gabp_types::Request;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::extensions::Extensions;
use crate::engine::{CallResult, Failure};
use crate::Error;

/// The answer to a [`BridgeRequest`](super::BridgeRequest): the mod's `result`, and extensions layers may attach.
///
/// The result is kept as the text the mod wrote until it is read: [`BridgeResponse::result_as`] reads it
/// straight into a type, [`BridgeResponse::result`] into a JSON value (once).
#[derive(Debug)]
pub struct BridgeResponse {
    result: CallResult,
    value: OnceLock<Value>,
    extensions: Extensions,
    /// For a result not read yet: the request, which names the method and the tool should reading it fail.
    unread_of: Option<Request>,
}

impl BridgeResponse {
    /// A response carrying `result`.
    pub fn new(result: Value) -> Self {
        BridgeResponse::from_call(CallResult::Value(result), None)
    }

    /// A response carrying `result`, which the bridge's own typed call of `request` reads if it is unread.
    pub(crate) fn from_call(result: CallResult, request: Option<Request>) -> Self {
        BridgeResponse {
            unread_of: request.filter(|_| result.is_unread()),
            result,
            value: OnceLock::new(),
            extensions: Extensions::new(),
        }
    }

    /// The mod's result.
    pub fn result(&self) -> &Value {
        match &self.result {
            CallResult::Value(value) => value,
            text => self.value.get_or_init(|| text.clone().into_value()),
        }
    }

    /// The mod's result read as `T`, without a JSON value in between.
    ///
    /// # Errors
    ///
    /// When the result does not have the shape of `T`.
    pub fn result_as<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        match self.value.get() {
            Some(value) => T::deserialize(value),
            None => self.result.decode(),
        }
    }

    /// The mod's result read as `T` by the bridge's typed calls of `method`: straight from the text the mod wrote
    /// and, should that fail for a result not read yet, from the response read whole as every other reader reads
    /// it (a result that is not JSON is then [`Error::InvalidResponse`], one of another shape
    /// [`Error::InvalidResult`]).
    pub(crate) fn read_as<T: DeserializeOwned>(&self, method: &str) -> Result<T, Error> {
        let shape = match self.result_as() {
            Ok(read) => return Ok(read),
            Err(shape) => shape,
        };
        let Some(request) = &self.unread_of else {
            return typed_result(method, Err(shape));
        };
        match self.result.clone().read() {
            Ok(result) => typed_result(method, result.decode()),
            Err(failure) => Err(failed(failure, request)),
        }
    }

    /// The mod's result, consuming the response.
    pub fn into_result(self) -> Value {
        match self.value.into_inner() {
            Some(value) => value,
            None => self.result.into_value(),
        }
    }

    /// The response's extensions (for example, what a layer learned while the call ran).
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The response's extensions, mutably.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.extensions
    }
}

/// The result `read` as `T`, or the protocol error that names `method`.
pub(super) fn typed_result<T>(
    method: &str,
    read: Result<T, serde_json::Error>,
) -> Result<T, Error> {
    read.map_err(|e| Error::InvalidResult {
        method: method.to_owned(),
        reason: e.to_string(),
    })
}

/// The error the caller of `request` sees for a call that `failure` ended.
pub(super) fn failed(failure: Failure, request: &gabp_types::Request) -> Error {
    let method = request.method.as_str();
    match failure {
        Failure::Error(error) => {
            let tool = request.params.as_ref().and_then(|p| p.str_member("name"));
            Error::from_remote(error, method, tool.as_deref())
        }
        Failure::Invalid(reason) => Error::InvalidResponse {
            method: method.to_owned(),
            reason,
        },
    }
}
