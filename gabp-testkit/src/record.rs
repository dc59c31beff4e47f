//! Traffic recording: [`Recorder`], [`RecordedFrame`], [`Direction`] and [`StrictViolation`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use gabp_types::decode::{decode, decode_response_to, DecodeError, DecodeMode};
use gabp_types::{shorten, Event, Message, MessageId, Request, Response};
use parking_lot::Mutex;
use tokio::sync::watch;

/// Which way a frame travelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Direction {
    /// Sent by the bridge, towards the mod.
    BridgeToMod,
    /// Sent by the mod, towards the bridge.
    ModToBridge,
}

impl Direction {
    /// The opposite direction.
    #[must_use]
    pub fn reverse(self) -> Direction {
        match self {
            Direction::BridgeToMod => Direction::ModToBridge,
            Direction::ModToBridge => Direction::BridgeToMod,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::BridgeToMod => "bridge -> mod",
            Direction::ModToBridge => "mod -> bridge",
        })
    }
}

/// One frame as a peer sent it (before any fault changed it), or as a fault made it up.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RecordedFrame {
    /// Which way it travelled.
    pub direction: Direction,
    /// Which connection through the proxy carried it, counting from 0.
    pub connection: u64,
    /// The frame's body, exactly as received (empty for a frame too large to buffer, see `declared_len`).
    pub body: Bytes,
    /// The length its `Content-Length` header announced.
    pub declared_len: u64,
    /// When it arrived, counted from the creation of the recorder.
    pub elapsed: Duration,
    /// Whether a fault made this frame up (an unsolicited response, an oversized frame) rather than a peer
    /// sending it. Injected frames are left out of the strictness assertions.
    pub injected: bool,
}

impl RecordedFrame {
    /// The body read leniently, as a bridge or mod reads its peer; `None` when it is not a message at all.
    #[must_use]
    pub fn message(&self) -> Option<Message> {
        decode(&self.body, DecodeMode::Lenient).ok()
    }

    /// The body read with the strict decoder.
    ///
    /// # Errors
    ///
    /// The first strict rule the body breaks.
    pub fn decode_strict(&self) -> Result<Message, DecodeError> {
        decode(&self.body, DecodeMode::Strict)
    }
}

/// A recorded frame that fails the strict decoder (or, for a response, the result schema of the method it
/// answers).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StrictViolation {
    /// The frame.
    pub frame: RecordedFrame,
    /// The method of the request a response answers, when it is known.
    pub answers: Option<String>,
    /// What is wrong.
    pub error: DecodeError,
}

impl fmt::Display for StrictViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (connection {}",
            self.frame.direction, self.frame.connection
        )?;
        if let Some(method) = &self.answers {
            write!(f, ", answering {method}")?;
        }
        write!(
            f,
            "): {}; body: {}",
            self.error,
            shorten(&String::from_utf8_lossy(&self.frame.body), 200)
        )
    }
}

struct RecorderInner {
    start: Instant,
    frames: Mutex<Vec<RecordedFrame>>,
    count: watch::Sender<usize>,
}

// A recorder stays usable after a panic (a frame is appended whole or not at all), so it may be used across
// `catch_unwind`, for instance to check that an `assert_*` method fails; `parking_lot::Mutex` alone would not
// say so.
impl std::panic::RefUnwindSafe for RecorderInner {}

