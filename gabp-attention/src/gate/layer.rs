//! The gate on a bridge's call path: [`AttentionGateLayer`], its service and its future.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use gabp_session::bridge::{BridgeRequest, BridgeResponse};
use gabp_session::Error as SessionError;
use tower::{Layer, Service};

use super::state::{Admission, Ticket};
use super::{AttentionGate, Shared};

/// The tower layer of an [`AttentionGate`] on a bridge's call path. Get it from [`AttentionGate::layer`].
#[derive(Debug, Clone)]
pub struct AttentionGateLayer {
    pub(super) gate: AttentionGate,
}

impl AttentionGateLayer {
    /// The gate (to [`ack`](AttentionGate::ack) its item, or look at it).
    #[must_use]
    pub fn gate(&self) -> &AttentionGate {
        &self.gate
    }
}

impl<S> Layer<S> for AttentionGateLayer {
    type Service = AttentionGateService<S>;

    fn layer(&self, inner: S) -> AttentionGateService<S> {
        AttentionGateService {
            inner,
            gate: self.gate.clone(),
        }
    }
}

/// The service of [`AttentionGateLayer`].
#[derive(Debug, Clone)]
pub struct AttentionGateService<S> {
    inner: S,
    gate: AttentionGate,
}

impl<S> Service<BridgeRequest> for AttentionGateService<S>
where
    S: Service<BridgeRequest, Response = BridgeResponse, Error = SessionError>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = BridgeResponse;
    type Error = SessionError;
    type Future = AttentionGateFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), SessionError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: BridgeRequest) -> Self::Future {
        let shared = &self.gate.shared;
        let state = match shared.try_admit(&request, false) {
            // The common case: decided at once, no allocation beyond the inner call's.
            Admission::Admitted(ticket) => State::Running {
                inner: self.inner.call(request),
                ticket,
                shared: shared.clone(),
            },
            Admission::Blocked(blocked) => State::Done {
                result: Some(Err(SessionError::rejected(*blocked))),
            },
            // After a handshake or a gap: wait for the refresh, then decide. The service that was polled
            // ready goes with this call; a fresh clone stays for the next.
            Admission::NeedsSync => {
                let clone = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, clone);
                let shared = shared.clone();
                State::Syncing {
                    future: Box::pin(async move {
                        let ticket = shared
                            .admit(&request)
                            .await
                            .map_err(SessionError::rejected)?;
                        let mut result = inner.call(request).await;
                        shared.complete(ticket, &mut result);
                        result
                    }),
                }
            }
        };
        AttentionGateFuture { state }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`AttentionGateService`]: the inner call, a refusal, or a wait for the gate to sync.
    pub struct AttentionGateFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<F> {
        Running {
            #[pin]
            inner: F,
            ticket: Ticket,
            shared: Arc<Shared>,
        },
        Done {
            result: Option<Result<BridgeResponse, SessionError>>,
        },
        Syncing {
            future: BoxFuture<'static, Result<BridgeResponse, SessionError>>,
        },
    }
}

impl<F> fmt::Debug for AttentionGateFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttentionGateFuture")
            .finish_non_exhaustive()
    }
}

impl<F> Future for AttentionGateFuture<F>
where
    F: Future<Output = Result<BridgeResponse, SessionError>>,
{
    type Output = Result<BridgeResponse, SessionError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Running {
                inner,
                ticket,
                shared,
            } => {
                let mut result = std::task::ready!(inner.poll(cx));
                shared.complete(*ticket, &mut result);
                Poll::Ready(result)
            }
            // Polled again after it answered: a misuse of the future; answer as a closed bridge would.
            StateProj::Done { result } => {
                Poll::Ready(result.take().unwrap_or(Err(SessionError::Closed)))
            }
            StateProj::Syncing { future } => future.as_mut().poll(cx),
        }
    }
}
