//! Waiting for a mod that is not listening yet, or not again ([`ConnectRetry`]), and finding one through
//! `bridge.json` ([`Bridge::discover`]) (SPEC/1.0 transport.md §4, §5).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use gabp_transport::{BridgeConfig, Endpoint, Token, TransportError};
use gabp_types::methods::WelcomeResult;
use tokio::time::Instant;

use super::builder::Connector;
use super::reconnect::ReconnectPolicy;
use super::session::{establish, supervise, OnDrop};
use super::shared::Shared;
use super::{Bridge, ConnectionState, DisconnectReason};
use crate::Error;

/// How long and how often a bridge tries to reach a mod before its first handshake: the mod may still be
/// starting, or restarting. Attempts are spaced by exponential backoff with jitter (50 ms, doubling, at most
/// 1 s by default) until the overall `deadline`; then connecting fails with [`Error::Unreachable`],
/// which names the endpoint and the last error.
///
/// What is retried: the mod not being there (connection refused, no socket file, a reset) and a handshake that
/// the mod closed or did not answer in time. What is not: a refused token, an endpoint that is not allowed
/// (not loopback, another user's socket), an invalid welcome. After the first handshake a lost connection is a
/// matter for [`ReconnectPolicy`].
///
/// ```
/// use gabp_session::bridge::ConnectRetry;
/// use std::time::Duration;
///
/// let retry = ConnectRetry::new(Duration::from_secs(10))
///     .initial_delay(Duration::from_millis(20))
///     .max_delay(Duration::from_millis(500));
/// assert_eq!(retry.deadline(), Duration::from_secs(10));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ConnectRetry {
    deadline: Duration,
    backoff: ReconnectPolicy,
}

impl ConnectRetry {
    /// Keep trying for `deadline` in all.
    #[must_use]
    pub fn new(deadline: Duration) -> Self {
        ConnectRetry {
            deadline,
            backoff: ReconnectPolicy::new()
                .initial_delay(Duration::from_millis(50))
                .max_delay(Duration::from_secs(1))
                .max_attempts(None),
        }
    }

    /// The delay after the first failed attempt (default 50 ms); it doubles after each further one.
    #[must_use]
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.backoff = self.backoff.initial_delay(delay);
        self
    }

    /// The longest delay between attempts (default 1 s).
    #[must_use]
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.backoff = self.backoff.max_delay(delay);
        self
    }

    /// The overall deadline.
    #[must_use]
    pub fn deadline(&self) -> Duration {
        self.deadline
    }
}

/// Whether trying again may help: the mod is not (yet) there, or went away during the handshake.
fn worth_retrying(error: &Error) -> bool {
    matches!(
        error,
        Error::Transport(TransportError::Io { .. }) | Error::Disconnected | Error::Timeout { .. }
    )
}

/// Connects with `connector` and performs the first handshake, again and again per `retry`, then supervises
/// the connection as [`super::session::start`] does. `target` names what is being reached, for the error.
pub(super) async fn start_retrying(
    shared: &Arc<Shared>,
    connector: Arc<dyn Connector>,
    retry: &ConnectRetry,
    target: String,
) -> Result<Arc<WelcomeResult>, Error> {
    // If this future is dropped before the handshake completes, nothing will ever connect this bridge.
    let mut abandon = OnDrop::new(|| shared.abandon(ConnectionState::Closed));
    let started = Instant::now();
    let deadline = started + retry.deadline;
    let handshake_timeout = shared.settings().handshake_timeout;
    let mut attempts: u32 = 0;
    let last = loop {
        attempts = attempts.saturating_add(1);
        let bound = handshake_timeout.min(deadline.saturating_duration_since(Instant::now()));
        let attempt = async {
            let connection = connector.connect().await?;
            establish(shared, connection, false).await
        };
        let error = match tokio::time::timeout(bound, attempt).await {
            Ok(Ok((running, welcome))) => {
                abandon.disarm();
                tokio::spawn(supervise(shared.clone(), running, Some(connector)));
                return Ok(welcome);
            }
            Ok(Err(e)) if worth_retrying(&e) => e,
            Ok(Err(e)) => break e,
            Err(_) => Error::Timeout {
                method: "connect and session/hello".to_owned(),
                after: bound,
            },
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break error;
        }
        tracing::debug!(%target, attempts, error = %error, "the mod is not reachable yet");
        tokio::time::sleep(retry.backoff.delay(attempts).min(left)).await;
        if Instant::now() >= deadline {
            break error;
        }
    };
    abandon.disarm();
    shared.abandon(ConnectionState::Disconnected {
        reason: DisconnectReason::Transport(last.to_string()),
    });
    if !worth_retrying(&last) {
        return Err(last);
    }
    Err(Error::Unreachable {
        endpoint: target,
        attempts,
        waited: started.elapsed(),
        last: Box::new(last),
    })
}

