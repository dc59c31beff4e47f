//! How a bridge reaches a mod again and again (SPEC/1.0 gabp.md §7, transport.md §5): a [`Connector`], the
//! [`ConnectRetry`] before the first handshake, the [`ReconnectPolicy`] after a loss, and the [`Keepalive`]
//! that notices a silent mod.

use std::future::Future;
use std::time::Duration;

use futures::future::BoxFuture;
use gabp_transport::{Connection, TransportError};

/// Establishes a connection to a mod, again and again: what a reconnecting bridge calls after a loss.
///
/// Implemented for any `Fn() -> impl Future<Output = Result<Connection, TransportError>>`.
///
/// ```
/// use gabp_session::bridge::Connector;
/// use gabp_transport::{connect, Endpoint};
///
/// let endpoint: Endpoint = "tcp://127.0.0.1:4545".parse().unwrap();
/// let connector = move || {
///     let endpoint = endpoint.clone();
///     async move { connect(&endpoint).await }
/// };
/// fn takes(_: impl Connector) {}
/// takes(connector);
/// ```
pub trait Connector: Send + Sync + 'static {
    /// Opens a fresh connection.
    fn connect(&self) -> BoxFuture<'static, Result<Connection, TransportError>>;
}

impl<F, Fut> Connector for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Connection, TransportError>> + Send + 'static,
{
    fn connect(&self) -> BoxFuture<'static, Result<Connection, TransportError>> {
        Box::pin(self())
    }
}

/// How long and how often a bridge tries to reach a mod before its first handshake: the mod may still be
/// starting, or restarting. Attempts are spaced by exponential backoff with jitter (50 ms, doubling, at most
/// 1 s by default) until the overall `deadline`; then connecting fails with
/// [`Error::Unreachable`](crate::Error::Unreachable), which names the endpoint and the last error.
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
    pub(super) backoff: ReconnectPolicy,
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

/// When and how often to reconnect after the connection is lost: exponential backoff with jitter.
///
/// The delay before attempt `n` (from 1) is `initial_delay * multiplier^(n-1)`, capped at `max_delay`, then
/// reduced by a random fraction of up to `jitter` (so many bridges do not reconnect in step). After
/// `max_attempts` failed attempts the bridge gives up and reports
/// [`ConnectionState::Disconnected`](crate::bridge::ConnectionState::Disconnected). A refused token stops the
/// attempts at once. The attempt count starts over after every successful reconnect.
///
/// ```
/// use gabp_session::bridge::ReconnectPolicy;
/// use std::time::Duration;
///
/// let policy = ReconnectPolicy::new()
///     .initial_delay(Duration::from_millis(100))
///     .max_delay(Duration::from_secs(2))
///     .jitter(0.0)
///     .max_attempts(Some(5));
/// assert_eq!(policy.delay(1), Duration::from_millis(100));
/// assert_eq!(policy.delay(3), Duration::from_millis(400));
/// assert_eq!(policy.delay(10), Duration::from_secs(2));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ReconnectPolicy {
    initial_delay: Duration,
    max_delay: Duration,
    multiplier: f64,
    jitter: f64,
    max_attempts: Option<u32>,
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        ReconnectPolicy {
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_secs(5),
            multiplier: 2.0,
            jitter: 0.2,
            max_attempts: Some(10),
        }
    }
}

impl ReconnectPolicy {
    /// The defaults: 100 ms, doubling, capped at 5 s, 20 % jitter, 10 attempts.
    pub fn new() -> Self {
        Self::default()
    }

    /// The delay before the first attempt.
    #[must_use]
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = delay;
        self
    }

    /// The longest delay between attempts.
    #[must_use]
    pub fn max_delay(mut self, delay: Duration) -> Self {
        self.max_delay = delay;
        self
    }

    /// The growth factor of the delay (at least 1).
    #[must_use]
    pub fn multiplier(mut self, multiplier: f64) -> Self {
        self.multiplier = if multiplier.is_finite() {
            multiplier.max(1.0)
        } else {
            1.0
        };
        self
    }

    /// The largest random fraction taken off each delay, from 0 (none) to 1.
    #[must_use]
    pub fn jitter(mut self, jitter: f64) -> Self {
        self.jitter = if jitter.is_finite() {
            jitter.clamp(0.0, 1.0)
        } else {
            0.0
        };
        self
    }

    /// How many attempts to make after each loss; `None` for no limit.
    #[must_use]
    pub fn max_attempts(mut self, attempts: Option<u32>) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// The attempt limit.
    pub fn attempts_limit(&self) -> Option<u32> {
        self.max_attempts
    }

    /// The delay before attempt `attempt` (from 1), jitter included.
    pub fn delay(&self, attempt: u32) -> Duration {
        let exponent = i32::try_from(attempt.saturating_sub(1)).unwrap_or(i32::MAX);
        let base = self.initial_delay.as_secs_f64() * self.multiplier.powi(exponent);
        let capped = base.min(self.max_delay.as_secs_f64());
        let factor = 1.0 - self.jitter * fastrand::f64();
        Duration::try_from_secs_f64(capped * factor).unwrap_or(self.max_delay)
    }
}

/// Keepalive: a `session/ping` whenever the mod has been silent for `interval`, and the connection declared
/// dead when nothing at all has arrived for `timeout`.
///
/// ```
/// use gabp_session::bridge::Keepalive;
/// use std::time::Duration;
///
/// let keepalive = Keepalive::new(Duration::from_secs(5)); // dead after 15 s of silence
/// assert_eq!(keepalive.timeout(), Duration::from_secs(15));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    interval: Duration,
    timeout: Duration,
}

impl Keepalive {
    /// Ping after `interval` of silence; declare the mod dead after three intervals of silence.
    pub fn new(interval: Duration) -> Self {
        Keepalive {
            interval,
            timeout: interval.saturating_mul(3),
        }
    }

    /// Declare the mod dead after `timeout` of silence (at least the interval).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(self.interval);
        self
    }

    /// The ping interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The silence after which the mod is declared dead.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_caps_and_jitters_downwards() {
        let p = ReconnectPolicy::new()
            .initial_delay(Duration::from_millis(100))
            .max_delay(Duration::from_secs(1))
            .multiplier(2.0)
            .jitter(0.5);
        for _ in 0..100 {
            let d = p.delay(2);
            assert!(
                d <= Duration::from_millis(200) && d >= Duration::from_millis(100),
                "{d:?}"
            );
            let d = p.delay(30);
            assert!(
                d <= Duration::from_secs(1) && d >= Duration::from_millis(500),
                "{d:?}"
            );
        }
        assert_eq!(p.clone().jitter(f64::NAN).jitter, 0.0);
        assert_eq!(p.multiplier(0.5).multiplier, 1.0);
    }

    #[test]
    fn keepalive_timeout_is_at_least_the_interval() {
        let k = Keepalive::new(Duration::from_secs(2)).with_timeout(Duration::from_secs(1));
        assert_eq!(k.timeout(), Duration::from_secs(2));
    }
}
