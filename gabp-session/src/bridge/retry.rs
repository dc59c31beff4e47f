//! Connecting before the first handshake, again and again per [`ConnectRetry`], until the mod answers or the
//! deadline passes (SPEC/1.0 transport.md §5).

use std::sync::Arc;

use gabp_transport::TransportError;
use gabp_types::methods::{Method, SessionHello, WelcomeResult};
use tokio::time::Instant;

use super::reconnect::{ConnectRetry, Connector};
use super::session::{establish, finish, supervise, OnDrop};
use super::shared::Shared;
use super::state::{ConnectionState, DisconnectReason};
use crate::Error;

/// Whether trying again may help: the mod is not (yet) there, or went away during the handshake.
fn worth_retrying(error: &Error) -> bool {
    matches!(
        error,
        Error::Transport(TransportError::Io { .. }) | Error::Disconnected | Error::Timeout { .. }
    )
}

/// Connects with `connector` and performs the first handshake, again and again per `retry`, then supervises
/// the connection as [`start`](super::session::start) does. `target` names what is being reached, for the error.
pub(super) async fn start_retrying(
    shared: &Arc<Shared>,
    connector: Arc<dyn Connector>,
    retry: &ConnectRetry,
    target: String,
) -> Result<Arc<WelcomeResult>, Error> {
    // If this future is dropped before the handshake completes, nothing will ever connect this bridge.
    let mut abandon = OnDrop::new(|| finish(shared, ConnectionState::Closed));
    let started = Instant::now();
    let deadline = started + retry.deadline();
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
                method: format!("connect and {}", SessionHello::NAME),
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
    finish(
        shared,
        ConnectionState::Disconnected {
            reason: DisconnectReason::Transport(last.to_string()),
        },
    );
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
