//! Load: 10 bridges at once over TCP loopback, each making 2,000 `demo/echo` calls with
//! 64 in flight, while the mod publishes events on a channel every bridge is subscribed to.
//!
//! Checked:
//!
//! - every call is answered exactly once with its own result: each call echoes a value no other call uses, the
//!   bridge gets that value back, the tool ran exactly once per value, no call is left pending, and no
//!   response arrived that the bridge had to discard as late or unknown;
//! - events published meanwhile arrive gapless: every subscriber sees `seq` 0, 1, 2, ... with no `Lagged`
//!   item, and the mod never dropped one (`Published::dropped == 0`). The subscribers keep up by construction:
//!   the publisher stays at most [`WINDOW`] events ahead of the slowest one, which is well below every queue
//!   on the way (the mod's per-connection event queue and the bridge's subscription queue, 1024 each), so any
//!   gap would be a bug rather than a slow subscriber;
//! - nothing logs a warning or an error.

// Test code: a failed unwrap is a failed test (clippy allows it only inside #[test] functions).
#![allow(clippy::unwrap_used)]

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use gabp_session::bridge::{Bridge, SubscriptionItem};
use gabp_session::server::{CallError, ModServer, ServerLimits, Tool};
use gabp_transport::{Endpoint, Listener, Token};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

const BRIDGES: u64 = 10;
const CALLS_PER_BRIDGE: u64 = 2_000;
const IN_FLIGHT: usize = 64;
const CHANNEL: &str = "load/tick";
/// How far the publisher may run ahead of the slowest subscriber.
const WINDOW: u64 = 256;
/// A generous bound on the whole test, so a hang fails instead of blocking CI.
const DEADLINE: Duration = Duration::from_secs(180);
/// How long a subscriber waits for its next event before failing.
const PATIENCE: Duration = Duration::from_secs(30);

#[derive(Deserialize, Serialize, JsonSchema)]
struct Echo {
    value: u64,
}

fn token() -> Token {
    Token::new("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef").unwrap()
}

/// Counts, over the whole process, warnings and errors from the gabp crates and responses a bridge discarded
/// as late or unknown (a response sent twice, or to the wrong connection, would be one).
#[derive(Default)]
struct LogCounts {
    warnings: AtomicUsize,
    discarded_responses: AtomicUsize,
    first_warning: Mutex<Option<String>>,
}

struct Counter(&'static LogCounts);

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Counter {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _ctx: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut message = Message(String::new());
        event.record(&mut message);
        if *event.metadata().level() <= tracing::Level::WARN {
            self.0.warnings.fetch_add(1, Ordering::SeqCst);
            let mut first = self.0.first_warning.lock().unwrap();
            first.get_or_insert_with(|| format!("{}: {}", event.metadata().target(), message.0));
        } else if message.0.contains("late or unknown response") {
            self.0.discarded_responses.fetch_add(1, Ordering::SeqCst);
        }
    }
}

fn log_counts() -> &'static LogCounts {
    static COUNTS: OnceLock<&'static LogCounts> = OnceLock::new();
    COUNTS.get_or_init(|| {
        let counts: &'static LogCounts = Box::leak(Box::default());
        // Only events, only from the gabp crates, and below WARN only the bridge driver's: spans stay disabled
        // and the hot paths pay nothing.
        let filter = tracing_subscriber::filter::filter_fn(|meta| {
            meta.is_event()
                && meta.target().starts_with("gabp")
                && (*meta.level() <= tracing::Level::WARN
                    || meta.target() == "gabp_session::bridge::driver")
        });
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::Layer::with_filter(Counter(counts), filter),
        );
        tracing::subscriber::set_global_default(subscriber).unwrap();
        counts
    })
}

