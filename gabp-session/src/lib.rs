//! GABP sessions: the mod side ([`server`]) and the bridge side ([`bridge`]).
#![forbid(unsafe_code)]

pub mod bridge;
mod cancel;
mod engine;
pub mod server;

pub use bridge::{Bridge, BridgeBuilder, BridgeError};
pub use server::{ModServer, ModServerBuilder};

/// The repository README's examples (for mod authors and for bridge authors), compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct RepositoryReadmeDoctests;
