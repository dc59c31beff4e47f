//! The bridge side: [`AttentionGate`], its tower layer [`AttentionGateLayer`], and what they return
//! ([`BlockedByAttention`], [`RelatedAttention`], [`Gated`], [`GateError`]).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::Stream;
use gabp_session::bridge::{
    BridgeError, BridgeRequest, BridgeResponse, BridgeService, Subscription, SubscriptionItem,
};
use gabp_types::methods::{AttentionAckResult, AttentionCurrentResult};
use gabp_types::{Attention, AttentionState, ErrorCode, Event};
use parking_lot::Mutex;
use serde_json::Value;
use tower::{Layer, Service};

use crate::item::{CHANNELS, CLEARED, OPENED, UPDATED};
use crate::manager::BLOCKED_REASON;
use crate::policy::{never_gated, Allowlist};

/// The default time limit of the requests the gate makes to bring itself in sync (`attention/current`,
/// `tools/list`, `events/subscribe`).
pub const DEFAULT_SYNC_TIMEOUT: Duration = Duration::from_secs(10);

/// How many cleared attention ids the gate remembers, to ignore late events about them.
const CLEARED_MEMORY: usize = 64;

/// How many times one call tries to bring the gate in sync before going ahead with what it knows.
const SYNC_ROUNDS: usize = 3;

/// A game-bound call refused by the gate because a blocking attention item is open. **The call was not
/// executed**: nothing was sent to the mod.
///
/// The [`AttentionGateLayer`] returns it as the source of a [`BridgeError::Rejected`]; get it back with
/// [`BlockedByAttention::from_error`] (or [`BridgeError::rejection`]). Acknowledge the item
/// ([`AttentionGate::ack`]) and call again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} was not executed: {}", call_name(.method, .tool), blocked_by(.attention))]
#[non_exhaustive]
pub struct BlockedByAttention {
    /// The item that blocked the call.
    pub attention: Attention,
    /// The method of the refused call (`tools/call`, or another method the gate was told to gate).
    pub method: String,
    /// The tool of a refused `tools/call`.
    pub tool: Option<String>,
}

fn call_name(method: &str, tool: &Option<String>) -> String {
    match tool {
        Some(tool) => format!("tools/call of {tool}"),
        None => method.to_owned(),
    }
}

fn blocked_by(a: &Attention) -> String {
    format!(
        "blocked by attention item {} ({}, {:?}): {}; acknowledge it with attention/ack",
        a.attention_id,
        if a.state_invalidated {
            "earlier reads may be stale"
        } else {
            "earlier reads stay valid"
        },
        a.severity,
        a.summary
    )
}

impl BlockedByAttention {
    /// Always `false`: a blocked call never ran.
    #[must_use]
    pub fn executed(&self) -> bool {
        false
    }

    /// The refusal inside a [`BridgeError::Rejected`], if it is one.
    ///
    /// ```
    /// use gabp_attention::BlockedByAttention;
    /// use gabp_session::bridge::BridgeError;
    ///
    /// assert!(BlockedByAttention::from_error(&BridgeError::Disconnected).is_none());
    /// ```
    #[must_use]
    pub fn from_error(error: &BridgeError) -> Option<&BlockedByAttention> {
        error.rejection::<BlockedByAttention>()
    }
}

/// Attached to the [`BridgeResponse`] extensions of a call that ran while an attention item opened (or
/// changed): the call completed normally — it was executed — and this is the item that appeared meanwhile.
/// The next game-bound call is blocked if the item is blocking.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RelatedAttention {
    /// The item, as last seen when the call completed.
    pub attention: Attention,
}

/// The result of a call made through [`AttentionGate::call_tool`]: the tool's value, and the attention item
/// that opened or changed while the call ran, if any (see [`RelatedAttention`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Gated<T> {
    /// The call's result.
    pub value: T,
    /// The item that opened or changed while the call ran.
    pub attention: Option<Attention>,
}

/// Why an [`AttentionGate`] operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GateError {
    /// The mod's welcome does not advertise `attention/current`.
    #[error("the mod does not advertise attention")]
    NotSupported,
    /// There is no open item to acknowledge.
    #[error("no attention item is open")]
    NothingOpen,
    /// The bridge failed.
    #[error(transparent)]
    Bridge(#[from] BridgeError),
}

