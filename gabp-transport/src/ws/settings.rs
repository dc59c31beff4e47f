//! [`WsSettings`]: what a WebSocket listener or connection allows and how it checks liveness.

use std::fmt;
use std::time::Duration;

use crate::token::Token;

/// The subprotocol a WebSocket endpoint answers when the client offers it (SPEC/1.0 transport.md §2.5).
pub const WS_SUBPROTOCOL: &str = "gabp.v1";

/// The prefix of a `Sec-WebSocket-Protocol` entry carrying the token at the handshake:
/// `gabp.token.<token>` (SPEC/1.0 transport.md §2.5).
pub const WS_TOKEN_PROTOCOL_PREFIX: &str = "gabp.token.";

/// Settings of a WebSocket listener ([`Listener::with_ws_settings`](crate::Listener::with_ws_settings))
/// or connection ([`connect_with`](crate::connect_with)), SPEC/1.0 transport.md §2.5.
///
/// - **Origin**: a handshake without an `Origin` header (a program) is accepted; one with an
///   `Origin` is accepted only if the origin is on the allow-list ([`WsSettings::allow_origin`]),
///   which is empty by default: any web page could otherwise open a WebSocket to localhost.
///   A refused origin gets HTTP 403.
/// - **Token at the handshake**: when a token is set ([`WsSettings::with_token`]), a handshake
///   that carries `Authorization: Bearer <token>` or a `Sec-WebSocket-Protocol` entry
///   `gabp.token.<token>` with a wrong token is refused with HTTP 401. Without one the handshake
///   proceeds; `session/hello` still authenticates every session.
/// - **Liveness**: after `ping_interval` without hearing from the peer a Ping is sent; a peer
///   silent for `pong_timeout` after that is dropped (the connection reads as timed out).
#[derive(Clone)]
pub struct WsSettings {
    pub(crate) ping_interval: Duration,
    pub(crate) pong_timeout: Duration,
    pub(crate) handshake_timeout: Duration,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) token: Option<Token>,
}

impl Default for WsSettings {
    fn default() -> Self {
        WsSettings {
            ping_interval: Duration::from_secs(15),
            pong_timeout: Duration::from_secs(15),
            handshake_timeout: Duration::from_secs(10),
            allowed_origins: Vec::new(),
            token: None,
        }
    }
}

impl WsSettings {
    /// The defaults: Ping after 15 s of silence, drop after 15 s more, 10 s for the handshake,
    /// no allowed origins, no handshake token.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Send a Ping after this long without hearing from the peer (at least 1 ms).
    #[must_use]
    pub fn with_ping_interval(mut self, interval: Duration) -> Self {
        self.ping_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// Drop a peer that stays silent this long after a Ping (at least 1 ms).
    #[must_use]
    pub fn with_pong_timeout(mut self, timeout: Duration) -> Self {
        self.pong_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long an accepted TCP connection has to complete the WebSocket handshake.
    #[must_use]
    pub fn with_handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Also accept handshakes whose `Origin` is exactly `origin` (such as
    /// `http://127.0.0.1:8080`, the mod's own inspect page). Compared ASCII case-insensitively,
    /// without a trailing `/`.
    #[must_use]
    pub fn allow_origin(mut self, origin: impl Into<String>) -> Self {
        let origin = normalize_origin(&origin.into());
        if !self.allowed_origins.contains(&origin) {
            self.allowed_origins.push(origin);
        }
        self
    }

    /// Check a token given at the handshake against `token` (see the type's documentation).
    #[must_use]
    pub fn with_token(mut self, token: Token) -> Self {
        self.token = Some(token);
        self
    }

    /// The ping interval.
    #[must_use]
    pub fn ping_interval(&self) -> Duration {
        self.ping_interval
    }

    /// The pong timeout.
    #[must_use]
    pub fn pong_timeout(&self) -> Duration {
        self.pong_timeout
    }

    /// The allowed origins, normalized.
    #[must_use]
    pub fn allowed_origins(&self) -> &[String] {
        &self.allowed_origins
    }

    /// Whether a handshake with this `Origin` header (or none) is accepted.
    #[must_use]
    pub fn origin_allowed(&self, origin: Option<&str>) -> bool {
        match origin {
            None => true,
            Some(origin) => {
                let origin = normalize_origin(origin);
                self.allowed_origins.contains(&origin)
            }
        }
    }
}

impl fmt::Debug for WsSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WsSettings")
            .field("ping_interval", &self.ping_interval)
            .field("pong_timeout", &self.pong_timeout)
            .field("handshake_timeout", &self.handshake_timeout)
            .field("allowed_origins", &self.allowed_origins)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .finish()
    }
}

fn normalize_origin(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_default_to_programs_only() {
        let s = WsSettings::new();
        assert!(s.origin_allowed(None));
        assert!(!s.origin_allowed(Some("https://evil.example")));
        assert!(!s.origin_allowed(Some("null")));
        let s = s.allow_origin("http://127.0.0.1:8080/");
        assert!(s.origin_allowed(Some("HTTP://127.0.0.1:8080")));
        assert!(!s.origin_allowed(Some("http://127.0.0.1:8081")));
        assert!(!s.origin_allowed(Some("https://evil.example")));
    }

    #[test]
    fn debug_never_shows_the_token() {
        let secret = "s".repeat(40);
        let s = WsSettings::new().with_token(Token::new(secret.clone()).expect("token"));
        assert!(!format!("{s:?}").contains(&secret));
    }
}
