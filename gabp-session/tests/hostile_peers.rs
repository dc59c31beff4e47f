//! Peers that try to make the mod hold memory or lock bridges out (SPEC/1.0 security.md §7): a peer that never
//! reads its answers, before and after hello; names that grow answers and logs; events nobody reads;
//! connections opened without a hello, held or dropped in a loop.
#![allow(clippy::unwrap_used)]

mod server_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gabp_session::server::{CallError, CloseReason, ServerLimits, Tool};
use gabp_transport::{Connection, Endpoint, Listener};
use serde_json::{json, Value};
use server_support::{
    builder, close_reason, connect_served, data, frame, hello_params, request, serve, try_hello,
    RawClient, PATIENCE, TOKEN,
};
use tokio::io::{AsyncWriteExt, DuplexStream};

/// A method name of `len` characters that matches the method pattern.
fn long_method(len: usize) -> String {
    format!("a/{}", "b".repeat(len - 2))
}

/// Writes `frame` again and again until a write has waited `stall` (the mod stopped reading) or failed (the
/// mod closed); the bytes written.
async fn write_until_stalled(stream: &mut DuplexStream, frame: &[u8], stall: Duration) -> usize {
    let mut written = 0;
    loop {
        match tokio::time::timeout(stall, stream.write_all(frame)).await {
            Ok(Ok(())) => written += frame.len(),
            Ok(Err(_)) | Err(_) => return written,
        }
        assert!(written < 1 << 30, "the mod never stopped reading");
    }
}

#[tokio::test]
async fn names_sent_before_hello_are_quoted_short() {
    let server = builder().build().unwrap();
    let (mut client, _served) = connect_served(&server);
    let method = long_method(100_000);
    let answer = client.call(&method, None).await;
    let error = answer.error_object().unwrap();
    assert_eq!(error.code.0, -32100);
    let quoted = data(&answer)["method"].as_str().unwrap().to_owned();
    assert_eq!(quoted.chars().count(), gabp_types::QUOTED_NAME_CHARS + 1);
    assert!(method.starts_with(quoted.trim_end_matches('…')));
    assert!(serde_json::to_vec(&answer).unwrap().len() < 1024);
}

#[tokio::test]
async fn unknown_methods_and_tools_are_quoted_short() {
    let server = builder().build().unwrap();
    let (mut client, _served) = connect_served(&server);
    client.hello(TOKEN).await;
    let method = long_method(50_000);
    let answer = client.call(&method, None).await;
    assert_eq!(answer.error_object().unwrap().code.0, -32601);
    assert!(serde_json::to_vec(&answer).unwrap().len() < 1024);
    let tool = long_method(50_000);
    let answer = client.call_tool(&tool, json!({})).await;
    assert_eq!(answer.error_object().unwrap().code.0, -32400);
    assert!(serde_json::to_vec(&answer).unwrap().len() < 1024);
}

#[tokio::test]
async fn a_peer_without_hello_that_never_reads_is_closed() {
    let server = builder().build().unwrap();
    let (mod_side, mut bridge_side) = tokio::io::duplex(4096);
    let served = tokio::spawn(server.serve_connection(Connection::new(mod_side)));
    let (_, call) = request(&long_method(10_000), None);
    let frame = frame(&serde_json::to_vec(&call).unwrap());
    let written = write_until_stalled(&mut bridge_side, &frame, Duration::from_secs(2)).await;
    assert_eq!(close_reason(served).await, CloseReason::NotReading);
    // The answers queued (256 of them, a few hundred bytes each) and the buffers stopped it; not the memory
    // of the requests, which are read and let go one at a time.
    assert!(
        written < 8 << 20,
        "{written} bytes read from a peer that reads nothing"
    );
}