/// Configures an [`AttentionGate`].
///
/// ```
/// use gabp_attention::{Allowlist, AttentionGate};
///
/// let builder = AttentionGate::builder()
///     .allowlist(Allowlist::default())
///     .allow_tag("observe")
///     .allow_tool("game/screenshot")
///     .gate_method("state/set");
/// # let _ = builder;
/// ```
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until built"]
pub struct AttentionGateBuilder {
    allow: Allowlist,
    gated: BTreeSet<String>,
    sync_timeout: Duration,
}

impl Default for AttentionGateBuilder {
    fn default() -> Self {
        AttentionGateBuilder {
            allow: Allowlist::gabs(),
            gated: BTreeSet::from(["tools/call".to_owned()]),
            sync_timeout: DEFAULT_SYNC_TIMEOUT,
        }
    }
}

impl AttentionGateBuilder {
    /// Replaces the allowlist (default [`Allowlist::gabs`]: the tags `diagnostic`, `status`, `read-only`,
    /// `attention-bypass`, `health`, `lifecycle`, and GABS's RimBridge status tools).
    pub fn allowlist(mut self, allow: Allowlist) -> Self {
        self.allow = allow;
        self
    }

    /// Also lets through the tools tagged `tag`.
    pub fn allow_tag(mut self, tag: impl Into<String>) -> Self {
        self.allow = self.allow.allow_tag(tag);
        self
    }

    /// Also lets through the tool `name`.
    pub fn allow_tool(mut self, name: impl Into<String>) -> Self {
        self.allow = self.allow.allow_tool(name);
        self
    }

    /// Also gates `method` (for example `state/set`, or a custom method that changes the game). `tools/call`
    /// is always gated; `session/*`, `attention/*` and `tools/list` never are.
    pub fn gate_method(mut self, method: impl Into<String>) -> Self {
        self.gated.insert(method.into());
        self
    }

    /// The time limit of the requests the gate makes to bring itself in sync (default 10 s).
    pub fn sync_timeout(mut self, timeout: Duration) -> Self {
        self.sync_timeout = timeout;
        self
    }

    /// Builds the gate for the bridge whose handle is `service` (from
    /// [`BridgeBuilder::service`](gabp_session::bridge::BridgeBuilder::service) before connecting, or
    /// [`Bridge::service`](gabp_session::bridge::Bridge::service) after). Within a Tokio runtime, a task
    /// follows the connection: after each handshake it subscribes to the attention channels (once) and
    /// refreshes the item; without one, the first gated call does it.
    pub fn build(self, service: &BridgeService) -> AttentionGate {
        let shared = Arc::new(Shared {
            service: service.clone(),
            allow: self.allow,
            gated: self.gated,
            sync_timeout: self.sync_timeout,
            core: Mutex::new(GateCore::default()),
            sync: tokio::sync::Mutex::new(()),
        });
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(follow(shared.clone()));
        }
        AttentionGate { shared }
    }
}

