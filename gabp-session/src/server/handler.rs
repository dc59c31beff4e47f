//! The functions that serve tools: [`ToolHandler`] (async, on the runtime) and [`MainThreadHandler`]
//! (synchronous, on the game's thread, with the game's state), and [`ResourceHandler`]. All take extractors ([`FromContext`]) before
//! the typed arguments, the way axum handlers do.

use std::any::{type_name, Any};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::future::{BoxFuture, Either};
use gabp_types::{ErrorCode, ErrorObject};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::context::{CallContext, FromContext};
use super::error::ToolError;

/// An async function that serves a tool: `async fn(extractors..., args: In) -> Result<Out, ToolError>`, with up
/// to three extractors ([`FromContext`]: [`CallContext`], [`State<T>`](super::State), ...). `In` and `Out`
/// give the tool's `inputSchema` and `outputSchema`. Implemented for every such function or closure.
pub trait ToolHandler<Marker>: Send + Sync + 'static {
    /// The typed arguments.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// The typed result.
    type Output: Serialize + JsonSchema + 'static;
    /// The future of one call.
    type Future: Future<Output = Result<Self::Output, ToolError>> + Send + 'static;
    /// Whether the handler takes any extractor (else no context is built for its calls).
    const TAKES_CONTEXT: bool;

    /// Serves one call.
    fn call(&self, context: CallContext, args: Self::Args) -> Self::Future;
}

/// The future of a call whose extractor failed: it holds only the error, so `Out` need not be `Send`.
#[doc(hidden)]
#[derive(Debug)]
pub struct ExtractFailed<Out> {
    error: Option<ToolError>,
    output: PhantomData<fn() -> Out>,
}

impl<Out> Future for ExtractFailed<Out> {
    type Output = Result<Out, ToolError>;

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        let error = self
            .error
            .take()
            .unwrap_or_else(|| ToolError::new("polled after completion"));
        Poll::Ready(Err(error))
    }
}

impl<Out> Unpin for ExtractFailed<Out> {}

impl<F, Fut, In, Out> ToolHandler<((), In)> for F
where
    F: Fn(In) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Out, ToolError>> + Send + 'static,
    In: DeserializeOwned + JsonSchema + Send + 'static,
    Out: Serialize + JsonSchema + 'static,
{
    type Args = In;
    type Output = Out;
    type Future = Fut;
    const TAKES_CONTEXT: bool = false;

    fn call(&self, _: CallContext, args: In) -> Fut {
        self(args)
    }
}

macro_rules! tool_handler {
    ($($e:ident),*) => {
        impl<F, Fut, In, Out, $($e,)*> ToolHandler<(($($e,)*), In)> for F
        where
            F: Fn($($e,)* In) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<Out, ToolError>> + Send + 'static,
            In: DeserializeOwned + JsonSchema + Send + 'static,
            Out: Serialize + JsonSchema + 'static,
            $($e: FromContext,)*
        {
            type Args = In;
            type Output = Out;
            type Future = Either<ExtractFailed<Out>, Fut>;
            const TAKES_CONTEXT: bool = true;

            #[allow(non_snake_case)]
            fn call(&self, context: CallContext, args: In) -> Self::Future {
                $(
                    let $e = match $e::from_context(&context) {
                        Ok(value) => value,
                        Err(error) => {
                            return Either::Left(ExtractFailed { error: Some(error), output: PhantomData })
                        }
                    };
                )*
                Either::Right(self($($e,)* args))
            }
        }
    };
}

tool_handler!(E1);
tool_handler!(E1, E2);
tool_handler!(E1, E2, E3);

