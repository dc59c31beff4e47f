//! [`Core`], the state machine of the item's lifecycle: entries open and update it, a window spaces its
//! `updated` events, an acknowledgement clears it (SPEC/1.0/attention.md §4).

use std::time::Duration;

use gabp_types::methods::AttentionAckResult;
use gabp_types::{Attention, AttentionState, NonEmptyString};

use super::object::Item;
use super::{bounded_text, Entry, LifecycleEvent, LifecycleKind, Recorded};
use crate::policy::AttentionPolicy;

/// The state machine behind [`AttentionManager`](crate::AttentionManager).
#[derive(Debug)]
pub(crate) struct Core {
    policy: AttentionPolicy,
    sample_limit: usize,
    window: Duration,
    id_prefix: String,
    next_item: u64,
    next_sequence: u64,
    item: Option<Item>,
    /// Whether a timer will call [`Core::poll`] at [`Core::next_deadline`].
    pub(crate) timer_armed: bool,
}

impl Core {
    pub(crate) fn new(
        policy: AttentionPolicy,
        sample_limit: usize,
        window: Duration,
        id_prefix: String,
    ) -> Self {
        Core {
            policy,
            sample_limit: sample_limit.max(1),
            window,
            id_prefix,
            next_item: 1,
            next_sequence: 0,
            item: None,
            timer_armed: false,
        }
    }

    pub(crate) fn next_sequence(&self) -> u64 {
        self.next_sequence
    }

    /// Records one entry at time `now`: it takes the next sequence number, and opens or folds into the item
    /// when the policy says so.
    pub(crate) fn record(
        &mut self,
        entry: &Entry,
        now: Duration,
    ) -> (Recorded, Option<LifecycleEvent>) {
        let sequence = self.next_sequence;
        self.next_sequence = self.next_sequence.saturating_add(1);
        let mut recorded = Recorded {
            sequence,
            attention_id: None,
            opened: false,
        };
        let (policy, limit, window) = (&self.policy, self.sample_limit, self.window);
        match &mut self.item {
            Some(item) if policy.folds(entry.level) => {
                item.fold(entry, sequence, policy, limit);
                recorded.attention_id = Some(item.id.clone());
                // Leading edge: the first change after a quiet window goes out at once.
                if now >= item.last_emit.saturating_add(window) {
                    item.last_emit = now;
                    item.dirty = false;
                    let attention = item.snapshot(AttentionState::Open);
                    return (
                        recorded,
                        Some(event(LifecycleKind::Updated, attention, now)),
                    );
                }
                (recorded, None)
            }
            None if policy.opens(entry.level) => {
                let id = format!("{}-{}", self.id_prefix, self.next_item);
                self.next_item = self.next_item.saturating_add(1);
                let mut item = Item {
                    id: id.clone(),
                    severity: entry.level,
                    headline: bounded_text(&entry.message),
                    blocking: false,
                    state_invalidated: false,
                    causal_method: None,
                    causal_operation_id: None,
                    opened_at: sequence,
                    latest: sequence,
                    total: 0,
                    kinds: Vec::new(),
                    others: None,
                    last_emit: now,
                    dirty: false,
                };
                item.fold(entry, sequence, policy, limit);
                item.dirty = false;
                let attention = item.snapshot(AttentionState::Open);
                self.item = Some(item);
                recorded.attention_id = Some(id);
                recorded.opened = true;
                (recorded, Some(event(LifecycleKind::Opened, attention, now)))
            }
            _ => (recorded, None),
        }
    }

    /// The `updated` event that is due at `now` (trailing edge of the coalescing window), if any.
    pub(crate) fn poll(&mut self, now: Duration) -> Option<LifecycleEvent> {
        let window = self.window;
        let item = self.item.as_mut()?;
        if item.dirty && now >= item.last_emit.saturating_add(window) {
            item.last_emit = now;
            item.dirty = false;
            return Some(event(
                LifecycleKind::Updated,
                item.snapshot(AttentionState::Open),
                now,
            ));
        }
        None
    }

    /// When [`Core::poll`] will have an `updated` event to emit.
    pub(crate) fn next_deadline(&self) -> Option<Duration> {
        let item = self.item.as_ref()?;
        item.dirty
            .then(|| item.last_emit.saturating_add(self.window))
    }

    /// The open item.
    pub(crate) fn current(&self) -> Option<Attention> {
        self.item
            .as_ref()
            .map(|item| item.snapshot(AttentionState::Open))
    }

