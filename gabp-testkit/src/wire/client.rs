//! [`RawClient`]: a bridge written by hand, over any async stream.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use gabp_transport::Endpoint;
use gabp_types::decode::{decode_response_to, decode_strict, DecodeMode};
use gabp_types::{ErrorObject, Event, Message, MessageId, Response};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;

use super::{hello_params, request, FrameReader};
use crate::TestkitError;

type Reader = Box<dyn AsyncRead + Send + Unpin>;
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// A bridge written by hand: it writes bytes, frames and JSON, and decodes every frame the peer writes
/// strictly, each response also against the result schema of the method it answers (when the request went
/// through this client). Events read while waiting for a response are kept for [`RawClient::next_event`].
///
/// Reads happen only when asked for, so a test can leave the peer's writes unread. Every wait lasts at
/// most the patience (10 s unless [set](RawClient::set_patience)). Test code: anything unexpected
/// panics, with what the peer wrote.
pub struct RawClient {
    frames: FrameReader<Reader>,
    writer: RawWriter,
    /// The method of each request sent, to check the result that answers it.
    methods: HashMap<MessageId, String>,
    events: VecDeque<Event>,
    patience: Duration,
}

/// The writing half of a [`RawClient`], shareable with a task that writes while the test reads.
#[derive(Clone)]
pub struct RawWriter(Arc<Mutex<Option<Writer>>>);

impl RawWriter {
    /// Writes `bytes` as they are, and flushes.
    pub async fn write_raw(&self, bytes: &[u8]) {
        let mut writer = self.0.lock().await;
        let writer = writer.as_mut().expect("the writing side is shut down");
        writer.write_all(bytes).await.expect("write");
        writer.flush().await.expect("flush");
    }
}

