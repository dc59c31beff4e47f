//! One subscription's bounded queue: the reader never waits for it.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::task::Waker;

use gabp_types::ChannelName;

use super::BridgeError;

use super::*;

/// A subscription's queue, shared between the router (producer) and the [`Subscription`] (consumer).
#[derive(Debug)]
pub(crate) struct SubQueue {
    pub(crate) inner: Mutex<QueueInner>,
}

#[derive(Debug)]
pub(crate) struct QueueInner {
    pub(crate) items: VecDeque<SubscriptionItem>,
    pub(crate) capacity: usize,
    /// Events dropped because the queue was full, per channel, not yet reported.
    pub(crate) dropped: Vec<(ChannelName, u64)>,
    pub(crate) end: End,
    pub(crate) waker: Option<Waker>,
    pub(crate) channels: Vec<String>,
}

#[derive(Debug)]
pub(crate) enum End {
    Open,
    Pending(BridgeError),
    Done,
}

impl SubQueue {
    pub(crate) fn new(capacity: usize, channels: Vec<String>) -> Self {
        SubQueue {
            inner: Mutex::new(QueueInner {
                items: VecDeque::new(),
                capacity: capacity.max(1),
                dropped: Vec::new(),
                end: End::Open,
                waker: None,
                channels,
            }),
        }
    }

    /// Queues an item without ever waiting; returns the waker to wake, if any.
    pub(crate) fn push(&self, item: SubscriptionItem) -> Option<Waker> {
        let mut q = self.inner.lock();
        if !matches!(q.end, End::Open) {
            return None;
        }
        match item {
            SubscriptionItem::Reconnected => {
                if q.items.back() != Some(&SubscriptionItem::Reconnected) {
                    q.flush_dropped();
                    q.items.push_back(SubscriptionItem::Reconnected);
                }
            }
            item if q.items.len() >= q.capacity => {
                let (channel, count) = match item {
                    SubscriptionItem::Event(e) => (e.channel, 1),
                    SubscriptionItem::Lagged { channel, missed } => (channel, missed),
                    SubscriptionItem::Reconnected => return None,
                };
                match q.dropped.iter_mut().find(|(c, _)| *c == channel) {
                    Some((_, n)) => *n = n.saturating_add(count),
                    None => q.dropped.push((channel, count)),
                }
            }
            item => {
                q.flush_dropped();
                q.items.push_back(item);
            }
        }
        q.waker.take()
    }

    pub(crate) fn close(&self, error: BridgeError) -> Option<Waker> {
        let mut q = self.inner.lock();
        if matches!(q.end, End::Open) {
            q.end = End::Pending(error);
        }
        q.waker.take()
    }

    pub(crate) fn channels(&self) -> Vec<String> {
        self.inner.lock().channels.clone()
    }

    pub(crate) fn remove_channel(&self, channel: &str) {
        self.inner.lock().channels.retain(|c| c != channel);
    }
}

impl QueueInner {
    pub(crate) fn flush_dropped(&mut self) {
        for (channel, missed) in self.dropped.drain(..) {
            self.items
                .push_back(SubscriptionItem::Lagged { channel, missed });
        }
    }
}

pub(crate) fn wake(waker: Option<Waker>) {
    if let Some(w) = waker {
        w.wake();
    }
}
