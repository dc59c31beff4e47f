//! The bridge's side of a connection: its [`Role`] in the connection engine (SPEC/1.0 gabp.md §2).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use gabp_types::decode::DecodeError;
use gabp_types::Response;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::WaitForCancellationFutureOwned;

use crate::engine::{Ended, Engine, Role, Signal};

use super::link::Link;
use super::shared::Shared;
use super::state::DisconnectReason;

/// Runs a connection's engine; when it ends, the connection is shut and refuses new calls.
pub(super) async fn run_engine(engine: Engine<BridgeRole>, link: Arc<Link>) {
    let reason = match engine.run().await {
        Ended::Eof => DisconnectReason::PeerClosed,
        Ended::Io(e) => DisconnectReason::Transport(e),
        Ended::Framing(fault) => DisconnectReason::Framing(fault),
        Ended::Signal(reason) => reason,
    };
    link.shut(reason);
    link.fail_all();
}

/// How long a graceful close waits for the mod to close its side after we closed ours.
pub(super) const CLOSE_GRACE: Duration = Duration::from_millis(500);

/// The bridge's side of a connection: its [`Role`] in the connection engine (SPEC/1.0 gabp.md §2). A bridge
/// routes events to its subscriptions, answers nothing (neither a mod's request nor a bad frame: SPEC/1.0
/// gabp.md §8), and ends when its link is shut.
pub(super) struct BridgeRole {
    pub(super) link: Arc<Link>,
    pub(super) shared: Arc<Shared>,
    signals: Signals,
}

/// What makes a bridge's connection act on its own: its link shut, a graceful close, and the reorder deadline of
/// held-back events (SPEC/1.0 gabp.md §6).
struct Signals {
    link: Arc<Link>,
    shared: Arc<Shared>,
    killed: Pin<Box<WaitForCancellationFutureOwned>>,
    closing: Pin<Box<WaitForCancellationFutureOwned>>,
    closing_sent: bool,
    /// When the oldest event held back for reordering is due.
    reorder: Option<Pin<Box<Sleep>>>,
}

impl BridgeRole {
    pub(super) fn new(link: Arc<Link>, shared: Arc<Shared>) -> Self {
        BridgeRole {
            signals: Signals {
                killed: Box::pin(link.kill.clone().cancelled_owned()),
                closing: Box::pin(link.close_writes.clone().cancelled_owned()),
                closing_sent: false,
                reorder: None,
                link: link.clone(),
                shared: shared.clone(),
            },
            link,
            shared,
        }
    }
}

impl Signals {
    fn set_reorder(&mut self, deadline: Option<Instant>) {
        match (deadline, &mut self.reorder) {
            (None, _) => self.reorder = None,
            (Some(at), Some(sleep)) => sleep.as_mut().reset(at),
            (Some(at), None) => self.reorder = Some(Box::pin(tokio::time::sleep_until(at))),
        }
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Signal<DisconnectReason>> {
        if self.killed.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Signal::End(self.link.reason()));
        }
        if !self.closing_sent && self.closing.as_mut().poll(cx).is_ready() {
            self.closing_sent = true;
            return Poll::Ready(Signal::CloseWrites);
        }
        // Events held back past their deadline go out; the next deadline is polled at once, so that it
        // registers.
        while let Some(reorder) = &mut self.reorder {
            if reorder.as_mut().poll(cx).is_pending() {
                break;
            }
            let deadline = {
                let mut router = self.shared.router.lock();
                router.release_expired(Instant::now());
                router.next_deadline()
            };
            self.set_reorder(deadline);
        }
        Poll::Pending
    }
}

impl Role for BridgeRole {
    type Reason = DisconnectReason;
    /// A bridge answers nothing.
    type Answer = std::future::Ready<Result<gabp_types::Response, std::convert::Infallible>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<()> {
        Poll::Ready(())
    }

    fn call(&mut self, request: gabp_types::Request) -> Option<Self::Answer> {
        // SPEC/1.0 gabp.md §2, §8: a mod sends no requests, and a bridge never answers anything.
        tracing::debug!(method = %request.method, "the mod sent a request; a bridge answers nothing");
        None
    }

    fn on_event(&mut self, event: gabp_types::Event, size: usize) {
        // SPEC/1.0 extensions.md §progress: progress goes to its call, not to subscriptions.
        if event.channel.as_str() == gabp_types::methods::PROGRESS_CHANNEL {
            self.shared.progress.deliver(event.payload);
            return;
        }
        // SPEC/1.0 extensions.md §tools-changed: the cached list is stale before anyone sees the event.
        if event.channel.as_str() == gabp_types::methods::TOOLS_CHANGED_CHANNEL {
            self.shared.tools.invalidate();
        }
        let deadline = {
            let mut router = self.shared.router.lock();
            router.dispatch(event, size, Instant::now());
            router.next_deadline()
        };
        self.signals.set_reorder(deadline);
    }

    fn on_invalid(&mut self, _body: Bytes, error: DecodeError) -> Option<Response> {
        tracing::debug!(%error, "dropping an invalid frame");
        None
    }

    fn answers_bad_frames(&self) -> bool {
        false
    }

    fn poll_signal(&mut self, cx: &mut Context<'_>) -> Poll<Signal<DisconnectReason>> {
        self.signals.poll(cx)
    }

    fn on_frame(&mut self) {
        // Only the keepalive reads when the mod last spoke: without one, no clock is read per frame.
        if self.link.settings.keepalive.is_some() {
            self.link.touch();
        }
    }

    fn on_framing(&mut self, fault: &gabp_transport::FrameFault) {
        // Before the pending calls fail, so that they fail with the fault (Error::Framing).
        self.link.note(DisconnectReason::Framing(fault.clone()));
    }
}
