//! Events: the [`EventPublisher`] and the per-connection subscriber queues behind it.
//!
//! Each channel has one sequence counter for the whole mod: the first event on a channel has `seq` 0, the next
//! 1, and so on, whether anyone listens or not. Publishing assigns the number and offers the event to every
//! subscribed connection's bounded queue while holding that channel's lock, so every subscriber sees a
//! channel's events in `seq` order. A full queue drops the event for that subscriber only (the gap shows in
//! `seq`), and publishing never waits for a connection.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use bytes::Bytes;
use gabp_types::encode::{self, EventMembers};
use gabp_types::{Attention, ChannelName, MessageId, ResultValue, Timestamp};
use serde::{Deserialize, Serialize};

use super::pattern::{NamePattern, PatternError};
use crate::engine::{frame_queue, FrameQueue, FrameSender};
use crate::Error;

/// Publishes events to the bridges subscribed to a channel. Cheap to clone; usable from any thread, async or
/// not (publishing never blocks on a connection).
///
/// Get one from [`ModServerBuilder::event_publisher`](super::ModServerBuilder::event_publisher) (before the
/// server is built) or [`ModServer::event_publisher`](super::ModServer::event_publisher).
///
/// ```
/// use gabp_session::server::ModServer;
/// use serde_json::json;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let server = ModServer::builder()
///     .token(gabp_transport::Token::generate()?)
///     .channel("player/move")
///     .build()?;
/// let events = server.event_publisher();
/// let first = events.publish("player/move", json!({"x": 1}))?;
/// let second = events.publish("player/move", json!({"x": 2}))?;
/// assert_eq!((first.seq, second.seq), (0, 1));
/// assert_eq!(first.delivered, 0); // nobody is subscribed yet
/// assert!(events.publish("world/unknown", json!({})).is_err());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct EventPublisher {
    hub: Arc<EventHub>,
}

impl std::fmt::Debug for EventPublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventPublisher")
            .field("channels", &self.channels())
            .finish_non_exhaustive()
    }
}

/// What happened to one published event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Published {
    /// The event's sequence number on its channel.
    pub seq: u64,
    /// How many subscribed connections had room in their queue for it.
    pub delivered: usize,
    /// How many subscribed connections had a full queue and lost it (they will see a gap in `seq`).
    pub dropped: usize,
}

impl EventPublisher {
    pub(crate) fn new(hub: Arc<EventHub>) -> Self {
        EventPublisher { hub }
    }

    pub(crate) fn hub(&self) -> &Arc<EventHub> {
        &self.hub
    }

    /// Publishes `payload` on `channel` with the current time as its `timestamp`. The payload is written as its
    /// `Serialize` impl gives it (a struct's members in their order), with the numbers a JSON value holds; with
    /// nobody subscribed, the event still takes its `seq` and its size is still checked.
    ///
    /// # Errors
    ///
    /// [`Error`]: an unregistered channel, a payload that does not serialize, an `attention/*`
    /// payload that is not an attention object, or an event over the maximum message size.
    pub fn publish(&self, channel: &str, payload: impl Serialize) -> Result<Published, Error> {
        self.publish_at(channel, payload, Some(Timestamp::now()))
    }

    /// Publishes `payload` on `channel` with the given `timestamp` (or none).
    ///
    /// # Errors
    ///
    /// As [`EventPublisher::publish`].
    pub fn publish_at(
        &self,
        channel: &str,
        payload: impl Serialize,
        timestamp: Option<Timestamp>,
    ) -> Result<Published, Error> {
        // As text, with the numbers a JSON value holds: no tree of values to build and drop on the game's thread.
        let payload = ResultValue::from_serialize(&payload).map_err(Error::EventSerialization)?;
        self.hub.publish(channel, &payload, timestamp.as_ref())
    }

    /// The registered channels, in name order.
    #[must_use]
    pub fn channels(&self) -> Vec<ChannelName> {
        self.hub.channel_names()
    }

