//! The attention item as a pure state machine: recorded [`Entry`]s fold into at most one open item, which
//! emits [`LifecycleEvent`]s. No I/O and no clock of its own: the [`AttentionManager`](crate::AttentionManager)
//! feeds it the time and publishes what it emits.

mod lifecycle;
mod object;

use std::time::Duration;

use gabp_types::{shorten, Attention, BoundedU64, NonEmptyString, Severity};

pub(crate) use self::lifecycle::Core;

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
