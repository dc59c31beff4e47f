//! The clock the attention manager measures its coalescing window with: [`Clock`], [`MonotonicClock`] (the
//! default) and [`ManualClock`] (for tests).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// A monotonic clock: the time elapsed since an origin of the clock's choosing.
///
/// The [`AttentionManager`](crate::AttentionManager) asks it when it records an entry, to decide whether an
/// `attention/updated` event may go out now or must wait for the end of the coalescing window. Inject one with
/// [`AttentionManagerBuilder::clock`](crate::AttentionManagerBuilder::clock).
pub trait Clock: Send + Sync + 'static {
    /// The time elapsed since the clock's origin. Never decreases.
    fn now(&self) -> Duration;
}

/// The default clock: Tokio's monotonic clock, so that a test that pauses Tokio's time
/// (`tokio::time::pause`) controls it too. Outside a Tokio runtime it reads the system's monotonic clock.
///
/// ```
/// use gabp_attention::{Clock, MonotonicClock};
///
/// let clock = MonotonicClock::new();
/// let a = clock.now();
/// assert!(clock.now() >= a);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: tokio::time::Instant,
}

impl MonotonicClock {
    /// A clock whose origin is now.
    #[must_use]
    pub fn new() -> Self {
        MonotonicClock {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> Duration {
        tokio::time::Instant::now().saturating_duration_since(self.origin)
    }
}

/// A clock that moves only when told to: deterministic tests of the coalescing window. Clones share the same
/// time.
///
/// ```
/// use std::time::Duration;
/// use gabp_attention::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// assert_eq!(clock.now(), Duration::ZERO);
/// clock.advance(Duration::from_millis(150));
/// assert_eq!(clock.now(), Duration::from_millis(150));
/// ```
#[derive(Clone, Default)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("now", &self.now())
            .finish()
    }
}

impl ManualClock {
    /// A clock at time zero.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .nanos
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                Some(n.saturating_add(by))
            });
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Acquire))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_is_shared_and_saturates() {
        let a = ManualClock::new();
        let b = a.clone();
        a.advance(Duration::from_secs(1));
        assert_eq!(b.now(), Duration::from_secs(1));
        b.advance(Duration::MAX);
        assert_eq!(a.now(), Duration::from_nanos(u64::MAX));
    }

    #[tokio::test(start_paused = true)]
    async fn monotonic_clock_follows_paused_tokio_time() {
        let clock = MonotonicClock::new();
        tokio::time::advance(Duration::from_millis(250)).await;
        assert_eq!(clock.now(), Duration::from_millis(250));
    }
}
