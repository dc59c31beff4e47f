//! Record and replay for the Game Agent Bridge Protocol (`gabp/1`), specified in SPEC/1.0 recording.md.
//!
//! | piece | what it is |
//! |---|---|
//! | [`format`] | the lines of a recording: a [`Header`], then [`Record`]s (JSON Lines) |
//! | [`Recording`], [`RecordingReader`] | reading one, bounded per line, with errors that name the line |
//! | [`RecordWriter`], [`Redactor`] | writing one, with tokens and the user's JSON pointers redacted |
//! | [`RecordingProxy`] | a transparent proxy between any bridge and any mod that records what passes |
//! | [`ReplayMod`] | a mod that answers from a recording |
//! | [`replay_bridge`] | the bridge side of a recording, replayed against a live mod, with a report of differences |
//! | [`matching`] | how requests are matched to recorded ones, and how two messages differ |
#![forbid(unsafe_code)]

pub mod format;
pub mod matching;
mod proxy;
mod read;
pub mod replay_bridge;
mod replay_mod;
mod write;

pub use format::{Direction, Header, Line, ModIdentity, Record, Redaction, Side, Software};
pub use proxy::{ProxyConfig, ProxyHandle, ProxyStats, RecordingProxy};
pub use read::{Recording, RecordingError, RecordingReader, DEFAULT_MAX_LINE, MAX_RECORDS};
pub use replay_mod::{ReplayError, ReplayHandle, ReplayMod, ReplayOptions};
pub use write::{RecordWriter, Redactor};
