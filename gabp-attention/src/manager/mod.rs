//! The mod side: [`AttentionManager`], [`AttentionManagerBuilder`], and the optional mod-side gate
//! ([`ModGateLayer`]).

mod mod_gate;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use gabp_session::server::{CallError, EventPublisher, ModServerBuilder, ServerRequest};
use gabp_types::methods::{
    AttentionAck, AttentionAckParams, AttentionAckResult, AttentionCurrent, AttentionCurrentResult,
    Method,
};
use gabp_types::{Attention, ErrorCode, ErrorObject, MessageId, NonEmptyString, Severity};
use parking_lot::Mutex;
use serde_json::{json, Value};

pub use self::mod_gate::{blocked_error, ModGate, ModGateLayer};
use crate::clock::{Clock, MonotonicClock};
use crate::item::{Core, Entry, LifecycleEvent, Recorded, CHANNELS};
use crate::policy::{Allowlist, AttentionPolicy};
#[cfg(feature = "tracing-layer")]
use crate::tracing_layer::AttentionTracingLayer;

/// The default number of kinds of entry an item's `sample` holds.
pub const DEFAULT_SAMPLE_LIMIT: usize = 5;
/// The default coalescing window of `attention/updated` events.
pub const DEFAULT_UPDATE_WINDOW: Duration = Duration::from_millis(100);
/// The `reason` in the `data` of a call the mod-side gate refused.
pub const BLOCKED_REASON: &str = "blocked_by_attention";

type Hook = Arc<dyn Fn(&LifecycleEvent) + Send + Sync>;

/// Configures an [`AttentionManager`]: policy, sample bound, coalescing window, clock, mod-side gate, hooks.
///
/// ```
/// use std::time::Duration;
/// use gabp_attention::{Allowlist, AttentionManager, AttentionPolicy};
/// use gabp_types::Severity;
///
/// let manager = AttentionManager::builder()
///     .policy(AttentionPolicy::default().open_at(Severity::Warning))
///     .sample_limit(3)
///     .update_window(Duration::from_millis(250))
///     .mod_gate(Allowlist::default().allow_tool("game/save_status"))
///     .on_lifecycle(|event| println!("{:?}: {}", event.kind, event.attention.summary))
///     .build();
/// assert!(manager.current().is_none());
/// ```
#[must_use = "a builder does nothing until built"]
pub struct AttentionManagerBuilder {
    policy: AttentionPolicy,
    sample_limit: usize,
    window: Duration,
    clock: Arc<dyn Clock>,
    gate: Option<Allowlist>,
    hooks: Vec<Hook>,
    id_prefix: Option<String>,
}

impl fmt::Debug for AttentionManagerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttentionManagerBuilder")
            .field("policy", &self.policy)
            .field("sample_limit", &self.sample_limit)
            .field("window", &self.window)
            .field("gate", &self.gate)
            .field("hooks", &self.hooks.len())
            .finish_non_exhaustive()
    }
}

impl Default for AttentionManagerBuilder {
    fn default() -> Self {
        AttentionManagerBuilder {
            policy: AttentionPolicy::default(),
            sample_limit: DEFAULT_SAMPLE_LIMIT,
            window: DEFAULT_UPDATE_WINDOW,
            clock: Arc::new(MonotonicClock::new()),
            gate: None,
            hooks: Vec::new(),
            id_prefix: None,
        }
    }
}

impl AttentionManagerBuilder {
    /// Which entries open an item, and whether it blocks and invalidates state (default
    /// [`AttentionPolicy::default`]).
    pub fn policy(mut self, policy: AttentionPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// How many entries the `sample` holds at most (default 5, at least 1). When more kinds of entry than that
    /// were folded in, the sample keeps the most severe, then most recent, kinds and one last entry counting
    /// the others, so that the repeat counts always add up to `totalUrgentEntries`.
    pub fn sample_limit(mut self, limit: usize) -> Self {
        self.sample_limit = limit.max(1);
        self
    }

    /// The coalescing window of `attention/updated` (default 100 ms): at most one per window, carrying the
    /// latest state. A zero window publishes every change.
    pub fn update_window(mut self, window: Duration) -> Self {
        self.window = window;
        self
    }

    /// The clock the window is measured with (default [`MonotonicClock`]).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Turns on the mod-side gate: once installed, while a blocking item is open, a `tools/call` of a tool
    /// `allow` does not let through is answered `-32401` with
    /// `data: {executed: false, reason: "blocked_by_attention", attention}`, and the tool does not run.
    pub fn mod_gate(mut self, allow: Allowlist) -> Self {
        self.gate = Some(allow);
        self
    }

    /// Calls `hook` with every lifecycle event, in order, as it is published. The hook runs while the
    /// manager's lock is held: it must be quick and must not call the manager.
    pub fn on_lifecycle(mut self, hook: impl Fn(&LifecycleEvent) + Send + Sync + 'static) -> Self {
        self.hooks.push(Arc::new(hook));
        self
    }

    /// The prefix of attention ids (default `att-` and 8 random hex digits, so that a restarted mod never
    /// reuses the id of an item a bridge saw cleared). Ids are the prefix, `-`, and a counter from 1.
    pub fn id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.id_prefix = Some(prefix.into());
        self
    }