    /// The open item, if it is blocking.
    pub(crate) fn blocking(&self) -> Option<Attention> {
        self.item
            .as_ref()
            .filter(|item| item.blocking)
            .map(|item| item.snapshot(AttentionState::Open))
    }

    /// `attention/ack`: clears the open item when `id` names it.
    pub(crate) fn ack(
        &mut self,
        id: &NonEmptyString,
        now: Duration,
    ) -> (AttentionAckResult, Option<LifecycleEvent>) {
        if self
            .item
            .as_ref()
            .is_some_and(|item| item.id == id.as_str())
        {
            let cleared = self.clear(now);
            let result = AttentionAckResult {
                acknowledged: true,
                attention_id: id.clone(),
                current_attention: None,
                extra: serde_json::Map::new(),
            };
            return (result, cleared);
        }
        let result = AttentionAckResult {
            acknowledged: false,
            attention_id: id.clone(),
            current_attention: self.current(),
            extra: serde_json::Map::new(),
        };
        (result, None)
    }

    /// Clears the open item, if any. A pending `updated` event is dropped: `cleared` carries the latest state.
    pub(crate) fn clear(&mut self, now: Duration) -> Option<LifecycleEvent> {
        let item = self.item.take()?;
        Some(event(
            LifecycleKind::Cleared,
            item.snapshot(AttentionState::Cleared),
            now,
        ))
    }
}

fn event(kind: LifecycleKind, attention: Attention, at: Duration) -> LifecycleEvent {
    LifecycleEvent {
        kind,
        attention,
        at,
    }
}

#[cfg(test)]
mod tests {
    use gabp_types::Severity;

    use super::*;
    use crate::item::MAX_MESSAGE_CHARS;

    const MS: Duration = Duration::from_millis(1);

    fn core(limit: usize) -> Core {
        Core::new(
            AttentionPolicy::default(),
            limit,
            Duration::from_millis(100),
            "att-test".into(),
        )
    }

    fn sum(a: &Attention) -> u64 {
        a.sample
            .iter()
            .flatten()
            .map(|s| s.repeat_count.get())
            .sum()
    }

    #[test]
    fn opens_folds_and_clears() {
        let mut c = core(5);
        let (r, e) = c.record(&Entry::new(Severity::Info, "noise"), Duration::ZERO);
        assert_eq!((r.sequence, r.attention_id, e), (0, None, None));
        let (r, e) = c.record(&Entry::new(Severity::Warning, "slow"), Duration::ZERO);
        assert!(
            r.attention_id.is_none() && e.is_none(),
            "warnings do not open"
        );
        let (r, e) = c.record(
            &Entry::new(Severity::Error, "disk full").causal_method("world/place_block"),
            Duration::ZERO,
        );
        assert!(r.opened);
        let opened = e.unwrap();
        assert_eq!(opened.kind, LifecycleKind::Opened);
        let a = opened.attention;
        assert_eq!(a.attention_id.as_str(), "att-test-1");
        assert_eq!((a.opened_at_sequence, a.latest_sequence), (2, 2));
        assert!(a.blocking && a.state_invalidated);
        assert_eq!(a.causal_method.unwrap().as_str(), "world/place_block");
        assert_eq!(a.summary.as_str(), "disk full");

        // Folded within the window: no event yet, but the item changed.
        let (r, e) = c.record(&Entry::new(Severity::Warning, "slow"), 10 * MS);
        assert_eq!(r.attention_id.as_deref(), Some("att-test-1"));
        assert!(e.is_none());
        assert_eq!(c.next_deadline(), Some(100 * MS));
        assert!(c.poll(99 * MS).is_none());
        let updated = c.poll(100 * MS).unwrap();
        assert_eq!(updated.kind, LifecycleKind::Updated);
        assert_eq!(updated.attention.total_urgent_entries, 2);
        assert_eq!(updated.attention.latest_sequence, 3);
        assert_eq!(
            updated.attention.summary.as_str(),
            "disk full (and 1 more urgent entries)"
        );
        assert!(c.next_deadline().is_none());

        // After a quiet window the next change goes out at once.
        let (_, e) = c.record(&Entry::new(Severity::Fatal, "crash"), 300 * MS);
        let a = e.unwrap().attention;
        assert_eq!(a.severity, Severity::Fatal);
        assert_eq!(a.summary.as_str(), "crash (and 2 more urgent entries)");

        let bogus = NonEmptyString::new("att-other").unwrap();
        let (ack, e) = c.ack(&bogus, 301 * MS);
        assert!(!ack.acknowledged && e.is_none());
        assert_eq!(
            ack.current_attention.unwrap().attention_id.as_str(),
            "att-test-1"
        );
        let id = NonEmptyString::new("att-test-1").unwrap();
        let (ack, e) = c.ack(&id, 302 * MS);
        assert!(ack.acknowledged && ack.current_attention.is_none());
        let cleared = e.unwrap();
        assert_eq!(cleared.kind, LifecycleKind::Cleared);
        assert_eq!(cleared.attention.state, AttentionState::Cleared);
        assert!(!cleared.attention.blocking);
        assert!(c.current().is_none());

        // The next urgent entry opens a new item with a new id.
        let (r, _) = c.record(&Entry::new(Severity::Error, "again"), 400 * MS);
        assert_eq!(r.attention_id.as_deref(), Some("att-test-2"));
    }