/// The bridge side of attention: an execution gate that refuses game-bound calls while a blocking item is open.
///
/// - When the welcome advertises `attention/current`, the gate subscribes to the attention channels the mod
///   offers and keeps the current item from their events: **no request per call**. It refreshes the item with
///   `attention/current` after each handshake (the first, and every reconnect) and after a `Lagged` gap in
///   the channels; gated calls wait for that refresh, so a reconnect never lets a call slip past an item.
/// - While a blocking item is open, a game-bound call (`tools/call` of a tool the [`Allowlist`] does not let
///   through, and any method added with [`gate_method`](AttentionGateBuilder::gate_method)) is refused locally
///   with [`BlockedByAttention`]: it was not executed.
/// - A call sent before an item opened completes normally and carries the item as [`RelatedAttention`]; a call
///   that ran is never reported as not executed. The next game-bound call is blocked.
/// - [`ack`](AttentionGate::ack) acknowledges the item and reopens the gate at once. So does an
///   `attention/ack` sent through the layered call path.
///
/// Use it as a tower layer on the bridge's call path ([`AttentionGate::layer`]), or call through it
/// ([`AttentionGate::send`], [`AttentionGate::call_tool`]). Cheap to clone.
///
/// ```
/// use gabp_attention::{AttentionGate, AttentionManager, BlockedByAttention};
/// use gabp_session::bridge::Bridge;
/// use gabp_session::server::{ModServer, Tool, ToolError};
/// use gabp_transport::{Connection, Token};
/// use gabp_types::Severity;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // A mod with attention and one tool that changes the world.
/// let token = Token::generate()?;
/// let attention = AttentionManager::new();
/// let server = attention
///     .install(ModServer::builder().token(token.clone()))
///     .tool(Tool::new("world/explode", |_: serde_json::Value| async { Ok::<_, ToolError>("boom") }))
///     .build()?;
/// let (mod_side, bridge_side) = tokio::io::duplex(64 * 1024);
/// tokio::spawn(server.serve_connection(Connection::new(mod_side)));
///
/// // A bridge with the gate on its call path.
/// let builder = Bridge::builder(token);
/// let gate = AttentionGate::new(&builder.service());
/// let bridge = builder.layer(gate.layer()).over(Connection::new(bridge_side)).await?;
/// gate.sync().await;
/// assert_eq!(bridge.call_tool("world/explode", serde_json::Value::Null).await?, "boom");
///
/// // The game reports an error: the next game-bound call is refused without being sent.
/// attention.record(Severity::Error, "the world is on fire");
/// let refused = loop {
///     match bridge.call_tool("world/explode", serde_json::Value::Null).await {
///         Err(e) => break e,
///         Ok(_) => tokio::task::yield_now().await, // the opened event is on its way
///     }
/// };
/// let blocked = BlockedByAttention::from_error(&refused).expect("blocked by attention");
/// assert!(!blocked.executed());
/// assert_eq!(blocked.attention.summary.as_str(), "the world is on fire");
///
/// // Acknowledge it; the gate reopens.
/// assert!(gate.ack().await?.acknowledged);
/// assert_eq!(bridge.call_tool("world/explode", serde_json::Value::Null).await?, "boom");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct AttentionGate {
    shared: Arc<Shared>,
}

impl fmt::Debug for AttentionGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let core = self.shared.core.lock();
        f.debug_struct("AttentionGate")
            .field("supported", &core.supported)
            .field("synced", &core.synced)
            .field(
                "current",
                &core.current.as_ref().map(|a| a.attention_id.as_str()),
            )
            .field("allow", &self.shared.allow)
            .finish_non_exhaustive()
    }
}

struct Shared {
    service: BridgeService,
    allow: Allowlist,
    gated: BTreeSet<String>,
    sync_timeout: Duration,
    core: Mutex<GateCore>,
    /// One sync at a time; calls that need one wait for it.
    sync: tokio::sync::Mutex<()>,
}

/// What the gate knows. Every change to the item goes through here, under one lock.
#[derive(Default)]
struct GateCore {
    subscription: Option<Subscription>,
    /// The waker of the task that follows the connection: draining with it keeps that task woken by events.
    waker: Option<Waker>,
    /// Whether the mod advertises attention (`None` before the first sync).
    supported: Option<bool>,
    /// The connection generation the gate is in sync with.
    synced: Option<u64>,
    /// Counts the gaps and reconnects seen: each asks for a refresh of the item.
    refresh_wanted: u64,
    /// The value of `refresh_wanted` the last completed refresh answered. The gate is in sync when they are
    /// equal; a refresh in flight does not count until it completes.
    refreshed: u64,
    /// No usable subscription: each gated call refreshes the item (GABS's way).
    refresh_each_call: bool,
    current: Option<Attention>,
    /// Bumped by every event, gap, reconnect and acknowledgement: a snapshot (`attention/current`, the item
    /// in an `attention/ack` answer) taken before a bump is older than what the gate knows, and is ignored.
    epoch: u64,
    /// Bumped whenever an item opens or changes; `last_raised` is that item.
    raised: u64,
    last_raised: Option<Attention>,
    /// Recently cleared ids: late `opened`/`updated` events and snapshots about them are stale.
    cleared: VecDeque<String>,
    /// Tool tags, from `tools/list`.
    tags: HashMap<String, Vec<String>>,
}

/// The gate's decision on a call.
enum Admission {
    Admitted(Ticket),
    Blocked(BlockedByAttention),
    /// The gate must bring itself in sync (after a handshake or a gap) before it can decide.
    NeedsSync,
}

