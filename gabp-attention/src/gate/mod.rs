//! The bridge side: [`AttentionGate`], its tower layer [`AttentionGateLayer`], and what they return
//! ([`BlockedByAttention`], [`RelatedAttention`], [`Gated`], [`GateError`]).

mod admission;
mod decision;
mod layer;
mod state;
mod sync;

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use gabp_session::bridge::{BridgeRequest, BridgeResponse, BridgeService};
use gabp_session::Error as SessionError;
use gabp_types::methods::AttentionAckResult;
use gabp_types::Attention;
use parking_lot::Mutex;
use serde_json::Value;

pub use self::decision::{BlockedByAttention, GateError, Gated, RelatedAttention};
pub use self::layer::{AttentionGateFuture, AttentionGateLayer, AttentionGateService};
use self::state::{Admission, GateCore};
use self::sync::follow;
use crate::policy::Allowlist;

/// The default time limit of the requests the gate makes to bring itself in sync (`attention/current`,
/// `tools/list`, `events/subscribe`).
pub const DEFAULT_SYNC_TIMEOUT: Duration = Duration::from_secs(10);

/// How many cleared attention ids the gate remembers, to ignore late events about them.
const CLEARED_MEMORY: usize = 64;

/// How many times one call tries to bring the gate in sync before going ahead with what it knows.
const SYNC_ROUNDS: usize = 3;

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
/// use gabp_session::server::{CallError, ModServer, Tool};
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
///     .tool(Tool::new("world/explode", |_: serde_json::Value| async { Ok::<_, CallError>("boom") }))
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
    /// [`GateError::Bridge`] (an empty id is [`gabp_session::Error::InvalidRequest`]).
    pub async fn ack_id(&self, attention_id: &str) -> Result<AttentionAckResult, GateError> {
        let request = BridgeRequest::from_json(
            "attention/ack",
            serde_json::json!({ "attentionId": attention_id }),
        )?;
        let response = self.send(request).await?;
        serde_json::from_value(response.into_result()).map_err(|e| {
            GateError::Bridge(SessionError::InvalidResult {
                method: "attention/ack".to_owned(),
                reason: e.to_string(),
            })
        })
    }

    /// Sends `request` through the gate on the bare call path (for bridges without the layer): refused with
    /// [`BlockedByAttention`] (inside [`gabp_session::Error::Rejected`]) while a blocking item is open, else sent; a
    /// response carries [`RelatedAttention`] when an item opened or changed meanwhile.
    ///
    /// # Errors
    ///
    /// [`gabp_session::Error::Rejected`] with [`BlockedByAttention`]; otherwise as the call.
    pub async fn send(&self, request: BridgeRequest) -> Result<BridgeResponse, SessionError> {
        let ticket = match self.shared.try_admit(&request, false) {
            Admission::Admitted(ticket) => ticket,
            Admission::Blocked(blocked) => return Err(SessionError::rejected(*blocked)),
            Admission::NeedsSync => self
                .shared
                .admit(&request)
                .await
                .map_err(SessionError::rejected)?,
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
    /// [`gabp_session::Error::Rejected`] with [`BlockedByAttention`]; otherwise as
    /// [`Bridge::call_tool`](gabp_session::bridge::Bridge::call_tool).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<Gated<Value>, SessionError> {
        self.call(BridgeRequest::tool_call(name, arguments)?).await
    }

    /// Sends `request` through the gate (see [`AttentionGate::send`]) and returns its result with the item
    /// that opened or changed while it ran: for a `tools/call` made another way, such as one asking for
    /// progress.
    ///
    /// # Errors
    ///
    /// As [`AttentionGate::call_tool`].
    pub async fn call(&self, request: BridgeRequest) -> Result<Gated<Value>, SessionError> {
        let mut response = self.send(request).await?;
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
