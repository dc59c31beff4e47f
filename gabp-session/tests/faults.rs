//! Faults, against a mod that is a real separate process on TCP loopback.
//!
//! - A mod killed (SIGKILL) mid-call fails every pending call within 100 ms: calls running in the mod's
//!   handlers, and calls still waiting at the bridge for one of its 64 in-flight slots. The bridge, which has a
//!   reconnect policy, then reconnects to the restarted mod on the same port and restores its subscription:
//!   events published by the new process arrive on the old `Subscription`, after a `Reconnected` item.
//! - A subscriber that never reads keeps the mod's memory bounded by its event queue: 256 MiB of events are
//!   published to a raw TCP client that subscribed and then stopped reading; the mod's resident memory grows by
//!   far less than that, and all but a queue's worth of them are dropped for that subscriber.
//!
//! `tests/bridge_vs_server.rs` and `tests/server_events.rs` check the same rules in process (an aborted
//! connection task over an in-memory pair; an event count over an in-memory pair); these do it with a process
//! kill and with the resident memory of a TCP mod.
//!
//! This test binary has its own `main` (`harness = false`): run with `--child-mod PORT` it is the mod.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use gabp_session::bridge::{Bridge, ConnectionState, ReconnectPolicy, SubscriptionItem};
use gabp_session::server::{CallError, ModServer, ServerLimits, Tool};
use gabp_session::Error;
use gabp_transport::{connect, Connection, Endpoint, Frame, Listener, Token};
use gabp_types::decode::{decode, DecodeMode};
use gabp_types::{Message, MethodName, Request};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
const CHILD_FLAG: &str = "--child-mod";
const CHANNEL: &str = "test/tick";
/// How long any single step may take before the test fails (instead of hanging).
const PATIENCE: Duration = Duration::from_secs(20);

