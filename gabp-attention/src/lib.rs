//! GABP attention (schema line 1.1): how a game stops an agent from acting on stale state.
//!
//! The mod summarizes what went wrong as one **attention item**; the bridge refuses further game-bound calls
//! while a blocking item is open, until the agent has looked at it and acknowledged it. See
//! `SPEC/1.0/attention.md` for the protocol.
//!
//! - **Mod side**: [`AttentionManager`]. [`install`](AttentionManager::install) it on a
//!   [`ModServerBuilder`](gabp_session::server::ModServerBuilder) (one call: `attention/current`,
//!   `attention/ack`, and the channels `attention/opened`, `attention/updated`, `attention/cleared`), then
//!   [`record`](AttentionManager::record) entries, or (with the `tracing-layer` feature) feed it the game's
//!   `tracing` events with `AttentionTracingLayer`. Entries fold by signature into a bounded sample; a policy
//!   ([`AttentionPolicy`]) decides what opens an item and whether it blocks; `updated` events are coalesced
//!   (at most one per window). An optional mod-side gate answers game-bound `tools/call`s `-32401` while a
//!   blocking item is open ([`AttentionManagerBuilder::mod_gate`]).
//! - **Bridge side**: [`AttentionGate`], a tower layer on the bridge's call path (or a plain API): it follows
//!   the item from the attention events (no request per call), refreshes it after reconnects and gaps, refuses
//!   game-bound calls while a blocking item is open with [`BlockedByAttention`] (the call was not executed),
//!   returns the item that opened while a call ran with that call's result ([`RelatedAttention`]), and reopens
//!   on [`ack`](AttentionGate::ack).
//!
//! Layering: on top of `gabp-session` (a [`ModServerBuilder`](gabp_session::server::ModServerBuilder) on the
//! mod side, a tower layer of the [`Bridge`](gabp_session::bridge::Bridge) on the other); `gabp-demo`,
//! `gabp-hub` and `gabp-mcp` use it.
//!
//! Feature `tracing-layer` (off by default): `AttentionTracingLayer` and `AttentionManager::tracing_layer`,
//! which feed the game's `tracing` `WARN` and `ERROR` events to the manager; it adds `tracing-subscriber`.
//!
//! ```
//! use gabp_attention::{AttentionGate, AttentionManager, BlockedByAttention};
//! use gabp_session::bridge::Bridge;
//! use gabp_session::server::ModServer;
//! use gabp_transport::{Connection, Token};
//! use gabp_types::Severity;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let token = Token::generate()?;
//! let attention = AttentionManager::new();
//! let server = attention.install(ModServer::builder().token(token.clone())).build()?;
//! let (mod_side, bridge_side) = tokio::io::duplex(64 * 1024);
//! tokio::spawn(server.serve_connection(Connection::new(mod_side)));
//!
//! let builder = Bridge::builder(token);
//! let gate = AttentionGate::new(&builder.service());
//! let _bridge = builder.layer(gate.layer()).over(Connection::new(bridge_side)).await?;
//! gate.sync().await;
//! assert!(gate.current().is_none());
//!
//! let recorded = attention.record(Severity::Error, "the autosave failed");
//! let item = gate.refresh().await?.expect("the item is open");
//! assert_eq!(Some(item.attention_id.as_str()), recorded.attention_id.as_deref());
//! gate.ack().await?;
//! assert!(gate.current().is_none() && attention.current().is_none());
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

mod clock;
mod gate;
mod item;
mod manager;
mod policy;
#[cfg(feature = "tracing-layer")]
mod tracing_layer;

pub use clock::{Clock, ManualClock, MonotonicClock};
pub use gate::{
    AttentionGate, AttentionGateBuilder, AttentionGateFuture, AttentionGateLayer,
    AttentionGateService, BlockedByAttention, GateError, Gated, RelatedAttention,
    DEFAULT_SYNC_TIMEOUT,
};
pub use item::{
    Entry, LifecycleEvent, LifecycleKind, Recorded, CHANNELS, CLEARED, MAX_MESSAGE_CHARS, OPENED,
    UPDATED,
};
pub use manager::{
    blocked_error, AttentionManager, AttentionManagerBuilder, ModGate, ModGateLayer,
    BLOCKED_REASON, DEFAULT_SAMPLE_LIMIT, DEFAULT_UPDATE_WINDOW,
};
pub use policy::{
    Allowlist, AttentionPolicy, DEFAULT_ALLOWED_TAGS, GABS_EXTRA_TAGS, GABS_TOOL_NAMES,
};
#[cfg(feature = "tracing-layer")]
pub use tracing_layer::{AttentionTracingLayer, DEFAULT_IGNORED_TARGETS};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