    #[test]
    fn sample_stays_bounded_and_counts_add_up() {
        let mut c = core(3);
        for i in 0..20u64 {
            let level = if i % 7 == 0 {
                Severity::Fatal
            } else {
                Severity::Error
            };
            c.record(
                &Entry::new(level, format!("error kind {}", i % 6)),
                Duration::from_millis(i),
            );
            let a = c.current().unwrap();
            let sample = a.sample.as_ref().unwrap();
            assert!(sample.len() <= 3, "{sample:?}");
            assert_eq!(sum(&a), a.total_urgent_entries);
        }
        let a = c.current().unwrap();
        let sample = a.sample.unwrap();
        assert_eq!(sample[0].level, Severity::Fatal, "most severe first");
        assert!(sample
            .last()
            .unwrap()
            .message
            .as_str()
            .contains("other kinds"));
    }

    #[test]
    fn signature_folds_different_messages() {
        let mut c = core(5);
        for n in 0..4 {
            c.record(
                &Entry::new(Severity::Error, format!("chunk {n} failed")).signature("chunk"),
                Duration::ZERO,
            );
        }
        let sample = c.current().unwrap().sample.unwrap();
        assert_eq!(sample.len(), 1);
        assert_eq!(sample[0].repeat_count.get(), 4);
        assert_eq!(sample[0].message.as_str(), "chunk 0 failed");
        assert_eq!(sample[0].latest_sequence, 3);
    }

    #[test]
    fn entries_decide_blocking_and_texts_are_bounded() {
        let mut c = core(1);
        let (_, e) = c.record(
            &Entry::new(Severity::Error, "")
                .blocking(false)
                .state_invalidated(false),
            Duration::ZERO,
        );
        let a = e.unwrap().attention;
        assert!(!a.blocking && !a.state_invalidated);
        assert_eq!(a.summary.as_str(), "(no message)");
        c.record(
            &Entry::new(Severity::Error, "x".repeat(5000)).blocking(true),
            Duration::ZERO,
        );
        let a = c.blocking().unwrap();
        assert!(a.blocking && a.state_invalidated);
        let sample = a.sample.unwrap();
        assert_eq!(
            sample.len(),
            1,
            "a limit of one keeps only the others entry"
        );
        assert_eq!(sample[0].repeat_count.get(), 2);
        assert!(a.summary.as_str().chars().count() <= MAX_MESSAGE_CHARS + 1);
        c.record(
            &Entry::new(Severity::Error, "y".repeat(5000)),
            Duration::ZERO,
        );
        assert!(c.current().unwrap().sample.unwrap().iter().all(|s| s
            .message
            .as_str()
            .chars()
            .count()
            <= MAX_MESSAGE_CHARS + 1));
    }

    #[test]
    fn clear_drops_a_pending_update() {
        let mut c = core(5);
        c.record(&Entry::new(Severity::Error, "a"), Duration::ZERO);
        c.record(&Entry::new(Severity::Error, "b"), MS);
        assert!(c.next_deadline().is_some());
        let cleared = c.clear(2 * MS).unwrap();
        assert_eq!(cleared.attention.total_urgent_entries, 2);
        assert!(c.next_deadline().is_none() && c.poll(Duration::from_secs(1)).is_none());
        assert!(c.clear(3 * MS).is_none());
    }
}
