//! The start of a connection: the bridge's `session/hello` is checked against the proxy's token and
//! rewritten to carry the mod's (SPEC/1.0 recording.md §5); anything else is forwarded as it came.

use std::time::{Duration, Instant};

use bytes::BytesMut;
use gabp_codec::{encode_frame, Frame, FrameCodec};
use gabp_transport::ByteStream;
use gabp_types::{ErrorCode, ErrorObject, MessageId, Response};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio_util::codec::Decoder;

use super::writer::Entry;
use super::ProxyConfig;
use crate::format::{Direction, Side};

/// How long a bridge has to send its first frame (SPEC/1.0 transport.md §8: time to complete the hello).
const HELLO_DEADLINE: Duration = Duration::from_secs(10);

/// The largest first frame read whole; a larger one is forwarded as it is.
const MAX_HELLO: usize = 1024 * 1024;

/// Why a connection ended before forwarding began.
pub(super) struct Refused {
    pub(super) by: Side,
    pub(super) reason: Option<String>,
}

/// Reads the bridge's first frame, connects to the mod and forwards it (a hello rewritten with the mod's
/// token); returns both streams, ready for forwarding.
pub(super) async fn open(
    config: &ProxyConfig,
    mut bridge: ByteStream,
    entries: &mpsc::Sender<Entry>,
    connection: u64,
) -> Result<(ByteStream, ByteStream), Refused> {
    let to_mod = &Tee(entries, connection, Direction::BridgeToMod);
    let to_bridge = &Tee(entries, connection, Direction::ModToBridge);
    let (raw, first) = match tokio::time::timeout(HELLO_DEADLINE, first_frame(&mut bridge)).await {
        Ok(Ok(read)) => read,
        Ok(Err(reason)) => {
            return Err(Refused {
                by: Side::Bridge,
                reason,
            })
        }
        Err(_) => {
            return Err(Refused {
                by: Side::Recorder,
                reason: Some(format!(
                    "no frame from the bridge within {HELLO_DEADLINE:?}"
                )),
            })
        }
    };
    to_mod.send(&raw);
    let mut forward = raw.clone();
    if let Some((consumed, mut hello)) = first {
        let id = hello.get("id").cloned().unwrap_or(Value::Null);
        let presented = hello.pointer("/params/token").and_then(Value::as_str);
        if !presented.is_some_and(|t| config.proxy_token.verify(t)) {
            let reason = "the bridge did not present the recorder's token".to_owned();
            answer(
                &mut bridge,
                to_bridge,
                &id,
                ErrorCode::AUTHENTICATION_FAILED,
                "Authentication failed",
            )
            .await;
            return Err(Refused {
                by: Side::Recorder,
                reason: Some(reason),
            });
        }
        if let Some(token) = hello.pointer_mut("/params/token") {
            *token = Value::String(config.mod_token.expose_secret().to_owned());
        }
        let body = serde_json::to_vec(&hello).unwrap_or_default();
        forward = encode_frame(&body).into();
        forward.extend_from_slice(&raw[consumed..]);
    }
    let mut mod_side = match gabp_transport::connect_stream(&config.mod_endpoint).await {
        Ok(stream) => stream,
        Err(e) => {
            let reason = format!("cannot reach the mod at {}: {e}", config.mod_endpoint);
            if let Some((_, hello)) = first_hello(&raw) {
                let id = hello.get("id").cloned().unwrap_or(Value::Null);
                answer(
                    &mut bridge,
                    to_bridge,
                    &id,
                    ErrorCode::INTERNAL_ERROR,
                    &reason,
                )
                .await;
            }
            return Err(Refused {
                by: Side::Mod,
                reason: Some(reason),
            });
        }
    };
    if let Err(e) = mod_side.write_all(&forward).await {
        return Err(Refused {
            by: Side::Mod,
            reason: Some(e.to_string()),
        });
    }
    Ok((bridge, mod_side))
}

/// Reads until the first frame is complete: every byte read, and the frame's length and message when it is a
/// `session/hello` request. `None` for a first frame that is anything else (it is forwarded as it came).
async fn first_frame(
    bridge: &mut ByteStream,
) -> Result<(Vec<u8>, Option<(usize, Value)>), Option<String>> {
    let mut raw = Vec::new();
    let mut buf = BytesMut::new();
    loop {
        buf.reserve(8 * 1024);
        let before = buf.len();
        let n = bridge
            .read_buf(&mut buf)
            .await
            .map_err(|e| Some(e.to_string()))?;
        if n == 0 {
            return Err(None);
        }
        raw.extend_from_slice(&buf[before..]);
        if let Some(first) = first_hello(&raw) {
            return Ok((raw, Some(first)));
        }
        let mut probe = BytesMut::from(&raw[..]);
        match FrameCodec::new()
            .with_max_body_size(MAX_HELLO)
            .decode(&mut probe)
        {
            Ok(None) => buf.clear(),
            // A whole frame that is not a hello, an oversized one or a broken header: forwarded as it is.
            Ok(Some(_)) | Err(_) => return Ok((raw, None)),
        }
    }
}

/// The first frame in `raw` when it is complete and a `session/hello` request: its length and message.
fn first_hello(raw: &[u8]) -> Option<(usize, Value)> {
    let mut probe = BytesMut::from(raw);
    let Ok(Some(Frame::Body(body))) = FrameCodec::new()
        .with_max_body_size(MAX_HELLO)
        .decode(&mut probe)
    else {
        return None;
    };
    let consumed = raw.len() - probe.len();
    let message: Value = serde_json::from_slice(&body).ok()?;
    let hello = message.get("type").and_then(Value::as_str) == Some("request")
        && message.get("method").and_then(Value::as_str) == Some("session/hello");
    hello.then_some((consumed, message))
}

/// Answers the bridge's hello with an error of the proxy's own, and tees the answer.
async fn answer(
    bridge: &mut ByteStream,
    tee_to: &Tee<'_>,
    id: &Value,
    code: ErrorCode,
    message: &str,
) {
    let id = id
        .as_str()
        .and_then(|id| MessageId::parse(id).ok())
        .unwrap_or_else(MessageId::nil);
    let response = Response::error(id, ErrorObject::new(code, message));
    let bytes = encode_frame(&serde_json::to_vec(&response).unwrap_or_default());
    tee_to.send(&bytes);
    let _ = bridge.write_all(&bytes).await;
    let _ = bridge.shutdown().await;
}

/// Where the bytes of one direction are recorded.
struct Tee<'a>(&'a mpsc::Sender<Entry>, u64, Direction);

impl Tee<'_> {
    /// Offers `bytes` to the writer, as the forwarding path does.
    fn send(&self, bytes: &[u8]) {
        let _ = self.0.try_send(Entry::Chunk {
            at: Instant::now(),
            connection: self.1,
            direction: self.2,
            bytes: bytes::Bytes::copy_from_slice(bytes),
            lost_before: 0,
        });
    }
}
