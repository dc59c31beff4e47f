//! [`Handler`]: the one trait of the functions that serve calls (tools, on the runtime or on the game's main
//! thread, resources, `state/get`, `state/set`, custom methods). A handler takes extractors ([`FromContext`])
//! and then its input, the way axum handlers do; it fails with a [`CallError`].

use std::any::{type_name, Any};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::{BoxFuture, Either};
use futures::FutureExt;
use gabp_types::ErrorCode;
use serde::de::DeserializeOwned;

use super::context::{CallContext, FromContext, StateType};
use super::error::CallError;

/// A function that serves calls: extractors first (up to three, [`FromContext`]: [`CallContext`],
/// [`State<T>`](super::State), ...), then its input (a tool's arguments, a method's params; none for a
/// resource), returning `Result<Output, CallError>`. Implemented for every such function or closure:
///
/// - `async fn(extractors..., input) -> Result<Output, CallError>` and `async fn(extractors...) -> ...`, run
///   on the runtime;
/// - `fn(&mut S, extractors..., input) -> Result<Output, CallError>` and `fn(input) -> ...`, run on the
///   game's main thread inside [`MainThread::pump_with`](super::MainThread::pump_with), with the game's state
///   `S` (which need not be `Send`).
///
/// `Marker` only tells the forms apart; it is inferred.
pub trait Handler<Marker>: Send + Sync + 'static {
    /// What the function takes after its extractors (`IgnoredAny` when nothing).
    type Input;
    /// What it answers when it succeeds.
    type Output;
    /// One call: a future, or for a function of the game's main thread, its outcome.
    type Call;
    /// Whether the function takes any extractor (else no context of its own is built for its calls).
    const EXTRACTS: bool;

    /// The shared states its extractors take: the server is built only when each was registered.
    fn states() -> Vec<StateType>;

    /// Serves one call; `game` is the state the game loop pumps with (`&mut ()` on the runtime).
    fn call(&self, context: CallContext, input: Self::Input, game: &mut dyn Any) -> Self::Call;
}

/// Marks the functions run on the runtime.
#[doc(hidden)]
#[derive(Debug)]
pub enum OnRuntime {}

/// Marks the functions run on the game's main thread.
#[doc(hidden)]
#[derive(Debug)]
pub enum OnMainThread {}

/// The future of a call whose extractor failed: it holds only the error, so `Out` need not be `Send`.
#[doc(hidden)]
#[derive(Debug)]
pub struct Rejected<Out> {
    error: Option<CallError>,
    output: PhantomData<fn() -> Out>,
}

impl<Out> Future for Rejected<Out> {
    type Output = Result<Out, CallError>;

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Self::Output> {
        let error = self
            .error
            .take()
            .unwrap_or_else(|| CallError::new("polled after completion"));
        Poll::Ready(Err(error))
    }
}

impl<Out> Unpin for Rejected<Out> {}

macro_rules! extract {
    ($context:ident, $($e:ident),*) => {
        $(
            let $e = match $e::from_context(&$context) {
                Ok(value) => value,
                Err(error) => {
                    return Either::Left(Rejected { error: Some(error), output: PhantomData })
                }
            };
        )*
    };
}

macro_rules! handlers {
    ($extracts:literal $(, $e:ident)*) => {
        impl<F, Fut, In, Out, $($e,)*> Handler<(OnRuntime, ($($e,)*), In)> for F
        where
            F: Fn($($e,)* In) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<Out, CallError>> + Send + 'static,
            In: DeserializeOwned,
            $($e: FromContext,)*
        {
            type Input = In;
            type Output = Out;
            type Call = Either<Rejected<Out>, Fut>;
            const EXTRACTS: bool = $extracts;

            fn states() -> Vec<StateType> {
                states(&[$($e::state(),)*])
            }

            #[allow(non_snake_case, unused_variables)]
            fn call(&self, context: CallContext, input: In, _: &mut dyn Any) -> Self::Call {
                extract!(context, $($e),*);
                Either::Right(self($($e,)* input))
            }
        }

        impl<F, Fut, Out, $($e,)*> Handler<(OnRuntime, ($($e,)*))> for F
        where
            F: Fn($($e,)*) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<Out, CallError>> + Send + 'static,
            $($e: FromContext,)*
        {
            type Input = serde::de::IgnoredAny;
            type Output = Out;
            type Call = Either<Rejected<Out>, Fut>;
            const EXTRACTS: bool = $extracts;

            fn states() -> Vec<StateType> {
                states(&[$($e::state(),)*])
            }

            #[allow(non_snake_case, unused_variables)]
            fn call(&self, context: CallContext, _: Self::Input, _: &mut dyn Any) -> Self::Call {
                extract!(context, $($e),*);
                Either::Right(self($($e,)*))
            }
        }

        impl<F, S, In, Out, $($e,)*> Handler<(OnMainThread, S, ($($e,)*), In)> for F
        where
            F: Fn(&mut S, $($e,)* In) -> Result<Out, CallError> + Send + Sync + 'static,
            S: 'static,
            In: DeserializeOwned,
            $($e: FromContext,)*
        {
            type Input = In;
            type Output = Out;
            type Call = Result<Out, CallError>;
            const EXTRACTS: bool = true;

            fn states() -> Vec<StateType> {
                states(&[$($e::state(),)*])
            }

            #[allow(non_snake_case, unused_variables)]
            fn call(&self, context: CallContext, input: In, game: &mut dyn Any) -> Self::Call {
                let game = game.downcast_mut::<S>().ok_or_else(wrong_state::<S>)?;
                $(let $e = $e::from_context(&context)?;)*
                self(game, $($e,)* input)
            }
        }
    };
}

handlers!(false);
handlers!(true, E1);
handlers!(true, E1, E2);
handlers!(true, E1, E2, E3);

/// The main-thread function that takes neither the game's state nor extractors.
impl<F, In, Out> Handler<(OnMainThread, In)> for F
where
    F: Fn(In) -> Result<Out, CallError> + Send + Sync + 'static,
    In: DeserializeOwned,
{
    type Input = In;
    type Output = Out;
    type Call = Result<Out, CallError>;
    const EXTRACTS: bool = true;

    fn states() -> Vec<StateType> {
        Vec::new()
    }

    fn call(&self, _: CallContext, input: In, _: &mut dyn Any) -> Self::Call {
        self(input)
    }
}

fn wrong_state<S>() -> CallError {
    CallError::new(format!(
        "this tool needs the game state {}: the game loop must pump with MainThread::pump_with",
        type_name::<S>()
    ))
    .with_code(ErrorCode::INTERNAL_ERROR)
}

/// An async handler whose input and output types are set and whose future is boxed: the form a server keeps
/// for resources, state and custom methods.
pub(crate) type BoxedHandler<In, Out> =
    Arc<dyn Fn(CallContext, In) -> BoxFuture<'static, Result<Out, CallError>> + Send + Sync>;

/// `handler` boxed, its output turned by `output`.
pub(crate) fn boxed<M, H, Out>(
    handler: H,
    output: fn(H::Output) -> Result<Out, CallError>,
) -> BoxedHandler<H::Input, Out>
where
    H: Handler<M, Call: Future<Output = Result<H::Output, CallError>> + Send + 'static>,
    H::Output: 'static,
    Out: 'static,
{
    Arc::new(move |context, input| {
        handler
            .call(context, input, &mut ())
            .map(move |result| result.and_then(output))
            .boxed()
    })
}

fn states(taken: &[Option<StateType>]) -> Vec<StateType> {
    taken.iter().flatten().copied().collect()
}
