//! The functions that serve `state/get`, `state/set` (SPEC/1.0 gabp.md §4.9) and custom methods (§4.11):
//! [`StateGetHandler`], [`StateSetHandler`] and [`MethodHandler`]. Like tool handlers they take extractors
//! ([`FromContext`]) before their typed input.

use std::future::Future;

use futures::future::BoxFuture;
use futures::FutureExt;
use gabp_types::methods::{StateGetParams, StateSetParams, StateSetResult};
use gabp_types::{ErrorCode, ErrorObject};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

use super::context::{CallContext, FromContext};
use super::ServerRequest;

/// An async function that serves `state/get`: `async fn(extractors..., StateGetParams) -> Result<T,
/// ErrorObject>` with up to two extractors, where `T` serializes to an object of components (a struct, or a
/// `Map<String, Value>`). Implemented for every such function or closure.
pub trait StateGetHandler<Marker>: Send + Sync + 'static {
    /// Reads the state.
    fn get(
        &self,
        context: &CallContext,
        params: StateGetParams,
    ) -> BoxFuture<'static, Result<Map<String, Value>, ErrorObject>>;
}

/// An async function that serves `state/set`: `async fn(extractors..., StateSetParams) ->
/// Result<StateSetResult, ErrorObject>` with up to two extractors. Implemented for every such function or
/// closure.
pub trait StateSetHandler<Marker>: Send + Sync + 'static {
    /// Applies the updates.
    fn set(
        &self,
        context: &CallContext,
        params: StateSetParams,
    ) -> BoxFuture<'static, Result<StateSetResult, ErrorObject>>;
}

/// An async function that serves a custom method: either `async fn(ServerRequest) -> Result<Value,
/// ErrorObject>` (the whole request), or `async fn(extractors..., P) -> Result<R, ErrorObject>` with up to two
/// extractors, typed params `P` (an absent `params` reads as `{}`; params that do not fit are answered
/// `-32602`) and a result `R` that serializes. Implemented for every such function or closure.
pub trait MethodHandler<Marker>: Send + Sync + 'static {
    /// Serves one request.
    fn call(
        &self,
        context: &CallContext,
        request: ServerRequest,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>>;
}

fn state_object<T: Serialize>(state: T) -> Result<Map<String, Value>, ErrorObject> {
    match serde_json::to_value(state) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            "the state handler's result must serialize to an object of components",
        )),
        Err(e) => Err(ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the state does not serialize: {e}"),
        )),
    }
}

fn result_value<R: Serialize>(result: R) -> Result<Value, ErrorObject> {
    serde_json::to_value(result).map_err(|e| {
        ErrorObject::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the method's result does not serialize: {e}"),
        )
    })
}

fn typed_params<P: DeserializeOwned>(request: &ServerRequest) -> Result<P, ErrorObject> {
    request.request.params_as::<P>().map_err(|e| {
        let message = e.to_string();
        let message = gabp_types::without_json_position(&message);
        ErrorObject::new(
            ErrorCode::INVALID_PARAMS,
            format!("invalid params: /params: {message}"),
        )
        .with_data(serde_json::json!({ "errors": [{ "path": "/params", "message": message }] }))
    })
}

fn failed<T: Send + 'static>(error: ErrorObject) -> BoxFuture<'static, Result<T, ErrorObject>> {
    futures::future::ready(Err(error)).boxed()
}

macro_rules! extract {
    ($context:ident, $($e:ident),*) => {
        $(
            let $e = match $e::from_context($context) {
                Ok(value) => value,
                Err(error) => return failed(error.into_error_object()),
            };
        )*
    };
}

macro_rules! state_handlers {
    ($($e:ident),*) => {
        impl<F, Fut, T, $($e,)*> StateGetHandler<(($($e,)*), T)> for F
        where
            F: Fn($($e,)* StateGetParams) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<T, ErrorObject>> + Send + 'static,
            T: Serialize + 'static,
            $($e: FromContext,)*
        {
            #[allow(non_snake_case, unused_variables)]
            fn get(
                &self,
                context: &CallContext,
                params: StateGetParams,
            ) -> BoxFuture<'static, Result<Map<String, Value>, ErrorObject>> {
                extract!(context, $($e),*);
                self($($e,)* params).map(|r| r.and_then(state_object)).boxed()
            }
        }

        impl<F, Fut, $($e,)*> StateSetHandler<($($e,)*)> for F
        where
            F: Fn($($e,)* StateSetParams) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<StateSetResult, ErrorObject>> + Send + 'static,
            $($e: FromContext,)*
        {
            #[allow(non_snake_case, unused_variables)]
            fn set(
                &self,
                context: &CallContext,
                params: StateSetParams,
            ) -> BoxFuture<'static, Result<StateSetResult, ErrorObject>> {
                extract!(context, $($e),*);
                self($($e,)* params).boxed()
            }
        }

        impl<F, Fut, P, R, $($e,)*> MethodHandler<(($($e,)*), P, R)> for F
        where
            F: Fn($($e,)* P) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<R, ErrorObject>> + Send + 'static,
            P: DeserializeOwned + 'static,
            R: Serialize + 'static,
            $($e: FromContext,)*
        {
            #[allow(non_snake_case, unused_variables)]
            fn call(
                &self,
                context: &CallContext,
                request: ServerRequest,
            ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
                extract!(context, $($e),*);
                let params = match typed_params::<P>(&request) {
                    Ok(params) => params,
                    Err(error) => return failed(error),
                };
                self($($e,)* params).map(|r| r.and_then(result_value)).boxed()
            }
        }
    };
}

state_handlers!();
state_handlers!(E1);
state_handlers!(E1, E2);

/// The whole request: the form of custom methods that read `params` themselves.
impl<F, Fut> MethodHandler<(ServerRequest,)> for F
where
    F: Fn(ServerRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ErrorObject>> + Send + 'static,
{
    fn call(
        &self,
        _: &CallContext,
        request: ServerRequest,
    ) -> BoxFuture<'static, Result<Value, ErrorObject>> {
        self(request).boxed()
    }
}
