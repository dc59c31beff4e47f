//! `Connection::into_split` behaves the same whatever the stream: TCP and Unix sockets split natively (no
//! lock between the halves), anything else through `tokio::io::split`. Checked on all three:
//!
//! - the halves read and write at the same time from tasks on different threads;
//! - dropping the writing half alone does not end the peer's stream; dropping both does;
//! - closing the writing half ends the peer's stream, and our reading half still reads what the peer sends.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{next_body, within};
use futures::{SinkExt, StreamExt};
use gabp_transport::{connect, Connection, Endpoint, Listener};

#[derive(Clone, Copy, Debug)]
enum Kind {
    Tcp,
    #[cfg(unix)]
    Unix,
    Duplex,
}

const KINDS: &[Kind] = &[
    Kind::Tcp,
    #[cfg(unix)]
    Kind::Unix,
    Kind::Duplex,
];

/// A connected pair (ours, theirs), and what keeps a Unix socket's directory alive.
async fn pair(kind: Kind) -> (Connection, Connection, Option<tempfile::TempDir>) {
    match kind {
        Kind::Tcp => {
            let listener = Listener::bind(&Endpoint::tcp_v4(0)).await.expect("bind");
            let (ours, theirs) = tokio::join!(connect(listener.endpoint()), listener.accept());
            (ours.expect("connect"), theirs.expect("accept"), None)
        }
        #[cfg(unix)]
        Kind::Unix => {
            let dir = tempfile::tempdir().expect("tempdir");
            let endpoint = Endpoint::unix(dir.path().join("split.sock")).expect("path");
            let listener = Listener::bind(&endpoint).await.expect("bind");
            let (ours, theirs) = tokio::join!(connect(&endpoint), listener.accept());
            (ours.expect("connect"), theirs.expect("accept"), Some(dir))
        }
        Kind::Duplex => {
            let (a, b) = tokio::io::duplex(64 * 1024);
            (Connection::new(a), Connection::new(b), None)
        }
    }
}

fn body(i: usize) -> Bytes {
    Bytes::from(format!("{{\"n\":{i},\"pad\":\"{}\"}}", "x".repeat(i % 300)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn halves_read_and_write_at_once_from_different_tasks() {
    const N: usize = 2000;
    for &kind in KINDS {
        let (ours, theirs, _dir) = pair(kind).await;
        // The peer echoes every frame.
        let echo = tokio::spawn(async move {
            let (mut reader, mut writer) = theirs.into_split();
            while let Some(Ok(frame)) = reader.next().await {
                let body = frame.into_body().expect("body");
                writer.send(body).await.expect("echo");
            }
        });
        let (mut reader, mut writer) = ours.into_split();
        let sending = tokio::spawn(async move {
            for i in 0..N {
                writer.feed(body(i)).await.expect("send");
                if i % 7 == 0 {
                    writer.flush().await.expect("flush");
                }
            }
            writer.flush().await.expect("flush");
            writer
        });
        for i in 0..N {
            assert_eq!(next_body(&mut reader).await, body(i), "{kind:?}");
        }
        let mut writer = within("the writer", sending).await.expect("writer task");
        writer.close().await.expect("close");
        within("the echo task", echo).await.expect("echo task");
    }
}

#[tokio::test]
async fn dropping_the_writing_half_alone_does_not_end_the_peer_s_stream() {
    for &kind in KINDS {
        let (ours, mut theirs, _dir) = pair(kind).await;
        let (reader, writer) = ours.into_split();
        drop(writer);
        // Still open: the peer can write to us and sees no end of stream.
        theirs.send(Bytes::from_static(b"{}")).await.expect("send");
        let pending = tokio::time::timeout(Duration::from_millis(100), theirs.next()).await;
        assert!(pending.is_err(), "{kind:?}: the peer saw {pending:?}");
        drop(reader);
        let end = within("end of stream", theirs.next()).await;
        assert!(
            matches!(end, None | Some(Err(_))),
            "{kind:?}: expected the end, got {end:?}"
        );
    }
}

#[tokio::test]
async fn closing_the_writing_half_ends_the_peer_s_stream_and_reading_goes_on() {
    for &kind in KINDS {
        let (ours, mut theirs, _dir) = pair(kind).await;
        let (mut reader, mut writer) = ours.into_split();
        writer
            .send(Bytes::from_static(b"{\"last\":true}"))
            .await
            .expect("send");
        writer.close().await.expect("close");
        assert_eq!(
            next_body(&mut theirs).await,
            Bytes::from_static(b"{\"last\":true}")
        );
        assert!(
            within("end of stream", theirs.next()).await.is_none(),
            "{kind:?}"
        );
        theirs
            .send(Bytes::from_static(b"{\"reply\":1}"))
            .await
            .expect("reply");
        assert_eq!(
            next_body(&mut reader).await,
            Bytes::from_static(b"{\"reply\":1}")
        );
    }
}

#[tokio::test]
async fn slices_leave_behind_what_was_queued_before_them() {
    let (a, b) = tokio::io::duplex(1 << 20);
    let codec = gabp_transport::FrameCodec::new().with_max_body_size(64 * 1024);
    let (_reader, mut writer) = Connection::with_codec(a, codec).into_split();
    let mut peer = Connection::new(b);
    assert!(writer.has_room());
    // A large body is queued on its own, so the writer has no room until it is written.
    let large = Bytes::from(vec![b'x'; 32 * 1024]);
    writer.feed(large.clone()).await.expect("feed");
    assert!(!writer.has_room());
    writer.start_send_slice(b"{\"after\":1}").expect("slice");
    let refused = writer.start_send_slice(&vec![b'y'; 64 * 1024 + 1]);
    assert!(
        matches!(
            refused,
            Err(gabp_transport::CodecError::BodyTooLarge { .. })
        ),
        "{refused:?}"
    );
    // A large slice is held on its own too, and what follows it still comes after it.
    let large_slice = vec![b'z'; 20 * 1024];
    writer.start_send_slice(&large_slice).expect("large slice");
    assert!(!writer.has_room());
    writer.start_send_slice(b"{\"last\":2}").expect("slice");
    writer.flush().await.expect("flush");
    assert!(writer.has_room());
    assert_eq!(within("large", next_body(&mut peer)).await, large);
    assert_eq!(
        &within("after", next_body(&mut peer)).await[..],
        b"{\"after\":1}"
    );
    assert_eq!(
        &within("large slice", next_body(&mut peer)).await[..],
        &large_slice[..]
    );
    assert_eq!(
        &within("last", next_body(&mut peer)).await[..],
        b"{\"last\":2}"
    );
}
