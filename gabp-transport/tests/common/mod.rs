//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use futures::{Sink, SinkExt, Stream, StreamExt};
use gabp_transport::{CodecError, Frame};

/// Generous: these tests finish in well under a second; the limit only turns a hang into a failure.
pub const LIMIT: Duration = Duration::from_secs(60);

/// Run `fut` with [`LIMIT`], panicking with `what` when it takes longer.
pub async fn within<F: Future>(what: &str, fut: F) -> F::Output {
    tokio::time::timeout(LIMIT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what} took longer than {LIMIT:?}"))
}

/// The next frame body, failing the test on anything else.
pub async fn next_body<S>(conn: &mut S) -> Bytes
where
    S: Stream<Item = Result<Frame, CodecError>> + Unpin,
{
    match within("reading a frame", conn.next()).await {
        Some(Ok(Frame::Body(body))) => body,
        other => panic!("expected a frame body, got {other:?}"),
    }
}

/// Bodies of the sizes the acceptance cares about, each distinct.
pub fn bodies() -> Vec<Bytes> {
    [2usize, 200, 4096, 64 * 1024, 1024 * 1024]
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            let mut body = vec![b'a' + i as u8; len];
            body[0] = b'{';
            body[len - 1] = b'}';
            Bytes::from(body)
        })
        .collect()
}

/// The game side of [`exchange_both_ways`]: greet first, then echo `count` frames, then return.
pub async fn game_side<C>(mut game: C, count: usize) -> C
where
    C: Stream<Item = Result<Frame, CodecError>> + Sink<Bytes, Error = CodecError> + Unpin,
{
    game.send(Bytes::from_static(br#"{"hello":"from the game"}"#))
        .await
        .expect("game sends its greeting");
    for _ in 0..count {
        let body = next_body(&mut game).await;
        game.send(body).await.expect("game echoes");
    }
    game
}

/// The bridge side: read the game's greeting, then send every body of [`bodies`] and check the
/// echo of each.
pub async fn bridge_side<C>(bridge: &mut C)
where
    C: Stream<Item = Result<Frame, CodecError>> + Sink<Bytes, Error = CodecError> + Unpin,
{
    let greeting = next_body(bridge).await;
    assert_eq!(&greeting[..], br#"{"hello":"from the game"}"#);
    for body in bodies() {
        within("sending a frame", bridge.send(body.clone()))
            .await
            .expect("bridge sends");
        let echoed = next_body(bridge).await;
        assert_eq!(echoed.len(), body.len());
        assert!(echoed == body, "echo of {} bytes differs", body.len());
    }
}

/// Frames both ways between two connected peers: the game greets, the bridge sends bodies from 2 B
/// to 1 MiB and the game echoes each.
pub async fn exchange_both_ways<C>(mut bridge: C, game: C)
where
    C: Stream<Item = Result<Frame, CodecError>>
        + Sink<Bytes, Error = CodecError>
        + Unpin
        + Send
        + 'static,
{
    let count = bodies().len();
    let game = tokio::spawn(game_side(game, count));
    bridge_side(&mut bridge).await;
    within("the game side", game).await.expect("game task");
}
