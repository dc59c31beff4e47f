//! The mod side: a server that serves tools, events, resources and state to bridges.
//!
//! A game (or anything a bridge should drive) builds a [`ModServer`] with [`ModServer::builder`], registers
//! what it offers, and serves it on a [`Listener`](gabp_transport::Listener) (TCP loopback, a Unix socket,
//! stdio, a named pipe) or on any single [`Connection`](gabp_transport::Connection):
//!
//! - [`Tool`]s with typed input and output, whose JSON Schemas come from `schemars` and whose arguments are
//!   validated before the handler runs; or raw JSON tools with explicit schemas; async, or run on the game's
//!   main thread through [`MainThread::pump_with`];
//! - event channels, published with the cloneable [`EventPublisher`] (per-channel `seq` from 0, bounded
//!   per-connection queues that drop rather than block);
//! - tools added and removed while serving, announced on `tools/changed` ([`ToolRegistry`],
//!   [`ModServerBuilder::dynamic_tools`]; SPEC/1.0 extensions.md §tools-changed);
//! - [`Resource`]s (text or binary), `state/get` and `state/set` handlers, custom methods;
//! - any tower [`layer`](ModServerBuilder::layer) in front of the handlers.
//!
//! Every rule of the protocol is enforced for you (SPEC/1.0 gabp.md §7, transport.md §7): authentication first, constant-time
//! token check, advertised limits, per-frame error answers, panic isolation, time limits. The rules are tower
//! layers in [`layer`], each usable and testable alone.
//!
//! ```
//! use gabp_session::server::{CallError, ModServer, Tool};
//! use gabp_transport::{Endpoint, Listener, Token};
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Deserialize, JsonSchema)]
//! struct Teleport { x: f64, y: f64, z: f64 }
//!
//! #[derive(Serialize, JsonSchema)]
//! struct Position { x: f64, y: f64, z: f64 }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let builder = ModServer::builder()
//!     .app("Voxel Sandbox", "0.3.2")
//!     .token(Token::generate()?)
//!     .channel("player/move");
//! let events = builder.event_publisher();
//! let server = builder
//!     .tool(Tool::new("player/teleport", move |t: Teleport| {
//!         let events = events.clone();
//!         async move {
//!             let position = Position { x: t.x, y: t.y, z: t.z };
//!             events.publish("player/move", &position).map_err(|e| CallError::new(e.to_string()))?;
//!             Ok::<_, CallError>(position)
//!         }
//!     }))
//!     .build()?;
//!
//! let handle = server.serve(Listener::bind(&Endpoint::tcp_v4(0)).await?);
//! // ... the game runs; bridges connect to handle.endpoint() ...
//! handle.shutdown().await;
//! # Ok(())
//! # }
//! ```

mod admission;
mod arguments;
mod builder;
mod catalog;
mod clock;
mod connection;
mod context;
mod env;
mod error;
mod events;
mod handler;
mod input;
pub mod layer;
mod limits;
mod main_thread;
mod pattern;
mod progress;
mod registry;
mod resource;
mod router;
mod serve;
mod session;
mod stack;
mod time_limit;
mod tool;
mod welcome;

pub use builder::ModServerBuilder;
pub use catalog::ToolCatalog;
pub use clock::GameClock;
pub use context::{CallContext, FromContext, State, StateType};
pub use env::EnvSpec;
pub use error::CallError;
pub use events::{EventPublisher, Published};
pub use handler::Handler;
pub use input::Input;
pub use limits::ServerLimits;
pub use main_thread::{MainThread, PumpReport};
pub use pattern::{MAX_GLOB_BYTES, MAX_GLOB_WILDCARDS};
pub use progress::Progress;
pub use registry::ToolRegistry;
pub use resource::Resource;
pub use router::Router;
pub use serve::{ModServer, ServeHandle, ServeStatus, ShutdownTrigger};
pub use session::{BridgeInfo, CloseReason, ServerRequest, Session};
pub use tool::Tool;
pub use welcome::{CHANNEL_PATTERNS_EXTENSION, TOOLS_CHANGED_EXTENSION};

/// The README's examples (the mod side and whatever else it holds), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
