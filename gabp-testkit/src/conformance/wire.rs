//! The suite's own raw, frame-level client ([`Wire`]) and the [`Journal`] of everything the mod sent.
//!
//! It deliberately shares nothing with the bridge client of `gabp-session`: it writes bytes (so it can send
//! what no conformant bridge would) and reads frames with the plain codec, attributing each response to the
//! request it answers.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use gabp_codec::{CodecError, Frame, FrameCodec};
use gabp_transport::ByteStream;
use gabp_types::decode::{decode, decode_response_to, DecodeMode};
use gabp_types::{Event, Message, MessageId, Response};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::time::Instant;
use tokio_util::codec::FramedRead;

use gabp_codec::encode_frame as frame;

/// Largest body the client reads (a mod may list many tools).
const MAX_BODY: usize = 64 * 1024 * 1024;

/// One frame the mod sent, for the strictness check at the end of the run.
struct Received {
    check: &'static str,
    answers: Option<String>,
    body: Bytes,
}

#[derive(Default)]
struct JournalInner {
    check: &'static str,
    received: Vec<Received>,
    id_violations: Vec<String>,
    both_members: Vec<String>,
    round_trips: Vec<Duration>,
}

/// Everything the mod sent during a run, and every id it got wrong.
#[derive(Default)]
pub(crate) struct Journal {
    inner: Mutex<JournalInner>,
}

impl Journal {
    pub(crate) fn set_check(&self, check: &'static str) {
        self.inner.lock().check = check;
    }

    fn record(&self, answers: Option<String>, body: Bytes) {
        let mut inner = self.inner.lock();
        let check = inner.check;
        inner.received.push(Received {
            check,
            answers,
            body,
        });
    }

    fn id_violation(&self, what: String) {
        let mut inner = self.inner.lock();
        let what = format!("{what} (in {})", inner.check);
        inner.id_violations.push(what);
    }

    /// A response that carries both `result` and `error` (one of them `null`, or it would not have decoded).
    fn both_members(&self, answers: Option<&str>) {
        let mut inner = self.inner.lock();
        let what = match answers {
            Some(method) => format!("the answer to {method} (in {})", inner.check),
            None => format!("a response (in {})", inner.check),
        };
        inner.both_members.push(what);
    }

    /// Every response that carried both `result` and `error`, in words.
    pub(crate) fn both_members_seen(&self) -> Vec<String> {
        self.inner.lock().both_members.clone()
    }

    fn round_trip(&self, took: Duration) {
        self.inner.lock().round_trips.push(took);
    }

    /// The median time from a request to its answer, over every call of the run.
    pub(crate) fn median_round_trip(&self) -> Option<Duration> {
        let mut all = self.inner.lock().round_trips.clone();
        all.sort_unstable();
        all.get(all.len() / 2).copied()
    }

    pub(crate) fn id_violations(&self) -> Vec<String> {
        self.inner.lock().id_violations.clone()
    }

    /// Every received frame that breaks the strict rules, in words.
    pub(crate) fn strict_violations(&self) -> Vec<String> {
        let inner = self.inner.lock();
        let mut out = Vec::new();
        for frame in &inner.received {
            let checked = match &frame.answers {
                Some(method) => decode_response_to(&frame.body, method, DecodeMode::Strict),
                None => decode(&frame.body, DecodeMode::Strict),
            };
            let what = match &frame.answers {
                Some(method) => format!("the answer to {method}"),
                None => "a message".to_owned(),
            };
            match checked {
                Err(_) if begins_with_header(&frame.body) => out.push(format!(
                    "{what} in {}: its body begins with another frame's header (the frames interleave)",
                    frame.check
                )),
                Err(e) => out.push(format!("{what} in {}: {e}", frame.check)),
                Ok(Message::Request(r)) => out.push(format!(
                    "a request ({}) in {}: a mod sends no requests",
                    r.method, frame.check
                )),
                Ok(_) => {}
            }
        }
        out
    }
}

