//! Event subscriptions: [`Subscription`], [`SubscriptionItem`], and the per-connection router that puts events
//! in `seq` order.
//!
//! # Ordering policy
//!
//! `seq` is per channel, mod-wide and contiguous (DESIGN 3.2). The router keeps, per channel, the next `seq` it
//! expects; the first event seen on a channel after subscribing (or after a reconnect) sets it, whatever its
//! value (a mod may start at 1, and a subscriber joins mid-stream). Then:
//!
//! - the expected event is delivered at once, followed by any held events it makes contiguous;
//! - an event *ahead* of the expected one is held back, in a buffer bounded by the reorder capacity, for at
//!   most the reorder window. If the missing events arrive meanwhile, everything is delivered in `seq` order
//!   (a mod that writes events out of order, as GABS's peers may, loses nothing). When the window expires or
//!   the buffer is full, the gap is given up: a [`SubscriptionItem::Lagged`] item says how many events are
//!   missing, then the held events follow in order. A zero window reports every gap at once;
//! - an event *behind* the expected one (a duplicate, or one already reported missing by `Lagged`) is
//!   dropped, with a `debug` log.
//!
//! So a subscriber sees each channel's events in strictly increasing `seq` order, and every hole in the
//! sequence is either filled or reported; nothing is reordered and nothing is skipped silently.
//!
//! Each subscription has its own bounded queue. The connection's reader never waits for a subscriber: when a
//! queue is full, further events for it are counted and dropped, and the subscriber sees a `Lagged` item with
//! the count when it catches up.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::Stream;
use gabp_types::{ChannelName, Event};
use tokio::time::Instant;

use super::link::lock;
use super::shared::Shared;
use super::BridgeError;

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

/// Reorder settings shared by the channels of one bridge.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reorder {
    pub(crate) window: Duration,
    pub(crate) capacity: usize,
}

/// `seq` tracking of one channel on one connection.
#[derive(Debug, Default)]
struct SeqOrder {
    next: Option<u64>,
    held: BTreeMap<u64, Event>,
    since: Option<Instant>,
}

impl SeqOrder {
    fn accept(
        &mut self,
        event: Event,
        now: Instant,
        cfg: Reorder,
        out: &mut Vec<SubscriptionItem>,
    ) {
        let seq = event.seq;
        match self.next {
            None => {
                self.next = Some(seq.saturating_add(1));
                out.push(SubscriptionItem::Event(event));
            }
            Some(next) if seq < next => {
                tracing::debug!(channel = %event.channel, seq, expected = next,
                    "dropping a duplicate or stale event");
            }
            Some(next) if seq == next => {
                self.next = Some(seq.saturating_add(1));
                out.push(SubscriptionItem::Event(event));
                self.drain_contiguous(out);
            }
            Some(_) => {
                if self.held.contains_key(&seq) {
                    tracing::debug!(channel = %event.channel, seq, "dropping a duplicate event");
                    return;
                }
                self.held.insert(seq, event);
                if self.since.is_none() {
                    self.since = Some(now);
                }
                if cfg.window.is_zero() {
                    self.release_all(out);
                } else {
                    while self.held.len() > cfg.capacity {
                        self.release_first_gap(out);
                    }
                    if self.held.is_empty() {
                        self.since = None;
                    }
                }
            }
        }
    }

    /// Delivers held events that are now contiguous.
    fn drain_contiguous(&mut self, out: &mut Vec<SubscriptionItem>) {
        while let Some(next) = self.next {
            match self.held.remove(&next) {
                Some(event) => {
                    self.next = Some(next.saturating_add(1));
                    out.push(SubscriptionItem::Event(event));
                }
                None => break,
            }
        }
        if self.held.is_empty() {
            self.since = None;
        }
    }

    /// Gives up the first gap: reports it, then delivers what becomes contiguous.
    fn release_first_gap(&mut self, out: &mut Vec<SubscriptionItem>) {
        let Some((&first, event)) = self.held.iter().next() else {
            return;
        };
        let next = self.next.unwrap_or(first);
        if first > next {
            out.push(SubscriptionItem::Lagged {
                channel: event.channel.clone(),
                missed: first - next,
            });
        }
        self.next = Some(first);
        self.drain_contiguous(out);
    }

    fn release_all(&mut self, out: &mut Vec<SubscriptionItem>) {
        while !self.held.is_empty() {
            self.release_first_gap(out);
        }
        self.since = None;
    }

    fn deadline(&self, cfg: Reorder) -> Option<Instant> {
        self.since.map(|since| since + cfg.window)
    }