impl Bridge {
    /// Connects to the mod at `endpoint` with the default options, waiting up to `deadline` for it to come up
    /// (see [`ConnectRetry`]; [`BridgeBuilder::retry_connect`](super::BridgeBuilder::retry_connect) combines it
    /// with other options).
    ///
    /// # Errors
    ///
    /// [`Error::Unreachable`] when no attempt succeeded before the deadline; otherwise as
    /// [`BridgeBuilder::connect`](super::BridgeBuilder::connect), at once.
    pub async fn connect_with_retry(
        endpoint: &Endpoint,
        token: Token,
        deadline: Duration,
    ) -> Result<Bridge, Error> {
        Bridge::builder(token)
            .retry_connect(ConnectRetry::new(deadline))
            .connect(endpoint)
            .await
    }

    /// Reads `bridge.json` at the platform path (SPEC/1.0 transport.md §4.1) and connects to the mod it names,
    /// with its token and the default options. What `gabp call` does without flags.
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when there is no platform path or the file cannot be read (a file others can
    /// read is accepted with a `tracing` warning); otherwise as [`Bridge::discover_at`].
    pub async fn discover() -> Result<Bridge, Error> {
        let path = BridgeConfig::default_path().map_err(Error::Config)?;
        Bridge::discover_at(path).await
    }

    /// Reads the `bridge.json` at `path` and connects to the mod it names, with its token.
    ///
    /// ```
    /// use gabp_session::bridge::Bridge;
    /// use gabp_session::server::ModServer;
    /// use gabp_transport::{BridgeConfig, Endpoint, Listener, Token};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let token = Token::generate()?;
    /// let game = ModServer::builder().token(token.clone()).build()?;
    /// let handle = game.serve(Listener::bind(&Endpoint::tcp_v4(0)).await?);
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("bridge.json");
    /// let _published = BridgeConfig::new(token, handle.endpoint().clone()).publish(&path)?;
    ///
    /// let bridge = Bridge::discover_at(&path).await?;
    /// bridge.ping().await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Config`] when the file cannot be read; [`Error::Transport`] for a `stdio` endpoint
    /// (spawn that mod instead) or a mod that is not there; otherwise as
    /// [`BridgeBuilder::connect`](super::BridgeBuilder::connect).
    pub async fn discover_at(path: impl AsRef<Path>) -> Result<Bridge, Error> {
        let path = path.as_ref().to_owned();
        let config = tokio::task::spawn_blocking(move || BridgeConfig::read(path))
            .await
            .map_err(|e| Error::invalid_request(format!("reading bridge.json failed: {e}")))?
            .map_err(Error::Config)?;
        Bridge::connect(&config.endpoint, config.token).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absence_is_worth_retrying() {
        let refused = TransportError::Io {
            op: "connect to",
            target: "tcp://127.0.0.1:1".into(),
            source: std::io::ErrorKind::ConnectionRefused.into(),
        };
        assert!(worth_retrying(&Error::Transport(refused)));
        assert!(worth_retrying(&Error::Disconnected));
        let foreign = TransportError::ForeignPeer {
            endpoint: "unix:///tmp/x.sock".into(),
            uid: 0,
        };
        assert!(!worth_retrying(&Error::Transport(foreign)));
        assert!(!worth_retrying(&Error::Closed));
        let refused_token = Error::from_remote(
            gabp_types::ErrorObject::new(-32101, "no"),
            "session/hello",
            None,
        );
        assert!(!worth_retrying(&refused_token));
    }
}