/// Why the client could not get what it waited for.
#[derive(Debug)]
pub(crate) enum WireError {
    /// The mod closed the connection.
    Closed,
    /// Nothing arrived in time.
    Timeout(Duration),
    /// The mod sent a frame the client cannot read past.
    Broken(String),
    /// Writing failed.
    Write(String),
    /// An answer arrived but does not decode: why.
    Undecodable(String),
    /// A frame's body begins with a header: the mod wrote the header and body of two frames interleaved.
    Interleaved(String),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Closed => f.write_str("the mod closed the connection"),
            WireError::Timeout(after) => write!(f, "no answer within {}", seconds(*after)),
            WireError::Broken(e) => write!(f, "the mod sent a malformed frame: {e}"),
            WireError::Write(e) => write!(f, "writing to the mod failed: {e}"),
            WireError::Undecodable(why) => write!(f, "undecodable answer: {why}"),
            WireError::Interleaved(start) => write!(
                f,
                "the mod's frames interleave: a body begins with another frame's header ({start:?}); header and \
                 body of concurrent answers are written separately instead of as one frame"
            ),
        }
    }
}

/// A duration in words: `5 s`, `800 ms`.
pub(crate) fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 && d.as_secs() > 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// What the client read.
pub(crate) enum Incoming {
    /// A response, and the id of the request it answers (when it could be told).
    Response {
        response: Response,
        answers: Option<MessageId>,
    },
    /// An event.
    Event(Event),
    /// A frame that is not a response or an event.
    Other,
}

/// A request the client sent.
struct Sent {
    method: String,
    /// The id exactly as written, to check the echo byte for byte.
    text: String,
    /// Whether an answer is expected (some probes must not be answered, or are answered with the nil id).
    expects_answer: bool,
    answered: bool,
}

/// One raw connection to the mod.
pub(crate) struct Wire {
    frames: FramedRead<ReadHalf<ByteStream>, FrameCodec>,
    writer: WriteHalf<ByteStream>,
    journal: Arc<Journal>,
    sent: HashMap<MessageId, Sent>,
    /// Events read while waiting for something else.
    pub(crate) events: Vec<Event>,
    /// Responses that answer none of the requests waiting (nil ids included).
    pub(crate) stray: Vec<Response>,
    /// Why the last frame that did not decode failed, until a wait reports it.
    undecodable: Option<String>,
    closed: bool,
}

impl Wire {
    pub(crate) fn new(stream: ByteStream, journal: Arc<Journal>) -> Self {
        let (reader, writer) = tokio::io::split(stream);
        Wire {
            frames: FramedRead::new(reader, FrameCodec::new().with_max_body_size(MAX_BODY)),
            writer,
            journal,
            sent: HashMap::new(),
            events: Vec::new(),
            stray: Vec::new(),
            undecodable: None,
            closed: false,
        }
    }

    /// Writes `bytes` as they are.
    pub(crate) async fn write(&mut self, bytes: &[u8]) -> Result<(), WireError> {
        let written = async {
            self.writer.write_all(bytes).await?;
            self.writer.flush().await
        };
        written.await.map_err(|e| WireError::Write(e.to_string()))
    }

    /// Writes one frame with `body`.
    pub(crate) async fn send_body(&mut self, body: &[u8]) -> Result<(), WireError> {
        self.write(&frame(body)).await
    }

    /// The body of a request for `method` with `id` and `params` (no `params` member for `None`), registered
    /// so its answer can be told apart. `expects_answer: false` marks a probe whose answer, if any, is
    /// recognised but not waited for.
    pub(crate) fn request_body(
        &mut self,
        id: MessageId,
        method: &str,
        params: Option<Value>,
        expects_answer: bool,
    ) -> Vec<u8> {
        let mut map = Map::new();
        map.insert("v".into(), json!("gabp/1"));
        map.insert("id".into(), json!(id.as_str()));
        map.insert("type".into(), json!("request"));
        map.insert("method".into(), json!(method));
        if let Some(params) = params {
            map.insert("params".into(), params);
        }
        self.register(id, method, expects_answer);
        serde_json::to_vec(&Value::Object(map)).unwrap_or_default()
    }

    /// Registers a request sent by other means (a padded or hand-written body).
    pub(crate) fn register(&mut self, id: MessageId, method: &str, expects_answer: bool) {
        self.sent.insert(
            id,
            Sent {
                method: method.to_owned(),
                text: id.as_str().to_owned(),
                expects_answer,
                answered: false,
            },
        );
    }

