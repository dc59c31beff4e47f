//! [`ReplayMod`]: a mod that answers from a recording (SPEC/1.0 recording.md §6.1).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use gabp_codec::{encode_frame, Frame, FrameCodec};
use gabp_transport::{ByteStream, Endpoint, Listener, Token};
use gabp_types::ErrorCode;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Semaphore};
use tokio::time::Instant;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::error::RecordingError;
use crate::matching::{ConnectionScript, Exchange, Matcher, Mode, Script};
use crate::read::Recording;

/// Requests answered at once per connection (SPEC/1.0 transport.md §8); past it the mod stops reading.
const MAX_IN_FLIGHT: usize = 64;

/// Frames waiting to be written per connection.
const OUTGOING: usize = 256;

/// How a [`ReplayMod`] answers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReplayOptions {
    /// How requests are matched to recorded ones.
    pub mode: Mode,
    /// JSON pointers (into the request) left out of matching.
    pub ignore: Vec<String>,
    /// Whether answers and events keep their recorded offsets from the request (else: at once).
    pub timing: bool,
}

impl Default for ReplayOptions {
    fn default() -> Self {
        ReplayOptions {
            mode: Mode::Exact,
            ignore: Vec::new(),
            timing: true,
        }
    }
}

/// A mod that serves a recording: the recorded welcome to a bridge presenting its token, then for each
/// request the recorded answer to the matching recorded request, and the events that followed it, at their
/// recorded offsets. The n-th connection replays the n-th recorded one (the last one past the end).
#[derive(Debug, Clone)]
pub struct ReplayMod {
    script: Arc<Script>,
    token: Token,
    options: ReplayOptions,
    served: Arc<AtomicUsize>,
}

impl ReplayMod {
    /// A replay of the recording at `path`, with a fresh token.
    ///
    /// # Errors
    ///
    /// [`RecordingError`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, RecordingError> {
        Self::new(&Recording::read(path)?)
    }

    /// A replay of `recording`, with a fresh token.
    ///
    /// # Errors
    ///
    /// [`RecordingError::NoSession`] when no connection has a hello; [`RecordingError::Token`].
    pub fn new(recording: &Recording) -> Result<Self, RecordingError> {
        let mut script = Script::from_recording(recording);
        script.connections.retain(|c| c.hello.is_some());
        if script.connections.is_empty() {
            return Err(RecordingError::NoSession);
        }
        Ok(ReplayMod {
            script: Arc::new(script),
            token: Token::generate().map_err(RecordingError::Token)?,
            options: ReplayOptions::default(),
            served: Arc::default(),
        })
    }

    /// The same replay, expecting `token` from bridges.
    #[must_use]
    pub fn with_token(mut self, token: Token) -> Self {
        self.token = token;
        self
    }

    /// The same replay, answering as `options` say.
    #[must_use]
    pub fn with_options(mut self, options: ReplayOptions) -> Self {
        self.options = options;
        self
    }

    /// The token bridges must present.
    #[must_use]
    pub fn token(&self) -> &Token {
        &self.token
    }

    /// The recorded connections.
    #[must_use]
    pub fn script(&self) -> &Script {
        &self.script
    }

    /// Serves one connection on `stream` until the bridge closes it. Must be called within a Tokio runtime.
    pub fn serve_stream<S>(&self, stream: S) -> tokio::task::JoinHandle<()>
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let n = self.served.fetch_add(1, Ordering::Relaxed);
        let script = self.script.clone();
        let index = n.min(script.connections.len() - 1);
        let this = self.clone();
        tokio::spawn(async move { this.serve_one(stream, &script.connections[index]).await })
    }

    /// Serves one new in-memory connection and returns the bridge's end of it.
    #[must_use]
    pub fn serve_in_memory(&self) -> ByteStream {
        let (ours, theirs) = tokio::io::duplex(64 * 1024);
        drop(self.serve_stream(theirs));
        ByteStream::new(ours)
    }

    /// Serves every bridge that connects to `listener`, until the handle is shut down.
    #[must_use]
    pub fn serve(&self, listener: Listener) -> ReplayHandle {
        let cancel = CancellationToken::new();
        let endpoint = listener.endpoint().clone();
        let this = self.clone();
        let stop = cancel.clone();
        let tracker = TaskTracker::new();
        let tasks = tracker.clone();
        tracker.spawn(async move {
            loop {
                let accepted = tokio::select! {
                    () = stop.cancelled() => return,
                    accepted = listener.accept_stream() => accepted,
                };
                match accepted {
                    Ok((stream, _)) => {
                        let mut served = this.serve_stream(stream);
                        let stop = stop.clone();
                        tasks.spawn(async move {
                            tokio::select! {
                                () = stop.cancelled() => served.abort(),
                                _ = &mut served => {}
                            }
                        });
                    }
                    Err(e) => tracing::warn!(error = %e, "accept failed"),
                }
            }
        });
        ReplayHandle {
            endpoint,
            cancel,
            tracker,
        }
    }

    /// Serves on a free loopback TCP port.
    ///
    /// # Errors
    ///
    /// [`RecordingError::Transport`] when no port can be bound.
    pub async fn serve_tcp(&self) -> Result<ReplayHandle, RecordingError> {
        Ok(self.serve(Listener::bind(&Endpoint::tcp_v4(0)).await?))
    }

    async fn serve_one<S>(&self, stream: S, script: &ConnectionScript)
    where
        S: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (read, mut write) = tokio::io::split(stream);
        let (out, mut outgoing) = mpsc::channel::<Vec<u8>>(OUTGOING);
        let writer = tokio::spawn(async move {
            while let Some(frame) = outgoing.recv().await {
                if write.write_all(&frame).await.is_err() {
                    return;
                }
            }
            let _ = write.shutdown().await;
        });
        let mut frames = FramedRead::new(read, FrameCodec::new());
        let slots = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
        let replies = TaskTracker::new();
        let mut matcher = Matcher::new(script, self.options.mode, &self.options.ignore);
        let mut authenticated = false;
        while let Some(frame) = frames.next().await {
            let body = match frame {
                Ok(Frame::Body(body)) => body,
                Ok(Frame::Oversized { limit, .. }) => {
                    let data = json!({"maxMessageSize": limit});
                    let _ = out
                        .send(error(
                            &Value::Null,
                            ErrorCode::INVALID_REQUEST,
                            "message too large",
                            data,
                        ))
                        .await;
                    continue;
                }
                Err(_) => break,
            };
            let Ok(Value::Object(request)) = serde_json::from_slice::<Value>(&body) else {
                let _ = out
                    .send(error(
                        &Value::Null,
                        ErrorCode::PARSE_ERROR,
                        "not a JSON object",
                        Value::Null,
                    ))
                    .await;
                continue;
            };
            if request.get("type").and_then(Value::as_str) != Some("request") {
                continue;
            }
            let request = Value::Object(request);
            let id = request.get("id").cloned().unwrap_or(Value::Null);
            let method = request.get("method").and_then(Value::as_str).unwrap_or("");
            let exchange = if !authenticated {
                let presented = request.pointer("/params/token").and_then(Value::as_str);
                if method != "session/hello" || !presented.is_some_and(|t| self.token.verify(t)) {
                    let _ = out
                        .send(error(
                            &id,
                            ErrorCode::AUTHENTICATION_FAILED,
                            "Authentication failed",
                            Value::Null,
                        ))
                        .await;
                    break;
                }
                authenticated = true;
                script.hello.as_ref()
            } else {
                match matcher.answer(&request) {
                    Ok(exchange) => Some(exchange),
                    Err(miss) => {
                        let code = if miss.method_recorded {
                            ErrorCode::INVALID_PARAMS
                        } else {
                            ErrorCode::METHOD_NOT_FOUND
                        };
                        let data = miss.closest.as_deref().map_or(Value::Null, |(line, _, d)| {
                            json!({"closestLine": line, "pointer": d.pointer, "recorded": d.recorded, "got": d.live})
                        });
                        let _ = out.send(error(&id, code, &miss.to_string(), data)).await;
                        continue;
                    }
                }
            };
            let Some(exchange) = exchange else { break };
            let Ok(slot) = slots.clone().acquire_owned().await else {
                break;
            };
            replies.spawn(play(
                exchange.clone(),
                id,
                out.clone(),
                self.options.timing,
                slot,
            ));
        }
        replies.close();
        replies.wait().await;
        drop(out);
        let _ = writer.await;
    }
}

