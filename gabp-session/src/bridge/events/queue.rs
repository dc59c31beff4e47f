//! One subscription's queue, bounded by items and by bytes (SPEC/1.0 security.md §7): the reader never waits
//! for it; what does not fit is counted and reported as lagged.

use parking_lot::Mutex;
use std::collections::VecDeque;
use std::task::Waker;

use gabp_types::ChannelName;

use super::item::SubscriptionItem;
use crate::Error;

/// A subscription's queue, shared between the router (producer) and the [`Subscription`](super::Subscription)
/// (consumer).
#[derive(Debug)]
pub(crate) struct SubQueue {
    pub(crate) inner: Mutex<QueueInner>,
}

#[derive(Debug)]
pub(crate) struct QueueInner {
    /// The items and the bytes each counts for.
    items: VecDeque<(SubscriptionItem, usize)>,
    pub(crate) capacity: usize,
    /// Bytes of the events queued (their frames' bodies), and their bound.
    bytes: usize,
    max_bytes: usize,
    /// Events dropped because the queue was full, per channel, not yet reported.
    pub(crate) dropped: Vec<(ChannelName, u64)>,
    pub(crate) end: End,
    pub(crate) waker: Option<Waker>,
    pub(crate) channels: Vec<String>,
}

#[derive(Debug)]
pub(crate) enum End {
    Open,
    Pending(Error),
    Done,
}

impl SubQueue {
    pub(crate) fn new(capacity: usize, max_bytes: usize, channels: Vec<String>) -> Self {
        SubQueue {
            inner: Mutex::new(QueueInner {
                items: VecDeque::new(),
                capacity: capacity.max(1),
                bytes: 0,
                max_bytes,
                dropped: Vec::new(),
                end: End::Open,
                waker: None,
                channels,
            }),
        }
    }

    /// Queues an item of `size` bytes without ever waiting; returns the waker to wake, if any.
    pub(crate) fn push(&self, item: SubscriptionItem, size: usize) -> Option<Waker> {
        let mut q = self.inner.lock();
        if !matches!(q.end, End::Open) {
            return None;
        }
        match item {
            SubscriptionItem::Reconnected => {
                if q.items.back().map(|(item, _)| item) != Some(&SubscriptionItem::Reconnected) {
                    q.flush_dropped();
                    q.push_back(SubscriptionItem::Reconnected, 0);
                }
            }
            item if q.items.len() >= q.capacity => q.count_dropped(item),
            SubscriptionItem::Event(event) => {
                // One event always fits in an empty queue, whatever its size.
                if q.bytes > 0 && q.bytes.saturating_add(size) > q.max_bytes {
                    q.count_dropped(SubscriptionItem::Event(event));
                } else {
                    q.flush_dropped();
                    q.push_back(SubscriptionItem::Event(event), size);
                }
            }
            item => {
                q.flush_dropped();
                q.push_back(item, 0);
            }
        }
        q.waker.take()
    }

    pub(crate) fn close(&self, error: Error) -> Option<Waker> {
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

    pub(crate) fn add_channel(&self, channel: &str) {
        let mut inner = self.inner.lock();
        if !inner.channels.iter().any(|c| c == channel) {
            inner.channels.push(channel.to_owned());
        }
    }
}

impl QueueInner {
    fn push_back(&mut self, item: SubscriptionItem, size: usize) {
        self.bytes += size;
        self.items.push_back((item, size));
    }

    pub(crate) fn pop_front(&mut self) -> Option<SubscriptionItem> {
        let (item, size) = self.items.pop_front()?;
        self.bytes -= size;
        Some(item)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    #[cfg(test)]
    pub(crate) fn items(&self) -> Vec<SubscriptionItem> {
        self.items.iter().map(|(item, _)| item.clone()).collect()
    }

    fn count_dropped(&mut self, item: SubscriptionItem) {
        let (channel, count) = match item {
            SubscriptionItem::Event(e) => (e.channel, 1),
            SubscriptionItem::Lagged { channel, missed } => (channel, missed),
            SubscriptionItem::Reconnected => return,
        };
        match self.dropped.iter_mut().find(|(c, _)| *c == channel) {
            Some((_, n)) => *n = n.saturating_add(count),
            None => self.dropped.push((channel, count)),
        }
    }

    pub(crate) fn flush_dropped(&mut self) {
        for (channel, missed) in std::mem::take(&mut self.dropped) {
            self.push_back(SubscriptionItem::Lagged { channel, missed }, 0);
        }
    }
}

pub(crate) fn wake(waker: Option<Waker>) {
    if let Some(w) = waker {
        w.wake();
    }
}
