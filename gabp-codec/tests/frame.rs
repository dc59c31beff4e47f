//! `FrameCodec` driven through `FramedRead` by scripted reads (chosen chunks and `Pending`s).

mod support;

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use gabp_codec::{CodecError, Frame, FrameCodec};
use support::{body, data, decode, decode_bytes, frame, read_all, ScriptedReader};
use tokio_util::codec::{Encoder, FramedRead};

const BODY: &str = r#"{"v":"gabp/1","id":"8d3c4c1e-8a2b-4f3e-9a59-0c8e4a2b7d10","type":"request","method":"session/ping"}"#;

// ---- splits and batching -------------------------------------------------------------------

#[tokio::test]
async fn frame_split_at_every_byte_position() {
    let wire = frame(BODY);
    for at in 0..=wire.len() {
        let (head, tail) = wire.split_at(at);
        let items = decode(ScriptedReader::chunks([head, tail])).await;
        assert_eq!(items.len(), 1, "split at {at}: {items:?}");
        assert_eq!(body(&items[0]), BODY.as_bytes(), "split at {at}");
    }
}

#[tokio::test]
async fn frame_split_into_single_bytes_with_pending_between() {
    let mut wire = frame(BODY);
    wire.extend_from_slice(&frame("{}"));
    let items = decode(ScriptedReader::chunks(wire.chunks(1))).await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(body(&items[0]), BODY.as_bytes());
    assert_eq!(body(&items[1]), b"{}");
}

#[tokio::test]
async fn two_frames_split_at_every_byte_position() {
    let mut wire = frame(BODY);
    wire.extend_from_slice(&frame("[1,2,3]"));
    for at in 0..=wire.len() {
        let (head, tail) = wire.split_at(at);
        let items = decode(ScriptedReader::chunks([head, tail])).await;
        assert_eq!(items.len(), 2, "split at {at}: {items:?}");
        assert_eq!(body(&items[0]), BODY.as_bytes());
        assert_eq!(body(&items[1]), b"[1,2,3]");
    }
}