/// What a call noted when it was let through.
#[derive(Debug, Clone, Copy)]
struct Ticket {
    epoch: u64,
    raised: u64,
    kind: CallKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKind {
    Current,
    Ack,
    ToolsList,
    Other,
}

impl GateCore {
    /// Applies every item already received on the subscription, without waiting.
    fn drain(&mut self) {
        let Some(subscription) = self.subscription.as_mut() else {
            return;
        };
        let waker = self
            .waker
            .as_ref()
            .unwrap_or_else(|| futures::task::noop_waker_ref());
        let mut cx = Context::from_waker(waker);
        let mut ended = false;
        let mut items = Vec::new();
        loop {
            match Pin::new(&mut *subscription).poll_next(&mut cx) {
                Poll::Ready(Some(Ok(item))) => items.push(item),
                Poll::Ready(Some(Err(_)) | None) => {
                    ended = true;
                    break;
                }
                Poll::Pending => break,
            }
        }
        if ended {
            self.subscription = None;
        }
        for item in items {
            match item {
                SubscriptionItem::Event(event) => self.apply_event(&event),
                SubscriptionItem::Lagged { channel, missed } => {
                    tracing::debug!(%channel, missed, "attention events lost; refreshing the item");
                    self.epoch += 1;
                    self.refresh_wanted += 1;
                }
                SubscriptionItem::Reconnected => {
                    self.epoch += 1;
                    self.refresh_wanted += 1;
                    // A new connection may be a new mod instance, whose ids may repeat old ones.
                    self.cleared.clear();
                }
                _ => {}
            }
        }
    }

    fn is_cleared(&self, id: &str) -> bool {
        self.cleared.iter().any(|c| c == id)
    }

    fn mark_cleared(&mut self, id: &str) {
        if !self.is_cleared(id) {
            if self.cleared.len() == CLEARED_MEMORY {
                self.cleared.pop_front();
            }
            self.cleared.push_back(id.to_owned());
        }
        if self
            .current
            .as_ref()
            .is_some_and(|c| c.attention_id.as_str() == id)
        {
            self.current = None;
        }
    }

    fn raise(&mut self, attention: Attention) {
        self.raised += 1;
        self.last_raised = Some(attention.clone());
        self.current = Some(attention);
    }

    fn apply_event(&mut self, event: &Event) {
        let channel = event.channel.as_str();
        if !CHANNELS.contains(&channel) {
            return;
        }
        let attention: Attention = match serde_json::from_value(event.payload.clone()) {
            Ok(a) => a,
            Err(e) => {
                tracing::debug!(%channel, error = %e, "ignoring an attention event without an attention object");
                return;
            }
        };
        self.epoch += 1;
        let id = attention.attention_id.as_str().to_owned();
        if channel == CLEARED || attention.state == AttentionState::Cleared {
            if self
                .last_raised
                .as_ref()
                .is_some_and(|r| r.attention_id == attention.attention_id)
            {
                self.last_raised = Some(attention);
            }
            self.mark_cleared(&id);
            return;
        }
        debug_assert!(channel == OPENED || channel == UPDATED);
        if self.is_cleared(&id) {
            tracing::debug!(attention = %id, "ignoring a late event about a cleared item");
            return;
        }
        self.raise(attention);
    }

    /// Applies what the mod said the open item was, unless the gate learned something since it asked.
    fn apply_snapshot(&mut self, snapshot: Option<Attention>, asked_at: u64) {
        if self.epoch != asked_at {
            return;
        }
        match snapshot {
            None => self.current = None,
            Some(a) if a.state == AttentionState::Cleared || self.is_cleared(&a.attention_id) => {
                self.mark_cleared(&a.attention_id.clone());
            }
            Some(a) => {
                if self.current.as_ref() != Some(&a) {
                    self.raise(a);
                }
            }
        }
    }

    fn apply_ack(&mut self, result: &AttentionAckResult, asked_at: u64) {
        self.apply_snapshot(result.current_attention.clone(), asked_at);
        if result.acknowledged {
            self.epoch += 1;
            self.mark_cleared(result.attention_id.as_str());
        }
    }

    /// Learns the item from a mod-side gate's refusal (`-32401` with `reason: blocked_by_attention`).
    fn apply_refusal(&mut self, error: &BridgeError) {
        let Some(object) = error.error_object() else {
            return;
        };
        if object.code != ErrorCode::TOOL_UNAVAILABLE {
            return;
        }
        let Some(data) = object.data.as_ref() else {
            return;
        };
        if data.get("reason").and_then(Value::as_str) != Some(BLOCKED_REASON) {
            return;
        }
        let Some(Ok(attention)) = data
            .get("attention")
            .map(|a| serde_json::from_value::<Attention>(a.clone()))
        else {
            return;
        };
        if attention.state == AttentionState::Open
            && !self.is_cleared(&attention.attention_id)
            && self.current.as_ref() != Some(&attention)
        {
            self.epoch += 1;
            self.raise(attention);
        }
    }

