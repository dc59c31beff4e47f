//! Over WebSocket, a mod that stops answering pings is a lost connection: the bridge's call in flight
//! fails with `Disconnected`, as when a TCP connection is lost (SPEC/1.0 transport.md §2.5).
#![allow(clippy::unwrap_used)]

mod server_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use gabp_session::bridge::Bridge;
use gabp_session::server::{CallContext, CallError, Tool};
use gabp_session::Error;
use gabp_transport::{connect_with, Endpoint, Listener, WsSettings};
use serde_json::{json, Value};
use server_support::{builder, token, PATIENCE};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Copies bytes from `from` to `to` until `frozen`, then holds both sockets open without moving a byte:
/// the peer behind it looks alive to TCP and dead to WebSocket.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    frozen: Arc<AtomicBool>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let read = from.read(&mut buf).await;
        // Frozen, the relay passes on nothing, not even the end of the stream: returning would drop `to` and
        // hand the other side an end of stream (a half-close, answered by draining) instead of silence.
        if frozen.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        let n = match read {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mod_that_stops_answering_pings_fails_the_call_in_flight() {
    let server = builder()
        .tool(Tool::new(
            "slow/wait",
            |ctx: CallContext, _: Value| async move {
                ctx.cancelled().await;
                Ok::<_, CallError>(())
            },
        ))
        .build()
        .unwrap();
    // Both sides check liveness quickly; the mod keeps its settings when `serve` adds its token.
    let settings = WsSettings::new()
        .with_ping_interval(Duration::from_millis(50))
        .with_pong_timeout(Duration::from_millis(200));
    let listener = Listener::bind(&"ws://127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
        .with_ws_settings(settings.clone());
    let handle = server.serve(listener);
    let Endpoint::WebSocket(mod_addr) = handle.endpoint().clone() else {
        panic!("not a WebSocket endpoint")
    };

    // A TCP relay between the bridge and the mod, which can freeze.
    let relay = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let relay_addr = relay.local_addr().unwrap();
    let frozen = Arc::new(AtomicBool::new(false));
    let freeze = frozen.clone();
    tokio::spawn(async move {
        let (front, _) = relay.accept().await.unwrap();
        let back = TcpStream::connect(mod_addr).await.unwrap();
        let ((front_r, front_w), (back_r, back_w)) = (front.into_split(), back.into_split());
        tokio::join!(
            pump(front_r, back_w, freeze.clone()),
            pump(back_r, front_w, freeze)
        );
    });

    let connection = connect_with(&Endpoint::WebSocket(relay_addr), &settings)
        .await
        .unwrap();
    let bridge = Bridge::over(connection, token()).await.unwrap();
    // Alive through many ping intervals while the relay moves bytes.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let list = bridge.call_tool("missing/tool", json!({})).await;
    assert!(!matches!(list, Err(Error::Disconnected)), "{list:?}");

    let call = tokio::spawn({
        let bridge = bridge.clone();
        async move { bridge.call_tool("slow/wait", json!({})).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    frozen.store(true, Ordering::SeqCst);
    let ended = tokio::time::timeout(PATIENCE, call)
        .await
        .expect("the call never failed")
        .unwrap();
    assert!(matches!(ended, Err(Error::Disconnected)), "{ended:?}");
    // The mod drops its silent peer too: its handler is cancelled, so shutdown does not wait for it.
    tokio::time::timeout(PATIENCE, handle.shutdown())
        .await
        .expect("the mod kept the dead connection");
}