/// The mod: `demo/echo {value}` -> `{value}`, recording how often it saw each value; one event channel.
fn server(seen: Arc<Mutex<HashMap<u64, u32>>>) -> ModServer {
    ModServer::builder()
        .app("Load Test", "1.0.0")
        .token(token())
        .channel(CHANNEL)
        .limits(ServerLimits::default().with_max_connections(usize::try_from(BRIDGES).unwrap()))
        .tool(Tool::new("demo/echo", move |e: Echo| {
            *seen.lock().unwrap().entry(e.value).or_default() += 1;
            async move { Ok::<_, CallError>(e) }
        }))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_bridges_with_2000_calls_and_64_in_flight_each_while_events_flow() {
    let counts = log_counts();
    tokio::time::timeout(DEADLINE, load(counts))
        .await
        .expect("the load test did not finish in time");
}

async fn load(counts: &'static LogCounts) {
    let started = Instant::now();
    let seen = Arc::new(Mutex::new(HashMap::new()));
    let handle = server(seen.clone()).serve(Listener::bind(&Endpoint::tcp_v4(0)).await.unwrap());
    let events = handle.server().event_publisher();

    let bridges: Vec<Bridge> = futures::future::try_join_all(
        (0..BRIDGES).map(|_| Bridge::connect(handle.endpoint(), token())),
    )
    .await
    .unwrap();

    // Every bridge subscribes before anything is published, so every subscriber sees seq 0 first.
    let received: Arc<Vec<AtomicU64>> = Arc::new((0..BRIDGES).map(|_| AtomicU64::new(0)).collect());
    let mut subscribers = Vec::new();
    for (b, bridge) in bridges.iter().enumerate() {
        let mut subscription = bridge.subscribe([CHANNEL]).await.unwrap();
        assert_eq!(subscription.channels(), [CHANNEL]);
        let received = received.clone();
        subscribers.push(tokio::spawn(async move {
            let mut next = 0u64;
            loop {
                let item = tokio::time::timeout(PATIENCE, subscription.next())
                    .await
                    .unwrap_or_else(|_| panic!("bridge {b}: no event after seq {next}"));
                let event = match item {
                    Some(Ok(SubscriptionItem::Event(event))) => event,
                    other => panic!("bridge {b}: expected event {next}, got {other:?}"),
                };
                assert_eq!(event.channel.as_str(), CHANNEL);
                assert_eq!(event.seq, next, "bridge {b}: a gap or a reordering");
                next += 1;
                received[b].store(next, Ordering::Release);
                if event.payload.get("end").is_some() {
                    return next;
                }
                assert_eq!(event.payload, json!({ "n": event.seq }));
            }
        }));
    }
    while events.subscriber_count(CHANNEL) < usize::try_from(BRIDGES).unwrap() {
        tokio::task::yield_now().await;
    }

    // The publisher runs for as long as the calls do, never more than WINDOW ahead of the slowest subscriber.
    let calls_done = Arc::new(AtomicBool::new(false));
    let publisher = {
        let (events, received, calls_done) = (events.clone(), received.clone(), calls_done.clone());
        tokio::spawn(async move {
            let mut seq = 0u64;
            let mut during_calls = 0u64;
            while !calls_done.load(Ordering::Acquire) {
                let slowest = received
                    .iter()
                    .map(|r| r.load(Ordering::Acquire))
                    .min()
                    .unwrap();
                if seq - slowest >= WINDOW {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    continue;
                }
                let published = events.publish(CHANNEL, json!({ "n": seq })).unwrap();
                assert_eq!(published.seq, seq);
                assert_eq!(published.dropped, 0, "the mod dropped event {seq}");
                assert_eq!(published.delivered, usize::try_from(BRIDGES).unwrap());
                seq += 1;
                during_calls += 1;
                if seq % 16 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            let end = events.publish(CHANNEL, json!({ "end": true })).unwrap();
            assert_eq!((end.seq, end.dropped), (seq, 0));
            (seq + 1, during_calls)
        })
    };

    // The calls: each bridge 2,000, 64 at a time, every value unique across all bridges.
    let calls_started = Instant::now();
    let callers = bridges.iter().enumerate().map(|(b, bridge)| {
        let bridge = bridge.clone();
        tokio::spawn(async move {
            let base = u64::try_from(b).unwrap() * 1_000_000;
            let results: Vec<(u64, serde_json::Value)> =
                futures::stream::iter(base..base + CALLS_PER_BRIDGE)
                    .map(|value| {
                        let bridge = bridge.clone();
                        async move {
                            let result = bridge
                                .call_tool("demo/echo", json!({ "value": value }))
                                .await?;
                            Ok::<_, gabp_session::Error>((value, result))
                        }
                    })
                    .buffer_unordered(IN_FLIGHT)
                    .try_collect()
                    .await
                    .unwrap_or_else(|e| panic!("bridge {b}: a call failed: {e}"));
            (b, results)
        })
    });
    let per_bridge = futures::future::try_join_all(callers).await.unwrap();
    let calls_took = calls_started.elapsed();
    // Checked before the publisher ends the subscriptions: a subscriber that ends drops its subscription, and
    // its bridge then unsubscribes in the background, a call of its own that counts as pending.
    for (b, bridge) in bridges.iter().enumerate() {
        assert_eq!(bridge.pending_calls(), 0, "bridge {b}: calls left pending");
    }
    calls_done.store(true, Ordering::Release);

    for (b, results) in per_bridge {
        assert_eq!(results.len(), usize::try_from(CALLS_PER_BRIDGE).unwrap());
        let mut values = HashSet::new();
        for (value, result) in results {
            assert_eq!(
                result,
                json!({ "value": value }),
                "bridge {b}: not its own result"
            );
            assert!(
                values.insert(value),
                "bridge {b}: value {value} answered twice"
            );
        }
    }
    {
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen.len(),
            usize::try_from(BRIDGES * CALLS_PER_BRIDGE).unwrap()
        );
        assert!(seen.values().all(|&n| n == 1), "a call ran more than once");
    }

    let (total, during_calls) = publisher.await.unwrap();
    for (b, subscriber) in subscribers.into_iter().enumerate() {
        assert_eq!(
            subscriber.await.unwrap(),
            total,
            "bridge {b}: events missing"
        );
    }
    assert!(
        during_calls > WINDOW,
        "only {during_calls} events were published while the calls ran"
    );

    for bridge in &bridges {
        bridge.close().await;
    }
    handle.shutdown().await;

    assert_eq!(counts.discarded_responses.load(Ordering::SeqCst), 0);
    assert_eq!(
        counts.warnings.load(Ordering::SeqCst),
        0,
        "first warning: {:?}",
        counts.first_warning.lock().unwrap()
    );
    eprintln!(
        "load: {} calls in {calls_took:.2?} ({:.0} calls/s), {total} events to each of {BRIDGES} bridges \
         meanwhile; whole test {:.2?}",
        BRIDGES * CALLS_PER_BRIDGE,
        (BRIDGES * CALLS_PER_BRIDGE) as f64 / calls_took.as_secs_f64(),
        started.elapsed()
    );
}