    fn learn_tools(&mut self, listing: &Value, replace: bool) {
        let Some(tools) = listing.get("tools").and_then(Value::as_array) else {
            return;
        };
        if replace {
            self.tags.clear();
        }
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            let tags = tool
                .get("tags")
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            self.tags.insert(name.to_owned(), tags);
        }
    }

    fn blocking(&self) -> Option<&Attention> {
        self.current
            .as_ref()
            .filter(|a| a.blocking && a.state == AttentionState::Open)
    }

    fn in_sync(&self, generation: u64) -> bool {
        self.synced == Some(generation) && self.refreshed == self.refresh_wanted
    }
}

impl Shared {
    fn gated(&self, request: &BridgeRequest) -> bool {
        let method = request.method().as_str();
        !never_gated(method) && self.gated.contains(method)
    }

    fn generation(&self) -> Option<u64> {
        self.service.state().generation()
    }

    /// Decides a call without waiting, when the gate is in sync; says so when it must sync first.
    fn try_admit(&self, request: &BridgeRequest, synced: bool) -> Admission {
        let gated = self.gated(request);
        let mut core = self.core.lock();
        core.drain();
        if gated {
            // With a subscription, a reconnect shows in it (drained above) before calls can go through, so
            // the connection's generation need not be read on this path.
            let stale = core.refresh_each_call
                || core.synced.is_none()
                || core.refreshed != core.refresh_wanted
                || (core.subscription.is_none()
                    && self.generation().is_some_and(|g| !core.in_sync(g)));
            if stale && !synced {
                return Admission::NeedsSync;
            }
            if let Some(attention) = core.blocking() {
                let tool = request.tool_name();
                let allowed = tool
                    .is_some_and(|t| self.allow.allows(t, core.tags.get(t).into_iter().flatten()));
                if !allowed {
                    return Admission::Blocked(BlockedByAttention {
                        attention: attention.clone(),
                        method: request.method().as_str().to_owned(),
                        tool: tool.map(str::to_owned),
                    });
                }
            }
        }
        let kind = match request.method().as_str() {
            "attention/current" => CallKind::Current,
            "attention/ack" => CallKind::Ack,
            "tools/list" => CallKind::ToolsList,
            _ => CallKind::Other,
        };
        Admission::Admitted(Ticket {
            epoch: core.epoch,
            raised: core.raised,
            kind,
        })
    }

    /// Decides a call, bringing the gate in sync first if it must: refused with the blocking item, or let
    /// through with a ticket.
    async fn admit(&self, request: &BridgeRequest) -> Result<Ticket, BlockedByAttention> {
        let mut synced = false;
        loop {
            match self.try_admit(request, synced) {
                Admission::Admitted(ticket) => return Ok(ticket),
                Admission::Blocked(blocked) => return Err(blocked),
                Admission::NeedsSync => {
                    self.ensure_synced().await;
                    synced = true;
                }
            }
        }
    }

    /// Learns from a completed call, and attaches the item that opened or changed while it ran.
    fn complete(&self, ticket: Ticket, result: &mut Result<BridgeResponse, BridgeError>) {
        let mut core = self.core.lock();
        core.drain();
        match (&*result, ticket.kind) {
            (Ok(response), CallKind::Current) => {
                if let Ok(r) =
                    serde_json::from_value::<AttentionCurrentResult>(response.result().clone())
                {
                    core.apply_snapshot(r.attention, ticket.epoch);
                }
            }
            (Ok(response), CallKind::Ack) => {
                if let Ok(r) =
                    serde_json::from_value::<AttentionAckResult>(response.result().clone())
                {
                    core.apply_ack(&r, ticket.epoch);
                }
            }
            (Ok(response), CallKind::ToolsList) => core.learn_tools(response.result(), false),
            (Err(error), _) => core.apply_refusal(error),
            _ => {}
        }
        if core.raised > ticket.raised {
            if let (Ok(response), Some(attention)) = (result.as_mut(), core.last_raised.clone()) {
                response
                    .extensions_mut()
                    .insert(RelatedAttention { attention });
            }
        }
    }

