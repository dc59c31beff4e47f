//! Heap allocations per typed `tools/call` round trip, bridge and mod together, counted by a counting global
//! allocator over an in-memory pair on one thread, and per event published with nobody subscribed. The figures
//! are printed; the bounds keep them from creeping back.
#![allow(clippy::unwrap_used)]

use std::alloc::System;

use gabp_session::bridge::Bridge;
use gabp_session::server::{CallError, ModServer, Tool};
use gabp_transport::{Connection, Token};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

/// The most allocations (and reallocations) one typed round trip may take, client and server together.
const BOUND: usize = 8;
const CALLS: usize = 2_000;
/// The most allocations one event published with nobody subscribed may take: its payload's text and its timestamp.
const EVENT_BOUND: usize = 2;

/// The allocator's count is the process's: one measurement at a time.
static MEASURING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

#[derive(Serialize, Deserialize, JsonSchema)]
struct Echo {
    value: String,
}

#[tokio::test(flavor = "current_thread")]
async fn a_typed_round_trip_stays_within_its_allocation_budget() {
    let _one_at_a_time = MEASURING.lock().await;
    let token = Token::new("0123456789abcdef0123456789abcdef").unwrap();
    let server = ModServer::builder()
        .token(token.clone())
        .tool(Tool::new("demo/echo", |e: Echo| async move {
            Ok::<_, CallError>(e)
        }))
        .build()
        .unwrap();
    let (mod_side, bridge_side) = tokio::io::duplex(256 * 1024);
    tokio::spawn(server.serve_connection(Connection::new(mod_side)));
    let bridge = Bridge::over(Connection::new(bridge_side), token)
        .await
        .unwrap();
    let args = Echo {
        value: "x".repeat(100),
    };
    for _ in 0..100 {
        let _: Echo = bridge.call_tool_as("demo/echo", &args).await.unwrap();
    }
    let region = Region::new(GLOBAL);
    for _ in 0..CALLS {
        let echoed: Echo = bridge.call_tool_as("demo/echo", &args).await.unwrap();
        assert_eq!(echoed.value.len(), 100);
    }
    held_to(
        &region,
        BOUND,
        "typed tools/call round trip (bridge and mod together)",
    );
}

#[derive(Serialize)]
struct BlockChange {
    x: i64,
    y: i64,
    z: i64,
    block: Option<&'static str>,
}

/// A game publishes from its own thread, often with nobody listening: that costs no tree of values and no body.
#[test]
fn an_unheard_event_stays_within_its_allocation_budget() {
    let _one_at_a_time = MEASURING.blocking_lock();
    let builder = ModServer::builder()
        .token(Token::new("0123456789abcdef0123456789abcdef").unwrap())
        .channel("world/block_change");
    let events = builder.event_publisher();
    let _server = builder.build().unwrap();
    let change = |x| BlockChange {
        x,
        y: 5,
        z: 3,
        block: Some("torch"),
    };
    for x in 0..100 {
        events.publish("world/block_change", change(x)).unwrap();
    }
    let region = Region::new(GLOBAL);
    for x in 0..CALLS {
        events
            .publish("world/block_change", change(x as i64))
            .unwrap();
    }
    held_to(
        &region,
        EVENT_BOUND,
        "event published with nobody subscribed",
    );
}

/// Prints the allocations (and reallocations) per one of the `CALLS` measured in `region`, and holds them to
/// `bound`.
fn held_to(region: &Region<'_, System>, bound: usize, per: &str) {
    let change = region.change();
    let count = (change.allocations + change.reallocations) / CALLS;
    eprintln!("  {count} allocations per {per}");
    assert!(
        count <= bound,
        "{count} allocations per {per}, over the bound of {bound}"
    );
}
