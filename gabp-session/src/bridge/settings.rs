//! What a bridge is configured with, and the defaults (SPEC/1.0 gabp.md §6, §7).

use std::time::Duration;

use super::reconnect::{ConnectRetry, Keepalive, ReconnectPolicy};

/// The default time limit of a call: 30 seconds (SPEC/1.0 gabp.md §7).
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest [`Bridge::goodbye`](crate::bridge::Bridge::goodbye) waits for the mod's answer: 1 second, or the call
/// time limit when that is shorter. A mod answers at once (SPEC/1.0 gabp.md §4.3); one that does not is not
/// worth a whole call time limit, since the connection closes either way (gabp.md §7).
pub const GOODBYE_WAIT: Duration = Duration::from_secs(1);
/// The default time limit of the handshake (connecting included when reconnecting): 10 seconds.
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// The default number of calls in flight on one connection: 64 (SPEC/1.0 transport.md §8).
pub const DEFAULT_MAX_IN_FLIGHT: usize = 64;
/// The default capacity of each subscription's queue, in items.
pub const DEFAULT_SUBSCRIPTION_QUEUE: usize = 1024;
/// The default bytes of events (as their frames carried them) each subscription's queue holds: 8 MiB.
pub const DEFAULT_SUBSCRIPTION_QUEUE_BYTES: usize = 8 * 1024 * 1024;
/// The default time an event ahead of a `seq` gap is held back waiting for the gap to fill.
pub const DEFAULT_REORDER_WINDOW: Duration = Duration::from_millis(50);
/// The default number of events held back per channel waiting for a `seq` gap to fill.
pub const DEFAULT_REORDER_CAPACITY: usize = 64;

/// Reorder settings shared by the channels of one bridge.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reorder {
    pub(crate) window: Duration,
    pub(crate) capacity: usize,
    /// Bytes of events held back per channel beyond which the first gap is given up.
    pub(crate) max_bytes: usize,
}

/// Everything a bridge is configured with (the token aside).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) client_name: String,
    pub(crate) client_version: String,
    pub(crate) request_timeout: Duration,
    pub(crate) handshake_timeout: Duration,
    pub(crate) max_in_flight: usize,
    pub(crate) outgoing_queue: usize,
    pub(crate) subscription_queue: usize,
    pub(crate) subscription_queue_bytes: usize,
    pub(crate) reorder: Reorder,
    pub(crate) check_advertised: bool,
    pub(crate) reconnect: Option<ReconnectPolicy>,
    pub(crate) keepalive: Option<Keepalive>,
    pub(crate) connect_retry: Option<ConnectRetry>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            client_name: "gabp-rs".to_owned(),
            client_version: env!("CARGO_PKG_VERSION").to_owned(),
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            max_in_flight: DEFAULT_MAX_IN_FLIGHT,
            outgoing_queue: DEFAULT_MAX_IN_FLIGHT,
            subscription_queue: DEFAULT_SUBSCRIPTION_QUEUE,
            subscription_queue_bytes: DEFAULT_SUBSCRIPTION_QUEUE_BYTES,
            reorder: Reorder {
                window: DEFAULT_REORDER_WINDOW,
                capacity: DEFAULT_REORDER_CAPACITY,
                max_bytes: DEFAULT_SUBSCRIPTION_QUEUE_BYTES,
            },
            check_advertised: true,
            reconnect: None,
            keepalive: None,
            connect_retry: None,
        }
    }
}
