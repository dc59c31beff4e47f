//! [`ServerLimits`]: what the mod enforces and advertises (SPEC/1.0 transport.md §8, security.md §7).

use std::time::Duration;

use gabp_types::{BoundedU64, Limits};

use crate::Error;

/// The mod's limits (SPEC/1.0 transport.md §8, security.md §7). The first four are advertised in the welcome's `capabilities.limits`
/// and all are enforced.
///
/// ```
/// use std::time::Duration;
/// use gabp_session::server::ServerLimits;
///
/// let limits = ServerLimits::default()
///     .with_request_timeout(Duration::from_secs(5))
///     .with_max_connections(2);
/// assert_eq!(limits.max_message_size, 1024 * 1024);
/// assert_eq!(limits.max_concurrent_requests, 64);
/// assert_eq!(limits.max_connections, 2);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerLimits {
    /// Largest message body read or written, in bytes (default 1 MiB; at least 1024). Advertised as
    /// `maxMessageSize`.
    pub max_message_size: usize,
    /// Largest header block read, in bytes (default 8 KiB); a longer one is a fatal framing error.
    pub max_header_size: usize,
    /// Requests of one connection in flight at once (default 64). Advertised as `maxConcurrentRequests`.
    pub max_concurrent_requests: usize,
    /// Time limit of a request (default 30 s). Advertised, in whole seconds rounded up, as `requestTimeout`.
    pub request_timeout: Duration,
    /// Connections served at once (default 10); one more is closed at once.
    pub max_connections: usize,
    /// Time a new connection has to complete `session/hello` (default 10 s).
    pub hello_timeout: Duration,
    /// Events queued per connection (default 1024); when full, that connection loses events.
    pub event_queue: usize,
    /// Bytes of the events queued per connection (default 4 MiB); when full, that connection loses events.
    /// One event is always let in when its queue is empty, whatever its size.
    pub event_queue_bytes: usize,
    /// Answers queued per connection waiting for the bridge to read (default 256); when full, the
    /// connection stops reading requests until the bridge reads.
    pub outgoing_queue: usize,
    /// Bytes of the answers queued per connection and of the requests being handled (default 4 MiB); when
    /// full, the connection stops reading requests until the bridge reads. A bridge that has not said hello
    /// and fills its queue is closed ([`CloseReason::NotReading`](super::CloseReason::NotReading)).
    pub outgoing_queue_bytes: usize,
    /// Calls queued for the game's main thread, mod-wide (default 1024); when full, calls are answered
    /// `-32401` (retryable).
    pub main_thread_queue: usize,
    /// Bytes of content items (pictures, sound) one tool result may carry, decoded (default 512 KiB; never
    /// more than fits in `max_message_size` as base64). Advertised in the `content` extension as `maxBytes`; a
    /// result over it is answered `-32603` (SPEC/1.0 extensions.md §content).
    pub max_content_bytes: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_message_size: gabp_codec::DEFAULT_MAX_BODY_SIZE,
            max_header_size: gabp_codec::DEFAULT_MAX_HEADER_SIZE,
            max_concurrent_requests: 64,
            request_timeout: Duration::from_secs(30),
            max_connections: 10,
            hello_timeout: Duration::from_secs(10),
            event_queue: 1024,
            event_queue_bytes: 4 * 1024 * 1024,
            outgoing_queue: 256,
            outgoing_queue_bytes: 4 * 1024 * 1024,
            main_thread_queue: 1024,
            max_content_bytes: 512 * 1024,
        }
    }
}

/// A `with_` setter for each field, for chaining.
macro_rules! setters {
    ($($setter:ident => $field:ident: $ty:ty),* $(,)?) => {
        impl ServerLimits {
            $(
                #[doc = concat!("Sets [`ServerLimits::", stringify!($field), "`].")]
                #[must_use]
                pub fn $setter(mut self, value: $ty) -> Self {
                    self.$field = value;
                    self
                }
            )*
        }
    };
}

setters! {
    with_max_message_size => max_message_size: usize,
    with_max_header_size => max_header_size: usize,
    with_max_concurrent_requests => max_concurrent_requests: usize,
    with_request_timeout => request_timeout: Duration,
    with_max_connections => max_connections: usize,
    with_hello_timeout => hello_timeout: Duration,
    with_event_queue => event_queue: usize,
    with_outgoing_queue => outgoing_queue: usize,
    with_event_queue_bytes => event_queue_bytes: usize,
    with_outgoing_queue_bytes => outgoing_queue_bytes: usize,
    with_main_thread_queue => main_thread_queue: usize,
    with_max_content_bytes => max_content_bytes: usize,
}

impl ServerLimits {
    /// The content limit in force: `max_content_bytes`, or what fits in a message as base64 if that is less.
    pub(crate) fn content_limit(&self) -> usize {
        self.max_content_bytes.min(self.max_message_size / 4 * 3)
    }

    pub(crate) fn check(&self) -> Result<(), Error> {
        let bad = |limit: &'static str, reason: &str| {
            Err(Error::InvalidLimit {
                limit,
                reason: reason.to_owned(),
            })
        };
        if self.max_message_size < 1024 {
            return bad("max_message_size", "must be at least 1024 bytes");
        }
        if self.max_header_size < 64 {
            return bad("max_header_size", "must be at least 64 bytes");
        }
        for (name, value) in [
            ("max_concurrent_requests", self.max_concurrent_requests),
            ("max_connections", self.max_connections),
            ("event_queue", self.event_queue),
            ("event_queue_bytes", self.event_queue_bytes),
            ("outgoing_queue", self.outgoing_queue),
            ("outgoing_queue_bytes", self.outgoing_queue_bytes),
            ("main_thread_queue", self.main_thread_queue),
        ] {
            if value == 0 {
                return bad(name, "must be at least 1");
            }
        }
        if self.request_timeout.is_zero() {
            return bad("request_timeout", "must not be zero");
        }
        if self.hello_timeout.is_zero() {
            return bad("hello_timeout", "must not be zero");
        }
        Ok(())
    }

    /// The `capabilities.limits` object advertised in the welcome.
    #[must_use]
    pub fn advertised(&self) -> Limits {
        let as_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let timeout_secs = self
            .request_timeout
            .as_secs()
            .saturating_add(u64::from(self.request_timeout.subsec_nanos() > 0));
        Limits {
            max_message_size: BoundedU64::new(as_u64(self.max_message_size)).ok(),
            max_concurrent_requests: BoundedU64::new(as_u64(self.max_concurrent_requests)).ok(),
            request_timeout: BoundedU64::new(timeout_secs.max(1)).ok(),
            extra: serde_json::Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advertised_timeout_rounds_up() {
        let mut l = ServerLimits {
            request_timeout: Duration::from_millis(1500),
            ..ServerLimits::default()
        };
        assert_eq!(l.advertised().request_timeout.unwrap().get(), 2);
        l.request_timeout = Duration::from_millis(10);
        assert_eq!(l.advertised().request_timeout.unwrap().get(), 1);
    }

    #[test]
    fn content_limit_fits_in_a_message() {
        let l = ServerLimits::default();
        assert_eq!(l.content_limit(), 512 * 1024);
        let small = l.with_max_message_size(4096);
        assert_eq!(small.content_limit(), 3072);
    }
}
