//! Concurrency and backpressure of the connection driver: requests run concurrently up to the limit, a slow
//! tool never delays a fast one, answers in flight are drained on end of stream, and a bridge that does not
//! read makes the mod stop reading instead of buffering without bound.

mod server_support;

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gabp_session::server::{CallError, CloseReason, ServerLimits, Tool};
use gabp_types::MessageId;
use serde_json::{json, Value};
use server_support::{
    close_reason, connect_hello, connect_hello_served, connect_with_buffer, fixture, frame,
    request, result, serve,
};
use tokio::sync::Semaphore;

#[tokio::test]
async fn a_slow_tool_does_not_delay_a_fast_one() {
    let server = fixture::register(server_support::builder())
        .build()
        .unwrap();
    let mut client = connect_hello(&server).await;
    let started = Instant::now();
    let (slow_id, slow) = request(
        "tools/call",
        Some(json!({"name": "demo/sleep", "arguments": {"ms": 30000}})),
    );
    let (fast_id, fast) = request(
        "tools/call",
        Some(json!({"name": "demo/echo", "arguments": {"value": "fast"}})),
    );
    client.send_value(&slow).await;
    client.send_value(&fast).await;
    let first = client.recv_response().await;
    assert_eq!(first.id, fast_id, "the fast call must be answered first");
    assert_ne!(first.id, slow_id);
    assert_eq!(result(&first), json!({"value": "fast"}));
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// A tool that records how many of its calls run at once and waits for the test to release it.
fn gate_tool(running: Arc<AtomicUsize>, peak: Arc<AtomicUsize>, gate: Arc<Semaphore>) -> Tool {
    Tool::new("test/gate", move |_: Value| {
        let (running, peak, gate) = (running.clone(), peak.clone(), gate.clone());
        async move {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            let permit = gate
                .acquire()
                .await
                .map_err(|e| CallError::new(e.to_string()))?;
            permit.forget();
            running.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, CallError>(json!({}))
        }
    })
}

async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + server_support::PATIENCE;
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn at_most_max_concurrent_requests_run_at_once() {
    let (running, peak, gate) = (
        Arc::new(AtomicUsize::new(0)),
        Arc::new(AtomicUsize::new(0)),
        Arc::new(Semaphore::new(0)),
    );
    let limits = ServerLimits::default().with_max_concurrent_requests(4);
    let server = server_support::builder()
        .limits(limits)
        .tool(gate_tool(running.clone(), peak.clone(), gate.clone()))
        .build()
        .unwrap();
    assert_eq!(
        server
            .welcome()
            .capabilities
            .limits
            .as_ref()
            .unwrap()
            .max_concurrent_requests
            .unwrap()
            .get(),
        4
    );
    let mut client = connect_hello(&server).await;
    let mut ids = HashSet::new();
    for _ in 0..10 {
        let (id, msg) = request("tools/call", Some(json!({"name": "test/gate"})));
        ids.insert(id);
        client.send_value(&msg).await;
    }
    wait_until("4 calls run", || running.load(Ordering::SeqCst) == 4).await;
    // Give a fifth call every chance to start; it must not.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(running.load(Ordering::SeqCst), 4);
    gate.add_permits(10);
    for _ in 0..10 {
        let r = client.recv_response().await;
        assert!(r.result().is_some(), "{r:?}");
        assert!(ids.remove(&r.id), "answered twice or unknown id");
    }
    assert_eq!(peak.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_thousand_pipelined_requests_are_each_answered_once() {
    let server = fixture::register(server_support::builder())
        .build()
        .unwrap();
    let mut client = connect_hello(&server).await;
    let mut expected = std::collections::HashMap::new();
    let mut bytes = Vec::new();
    for i in 0..1000 {
        let (id, msg) = request(
            "tools/call",
            Some(json!({"name": "demo/echo", "arguments": {"value": i}})),
        );
        expected.insert(id, i);
        bytes.extend(frame(msg.to_string().as_bytes()));
    }
    // Write from another task while reading here: a real bridge reads and writes at once.
    let writer = client.writer();
    let write = tokio::spawn(async move { writer.write_raw(&bytes).await });
    for _ in 0..1000 {
        let r = client.recv_response().await;
        let value = expected
            .remove(&r.id)
            .unwrap_or_else(|| panic!("unexpected or repeated id {}", r.id));
        assert_eq!(result(&r), json!({"value": value}));
    }
    assert!(expected.is_empty());
    write.await.unwrap();
}

#[tokio::test]
async fn answers_in_flight_are_drained_on_end_of_stream() {
    let server = fixture::register(server_support::builder())
        .build()
        .unwrap();
    let (mut client, served) = connect_hello_served(&server).await;
    let (id, msg) = request(
        "tools/call",
        Some(json!({"name": "demo/sleep", "arguments": {"ms": 200}})),
    );
    client.send_value(&msg).await;
    client.shutdown_write().await;
    let seen = client.until_closed().await;
    assert_eq!(seen.len(), 1, "{seen:?}");
    let gabp_types::Message::Response(r) = &seen[0] else {
        panic!()
    };
    assert_eq!(r.id, id);
    assert_eq!(result(r), json!({"sleptMs": 200}));
    assert_eq!(close_reason(served).await, CloseReason::Eof);
}

#[tokio::test]
async fn a_bridge_that_does_not_read_makes_the_mod_stop_reading() {
    let limits = ServerLimits::default()
        .with_max_concurrent_requests(2)
        .with_outgoing_queue(4);
    let server = fixture::register(server_support::builder())
        .limits(limits)
        .build()
        .unwrap();
    let mut client = connect_with_buffer(&server, 1024);
    client.hello(server_support::TOKEN).await;
    let total = 2000;
    let written = Arc::new(AtomicUsize::new(0));
    let writer = client.writer();
    let progress = written.clone();
    let pad = "p".repeat(1000);
    let write = tokio::spawn(async move {
        for i in 0..total {
            let (_, msg) = request(
                "tools/call",
                Some(json!({"name": "demo/echo", "arguments": {"value": [i, pad]}})),
            );
            writer.write_raw(&frame(msg.to_string().as_bytes())).await;
            progress.fetch_add(1, Ordering::SeqCst);
        }
    });
    // The mod answers, nobody reads the answers: it must stop reading soon, so the writer stalls.
    let mut last = usize::MAX;
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let now = written.load(Ordering::SeqCst);
        if now == last {
            break;
        }
        last = now;
    }
    // What the mod may hold: the answers in the transport's write buffer (64 KiB, about 60 answers of
    // 1 KiB), the outgoing queue (4), the requests in flight (2), and what fits in the pipe.
    assert!(
        last < 200,
        "the mod kept reading ({last} requests) with nobody reading its answers"
    );
    // Now read: everything gets answered, once.
    let mut seen = HashSet::new();
    for _ in 0..total {
        let r = client.recv_response().await;
        assert!(r.result().is_some());
        assert!(seen.insert(r.id));
    }
    write.await.unwrap();
    assert!(!seen.contains(&MessageId::nil()));
}

#[tokio::test(start_paused = true)]
async fn a_bridge_that_never_reads_cannot_hold_a_closing_connection_forever() {
    let limits = ServerLimits::default().with_request_timeout(Duration::from_secs(1));
    let server = fixture::register(server_support::builder())
        .limits(limits)
        .build()
        .unwrap();
    let (mut client, served) = serve(&server, 64);
    client.set_patience(Duration::from_secs(3600));
    client.hello(server_support::TOKEN).await;
    let (_, big) = request(
        "tools/call",
        Some(json!({"name": "demo/echo", "arguments": {"value": "x".repeat(100_000)}})),
    );
    client.send_value(&big).await;
    client.shutdown_write().await;
    // Never read: the answer cannot be written; the connection still closes after the drain time
    // (the longest time limit, here the tool `demo/stuck`'s 100 ms or the 1 s default, plus 5 s).
    let started = tokio::time::Instant::now();
    let reason = tokio::time::timeout(Duration::from_secs(60), served)
        .await
        .expect("closed")
        .unwrap();
    assert_eq!(reason, CloseReason::Eof);
    assert!(started.elapsed() >= Duration::from_secs(6));
}
