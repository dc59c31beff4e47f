//! The connection driver: one task per connection, one reader and one writer, outgoing before incoming.
//!
//! The driver is a single poll loop over the two halves of the connection:
//!
//! 1. *Signals*: a close request from a service (goodbye, wrong token), server shutdown, or the hello
//!    deadline stop the reading side.
//! 2. *Finished requests* move from the in-flight set to the outgoing backlog (already serialized).
//! 3. *Writing*: the backlog (answers) first, then queued events, into the sink while it accepts frames;
//!    flushed when the burst is done. Frames are whole bodies, so they never interleave.
//! 4. *Reading*, only while the backlog is below its bound: one frame at a time. A request waits for the
//!    service to be ready (`poll_ready`, i.e. the concurrency limit) before `call`; its future is polled once
//!    in place (most handlers answer at once, and then no task is needed) and, if it has to wait, runs on its
//!    own task, so a slow handler never delays a fast one. Bad frames are answered once each (never a
//!    response or an event); a fatal framing error is answered `-32700` and ends reading.
//! 5. When reading has stopped and every request in flight is answered and written, the sink is closed.
//!
//! Every queue is bounded: in-flight requests by the concurrency limit, answers by the outgoing bound (plus
//! the requests in flight), events by the per-connection event queue (the publisher drops on overflow).

use std::collections::VecDeque;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures::{FutureExt, Sink, Stream};
use gabp_codec::MessageError;
use gabp_transport::{Connection, Frame, FrameError, FrameReader, FrameWriter};
use gabp_types::decode::{decode, DecodeError, DecodeMode};
use gabp_types::{ErrorCode, ErrorObject, Message, MessageId, MessageKind, Response};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;
use tower::Service;

use crate::cancel::Cancelled;

use super::events::EventHub;
use super::layer::auth::{already_established, authentication_failed};
use super::layer::ModService;
use super::session::{internal_error, CloseReason, Session};
use super::ServerRequest;

/// How many frames one poll of the driver handles before yielding to the runtime.
const FRAMES_PER_POLL: usize = 64;

pub(crate) struct DriverConfig {
    pub(crate) max_message_size: usize,
    pub(crate) outgoing_queue: usize,
    pub(crate) hello_timeout: Duration,
    /// How long answers in flight may take to be written once reading has stopped; past it the connection
    /// is closed anyway (a bridge that never reads cannot hold it open forever).
    pub(crate) drain_timeout: Duration,
}

pub(crate) struct Driver {
    reader: FrameReader,
    writer: FrameWriter,
    service: ModService,
    session: Session,
    events: mpsc::Receiver<Bytes>,
    hub: std::sync::Arc<EventHub>,
    shutdown: Cancelled,
    hello_deadline: Option<Pin<Box<Sleep>>>,
    drain_deadline: Option<Pin<Box<Sleep>>>,
    /// Requests in flight; each yields its serialized answer.
    tasks: JoinSet<Bytes>,
    /// Answers waiting for the sink, in order.
    backlog: VecDeque<Bytes>,
    /// A request read but waiting for the service to be ready.
    pending: Option<ServerRequest>,
    reading: bool,
    events_open: bool,
    unflushed: bool,
    reason: Option<CloseReason>,
    config: DriverConfig,
}

impl Driver {
    pub(crate) fn new(
        connection: Connection,
        service: ModService,
        session: Session,
        events: mpsc::Receiver<Bytes>,
        hub: std::sync::Arc<EventHub>,
        shutdown: CancellationToken,
        config: DriverConfig,
    ) -> Self {
        let (reader, writer) = connection.into_split();
        Driver {
            reader,
            writer,
            service,
            session,
            events,
            hub,
            shutdown: Cancelled::new(shutdown),
            hello_deadline: Some(Box::pin(tokio::time::sleep(config.hello_timeout))),
            drain_deadline: None,
            tasks: JoinSet::new(),
            backlog: VecDeque::new(),
            pending: None,
            reading: true,
            events_open: true,
            unflushed: false,
            reason: None,
            config,
        }
    }

    /// Drives the connection until it closes; says why.
    pub(crate) async fn run(mut self) -> CloseReason {
        tracing::debug!("connection opened");
        let reason = futures::future::poll_fn(|cx| self.poll_drive(cx)).await;
        self.hub.unsubscribe_all(self.session.subscription_state());
        tracing::debug!(%reason, "connection closed");
        reason
    }