    /// The `seq` the next event on `channel` will carry, or `None` for an unknown channel.
    #[must_use]
    pub fn next_seq(&self, channel: &str) -> Option<u64> {
        let ch = self.hub.channel(channel)?;
        let state = ch.state.lock();
        Some(state.next_seq)
    }

    /// How many connections are subscribed to `channel` (0 for an unknown channel).
    #[must_use]
    pub fn subscriber_count(&self, channel: &str) -> usize {
        self.hub
            .channel(channel)
            .map_or(0, |ch| ch.state.lock().subscribers.len())
    }
}

/// The registry of channels and their subscribers, shared by the publisher and every connection.
pub(crate) struct EventHub {
    channels: RwLock<BTreeMap<ChannelName, Arc<Channel>>>,
    patterns: AtomicBool,
    max_message_size: AtomicUsize,
}

struct Channel {
    name: ChannelName,
    state: Mutex<ChannelState>,
}

struct ChannelState {
    next_seq: u64,
    subscribers: Vec<Arc<SubscriberQueue>>,
}

/// One connection's bounded event queue (the driver owns the receiving end).
pub(crate) struct SubscriberQueue {
    tx: FrameSender,
    delivered: AtomicU64,
    dropped: AtomicU64,
}

impl SubscriberQueue {
    /// A queue of `capacity` events and `max_bytes` bytes, and its receiving end.
    pub(crate) fn new(capacity: usize, max_bytes: usize) -> (Arc<Self>, FrameQueue) {
        let (tx, rx) = frame_queue(capacity, Some(max_bytes));
        (
            Arc::new(SubscriberQueue {
                tx,
                delivered: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
            }),
            rx,
        )
    }

    pub(crate) fn delivered(&self) -> u64 {
        self.delivered.load(Ordering::Relaxed)
    }

    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    pub(crate) fn capacity(&self) -> usize {
        self.tx.capacity()
    }
}

impl EventHub {
    pub(crate) fn new(max_message_size: usize) -> Self {
        EventHub {
            channels: RwLock::new(BTreeMap::new()),
            patterns: AtomicBool::new(true),
            max_message_size: AtomicUsize::new(max_message_size),
        }
    }

    pub(crate) fn set_max_message_size(&self, max: usize) {
        self.max_message_size.store(max, Ordering::Relaxed);
    }

    pub(crate) fn set_patterns(&self, enabled: bool) {
        self.patterns.store(enabled, Ordering::Relaxed);
    }

    pub(crate) fn patterns_enabled(&self) -> bool {
        self.patterns.load(Ordering::Relaxed)
    }

    /// Registers a channel; `false` if it was already registered.
    pub(crate) fn register(&self, name: ChannelName) -> bool {
        let mut channels = self.channels.write();
        if channels.contains_key(&name) {
            return false;
        }
        channels.insert(
            name.clone(),
            Arc::new(Channel {
                name,
                state: Mutex::new(ChannelState {
                    next_seq: 0,
                    subscribers: Vec::new(),
                }),
            }),
        );
        true
    }

    pub(crate) fn channel_names(&self) -> Vec<ChannelName> {
        self.channels.read().keys().cloned().collect()
    }

    fn channel(&self, name: &str) -> Option<Arc<Channel>> {
        self.channels.read().get(name).cloned()
    }

