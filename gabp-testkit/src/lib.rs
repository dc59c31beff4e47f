//! Test support for the Game Agent Bridge Protocol (`gabp/1`): what other crates' tests use to get a mod, a
//! bridge and a wire between them, and the live conformance suite.
//!
//! Layering: built on `gabp-session` (a [`MockMod`] is a real `ModServer`; the bridges are real `Bridge`s),
//! `gabp-transport` and `gabp-record`. Add it as a dev-dependency. `tests/downstream.rs` in this crate is a
//! project's test suite written as a user would: its bridge code against a [`MockMod`], its own mod through
//! [`pair_with`].
//!
//! | piece | what it is |
//! |---|---|
//! | [`pair`], [`MockMod::pair`] | a [`MockMod`] and a handshaken [`Bridge`](gabp_session::bridge::Bridge), connected in memory |
//! | [`pair_with`], [`ServerPair::builder`] | your own [`ModServer`](gabp_session::server::ModServer) and a handshaken bridge, connected the same way |
//! | [`MockMod`], [`MockTool`] | a scriptable mod on a real [`ModServer`](gabp_session::server::ModServer): tools with canned values, errors or closures; channels; resources; state |
//! | [`MockMod::from_recording`], [`ReplayMod`] | a mod that answers from a recording made with `gabp record` (SPEC/1.0 recording.md) |
//! | [`Recorder`] | every frame between them, in both directions, with [`requests`](Recorder::requests), [`events`](Recorder::events), [`assert_sent_strictly_valid`](Recorder::assert_sent_strictly_valid) and more |
//! | [`FaultProxy`], [`Fault`], [`Faults`] | a frame-level proxy between any bridge and any mod (in memory or on loopback TCP) that delays, drops, corrupts, re-numbers and injects |
//! | [`FaultyMod`] | mods that break one rule each, for testing conformance runners and bridges |
//! | [`conformance`] | the live conformance suite: [`conformance::run`] checks a running mod over the wire and returns a [`conformance::Report`] |
//! | [`wire`] | for tests that speak the wire themselves: [`wire::frame`], [`wire::read_frame`], and [`wire::RawClient`], a bridge written by hand that decodes everything strictly ([`wire::BlockingClient`] for blocking tests); [`wire::RawMod`], a mod written by hand for bridge tests |
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use futures::StreamExt;
//! use gabp_session::bridge::SubscriptionItem;
//! use gabp_testkit::Fault;
//! use serde_json::json;
//!
//! let pair = gabp_testkit::pair().await?;
//!
//! // Calls go through the recorder...
//! pair.bridge.call_tool("player/teleport", json!({"x": 1, "y": 2, "z": 3})).await?;
//! assert_eq!(pair.recorder.tool_calls("player/teleport").len(), 1);
//!
//! // ...and faults apply on the wire: the next event skips a seq value, and the bridge notices.
//! let mut moves = pair.bridge.subscribe(["player/move"]).await?;
//! pair.mock.publish("player/move", json!({"x": 1}))?;
//! let Some(Ok(SubscriptionItem::Event(first))) = moves.next().await else { panic!() };
//! pair.faults.inject(Fault::skip_event_seq());
//! pair.mock.publish("player/move", json!({"x": 2}))?;
//! let Some(Ok(SubscriptionItem::Lagged { missed, .. })) = moves.next().await else { panic!() };
//! let Some(Ok(SubscriptionItem::Event(second))) = moves.next().await else { panic!() };
//! assert_eq!((missed, second.seq), (1, first.seq + 2));
//!
//! pair.recorder.assert_sent_strictly_valid();
//! # Ok(())
//! # }
//! ```
#![forbid(unsafe_code)]

pub mod conformance;
mod error;
mod fault;
mod faulty;
mod mock;
mod pair;
mod proxy;
mod record;
mod server_pair;
pub mod wire;

pub use error::TestkitError;
pub use fault::{Fault, Faults};
pub use faulty::{FaultyMod, FaultyModServer};
pub use mock::{MockMod, MockModBuilder, MockTool, ToolCall};
pub use pair::{pair, LinkedConnection, Pair, PairBuilder};
pub use proxy::{FaultProxy, ProxyHandle, DEFAULT_PROXY_MAX_FRAME, MALFORMED_HEADER};
pub use record::{Direction, RecordedFrame, Recorder, StrictViolation};
pub use server_pair::{pair_with, ServerPair, ServerPairBuilder};

pub use gabp_record::{ReplayHandle, ReplayMod, ReplayOptions};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
