//! [`ConnectionState`]: where a bridge's connection stands, published on a `watch` channel.

/// The state of a bridge's connection, as published by
/// [`Bridge::connection_state`](crate::bridge::Bridge::connection_state).
///
/// A `watch` channel keeps only the latest state, so an observer may miss a short-lived one; the
/// `generation` of [`ConnectionState::Connected`] counts successful handshakes (1 for the first connection,
/// 2 after the first reconnect, ...) so that a change of generation always reveals a reconnect.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionState {
    /// The first handshake has not completed yet.
    Connecting,
    /// Handshake done; calls go through.
    Connected {
        /// How many handshakes have succeeded on this bridge, this one included.
        generation: u64,
    },
    /// The connection was lost and the reconnect policy is trying again; calls fail with
    /// [`Error::Disconnected`](crate::Error::Disconnected) meanwhile.
    Reconnecting {
        /// The attempt about to be made or in progress, from 1.
        attempt: u32,
        /// Why the connection was lost.
        reason: DisconnectReason,
    },
    /// The connection is lost for good (no reconnect policy, or it gave up). Terminal.
    Disconnected {
        /// Why.
        reason: DisconnectReason,
    },
    /// The bridge was closed on purpose (goodbye, close, or every handle dropped). Terminal.
    Closed,
}

impl ConnectionState {
    /// Whether calls can go through now.
    pub fn is_connected(&self) -> bool {
        matches!(self, ConnectionState::Connected { .. })
    }

    /// Whether the state can never change again ([`ConnectionState::Disconnected`] or
    /// [`ConnectionState::Closed`]).
    pub fn is_terminal(&self) -> bool {
        matches!(
            self,
            ConnectionState::Disconnected { .. } | ConnectionState::Closed
        )
    }

    /// The generation of a [`ConnectionState::Connected`] state.
    pub fn generation(&self) -> Option<u64> {
        match self {
            ConnectionState::Connected { generation } => Some(*generation),
            _ => None,
        }
    }
}

/// Why a connection ended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DisconnectReason {
    /// The mod closed the connection (end of stream).
    #[error("the mod closed the connection")]
    PeerClosed,
    /// Reading or writing failed (the text says how).
    #[error("transport failure: {0}")]
    Transport(String),
    /// The mod broke the framing (SPEC/1.0 transport.md §7): where in the stream, and the header seen.
    #[error("the mod broke the framing: {0}")]
    Framing(gabp_transport::FrameFault),
    /// The keepalive heard nothing from the mod within its deadline.
    #[error("the mod stayed silent past the keepalive deadline")]
    KeepaliveTimeout,
    /// The mod refused the token while reconnecting (-32101 or -31000); retrying cannot help.
    #[error("the mod refused the token while reconnecting")]
    AuthenticationFailed,
    /// The reconnect policy made its last attempt.
    #[error("gave up reconnecting after {attempts} attempt(s); last error: {last_error}")]
    GaveUp {
        /// How many attempts were made.
        attempts: u32,
        /// Why the last one failed.
        last_error: String,
    },
    /// The bridge is shutting down.
    #[error("the bridge is shutting down")]
    Shutdown,
}