    /// Brings the gate in sync with the current connection, if it is not (after a handshake, a gap, or when
    /// there is no subscription). Returns at once when not connected.
    async fn ensure_synced(&self) {
        let mut forced = self.core.lock().refresh_each_call;
        for _ in 0..SYNC_ROUNDS {
            let Some(generation) = self.generation() else {
                return;
            };
            let needed = |core: &mut GateCore| {
                core.drain();
                !core.in_sync(generation)
            };
            if !forced && !needed(&mut self.core.lock()) {
                return;
            }
            let _one_at_a_time = self.sync.lock().await;
            if !forced && !needed(&mut self.core.lock()) {
                return;
            }
            forced = false;
            self.sync_once(generation).await;
        }
    }

    async fn request(&self, method: &str) -> Result<Value, BridgeError> {
        let request =
            BridgeRequest::from_json(method, Value::Null)?.with_timeout(self.sync_timeout);
        self.service
            .send(request)
            .await
            .map(BridgeResponse::into_result)
    }

    async fn sync_once(&self, generation: u64) {
        let welcome = self.service.welcome();
        let caps = welcome.as_deref().map(|w| &w.capabilities);
        if !caps.is_some_and(|c| c.has_method("attention/current")) {
            let mut core = self.core.lock();
            core.supported = Some(false);
            core.current = None;
            core.synced = Some(generation);
            core.refreshed = core.refresh_wanted;
            core.refresh_each_call = false;
            return;
        }
        let has_subscription = self.core.lock().subscription.is_some();
        if !has_subscription {
            let channels: Vec<&str> = CHANNELS
                .iter()
                .copied()
                .filter(|c| caps.is_some_and(|caps| caps.has_event(c)))
                .collect();
            if !channels.is_empty() {
                match self.service.subscribe(channels).await {
                    Ok(subscription) => {
                        let mut core = self.core.lock();
                        core.subscription = Some(subscription);
                        core.cleared.clear();
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot subscribe to the attention channels; each gated call will ask attention/current");
                    }
                }
            }
        }
        let (asked_at, answers) = {
            let mut core = self.core.lock();
            core.drain();
            (core.epoch, core.refresh_wanted)
        };
        let wants_tools = caps.is_some_and(|c| c.has_method("tools/list"));
        let (current, tools) = futures::join!(self.request("attention/current"), async {
            if wants_tools {
                Some(self.request("tools/list").await)
            } else {
                None
            }
        });
        let mut core = self.core.lock();
        core.drain();
        match current.map(serde_json::from_value::<AttentionCurrentResult>) {
            Ok(Ok(result)) => core.apply_snapshot(result.attention, asked_at),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "invalid attention/current result; keeping the last known item");
            }
            Err(e) => {
                tracing::warn!(error = %e, "attention/current failed; keeping the last known item");
            }
        }
        if let Some(Ok(listing)) = tools {
            core.learn_tools(&listing, true);
        }
        core.supported = Some(true);
        core.synced = Some(generation);
        core.refreshed = answers;
        core.refresh_each_call = core
            .subscription
            .as_ref()
            .is_none_or(|s| s.channels().is_empty());
    }

    /// Ready when the item must be refreshed on a live connection; keeps the follower task woken by events.
    fn poll_refresh_needed(&self, cx: &mut Context<'_>) -> Poll<()> {
        let mut core = self.core.lock();
        if !core.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            core.waker = Some(cx.waker().clone());
        }
        core.drain();
        let stale = self
            .generation()
            .is_some_and(|g| !core.refresh_each_call && !core.in_sync(g));
        if stale {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

/// The task that follows the connection: syncs after each handshake and after gaps, until the bridge ends.
async fn follow(shared: Arc<Shared>) {
    let mut states = shared.service.connection_state();
    loop {
        if states.borrow_and_update().is_terminal() {
            break;
        }
        shared.ensure_synced().await;
        tokio::select! {
            changed = states.changed() => {
                if changed.is_err() {
                    break;
                }
            }
            () = futures::future::poll_fn(|cx| shared.poll_refresh_needed(cx)) => {}
        }
    }
    let mut core = shared.core.lock();
    core.waker = None;
    core.subscription = None;
}

impl AttentionGate {
    /// A gate with the default configuration (see [`AttentionGateBuilder`]) for the bridge whose handle is
    /// `service`.
    #[must_use]
    pub fn new(service: &BridgeService) -> Self {
        Self::builder().build(service)
    }

    /// A builder.
    pub fn builder() -> AttentionGateBuilder {
        AttentionGateBuilder::default()
    }

    /// The tower layer to put on the bridge's call path
    /// ([`BridgeBuilder::layer`](gabp_session::bridge::BridgeBuilder::layer)).
    #[must_use]
    pub fn layer(&self) -> AttentionGateLayer {
        AttentionGateLayer { gate: self.clone() }
    }

    /// Waits until the gate is in sync with the current connection (subscribed, item refreshed). Gated calls
    /// do this themselves; call it to know the gate's view is current. Returns at once when not connected.
    pub async fn sync(&self) {
        self.shared.ensure_synced().await;
    }

    /// The open item, as the gate knows it now.
    #[must_use]
    pub fn current(&self) -> Option<Attention> {
        let mut core = self.shared.core.lock();
        core.drain();
        core.current.clone()
    }

    /// The open item, if it blocks game-bound calls.
    #[must_use]
    pub fn blocking(&self) -> Option<Attention> {
        let mut core = self.shared.core.lock();
        core.drain();
        core.blocking().cloned()
    }

    /// Whether the mod advertises attention (`None` until the gate first synced).
    #[must_use]
    pub fn is_supported(&self) -> Option<bool> {
        self.shared.core.lock().supported
    }

    /// Asks the mod for the open item (`attention/current`) and returns it.
    ///
    /// # Errors
    ///
    /// [`GateError::NotSupported`] when the mod does not advertise attention; [`GateError::Bridge`].
    pub async fn refresh(&self) -> Result<Option<Attention>, GateError> {
        self.sync().await;
        if self.is_supported() == Some(false) {
            return Err(GateError::NotSupported);
        }
        let request = BridgeRequest::from_json("attention/current", Value::Null)?;
        self.send(request).await?;
        Ok(self.current())
    }

    /// Acknowledges the open item (`attention/ack` with its id) and reopens the gate.
    ///
    /// # Errors
    ///
    /// [`GateError::NothingOpen`] when no item is open; [`GateError::NotSupported`]; [`GateError::Bridge`].
    pub async fn ack(&self) -> Result<AttentionAckResult, GateError> {
        self.sync().await;
        if self.is_supported() == Some(false) {
            return Err(GateError::NotSupported);
        }
        let id = self.current().ok_or(GateError::NothingOpen)?.attention_id;
        self.ack_id(id.as_str()).await
    }

    /// Acknowledges item `attention_id` (`attention/ack`).
    ///
    /// # Errors
    ///
    /// [`GateError::Bridge`] (an empty id is [`BridgeError::InvalidRequest`]).
    pub async fn ack_id(&self, attention_id: &str) -> Result<AttentionAckResult, GateError> {
        let request = BridgeRequest::from_json(
            "attention/ack",
            serde_json::json!({ "attentionId": attention_id }),
        )?;
        let response = self.send(request).await?;
        serde_json::from_value(response.into_result()).map_err(|e| {
            GateError::Bridge(BridgeError::Protocol(
                gabp_session::bridge::ProtocolError::InvalidResult {
                    method: "attention/ack".to_owned(),
                    reason: e.to_string(),
                },
            ))
        })
    }

    /// Sends `request` through the gate on the bare call path (for bridges without the layer): refused with
    /// [`BlockedByAttention`] (inside [`BridgeError::Rejected`]) while a blocking item is open, else sent; a
    /// response carries [`RelatedAttention`] when an item opened or changed meanwhile.
    ///
    /// # Errors
    ///
    /// [`BridgeError::Rejected`] with [`BlockedByAttention`]; otherwise as the call.
    pub async fn send(&self, request: BridgeRequest) -> Result<BridgeResponse, BridgeError> {
        let ticket = match self.shared.try_admit(&request, false) {
            Admission::Admitted(ticket) => ticket,
            Admission::Blocked(blocked) => return Err(BridgeError::rejected(blocked)),
            Admission::NeedsSync => self
                .shared
                .admit(&request)
                .await
                .map_err(BridgeError::rejected)?,
        };
        let mut result = self.shared.service.send(request).await;
        self.shared.complete(ticket, &mut result);
        result
    }

    /// Calls tool `name` through the gate (see [`AttentionGate::send`]) and returns its value with the item
    /// that opened or changed while it ran.
    ///
    /// # Errors
    ///
    /// [`BridgeError::Rejected`] with [`BlockedByAttention`]; otherwise as
    /// [`Bridge::call_tool`](gabp_session::bridge::Bridge::call_tool).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Gated<Value>, BridgeError> {
        let mut response = self
            .send(BridgeRequest::tool_call(name, arguments)?)
            .await?;
        let attention = response
            .extensions_mut()
            .remove::<RelatedAttention>()
            .map(|r| r.attention);
        Ok(Gated {
            value: response.into_result(),
            attention,
        })
    }
}