#[tokio::test]
async fn an_established_peer_that_never_reads_holds_a_bounded_backlog() {
    const BODY: usize = 128 * 1024;
    const QUEUE_BYTES: usize = 1 << 20;
    let server = builder()
        .limits(ServerLimits::default().with_outgoing_queue_bytes(QUEUE_BYTES))
        .tool(Tool::new("demo/echo", |args: Value| async move {
            Ok::<_, CallError>(args)
        }))
        .build()
        .unwrap();
    let (mod_side, bridge_side) = tokio::io::duplex(64 * 1024);
    let _served = tokio::spawn(server.serve_connection(Connection::new(mod_side)));
    let (reader, mut writer) = tokio::io::split(bridge_side);
    let (_, hello) = request("session/hello", Some(hello_params(TOKEN)));
    writer
        .write_all(&frame(&serde_json::to_vec(&hello).unwrap()))
        .await
        .unwrap();
    let (_, call) = request(
        "tools/call",
        Some(json!({"name": "demo/echo", "arguments": {"text": "x".repeat(BODY)}})),
    );
    let frame = frame(&serde_json::to_vec(&call).unwrap());
    let mut written = 0;
    while let Ok(Ok(())) =
        tokio::time::timeout(Duration::from_secs(1), writer.write_all(&frame)).await
    {
        written += frame.len();
        assert!(written < 256 * BODY, "the mod never stopped reading");
    }
    // Answers bounded by bytes (1 MiB), not by count (256 answers, 32 MiB): the queue, the duplex buffers,
    // the writer's buffer and the request being read.
    assert!(
        written < QUEUE_BYTES + 6 * BODY + 256 * 1024,
        "{written} bytes taken from a peer that reads nothing"
    );
    // Backpressure, not loss: reading now, every call is answered.
    let calls = written / frame.len();
    let mut client = RawClient::from_parts(reader, writer);
    client.set_patience(PATIENCE);
    assert!(matches!(
        client.recv().await,
        gabp_types::Message::Response(_)
    ));
    for _ in 0..calls {
        let answer = client.recv_response().await;
        assert!(answer.error_object().is_none(), "{answer:?}");
    }
}

#[tokio::test]
async fn events_nobody_reads_are_bounded_by_bytes() {
    const EVENT: usize = 100 * 1024;
    let server = builder()
        .channel("big/news")
        .limits(ServerLimits::default().with_event_queue_bytes(1 << 20))
        .build()
        .unwrap();
    let (mut client, _served) = serve(&server, 16 * 1024);
    client.hello(TOKEN).await;
    client
        .ok("events/subscribe", Some(json!({"channels": ["big/news"]})))
        .await;
    let publisher = server.event_publisher();
    let payload = json!({ "text": "x".repeat(EVENT) });
    let (mut delivered, mut dropped) = (0, 0);
    for _ in 0..64 {
        let published = publisher.publish("big/news", &payload).unwrap();
        delivered += published.delivered;
        dropped += published.dropped;
        tokio::task::yield_now().await;
    }
    assert!(dropped > 0, "nothing dropped: {delivered} delivered");
    assert!(
        delivered * EVENT < 2 << 20,
        "{delivered} events of {EVENT} bytes queued for a bridge that reads nothing"
    );
}

/// A bridge connecting while others open connections without a hello, hold them or drop them at once, in a
/// loop, gets through (a slot is made for it from the oldest connection without a hello).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hello_less_churn_never_locks_a_bridge_out() {
    const ATTEMPTS: usize = 50;
    // The default limit (10 connections).
    let server = builder().build().unwrap();
    let handle = server.serve(Listener::bind(&Endpoint::tcp_v4(0)).await.unwrap());
    let Endpoint::Tcp(addr) = handle.endpoint().clone() else {
        panic!("not a TCP endpoint")
    };
    let stop = Arc::new(AtomicBool::new(false));
    let mut churners = Vec::new();
    for n in 0..4u64 {
        let stop = stop.clone();
        churners.push(tokio::spawn(async move {
            let mut held = std::collections::VecDeque::new();
            let mut opened = 0u64;
            while !stop.load(Ordering::Relaxed) {
                if let Ok(stream) = tokio::net::TcpStream::connect(addr).await {
                    opened += 1;
                    // Half are dropped at once, half held for a while without a word.
                    if (opened + n) % 2 == 0 {
                        held.push_back(stream);
                        if held.len() > 8 {
                            held.pop_front();
                        }
                    }
                }
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            opened
        }));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut through = 0;
    let started = Instant::now();
    for _ in 0..ATTEMPTS {
        let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else {
            continue;
        };
        if try_hello(&mut stream).await {
            through += 1;
        }
    }
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut opened = 0;
    for churner in churners {
        opened += churner.await.unwrap();
    }
    eprintln!("  {through} of {ATTEMPTS} bridges got through in {elapsed:?}, beside {opened} connections without a hello");
    assert!(
        through >= ATTEMPTS - 1,
        "{through} of {ATTEMPTS} got through"
    );
    handle.shutdown().await;
}
