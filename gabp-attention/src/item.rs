//! The attention item as a pure state machine: recorded [`Entry`]s fold into at most one open item, which
//! emits [`LifecycleEvent`]s. No I/O and no clock of its own: the [`AttentionManager`](crate::AttentionManager)
//! feeds it the time and publishes what it emits.

use std::time::Duration;

use gabp_types::methods::AttentionAckResult;
use gabp_types::{
    shorten, Attention, AttentionSample, AttentionState, BoundedU64, NonEmptyString, Severity,
};

use crate::policy::AttentionPolicy;

/// The longest message kept in a sample entry or a summary, in characters; longer ones are cut (the attention
/// object stays bounded whatever the game logs).
pub const MAX_MESSAGE_CHARS: usize = 500;

/// The attention channel of items that open.
pub const OPENED: &str = "attention/opened";
/// The attention channel of items that change.
pub const UPDATED: &str = "attention/updated";
/// The attention channel of items that are cleared.
pub const CLEARED: &str = "attention/cleared";
/// The three attention channels.
pub const CHANNELS: [&str; 3] = [OPENED, UPDATED, CLEARED];

/// One diagnostic entry to record: a level, a message, and optionally a signature and the item's traits.
///
/// Entries with the same signature fold into one sample entry; without a signature, the message is the
/// signature.
///
/// ```
/// use gabp_attention::Entry;
/// use gabp_types::Severity;
///
/// let entry = Entry::new(Severity::Error, "I/O error while writing chunk 0,0")
///     .signature("chunk-save")
///     .causal_method("world/place_block")
///     .blocking(true);
/// assert_eq!(entry.level(), Severity::Error);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    level: Severity,
    message: String,
    signature: Option<String>,
    blocking: Option<bool>,
    state_invalidated: Option<bool>,
    causal_method: Option<String>,
    causal_operation_id: Option<String>,
}

impl Entry {
    /// An entry at `level` saying `message`.
    pub fn new(level: Severity, message: impl Into<String>) -> Self {
        Entry {
            level,
            message: message.into(),
            signature: None,
            blocking: None,
            state_invalidated: None,
            causal_method: None,
            causal_operation_id: None,
        }
    }

    /// What makes entries "the same kind": they fold into one sample entry (default: the message).
    #[must_use]
    pub fn signature(mut self, signature: impl Into<String>) -> Self {
        self.signature = Some(signature.into());
        self
    }

    /// Whether this entry makes its item blocking, whatever the policy says of its level. `false` only means
    /// this entry does not: an item that already blocks keeps blocking.
    #[must_use]
    pub fn blocking(mut self, blocking: bool) -> Self {
        self.blocking = Some(blocking);
        self
    }

    /// Whether this entry invalidates earlier reads of the game state, whatever the policy says of its level.
    #[must_use]
    pub fn state_invalidated(mut self, invalidated: bool) -> Self {
        self.state_invalidated = Some(invalidated);
        self
    }

    /// The method, tool or capability associated with the entry (`causalMethod` of an item it opens).
    #[must_use]
    pub fn causal_method(mut self, method: impl Into<String>) -> Self {
        self.causal_method = Some(method.into());
        self
    }

    /// The operation that caused the entry (`causalOperationId` of an item it opens).
    #[must_use]
    pub fn causal_operation_id(mut self, id: impl Into<String>) -> Self {
        self.causal_operation_id = Some(id.into());
        self
    }

    /// The entry's level.
    #[must_use]
    pub fn level(&self) -> Severity {
        self.level
    }

    /// The entry's message.
    #[must_use]
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// What [`AttentionManager::record`](crate::AttentionManager::record) did with an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Recorded {
    /// The entry's number in the diagnostics sequence.
    pub sequence: u64,
    /// The item the entry opened or folded into, if any (`None` when the policy let it pass).
    pub attention_id: Option<String>,
    /// Whether the entry opened that item.
    pub opened: bool,
}

/// Which lifecycle step an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LifecycleKind {
    /// An item opened (published on `attention/opened`).
    Opened,
    /// An open item changed (published on `attention/updated`, at most once per coalescing window).
    Updated,
    /// An item was cleared, by acknowledgement or explicitly (published on `attention/cleared`).
    Cleared,
}

impl LifecycleKind {
    /// The channel the event is published on.
    #[must_use]
    pub fn channel(self) -> &'static str {
        match self {
            LifecycleKind::Opened => OPENED,
            LifecycleKind::Updated => UPDATED,
            LifecycleKind::Cleared => CLEARED,
        }
    }
}

/// One lifecycle event of an item: published on its channel, and handed to the hooks of
/// [`AttentionManagerBuilder::on_lifecycle`](crate::AttentionManagerBuilder::on_lifecycle).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LifecycleEvent {
    /// Which step.
    pub kind: LifecycleKind,
    /// The item as published.
    pub attention: Attention,
    /// When, on the manager's [`Clock`](crate::Clock).
    pub at: Duration,
}

/// Text that is never empty and never longer than [`MAX_MESSAGE_CHARS`] (and an ellipsis when cut).
fn bounded_text(text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        return "(no message)".to_owned();
    }
    shorten(text, MAX_MESSAGE_CHARS).into_owned()
}

fn non_empty(text: String) -> NonEmptyString {
    match NonEmptyString::new(text) {
        Ok(s) => s,
        Err(_) => unreachable!("texts are made non-empty before they get here"),
    }
}

