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
    max_body: usize,
    ping_interval: Duration,
    pong_timeout: Duration,
    last_heard: Instant,
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
            max_body,
            ping_interval: settings.ping_interval,
            pong_timeout: settings.pong_timeout,
            last_heard: now,
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

    fn heard(&mut self) {
        self.last_heard = Instant::now();
        self.ping_sent = None;
        self.timer
            .as_mut()
            .reset(self.last_heard + self.ping_interval);
    }

    /// Run the liveness timer: send a Ping when due, fail when the peer is silent too long.
    fn poll_liveness(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
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

impl AsyncRead for WsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if !this.head.is_empty() {
                copy_out(&mut this.head, buf);
                if !this.body.is_empty() && buf.remaining() > 0 {
                    copy_out(&mut this.body, buf);
                }
                return Poll::Ready(Ok(()));
            }
            if !this.body.is_empty() {
                copy_out(&mut this.body, buf);
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            this.poll_liveness(cx)?;
            let message = match Pin::new(&mut this.ws).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None)
                | Poll::Ready(Some(Err(WsError::ConnectionClosed | WsError::AlreadyClosed))) => {
                    this.eof = true;
                    return Poll::Ready(Ok(()));
                }
                Poll::Ready(Some(Err(WsError::Capacity(CapacityError::MessageTooLong {
                    ..
                })))) => {
                    let e = this.close_with(cx, CloseCode::Size, "message too big");
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(Some(Err(WsError::Protocol(_) | WsError::Utf8(_)))) => {
                    let e = this.close_with(cx, CloseCode::Protocol, "WebSocket protocol error");
                    return Poll::Ready(Err(e));
                }
                Poll::Ready(Some(Err(e))) => {
                    this.eof = true;
                    return Poll::Ready(Err(into_io(e)));
                }
                Poll::Ready(Some(Ok(message))) => message,
            };
            this.heard();
            match message {
                Message::Text(text) => {
                    let body = Bytes::from(text);
                    let mut head = BytesMut::with_capacity(HEAD_ROOM);
                    this.decoder
                        .encode_header(body.len(), &mut head)
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    this.head = head.freeze();
                    this.body = body;
                }
                Message::Binary(_) => {
                    let e =
                        this.close_with(cx, CloseCode::Unsupported, "binary messages are refused");
                    return Poll::Ready(Err(e));
                }
                Message::Close(_) => {
                    this.eof = true;
                    return Poll::Ready(Ok(()));
                }
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => {}
            }
        }
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