fn token() -> Token {
    Token::new(TOKEN).unwrap()
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Echo {
    value: Value,
}

#[derive(Deserialize, JsonSchema)]
struct Sleep {
    ms: u64,
}

#[derive(Serialize, JsonSchema)]
struct Slept {
    #[serde(rename = "sleptMs")]
    slept_ms: u64,
}

#[derive(Deserialize, Serialize, JsonSchema)]
struct Tick {
    n: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(i) = args.iter().position(|a| a == CHILD_FLAG) {
        let port: u16 = args.get(i + 1).and_then(|p| p.parse().ok()).unwrap_or(0);
        child_mod(port);
        return;
    }
    // Like libtest: arguments that are not flags filter the tests by name (`--exact`: the whole name);
    // `--list` lists them; `--ignored` runs the ignored ones, of which there are none.
    let flag = |name: &str| args.iter().any(|a| a == name);
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let tests: [(&str, fn()); 2] = [
        (
            "a_killed_mod_fails_every_pending_call_within_100ms_then_the_restarted_mod_gets_the_subscription_back",
            || runtime().block_on(killed_mod_then_restart()),
        ),
        (
            "a_subscriber_that_never_reads_keeps_the_mod_s_memory_bounded",
            || runtime().block_on(never_reading_subscriber()),
        ),
    ];
    let selected = |name: &str| {
        filters.is_empty()
            || filters.iter().any(|f| {
                if flag("--exact") {
                    name == f.as_str()
                } else {
                    name.contains(f.as_str())
                }
            })
    };
    if flag("--list") {
        for (name, _) in tests.iter().filter(|(name, _)| selected(name)) {
            println!("{name}: test");
        }
        return;
    }
    if flag("--ignored") {
        return;
    }
    let mut ran = 0;
    for (name, test) in tests {
        if !selected(name) {
            continue;
        }
        let started = Instant::now();
        test();
        eprintln!("test {name} ... ok ({:.2?})", started.elapsed());
        ran += 1;
    }
    eprintln!("faults: {ran} passed");
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The child: a mod on `tcp://127.0.0.1:PORT` with `demo/echo`, `demo/sleep` and `demo/tick` (publishes `{n}`
/// on `test/tick`). Prints `listening on ENDPOINT`, serves until killed, or until its stdin closes (so it never
/// outlives a test that failed).
fn child_mod(port: u16) {
    runtime().block_on(async move {
        let builder = ModServer::builder()
            .app("Fault Test Mod", "1.0.0")
            .token(token())
            .channel(CHANNEL);
        let events = builder.event_publisher();
        let server = builder
            .tool(Tool::new("demo/echo", |e: Echo| async move {
                Ok::<_, CallError>(e)
            }))
            .tool(Tool::new("demo/sleep", |s: Sleep| async move {
                tokio::time::sleep(Duration::from_millis(s.ms)).await;
                Ok::<_, CallError>(Slept { slept_ms: s.ms })
            }))
            .tool(Tool::new("demo/tick", move |t: Tick| {
                let published = events
                    .publish(CHANNEL, &t)
                    .map_err(|e| CallError::new(e.to_string()));
                async move { published.map(|p| json!({ "seq": p.seq })) }
            }))
            .build()
            .unwrap();
        let handle = server.serve(Listener::bind(&Endpoint::tcp_v4(port)).await.unwrap());
        println!("listening on {}", handle.endpoint());
        let mut stdin = tokio::io::stdin();
        let mut sink = Vec::new();
        let _ = tokio::io::AsyncReadExt::read_to_end(&mut stdin, &mut sink).await;
        handle.shutdown().await;
    });
}

/// A running child mod; killed when dropped.
struct ChildMod {
    child: Child,
    endpoint: Endpoint,
}

impl ChildMod {
    fn start(port: u16) -> ChildMod {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([CHILD_FLAG, &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let endpoint = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the child mod said {line:?}"))
            .parse()
            .unwrap();
        ChildMod { child, endpoint }
    }

    fn port(&self) -> u16 {
        match &self.endpoint {
            Endpoint::Tcp(addr) => addr.port(),
            other => panic!("not TCP: {other}"),
        }
    }
}

impl Drop for ChildMod {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn soon<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(PATIENCE, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no progress in {PATIENCE:?}"))
}

async fn killed_mod_then_restart() {
    let mut first = ChildMod::start(0);
    let port = first.port();
    let bridge = soon(
        "connect",
        Bridge::builder(token())
            .reconnect(
                ReconnectPolicy::new()
                    .initial_delay(Duration::from_millis(20))
                    .max_delay(Duration::from_millis(200))
                    .max_attempts(Some(100)),
            )
            .connect(&first.endpoint),
    )
    .await
    .unwrap();
    let mut ticks = bridge.subscribe([CHANNEL]).await.unwrap();
    bridge
        .call_tool("demo/tick", json!({ "n": 1 }))
        .await
        .unwrap();
    match soon("first event", ticks.next()).await {
        Some(Ok(SubscriptionItem::Event(e))) => {
            assert_eq!((e.seq, &e.payload), (0, &json!({"n": 1})))
        }
        other => panic!("{other:?}"),
    }

    // 100 calls that would take 30 s: 64 run in the mod (its limit and the bridge's), 36 wait at the bridge
    // for a slot.
    let calls: Vec<_> = (0..100)
        .map(|_| {
            let bridge = bridge.clone();
            tokio::spawn(async move {
                let result = bridge
                    .call_tool("demo/sleep", json!({ "ms": 30_000 }))
                    .await;
                (result, Instant::now())
            })
        })
        .collect();
    soon("64 calls in flight", async {
        while bridge.pending_calls() < 64 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
    // Let the mod start them all (the bridge counts a call once it is queued for writing).
    tokio::time::sleep(Duration::from_millis(100)).await;

    first.child.kill().unwrap();
    let killed = Instant::now();
    let mut latest = killed;
    for call in calls {
        let (result, at) = soon("a pending call", call).await.unwrap();
        assert!(
            matches!(result, Err(Error::Disconnected)),
            "a pending call ended with {result:?}"
        );
        latest = latest.max(at);
    }
    let took = latest - killed;
    eprintln!("  every pending call failed {took:.2?} after the kill");
    assert!(took < Duration::from_millis(100), "took {took:?}");
    first.child.wait().unwrap();

    // The mod restarts on the same port; the bridge reconnects and restores the subscription.
    let second = ChildMod::start(port);
    let mut states = bridge.connection_state();
    soon(
        "reconnect",
        states.wait_for(|s| matches!(s, ConnectionState::Connected { generation: 2 })),
    )
    .await
    .unwrap();
    assert!(matches!(
        soon("reconnected item", ticks.next()).await,
        Some(Ok(SubscriptionItem::Reconnected))
    ));
    for n in 0..3u64 {
        bridge
            .call_tool("demo/tick", json!({ "n": n }))
            .await
            .unwrap();
    }
    for n in 0..3u64 {
        match soon("event from the restarted mod", ticks.next()).await {
            Some(Ok(SubscriptionItem::Event(e))) => {
                assert_eq!(e.seq, n, "the restarted mod counts afresh");
                assert_eq!(e.payload, json!({ "n": n }));
            }
            other => panic!("{other:?}"),
        }
    }
    bridge.close().await;
    drop(second);
}

/// The resident set size of this process, in bytes (Linux), or `None`.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn request(method: &str, params: Value) -> Bytes {
    let request = Request::with_params(MethodName::new(method).unwrap(), &params).unwrap();
    Bytes::from(Message::from(request).to_vec())
}

async fn expect_result(conn: &mut Connection) -> Value {
    let frame = soon("an answer", conn.next()).await.unwrap().unwrap();
    let Frame::Body(body) = frame else {
        panic!("oversized")
    };
    match decode(&body, DecodeMode::Strict).unwrap() {
        Message::Response(r) => r.result().cloned().unwrap(),
        other => panic!("{other:?}"),
    }
}

async fn never_reading_subscriber() {
    const QUEUE: usize = 16;
    const EVENTS: u64 = 4096;
    const PAYLOAD: usize = 64 * 1024;
    // In process this time: the resident memory measured is the mod's.
    let server = ModServer::builder()
        .app("Memory Test Mod", "1.0.0")
        .token(token())
        .channel(CHANNEL)
        .limits(ServerLimits::default().with_event_queue(QUEUE))
        .build()
        .unwrap();
    let events = server.event_publisher();
    let handle = server.serve(Listener::bind(&Endpoint::tcp_v4(0)).await.unwrap());

    let mut stalled = connect(handle.endpoint()).await.unwrap();
    let hello = json!({
        "token": TOKEN, "bridgeVersion": "1.0.0", "platform": "linux",
        "launchId": "6f1c2b9e-6a4f-4c1e-9d7a-2b8e5f0c3a11"
    });
    stalled.send(request("session/hello", hello)).await.unwrap();
    expect_result(&mut stalled).await;
    stalled
        .send(request(
            "events/subscribe",
            json!({ "channels": [CHANNEL] }),
        ))
        .await
        .unwrap();
    assert_eq!(
        expect_result(&mut stalled).await,
        json!({ "subscribed": [CHANNEL] })
    );
    // From here on `stalled` reads nothing.

    let pad = "x".repeat(PAYLOAD);
    let before = resident_bytes();
    let (mut delivered, mut dropped) = (0usize, 0usize);
    for n in 0..EVENTS {
        let published = events
            .publish(CHANNEL, json!({ "n": n, "pad": pad }))
            .unwrap();
        delivered += published.delivered;
        dropped += published.dropped;
        if n % 16 == 0 {
            // Let the connection write whatever the socket takes.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
    let after = resident_bytes();
    let published_bytes = EVENTS * PAYLOAD as u64;
    eprintln!(
        "  published {} MiB: {delivered} events queued for the stalled subscriber, {dropped} dropped; \
         resident memory {:?} MiB -> {:?} MiB",
        published_bytes >> 20,
        before.map(|b| b >> 20),
        after.map(|b| b >> 20)
    );
    assert_eq!(delivered + dropped, usize::try_from(EVENTS).unwrap());
    // Accepted: the queue, plus what the kernel's socket buffers took (a few MiB on loopback).
    assert!(
        delivered < QUEUE + 256,
        "{delivered} events queued: not bounded by the queue"
    );
    if let (Some(before), Some(after)) = (before, after) {
        let grown = after.saturating_sub(before);
        assert!(
            grown < published_bytes / 8,
            "resident memory grew by {} MiB while {} MiB were published",
            grown >> 20,
            published_bytes >> 20
        );
    }

    // The mod still serves others meanwhile.
    let bridge = soon("connect", Bridge::connect(handle.endpoint(), token()))
        .await
        .unwrap();
    soon("ping", bridge.ping()).await.unwrap();
    bridge.close().await;
    drop(stalled);
    soon("shutdown", handle.shutdown()).await;
}