/// A synchronous function that serves a tool on the game's main thread, inside
/// [`MainThread::pump_with`](super::MainThread::pump_with): `fn(&mut S, extractors..., args: In) ->
/// Result<Out, ToolError>` with the game's state `S` (which need not be `Send`), up to two extractors, or
/// simply `fn(args: In) -> Result<Out, ToolError>`.
pub trait MainThreadHandler<Marker>: Send + Sync + 'static {
    /// The typed arguments.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// The typed result.
    type Output: Serialize + JsonSchema + 'static;

    /// Serves one call with the state the game loop pumps with.
    ///
    /// # Errors
    ///
    /// The handler's error, or a `-32603` error when the pumped state is not the one the handler takes.
    fn call(
        &self,
        state: &mut dyn Any,
        context: &CallContext,
        args: Self::Args,
    ) -> Result<Self::Output, ToolError>;
}

impl<F, In, Out> MainThreadHandler<(In,)> for F
where
    F: Fn(In) -> Result<Out, ToolError> + Send + Sync + 'static,
    In: DeserializeOwned + JsonSchema + Send + 'static,
    Out: Serialize + JsonSchema + 'static,
{
    type Args = In;
    type Output = Out;

    fn call(&self, _: &mut dyn Any, _: &CallContext, args: In) -> Result<Out, ToolError> {
        self(args)
    }
}

macro_rules! main_thread_handler {
    ($($e:ident),*) => {
        impl<F, S, In, Out, $($e,)*> MainThreadHandler<(S, ($($e,)*), In)> for F
        where
            F: Fn(&mut S, $($e,)* In) -> Result<Out, ToolError> + Send + Sync + 'static,
            S: 'static,
            In: DeserializeOwned + JsonSchema + Send + 'static,
            Out: Serialize + JsonSchema + 'static,
            $($e: FromContext,)*
        {
            type Args = In;
            type Output = Out;

            #[allow(non_snake_case, unused_variables)]
            fn call(&self, state: &mut dyn Any, context: &CallContext, args: In) -> Result<Out, ToolError> {
                let state = state.downcast_mut::<S>().ok_or_else(wrong_state::<S>)?;
                $(let $e = $e::from_context(context)?;)*
                self(state, $($e,)* args)
            }
        }
    };
}

main_thread_handler!();
main_thread_handler!(E1);
main_thread_handler!(E1, E2);

/// An async function that reads a resource: `async fn(extractors...) -> Result<T, ErrorObject>`, with up to
/// two extractors ([`FromContext`]), where `T` is `String` for a text resource and `Vec<u8>` for a binary one.
/// Implemented for every such function or closure.
pub trait ResourceHandler<Marker, T>: Send + Sync + 'static {
    /// Reads the resource once.
    fn read(&self, context: &CallContext) -> BoxFuture<'static, Result<T, ErrorObject>>;
}

impl<F, Fut, T> ResourceHandler<(), T> for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<T, ErrorObject>> + Send + 'static,
{
    fn read(&self, _: &CallContext) -> BoxFuture<'static, Result<T, ErrorObject>> {
        Box::pin(self())
    }
}

macro_rules! resource_handler {
    ($($e:ident),*) => {
        impl<F, Fut, T, $($e,)*> ResourceHandler<($($e,)*), T> for F
        where
            F: Fn($($e,)*) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<T, ErrorObject>> + Send + 'static,
            T: Send + 'static,
            $($e: FromContext,)*
        {
            #[allow(non_snake_case)]
            fn read(&self, context: &CallContext) -> BoxFuture<'static, Result<T, ErrorObject>> {
                $(
                    let $e = match $e::from_context(context) {
                        Ok(value) => value,
                        Err(error) => {
                            let error = error.into_error_object();
                            return Box::pin(async move { Err(error) });
                        }
                    };
                )*
                Box::pin(self($($e,)*))
            }
        }
    };
}

resource_handler!(E1);
resource_handler!(E1, E2);

fn wrong_state<S>() -> ToolError {
    ToolError::new(format!(
        "this tool needs the game state {}: the game loop must pump with MainThread::pump_with",
        type_name::<S>()
    ))
    .with_code(ErrorCode::INTERNAL_ERROR)
}