/// The tower layer of an [`AttentionGate`] on a bridge's call path. Get it from [`AttentionGate::layer`].
#[derive(Debug, Clone)]
pub struct AttentionGateLayer {
    gate: AttentionGate,
}

impl AttentionGateLayer {
    /// The gate (to [`ack`](AttentionGate::ack) its item, or look at it).
    #[must_use]
    pub fn gate(&self) -> &AttentionGate {
        &self.gate
    }
}

impl<S> Layer<S> for AttentionGateLayer {
    type Service = AttentionGateService<S>;

    fn layer(&self, inner: S) -> AttentionGateService<S> {
        AttentionGateService {
            inner,
            gate: self.gate.clone(),
        }
    }
}

/// The service of [`AttentionGateLayer`].
#[derive(Debug, Clone)]
pub struct AttentionGateService<S> {
    inner: S,
    gate: AttentionGate,
}

impl<S> Service<BridgeRequest> for AttentionGateService<S>
where
    S: Service<BridgeRequest, Response = BridgeResponse, Error = BridgeError>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = BridgeResponse;
    type Error = BridgeError;
    type Future = AttentionGateFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BridgeError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: BridgeRequest) -> Self::Future {
        let shared = &self.gate.shared;
        let state = match shared.try_admit(&request, false) {
            // The common case: decided at once, no allocation beyond the inner call's.
            Admission::Admitted(ticket) => State::Running {
                inner: self.inner.call(request),
                ticket,
                shared: shared.clone(),
            },
            Admission::Blocked(blocked) => State::Done {
                result: Some(Err(BridgeError::rejected(blocked))),
            },
            // After a handshake or a gap: wait for the refresh, then decide. The service that was polled
            // ready goes with this call; a fresh clone stays for the next.
            Admission::NeedsSync => {
                let clone = self.inner.clone();
                let mut inner = std::mem::replace(&mut self.inner, clone);
                let shared = shared.clone();
                State::Syncing {
                    future: Box::pin(async move {
                        let ticket = shared
                            .admit(&request)
                            .await
                            .map_err(BridgeError::rejected)?;
                        let mut result = inner.call(request).await;
                        shared.complete(ticket, &mut result);
                        result
                    }),
                }
            }
        };
        AttentionGateFuture { state }
    }
}

