//! A mod that breaks the framing (SPEC/1.0 transport.md §1.2, §7): the bridge closes the connection and says what
//! was wrong, where in the stream, and which header it saw. Each mod here is a raw byte writer, so that the bytes
//! on the wire are exactly the faulty ones.

#![allow(clippy::unwrap_used)]

mod bridge_support;

use bridge_support::{err, soon, token, welcome, ALL_METHODS, TOKEN};
use gabp_session::bridge::{Bridge, ConnectionState, DisconnectReason};
use gabp_session::Error;
use gabp_testkit::wire::{frame, FrameReader};
use gabp_transport::FrameFault;
use gabp_types::decode::{decode, DecodeMode};
use gabp_types::{Message, Request};
use serde_json::{json, Value};
use tokio::io::{AsyncWriteExt, DuplexStream, ReadHalf, WriteHalf};

/// The mod's end: frames the bridge wrote come in whole; what goes out is raw bytes.
struct RawMod {
    reader: FrameReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
    /// Bytes written so far: the offset of the next byte.
    written: u64,
}

impl RawMod {
    async fn recv(&mut self) -> Request {
        let body = self.reader.next_frame().await.unwrap().expect("a frame");
        match decode(&body, DecodeMode::Strict).unwrap() {
            Message::Request(request) => request,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    async fn write(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
        self.written += bytes.len() as u64;
    }

    fn response(id: gabp_types::MessageId, result: &Value) -> String {
        json!({"v": "gabp/1", "id": id, "type": "response", "result": result}).to_string()
    }
}

/// A bridge connected to a raw mod, handshake done with well-formed frames.
async fn connected() -> (Bridge, RawMod) {
    let (ours, theirs) = tokio::io::duplex(1 << 20);
    let (read, writer) = tokio::io::split(theirs);
    let mut raw = RawMod {
        reader: FrameReader::new(read),
        writer,
        written: 0,
    };
    let mod_side = async {
        let hello = raw.recv().await;
        assert_eq!(hello.params.as_ref().unwrap().to_value()["token"], TOKEN);
        let body = RawMod::response(hello.id, &welcome(ALL_METHODS, &[]));
        raw.write(&frame(body.as_bytes())).await;
    };
    let (bridge, ()) = tokio::join!(
        Bridge::builder(token()).over(gabp_transport::Connection::new(ours)),
        mod_side
    );
    (bridge.expect("handshake succeeds"), raw)
}

/// The reason the bridge gives once the connection has ended.
async fn disconnect_reason(bridge: &Bridge) -> DisconnectReason {
    match soon(bridge.closed()).await {
        ConnectionState::Disconnected { reason } => reason,
        other => panic!("expected a disconnection, got {other:?}"),
    }
}

/// The fault a failed call carries; the connection's end reason carries the same one.
async fn fault_of(bridge: &Bridge, error: Error) -> FrameFault {
    let Error::Framing { fault } = error else {
        panic!("expected a framing error, got {error:?}")
    };
    assert!(error_text_is_short(&fault), "{fault}");
    assert_eq!(
        disconnect_reason(bridge).await,
        DisconnectReason::Framing(fault.clone())
    );
    fault
}

fn error_text_is_short(fault: &FrameFault) -> bool {
    fault.header.len() <= 4 * FrameFault::HEADER_SHOWN + 3
        && fault
            .header
            .chars()
            .all(|c| c.is_ascii_graphic() || c == ' ')
}

/// `bytes` as a fault shows them: escaped, at most `HEADER_SHOWN` of them.
fn shown(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(FrameFault::HEADER_SHOWN)];
    let dots = if cut.len() < bytes.len() { "..." } else { "" };
    format!("{}{dots}", cut.escape_ascii())
}

/// Lib.GAB counts `Content-Length` in UTF-16 code units: "für" is 3 units but 4 bytes, so the body ends one byte
/// early and its last byte starts what the bridge must read as the next header block.
#[tokio::test]
async fn a_content_length_in_utf16_code_units_is_reported_with_offset_and_header() {
    let (bridge, mut raw) = connected().await;
    let mut wire_after = Vec::new();
    let mut stray_at = 0;
    let (result, ()) = tokio::join!(bridge.request("session/ping", json!({})), async {
        let ping = raw.recv().await;
        let body = RawMod::response(ping.id, &json!({"note": "für"}));
        let utf16_units = body.encode_utf16().count();
        assert_eq!(utf16_units + 1, body.len());
        let header = format!("Content-Length: {utf16_units}\r\n\r\n");
        stray_at = raw.written + (header.len() + utf16_units) as u64;
        raw.write(header.as_bytes()).await;
        raw.write(body.as_bytes()).await;
        // A second frame, well formed: its header follows the stray `}`.
        let event = json!({"v": "gabp/1", "id": gabp_types::MessageId::new_v4(), "type": "event",
            "channel": "x/y", "seq": 0, "payload": {}})
        .to_string();
        wire_after = [b"}".as_slice(), &frame(event.as_bytes())].concat();
        raw.write(&frame(event.as_bytes())).await;
    });
    let fault = fault_of(&bridge, err(result)).await;
    assert_eq!(fault.offset, stray_at);
    assert_eq!(fault.reason, "header block has no Content-Length header");
    assert_eq!(fault.header, shown(&wire_after));
    assert!(fault.header.starts_with("}Content-Length: "), "{fault}");
}

/// Two frames interleaved: a second frame written inside the first one's body.
#[tokio::test]
async fn interleaved_frames_are_reported_with_offset_and_header() {
    let (bridge, mut raw) = connected().await;
    let mut wire = Vec::new();
    let mut start = 0;
    let (result, ()) = tokio::join!(bridge.request("session/ping", json!({})), async {
        let ping = raw.recv().await;
        let body = RawMod::response(ping.id, &json!({}));
        let (first, rest) = body.as_bytes().split_at(10);
        start = raw.written;
        wire.extend(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        wire.extend(first);
        wire.extend(frame(br#"{"v":"gabp/1"}"#));
        wire.extend(rest);
        wire.extend(frame(br#"{}"#));
        raw.write(&wire).await;
    });
    let fault = fault_of(&bridge, err(result)).await;
    // The first frame's announced length ends inside its own body's second part; what follows is read as a header.
    let head = wire.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let announced = wire.len() - head - frame(br#"{"v":"gabp/1"}"#).len() - frame(b"{}").len();
    let broken = head + announced;
    assert_eq!(fault.offset, start + broken as u64);
    assert_eq!(fault.header, shown(&wire[broken..]));
}

/// A body one byte short, then the mod closes: the call fails with where the frame started and its header.
#[tokio::test]
async fn a_body_cut_short_by_the_end_of_the_stream_is_reported() {
    let (bridge, mut raw) = connected().await;
    let mut start = 0;
    let mut header = String::new();
    let (result, ()) = tokio::join!(bridge.request("session/ping", json!({})), async {
        let ping = raw.recv().await;
        let body = RawMod::response(ping.id, &json!({}));
        header = format!("Content-Length: {}\r\n\r\n", body.len());
        start = raw.written;
        raw.write(header.as_bytes()).await;
        raw.write(&body.as_bytes()[..body.len() - 1]).await;
        raw.writer.shutdown().await.unwrap();
    });
    let fault = fault_of(&bridge, err(result)).await;
    assert_eq!(fault.offset, start);
    assert!(
        fault.reason.contains("stream ended inside a frame body"),
        "{fault}"
    );
    assert_eq!(fault.header, shown(header.as_bytes()));
    let text = Error::Framing {
        fault: fault.clone(),
    }
    .to_string();
    assert!(text.starts_with(&format!(
        "the mod broke the framing: frame error at byte {start}: "
    )));
}