    fn release_expired(&mut self, now: Instant, cfg: Reorder, out: &mut Vec<SubscriptionItem>) {
        if self.deadline(cfg).is_some_and(|d| d <= now) {
            self.release_first_gap(out);
            // Whatever is still held waits a fresh window for its own gap.
            if !self.held.is_empty() {
                self.since = Some(now);
            }
        }
    }
}

/// A subscription's queue, shared between the router (producer) and the [`Subscription`] (consumer).
#[derive(Debug)]
pub(crate) struct SubQueue {
    inner: Mutex<QueueInner>,
}

#[derive(Debug)]
struct QueueInner {
    items: VecDeque<SubscriptionItem>,
    capacity: usize,
    /// Events dropped because the queue was full, per channel, not yet reported.
    dropped: Vec<(ChannelName, u64)>,
    end: End,
    waker: Option<Waker>,
    channels: Vec<String>,
}

#[derive(Debug)]
enum End {
    Open,
    Pending(BridgeError),
    Done,
}

impl SubQueue {
    fn new(capacity: usize, channels: Vec<String>) -> Self {
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
    fn push(&self, item: SubscriptionItem) -> Option<Waker> {
        let mut q = lock(&self.inner);
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

    fn close(&self, error: BridgeError) -> Option<Waker> {
        let mut q = lock(&self.inner);
        if matches!(q.end, End::Open) {
            q.end = End::Pending(error);
        }
        q.waker.take()
    }

    fn channels(&self) -> Vec<String> {
        lock(&self.inner).channels.clone()
    }

    fn remove_channel(&self, channel: &str) {
        lock(&self.inner).channels.retain(|c| c != channel);
    }
}

impl QueueInner {
    fn flush_dropped(&mut self) {
        for (channel, missed) in self.dropped.drain(..) {
            self.items
                .push_back(SubscriptionItem::Lagged { channel, missed });
        }
    }
}

fn wake(waker: Option<Waker>) {
    if let Some(w) = waker {
        w.wake();
    }
}

#[derive(Debug, Default)]
struct ChannelRoute {
    subscribers: Vec<u64>,
    order: SeqOrder,
}

/// Routes the events of a bridge to its subscriptions, in `seq` order per channel.
#[derive(Debug)]
pub(crate) struct Router {
    next_id: u64,
    subs: HashMap<u64, Arc<SubQueue>>,
    channels: HashMap<String, ChannelRoute>,
    reorder: Reorder,
    scratch: Vec<SubscriptionItem>,
}

impl Router {
    pub(crate) fn new(reorder: Reorder) -> Self {
        Router {
            next_id: 0,
            subs: HashMap::new(),
            channels: HashMap::new(),
            reorder,
            scratch: Vec::new(),
        }
    }

    pub(crate) fn set_reorder(&mut self, reorder: Reorder) {
        self.reorder = reorder;
    }

    /// Registers a subscription to `channels` (deduplicated by the caller).
    pub(crate) fn add(&mut self, channels: Vec<String>, capacity: usize) -> (u64, Arc<SubQueue>) {
        self.next_id += 1;
        let id = self.next_id;
        for channel in &channels {
            self.channels
                .entry(channel.clone())
                .or_default()
                .subscribers
                .push(id);
        }
        let queue = Arc::new(SubQueue::new(capacity, channels));
        self.subs.insert(id, queue.clone());
        (id, queue)
    }

    /// Removes a subscription; returns the channels nobody subscribes to any more.
    pub(crate) fn remove(&mut self, id: u64) -> Vec<String> {
        let Some(queue) = self.subs.remove(&id) else {
            return Vec::new();
        };
        let mut emptied = Vec::new();
        for channel in queue.channels() {
            if let Some(route) = self.channels.get_mut(&channel) {
                route.subscribers.retain(|s| *s != id);
                if route.subscribers.is_empty() {
                    self.channels.remove(&channel);
                    emptied.push(channel);
                }
            }
        }
        emptied
    }

    /// Drops from subscription `id` the channels the mod did not grant.
    pub(crate) fn retain_granted(&mut self, id: u64, granted: &HashSet<&str>) {
        let Some(queue) = self.subs.get(&id).cloned() else {
            return;
        };
        for channel in queue.channels() {
            if granted.contains(channel.as_str()) {
                continue;
            }
            queue.remove_channel(&channel);
            if let Some(route) = self.channels.get_mut(&channel) {
                route.subscribers.retain(|s| *s != id);
                if route.subscribers.is_empty() {
                    self.channels.remove(&channel);
                }
            }
        }
    }

    /// Drops, from every subscription, the channels not in `granted` (after restoring on a reconnect).
    pub(crate) fn retain_granted_all(&mut self, granted: &HashSet<&str>) {
        let lost: Vec<String> = self
            .channels
            .keys()
            .filter(|c| !granted.contains(c.as_str()))
            .cloned()
            .collect();
        for channel in lost {
            tracing::warn!(%channel, "the mod no longer offers this channel; dropped from subscriptions");
            if let Some(route) = self.channels.remove(&channel) {
                for id in route.subscribers {
                    if let Some(queue) = self.subs.get(&id) {
                        queue.remove_channel(&channel);
                    }
                }
            }
        }
    }

    /// Every channel some subscription listens to.
    pub(crate) fn channels(&self) -> Vec<String> {
        let mut all: Vec<String> = self.channels.keys().cloned().collect();
        all.sort();
        all
    }

    /// Routes one event.
    pub(crate) fn dispatch(&mut self, event: Event, now: Instant) {
        let reorder = self.reorder;
        let Some(route) = self.channels.get_mut(event.channel.as_str()) else {
            tracing::trace!(channel = %event.channel, "event for a channel nobody subscribes to");
            return;
        };
        let mut out = std::mem::take(&mut self.scratch);
        route.order.accept(event, now, reorder, &mut out);
        Self::deliver(&self.subs, &route.subscribers, &mut out);
        self.scratch = out;
    }

    fn deliver(subs: &HashMap<u64, Arc<SubQueue>>, to: &[u64], out: &mut Vec<SubscriptionItem>) {
        for item in out.drain(..) {
            if let [only] = to {
                if let Some(queue) = subs.get(only) {
                    wake(queue.push(item));
                }
                continue;
            }
            for id in to {
                if let Some(queue) = subs.get(id) {
                    wake(queue.push(item.clone()));
                }
            }
        }
    }

    /// When the earliest held-back event's window expires.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        self.channels
            .values()
            .filter_map(|r| r.order.deadline(self.reorder))
            .min()
    }

    /// Gives up the gaps whose window expired.
    pub(crate) fn release_expired(&mut self, now: Instant) {
        let reorder = self.reorder;
        let mut out = std::mem::take(&mut self.scratch);
        for route in self.channels.values_mut() {
            route.order.release_expired(now, reorder, &mut out);
            Self::deliver(&self.subs, &route.subscribers, &mut out);
        }
        self.scratch = out;
    }

    /// At the end of a connection: delivers what is held back (reporting its gaps) and forgets every
    /// channel's `seq`, since the next connection may count afresh.
    pub(crate) fn reset_order(&mut self) {
        let mut out = std::mem::take(&mut self.scratch);
        for route in self.channels.values_mut() {
            route.order.release_all(&mut out);
            route.order = SeqOrder::default();
            Self::deliver(&self.subs, &route.subscribers, &mut out);
        }
        self.scratch = out;
    }

    /// Tells every subscription that the connection was re-established.
    pub(crate) fn mark_reconnected(&self) {
        for queue in self.subs.values() {
            wake(queue.push(SubscriptionItem::Reconnected));
        }
    }

    /// Ends every subscription with an error item (after the items already queued).
    pub(crate) fn close_all(&mut self, error: impl Fn() -> BridgeError) {
        for queue in self.subs.values() {
            wake(queue.close(error()));
        }
        self.subs.clear();
        self.channels.clear();
    }
}

/// A stream of the events of some channels, from
/// [`Bridge::subscribe`](crate::bridge::Bridge::subscribe).
///
/// Items are [`SubscriptionItem`]s: events in `seq` order per channel, [`SubscriptionItem::Lagged`] where events
/// were lost, [`SubscriptionItem::Reconnected`] after a reconnect. When the connection ends for good the stream
/// yields the items already received, then one `Err` ([`BridgeError::Disconnected`] or
/// [`BridgeError::Closed`]), then ends. See the [module documentation](self) for the ordering policy.
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
    pub async fn unsubscribe(mut self) -> Result<(), BridgeError> {
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
    type Item = Result<SubscriptionItem, BridgeError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let mut q = lock(&self.queue.inner);
        if let Some(item) = q.items.pop_front() {
            return Poll::Ready(Some(Ok(item)));
        }
        if !q.dropped.is_empty() {
            q.flush_dropped();
            if let Some(item) = q.items.pop_front() {
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
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(channel: &str, seq: u64) -> Event {
        Event::new(
            ChannelName::new_lenient(channel).unwrap(),
            seq,
            json!({ "seq": seq }),
        )
    }

    fn cfg(window_ms: u64, capacity: usize) -> Reorder {
        Reorder {
            window: Duration::from_millis(window_ms),
            capacity,
        }
    }

    fn describe(items: &[SubscriptionItem]) -> Vec<String> {
        items
            .iter()
            .map(|i| match i {
                SubscriptionItem::Event(e) => format!("{}", e.seq),
                SubscriptionItem::Lagged { missed, .. } => format!("lag{missed}"),
                SubscriptionItem::Reconnected => "reconnected".into(),
            })
            .collect()
    }

    fn run(order: &mut SeqOrder, seqs: &[u64], c: Reorder) -> Vec<String> {
        let now = Instant::now();
        let mut out = Vec::new();
        for &s in seqs {
            order.accept(ev("a/b", s), now, c, &mut out);
        }
        describe(&out)
    }

    #[test]
    fn in_order_and_baseline() {
        let mut o = SeqOrder::default();
        assert_eq!(run(&mut o, &[1, 2, 3], cfg(50, 8)), ["1", "2", "3"]);
    }

    #[test]
    fn reorders_within_the_window() {
        let mut o = SeqOrder::default();
        assert_eq!(
            run(&mut o, &[0, 2, 3, 1, 4], cfg(50, 8)),
            ["0", "1", "2", "3", "4"]
        );
        assert!(o.held.is_empty() && o.since.is_none());
    }

    #[test]
    fn duplicates_and_stale_events_are_dropped() {
        let mut o = SeqOrder::default();
        assert_eq!(
            run(&mut o, &[0, 1, 1, 0, 3, 3, 2], cfg(50, 8)),
            ["0", "1", "2", "3"]
        );
    }

    #[test]
    fn zero_window_reports_gaps_at_once() {
        let mut o = SeqOrder::default();
        assert_eq!(
            run(&mut o, &[0, 3, 1, 4, 7], cfg(0, 8)),
            ["0", "lag2", "3", "4", "lag2", "7"]
        );
    }

    #[test]
    fn full_buffer_gives_up_the_first_gap() {
        let mut o = SeqOrder::default();
        assert_eq!(
            run(&mut o, &[0, 2, 3, 5], cfg(1000, 2)),
            ["0", "lag1", "2", "3"]
        );
        assert_eq!(o.held.len(), 1);
    }

    #[test]
    fn expired_window_releases_in_order() {
        let mut o = SeqOrder::default();
        let c = cfg(50, 8);
        let t0 = Instant::now();
        let mut out = Vec::new();
        for s in [0, 3, 4, 7] {
            o.accept(ev("a/b", s), t0, c, &mut out);
        }
        assert_eq!(describe(&out), ["0"]);
        out.clear();
        assert_eq!(o.deadline(c), Some(t0 + Duration::from_millis(50)));
        o.release_expired(t0 + Duration::from_millis(10), c, &mut out);
        assert!(out.is_empty());
        o.release_expired(t0 + Duration::from_millis(50), c, &mut out);
        assert_eq!(describe(&out), ["lag2", "3", "4"]);
        out.clear();
        o.release_expired(t0 + Duration::from_millis(100), c, &mut out);
        assert_eq!(describe(&out), ["lag2", "7"]);
        assert!(o.deadline(c).is_none());
    }

    #[test]
    fn full_queue_counts_and_reports_lag() {
        let q = SubQueue::new(2, vec!["a/b".into()]);
        for s in 0..5 {
            q.push(SubscriptionItem::Event(ev("a/b", s)));
        }
        let mut inner = lock(&q.inner);
        assert_eq!(inner.items.len(), 2);
        assert_eq!(inner.dropped[0].1, 3);
        inner.items.pop_front();
        drop(inner);
        q.push(SubscriptionItem::Event(ev("a/b", 5)));
        let inner = lock(&q.inner);
        assert_eq!(
            describe(inner.items.make_contiguous_clone().as_slice()),
            ["1", "lag3", "5"]
        );
    }

    trait CloneContiguous {
        fn make_contiguous_clone(&self) -> Vec<SubscriptionItem>;
    }

    impl CloneContiguous for VecDeque<SubscriptionItem> {
        fn make_contiguous_clone(&self) -> Vec<SubscriptionItem> {
            self.iter().cloned().collect()
        }
    }

    #[test]
    fn router_routes_by_channel_and_tracks_subscribers() {
        let mut r = Router::new(cfg(50, 8));
        let (a, qa) = r.add(vec!["x/a".into(), "x/b".into()], 16);
        let (b, qb) = r.add(vec!["x/b".into()], 16);
        let now = Instant::now();
        r.dispatch(ev("x/a", 0), now);
        r.dispatch(ev("x/b", 0), now);
        r.dispatch(ev("x/c", 0), now);
        assert_eq!(lock(&qa.inner).items.len(), 2);
        assert_eq!(lock(&qb.inner).items.len(), 1);
        assert_eq!(r.channels(), ["x/a", "x/b"]);
        assert_eq!(r.remove(a), ["x/a"]);
        assert_eq!(r.remove(b), ["x/b"]);
        assert!(r.channels().is_empty());
    }
}
