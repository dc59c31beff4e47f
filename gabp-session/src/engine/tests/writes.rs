//! How answers leave: written together, flushed while more of a frame is awaited, flushed before the end.

use super::*;

/// A writer that counts the writes reaching the stream.
struct Counted<W> {
    inner: W,
    writes: Writes,
}

type Writes = Arc<std::sync::atomic::AtomicUsize>;

fn count(writes: &Writes, written: Poll<std::io::Result<usize>>) -> Poll<std::io::Result<usize>> {
    if let Poll::Ready(Ok(_)) = written {
        writes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    written
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Counted<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write(cx, buf);
        count(&self.writes, written)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        count(&self.writes, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The engine over a duplex whose writes it makes are counted.
fn start_counted() -> (Harness, Writes) {
    let (ours, theirs) = tokio::io::duplex(64 * 1024);
    let (read, write) = tokio::io::split(ours);
    let writes = Writes::default();
    let counted = Counted {
        inner: write,
        writes: Arc::clone(&writes),
    };
    (start_on(tokio::io::join(read, counted), theirs), writes)
}

/// `methods` as requests, framed and written to the engine in one write; their ids.
async fn write_together(peer: &mut Connection, methods: &[&str]) -> Vec<MessageId> {
    let mut ids = Vec::new();
    for method in methods {
        let request = Request::with_raw_params(MethodName::new(*method).unwrap(), None);
        ids.push(request.id);
        peer.feed(Bytes::from(Message::Request(request).to_vec()))
            .await
            .unwrap();
    }
    peer.flush().await.unwrap();
    ids
}

/// The ids of the next `n` responses, each within ten seconds.
async fn answered(peer: &mut Connection, n: usize) -> Vec<MessageId> {
    let mut ids = Vec::new();
    for k in 0..n {
        let read = tokio::time::timeout(Duration::from_secs(10), next_message(peer)).await;
        let Ok(Message::Response(response)) = read else {
            panic!("answer {k} of {n} did not arrive");
        };
        ids.push(response.id);
    }
    ids
}

#[tokio::test]
async fn the_answers_to_requests_read_together_are_written_together() {
    let (mut h, writes) = start_counted();
    // Sixteen requests in one write: the engine reads them in one read and answers them in one burst.
    let ids = write_together(&mut h.peer, &["game/burst"; 16]).await;
    assert_eq!(answered(&mut h.peer, 16).await, ids, "in the order asked");
    let writes = writes.load(std::sync::atomic::Ordering::Relaxed);
    assert!(writes <= 2, "16 answers took {writes} writes");
}

#[tokio::test]
async fn answers_leave_while_the_rest_of_a_frame_is_awaited() {
    use tokio::io::AsyncWriteExt;
    use tokio_util::codec::Encoder;
    let h = start();
    // Two requests and the first half of a third: the first two are answered without waiting for the rest.
    let mut wire = bytes::BytesMut::new();
    let mut ids = Vec::new();
    for _ in 0..3 {
        let request = Request::with_raw_params(MethodName::new("game/part").unwrap(), None);
        ids.push(request.id);
        gabp_codec::FrameCodec::new()
            .encode(Bytes::from(Message::Request(request).to_vec()), &mut wire)
            .unwrap();
    }
    let cut = wire.len() - 20;
    let mut framed = h.peer.into_framed();
    framed.get_mut().write_all(&wire[..cut]).await.unwrap();
    for id in &ids[..2] {
        let read = tokio::time::timeout(Duration::from_secs(10), framed.next()).await;
        let Ok(Some(Ok(frame))) = read else {
            panic!("an answer was left unflushed");
        };
        let body = frame.into_body().unwrap();
        let Ok(Message::Response(response)) = decode(&body, DecodeMode::Strict) else {
            panic!("not a response");
        };
        assert_eq!(response.id, *id);
    }
}

#[tokio::test]
async fn answers_written_before_the_role_ends_the_engine_still_leave() {
    let mut h = start();
    // The role ends the engine once it has answered `game/end`: the answers already written leave first.
    let ids = write_together(
        &mut h.peer,
        &["game/first", "game/second", "game/end", "game/after"],
    )
    .await;
    let ended = tokio::time::timeout(Duration::from_secs(10), &mut h.engine).await;
    assert!(matches!(ended, Ok(Ok(Ended::Signal("asked")))));
    assert_eq!(answered(&mut h.peer, 2).await, ids[..2]);
}