impl RawClient {
    /// A client on `stream` (a TCP or Unix socket, one end of an in-memory duplex, ...).
    pub fn new<S>(stream: S) -> Self
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (reader, writer) = tokio::io::split(stream);
        Self::from_parts(reader, writer)
    }

    /// A client reading from `reader` and writing to `writer` (a child's stdout and stdin, say).
    pub fn from_parts(
        reader: impl AsyncRead + Send + Unpin + 'static,
        writer: impl AsyncWrite + Send + Unpin + 'static,
    ) -> Self {
        RawClient {
            frames: FrameReader::new(Box::new(reader)),
            writer: RawWriter(Arc::new(Mutex::new(Some(Box::new(writer))))),
            methods: HashMap::new(),
            events: VecDeque::new(),
            patience: Duration::from_secs(10),
        }
    }

    /// Connects to a mod at `endpoint` (SPEC/1.0 transport.md §2).
    ///
    /// # Errors
    ///
    /// [`TestkitError::Transport`] with the error of [`gabp_transport::connect_stream`].
    pub async fn connect(endpoint: &Endpoint) -> Result<Self, TestkitError> {
        Ok(Self::new(gabp_transport::connect_stream(endpoint).await?))
    }

    /// Sets how long each wait for the peer lasts before the test fails (raise it on paused time).
    pub fn set_patience(&mut self, patience: Duration) {
        self.patience = patience;
    }

    /// The writing half, for a task that writes while the test reads.
    #[must_use]
    pub fn writer(&self) -> RawWriter {
        self.writer.clone()
    }

    /// Events read while waiting for responses, not yet taken by [`RawClient::next_event`].
    #[must_use]
    pub fn events(&self) -> &VecDeque<Event> {
        &self.events
    }

    // ---- writing --------------------------------------------------------------------------------------------

    /// Writes `bytes` as they are.
    pub async fn write_raw(&mut self, bytes: &[u8]) {
        self.writer.write_raw(bytes).await;
    }

    /// Writes one frame with `body` (see [`frame`](super::frame)).
    pub async fn send_frame(&mut self, body: &[u8]) {
        self.write_raw(&super::frame(body)).await;
    }

    /// Sends `message` as one frame; a request's method is remembered to check the result that answers it.
    pub async fn send_value(&mut self, message: &Value) {
        if let (Some(id), Some(method)) = (message["id"].as_str(), message["method"].as_str()) {
            if let Ok(id) = MessageId::parse(id) {
                self.methods.insert(id, method.to_owned());
            }
        }
        self.send_frame(&serde_json::to_vec(message).expect("serialize"))
            .await;
    }

    /// Sends `message` as one frame, as [`RawClient::send_value`] does.
    pub async fn send_message(&mut self, message: &Message) {
        if let Message::Request(r) = message {
            self.methods.insert(r.id, r.method.as_str().to_owned());
        }
        self.send_frame(&message.to_vec()).await;
    }

    /// Closes the writing side: the peer reads end of stream (for a child's stdio, its stdin closes).
    pub async fn shutdown_write(&mut self) {
        if let Some(mut writer) = self.writer.0.lock().await.take() {
            writer.shutdown().await.expect("shutdown");
        }
    }

    // ---- reading --------------------------------------------------------------------------------------------

    /// The next frame's body, or `None` at end of stream.
    pub async fn next_frame(&mut self) -> Option<Vec<u8>> {
        match tokio::time::timeout(self.patience, self.frames.next_frame()).await {
            Ok(Ok(body)) => body,
            Ok(Err(e)) => panic!("the peer wrote a broken frame: {e}"),
            Err(_) => panic!("no frame from the peer within {:?}", self.patience),
        }
    }

    /// The next message, strictly decoded, or `None` at end of stream.
    pub async fn next_message(&mut self) -> Option<Message> {
        let body = self.next_frame().await?;
        Some(self.decode(&body))
    }

    /// The next message; the peer must not close the connection first.
    pub async fn recv(&mut self) -> Message {
        self.next_message()
            .await
            .expect("the peer closed the connection")
    }

    /// The next response, whatever its id (events meanwhile are kept).
    pub async fn recv_response(&mut self) -> Response {
        loop {
            match self.recv().await {
                Message::Response(r) => return r,
                Message::Event(e) => self.events.push_back(e),
                Message::Request(r) => panic!("the peer sent a request: {r:?}"),
            }
        }
    }

    /// Reads until the response to `id` (events meanwhile are kept; any other response fails the test).
    pub async fn response(&mut self, id: MessageId) -> Response {
        loop {
            match self.next_message().await {
                Some(Message::Response(r)) if r.id == id => return r,
                Some(Message::Response(r)) => {
                    panic!("unexpected response {r:?} while waiting for {id}")
                }
                Some(Message::Event(e)) => self.events.push_back(e),
                Some(Message::Request(r)) => panic!("the peer sent a request: {r:?}"),
                None => panic!("the peer closed the connection before answering {id}"),
            }
        }
    }

    /// The next event: a kept one first, else the next frame, which must be an event.
    pub async fn next_event(&mut self) -> Event {
        if let Some(e) = self.events.pop_front() {
            return e;
        }
        match self.next_message().await {
            Some(Message::Event(e)) => e,
            other => panic!("expected an event, got {other:?}"),
        }
    }

    /// Like [`RawClient::next_event`], but waits only `within`: `None` if no frame came or the stream ended.
    pub async fn try_event(&mut self, within: Duration) -> Option<Event> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        let body = match tokio::time::timeout(within, self.frames.next_frame()).await {
            Err(_) | Ok(Ok(None)) => return None,
            Ok(Ok(Some(body))) => body,
            Ok(Err(e)) => panic!("the peer wrote a broken frame: {e}"),
        };
        match self.decode(&body) {
            Message::Event(e) => Some(e),
            other => panic!("expected an event, got {other:?}"),
        }
    }

    /// Reads until the peer closes the connection; returns what it still wrote.
    pub async fn until_closed(&mut self) -> Vec<Message> {
        let mut rest = Vec::new();
        while let Some(message) = self.next_message().await {
            rest.push(message);
        }
        rest
    }

    // ---- requests -------------------------------------------------------------------------------------------

    /// Sends `message`, a whole request as JSON (a fixture, say), and returns the response to it.
    pub async fn send_request(&mut self, message: &Value) -> Response {
        let id = message["id"]
            .as_str()
            .and_then(|id| MessageId::parse(id).ok())
            .unwrap_or_else(|| panic!("not a request with a valid id: {message}"));
        self.send_value(message).await;
        self.response(id).await
    }

    /// Sends a request for `method` and returns its response.
    pub async fn call(&mut self, method: &str, params: Option<Value>) -> Response {
        let (_, message) = request(method, params);
        self.send_request(&message).await
    }

    /// The result of a request that must succeed.
    pub async fn ok(&mut self, method: &str, params: Option<Value>) -> Value {
        match self.call(method, params).await.into_result() {
            Ok(result) => result,
            Err(e) => panic!("{method} failed: {e:?}"),
        }
    }

    /// The error of a request that must fail.
    pub async fn err(&mut self, method: &str, params: Option<Value>) -> ErrorObject {
        match self.call(method, params).await.into_result() {
            Ok(result) => panic!("{method} succeeded with {result}, expected an error"),
            Err(e) => e,
        }
    }

    /// Calls the tool `name` with `arguments`.
    pub async fn call_tool(&mut self, name: &str, arguments: Value) -> Response {
        let params = json!({"name": name, "arguments": arguments});
        self.call("tools/call", Some(params)).await
    }

    /// `session/hello` with `token` (see [`hello_params`]); the welcome, which must come.
    pub async fn hello(&mut self, token: &str) -> Value {
        self.ok("session/hello", Some(hello_params(token))).await
    }

    /// Decodes a body the peer wrote, strictly, and a response against its method's result schema.
    fn decode(&self, body: &[u8]) -> Message {
        let text = || String::from_utf8_lossy(body).into_owned();
        let message = decode_strict(body).unwrap_or_else(|e| {
            panic!(
                "the peer wrote a message that fails strict decoding: {e}\n{}",
                text()
            )
        });
        if let Message::Response(r) = &message {
            if let Some(method) = self.methods.get(&r.id) {
                if let Err(e) = decode_response_to(body, method, DecodeMode::Strict) {
                    panic!("a non-conformant answer to {method}: {e}\n{}", text());
                }
            }
        }
        message
    }
}