pin_project_lite::pin_project! {
    /// The future of [`AttentionGateService`]: the inner call, a refusal, or a wait for the gate to sync.
    pub struct AttentionGateFuture<F> {
        #[pin]
        state: State<F>,
    }
}

pin_project_lite::pin_project! {
    #[project = StateProj]
    enum State<F> {
        Running {
            #[pin]
            inner: F,
            ticket: Ticket,
            shared: Arc<Shared>,
        },
        Done {
            result: Option<Result<BridgeResponse, BridgeError>>,
        },
        Syncing {
            future: BoxFuture<'static, Result<BridgeResponse, BridgeError>>,
        },
    }
}

impl<F> fmt::Debug for AttentionGateFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AttentionGateFuture")
            .finish_non_exhaustive()
    }
}

impl<F> Future for AttentionGateFuture<F>
where
    F: Future<Output = Result<BridgeResponse, BridgeError>>,
{
    type Output = Result<BridgeResponse, BridgeError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Running {
                inner,
                ticket,
                shared,
            } => {
                let mut result = std::task::ready!(inner.poll(cx));
                shared.complete(*ticket, &mut result);
                Poll::Ready(result)
            }
            // Polled again after it answered: a misuse of the future; answer as a closed bridge would.
            StateProj::Done { result } => {
                Poll::Ready(result.take().unwrap_or(Err(BridgeError::Closed)))
            }
            StateProj::Syncing { future } => future.as_mut().poll(cx),
        }
    }
}
