//! A bridge that vanishes (its TCP connection reset) cancels the calls it left running, even while the mod
//! drains after a goodbye: every handler's token fires and the connection's slot is free at once (SPEC/1.0
//! gabp.md §7).
#![allow(clippy::unwrap_used)]

mod server_support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gabp_session::server::{CallContext, CallError, ServeHandle, ServerLimits, Tool};
use gabp_transport::{Endpoint, Listener};
use serde_json::{json, Value};
use server_support::{builder, frame, request, try_hello as hello, PATIENCE};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

const CALLS: usize = 64;

/// The cancellation tokens of the calls a mod has started.
type Tokens = Arc<Mutex<Vec<CancellationToken>>>;

/// A mod on loopback TCP with `limits` and one tool, `slow/wait`, that runs until its call is cancelled and
/// hands over its token first.
async fn slow_mod(limits: ServerLimits) -> (ServeHandle, std::net::SocketAddr, Tokens) {
    let tokens = Tokens::default();
    let seen = tokens.clone();
    let server = builder()
        .limits(limits)
        .tool(Tool::new("slow/wait", move |ctx: CallContext, _: Value| {
            seen.lock().unwrap().push(ctx.cancellation().clone());
            async move {
                ctx.cancelled().await;
                Ok::<_, CallError>(())
            }
        }))
        .build()
        .unwrap();
    let handle = server.serve(Listener::bind(&Endpoint::tcp_v4(0)).await.unwrap());
    let Endpoint::Tcp(addr) = handle.endpoint().clone() else {
        panic!("not a TCP endpoint")
    };
    (handle, addr, tokens)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_peer_cancels_its_calls_and_frees_its_slot_at_once() {
    let limits = ServerLimits::default()
        .with_max_connections(1)
        .with_max_concurrent_requests(CALLS);
    let (handle, addr, tokens) = slow_mod(limits).await;

    let mut gone = TcpStream::connect(addr).await.unwrap();
    assert!(hello(&mut gone).await, "no welcome");
    let mut calls = Vec::new();
    for _ in 0..CALLS {
        let (_, call) = request(
            "tools/call",
            Some(json!({"name": "slow/wait", "arguments": {}})),
        );
        calls.extend(frame(&serde_json::to_vec(&call).unwrap()));
    }
    gone.write_all(&calls).await.unwrap();
    let started = Instant::now();
    while tokens.lock().unwrap().len() < CALLS {
        assert!(started.elapsed() < PATIENCE, "the calls did not all start");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }

    // A zero linger makes the close a reset, as when a process dies.
    #[allow(deprecated)]
    gone.set_linger(Some(Duration::ZERO)).unwrap();
    drop(gone);
    let reset = Instant::now();

    let mut next = loop {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        if hello(&mut stream).await {
            break stream;
        }
        assert!(reset.elapsed() < PATIENCE, "the slot never came free");
    };
    let served = reset.elapsed();
    let cancelled = tokens
        .lock()
        .unwrap()
        .iter()
        .filter(|t| t.is_cancelled())
        .count();
    eprintln!(
        "  a new peer was served {served:?} after the reset; {cancelled} of {CALLS} tokens fired"
    );
    assert_eq!(
        cancelled, CALLS,
        "every call of the vanished peer is cancelled"
    );
    assert!(
        served < Duration::from_millis(100),
        "the slot came free only after {served:?}"
    );
    next.shutdown().await.unwrap();
    handle.shutdown().await;
}

/// A peer that says goodbye while a call still runs, then vanishes: the mod, draining (it no longer reads
/// requests), still notices the reset and cancels the call at once instead of at the end of its drain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_reset_while_the_mod_drains_cancels_its_calls_at_once() {
    let (handle, addr, tokens) = slow_mod(ServerLimits::default()).await;
    let mut gone = TcpStream::connect(addr).await.unwrap();
    assert!(hello(&mut gone).await, "no welcome");
    let (_, call) = request(
        "tools/call",
        Some(json!({"name": "slow/wait", "arguments": {}})),
    );
    gone.write_all(&frame(&serde_json::to_vec(&call).unwrap()))
        .await
        .unwrap();
    let started = Instant::now();
    while tokens.lock().unwrap().is_empty() {
        assert!(started.elapsed() < PATIENCE, "the call did not start");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let (_, goodbye) = request("session/goodbye", None);
    gone.write_all(&frame(&serde_json::to_vec(&goodbye).unwrap()))
        .await
        .unwrap();
    // The goodbye is read (reading stops) before the peer vanishes.
    tokio::time::sleep(Duration::from_millis(100)).await;
    #[allow(deprecated)]
    gone.set_linger(Some(Duration::ZERO)).unwrap();
    drop(gone);
    let reset = Instant::now();
    let token = tokens.lock().unwrap()[0].clone();
    tokio::time::timeout(PATIENCE, token.cancelled())
        .await
        .expect("the call of the vanished peer was never cancelled");
    let cancelled = reset.elapsed();
    eprintln!("  the draining mod cancelled the call {cancelled:?} after the reset");
    assert!(
        cancelled < Duration::from_secs(1),
        "cancelled only after {cancelled:?}"
    );
    tokio::time::timeout(PATIENCE, handle.shutdown())
        .await
        .expect("the mod kept the connection");
}