    /// Builds the manager.
    #[must_use]
    pub fn build(self) -> AttentionManager {
        let id_prefix = self.id_prefix.unwrap_or_else(|| {
            let random = MessageId::new_v4().to_string();
            format!("att-{}", &random[..8])
        });
        AttentionManager {
            inner: Arc::new(Inner {
                core: Mutex::new(Core::new(
                    self.policy,
                    self.sample_limit,
                    self.window,
                    id_prefix,
                )),
                clock: self.clock,
                publisher: Mutex::new(None),
                runtime: Mutex::new(None),
                gate: self.gate,
                hooks: self.hooks,
            }),
        }
    }
}

/// The mod side of attention: records what goes wrong in the game, summarizes it as at most one open item,
/// publishes its lifecycle and serves `attention/current` and `attention/ack`.
///
/// - [`install`](AttentionManager::install) it on a [`ModServerBuilder`]: one call advertises and serves the
///   two methods and the channels `attention/opened`, `attention/updated` and `attention/cleared` (and adds
///   the mod-side gate when [configured](AttentionManagerBuilder::mod_gate)).
/// - [`record`](AttentionManager::record) entries from anywhere (the game thread included), or let
///   `tracing_layer` (feature `tracing-layer`) record the game's `WARN` and `ERROR` events.
/// - Each entry takes the next number of the diagnostics sequence. Urgent entries (see [`AttentionPolicy`])
///   open an item or fold into the open one: entries of the same signature become one sample entry with a
///   growing `repeatCount`, the sample is bounded, `severity` is the highest level, `totalUrgentEntries`
///   counts every entry, `openedAtSequence` and `latestSequence` are the first and latest entries' numbers.
/// - Lifecycle: `attention/opened` once; `attention/updated` at most once per window (default 100 ms) with
///   the latest state, so a burst of a thousand errors is a handful of events; `attention/cleared` when a
///   bridge acknowledges the item or the game [clears](AttentionManager::clear) it.
///
/// Cheap to clone; clones share the same item.
///
/// ```
/// use gabp_attention::AttentionManager;
/// use gabp_session::server::ModServer;
/// use gabp_types::Severity;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let attention = AttentionManager::new();
/// let server = attention
///     .install(ModServer::builder().token(gabp_transport::Token::generate()?))
///     .build()?;
/// let caps = &server.welcome().capabilities;
/// assert!(caps.has_method("attention/current") && caps.has_method("attention/ack"));
/// assert!(caps.has_event("attention/opened"));
///
/// // The game reports trouble; the first error opens a blocking item.
/// attention.record(Severity::Warning, "autosave is slow"); // below the policy: no item
/// let recorded = attention.record(Severity::Error, "chunk 0,0 failed to save");
/// let item = attention.current().expect("an item is open");
/// assert_eq!(Some(item.attention_id.as_str()), recorded.attention_id.as_deref());
/// assert!(item.blocking);
///
/// // A bridge acknowledges it with attention/ack; the game may also clear it itself.
/// assert!(attention.clear().is_some());
/// assert!(attention.current().is_none());
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct AttentionManager {
    inner: Arc<Inner>,
}

struct Inner {
    core: Mutex<Core>,
    clock: Arc<dyn Clock>,
    publisher: Mutex<Option<EventPublisher>>,
    runtime: Mutex<Option<tokio::runtime::Handle>>,
    gate: Option<Allowlist>,
    hooks: Vec<Hook>,
}

