//! The adapter: any `AsyncRead + AsyncWrite`, a `tokio::io::duplex` pair included, becomes a framed
//! connection.

mod common;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use gabp_transport::{ByteStream, Connection, Frame, FrameCodec, FrameError};
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
    assert!(matches!(err, FrameError::BodyTooLarge { .. }), "{err:?}");
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
        matches!(item, Some(Err(FrameError::InvalidContentLength { .. }))),
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
