//! Transports for the Game Agent Bridge Protocol (`gabp/1`): how a bridge reaches a mod, with the
//! security rules enforced here rather than left to each user.
//!
//! | piece | mod side | bridge side |
//! |---|---|---|
//! | where | [`Endpoint`]: `tcp://127.0.0.1:PORT`, `tcp://[::1]:PORT`, `unix:///path.sock`, `pipe://NAME`, `stdio`, `ws://127.0.0.1:PORT` | same |
//! | connection | [`Listener::bind`] + [`Listener::accept`] | [`connect`], or [`spawn`] a mod and use its stdio |
//! | framing | [`Connection`]: `Content-Length` frames ([`gabp_codec::FrameCodec`]) over any [`ByteStream`]; [`Connection::new`] adapts any `AsyncRead + AsyncWrite`; a WebSocket carries one body per text message and is seen as a [`ByteStream`] of frames | same |
//! | configuration | [`ModSettings`]: explicit values, then the GABS environment, then `bridge.json`, then ([`ModSettings::resolve_or_default`]) a free loopback port and a fresh token; [`ModSettings::publish_bridge_json`] announces the mod | [`BridgeConfig`]: `bridge.json`, written atomically and private ([`BridgeJsonGuard`] removes it) |
//! | secret | [`Token`]: 256 random bits, constant-time comparison, never printed | same |
//!
//! Security rules (SPEC/1.0/security.md): TCP is loopback only, and says "loopback" when it
//! refuses; Unix sockets are mode 0600 from the first instant, never clobber a live socket,
//! replace a stale one and are removed when the listener is dropped; a bridge refuses a Unix
//! socket served by another user before sending anything; `bridge.json` is written through a 0600
//! temporary file, fsynced, renamed into place and checked; tokens come from the OS CSPRNG and
//! appear in no `Debug`, `Display` or error output.
//!
//! Layering: above `gabp-types` and `gabp-codec`, below `gabp-session`, whose `ModServer` serves on a
//! [`Listener`] or a [`Connection`] and whose `Bridge` connects through [`connect`] or [`spawn`]. A game uses
//! this crate for [`ModSettings`] and [`Listener::bind`]; the frames themselves are the session's business.
//!
//! A mod and a bridge over loopback TCP:
//!
//! ```
//! use bytes::Bytes;
//! use futures::{SinkExt, StreamExt};
//! use gabp_transport::{connect, Endpoint, Listener};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The mod: bind an ephemeral loopback port and answer one frame.
//! let listener = Listener::bind(&"tcp://127.0.0.1:0".parse()?).await?;
//! let endpoint: Endpoint = listener.endpoint().clone();
//! let game = tokio::spawn(async move {
//!     let mut conn = listener.accept().await.expect("accept");
//!     if let Some(Ok(frame)) = conn.next().await {
//!         let body = frame.into_body().expect("a body");
//!         conn.send(body).await.expect("send");
//!     }
//! });
//!
//! // The bridge.
//! let mut bridge = connect(&endpoint).await?;
//! bridge.send(Bytes::from_static(br#"{"v":"gabp/1"}"#)).await?;
//! let reply = bridge.next().await.transpose()?.and_then(|f| f.into_body());
//! assert_eq!(reply.as_deref(), Some(&br#"{"v":"gabp/1"}"#[..]));
//! game.await?;
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

mod bridge;
mod config;
mod connection;
mod endpoint;
mod error;
mod listener;
#[cfg(windows)]
mod pipe;
mod process;
mod settings;
mod stream;
mod token;
#[cfg(unix)]
mod unix_socket;
mod ws;

pub use bridge::{connect, connect_stream, connect_with, spawn};
pub use config::{
    BridgeConfig, BridgeJsonGuard, BridgeMetadata, Exposure, BRIDGE_JSON, MAX_BRIDGE_JSON_BYTES,
};
pub use connection::{Connection, FrameReader, FrameWriter};
pub use endpoint::Endpoint;
pub use error::TransportError;
pub use listener::Listener;
pub use process::ModProcess;
pub use settings::{
    ExplicitSettings, ModSettings, SettingSource, GABP_SERVER_PORT, GABP_TOKEN, GABS_GAME_ID,
    MIN_TOKEN_CHARS,
};
pub use stream::ByteStream;
pub use token::Token;
pub use ws::{WsSettings, WS_SUBPROTOCOL, WS_TOKEN_PROTOCOL_PREFIX};

/// The frame types this crate's connections carry, and their error, re-exported from [`gabp_codec`].
pub use gabp_codec::{CodecError, Frame, FrameCodec, FrameFault};

/// The README's example, compiled as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