    fn poll_drive(&mut self, cx: &mut Context<'_>) -> Poll<CloseReason> {
        let mut budget = FRAMES_PER_POLL;
        loop {
            if self.reading {
                self.poll_signals(cx);
            }
            while let Poll::Ready(Some(done)) = self.tasks.poll_join_next(cx) {
                match done {
                    Ok(answer) => self.backlog.push_back(answer),
                    Err(e) => tracing::error!(error = %e, "a request task failed"),
                }
            }
            if let Err(e) = self.poll_write(cx) {
                tracing::debug!(error = %e, "writing to the bridge failed");
                return Poll::Ready(CloseReason::Io(e.to_string()));
            }
            if (self.reading || self.pending.is_some()) && self.poll_read(cx) {
                budget -= 1;
                if budget == 0 {
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                continue;
            }
            let drained = !self.reading
                && self.pending.is_none()
                && self.tasks.is_empty()
                && self.backlog.is_empty()
                && !self.unflushed;
            if drained && Pin::new(&mut self.writer).poll_close(cx).is_ready() {
                return Poll::Ready(self.reason.take().unwrap_or(CloseReason::Eof));
            }
            if let Some(deadline) = &mut self.drain_deadline {
                if deadline.as_mut().poll(cx).is_ready() {
                    tracing::warn!(
                        in_flight = self.tasks.len(),
                        unwritten = self.backlog.len(),
                        "answers not delivered in time after reading stopped; closing anyway"
                    );
                    self.tasks.abort_all();
                    return Poll::Ready(self.reason.take().unwrap_or(CloseReason::Eof));
                }
            }
            return Poll::Pending;
        }
    }

    /// Stops reading on a close request, shutdown, or a missed hello deadline.
    fn poll_signals(&mut self, cx: &mut Context<'_>) {
        if let Some(reason) = self.session.poll_close_requested(cx) {
            self.stop_reading(reason);
            return;
        }
        if Pin::new(&mut self.shutdown).poll(cx).is_ready() {
            self.stop_reading(CloseReason::Shutdown);
            return;
        }
        if self.session.is_established() {
            self.hello_deadline = None;
        } else if let Some(deadline) = &mut self.hello_deadline {
            if deadline.as_mut().poll(cx).is_ready() {
                tracing::info!("no successful session/hello in time; closing");
                self.stop_reading(CloseReason::HelloTimeout);
            }
        }
    }

    fn stop_reading(&mut self, reason: CloseReason) {
        if !self.reading {
            return;
        }
        self.reading = false;
        self.events_open = false;
        self.hello_deadline = None;
        self.drain_deadline = Some(Box::pin(tokio::time::sleep(self.config.drain_timeout)));
        self.hub.unsubscribe_all(self.session.subscription_state());
        self.reason.get_or_insert(reason);
    }

    /// Moves answers, then events, into the sink while it accepts them; flushes.
    fn poll_write(&mut self, cx: &mut Context<'_>) -> Result<(), FrameError> {
        while !self.backlog.is_empty() || self.events_open {
            match Pin::new(&mut self.writer).poll_ready(cx) {
                Poll::Pending => break,
                Poll::Ready(result) => result?,
            }
            let body = match self.backlog.pop_front() {
                Some(body) => body,
                None => match self.events.poll_recv(cx) {
                    Poll::Ready(Some(body)) => body,
                    Poll::Ready(None) => {
                        self.events_open = false;
                        break;
                    }
                    Poll::Pending => break,
                },
            };
            Pin::new(&mut self.writer).start_send(body)?;
            self.unflushed = true;
        }
        if self.unflushed {
            if let Poll::Ready(result) = Pin::new(&mut self.writer).poll_flush(cx) {
                result?;
                self.unflushed = false;
            }
        }
        Ok(())
    }

    /// Reads and handles at most one frame (or dispatches the pending request). `true` if it did something.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> bool {
        if let Some(req) = self.pending.take() {
            match self.service.poll_ready(cx) {
                Poll::Pending => {
                    self.pending = Some(req);
                    return false;
                }
                Poll::Ready(Ok(())) => {
                    self.dispatch(req);
                    return true;
                }
                Poll::Ready(Err(never)) => match never {},
            }
        }
        if !self.reading || self.backlog.len() >= self.config.outgoing_queue {
            return false;
        }
        match Pin::new(&mut self.reader).poll_next(cx) {
            Poll::Pending => false,
            Poll::Ready(None) => {
                tracing::debug!("the bridge closed the stream");
                self.stop_reading(CloseReason::Eof);
                true
            }
            Poll::Ready(Some(Err(FrameError::Io(e)))) => {
                tracing::debug!(error = %e, "reading from the bridge failed");
                self.stop_reading(CloseReason::Io(e.to_string()));
                true
            }
            Poll::Ready(Some(Err(e))) => {
                tracing::warn!(error = %e, "fatal framing error; answering -32700 and closing");
                let answer = Response::error(
                    MessageId::nil(),
                    ErrorObject::new(ErrorCode::PARSE_ERROR, format!("unreadable frame: {e}")),
                );
                self.push_answer(answer);
                self.stop_reading(CloseReason::Framing(e.to_string()));
                true
            }
            Poll::Ready(Some(Ok(frame))) => {
                self.on_frame(frame);
                true
            }
        }
    }

