//! Progress of a `tools/call` whose request carries a progress token (SPEC/1.0 extensions.md §progress):
//! [`Progress`], reached through [`CallContext::progress`](super::CallContext::progress).
//!
//! Events go to the connection that made the call, on `tools/progress`, numbered per connection, through a
//! queue the engine writes before any answer. A call's reports stop for good before its answer is made, so no
//! progress event ever follows the response.

use std::time::{Duration, Instant};

use gabp_types::methods::{
    ProgressPayload, ProgressToken, PROGRESS_CHANNEL, PROGRESS_MIN_INTERVAL_MS,
};
use gabp_types::{ChannelName, Event, Message};
use parking_lot::Mutex;

use crate::engine::{frame_queue, FrameQueue, FrameSender};

/// How many progress events of one connection may wait for the writer; more are dropped (progress is
/// advisory, and the next report carries the news).
pub(crate) const PROGRESS_QUEUE: usize = 64;
/// The bytes those events may hold (a progress event's message is short).
const PROGRESS_QUEUE_BYTES: usize = 64 * 1024;

const MIN_INTERVAL: Duration = Duration::from_millis(PROGRESS_MIN_INTERVAL_MS);

/// One connection's progress events: their queue and their `seq`.
pub(crate) struct ProgressSink {
    tx: FrameSender,
    seq: Mutex<u64>,
}

impl ProgressSink {
    /// A sink and the queue the connection's engine writes from.
    pub(crate) fn new() -> (ProgressSink, FrameQueue) {
        let (tx, rx) = frame_queue(PROGRESS_QUEUE, Some(PROGRESS_QUEUE_BYTES));
        (
            ProgressSink {
                tx,
                seq: Mutex::new(0),
            },
            rx,
        )
    }

    fn send(&self, payload: &ProgressPayload) {
        let Ok(value) = serde_json::to_value(payload) else {
            return;
        };
        let Ok(channel) = ChannelName::new(PROGRESS_CHANNEL) else {
            return;
        };
        // The seq is taken and the event queued under one lock, so they reach the wire in seq order.
        let mut seq = self.seq.lock();
        let event = Event::new(channel, *seq, value);
        let Ok(body) = crate::engine::to_body(&Message::Event(event)) else {
            return;
        };
        if self.tx.try_send(body).is_ok() {
            *seq += 1;
        }
    }
}

struct Reports {
    open: bool,
    last_sent: Option<Instant>,
    /// A report held back by the rate limit, sent with the next one allowed or when the call ends.
    held: Option<ProgressPayload>,
}

/// The progress of one call. Reports are coalesced to at most one event per 50 ms; the last one held back is
/// sent when the handler returns, before the answer.
pub struct Progress {
    token: ProgressToken,
    sink: std::sync::Arc<ProgressSink>,
    reports: Mutex<Reports>,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

impl Progress {
    pub(crate) fn new(token: ProgressToken, sink: std::sync::Arc<ProgressSink>) -> Progress {
        Progress {
            token,
            sink,
            reports: Mutex::new(Reports {
                open: true,
                last_sent: None,
                held: None,
            }),
        }
    }

    /// The call's progress token.
    #[must_use]
    pub fn token(&self) -> &ProgressToken {
        &self.token
    }

    /// Reports that `done` of `total` (when known) is done, with an optional message. Negative or non-finite
    /// numbers are ignored; reports after the handler returned are dropped.
    pub fn report(&self, done: f64, total: Option<f64>, message: Option<&str>) {
        if !done.is_finite() || done < 0.0 || total.is_some_and(|t| !t.is_finite() || t < 0.0) {
            return;
        }
        let mut reports = self.reports.lock();
        if !reports.open {
            return;
        }
        let payload = ProgressPayload {
            progress_token: self.token.clone(),
            progress: done,
            total,
            message: message.map(str::to_owned),
        };
        let now = Instant::now();
        if reports
            .last_sent
            .is_some_and(|at| now.duration_since(at) < MIN_INTERVAL)
        {
            reports.held = Some(payload);
            return;
        }
        reports.held = None;
        reports.last_sent = Some(now);
        self.sink.send(&payload);
    }

    /// The handler returned: sends the report held back, if any, and drops any later one.
    pub(crate) fn close(&self) {
        let mut reports = self.reports.lock();
        if !reports.open {
            return;
        }
        reports.open = false;
        if let Some(held) = reports.held.take() {
            self.sink.send(&held);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payloads(rx: &mut FrameQueue) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        while let Some(body) = rx.try_next() {
            out.push(serde_json::from_slice::<serde_json::Value>(&body).unwrap());
        }
        out
    }

    #[test]
    fn reports_are_coalesced_and_none_follows_the_close() {
        let (sink, mut rx) = ProgressSink::new();
        let progress = Progress::new(ProgressToken::String("t".into()), std::sync::Arc::new(sink));
        for i in 0..100 {
            progress.report(f64::from(i), Some(100.0), None);
        }
        progress.close();
        progress.report(100.0, Some(100.0), Some("late"));
        let events = payloads(&mut rx);
        // The first report, then the last one held back, sent at the close.
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(events[0]["payload"]["progress"], 0.0);
        assert_eq!(events[1]["payload"]["progress"], 99.0);
        assert_eq!(events[0]["seq"], 0);
        assert_eq!(events[1]["seq"], 1);
        assert_eq!(events[1]["channel"], PROGRESS_CHANNEL);
        assert_eq!(events[1]["payload"]["progressToken"], "t");
    }

    #[test]
    fn nonsense_numbers_are_not_reported() {
        let (sink, mut rx) = ProgressSink::new();
        let progress = Progress::new(ProgressToken::Integer(7), std::sync::Arc::new(sink));
        progress.report(f64::NAN, None, None);
        progress.report(-1.0, None, None);
        progress.report(1.0, Some(f64::INFINITY), None);
        progress.close();
        assert!(payloads(&mut rx).is_empty());
    }
}
