//! Putting one channel's events in `seq` order (SPEC/1.0 gabp.md §6).

use std::collections::BTreeMap;

use gabp_types::Event;
use tokio::time::Instant;

use super::item::SubscriptionItem;
use crate::bridge::settings::Reorder;

/// `seq` tracking of one channel on one connection.
#[derive(Debug, Default)]
pub(crate) struct SeqOrder {
    pub(crate) next: Option<u64>,
    /// Events ahead of a gap, and the bytes of each.
    pub(crate) held: BTreeMap<u64, (Event, usize)>,
    /// Bytes of the events in `held`.
    pub(crate) held_bytes: usize,
    pub(crate) since: Option<Instant>,
}

impl SeqOrder {
    pub(crate) fn accept(
        &mut self,
        event: Event,
        size: usize,
        now: Instant,
        cfg: Reorder,
        out: &mut Vec<(SubscriptionItem, usize)>,
    ) {
        let seq = event.seq;
        match self.next {
            None => {
                self.next = Some(seq.saturating_add(1));
                out.push((SubscriptionItem::Event(event), size));
            }
            Some(next) if seq < next => {
                tracing::debug!(channel = %event.channel, seq, expected = next,
                    "dropping a duplicate or stale event");
            }
            Some(next) if seq == next => {
                self.next = Some(seq.saturating_add(1));
                out.push((SubscriptionItem::Event(event), size));
                self.drain_contiguous(out);
            }
            Some(_) => {
                if self.held.contains_key(&seq) {
                    tracing::debug!(channel = %event.channel, seq, "dropping a duplicate event");
                    return;
                }
                self.held_bytes += size;
                self.held.insert(seq, (event, size));
                if self.since.is_none() {
                    self.since = Some(now);
                }
                if cfg.window.is_zero() {
                    self.release_all(out);
                } else {
                    while self.held.len() > cfg.capacity || self.held_bytes > cfg.max_bytes {
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
    pub(crate) fn drain_contiguous(&mut self, out: &mut Vec<(SubscriptionItem, usize)>) {
        while let Some(next) = self.next {
            match self.held.remove(&next) {
                Some((event, size)) => {
                    self.held_bytes -= size;
                    self.next = Some(next.saturating_add(1));
                    out.push((SubscriptionItem::Event(event), size));
                }
                None => break,
            }
        }
        if self.held.is_empty() {
            self.since = None;
        }
    }

    /// Gives up the first gap: reports it, then delivers what becomes contiguous.
    pub(crate) fn release_first_gap(&mut self, out: &mut Vec<(SubscriptionItem, usize)>) {
        let Some((&first, (event, _))) = self.held.iter().next() else {
            return;
        };
        let next = self.next.unwrap_or(first);
        if first > next {
            let lagged = SubscriptionItem::Lagged {
                channel: event.channel.clone(),
                missed: first - next,
            };
            out.push((lagged, 0));
        }
        self.next = Some(first);
        self.drain_contiguous(out);
    }

    pub(crate) fn release_all(&mut self, out: &mut Vec<(SubscriptionItem, usize)>) {
        while !self.held.is_empty() {
            self.release_first_gap(out);
        }
        self.since = None;
    }

    pub(crate) fn deadline(&self, cfg: Reorder) -> Option<Instant> {
        self.since.map(|since| since + cfg.window)
    }

    pub(crate) fn release_expired(
        &mut self,
        now: Instant,
        cfg: Reorder,
        out: &mut Vec<(SubscriptionItem, usize)>,
    ) {
        if self.deadline(cfg).is_some_and(|d| d <= now) {
            self.release_first_gap(out);
            // Whatever is still held waits a fresh window for its own gap.
            if !self.held.is_empty() {
                self.since = Some(now);
            }
        }
    }
}
