//! [`AttentionTracingLayer`]: a game's existing `tracing` logging feeds the attention manager.

use std::cell::Cell;
use std::fmt::{self, Write as _};

use gabp_types::Severity;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::Layer;

use crate::item::{Entry, MAX_MESSAGE_CHARS};
use crate::AttentionManager;

/// Targets whose events are not recorded by default: the GABP crates' own logs (a bridge that disconnects is
/// not trouble in the game, and the manager must never record its own logs).
pub const DEFAULT_IGNORED_TARGETS: &[&str] = &["gabp_"];

thread_local! {
    /// Set while this thread records an event, so that whatever the manager logs meanwhile is not recorded.
    static RECORDING: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread as recording until dropped (even by a panic).
struct Recording;

impl Recording {
    fn start() -> Recording {
        RECORDING.with(|r| r.set(true));
        Recording
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        RECORDING.with(|r| r.set(false));
    }
}

/// A [`tracing_subscriber::Layer`] that records `WARN` events as `warning` entries and `ERROR` events as
/// `error` entries into an [`AttentionManager`], so a Rust game gets attention from its existing logging with
/// one line. Other levels are ignored.
///
/// The entry's message is the event's message followed by its other fields (`key=value`); its signature is the
/// event's call site, so that one log statement folds into one sample entry whatever values it prints. Events
/// whose target starts with one of [`DEFAULT_IGNORED_TARGETS`] (the GABP crates) are not recorded; add more
/// prefixes with [`AttentionTracingLayer::ignore_target`].
///
/// Needs the `tracing-layer` feature: `gabp-attention = { version = "0.1", features = ["tracing-layer"] }`.
///
/// ```
/// use gabp_attention::AttentionManager;
/// use tracing_subscriber::layer::SubscriberExt;
///
/// let attention = AttentionManager::new();
/// let subscriber = tracing_subscriber::registry().with(attention.tracing_layer());
/// tracing::subscriber::with_default(subscriber, || {
///     tracing::info!("loading chunk 0,0"); // not recorded
///     tracing::error!(chunk = "0,0", "failed to save the chunk");
/// });
/// let item = attention.current().expect("the error opened an item");
/// assert_eq!(item.summary.as_str(), "failed to save the chunk chunk=0,0");
/// ```
#[derive(Debug, Clone)]
pub struct AttentionTracingLayer {
    manager: AttentionManager,
    ignored: Vec<String>,
}

impl AttentionTracingLayer {
    /// A layer recording into `manager` (the same as [`AttentionManager::tracing_layer`]).
    #[must_use]
    pub fn new(manager: AttentionManager) -> Self {
        AttentionTracingLayer {
            manager,
            ignored: DEFAULT_IGNORED_TARGETS
                .iter()
                .map(|t| (*t).to_owned())
                .collect(),
        }
    }

    /// Also ignores the events whose target starts with `prefix`.
    #[must_use]
    pub fn ignore_target(mut self, prefix: impl Into<String>) -> Self {
        self.ignored.push(prefix.into());
        self
    }

    /// Records the GABP crates' own events too (only the manager's own are never recorded).
    #[must_use]
    pub fn include_gabp_targets(mut self) -> Self {
        self.ignored
            .retain(|t| !DEFAULT_IGNORED_TARGETS.contains(&t.as_str()));
        self
    }

    fn ignores(&self, target: &str) -> bool {
        target.starts_with("gabp_attention")
            || self.ignored.iter().any(|p| target.starts_with(p.as_str()))
    }
}

/// Collects an event's message and fields into one line.
#[derive(Default)]
struct Line {
    message: String,
    fields: String,
}

impl Line {
    fn push_field(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        if self.fields.len() > MAX_MESSAGE_CHARS * 4 {
            return;
        }
        if !self.fields.is_empty() {
            self.fields.push(' ');
        }
        let _ = write!(self.fields, "{}={}", field.name(), value);
    }

    fn into_text(self) -> String {
        match (self.message.is_empty(), self.fields.is_empty()) {
            (_, true) => self.message,
            (true, false) => self.fields,
            (false, false) => format!("{} {}", self.message, self.fields),
        }
    }
}

impl Visit for Line {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            self.push_field(field, format_args!("{value}"));
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            self.push_field(field, format_args!("{value:?}"));
        }
    }
}

impl<S: Subscriber> Layer<S> for AttentionTracingLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let metadata = event.metadata();
        let level = match *metadata.level() {
            Level::ERROR => Severity::Error,
            Level::WARN => Severity::Warning,
            _ => return,
        };
        if self.ignores(metadata.target()) || RECORDING.with(Cell::get) {
            return;
        }
        let _recording = Recording::start();
        let mut line = Line::default();
        event.record(&mut line);
        let signature = format!("{}::{}", metadata.target(), metadata.name());
        self.manager
            .record_entry(Entry::new(level, line.into_text()).signature(signature));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn records_warn_and_error_by_call_site() {
        let manager = AttentionManager::new();
        let subscriber = tracing_subscriber::registry().with(manager.tracing_layer());
        tracing::subscriber::with_default(subscriber, || {
            tracing::warn!(target: "game", "before any error"); // a warning alone opens nothing
            for chunk in 0..3 {
                tracing::error!(target: "game", chunk, "chunk failed");
            }
            tracing::warn!(target: "gabp_session::bridge", "not the game's trouble");
            tracing::warn!(target: "game", ms = 120, "slow tick");
            tracing::debug!(target: "game", "ignored");
            tracing::error!("this crate's own events are never recorded");
        });
        let item = manager.current().unwrap();
        assert_eq!(item.total_urgent_entries, 4);
        assert_eq!(item.severity, Severity::Error);
        let sample = item.sample.unwrap();
        assert_eq!(sample.len(), 2, "{sample:?}");
        assert_eq!(sample.iter().map(|s| s.repeat_count.get()).sum::<u64>(), 4);
        assert_eq!(sample[1].message.as_str(), "slow tick ms=120");
        assert_eq!(manager.next_sequence(), 5, "the gabp_ event took no number");
    }

    #[test]
    fn ignore_and_include_targets() {
        let manager = AttentionManager::new();
        let layer = manager
            .tracing_layer()
            .include_gabp_targets()
            .ignore_target("noisy");
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(target: "noisy::module", "ignored");
            tracing::error!(target: "gabp_attention::x", "never recorded");
            tracing::error!(target: "gabp_session::x", "recorded now");
        });
        assert_eq!(manager.next_sequence(), 1);
        assert_eq!(manager.current().unwrap().summary.as_str(), "recorded now");
    }
}