impl fmt::Debug for AttentionManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let core = self.inner.core.lock();
        f.debug_struct("AttentionManager")
            .field("current", &core.current().map(|a| a.attention_id))
            .field("next_sequence", &core.next_sequence())
            .field("mod_gate", &self.inner.gate.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for AttentionManager {
    fn default() -> Self {
        Self::new()
    }
}

impl AttentionManager {
    /// A manager with the default policy, a sample of 5, a 100 ms window and no mod-side gate.
    #[must_use]
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A builder (see [`AttentionManagerBuilder`]).
    pub fn builder() -> AttentionManagerBuilder {
        AttentionManagerBuilder::default()
    }

    /// Enables attention on a mod server being built: serves and advertises `attention/current` and
    /// `attention/ack`, registers the channels `attention/opened`, `attention/updated` and
    /// `attention/cleared`, publishes the lifecycle on them, and adds the mod-side gate if configured.
    ///
    /// Install a manager on one server. Call it from within a Tokio runtime if you can: the manager uses it
    /// to publish a trailing `attention/updated` when a window ends (it also learns the runtime from the
    /// first request it serves).
    pub fn install(&self, builder: ModServerBuilder) -> ModServerBuilder {
        *self.inner.publisher.lock() = Some(builder.event_publisher());
        self.remember_runtime();
        let current = self.clone();
        let ack = self.clone();
        let mut builder = CHANNELS
            .iter()
            .fold(builder, |b, channel| b.channel(*channel))
            .method(AttentionCurrent::NAME, move |req: ServerRequest| {
                let answer = current.serve_current(&req);
                async move { answer.map_err(CallError::from) }
            })
            .method(AttentionAck::NAME, move |req: ServerRequest| {
                let answer = ack.serve_ack(&req);
                async move { answer.map_err(CallError::from) }
            });
        if let Some(allow) = &self.inner.gate {
            let layer = ModGateLayer {
                manager: self.clone(),
                allow: Arc::new(allow.clone()),
                catalog: builder.tool_catalog(),
            };
            builder = builder.layer(layer);
        }
        builder
    }

    /// A `tracing` layer that records the `WARN` and `ERROR` events of the game's logging into this manager
    /// (see [`AttentionTracingLayer`]). Needs the `tracing-layer` feature.
    #[cfg(feature = "tracing-layer")]
    #[must_use]
    pub fn tracing_layer(&self) -> AttentionTracingLayer {
        AttentionTracingLayer::new(self.clone())
    }

    /// Records an entry at `level` saying `message` (its signature is the message).
    pub fn record(&self, level: Severity, message: impl Into<String>) -> Recorded {
        self.record_entry(Entry::new(level, message))
    }

    /// Records `entry`.
    pub fn record_entry(&self, entry: Entry) -> Recorded {
        self.remember_runtime();
        let mut core = self.inner.core.lock();
        let now = self.inner.clock.now();
        let (recorded, event) = core.record(&entry, now);
        if let Some(event) = event {
            self.emit(&event);
        }
        self.arm_timer(&mut core);
        recorded
    }

    /// The open item, if any.
    #[must_use]
    pub fn current(&self) -> Option<Attention> {
        self.inner.core.lock().current()
    }

    /// The open item, if it is blocking.
    #[must_use]
    pub fn blocking(&self) -> Option<Attention> {
        self.inner.core.lock().blocking()
    }

    /// Acknowledges item `attention_id`, as `attention/ack` does: when it is the open item, clears it and
    /// publishes it on `attention/cleared`; otherwise changes nothing and returns the open item.
    pub fn ack(&self, attention_id: &NonEmptyString) -> AttentionAckResult {
        let mut core = self.inner.core.lock();
        let (result, event) = core.ack(attention_id, self.inner.clock.now());
        if let Some(event) = event {
            self.emit(&event);
        }
        result
    }

    /// Clears the open item, if any, and publishes it on `attention/cleared`; returns it as published.
    pub fn clear(&self) -> Option<Attention> {
        let mut core = self.inner.core.lock();
        let event = core.clear(self.inner.clock.now())?;
        self.emit(&event);
        Some(event.attention)
    }

    /// Publishes the `attention/updated` event whose window has ended, if any. The manager does this by itself
    /// on a Tokio timer; call it when you drive the clock yourself (a [`ManualClock`](crate::ManualClock)).
    pub fn flush_due(&self) {
        let mut core = self.inner.core.lock();
        if let Some(event) = core.poll(self.inner.clock.now()) {
            self.emit(&event);
        }
    }

    /// When (on the manager's clock) a pending `attention/updated` event is due, if one is.
    #[must_use]
    pub fn next_update_due(&self) -> Option<Duration> {
        self.inner.core.lock().next_deadline()
    }

    /// The number the next recorded entry will take in the diagnostics sequence.
    #[must_use]
    pub fn next_sequence(&self) -> u64 {
        self.inner.core.lock().next_sequence()
    }

    /// Publishes `event` and runs the hooks; called with the core locked, so that events go out in the order
    /// of the changes.
    fn emit(&self, event: &LifecycleEvent) {
        let publisher = self.inner.publisher.lock().clone();
        if let Some(publisher) = publisher {
            if let Err(e) = publisher.publish(event.kind.channel(), &event.attention) {
                // Before the server is built its channels are not registered yet; nobody can be subscribed.
                tracing::debug!(error = %e, channel = event.kind.channel(), "attention event not published");
            }
        }
        for hook in &self.inner.hooks {
            hook(event);
        }
    }

    fn remember_runtime(&self) {
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            *self.inner.runtime.lock() = Some(handle);
        }
    }

    /// Starts the timer that publishes a pending `attention/updated` at the end of its window, unless one runs.
    fn arm_timer(&self, core: &mut Core) {
        if core.timer_armed || core.next_deadline().is_none() {
            return;
        }
        let handle = tokio::runtime::Handle::try_current()
            .ok()
            .or_else(|| self.inner.runtime.lock().clone());
        let Some(handle) = handle else {
            // No runtime known: the next record, or flush_due, publishes it.
            return;
        };
        core.timer_armed = true;
        let manager = self.clone();
        handle.spawn(async move { manager.run_timer().await });
    }

    async fn run_timer(self) {
        loop {
            let wait = {
                let mut core = self.inner.core.lock();
                match core.next_deadline() {
                    Some(due) => due.saturating_sub(self.inner.clock.now()),
                    None => {
                        core.timer_armed = false;
                        return;
                    }
                }
            };
            tokio::time::sleep(wait).await;
            self.flush_due();
        }
    }

    fn serve_current(&self, req: &ServerRequest) -> Result<Value, ErrorObject> {
        self.remember_runtime();
        if let Some(params) = &req.request.params {
            if !params.is_empty() {
                return Err(invalid_params("attention/current takes no params"));
            }
        }
        to_value(&AttentionCurrentResult {
            attention: self.current(),
            extra: serde_json::Map::new(),
        })
    }

    fn serve_ack(&self, req: &ServerRequest) -> Result<Value, ErrorObject> {
        self.remember_runtime();
        if req.request.params.is_none() {
            return Err(invalid_params(
                "attention/ack requires params {attentionId}",
            ));
        }
        let params: AttentionAckParams = req
            .request
            .params_as()
            .map_err(|e| invalid_params(&e.to_string()))?;
        to_value(&self.ack(&params.attention_id))
    }
}

