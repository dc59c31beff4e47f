//! Record and replay for the Game Agent Bridge Protocol (`gabp/1`), specified in SPEC/1.0 recording.md.
//!
//! | piece | what it is |
//! |---|---|
//! | [`format`](mod@format) | the lines of a recording: a [`Header`], then [`Record`]s (JSON Lines) |
//! | [`Recording`], [`RecordingReader`] | reading one, bounded per line, with errors that name the line |
//! | [`RecordWriter`], [`Redactor`] | writing one, with tokens and the user's JSON pointers redacted |
//! | [`RecordingProxy`] | a transparent proxy between any bridge and any mod that records what passes |
//! | [`ReplayMod`] | a mod that answers from a recording |
//! | [`replay_bridge`] | the bridge side of a recording, replayed against a live mod, with a report of differences |
//! | [`matching`] | how requests are matched to recorded ones, and how two messages differ |
//!
//! A recording captures real traffic once (`gabp record`, or a [`RecordingProxy`] of your own) and serves as a
//! test fixture afterwards: a [`ReplayMod`] answers a bridge as the game did, without the game, and
//! [`replay_bridge`] sends the recorded requests to a new build of the mod and reports what changed.
//!
//! Layering: built on `gabp-types` (the messages), `gabp-codec` and `gabp-transport` (the wire); it does not
//! depend on `gabp-session`, so any bridge and any mod can be recorded. `gabp-testkit` offers it as
//! `MockMod::from_recording`, and the `gabp` command as `gabp record` and `gabp replay`.
//!
//! # Example
//!
//! Record a session between a bridge and a live mod, then replay it without the mod:
//!
//! ```
//! use gabp_record::{ProxyConfig, Recording, RecordingProxy, ReplayMod};
//! use gabp_session::bridge::Bridge;
//! use gabp_session::server::{CallError, ModServer, Tool};
//! use gabp_transport::{Connection, Endpoint, Listener, Token};
//! use serde_json::{json, Value};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mod_token = Token::generate()?;
//! let game = ModServer::builder()
//!     .token(mod_token.clone())
//!     .tool(Tool::new("demo/echo", |v: Value| async move { Ok::<_, CallError>(v) }))
//!     .serve(Listener::bind(&Endpoint::tcp_v4(0)).await?)?;
//!
//! // The proxy listens for bridges (with a token of its own) and forwards to the mod, recording.
//! let file = tempfile::NamedTempFile::new()?;
//! let proxy_token = Token::generate()?;
//! let config = ProxyConfig::new(game.endpoint().clone(), mod_token, proxy_token.clone());
//! let proxy = RecordingProxy::start(Listener::bind(&Endpoint::tcp_v4(0)).await?, config, Box::new(file.reopen()?));
//! let bridge = Bridge::connect(proxy.endpoint(), proxy_token).await?;
//! assert_eq!(bridge.call_tool("demo/echo", json!({"value": 42})).await?["value"], 42);
//! bridge.goodbye(None).await?;
//! let stats = proxy.shutdown().await?;
//! assert_eq!(stats.connections, 1);
//! game.shutdown().await;
//!
//! // The same call, answered from the recording.
//! let recording = Recording::read(file.path())?;
//! let replay = ReplayMod::new(&recording)?;
//! let bridge = Bridge::over(Connection::new(replay.serve_in_memory()), replay.token().clone()).await?;
//! assert_eq!(bridge.call_tool("demo/echo", json!({"value": 42})).await?["value"], 42);
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

mod error;
pub mod format;
pub mod matching;
mod proxy;
mod read;
pub mod replay_bridge;
mod replay_mod;
mod write;

pub use error::RecordingError;
pub use format::{Direction, Header, Line, ModIdentity, Record, Redaction, Side, Software};
pub use proxy::{ProxyConfig, ProxyHandle, ProxyStats, RecordingProxy};
pub use read::{Recording, RecordingReader, DEFAULT_MAX_LINE, MAX_RECORDS};
pub use replay_mod::{ReplayHandle, ReplayMod, ReplayOptions};
pub use write::{RecordWriter, Redactor};
