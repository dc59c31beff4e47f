//! The per-connection router that hands events to the subscriptions of their channel.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use gabp_types::Event;
use tokio::time::Instant;

use super::item::SubscriptionItem;
use super::order::SeqOrder;
use super::queue::{wake, SubQueue};
use crate::bridge::settings::Reorder;
use crate::Error;

#[derive(Debug, Default)]
pub(crate) struct ChannelRoute {
    pub(crate) subscribers: Vec<u64>,
    pub(crate) order: SeqOrder,
}

/// Routes the events of a bridge to its subscriptions, in `seq` order per channel.
#[derive(Debug)]
pub(crate) struct Router {
    pub(crate) next_id: u64,
    pub(crate) subs: HashMap<u64, Arc<SubQueue>>,
    pub(crate) channels: HashMap<String, ChannelRoute>,
    pub(crate) reorder: Reorder,
    pub(crate) scratch: Vec<(SubscriptionItem, usize)>,
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
    pub(crate) fn add(
        &mut self,
        channels: Vec<String>,
        capacity: usize,
        max_bytes: usize,
    ) -> (u64, Arc<SubQueue>) {
        self.next_id += 1;
        let id = self.next_id;
        for channel in &channels {
            self.channels
                .entry(channel.clone())
                .or_default()
                .subscribers
                .push(id);
        }
        let queue = Arc::new(SubQueue::new(capacity, max_bytes, channels));
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
        // A pattern asked for (SPEC/1.0 extensions.md §channel-patterns) is granted as the channels it
        // matched: those are routed here, the pattern itself is not.
        let asked = queue.channels();
        for channel in granted {
            if !asked.iter().any(|a| a == channel) {
                queue.add_channel(channel);
                let route = self.channels.entry((*channel).to_owned()).or_default();
                if !route.subscribers.contains(&id) {
                    route.subscribers.push(id);
                }
            }
        }
        for channel in asked {
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

    /// Drops `channels` from every subscription: the mod did not grant them again (restoring on a reconnect).
    pub(crate) fn drop_channels<'a>(&mut self, channels: impl IntoIterator<Item = &'a String>) {
        for channel in channels {
            if let Some(route) = self.channels.remove(channel) {
                tracing::warn!(%channel, "the mod no longer offers this channel; dropped from subscriptions");
                for id in route.subscribers {
                    if let Some(queue) = self.subs.get(&id) {
                        queue.remove_channel(channel);
                    }
                }
            }
        }
    }

    /// Whether some subscription listens to `channel`.
    pub(crate) fn listens(&self, channel: &str) -> bool {
        self.channels.contains_key(channel)
    }

    /// Every channel some subscription listens to.
    pub(crate) fn channels(&self) -> Vec<String> {
        let mut all: Vec<String> = self.channels.keys().cloned().collect();
        all.sort();
        all
    }

    /// Routes one event of `size` bytes.
    pub(crate) fn dispatch(&mut self, event: Event, size: usize, now: Instant) {
        let reorder = self.reorder;
        let Some(route) = self.channels.get_mut(event.channel.as_str()) else {
            tracing::trace!(channel = %event.channel, "event for a channel nobody subscribes to");
            return;
        };
        let mut out = std::mem::take(&mut self.scratch);
        route.order.accept(event, size, now, reorder, &mut out);
        Self::deliver(&self.subs, &route.subscribers, &mut out);
        self.scratch = out;
    }

    pub(crate) fn deliver(
        subs: &HashMap<u64, Arc<SubQueue>>,
        to: &[u64],
        out: &mut Vec<(SubscriptionItem, usize)>,
    ) {
        for (item, size) in out.drain(..) {
            if let [only] = to {
                if let Some(queue) = subs.get(only) {
                    wake(queue.push(item, size));
                }
                continue;
            }
            for id in to {
                if let Some(queue) = subs.get(id) {
                    wake(queue.push(item.clone(), size));
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
            wake(queue.push(SubscriptionItem::Reconnected, 0));
        }
    }

    /// Ends every subscription with an error item (after the items already queued).
    pub(crate) fn close_all(&mut self, error: impl Fn() -> Error) {
        for queue in self.subs.values() {
            wake(queue.close(error()));
        }
        self.subs.clear();
        self.channels.clear();
    }
}