    /// Sends a request with a fresh id and returns the id.
    pub(crate) async fn send_request(
        &mut self,
        method: &str,
        params: Option<Value>,
    ) -> Result<MessageId, WireError> {
        let id = MessageId::new_v4();
        let body = self.request_body(id, method, params, true);
        self.send_body(&body).await?;
        Ok(id)
    }

    /// Sends a request and waits for its answer.
    pub(crate) async fn call(
        &mut self,
        method: &str,
        params: Option<Value>,
        timeout: Duration,
    ) -> Result<Response, WireError> {
        let start = Instant::now();
        let id = self.send_request(method, params).await?;
        let response = self
            .response_to(id, Instant::now() + timeout, timeout)
            .await?;
        self.journal.round_trip(start.elapsed());
        Ok(response)
    }

    /// Sends `session/hello` with `token`.
    pub(crate) async fn hello(
        &mut self,
        token: &str,
        timeout: Duration,
    ) -> Result<Response, WireError> {
        self.call("session/hello", Some(hello_params(token)), timeout)
            .await
    }

    /// The requests still waiting for an answer.
    fn waiting(&self) -> Vec<MessageId> {
        self.sent
            .iter()
            .filter(|(_, s)| s.expects_answer && !s.answered)
            .map(|(id, _)| *id)
            .collect()
    }

    /// Reads the next message, until `deadline`.
    pub(crate) async fn next(
        &mut self,
        deadline: Instant,
        waited: Duration,
    ) -> Result<Incoming, WireError> {
        if self.closed {
            return Err(WireError::Closed);
        }
        let next = match tokio::time::timeout_at(deadline, self.frames.next()).await {
            Err(_) => {
                return Err(match self.undecodable.take() {
                    Some(why) => WireError::Undecodable(why),
                    None => WireError::Timeout(waited),
                })
            }
            Ok(next) => next,
        };
        let body = match next {
            Some(Ok(Frame::Body(body))) => body,
            Some(Ok(Frame::Oversized { declared, .. })) => {
                self.journal.record(
                    None,
                    Bytes::from(format!("a frame of {declared} bytes").into_bytes()),
                );
                return Ok(Incoming::Other);
            }
            None
            | Some(Err(
                CodecError::Io(_)
                | CodecError::TruncatedBody { .. }
                | CodecError::TruncatedHeader { .. },
            )) => {
                self.closed = true;
                return Err(WireError::Closed);
            }
            Some(Err(e)) => {
                self.closed = true;
                return Err(WireError::Broken(e.to_string()));
            }
        };
        let message = match decode(&body, DecodeMode::Lenient) {
            Ok(message) => message,
            Err(_) if begins_with_header(&body) => {
                self.journal.record(None, body.clone());
                // The stream cannot be followed past interleaved frames.
                self.closed = true;
                let start = String::from_utf8_lossy(&body[..body.len().min(24)]).into_owned();
                return Err(WireError::Interleaved(start));
            }
            Err(e) => {
                let answers = self.undecodable_answers(&body);
                self.journal.record(None, body);
                if let Some(id) = answers {
                    if let Some(sent) = self.sent.get_mut(&id) {
                        sent.answered = true;
                        return Err(WireError::Undecodable(format!("{} ({e})", sent.method)));
                    }
                }
                self.undecodable = Some(e.to_string());
                return Ok(Incoming::Other);
            }
        };
        match message {
            Message::Response(response) => {
                let answers = self.attribute(&response);
                let method = answers
                    .and_then(|id| self.sent.get(&id))
                    .map(|s| s.method.clone());
                if carries_both(&body) {
                    self.journal.both_members(method.as_deref());
                }
                self.journal.record(method, body);
                Ok(Incoming::Response { response, answers })
            }
            Message::Event(event) => {
                self.journal.record(None, body);
                Ok(Incoming::Event(event))
            }
            Message::Request(_) => {
                self.journal.record(None, body);
                Ok(Incoming::Other)
            }
        }
    }

    /// The waiting request whose id a frame that does not decode carries, if any.
    fn undecodable_answers(&self, body: &[u8]) -> Option<MessageId> {
        let value: Value = serde_json::from_slice(body).ok()?;
        let id = MessageId::parse(value.get("id")?.as_str()?).ok()?;
        self.sent
            .get(&id)
            .filter(|s| s.expects_answer && !s.answered)
            .map(|_| id)
    }