/// Sends what the mod sent after `exchange`'s request: its response (answering `id`) and events.
async fn play(
    exchange: Exchange,
    id: Value,
    out: mpsc::Sender<Vec<u8>>,
    timing: bool,
    _slot: tokio::sync::OwnedSemaphorePermit,
) {
    let start = Instant::now();
    for reply in exchange.replies {
        if timing {
            tokio::time::sleep_until(start + Duration::from_micros(reply.offset_us)).await;
        }
        let mut message = reply.message;
        if reply.is_response {
            message["id"] = id.clone();
        }
        if out.send(frame(&message)).await.is_err() {
            return;
        }
    }
}

fn error(id: &Value, code: ErrorCode, message: &str, data: Value) -> Vec<u8> {
    let mut error = json!({"code": code.code(), "message": message});
    if !data.is_null() {
        error["data"] = data;
    }
    let id = if id.is_string() {
        id.clone()
    } else {
        json!("00000000-0000-0000-0000-000000000000")
    };
    frame(&json!({"v": "gabp/1", "id": id, "type": "response", "error": error}))
}

/// `message` as a frame (SPEC/1.0 transport.md §1.1), whatever its size: a recorded message is replayed as it was.
fn frame(message: &Value) -> Vec<u8> {
    encode_frame(&serde_json::to_vec(message).unwrap_or_default()).into()
}

/// A [`ReplayMod`] serving a listener.
#[derive(Debug)]
pub struct ReplayHandle {
    endpoint: Endpoint,
    cancel: CancellationToken,
    tracker: TaskTracker,
}

impl ReplayHandle {
    /// Where it listens (with the real port).
    #[must_use]
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Stops accepting and ends every connection.
    pub async fn shutdown(self) {
        self.cancel.cancel();
        self.tracker.close();
        self.tracker.wait().await;
    }
}
