//! GABP sessions: the mod side ([`server`]) and the bridge side ([`bridge`]).
#![forbid(unsafe_code)]

pub mod bridge;
pub mod server;

pub use bridge::{Bridge, BridgeBuilder, BridgeError};
pub use server::{ModServer, ModServerBuilder};