fn invalid_params(message: &str) -> ErrorObject {
    ErrorObject::new(
        ErrorCode::INVALID_PARAMS,
        format!("invalid params: {message}"),
    )
    .with_data(json!({ "errors": [{ "path": "/params", "message": message }] }))
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value, ErrorObject> {
    serde_json::to_value(value)
        .map_err(|e| ErrorObject::new(ErrorCode::INTERNAL_ERROR, format!("cannot serialize: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use crate::item::LifecycleKind;

    #[test]
    fn hooks_see_the_lifecycle_in_order_and_flush_due_ends_the_window() {
        let clock = ManualClock::new();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let manager = AttentionManager::builder()
            .clock(clock.clone())
            .id_prefix("att-unit")
            .on_lifecycle(move |e| log.lock().push((e.kind, e.at)))
            .build();
        for _ in 0..1000 {
            manager.record(Severity::Error, "burst");
        }
        assert_eq!(manager.next_update_due(), Some(DEFAULT_UPDATE_WINDOW));
        manager.flush_due();
        clock.advance(DEFAULT_UPDATE_WINDOW);
        manager.flush_due();
        manager.flush_due();
        let id = NonEmptyString::new("att-unit-1").unwrap();
        assert!(manager.ack(&id).acknowledged);
        let kinds: Vec<LifecycleKind> = seen.lock().iter().map(|(k, _)| *k).collect();
        assert_eq!(
            kinds,
            [
                LifecycleKind::Opened,
                LifecycleKind::Updated,
                LifecycleKind::Cleared
            ]
        );
        assert_eq!(manager.next_sequence(), 1000);
        assert!(format!("{manager:?}").contains("next_sequence: 1000"));
    }
}