    fn on_frame(&mut self, frame: Frame) {
        let body = match frame {
            Frame::Body(body) => body,
            Frame::Oversized { declared, limit } => {
                tracing::debug!(declared, limit, "oversized frame skipped");
                let answer = MessageError::Oversized { declared, limit }.to_response();
                self.push_answer(answer);
                return;
            }
        };
        match decode(&body, DecodeMode::Lenient) {
            Ok(Message::Request(request)) => {
                self.pending = Some(ServerRequest::new(request, self.session.clone()));
            }
            Ok(Message::Response(response)) => {
                tracing::debug!(id = %response.id, "ignoring a response (the mod sends no requests)");
            }
            Ok(Message::Event(event)) => {
                tracing::debug!(channel = %event.channel, "ignoring an event from the bridge");
            }
            Err(error) => self.on_invalid(body, error),
        }
    }

    /// Answers a frame that is not a usable message, once, unless it is a response or an event (never
    /// answered, so two peers can never bounce error replies at each other).
    fn on_invalid(&mut self, body: Bytes, error: DecodeError) {
        if let Some(kind @ (MessageKind::Response | MessageKind::Event)) = error.kind() {
            tracing::debug!(
                code = error.code().0,
                pointer = error.pointer(),
                "ignoring an invalid {}",
                kind.as_str()
            );
            return;
        }
        tracing::debug!(
            code = error.code().0,
            pointer = error.pointer(),
            "invalid message"
        );
        let id = error.id().unwrap_or_else(MessageId::nil);
        if error.code() == ErrorCode::INVALID_PARAMS && error.pointer().starts_with("/params/token")
        {
            // Only session/hello has a token: a malformed token is a wrong token. Its value is never quoted.
            if self.session.is_established() {
                self.push_answer(Response::error(id, already_established()));
            } else {
                tracing::warn!("session/hello with a malformed token");
                self.push_answer(Response::error(id, authentication_failed()));
                self.session.close_with(CloseReason::AuthenticationFailed);
            }
            return;
        }
        self.push_answer(MessageError::Invalid { error, body }.to_response());
    }

    fn push_answer(&mut self, response: Response) {
        self.backlog
            .push_back(encode(response, self.config.max_message_size));
    }

    fn dispatch(&mut self, req: ServerRequest) {
        let id = req.id();
        let mut future = self.service.call(req);
        let max = self.config.max_message_size;
        // Most handlers answer without ever waiting (a query of the game's state, an echo): poll once here, and
        // only a request that has to wait gets a task of its own. A waiting request is handed to its task, whose
        // first poll registers the task's waker, so nothing is lost by polling it here with a no-op one.
        let mut cx = Context::from_waker(std::task::Waker::noop());
        match std::panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut cx))) {
            Ok(Poll::Ready(Ok(response))) => {
                self.backlog.push_back(encode(response, max));
                return;
            }
            Ok(Poll::Ready(Err(never))) => match never {},
            Ok(Poll::Pending) => {}
            Err(_) => {
                let answer =
                    Response::error(id, internal_error("internal error: the request panicked"));
                self.backlog.push_back(encode(answer, max));
                return;
            }
        }
        self.tasks.spawn(async move {
            let response = match AssertUnwindSafe(future).catch_unwind().await {
                Ok(Ok(response)) => response,
                Ok(Err(never)) => match never {},
                Err(_) => {
                    Response::error(id, internal_error("internal error: the request panicked"))
                }
            };
            encode(response, max)
        });
    }
}

/// Serializes an answer; one over the size limit is replaced by a `-32603` error with the same id.
fn encode(response: Response, max: usize) -> Bytes {
    let id = response.id;
    let body = Message::Response(response).to_vec();
    if body.len() <= max {
        return Bytes::from(body);
    }
    tracing::warn!(len = body.len(), max, "an answer exceeds maxMessageSize");
    let error = internal_error(format!(
        "the answer of {} bytes exceeds the maximum message size of {max} bytes",
        body.len()
    ))
    .with_data(serde_json::json!({ "maxMessageSize": max }));
    Bytes::from(Message::Response(Response::error(id, error)).to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn oversized_answers_become_errors() {
        let big = Response::success(MessageId::nil(), Value::String("x".repeat(5000)));
        let body = encode(big, 2048);
        let Message::Response(r) = decode(&body, DecodeMode::Strict).unwrap() else {
            panic!()
        };
        assert_eq!(r.error_object().unwrap().code, ErrorCode::INTERNAL_ERROR);
        assert!(body.len() <= 2048);
    }
}