    /// Which request a response answers; records every id the mod got wrong.
    fn attribute(&mut self, response: &Response) -> Option<MessageId> {
        let id = response.id;
        if let Some(sent) = self.sent.get_mut(&id) {
            if sent.answered {
                let what = format!("answered {} (id {}) twice", sent.method, sent.text);
                self.journal.id_violation(what);
            } else if response.id.as_str() != sent.text {
                let what = format!(
                    "answered {} with id {} instead of {} (ids are echoed byte for byte)",
                    sent.method, response.id, sent.text
                );
                self.journal.id_violation(what);
            }
            sent.answered = true;
            return Some(id);
        }
        if id.is_nil() {
            return None;
        }
        let waiting = self.waiting();
        if let [only] = waiting[..] {
            // One request in flight: this answers it, under the wrong id.
            if let Some(sent) = self.sent.get_mut(&only) {
                let what = format!("answered {} (id {}) with id {id}", sent.method, sent.text);
                sent.answered = true;
                self.journal.id_violation(what);
            }
            return Some(only);
        }
        let what = format!("sent a response with id {id}, which matches no request in flight");
        self.journal.id_violation(what);
        None
    }

    /// Reads until the answer to `id` arrives (events and other responses are kept aside).
    pub(crate) async fn response_to(
        &mut self,
        id: MessageId,
        deadline: Instant,
        waited: Duration,
    ) -> Result<Response, WireError> {
        loop {
            match self.next(deadline, waited).await? {
                Incoming::Response { response, answers } if answers == Some(id) => {
                    return Ok(response)
                }
                Incoming::Response { response, .. } => self.stray.push(response),
                Incoming::Event(event) => self.events.push(event),
                Incoming::Other => {}
            }
        }
    }

    /// Reads until a response that answers none of the requests sent arrives (such as the nil-id answer to
    /// an unreadable frame); one already read counts.
    pub(crate) async fn unattributed_response(
        &mut self,
        deadline: Instant,
        waited: Duration,
    ) -> Result<Response, WireError> {
        if !self.stray.is_empty() {
            return Ok(self.stray.remove(0));
        }
        loop {
            match self.next(deadline, waited).await? {
                Incoming::Response {
                    response,
                    answers: None,
                } => return Ok(response),
                Incoming::Response { .. } | Incoming::Other => {}
                Incoming::Event(event) => self.events.push(event),
            }
        }
    }

    /// Waits until the mod closes the connection; what arrives meanwhile is kept aside. `Ok` when it closed
    /// (or broke the framing, which leaves nothing to read either), `Err(Timeout)` when it stayed open.
    pub(crate) async fn wait_closed(&mut self, timeout: Duration) -> Result<(), WireError> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.next(deadline, timeout).await {
                Err(WireError::Closed | WireError::Broken(_)) => return Ok(()),
                Err(e) => return Err(e),
                Ok(Incoming::Response { response, .. }) => self.stray.push(response),
                Ok(Incoming::Event(event)) => self.events.push(event),
                Ok(Incoming::Other) => {}
            }
        }
    }
}

/// Whether `body` starts as a header block does (`Content-Length:`, any case), not as JSON.
fn begins_with_header(body: &[u8]) -> bool {
    const NAME: &[u8] = b"content-length:";
    body.len() >= NAME.len() && body[..NAME.len()].eq_ignore_ascii_case(NAME)
}

/// Whether a response `body` the lenient decoder accepted has both `result` and `error` members (SPEC/1.0
/// gabp.md §3.5 reads one of them when the other is `null`).
fn carries_both(body: &[u8]) -> bool {
    let has = |member: &[u8]| body.windows(member.len()).any(|w| w == member);
    if !(has(br#""result""#) && has(br#""error""#)) {
        return false;
    }
    matches!(
        serde_json::from_slice::<Value>(body),
        Ok(Value::Object(map)) if map.contains_key("result") && map.contains_key("error")
    )
}

/// Strictly valid `session/hello` params with `token`.
pub(crate) fn hello_params(token: &str) -> Value {
    json!({
        "token": token,
        "bridgeVersion": env!("CARGO_PKG_VERSION"),
        "platform": gabp_types::methods::Platform::current(),
        "launchId": MessageId::new_v4(),
        "clientInfo": { "name": "gabp-testkit conformance", "version": env!("CARGO_PKG_VERSION") }
    })
}
