//! [`WsStream`]: a WebSocket seen as the byte stream of `Content-Length` frames the rest of the
//! crate frames, while on the wire each body is one text message (SPEC/1.0 transport.md §2.5).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures::{Sink, Stream};
use gabp_codec::{Frame, FrameCodec};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::{Instant, Sleep};
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, WebSocketConfig};
use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;
use tokio_util::codec::Decoder;

use super::settings::WsSettings;

/// Header bytes allowed on top of a body in the write buffer.
const HEAD_ROOM: usize = 64;

/// The tungstenite limits for bodies of at most `max_body` bytes: a frame or message announced
/// larger is refused before it is buffered.
pub(crate) fn ws_config(max_body: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .max_message_size(Some(max_body))
        .max_frame_size(Some(max_body))
}

/// A WebSocket as an [`AsyncRead`] + [`AsyncWrite`] of `Content-Length` frames.
///
/// Reading turns each text message into one frame; a binary message closes the connection with
/// 1003, a message over the limit with 1009, and either reads as an `InvalidData` error. Writing
/// parses the frames written and sends each body as one text message. Pings go out after
/// `ping_interval` of silence; a peer silent for `pong_timeout` after one reads as `TimedOut`.
pub(crate) struct WsStream {
    ws: WebSocketStream<TcpStream>,
    /// A frame being read out: its header, then its body.
    head: Bytes,
    body: Bytes,
    /// Bytes written but not yet a whole frame.
    written: BytesMut,
    decoder: FrameCodec,
    /// A body taken from `written` that the socket was not ready for.
    queued: Option<Message>,
    /// What the socket gave after a read had already handed out bytes, and that cannot join them (an error, a
    /// close): the next read takes it.
    held: Option<Option<Result<Message, WsError>>>,
    max_body: usize,
    ping_interval: Duration,
    pong_timeout: Duration,
    last_heard: Instant,
    /// A message arrived since `last_heard` was set: the clock is read once per read, not per message.
    heard: bool,
    ping_sent: Option<Instant>,
    timer: Pin<Box<Sleep>>,
    eof: bool,
}

impl WsStream {
    pub(crate) fn new(
        ws: WebSocketStream<TcpStream>,
        settings: &WsSettings,
        max_body: usize,
    ) -> Self {
        let now = Instant::now();
        WsStream {
            ws,
            head: Bytes::new(),
            body: Bytes::new(),
            written: BytesMut::new(),
            decoder: FrameCodec::new().with_max_body_size(max_body),
            queued: None,
            held: None,
            max_body,
            ping_interval: settings.ping_interval,
            pong_timeout: settings.pong_timeout,
            last_heard: now,
            heard: false,
            ping_sent: None,
            timer: Box::pin(tokio::time::sleep_until(now + settings.ping_interval)),
            eof: false,
        }
    }

    /// Send a Close frame with `code` (best effort: what the socket takes now), then fail.
    fn close_with(
        &mut self,
        cx: &mut Context<'_>,
        code: CloseCode,
        why: &'static str,
    ) -> io::Error {
        let mut ws = Pin::new(&mut self.ws);
        if let Poll::Ready(Ok(())) = ws.as_mut().poll_ready(cx) {
            let frame = CloseFrame {
                code,
                reason: Utf8Bytes::from_static(why),
            };
            if ws.as_mut().start_send(Message::Close(Some(frame))).is_ok() {
                let _ = ws.poll_flush(cx);
            }
        }
        self.eof = true;
        io::Error::new(io::ErrorKind::InvalidData, why)
    }

    /// Messages arrived: the peer is alive. The timer is not moved here (that costs a lock of the runtime's
    /// timer per message); when it fires early, `poll_liveness` sets it again from `last_heard`.
    fn note_heard(&mut self) {
        if self.heard {
            self.heard = false;
            self.last_heard = Instant::now();
            self.ping_sent = None;
        }
    }

    /// Run the liveness timer: send a Ping after `ping_interval` of silence, fail when the peer is silent for
    /// `pong_timeout` after it.
    fn poll_liveness(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        self.note_heard();
        while self.timer.as_mut().poll(cx).is_ready() {
            let now = Instant::now();
            if let Some(sent) = self.ping_sent {
                if now >= sent + self.pong_timeout {
                    self.eof = true;
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the WebSocket peer did not answer a ping in time",
                    ));
                }
                self.timer.as_mut().reset(sent + self.pong_timeout);
                continue;
            }
            let due = self.last_heard + self.ping_interval;
            if now < due {
                self.timer.as_mut().reset(due);
                continue;
            }
            let mut ws = Pin::new(&mut self.ws);
            match ws.as_mut().poll_ready(cx) {
                Poll::Ready(Ok(())) => {
                    ws.as_mut()
                        .start_send(Message::Ping(Bytes::new()))
                        .map_err(into_io)?;
                    if let Poll::Ready(Err(e)) = ws.poll_flush(cx) {
                        return Err(into_io(e));
                    }
                }
                Poll::Ready(Err(e)) => return Err(into_io(e)),
                // The socket does not take even a Ping: the pong timeout still runs.
                Poll::Pending => {}
            }
            self.ping_sent = Some(now);
            self.timer.as_mut().reset(now + self.pong_timeout);
        }
        Ok(())
    }

    /// Send what `written` holds as whole frames; `Pending` while the socket is not ready.
    fn poll_send_written(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        loop {
            if let Some(message) = self.queued.take() {
                let mut ws = Pin::new(&mut self.ws);
                match ws.as_mut().poll_ready(cx) {
                    Poll::Ready(Ok(())) => ws.start_send(message).map_err(into_io)?,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(into_io(e))),
                    Poll::Pending => {
                        self.queued = Some(message);
                        return Poll::Pending;
                    }
                }
            }
            match self.decoder.decode(&mut self.written) {
                Ok(Some(Frame::Body(body))) => {
                    let text = Utf8Bytes::try_from(body).map_err(|_| {
                        io::Error::new(io::ErrorKind::InvalidData, "a GABP body is not UTF-8")
                    })?;
                    self.queued = Some(Message::Text(text));
                }
                Ok(Some(Frame::Oversized { .. })) => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "a frame larger than the WebSocket message limit was written",
                    )))
                }
                Ok(None) => return Poll::Ready(Ok(())),
                Err(e) => return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, e))),
            }
        }
    }
}

