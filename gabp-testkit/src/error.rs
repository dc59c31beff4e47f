//! [`TestkitError`]: the one error of this crate, for setting up a mock, a pair, a proxy or a raw client, and
//! for a conformance profile's name.

use gabp_transport::TransportError;

/// Why a mock mod, a connected pair, a proxy or a raw client could not be set up.
///
/// The conformance suite never returns this: whatever goes wrong with the mod under test becomes a failed
/// check in the [`Report`](crate::conformance::Report).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TestkitError {
    /// The mock's [`ModServer`](gabp_session::server::ModServer) refused its configuration (a bad tool name, a
    /// schema that does not compile, a duplicate channel, ...).
    #[error("cannot build the mock mod: {0}")]
    Build(#[source] gabp_session::Error),
    /// The bridge of a pair could not connect or complete the handshake.
    #[error("the bridge could not connect to the mock mod: {0}")]
    Bridge(#[source] gabp_session::Error),
    /// Binding, accepting or connecting failed.
    #[error("transport error: {0}")]
    Transport(#[from] TransportError),
    /// A token could not be generated ([`TransportError::TokenGeneration`]).
    #[error(transparent)]
    Token(TransportError),
    /// A conformance profile name other than `upstream` and `gabp-rs`.
    #[error("unknown profile {0:?} (expected upstream or gabp-rs)")]
    UnknownProfile(String),
    /// A recording could not be read or has nothing to replay.
    #[error("cannot replay the recording: {0}")]
    Replay(#[from] gabp_record::RecordingError),
}
