//! The bridge side: a client that connects to a mod.
//!
//! A [`Bridge`] performs the handshake (`session/hello` with the token, this crate's version, the platform, a
//! fresh UUID `launchId` and `clientInfo`), exposes the welcome, and calls the mod's methods with typed or raw
//! requests, many at once on one connection. One engine task drives the connection (the same loop as the mod's);
//! every queue is bounded. In short:
//!
//! - **Calls**: [`Bridge::call_tool`], [`Bridge::call_tool_as`], [`Bridge::request`], typed [`Bridge::call`]
//!   for any core method, and named helpers for each. Each call has a time limit (30 s by default,
//!   [`Bridge::with_timeout`] or [`BridgeRequest::with_timeout`] for one call). Dropping a call's future
//!   forgets it; a late response is discarded quietly.
//! - **Errors** are typed ([`Error`](crate::Error)); Lib.GAB's codes -31000, -31001 and -31002 read as ours.
//! - **Events**: [`Bridge::subscribe`] returns a [`Subscription`] stream, in `seq` order per channel, with
//!   [`SubscriptionItem::Lagged`] where events were lost (see [`events`] for the ordering policy).
//! - **Connection loss** fails every pending call at once with [`Error::Disconnected`](crate::Error::Disconnected),
//!   after delivering the responses already read. An optional [`ReconnectPolicy`] reconnects with backoff, redoes
//!   the handshake and restores subscriptions; [`Bridge::connection_state`] reports it. An optional [`Keepalive`]
//!   pings a silent mod and declares it dead past a deadline.
//! - **Advertised methods only**: a call to a method the welcome does not list fails locally with
//!   [`Error::NotAdvertised`](crate::Error::NotAdvertised), without a round trip (configurable).
//! - **Layers**: the call path is a tower [`Service`](tower::Service) ([`BridgeService`]);
//!   [`BridgeBuilder::layer`] wraps it, and [`BridgeBuilder::service`] gives a layer the handle it needs to
//!   subscribe and follow reconnects.
//! - **Liberal reading, strict writing**: peers are read with the lenient decoder (SPEC/1.0 gabp.md §3.5), welcomes
//!   included; everything sent passes the strict one.
//!
//! ```
//! # use futures::{SinkExt, StreamExt};
//! # async fn demo_mod(mut conn: gabp_transport::Connection) {
//! #     while let Some(Ok(frame)) = conn.next().await {
//! #         let Some(body) = frame.into_body() else { continue };
//! #         let request: serde_json::Value = serde_json::from_slice(&body).unwrap();
//! #         let result = match request["method"].as_str() {
//! #             Some("session/hello") => serde_json::json!({"agentId": "demo",
//! #                 "app": {"name": "Demo", "version": "1.0"},
//! #                 "capabilities": {"methods": ["tools/list", "tools/call"]}, "schemaVersion": "1.1"}),
//! #             _ => serde_json::json!({"value": request["params"]["arguments"]["value"]}),
//! #         };
//! #         let reply = serde_json::json!({"v": "gabp/1", "id": request["id"], "type": "response",
//! #             "result": result});
//! #         conn.send(serde_json::to_vec(&reply).unwrap().into()).await.unwrap();
//! #     }
//! # }
//! use gabp_session::bridge::Bridge;
//! use gabp_session::Error;
//! use gabp_transport::{Connection, Token};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // An in-memory pair; `Bridge::connect` and `Bridge::spawn` reach real mods.
//! let (ours, theirs) = tokio::io::duplex(64 * 1024);
//! tokio::spawn(demo_mod(Connection::new(theirs)));
//!
//! let token = Token::new("0123456789abcdef0123456789abcdef")?;
//! let bridge = Bridge::over(Connection::new(ours), token).await?;
//! assert_eq!(bridge.welcome().agent_id.as_str(), "demo");
//!
//! let echoed = bridge.call_tool("demo/echo", json!({"value": 42})).await?;
//! assert_eq!(echoed["value"], 42);
//!
//! // Not advertised by this mod: refused here, nothing is sent.
//! let refused = bridge.get_state(Default::default()).await.unwrap_err();
//! assert!(matches!(refused, Error::NotAdvertised { .. }));
//! # Ok(())
//! # }
//! ```

mod builder;
mod calls;
mod client;
mod connection;
pub mod events;
mod extensions;
mod link;
mod path;
mod progress;
mod reconnect;
mod redact;
mod request;
mod response;
mod retry;
mod service;
mod session;
mod settings;
mod shared;
mod state;
mod tools;
mod welcome;

pub use crate::error::{
    ParamError, LIBGAB_AUTHENTICATION_FAILED, LIBGAB_NOT_ESTABLISHED, LIBGAB_TOOL_NOT_FOUND,
};
pub use builder::BridgeBuilder;
pub use client::Bridge;
pub use events::{Subscription, SubscriptionItem};
pub use extensions::Extensions;
pub use progress::ProgressUpdates;
pub use reconnect::{ConnectRetry, Connector, Keepalive, ReconnectPolicy};
pub use request::BridgeRequest;
pub use response::BridgeResponse;
pub use service::BridgeService;
pub use settings::{
    DEFAULT_HANDSHAKE_TIMEOUT, DEFAULT_MAX_IN_FLIGHT, DEFAULT_REORDER_CAPACITY,
    DEFAULT_REORDER_WINDOW, DEFAULT_REQUEST_TIMEOUT, DEFAULT_SUBSCRIPTION_QUEUE,
    DEFAULT_SUBSCRIPTION_QUEUE_BYTES, GOODBYE_WAIT,
};
pub use state::{ConnectionState, DisconnectReason};