fn into_io(e: WsError) -> io::Error {
    match e {
        WsError::Io(e) => e,
        WsError::ConnectionClosed | WsError::AlreadyClosed => io::ErrorKind::BrokenPipe.into(),
        other => io::Error::new(io::ErrorKind::InvalidData, other.to_string()),
    }
}

/// Copy from `src` into `buf` as much as fits.
fn copy_out(src: &mut Bytes, buf: &mut ReadBuf<'_>) {
    let n = src.len().min(buf.remaining());
    buf.put_slice(&src[..n]);
    src.advance(n);
}

impl WsStream {
    /// The next message: one read earlier but held back, else the socket's.
    fn poll_message(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Message, WsError>>> {
        match self.held.take() {
            Some(item) => Poll::Ready(item),
            None => Pin::new(&mut self.ws).poll_next(cx),
        }
    }

    /// Takes one message read from the socket: a text message becomes the next frame to read out; anything that
    /// ends the stream says so.
    fn take_message(
        &mut self,
        cx: &mut Context<'_>,
        item: Option<Result<Message, WsError>>,
    ) -> io::Result<()> {
        let message = match item {
            None | Some(Err(WsError::ConnectionClosed | WsError::AlreadyClosed)) => {
                self.eof = true;
                return Ok(());
            }
            Some(Err(WsError::Capacity(CapacityError::MessageTooLong { .. }))) => {
                return Err(self.close_with(cx, CloseCode::Size, "message too big"));
            }
            Some(Err(WsError::Protocol(_) | WsError::Utf8(_))) => {
                return Err(self.close_with(cx, CloseCode::Protocol, "WebSocket protocol error"));
            }
            Some(Err(e)) => {
                self.eof = true;
                return Err(into_io(e));
            }
            Some(Ok(message)) => message,
        };
        self.heard = true;
        match message {
            Message::Text(text) => {
                let body = Bytes::from(text);
                let mut head = BytesMut::with_capacity(HEAD_ROOM);
                self.decoder
                    .encode_header(body.len(), &mut head)
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                self.head = head.freeze();
                self.body = body;
            }
            Message::Binary(_) => {
                return Err(self.close_with(
                    cx,
                    CloseCode::Unsupported,
                    "binary messages are refused",
                ));
            }
            Message::Close(_) => self.eof = true,
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
        }
        Ok(())
    }
}

/// Whether a message read after some bytes were already handed out in the same read can join them: a text
/// message or a control frame; an error, a close or a binary message waits for the next read.
fn joins_batch(item: &Option<Result<Message, WsError>>) -> bool {
    matches!(
        item,
        Some(Ok(Message::Text(_) | Message::Ping(_) | Message::Pong(_)))
    )
}

impl AsyncRead for WsStream {
    /// Hands out every message the socket has ready, as long as `buf` has room, so that requests that arrived
    /// together are read together and their answers leave in one write (SPEC/1.0 transport.md §6); it returns
    /// as soon as the socket has nothing more, without waiting.
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let start = buf.filled().len();
        let result = loop {
            copy_out(&mut this.head, buf);
            if this.head.is_empty() {
                copy_out(&mut this.body, buf);
            }
            if !this.head.is_empty() || !this.body.is_empty() || this.eof {
                break Ok(());
            }
            let handed_out = buf.filled().len() > start;
            if handed_out && buf.remaining() == 0 {
                break Ok(());
            }
            if !handed_out {
                if let Err(e) = this.poll_liveness(cx) {
                    break Err(e);
                }
            }
            let item = match this.poll_message(cx) {
                Poll::Ready(item) => item,
                Poll::Pending if handed_out => break Ok(()),
                Poll::Pending => {
                    this.note_heard();
                    return Poll::Pending;
                }
            };
            if handed_out && !joins_batch(&item) {
                this.held = Some(item);
                break Ok(());
            }
            if let Err(e) = this.take_message(cx, item) {
                break Err(e);
            }
        };
        this.note_heard();
        Poll::Ready(result)
    }
}

impl AsyncWrite for WsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.queued.is_some() {
            match this.poll_send_written(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending if this.queued.is_some() => return Poll::Pending,
                Poll::Pending => {}
            }
        }
        // Bounded: at most one frame (body limit plus its header) waits here.
        let room = (this.max_body + HEAD_ROOM + 8 * 1024).saturating_sub(this.written.len());
        let n = buf.len().min(room.max(1));
        this.written.extend_from_slice(&buf[..n]);
        match this.poll_send_written(cx) {
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            _ => Poll::Ready(Ok(n)),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        futures::ready!(this.poll_send_written(cx))?;
        Pin::new(&mut this.ws).poll_flush(cx).map_err(into_io)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        futures::ready!(this.poll_send_written(cx))?;
        match futures::ready!(Pin::new(&mut this.ws).poll_close(cx)) {
            Ok(()) | Err(WsError::ConnectionClosed | WsError::AlreadyClosed) => Poll::Ready(Ok(())),
            Err(e) => Poll::Ready(Err(into_io(e))),
        }
    }
}
