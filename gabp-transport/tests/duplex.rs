//! The adapter: any `AsyncRead + AsyncWrite`, a `tokio::io::duplex` pair included, becomes a framed
//! connection.

mod common;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use gabp_transport::{ByteStream, CodecError, Connection, Frame, FrameCodec};
use tokio::io::AsyncWriteExt;

#[tokio::test]
async fn frames_both_ways_over_a_duplex_pair() {
    // A small pipe buffer, so 1 MiB frames cross it in many pieces.
    let (a, b) = tokio::io::duplex(1024);
    let (bridge, game) = (Connection::new(a), Connection::new(b));
    assert_eq!(bridge.peer(), "stream");
    common::exchange_both_ways(bridge, game).await;
}

#[tokio::test]
async fn frames_both_ways_over_split_duplex_halves() {
    let (a, b) = tokio::io::duplex(64 * 1024);
    let (mut reader, mut writer) = Connection::new(a).into_split();
    let game = tokio::spawn(common::game_side(
        Connection::new(b),
        common::bodies().len(),
    ));
    assert_eq!(
        &common::next_body(&mut reader).await[..],
        br#"{"hello":"from the game"}"#
    );
    for body in common::bodies() {
        writer.send(body.clone()).await.expect("send");
        assert!(common::next_body(&mut reader).await == body);
    }
    common::within("game", game).await.expect("game");
}

#[tokio::test]
async fn split_keeps_bytes_already_read() {
    let (a, mut raw) = tokio::io::duplex(4096);
    let mut conn = Connection::new(a);
    // Two frames arrive in one write: the first read buffers both.
    raw.write_all(b"Content-Length: 2\r\n\r\n{}Content-Length: 2\r\n\r\n[]")
        .await
        .expect("write");
    assert_eq!(&common::next_body(&mut conn).await[..], b"{}");
    let (mut reader, _writer) = conn.into_split();
    assert_eq!(&common::next_body(&mut reader).await[..], b"[]");
}

#[tokio::test]
async fn any_stream_type_works_including_a_byte_stream() {
    let (a, b) = tokio::io::duplex(4096);
    let mut bridge = Connection::new(ByteStream::new(a)).with_peer("test peer");
    let mut game = Connection::with_codec(b, FrameCodec::new().with_max_body_size(16));
    assert_eq!(bridge.peer(), "test peer");
    assert_eq!(game.codec().max_body_size(), 16);

    bridge.send(Bytes::from_static(b"{}")).await.expect("send");
    assert_eq!(&common::next_body(&mut game).await[..], b"{}");

    // Over the game's limit: a recoverable notice, then the stream goes on.
    bridge
        .send(Bytes::from(vec![b'x'; 17]))
        .await
        .expect("send");
    bridge.send(Bytes::from_static(b"[]")).await.expect("send");
    let notice = common::within("a frame", game.next()).await;
    assert!(
        matches!(
            notice,
            Some(Ok(Frame::Oversized {
                declared: 17,
                limit: 16
            }))
        ),
        "{notice:?}"
    );
    assert_eq!(&common::next_body(&mut game).await[..], b"[]");

    // Writing over our own limit is refused and writes nothing.
    let err = game
        .send(Bytes::from(vec![b'x'; 17]))
        .await
        .expect_err("too large");
    assert!(matches!(err, CodecError::BodyTooLarge { .. }), "{err:?}");
    game.send(Bytes::from_static(b"{}"))
        .await
        .expect("still usable");
    assert_eq!(&common::next_body(&mut bridge).await[..], b"{}");
}

#[tokio::test]
async fn a_malformed_header_is_a_fatal_error_and_ends_the_stream() {
    let (a, mut raw) = tokio::io::duplex(4096);
    let mut conn = Connection::new(a);
    raw.write_all(b"Content-Length: -5\r\n\r\n")
        .await
        .expect("write");
    let item = common::within("a frame", conn.next()).await;
    assert!(
        matches!(item, Some(Err(CodecError::InvalidContentLength { .. }))),
        "{item:?}"
    );
    assert!(common::within("end", conn.next()).await.is_none());
}

#[tokio::test]
async fn end_of_stream_is_none() {
    let (a, b) = tokio::io::duplex(64);
    let mut conn = Connection::new(a);
    drop(b);
    assert!(common::within("end", conn.next()).await.is_none());
}

#[tokio::test]
async fn many_frames_fed_then_flushed_arrive_in_order() {
    let (a, b) = tokio::io::duplex(8 * 1024);
    let mut bridge = Connection::new(a);
    let mut game = Connection::new(b);
    let sizes = [1usize, 20_000, 3, 70_000, 16_384, 16_385, 0, 100];
    let reader = tokio::spawn(async move {
        let mut got = Vec::new();
        for _ in 0..sizes.len() {
            got.push(common::next_body(&mut game).await);
        }
        got
    });
    for (i, &n) in sizes.iter().enumerate() {
        bridge
            .feed(Bytes::from(vec![b'a' + i as u8; n]))
            .await
            .expect("feed");
    }
    bridge.flush().await.expect("flush");
    let got = common::within("reader", reader).await.expect("reader");
    for (i, (&n, body)) in sizes.iter().zip(&got).enumerate() {
        assert_eq!(body.len(), n);
        assert!(body.iter().all(|&c| c == b'a' + i as u8));
    }
}

#[tokio::test]
async fn into_framed_keeps_frames_not_yet_written() {
    let (a, b) = tokio::io::duplex(1024 * 1024);
    let mut bridge = Connection::new(a);
    // Queued but not flushed: one small frame and one large one.
    bridge.feed(Bytes::from_static(b"{}")).await.expect("feed");
    bridge
        .feed(Bytes::from(vec![b'x'; 40_000]))
        .await
        .expect("feed");
    let mut framed = bridge.into_framed();
    SinkExt::<Bytes>::flush(&mut framed).await.expect("flush");
    let mut game = Connection::new(b);
    assert_eq!(&common::next_body(&mut game).await[..], b"{}");
    assert_eq!(common::next_body(&mut game).await.len(), 40_000);
}