fn at_least_one(n: u64) -> BoundedU64<1> {
    match BoundedU64::new(n.max(1)) {
        Ok(n) => n,
        Err(_) => unreachable!("n.max(1) is at least 1"),
    }
}

/// One kind of entry in the sample.
#[derive(Debug, Clone)]
struct Kind {
    signature: String,
    level: Severity,
    message: String,
    count: u64,
    latest: u64,
}

/// The entries of kinds pushed out of the sample to keep it bounded.
#[derive(Debug, Clone)]
struct Others {
    level: Severity,
    count: u64,
    latest: u64,
}

#[derive(Debug, Clone)]
struct Item {
    id: String,
    severity: Severity,
    headline: String,
    blocking: bool,
    state_invalidated: bool,
    causal_method: Option<String>,
    causal_operation_id: Option<String>,
    opened_at: u64,
    latest: u64,
    total: u64,
    kinds: Vec<Kind>,
    others: Option<Others>,
    /// When the last event of this item was emitted (`opened` or `updated`).
    last_emit: Duration,
    /// Whether the item changed since then.
    dirty: bool,
}

impl Item {
    fn fold(&mut self, entry: &Entry, sequence: u64, policy: &AttentionPolicy, limit: usize) {
        let level = entry.level;
        if level > self.severity {
            self.severity = level;
            self.headline = bounded_text(&entry.message);
        }
        self.blocking |= entry.blocking.unwrap_or_else(|| policy.blocks(level));
        self.state_invalidated |= entry
            .state_invalidated
            .unwrap_or_else(|| policy.invalidates_state(level));
        if self.causal_method.is_none() {
            self.causal_method = entry.causal_method.as_deref().map(bounded_text);
        }
        if self.causal_operation_id.is_none() {
            self.causal_operation_id = entry.causal_operation_id.as_deref().map(bounded_text);
        }
        self.latest = sequence;
        self.total = self.total.saturating_add(1);
        let signature = entry.signature.as_deref().unwrap_or(&entry.message);
        match self.kinds.iter_mut().find(|k| k.signature == signature) {
            Some(kind) => {
                kind.count = kind.count.saturating_add(1);
                kind.latest = sequence;
                if level > kind.level {
                    kind.level = level;
                    kind.message = bounded_text(&entry.message);
                }
            }
            None => self.kinds.push(Kind {
                signature: signature.to_owned(),
                level,
                message: bounded_text(&entry.message),
                count: 1,
                latest: sequence,
            }),
        }
        // Keep the sample bounded: the least severe, then least recent, kinds go to the "others" entry.
        while self.kinds.len() + usize::from(self.others.is_some()) > limit {
            let Some((weakest, _)) = self
                .kinds
                .iter()
                .enumerate()
                .min_by_key(|(_, k)| (k.level, k.latest))
            else {
                break;
            };
            let kind = self.kinds.swap_remove(weakest);
            let others = self.others.get_or_insert(Others {
                level: kind.level,
                count: 0,
                latest: kind.latest,
            });
            others.level = others.level.max(kind.level);
            others.count = others.count.saturating_add(kind.count);
            others.latest = others.latest.max(kind.latest);
        }
        self.dirty = true;
    }

    fn summary(&self) -> String {
        match self.total {
            0 | 1 => self.headline.clone(),
            n => format!("{} (and {} more urgent entries)", self.headline, n - 1),
        }
    }

    fn sample(&self) -> Vec<AttentionSample> {
        let mut kinds: Vec<&Kind> = self.kinds.iter().collect();
        kinds.sort_by_key(|k| std::cmp::Reverse((k.level, k.latest)));
        let mut sample: Vec<AttentionSample> = kinds
            .into_iter()
            .map(|k| AttentionSample {
                level: k.level,
                message: non_empty(k.message.clone()),
                repeat_count: at_least_one(k.count),
                latest_sequence: k.latest,
            })
            .collect();
        if let Some(o) = &self.others {
            let message = if o.count == 1 {
                "1 entry of another kind (not sampled individually)".to_owned()
            } else {
                format!(
                    "{} entries of other kinds (not sampled individually)",
                    o.count
                )
            };
            sample.push(AttentionSample {
                level: o.level,
                message: non_empty(message),
                repeat_count: at_least_one(o.count),
                latest_sequence: o.latest,
            });
        }
        sample
    }

    fn snapshot(&self, state: AttentionState) -> Attention {
        Attention {
            attention_id: non_empty(self.id.clone()),
            state,
            severity: self.severity,
            // A cleared item gates nothing.
            blocking: self.blocking && state == AttentionState::Open,
            state_invalidated: self.state_invalidated,
            summary: non_empty(bounded_text(&self.summary())),
            causal_operation_id: self.causal_operation_id.clone().map(non_empty),
            causal_method: self.causal_method.clone().map(non_empty),
            opened_at_sequence: self.opened_at,
            latest_sequence: self.latest,
            diagnostics_cursor: None,
            total_urgent_entries: self.total,
            sample: Some(self.sample()),
        }
    }
}

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
            };
            return (result, cleared);
        }
        let result = AttentionAckResult {
            acknowledged: false,
            attention_id: id.clone(),
            current_attention: self.current(),
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
    use super::*;

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
