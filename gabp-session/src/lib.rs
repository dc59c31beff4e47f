//! GABP sessions: both ends of a connection, the mod side ([`server`]) and the bridge side ([`bridge`]).
//!
//! - A **mod** is the game's side. [`ModServer::builder`] registers what the game offers (typed tools, event
//!   channels, resources, state, custom methods), and the built [`ModServer`] serves it on a
//!   [`Listener`](gabp_transport::Listener) or on one [`Connection`](gabp_transport::Connection), enforcing the
//!   protocol for you: the token check, limits, argument validation, error codes, event `seq`, time limits.
//!   Tools that must run on the game's own thread are queued to [`MainThread`](server::MainThread).
//! - A **bridge** is the automation's side. [`Bridge`] connects ([`Bridge::connect`], [`Bridge::discover`]
//!   through `bridge.json`, [`Bridge::spawn`] for a mod on stdio), does the handshake, runs many calls at once
//!   with time limits and typed errors, and streams events in `seq` order.
//!
//! Whatever fails in this crate, on either side, fails with one [`Error`]: a bridge call, building a server,
//! changing its tools, publishing an event.
//!
//! Layering: `gabp-types` (the messages, no async runtime) → `gabp-codec` (framing) → `gabp-transport`
//! (stdio, TCP, Unix sockets, pipes, `bridge.json`, tokens) → **`gabp-session`** → `gabp-attention` (attention
//! items and the execution gate), `gabp-testkit` (in-memory pairs, `MockMod`), `gabp-hub`, `gabp-mcp` and the
//! `gabp` command.
//!
//! # schemars
//!
//! A typed tool's arguments and result derive `serde` and [`schemars::JsonSchema`], which gives the tool's
//! `inputSchema` and `outputSchema`. The trait is schemars **1.x** (this crate builds with 1.2): a project that
//! depends on schemars itself needs `schemars = "1.2"` (or any later 1.x); with 0.8, its types implement
//! another trait and [`Tool::new`](server::Tool::new) does not accept them. Or do without the dependency: this
//! crate re-exports [`schemars`], and the derive finds it through the name in scope,
//! `use gabp_session::schemars::{self, JsonSchema};`.
//!
//! # Example
//!
//! A mod with one typed tool and one channel, and a bridge that subscribes and calls, connected in memory:
//!
//! ```
//! use futures::StreamExt;
//! use gabp_session::bridge::{Bridge, SubscriptionItem};
//! use gabp_session::schemars::{self, JsonSchema};
//! use gabp_session::server::{CallError, EventPublisher, ModServer, Tool};
//! use gabp_transport::{Connection, Token};
//! use serde::{Deserialize, Serialize};
//! use serde_json::json;
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Teleport { x: f64, y: f64, z: f64 }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Position { x: f64, y: f64, z: f64 }
//!
//! async fn teleport(events: EventPublisher, to: Teleport) -> Result<Position, CallError> {
//!     let position = Position { x: to.x, y: to.y, z: to.z };
//!     events.publish("player/move", &position)?;
//!     Ok(position)
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let token = Token::generate()?;
//! let server = ModServer::builder()
//!     .app("Voxel Sandbox", "0.3.2")
//!     .token(token.clone())
//!     .channel("player/move")
//!     .tool(Tool::new("player/teleport", teleport).title("Teleport the player"))
//!     .build()?;
//!
//! // In memory here; a game serves on a Listener, and a bridge uses Bridge::connect or Bridge::discover.
//! let (mod_side, bridge_side) = tokio::io::duplex(64 * 1024);
//! tokio::spawn(server.serve_connection(Connection::new(mod_side)));
//! let bridge = Bridge::over(Connection::new(bridge_side), token).await?;
//!
//! let mut moves = bridge.subscribe(["player/move"]).await?;
//! let at = bridge.call_tool("player/teleport", json!({"x": 1.0, "y": 64.0, "z": -3.5})).await?;
//! assert_eq!(at["y"], 64.0);
//! let Some(Ok(SubscriptionItem::Event(moved))) = moves.next().await else { panic!("no event") };
//! assert_eq!((moved.seq, &moved.payload), (0, &at));
//!
//! // Arguments that do not match the schema are refused before the handler runs.
//! let refused = bridge.call_tool("player/teleport", json!({"x": "north"})).await.unwrap_err();
//! assert_eq!(refused.code(), Some(gabp_types::ErrorCode::INVALID_PARAMS));
//! bridge.goodbye(None).await?;
//! # Ok(())
//! # }
//! ```
//!
//! Runnable programs: `examples/minimal_mod.rs` (a mod on loopback TCP that writes `bridge.json`),
//! `examples/bridge_subscribe_call.rs` (a bridge for it) and `examples/game_loop.rs` (a synchronous game loop
//! serving main-thread tools); `cargo run -p gabp-session --example minimal_mod`.
#![forbid(unsafe_code)]

pub mod bridge;
mod engine;
mod error;
pub mod server;

pub use bridge::{Bridge, BridgeBuilder};
pub use error::Error;
pub use server::{ModServer, ModServerBuilder};

/// A table keyed by what this side chose (call ids it generated, names it registered or serves): hashed with
/// foldhash, which costs a fraction of SipHash on these short keys. Tables keyed by what a peer sends keep
/// the standard library's SipHash.
pub(crate) type OwnKeyMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
/// A set of what this side chose, hashed as [`OwnKeyMap`] is.
pub(crate) type OwnKeySet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;

/// The schemars this crate's tools take schemas from (1.x), so that tool argument types can derive
/// `JsonSchema` without a schemars dependency of their own.
pub use schemars;

/// The repository README's examples (for mod authors and for bridge authors), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct RepositoryReadmeDoctests;