    fn publish(
        &self,
        channel: &str,
        payload: &ResultValue,
        timestamp: Option<&Timestamp>,
    ) -> Result<Published, Error> {
        let ch = self
            .channel(channel)
            .ok_or_else(|| Error::UnknownChannel(channel.to_owned()))?;
        if ch.name.is_attention() {
            if let Err(e) = Attention::deserialize(&**payload) {
                return Err(Error::InvalidAttention {
                    channel: channel.to_owned(),
                    reason: e.to_string(),
                });
            }
        }
        let limit = self.max_message_size.load(Ordering::Relaxed);
        let id = MessageId::new_v4();
        let mut state = ch.state.lock();
        let members = EventMembers {
            id: &id,
            channel: &ch.name,
            seq: state.next_seq,
            timestamp,
        };
        // The body is kept only for subscribers; its size is checked either way.
        let wanted = !state.subscribers.is_empty();
        let (len, body) = encode::with_event(&members, payload, |json| {
            (json.len(), wanted.then(|| Bytes::copy_from_slice(json)))
        })
        .map_err(Error::EventSerialization)?;
        if len > limit {
            return Err(Error::EventTooLarge { len, limit });
        }
        let body = body.unwrap_or_default();
        let seq = state.next_seq;
        state.next_seq += 1;
        let (mut delivered, mut dropped) = (0, 0);
        for sub in &state.subscribers {
            if sub.tx.try_send(body.clone()).is_ok() {
                delivered += 1;
                sub.delivered.fetch_add(1, Ordering::Relaxed);
            } else {
                // Full (or the connection is closing): this subscriber loses the event, nobody waits.
                dropped += 1;
                sub.dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
        drop(state);
        if dropped > 0 {
            tracing::debug!(channel, seq, dropped, "event dropped for slow subscribers");
        }
        Ok(Published {
            seq,
            delivered,
            dropped,
        })
    }

    /// Expands the requested names into registered channels: exact names, and glob patterns when the
    /// channel-pattern extension is on. Unknown names and patterns that match nothing are left out; a pattern
    /// that does not compile is refused (SPEC/1.0 gabp.md §4.4).
    fn expand(&self, requested: &[String]) -> Result<Vec<Arc<Channel>>, RejectedPattern> {
        let channels = self.channels.read();
        let mut out: Vec<Arc<Channel>> = Vec::new();
        let mut seen = BTreeSet::new();
        let mut push = |ch: &Arc<Channel>, out: &mut Vec<Arc<Channel>>| {
            if seen.insert(ch.name.clone()) {
                out.push(ch.clone());
            }
        };
        for (index, name) in requested.iter().enumerate() {
            if let Some(ch) = channels.get(name.as_str()) {
                push(ch, &mut out);
            } else if self.patterns_enabled() && NamePattern::is_pattern(name) {
                let pattern =
                    NamePattern::new(name).map_err(|error| RejectedPattern { index, error })?;
                for ch in channels.values().filter(|ch| pattern.matches(&ch.name)) {
                    push(ch, &mut out);
                }
            }
        }
        Ok(out)
    }

    /// Subscribes `sub` to the requested channels (or unsubscribes it from them); returns the known channels
    /// among them, now all subscribed (or none subscribed any more).
    pub(crate) fn subscribe(
        &self,
        sub: &Subscriptions,
        requested: &[String],
        subscribe: bool,
    ) -> Result<Vec<String>, RejectedPattern> {
        let targets = self.expand(requested)?;
        let mut current = sub.channels.lock();
        let mut names = Vec::with_capacity(targets.len());
        for ch in targets {
            if subscribe && current.insert(ch.name.clone()) {
                ch.state.lock().subscribers.push(sub.queue.clone());
            } else if !subscribe && current.remove(&ch.name) {
                remove_subscriber(&ch, &sub.queue);
            }
            names.push(ch.name.to_string());
        }
        Ok(names)
    }

    /// Removes `sub` from every channel (the connection is closing).
    pub(crate) fn unsubscribe_all(&self, sub: &Subscriptions) {
        let names: Vec<ChannelName> = std::mem::take(&mut *sub.channels.lock())
            .into_iter()
            .collect();
        for name in names {
            if let Some(ch) = self.channel(&name) {
                remove_subscriber(&ch, &sub.queue);
            }
        }
    }
}

/// A channel pattern of `events/subscribe` or `events/unsubscribe` that was not compiled.
#[derive(Debug)]
pub(crate) struct RejectedPattern {
    /// Its index in `channels`.
    pub(crate) index: usize,
    /// Why.
    pub(crate) error: PatternError,
}

fn remove_subscriber(ch: &Channel, queue: &Arc<SubscriberQueue>) {
    ch.state
        .lock()
        .subscribers
        .retain(|q| !Arc::ptr_eq(q, queue));
}

/// One connection's subscriptions: the channels and the queue their events go to.
pub(crate) struct Subscriptions {
    queue: Arc<SubscriberQueue>,
    channels: Mutex<BTreeSet<ChannelName>>,
}

impl Subscriptions {
    pub(crate) fn new(queue: Arc<SubscriberQueue>) -> Self {
        Subscriptions {
            queue,
            channels: Mutex::new(BTreeSet::new()),
        }
    }

    pub(crate) fn queue(&self) -> &SubscriberQueue {
        &self.queue
    }

    pub(crate) fn channels(&self) -> Vec<String> {
        self.channels
            .lock()
            .iter()
            .map(ToString::to_string)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gabp_types::decode::{decode, DecodeMode};
    use gabp_types::Message;
    use serde_json::json;

    fn hub(names: &[&str]) -> Arc<EventHub> {
        let hub = Arc::new(EventHub::new(1 << 20));
        for n in names {
            assert!(hub.register(ChannelName::new(*n).unwrap()));
        }
        hub
    }

    fn seq_of(body: &bytes::Bytes) -> u64 {
        match decode(body, DecodeMode::Strict).unwrap() {
            Message::Event(e) => e.seq,
            other => panic!("not an event: {other:?}"),
        }
    }

    #[test]
    fn seq_is_per_channel_from_zero_and_contiguous() {
        let hub = hub(&["player/move", "world/block_change"]);
        let events = EventPublisher::new(hub);
        for i in 0..5 {
            assert_eq!(events.publish("player/move", json!({})).unwrap().seq, i);
        }
        assert_eq!(
            events.publish("world/block_change", json!({})).unwrap().seq,
            0
        );
        assert_eq!(events.next_seq("player/move"), Some(5));
        assert_eq!(events.next_seq("nope/nope"), None);
    }

    #[test]
    fn a_full_queue_drops_for_that_subscriber_only() {
        let hub = hub(&["player/move"]);
        let events = EventPublisher::new(hub.clone());
        let (slow_q, mut slow_rx) = SubscriberQueue::new(2, 1 << 20);
        let (fast_q, mut fast_rx) = SubscriberQueue::new(100, 1 << 20);
        let slow = Subscriptions::new(slow_q);
        let fast = Subscriptions::new(fast_q);
        assert_eq!(
            hub.subscribe(&slow, &["player/move".into()], true).unwrap(),
            ["player/move"]
        );
        hub.subscribe(&fast, &["player/move".into()], true).unwrap();
        for _ in 0..10 {
            events.publish("player/move", json!({"x": 1})).unwrap();
        }
        assert_eq!(slow.queue().delivered(), 2);
        assert_eq!(slow.queue().dropped(), 8);
        assert_eq!(fast.queue().dropped(), 0);
        let mut fast_seqs = Vec::new();
        while let Some(b) = fast_rx.try_next() {
            fast_seqs.push(seq_of(&b));
        }
        assert_eq!(fast_seqs, (0..10).collect::<Vec<_>>());
        // The slow subscriber kept the first two; after draining, it gets new ones with a visible gap.
        let mut slow_seqs = Vec::new();
        while let Some(b) = slow_rx.try_next() {
            slow_seqs.push(seq_of(&b));
        }
        events.publish("player/move", json!({})).unwrap();
        slow_seqs.push(seq_of(&slow_rx.try_next().unwrap()));
        assert_eq!(slow_seqs, [0, 1, 10]);
    }

    #[test]
    fn patterns_unknown_names_and_unsubscribe() {
        let hub = hub(&["player/move", "player/chat", "world/block_change"]);
        let (q, _rx) = SubscriberQueue::new(8, 1 << 20);
        let sub = Subscriptions::new(q);
        let got = hub
            .subscribe(&sub, &["player/*".into(), "nope/nope".into()], true)
            .unwrap();
        assert_eq!(got, ["player/chat", "player/move"]);
        assert_eq!(sub.channels(), ["player/chat", "player/move"]);
        assert_eq!(
            hub.subscribe(&sub, &["player/move".into(), "zzz/zzz".into()], false)
                .unwrap(),
            ["player/move"]
        );
        assert_eq!(sub.channels(), ["player/chat"]);
        hub.set_patterns(false);
        assert!(hub
            .subscribe(&sub, &["world/*".into()], true)
            .unwrap()
            .is_empty());
        // Without the extension a pattern is a name: nothing is compiled, nothing refused.
        assert!(hub
            .subscribe(&sub, &["*".repeat(2000)], true)
            .unwrap()
            .is_empty());
        hub.unsubscribe_all(&sub);
        assert!(sub.channels().is_empty());
        let events = EventPublisher::new(hub);
        assert_eq!(events.subscriber_count("player/chat"), 0);
    }

    #[test]
    fn a_hostile_pattern_is_refused_and_nothing_changes() {
        let hub = hub(&["player/move", "player/chat"]);
        let (q, _rx) = SubscriberQueue::new(8, 1 << 20);
        let sub = Subscriptions::new(q);
        let requested = ["player/move".to_owned(), "*".repeat(87_380)];
        let e = hub.subscribe(&sub, &requested, true).unwrap_err();
        assert_eq!(e.index, 1);
        assert!(matches!(e.error, PatternError::TooLong { len: 87_380 }));
        assert!(sub.channels().is_empty(), "no partial subscription");
        assert!(hub.subscribe(&sub, &requested, false).is_err());
    }

    /// A subscriber gets the payload as its type writes it, members in the type's order; with nobody listening
    /// the event still takes its seq.
    #[test]
    fn payloads_are_written_as_their_type_gives_them() {
        #[derive(Serialize)]
        struct Change {
            z: i64,
            a: &'static str,
        }
        let hub = hub(&["world/block_change"]);
        let events = EventPublisher::new(hub.clone());
        let unheard = events.publish("world/block_change", Change { z: 1, a: "x" });
        assert_eq!(unheard.unwrap().seq, 0);
        let (q, mut rx) = SubscriberQueue::new(8, 1 << 20);
        let sub = Subscriptions::new(q);
        hub.subscribe(&sub, &["world/block_change".into()], true)
            .unwrap();
        let heard = events
            .publish_at("world/block_change", Change { z: 2, a: "y" }, None)
            .unwrap();
        assert_eq!((heard.seq, heard.delivered), (1, 1));
        let body = rx.try_next().unwrap();
        let text = std::str::from_utf8(&body).unwrap();
        assert!(
            text.ends_with(r#""seq":1,"payload":{"z":2,"a":"y"}}"#),
            "{text}"
        );
        match decode(&body, DecodeMode::Strict).unwrap() {
            Message::Event(e) => assert_eq!(e.payload, json!({"a": "y", "z": 2})),
            other => panic!("not an event: {other:?}"),
        }
    }

    #[test]
    fn refusals_use_no_seq() {
        let hub = Arc::new(EventHub::new(200));
        hub.register(ChannelName::new("big/data").unwrap());
        hub.register(ChannelName::new("attention/opened").unwrap());
        let events = EventPublisher::new(hub);
        assert!(matches!(
            events.publish("big/data", json!({"pad": "x".repeat(300)})),
            Err(Error::EventTooLarge { .. })
        ));
        assert!(matches!(
            events.publish("attention/opened", json!({"not": "attention"})),
            Err(Error::InvalidAttention { .. })
        ));
        assert_eq!(events.publish("big/data", json!({})).unwrap().seq, 0);
    }
}