/// Every frame that crossed a [`FaultProxy`](crate::FaultProxy) in either direction, with helpers to find
/// messages and assert on them.
///
/// Cheap to clone; clones share the recording. Frames are recorded as the sending peer wrote them, before any
/// fault changed them; frames a fault made up are marked [`RecordedFrame::injected`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use serde_json::json;
///
/// let pair = gabp_testkit::pair().await?;
/// pair.bridge.call_tool("demo/echo", json!({"value": 7})).await?;
///
/// let calls = pair.recorder.requests("tools/call");
/// assert_eq!(calls.len(), 1);
/// assert_eq!(calls[0].params.as_ref().unwrap().to_value()["name"], "demo/echo");
/// assert_eq!(pair.recorder.responses_to("tools/call")[0].result(), Some(&json!({"value": 7})));
/// pair.recorder.assert_sent_strictly_valid();
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Recorder {
    inner: Arc<RecorderInner>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("frames", &self.len())
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// An empty recording.
    #[must_use]
    pub fn new() -> Self {
        let (count, _) = watch::channel(0);
        Recorder {
            inner: Arc::new(RecorderInner {
                start: Instant::now(),
                frames: Mutex::new(Vec::new()),
                count,
            }),
        }
    }

    pub(crate) fn record(
        &self,
        direction: Direction,
        connection: u64,
        body: Bytes,
        declared_len: u64,
        injected: bool,
    ) {
        let frame = RecordedFrame {
            direction,
            connection,
            body,
            declared_len,
            elapsed: self.inner.start.elapsed(),
            injected,
        };
        let len = {
            let mut frames = self.inner.frames.lock();
            frames.push(frame);
            frames.len()
        };
        self.inner.count.send_replace(len);
    }

    /// Every frame so far, in the order they arrived.
    #[must_use]
    pub fn frames(&self) -> Vec<RecordedFrame> {
        self.inner.frames.lock().clone()
    }

    /// How many frames were recorded.
    #[must_use]
    pub fn len(&self) -> usize {
        self.inner.frames.lock().len()
    }

    /// Whether nothing was recorded yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Forgets every frame recorded so far.
    pub fn clear(&self) {
        self.inner.frames.lock().clear();
        self.inner.count.send_replace(0);
    }

    /// The frames that travelled in `direction`.
    #[must_use]
    pub fn frames_in(&self, direction: Direction) -> Vec<RecordedFrame> {
        self.inner
            .frames
            .lock()
            .iter()
            .filter(|f| f.direction == direction)
            .cloned()
            .collect()
    }

    /// The messages that travelled in `direction`, read leniently (frames that are not messages are left out).
    #[must_use]
    pub fn messages(&self, direction: Direction) -> Vec<Message> {
        self.inner
            .frames
            .lock()
            .iter()
            .filter(|f| f.direction == direction)
            .filter_map(RecordedFrame::message)
            .collect()
    }

    /// The requests for `method` the bridge sent.
    #[must_use]
    pub fn requests(&self, method: &str) -> Vec<Request> {
        self.messages(Direction::BridgeToMod)
            .into_iter()
            .filter_map(|m| match m {
                Message::Request(r) if r.method.as_str() == method => Some(r),
                _ => None,
            })
            .collect()
    }

    /// The `tools/call` requests for the tool `name` the bridge sent.
    #[must_use]
    pub fn tool_calls(&self, name: &str) -> Vec<Request> {
        self.requests("tools/call")
            .into_iter()
            .filter(|r| {
                r.params
                    .as_ref()
                    .and_then(|p| p.str_member("name"))
                    .is_some_and(|n| n == name)
            })
            .collect()
    }

    /// The responses the mod sent to requests for `method`, matched by id on the same connection.
    #[must_use]
    pub fn responses_to(&self, method: &str) -> Vec<Response> {
        let frames = self.inner.frames.lock().clone();
        let methods = request_methods(&frames);
        frames
            .iter()
            .filter(|f| f.direction == Direction::ModToBridge)
            .filter_map(|f| match f.message() {
                Some(Message::Response(r))
                    if methods.get(&(f.connection, r.id)).map(String::as_str) == Some(method) =>
                {
                    Some(r)
                }
                _ => None,
            })
            .collect()
    }

    /// The response the mod sent with `id`, if any.
    #[must_use]
    pub fn response(&self, id: MessageId) -> Option<Response> {
        self.messages(Direction::ModToBridge)
            .into_iter()
            .find_map(|m| match m {
                Message::Response(r) if r.id == id => Some(r),
                _ => None,
            })
    }

    /// The events the mod sent on `channel`.
    #[must_use]
    pub fn events(&self, channel: &str) -> Vec<Event> {
        self.messages(Direction::ModToBridge)
            .into_iter()
            .filter_map(|m| match m {
                Message::Event(e) if e.channel.as_str() == channel => Some(e),
                _ => None,
            })
            .collect()
    }

    /// Waits until `done` holds for the frames recorded so far, for at most `timeout`. Returns whether it
    /// held.
    pub async fn wait_until<F>(&self, timeout: Duration, mut done: F) -> bool
    where
        F: FnMut(&[RecordedFrame]) -> bool,
    {
        let mut changes = self.inner.count.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            changes.borrow_and_update();
            if done(&self.inner.frames.lock()) {
                return true;
            }
            match tokio::time::timeout_at(deadline, changes.changed()).await {
                Ok(Ok(())) => {}
                // The sender lives as long as `self`; a timeout ends the wait.
                Ok(Err(_)) | Err(_) => return done(&self.inner.frames.lock()),
            }
        }
    }

    /// Waits for the bridge to send a request for `method`, for at most `timeout`, and returns the first one.
    pub async fn wait_for_request(&self, method: &str, timeout: Duration) -> Option<Request> {
        let method_owned = method.to_owned();
        self.wait_until(timeout, |frames| {
            frames.iter().any(|f| {
                f.direction == Direction::BridgeToMod
                    && matches!(f.message(), Some(Message::Request(r)) if r.method.as_str() == method_owned)
            })
        })
        .await;
        self.requests(method).into_iter().next()
    }

    /// The frames a peer sent in `direction` that break the strict rules: every message must pass the strict
    /// decoder, and every success response the result schema of the method it answers. Injected frames are
    /// not checked.
    #[must_use]
    pub fn strict_violations(&self, direction: Direction) -> Vec<StrictViolation> {
        let frames = self.inner.frames.lock().clone();
        let methods = request_methods(&frames);
        let mut violations = Vec::new();
        for frame in frames
            .iter()
            .filter(|f| f.direction == direction && !f.injected)
        {
            let answers = match frame.message() {
                Some(Message::Response(r)) => methods.get(&(frame.connection, r.id)).cloned(),
                _ => None,
            };
            let checked = match &answers {
                Some(method) => decode_response_to(&frame.body, method, DecodeMode::Strict),
                None => decode(&frame.body, DecodeMode::Strict),
            };
            if let Err(error) = checked {
                violations.push(StrictViolation {
                    frame: frame.clone(),
                    answers,
                    error,
                });
            }
        }
        violations
    }

    /// Panics, listing every offending frame, unless everything both peers sent is strictly valid (see
    /// [`Recorder::strict_violations`]).
    #[track_caller]
    pub fn assert_sent_strictly_valid(&self) {
        let mut violations = self.strict_violations(Direction::BridgeToMod);
        violations.extend(self.strict_violations(Direction::ModToBridge));
        assert_no_violations(&violations);
    }

    /// Panics, listing every offending frame, unless everything the bridge sent is strictly valid.
    #[track_caller]
    pub fn assert_bridge_sent_strictly_valid(&self) {
        assert_no_violations(&self.strict_violations(Direction::BridgeToMod));
    }

    /// Panics, listing every offending frame, unless everything the mod sent is strictly valid.
    #[track_caller]
    pub fn assert_mod_sent_strictly_valid(&self) {
        assert_no_violations(&self.strict_violations(Direction::ModToBridge));
    }
}

#[track_caller]
fn assert_no_violations(violations: &[StrictViolation]) {
    if !violations.is_empty() {
        let list: Vec<String> = violations.iter().map(ToString::to_string).collect();
        panic!(
            "{} frame(s) are not strictly valid:\n  {}",
            violations.len(),
            list.join("\n  ")
        );
    }
}

/// The method of every request the bridge sent, by connection and id.
fn request_methods(frames: &[RecordedFrame]) -> HashMap<(u64, MessageId), String> {
    frames
        .iter()
        .filter(|f| f.direction == Direction::BridgeToMod)
        .filter_map(|f| match f.message() {
            Some(Message::Request(r)) => Some(((f.connection, r.id), r.method.into_string())),
            _ => None,
        })
        .collect()
}
