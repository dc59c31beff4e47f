//! Event subscriptions: [`Subscription`], [`SubscriptionItem`], and the per-connection router that puts events
//! in `seq` order.
//!
//! # Ordering policy
//!
//! `seq` is per channel, mod-wide and contiguous (SPEC/1.0 gabp.md §6). The router keeps, per channel, the next `seq` it
//! expects; the first event seen on a channel after subscribing (or after a reconnect) sets it, whatever its
//! value (a mod may start at 1, and a subscriber joins mid-stream). Then:
//!
//! - the expected event is delivered at once, followed by any held events it makes contiguous;
//! - an event *ahead* of the expected one is held back, in a buffer bounded by the reorder capacity and the
//!   subscription's bytes, for at most the reorder window. If the missing events arrive meanwhile, everything is
//!   delivered in `seq` order (a mod that writes events out of order, as GABS's peers may, loses nothing). When the
//!   window expires or the buffer is full, the gap is given up: a [`SubscriptionItem::Lagged`] item says how many
//!   events are missing, then the held events follow in order. A zero window reports every gap at once;
//! - an event *behind* the expected one (a duplicate, or one already reported missing by `Lagged`) is
//!   dropped, with a `debug` log.
//!
//! So a subscriber sees each channel's events in strictly increasing `seq` order, and every hole in the
//! sequence is either filled or reported; nothing is reordered and nothing is skipped silently.
//!
//! Each subscription has its own bounded queue. The connection's reader never waits for a subscriber: when a
//! queue is full, further events for it are counted and dropped, and the subscriber sees a `Lagged` item with
//! the count when it catches up.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use gabp_types::{ChannelName, Event};

use crate::bridge::shared::Shared;
use crate::Error;

mod order;
mod queue;
mod router;

pub(crate) use order::*;
pub(crate) use queue::*;
pub(crate) use router::*;

/// One item of a [`Subscription`] stream.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SubscriptionItem {
    /// An event, in `seq` order for its channel.
    Event(Event),
    /// `missed` events of `channel` will never arrive: the mod dropped them (a gap in `seq`), or this
    /// subscription's queue was full. The next event of the channel follows the gap.
    Lagged {
        /// The channel that lost events.
        channel: ChannelName,
        /// How many.
        missed: u64,
    },
    /// The connection was lost and re-established, and the subscriptions were restored. Events published
    /// while disconnected are lost, and the `seq` of each channel is tracked afresh (a restarted mod counts
    /// from 0 again).
    Reconnected,
}

/// A stream of the events of some channels, from
/// [`Bridge::subscribe`](crate::bridge::Bridge::subscribe).
///
/// Items are [`SubscriptionItem`]s: events in `seq` order per channel, [`SubscriptionItem::Lagged`] where events
/// were lost, [`SubscriptionItem::Reconnected`] after a reconnect. When the connection ends for good the stream
/// yields the items already received, then one `Err` ([`Error::Disconnected`] or
/// [`Error::Closed`]), then ends. See the [module documentation](self) for the ordering policy.
///
/// Dropping a subscription unsubscribes: channels no other subscription of this bridge listens to are
/// unsubscribed from the mod in the background. [`Subscription::unsubscribe`] does the same and waits for the
/// mod's answer.
pub struct Subscription {
    id: u64,
    queue: Arc<SubQueue>,
    shared: Option<Arc<Shared>>,
}

impl Subscription {
    pub(crate) fn new(id: u64, queue: Arc<SubQueue>, shared: Arc<Shared>) -> Self {
        Subscription {
            id,
            queue,
            shared: Some(shared),
        }
    }

    /// Forgets the bridge, so that dropping does not unsubscribe (the caller undoes the registration).
    pub(crate) fn detach(&mut self) {
        self.shared = None;
    }

    /// The channels this subscription receives: those the mod granted (unknown channels are left out by
    /// the mod). Before the first handshake, or while reconnecting, the channels asked for.
    pub fn channels(&self) -> Vec<String> {
        self.queue.channels()
    }

    /// Unsubscribes now and waits for the mod's answer (channels other subscriptions of this bridge still
    /// listen to stay subscribed).
    ///
    /// # Errors
    ///
    /// As any call; the subscription is gone locally whatever the outcome.
    pub async fn unsubscribe(mut self) -> Result<(), Error> {
        match self.shared.take() {
            Some(shared) => shared.unsubscribe(self.id).await,
            None => Ok(()),
        }
    }
}

impl std::fmt::Debug for Subscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscription")
            .field("id", &self.id)
            .field("channels", &self.queue.channels())
            .finish_non_exhaustive()
    }
}

impl Stream for Subscription {
    type Item = Result<SubscriptionItem, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut q = self.queue.inner.lock();
        if let Some(item) = q.pop_front() {
            return Poll::Ready(Some(Ok(item)));
        }
        if !q.dropped.is_empty() {
            q.flush_dropped();
            if let Some(item) = q.pop_front() {
                return Poll::Ready(Some(Ok(item)));
            }
        }
        match std::mem::replace(&mut q.end, End::Done) {
            End::Pending(error) => Poll::Ready(Some(Err(error))),
            End::Done => Poll::Ready(None),
            End::Open => {
                q.end = End::Open;
                if !q.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                    q.waker = Some(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.take() {
            shared.unsubscribe_in_background(self.id);
        }
    }
}

#[cfg(test)]
mod tests;