#[tokio::test]
async fn many_frames_in_one_read() {
    let bodies: Vec<String> = (0..500).map(|i| format!(r#"{{"n":{i}}}"#)).collect();
    let wire: Vec<u8> = bodies.iter().flat_map(frame).collect();
    let items = decode_bytes(&wire).await;
    assert_eq!(items.len(), bodies.len());
    for (item, expected) in items.iter().zip(&bodies) {
        assert_eq!(body(item), expected.as_bytes());
    }
}

#[tokio::test]
async fn multibyte_utf8_body_split_across_reads() {
    let text = r#"{"name":"Ærø ✓ 🎮 ゲーム"}"#;
    let wire = frame(text);
    let body_start = wire.len() - text.len();
    // Cut inside every multi-byte character: after the first byte of each non-ASCII character.
    for (index, ch) in text.char_indices().filter(|(_, c)| !c.is_ascii()) {
        for inner in 1..ch.len_utf8() {
            let at = body_start + index + inner;
            let items = decode(ScriptedReader::chunks([&wire[..at], &wire[at..]])).await;
            assert_eq!(items.len(), 1);
            let decoded = std::str::from_utf8(body(&items[0])).expect("body stays valid UTF-8");
            assert_eq!(decoded, text, "split at {at}");
        }
    }
}

#[tokio::test]
async fn zero_length_body_yields_empty_frame_and_stream_continues() {
    let mut wire = b"Content-Length: 0\r\n\r\n".to_vec();
    wire.extend_from_slice(&frame("{}"));
    let items = decode_bytes(&wire).await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(body(&items[0]), b"");
    assert_eq!(body(&items[1]), b"{}");
}

// ---- limits ----------------------------------------------------------------------------------

#[tokio::test]
async fn body_exactly_at_limit_is_accepted() {
    let limit = 64;
    let payload = vec![b'a'; limit];
    let items = read_all(
        FrameCodec::new().with_max_body_size(limit),
        ScriptedReader::new([data(frame(&payload))]),
    )
    .await;
    assert_eq!(items.len(), 1);
    assert_eq!(body(&items[0]), &payload[..]);
}

#[tokio::test]
async fn body_one_byte_over_limit_is_recoverable_and_next_frame_decodes() {
    let limit = 64;
    let mut wire = frame(vec![b'a'; limit + 1]);
    wire.extend_from_slice(&frame("{}"));
    // Also with the oversized body arriving in pieces around Pending.
    for at in [0, 10, 70, wire.len() - 3, wire.len()] {
        let items = read_all(
            FrameCodec::new().with_max_body_size(limit),
            ScriptedReader::chunks([&wire[..at], &wire[at..]]),
        )
        .await;
        assert_eq!(items.len(), 2, "split at {at}: {items:?}");
        assert!(
            matches!(
                items[0],
                Ok(Frame::Oversized {
                    declared: 65,
                    limit: 64
                })
            ),
            "{:?}",
            items[0]
        );
        assert_eq!(body(&items[1]), b"{}");
    }
}

#[tokio::test]
async fn oversized_body_is_discarded_without_buffering() {
    // 50 MiB announced and sent in 64 KiB reads against a 1 MiB limit.
    let declared: usize = 50 * 1024 * 1024;
    let chunk = vec![b'x'; 64 * 1024];
    let mut steps = vec![data(format!("Content-Length: {declared}\r\n\r\n"))];
    steps.extend((0..declared / chunk.len()).map(|_| data(&chunk)));
    steps.push(data(frame("{}")));
    let mut reader = FramedRead::new(ScriptedReader::new(steps), FrameCodec::new());
    let first = reader.next().await.expect("an item").expect("not fatal");
    assert_eq!(
        first,
        Frame::Oversized {
            declared: declared as u64,
            limit: gabp_codec::DEFAULT_MAX_BODY_SIZE
        }
    );
    let second = reader.next().await.expect("an item").expect("not fatal");
    assert_eq!(second, Frame::Body(Bytes::from_static(b"{}")));
    assert!(
        reader.read_buffer().capacity() <= 1024 * 1024,
        "{}",
        reader.read_buffer().capacity()
    );
    assert!(reader.next().await.is_none());
}

#[tokio::test]
async fn huge_declared_length_reserves_nothing() {
    // A length near u64::MAX must not be reserved; it is an oversized frame being skipped.
    let items = decode_bytes(b"Content-Length: 18446744073709551615\r\n\r\nabc").await;
    assert!(matches!(
        items[0],
        Ok(Frame::Oversized {
            declared: u64::MAX,
            ..
        })
    ));
    // The stream then ends inside the skipped body.
    assert!(matches!(
        items[1],
        Err(CodecError::TruncatedBody {
            expected: u64::MAX,
            received: 3
        })
    ));
}

// ---- header syntax accepted -----------------------------------------------------------------

#[tokio::test]
async fn header_names_are_case_insensitive_and_content_type_optional() {
    for head in [
        "content-length: 2\r\n\r\n",
        "CONTENT-LENGTH: 2\r\n\r\n",
        "Content-Length:2\r\n\r\n",
        "Content-Length: \t2 \t\r\n\r\n",
        "Content-Length: 002\r\n\r\n",
        "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n",
        "X-Anything: ignored\r\ncontent-LENGTH: 2\r\nX-Other:\r\n\r\n",
    ] {
        let mut wire = head.as_bytes().to_vec();
        wire.extend_from_slice(b"{}");
        wire.extend_from_slice(&frame("[]"));
        let items = decode_bytes(&wire).await;
        assert_eq!(items.len(), 2, "{head:?}: {items:?}");
        assert_eq!(body(&items[0]), b"{}", "{head:?}");
        assert_eq!(body(&items[1]), b"[]", "{head:?}");
    }
}

#[tokio::test]
async fn identical_duplicate_content_length_is_accepted() {
    let items = decode_bytes(b"Content-Length: 2\r\ncontent-length: 02\r\n\r\n{}").await;
    assert_eq!(items.len(), 1);
    assert_eq!(body(&items[0]), b"{}");
}

// ---- end of stream ---------------------------------------------------------------------------

#[tokio::test]
async fn clean_eof_between_frames_ends_the_stream() {
    let items = decode_bytes(&frame("{}")).await;
    assert_eq!(items.len(), 1);
    assert!(decode(ScriptedReader::new([])).await.is_empty());
}

#[tokio::test]
async fn truncated_header_at_eof_is_an_error() {
    let items = decode_bytes(b"Content-Length: 2\r\n").await;
    assert!(
        matches!(
            items[..],
            [Err(CodecError::TruncatedHeader { buffered: 19 })]
        ),
        "{items:?}"
    );
}

#[tokio::test]
async fn truncated_body_at_eof_is_an_error() {
    let mut wire = frame("{}");
    wire.extend_from_slice(&frame(BODY)[..70]);
    let items = decode(ScriptedReader::chunks(wire.chunks(7))).await;
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(body(&items[0]), b"{}");
    let head_len = frame(BODY).len() - BODY.len();
    assert!(
        matches!(items[1], Err(CodecError::TruncatedBody { expected, received })
            if expected == BODY.len() as u64 && received == (70 - head_len) as u64),
        "{:?}",
        items[1]
    );
}

#[tokio::test]
async fn truncated_oversized_body_at_eof_is_an_error() {
    let items = read_all(
        FrameCodec::new().with_max_body_size(4),
        ScriptedReader::new([data("Content-Length: 10\r\n\r\n12345")]),
    )
    .await;
    assert!(matches!(
        items[0],
        Ok(Frame::Oversized {
            declared: 10,
            limit: 4
        })
    ));
    assert!(
        matches!(
            items[1],
            Err(CodecError::TruncatedBody {
                expected: 10,
                received: 5
            })
        ),
        "{:?}",
        items[1]
    );
}

// ---- cancel safety ---------------------------------------------------------------------------

#[tokio::test]
async fn next_dropped_inside_select_loses_nothing() {
    let wire = frame(BODY);
    let mut reader = FramedRead::new(ScriptedReader::chunks(wire.chunks(9)), FrameCodec::new());
    let mut cancelled = 0;
    let frame = loop {
        // `next()` reads one chunk, hits `Pending`, and is dropped in favour of the ready branch.
        tokio::select! {
            biased;
            item = reader.next() => break item,
            () = std::future::ready(()) => cancelled += 1,
        }
    };
    assert!(cancelled > 5, "the read was interrupted {cancelled} times");
    assert_eq!(
        frame.expect("an item").expect("a frame"),
        Frame::Body(BODY.into())
    );
}

#[tokio::test]
async fn next_dropped_by_timeout_over_a_real_pipe_loses_nothing() {
    use tokio::io::AsyncWriteExt;
    let (mut tx, rx) = tokio::io::duplex(16);
    let mut reader = FramedRead::new(rx, FrameCodec::new());
    let wire = frame(BODY);
    let writer = tokio::spawn(async move {
        for chunk in wire.chunks(5) {
            tx.write_all(chunk).await.expect("write");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tx
    });
    let frame = loop {
        if let Ok(item) = tokio::time::timeout(Duration::from_micros(300), reader.next()).await {
            break item;
        }
    };
    assert_eq!(
        frame.expect("an item").expect("a frame"),
        Frame::Body(BODY.into())
    );
    drop(writer.await.expect("writer"));
}

// ---- encoding --------------------------------------------------------------------------------

#[test]
fn encoder_writes_canonical_header_and_body_in_one_buffer() {
    let mut dst = BytesMut::new();
    FrameCodec::new()
        .encode(Bytes::from_static(BODY.as_bytes()), &mut dst)
        .expect("encodes");
    assert_eq!(dst, frame(BODY));
    FrameCodec::new()
        .encode(Bytes::new(), &mut dst)
        .expect("encodes");
    assert!(dst.ends_with(b"Content-Length: 0\r\nContent-Type: application/json\r\n\r\n"));
}

#[test]
fn encoding_body_at_limit_succeeds_and_over_limit_is_an_error() {
    let mut codec = FrameCodec::new().with_max_body_size(8);
    let mut dst = BytesMut::new();
    codec
        .encode(Bytes::from_static(&[b'a'; 8]), &mut dst)
        .expect("at the limit");
    let written = dst.len();
    let err = codec
        .encode(Bytes::from_static(&[b'a'; 9]), &mut dst)
        .expect_err("over the limit");
    assert!(
        matches!(err, CodecError::BodyTooLarge { len: 9, limit: 8 }),
        "{err}"
    );
    assert_eq!(dst.len(), written, "nothing written for a refused body");
}

#[tokio::test]
async fn framed_write_and_read_round_trip_over_a_pipe() {
    use futures::SinkExt;
    use tokio_util::codec::FramedWrite;
    let (tx, rx) = tokio::io::duplex(64);
    let mut writer = FramedWrite::new(tx, FrameCodec::new());
    let mut reader = FramedRead::new(rx, FrameCodec::new());
    let bodies = ["{}", BODY, "", "[1]"];
    let send = async {
        for b in bodies {
            writer
                .send(Bytes::from_static(b.as_bytes()))
                .await
                .expect("send");
        }
        drop(writer);
    };
    let receive = async {
        let mut got = Vec::new();
        while let Some(item) = reader.next().await {
            got.push(item.expect("frame").into_body().expect("body"));
        }
        got
    };
    let ((), got) = tokio::join!(send, receive);
    assert_eq!(got, bodies.map(|b| Bytes::from_static(b.as_bytes())));
}

#[test]
fn decoded_body_is_split_out_of_the_read_buffer_not_copied() {
    use tokio_util::codec::Decoder;
    let wire = frame(BODY);
    let mut buf = BytesMut::from(&wire[..]);
    let body_address = buf[wire.len() - BODY.len()..].as_ptr();
    let frame = FrameCodec::new()
        .decode(&mut buf)
        .expect("valid")
        .expect("complete");
    let body = frame.into_body().expect("a body");
    assert_eq!(
        body.as_ptr(),
        body_address,
        "the body shares the read buffer's memory"
    );
}

// --- FrameFault: where a broken frame starts and the header seen there (SPEC/1.0 transport.md §7) ---

/// Decodes `wire` in one buffer, end of stream included, and returns the fault of the error it ends with.
fn fault_of(codec: &mut FrameCodec, wire: &[u8]) -> gabp_codec::FrameFault {
    use tokio_util::codec::Decoder;
    let mut buf = BytesMut::from(wire);
    loop {
        match codec.decode_eof(&mut buf) {
            Ok(Some(_)) => {}
            Ok(None) => panic!("no error"),
            Err(e) => return codec.fault(&e),
        }
    }
}

#[test]
fn a_fault_is_placed_after_the_whole_frames_before_it_skipped_ones_included() {
    let mut codec = FrameCodec::new().with_max_body_size(4);
    let mut wire = frame(b"{}");
    wire.extend(frame(b"123456"));
    let broken = wire.len() as u64;
    wire.extend(b"Content-Length: 5\r\nX\r\n\r\n");
    let fault = fault_of(&mut codec, &wire);
    assert_eq!(fault.offset, broken);
    assert_eq!(fault.header, r"Content-Length: 5\r\nX\r\n\r\n");
    assert_eq!(codec.position(), broken);
}

#[test]
fn a_body_cut_short_shows_its_header_and_where_its_frame_starts() {
    let mut codec = FrameCodec::new();
    let mut wire = frame(b"{}");
    let start = wire.len() as u64;
    wire.extend(b"Content-Length: 10\r\n\r\n{\"a\":1}");
    let fault = fault_of(&mut codec, &wire);
    assert_eq!(fault.offset, start);
    assert_eq!(fault.header, r"Content-Length: 10\r\n\r\n");
    assert_eq!(
        fault.to_string(),
        format!(
            r#"frame error at byte {start}: stream ended inside a frame body (7 of 10 bytes received); header seen: "Content-Length: 10\r\n\r\n""#
        )
    );
}

#[test]
fn an_oversized_body_cut_short_still_shows_its_header() {
    let mut codec = FrameCodec::new().with_max_body_size(4);
    let mut wire = frame(b"{}");
    let start = wire.len() as u64;
    wire.extend(b"Content-Length: 9\r\n\r\n1234");
    let fault = fault_of(&mut codec, &wire);
    assert_eq!(fault.offset, start);
    assert_eq!(fault.header, r"Content-Length: 9\r\n\r\n");
    assert!(fault.reason.contains("4 of 9"), "{fault}");
}

#[test]
fn a_long_header_is_shown_cut_and_escaped() {
    let mut codec = FrameCodec::new().with_max_header_size(64);
    let mut wire = b"Content-Length: 2\r\nX-\xc3\xa9: ".to_vec();
    wire.extend([b'a'; 100]);
    let fault = fault_of(&mut codec, &wire);
    assert_eq!(fault.offset, 0);
    assert!(
        fault
            .header
            .starts_with(r"Content-Length: 2\r\nX-\xc3\xa9: aaa"),
        "{fault}"
    );
    assert!(fault.header.ends_with("a..."), "{fault}");
    assert!(fault.header.len() < 80, "{fault}");
}
