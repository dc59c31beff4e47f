//! The mod's side of a connection: its [`Role`] in the connection engine (SPEC/1.0 gabp.md §2, §7).
//!
//! The mod answers requests through its tower stack, ignores events and responses from the bridge (it sends no
//! requests), answers bad frames once each, and stops reading on a close request (goodbye, wrong token,
//! [`Session::close`]), on shutdown, or when no hello succeeded in time.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use gabp_codec::CodecError;
use gabp_types::decode::DecodeError;
use gabp_types::{ErrorCode, Event, MessageId, Request, Response};
use tokio::time::Sleep;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};
use tower::Service;

use crate::engine::{Ended, Role, Signal};

use super::admission::Admitted;
use super::events::EventHub;
use super::layer::auth::{already_established, authentication_failed};
use super::session::{CloseReason, Session};
use super::stack::Stack;
use super::ServerRequest;

pub(crate) struct ModRole {
    service: Stack,
    session: Session,
    hub: Arc<EventHub>,
    signals: Signals,
}

/// What makes a mod's connection stop: the session's close request (its establishment wakes it too), the
/// server's shutdown, making room for a new connection, and the hello deadline.
struct Signals {
    session: Session,
    shutdown: Pin<Box<WaitForCancellationFutureOwned>>,
    hello_deadline: Option<Pin<Box<Sleep>>>,
    /// The connection's slot, and its signal to make room for a new connection while it has no session.
    slot: Admitted,
    displaced: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl ModRole {
    pub(crate) fn new(
        service: Stack,
        session: Session,
        hub: Arc<EventHub>,
        shutdown: CancellationToken,
        hello_timeout: Duration,
        slot: Admitted,
    ) -> Self {
        ModRole {
            signals: Signals {
                session: session.clone(),
                shutdown: Box::pin(shutdown.cancelled_owned()),
                hello_deadline: Some(Box::pin(tokio::time::sleep(hello_timeout))),
                displaced: Box::pin(slot.displaced().cancelled_owned()),
                slot,
            },
            service,
            session,
            hub,
        }
    }
}

/// Why the engine of a mod's connection stopped, as [`CloseReason`].
pub(crate) fn close_reason(ended: Ended<CloseReason>) -> CloseReason {
    match ended {
        Ended::Eof => CloseReason::Eof,
        Ended::Io(e) => CloseReason::Io(e),
        Ended::Framing(fault) => CloseReason::Framing(fault.to_string()),
        Ended::Signal(reason) => reason,
    }
}

impl Role for ModRole {
    type Reason = CloseReason;
    type Answer = <Stack as Service<ServerRequest>>::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        match self.service.poll_ready(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(()),
            Poll::Ready(Err(never)) => match never {},
            Poll::Pending => Poll::Pending,
        }
    }

    fn call(&mut self, request: Request) -> Option<Self::Answer> {
        Some(
            self.service
                .call(ServerRequest::new(request, self.session.clone())),
        )
    }

    fn on_event(&mut self, event: Event, _: usize) {
        tracing::debug!(channel = %event.channel, "ignoring an event from the bridge");
    }

    fn on_invalid(&mut self, body: Bytes, error: DecodeError) -> Option<Response> {
        let id = error.id().unwrap_or_else(MessageId::nil);
        if error.code() == ErrorCode::INVALID_PARAMS && error.pointer().starts_with("/params/token")
        {
            // Only session/hello has a token: a malformed token is a wrong token (SPEC/1.0 transport.md §7).
            // Its value is never quoted.
            if self.session.is_established() {
                return Some(Response::error(id, already_established()));
            }
            tracing::warn!("session/hello with a malformed token");
            self.session.close_with(CloseReason::AuthenticationFailed);
            return Some(Response::error(id, authentication_failed()));
        }
        Some(CodecError::Invalid { error, body }.to_response())
    }

    fn on_backlog_full(&mut self) -> Option<CloseReason> {
        // A peer that has not said hello gets nothing more than its answers: it does not read them, so it goes.
        (!self.session.is_established()).then(|| {
            tracing::info!("no session/hello and the answers are not read; closing");
            CloseReason::NotReading
        })
    }

    fn answers_bad_frames(&self) -> bool {
        true
    }

    fn poll_signal(&mut self, cx: &mut Context<'_>) -> Poll<Signal<CloseReason>> {
        self.signals.poll(cx)
    }

    fn on_read_end(&mut self) {
        self.hub.unsubscribe_all(self.session.subscription_state());
    }
}

impl Signals {
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Signal<CloseReason>> {
        if let Some(reason) = self.session.poll_close_requested(cx) {
            return Poll::Ready(Signal::StopReading(reason));
        }
        if self.shutdown.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Signal::StopReading(CloseReason::Shutdown));
        }
        if self.session.is_established() {
            self.hello_deadline = None;
            self.slot.established();
        } else if self.displaced.as_mut().poll(cx).is_ready() {
            tracing::info!(
                "no session/hello yet and the mod is full: making room for a new connection"
            );
            return Poll::Ready(Signal::End(CloseReason::Displaced));
        } else if let Some(deadline) = &mut self.hello_deadline {
            if deadline.as_mut().poll(cx).is_ready() {
                tracing::info!("no successful session/hello in time; closing");
                self.hello_deadline = None;
                // Nothing is owed to a peer that never said hello: no drain (SPEC/1.0 security.md §7).
                return Poll::Ready(Signal::End(CloseReason::HelloTimeout));
            }
        }
        Poll::Pending
    }
}
